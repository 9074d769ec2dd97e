"""Device ceilings, roofline maths, classification, findings, diffs and the fleet pipeline."""
