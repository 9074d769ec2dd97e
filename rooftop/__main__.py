"""``python -m rooftop``: the same command line as the ``rooftop`` script."""

from rooftop.cli.commands import main

if __name__ == "__main__":
    main()
