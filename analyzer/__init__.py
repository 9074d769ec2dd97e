"""Device ceilings, roofline maths, classification, findings, diffs and the fleet pipeline."""

__version__ = "0.1.0"
