"""Achieved work and traffic per kernel from whatever metric names an export carries.

Every function takes the canonical kernel table (:mod:`parsers.model`: metric columns keyed by
ncu metric name, SI units) and returns per-row values aligned to its index, plus a per-row
string saying which metric each value came from (``None`` where nothing was available: no
value is ever invented). Vectorized: one pass per alias, never per kernel.

Conventions (docs/research/formulas.md):

* FP64/FP32 FLOPs from SASS thread-instruction counts, FMA = 2 (§1.2, §1.3, §3.2);
  FP16 with ncu's half2 factors hadd x2 + hmul x2 + hfma x4 (§1.4, §7 item 5).
* Tensor FLOPs = Σ ``sm__ops_path_tensor_<variant>`` over the aggregate (non-``op_``) variants
  (§1.6; never also the ``op_*`` breakdown); Volta (CC 7.0): ``sm__inst_executed_pipe_tensor``
  x 512 (§2.3).
* Counts may come as ``.sum``, ``.sum.per_cycle_elapsed`` x unit cycles elapsed (or x cycles/s x
  duration), or ``.sum.per_second`` x duration; ``sm__`` and ``smsp__`` sums are the same count.
* Bytes per level in ncu's hierarchical-roofline convention (§1.2, §1.7): DRAM ``dram__bytes``,
  L2 ``lts__lts2xbar_cycles_active`` x 32, L1 ``l1tex__lsu_writeback_active_mem_lg`` x 128
  (CC 7.5-8.9) or ``_mem_lgds`` x 128 (CC >= 9.0); falling back to NERSC's ``lts__t_bytes`` /
  ``l1tex__t_bytes`` (§2.1) and to legacy 2019 names (``dram__read_bytes`` + ``dram__write_bytes``).

Modules: :mod:`.columns` (column access, aliases, :class:`Recipe`), :mod:`.work` (duration, clocks,
counters, FLOPs), :mod:`.traffic` (bytes per level, rates), :mod:`.sol` (SpeedOfLight, pipes, launch).
"""
