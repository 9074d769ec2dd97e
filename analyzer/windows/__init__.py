"""GPU time windows from DCGM samples: averaged, classified, and placed on the roofline.

Map-reduce shaped so the fleet engines can run it per Parquet partition and on Dask:

``window_partials`` (per partition) -> ``combine_partials`` (any number of times, any grouping)
-> ``finish_windows`` (means) -> ``classify_windows`` (label, limiter, estimates).
The fleet engines use ``window_partials_arrow`` (Arrow batches as read from Parquet), whose
partials are arrays (:class:`WindowPartials`, the same content; ``to_frame()`` gives the table):
rows are first reduced to runs of one (key, labels, window, field), the usual layout of series in
time order, so per-row work is a few vector passes.

Partials columns: ``KEY_COLUMNS``; for every metric in ``WINDOW_FIELDS`` ``<m>__sum``,
``<m>__n`` and ``<m>__zero`` (samples exactly 0, for the multiplexing lint); ``n_samples``;
``first_ts``/``last_ts`` (epoch ms); ``window_s``; and for each workload label (``namespace``,
``pod``, ``container``, ``job``, ``mig_profile``) its most frequent value ``<l>`` with its count
``<l>__n``. Combining sums counts per (key, value) and keeps the top one: exact when a label
takes one value per window in each partition (the normal case), a close heuristic otherwise.

Classification (first match; thresholds are NVIDIA's published guidance where one exists, else
kempnerpulse's device-state rules, both collected in the shared docs/research/anchors.md §3 rows 15-18 and
docs/research/formulas.md §5.4/§6):

=============== =====================================================================================
idle            every activity signal (GR, SM, pipes, DRAM; NVML GPU_UTIL when GR is absent) < 0.05
                (entered below 0.05, left only at >= 0.10: hysteresis per GPU in time order,
                :mod:`hysteresis`)
memory-bound    DRAM active >= 0.5 and DRAM/0.8 (its practical peak) >= the busiest pipe; limiter dram
compute-bound   busiest pipe (tensor, fp64, fp32, fp16) >= 0.5; limiter = that pipe
overhead-bound  GR >= 0.4 with SM < 0.25 (tiny grids / launch-bound; limiter launch), or GR < 0.4
                while the GPU is doing something (host wait: input pipeline, sync, launch gaps;
                limiter host)
mixed           the rest; limiter = the busiest normalised signal when >= 0.2, else latency
=============== =====================================================================================

Estimates: achieved FLOP/s = Σ pipe activity x the device's peak for that pipe (tensor -> dense
FP16/BF16 tensor peak); DRAM bytes/s = DRAM active x peak DRAM bandwidth (docs/research/formulas.md §6.3; NVIDIA
says activity does not convert exactly to FLOPs: these are estimates). MIG instance values are
relative to the instance, so peaks are scaled by the instance's share ``g/7`` (``g/4`` on A30)
read from the ``Ng.XXgb`` profile.
"""
