"""``python -m rooftop``: the same command line as the ``rooftop`` script."""

from rooftop.analyzer.cli import main

if __name__ == "__main__":
    main()
