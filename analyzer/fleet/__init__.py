"""Fleet analysis at scale: ingest DCGM streams into a Parquet dataset, analyse it locally or on Dask.

The dataset itself is :mod:`rooftop.analyzer.store` (partition writer, layout, digests, manifest,
lock; ``rooftop ingest``). Modules: :mod:`~analyzer.fleet.engines` (per-fragment work + reduction,
local or Dask),
:mod:`~analyzer.fleet.rollup` (group roll-ups, night-over-night trend, fleet findings),
:mod:`~analyzer.fleet.pipeline` (``rooftop fleet``), :mod:`~analyzer.fleet.join` (kernel ↔ fleet join).
"""
