"""The formula families the table in :mod:`rooftop.analyzer.ops.formulas` points to."""
