"""Fleet analysis at scale: ingest DCGM streams into a Parquet dataset, analyse it locally or on Dask.

Modules: :mod:`~analyzer.store.dataset` (partition writer; re-exports :mod:`~analyzer.store.layout`,
:mod:`~analyzer.store.digest`, the manifest and the lock),
:mod:`~analyzer.store.ingest` (``rooftop ingest``; its entries and summary in ``ingest_entry``, ``ingest_summary``), :mod:`~analyzer.fleet.engines` (per-fragment work + reduction, local or Dask),
:mod:`~analyzer.fleet.rollup` (group roll-ups, night-over-night trend, fleet findings),
:mod:`~analyzer.fleet.pipeline` (``rooftop fleet``), :mod:`~analyzer.fleet.join` (kernel ↔ fleet join).
"""
