"""The ``rooftop`` command line: the composition root, the only package that imports every stage."""
