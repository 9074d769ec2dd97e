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
