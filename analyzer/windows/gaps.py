"""The gap rule's one constant (docs/formulas.md#windows "Covered time", docs/formulas.md#counters
"Gaps"): a step longer than this many sampling intervals (or windows) is missing data, not an
interval. Its own module so both :mod:`.span` and :mod:`.counters` read it without an import cycle."""

GAP_STEPS = 5.0
