"""NCU's SpeedOfLight %, the SOL breakdown per memory unit, compute pipe utilization and launch
geometry, exactly as exported (docs/research/formulas.md §1.8, §3.1, §3.4)."""

from __future__ import annotations

import pandas as pd

from rooftop.analyzer.metrics.columns import first_of, none_series

# -- SOL, launch -------------------------------------------------------------------------------

SOL_COMPUTE = ("sm__throughput.avg.pct_of_peak_sustained_elapsed", "sm__sol_pct")
SOL_MEMORY = ("gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed", "gpu__compute_memory_sol_pct")
# Memory units of the SOL breakdown, by level (SOLBottleneck get_max_pipe prefixes, docs/research/formulas.md §3.1)
UNIT_THROUGHPUT: dict[str, tuple[str, ...]] = {
    "l1": ("l1tex__throughput.avg.pct_of_peak_sustained_active",),
    "l2": ("lts__throughput.avg.pct_of_peak_sustained_elapsed", "ltc__sol_pct"),
    "dram": ("gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed", "dram__throughput.avg.pct_of_peak_sustained_elapsed",
             "fbpa__sol_pct"),
}
# Compute pipes (HighPipeUtilization, docs/research/formulas.md §3.4) by FLOP class
PIPE_UTIL: dict[str, tuple[str, ...]] = {
    "tensor": ("sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tensor_cycles_active_v2.avg.pct_of_peak_sustained_elapsed",
               "sm__pipe_tc_cycles_active.avg.pct_of_peak_sustained_elapsed",
               "sm__inst_executed_pipe_tensor.avg.pct_of_peak_sustained_elapsed"),
    "fp64": ("sm__pipe_fp64_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fp64.avg.pct_of_peak_sustained_elapsed"),
    "fp32": ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fma.avg.pct_of_peak_sustained_elapsed"),
    "fp16": ("sm__pipe_fp16_cycles_active.avg.pct_of_peak_sustained_elapsed",
             "sm__inst_executed_pipe_fp16.avg.pct_of_peak_sustained_elapsed"),
    "alu": ("sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed",
            "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_elapsed"),
}


def sol(df: pd.DataFrame) -> tuple[pd.Series, pd.Series, pd.Series]:
    """NCU's SpeedOfLight % exactly as exported (docs/research/formulas.md §1.8): (compute, memory, source)."""
    c, cs = first_of(df, SOL_COMPUTE)
    m, ms = first_of(df, SOL_MEMORY)
    legacy = (cs == "sm__sol_pct") | (ms == "gpu__compute_memory_sol_pct")
    src = none_series(df).mask(c.notna() | m.notna(), "ncu").mask(legacy, "legacy")
    return c, m, src


def unit_throughput(df: pd.DataFrame) -> pd.DataFrame:
    """Memory-unit throughput % (SOL breakdown) per level; NaN where not exported."""
    return pd.DataFrame({lvl: first_of(df, names)[0] for lvl, names in UNIT_THROUGHPUT.items()})


def pipe_utilization(df: pd.DataFrame) -> pd.DataFrame:
    """Compute pipe utilization % per FLOP class (and the integer ALU pipe)."""
    return pd.DataFrame({k: first_of(df, names)[0] for k, names in PIPE_UTIL.items()})


def launch(df: pd.DataFrame) -> pd.DataFrame:
    """grid (blocks), block (threads), waves per SM, SM count as reported by the export."""
    grid, _ = first_of(df, ["grid", "launch__grid_size"])
    block, _ = first_of(df, ["block", "launch__block_size"])
    waves, _ = first_of(df, ["launch__waves_per_multiprocessor"])
    sms, _ = first_of(df, ["device__attribute_multiprocessor_count", "launch__sm_count"])
    return pd.DataFrame({"grid": grid, "block": block, "waves": waves, "sm_count": sms})
