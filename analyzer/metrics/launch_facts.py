"""NCU's per-kernel launch facts beside every verdict (docs/formulas.md#kernel-labels, "NCU's facts"):
occupancy achieved and theoretical and what limits it, registers per thread, shared memory per block,
and local-memory traffic (register spills or local arrays), exactly as exported."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column, first_of

# NCU's Occupancy section "Block Limit <x>": blocks per SM each resource allows; the smallest one binds
OCCUPANCY_LIMITS = (("registers", "launch__occupancy_limit_registers"),
                    ("shared memory", "launch__occupancy_limit_shared_mem"),
                    ("warps per block", "launch__occupancy_limit_warps"),
                    ("blocks per SM", "launch__occupancy_limit_blocks"),
                    ("barriers", "launch__occupancy_limit_barriers"))
# local loads + stores, first group present: requests, SASS instructions (newer and older names)
LOCAL_OPS = (("l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum", "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum"),
             ("smsp__sass_inst_executed_op_local_ld.sum", "smsp__sass_inst_executed_op_local_st.sum"),
             ("sass__inst_executed_local_loads", "sass__inst_executed_local_stores"))


def launch_facts(df: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: ``occupancy_achieved_pct`` (``sm__warps_active.avg.pct_of_peak_sustained_active``),
    ``occupancy_theoretical_pct`` (``sm__maximum_warps_per_active_cycle_pct``), ``occupancy_limiter`` (the
    resource whose block limit is smallest), ``registers_per_thread``, ``shared_mem_per_block`` (static +
    dynamic bytes), ``local_memory_ops`` (local loads + stores; NaN where not collected)."""
    out = pd.DataFrame(index=df.index)
    out["occupancy_achieved_pct"] = first_of(df, ["sm__warps_active.avg.pct_of_peak_sustained_active"])[0]
    out["occupancy_theoretical_pct"] = first_of(df, ["sm__maximum_warps_per_active_cycle_pct"])[0]
    out["registers_per_thread"] = column(df, "launch__registers_per_thread")
    static, dynamic = column(df, "launch__shared_mem_per_block_static"), column(df, "launch__shared_mem_per_block_dynamic")
    out["shared_mem_per_block"] = (static.fillna(0.0) + dynamic.fillna(0.0)).where(static.notna() | dynamic.notna())
    limits = pd.DataFrame({name: column(df, col) for name, col in OCCUPANCY_LIMITS})
    # a block that uses no shared memory is not limited by it: NCU then reports the shared-memory limit
    # as the blocks-per-SM maximum (amitadate, 1-thread blocks: both 16), a tie, not a second limiter
    no_smem = (out["shared_mem_per_block"] == 0).fillna(False).to_numpy()
    arr = limits.to_numpy(dtype="float64")
    low = np.nanmin(np.where(np.isnan(arr), np.inf, arr), axis=1) if len(arr) else np.zeros(0)
    out["occupancy_limiter"] = pd.Series(limiter_names(arr, low, no_smem), index=df.index, dtype="object")
    local = pd.Series(np.nan, index=df.index)
    for ld, st in LOCAL_OPS:
        v = column(df, ld) + column(df, st)
        local = local.fillna(v)
    out["local_memory_ops"] = local
    return out


def limiter_text(row: list[float], m: float, unused: bool) -> str | None:
    """One launch's occupancy limiter: every resource whose block limit is the smallest (``m``), "and"-joined;
    shared memory not among several when the block uses none; None where no limit was exported."""
    names = [n for n, _ in OCCUPANCY_LIMITS]
    at = [n for n, v in zip(names, row, strict=True) if v == m]  # every resource at the smallest limit
    if unused and len(at) > 1:
        at = [n for n in at if n != "shared memory"]
    return " and ".join(at) if np.isfinite(m) else None


def limiter_names(arr: np.ndarray, low: np.ndarray, no_smem: np.ndarray) -> list[str | None]:
    """:func:`limiter_text` of every row of ``arr`` (block limits, one column per :data:`OCCUPANCY_LIMITS`),
    read once per distinct pattern of which limits tie at the smallest (bench/NOTES.md;
    ``tests/test_kernel_fast_paths.py`` holds it equal to the per-row rule)."""
    if not len(arr):
        return []
    at = arr == low[:, None]
    code = (at.astype(np.int64) << np.arange(arr.shape[1], dtype=np.int64)).sum(axis=1)
    code = np.where(np.isfinite(low), code | (no_smem.astype(np.int64) << arr.shape[1]), -1)
    _, first, inverse = np.unique(code, return_index=True, return_inverse=True)
    texts = [limiter_text(arr[i].tolist(), float(low[i]), bool(no_smem[i])) for i in first.tolist()]
    return [texts[j] for j in inverse.tolist()]
