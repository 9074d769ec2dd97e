"""The version of rooftop, at the bottom of the package (imports nothing) so that any stage can name it."""

__version__ = "0.1.0"
