"""Device ceilings, roofline maths, classification, findings, diffs and the fleet pipeline."""

if __name__ != "rooftop.analyzer":  # one name per module (docs/architecture.md#installing)
    raise ImportError(f"import rooftop.analyzer, not {__name__}: the stage folders are installed as "
                      "rooftop.parsers, rooftop.analyzer and rooftop.reports (docs/architecture.md#installing)")
