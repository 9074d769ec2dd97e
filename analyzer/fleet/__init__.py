"""Fleet analysis at scale: ingest DCGM streams into a Parquet dataset, analyse it locally or on Dask.

Modules: :mod:`~analyzer.fleet.dataset` (layout, manifest, atomic writes), :mod:`~analyzer.fleet.ingest`
(``rooftop ingest``), :mod:`~analyzer.fleet.engines` (per-fragment work + reduction, local or Dask),
:mod:`~analyzer.fleet.rollup` (group roll-ups, night-over-night trend, fleet findings),
:mod:`~analyzer.fleet.pipeline` (``rooftop fleet``), :mod:`~analyzer.fleet.join` (kernel ↔ fleet join).
"""
