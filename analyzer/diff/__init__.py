"""``rooftop diff``: match kernels across two runs, explain the deltas, gate CI on real regressions.

The core is pure functions over two flat kernel-result frames (columns named by
``analyzer.document.KERNEL_FIELDS`` plus ``family``; an optional ``nvtx`` column is used when present):

* :func:`match_kernels` pairs launches by *identity*: family + launch configuration (grid, block) +
  NVTX path + ordinal (the k-th launch of that family with that configuration and NVTX path, in
  launch order). What does not pair is reported as ``new`` or ``vanished``, never guessed: a
  renamed kernel is one vanished + one new.
* :func:`pair_deltas` / :func:`group_deltas`: per-pair and time-weighted per-family changes in
  duration, achieved FLOP/s, FLOPs, bytes and intensity per level, label and limiter, each with
  one explanation line.
* :func:`verdict`: per *series* (family + grid + block + NVTX path; its launches are replicates)
  a noise-aware verdict: the change must exceed the effect threshold (``max(--fail-on,
  --min-effect)``, :mod:`analyzer.diff.gate`) and, where there are enough repeats, be significant
  (:mod:`analyzer.diff.stats`: Mann–Whitney U with Holm's correction); each series says which decided.

:func:`run_diff` reads both sides (ncu exports or saved ``rooftop analyze --json`` documents) and
returns the contract document of kind ``diff``.
"""


from rooftop.analyzer.diff.compare import DiffResult, compare, totals
from rooftop.analyzer.diff.deltas import (
    add_changes,
    explain,
    group_deltas,
    pair_deltas,
    pct,
    rel_change,
)
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, Gate, decide
from rooftop.analyzer.diff.match import (
    CARRIED,
    KEY,
    LEVELS,
    NOTABLE,
    NUMERIC,
    REPORT_PCT,
    SIDES,
    Matched,
    base_names,
    identify,
    match_kernels,
    series_ids,
)
from rooftop.analyzer.diff.records import (
    MAX_RECORDS,
    diff_payload,
    family_records,
    findings,
    listing_lint,
    pair_records,
    unmatched_records,
)
from rooftop.analyzer.diff.sides import (
    Side,
    frame_from_document,
    load_side,
    read_document,
    run_diff,
)
from rooftop.analyzer.diff.verdict import (
    GATES,
    SERIES_FIELDS,
    classify,
    series_records,
    series_stats,
    series_table,
    short_name,
    verdict,
)

__all__ = [
    "CARRIED",
    "GATES",
    "KEY",
    "LEVELS",
    "MAX_RECORDS",
    "MIN_EFFECT_PCT",
    "NOTABLE",
    "NUMERIC",
    "REPORT_PCT",
    "SERIES_FIELDS",
    "SIDES",
    "DiffResult",
    "Gate",
    "Matched",
    "Side",
    "add_changes",
    "base_names",
    "classify",
    "compare",
    "decide",
    "diff_payload",
    "explain",
    "family_records",
    "findings",
    "frame_from_document",
    "group_deltas",
    "identify",
    "listing_lint",
    "load_side",
    "match_kernels",
    "pair_deltas",
    "pair_records",
    "pct",
    "read_document",
    "rel_change",
    "run_diff",
    "series_ids",
    "series_records",
    "series_stats",
    "series_table",
    "short_name",
    "totals",
    "unmatched_records",
    "verdict",
]
