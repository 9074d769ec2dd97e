"""Device ceilings, roofline maths, classification, findings, diffs and the fleet pipeline."""

from rooftop import __version__

__all__ = ["__version__"]
