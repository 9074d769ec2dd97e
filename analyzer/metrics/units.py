"""The busiest hardware unit of each kernel, from NCU's SpeedOfLight breakdown
(docs/formulas.md#findings, #kernel-labels).

NCU's ``sm__throughput`` and ``gpu__compute_memory_throughput`` are each the maximum of a breakdown of
unit metrics (the SpeedOfLight section's "SOL Breakdown" chart; Nsight Compute Profiling Guide,
"Throughput metrics"). An export with ``--set full`` carries those unit metrics with their
``.avg/.max/.min/.sum.pct_of_peak_sustained_elapsed`` roll-ups, which is how they are told from other
percentages here. Every unit metric is named by the limiter word it stands for (the pipe or level).

* ``pipe_word`` / ``pipe_name`` / ``pipe_pct``: the busiest compute-side unit of the breakdown (a pipe,
  instruction issue), what names the compute limiter.
* ``busiest_pct``: the highest % of peak over elapsed time of any unit NCU measured (the breakdown, the
  two SOL sides, L2 and DRAM): with the same work, that unit needs at least that share of the time.
* ``top_unit``: the metric of the busiest unit, ``top_unit_word`` its limiter word (``lsu``, ``alu``,
  ``l2``, ...), ``top_unit_name`` in words, ``top_unit_side`` ``compute`` or ``memory``,
  ``top_unit_level`` ``l1``/``l2``/``dram`` for memory units.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column

_ELAPSED = ".avg.pct_of_peak_sustained_elapsed"
_MAX = ".max.pct_of_peak_sustained_elapsed"

# metric base name -> (limiter word, display name, side, level); first match wins.
# Pipes: NCU's HighPipeUtilization rule (ComputeWorkloadAnalysis) names them ALU, FMA, FP64, FP16,
# Shared, Tensor (FP/INT/DP), LSU, XU, TEX, TMA, Uniform, CBU, ADU (docs/formulas.md#kernel-labels).
UNIT_TABLE: tuple[tuple[re.Pattern[str], str, str, str, str | None], ...] = tuple(
    (re.compile(p), w, d, s, lvl) for p, w, d, s, lvl in (
        (r"^l1tex__(?:texin|tex_|data_pipe_tex|f_)", "l1", "L1/TEX texture path", "memory", "l1"),
        (r"^l1tex__lsuin_requests", "l1", "L1/TEX LSU requests", "memory", "l1"),
        (r"^l1tex__data_bank", "l1", "L1/TEX data banks", "memory", "l1"),
        (r"^l1tex__data_pipe_lsu_wavefronts", "l1", "L1/TEX data pipe (LSU wavefronts)", "memory", "l1"),
        (r"^l1tex__m_", "l1", "L1/TEX <-> L2 interface", "memory", "l1"),
        (r"^l1tex__", "l1", "L1/TEX cache", "memory", "l1"),
        (r"^lts__", "l2", "L2 cache", "memory", "l2"),
        (r"^(?:dram|fbpa|gpu__dram)__", "dram", "DRAM", "memory", "dram"),
        (r"^idc__", "idc", "indexed constant cache", "memory", None),
        (r"^sm__(?:inst_executed_pipe_lsu|mio)", "lsu", "LSU pipe (load/store issue)", "compute", None),
        (r"^sm__(?:pipe_alu|inst_executed_pipe_alu)", "alu", "ALU pipe (integer and logic)", "compute", None),
        (r"^sm__(?:pipe_fma|inst_executed_pipe_fma)(?!_type_fp16)", "fma",
         "FMA pipe (FP32 and integer multiply-add)", "compute", None),
        (r"^sm__(?:pipe_fp16|inst_executed_pipe_fp16|inst_executed_pipe_fma_type_fp16)", "fp16", "FP16 pipe",
         "compute", None),
        (r"^sm__(?:pipe_fp64|inst_executed_pipe_fp64)", "fp64", "FP64 pipe", "compute", None),
        (r"^sm__(?:pipe|inst_executed_pipe)_tensor_(?:op|subpipe)_hmma", "tensor-hmma",
         "tensor pipe, floating point (HMMA)", "compute", None),
        (r"^sm__(?:pipe|inst_executed_pipe)_tensor_(?:op|subpipe)_imma", "tensor-imma",
         "tensor pipe, integer (IMMA)", "compute", None),
        (r"^sm__(?:pipe|inst_executed_pipe)_tensor_(?:op|subpipe)_dmma", "tensor-dmma",
         "tensor pipe, FP64 (DMMA)", "compute", None),
        (r"^sm__(?:pipe_tensor|inst_executed_pipe_tensor|pipe_tc|inst_executed_pipe_tc)", "tensor", "tensor pipe",
         "compute", None),
        (r"^sm__(?:mem_tensor|inst_executed_pipe_tmem)", "tmem", "tensor memory", "compute", None),
        (r"^sm__pipe_shared", "shared-pipe", "shared pipe (FP64 and tensor)", "compute", None),
        (r"^sm__inst_executed_pipe_xu", "xu", "XU pipe (transcendentals, conversions)", "compute", None),
        (r"^sm__inst_executed_pipe_uniform", "uniform", "uniform pipe", "compute", None),
        (r"^sm__inst_executed_pipe_cbu", "cbu", "CBU pipe (branches)", "compute", None),
        (r"^sm__inst_executed_pipe_adu", "adu", "ADU pipe (address divergence)", "compute", None),
        (r"^sm__(?:inst_executed_pipe_tex|pipe_tex)", "tex", "TEX pipe", "compute", None),
        (r"^sm__(?:inst_executed_pipe_tma|pipe_tma)", "tma", "TMA pipe", "compute", None),
        (r"^(?:sm|smsp)__(?:issue_active|inst_executed|inst_issued|instruction_throughput)", "issue",
         "instruction issue", "compute", None),
    ))
UNIT_WORDS: tuple[str, ...] = tuple(dict.fromkeys(w for _, w, _, _, _ in UNIT_TABLE))

# the SOL sides and the per-level aggregates, used when an export has no breakdown
_AGGREGATES: tuple[tuple[str, str, str, str, str | None], ...] = (
    ("sm__throughput", "sm", "SM (Compute (SM) Throughput)", "compute", None),
    ("sm__sol_pct", "sm", "SM (Compute (SM) Throughput)", "compute", None),
    ("l1tex__throughput", "l1", "L1/TEX cache", "memory", "l1"),
    ("lts__throughput", "l2", "L2 cache", "memory", "l2"),
    ("ltc__sol_pct", "l2", "L2 cache", "memory", "l2"),
    ("gpu__dram_throughput", "dram", "DRAM", "memory", "dram"),
    ("dram__throughput", "dram", "DRAM", "memory", "dram"),
    ("fbpa__sol_pct", "dram", "DRAM", "memory", "dram"),
    ("gpu__compute_memory_throughput", "memory", "memory (Memory Throughput)", "memory", None),
    ("gpu__compute_memory_sol_pct", "memory", "memory (Memory Throughput)", "memory", None),
)


def unit_of(metric: str) -> tuple[str, str, str, str | None] | None:
    """(word, display name, side, level) of a SOL-breakdown metric base name, ``None`` if unknown."""
    for pat, word, name, side, lvl in UNIT_TABLE:
        if pat.match(metric):
            return word, name, side, lvl
    return None


def breakdown_metrics(columns: list[str]) -> list[str]:
    """The SOL-breakdown unit metrics of an export: ``<m>.avg.pct_of_peak_sustained_elapsed`` that also
    has its ``.max`` roll-up (the breakdown table's instance statistics), and every pipe utilisation
    (``sm__pipe_*``, ``sm__inst_executed_pipe_*``), minus the aggregates (names holding ``throughput``,
    which are maxima of other units) and names no unit in the table matches."""
    cols = set(columns)
    out = []
    for c in columns:
        if not c.endswith(_ELAPSED):
            continue
        base = c[: -len(_ELAPSED)]
        pipe = base.startswith(("sm__pipe_", "sm__inst_executed_pipe_"))  # a pipe's % is its own, breakdown or not
        if (base + _MAX in cols or pipe) and "throughput" not in base and unit_of(base) is not None:
            out.append(base)
    return out


def _argmax(df: pd.DataFrame, names: list[tuple[str, str, str, str, str | None]], side: str | None
            ) -> tuple[np.ndarray, np.ndarray]:
    """Row-wise highest value among ``names`` (of one ``side``, pipes only, when given) and its position
    (-1 where none); an aggregate equal to a breakdown unit before it keeps the unit's name."""
    n = len(df)
    best = np.full(n, np.nan)
    pick = np.full(n, -1)
    for j, (col, word, _name, s, _lvl) in enumerate(names):
        if side is not None and (s != side or word == "sm"):
            continue
        v = column(df, col).to_numpy(dtype="float64")
        better = np.isfinite(v) & (np.isnan(best) | (v > best + 1e-9 * np.maximum(1.0, np.abs(v))))
        best = np.where(better, v, best)
        pick = np.where(better, j, pick)
    return best, pick


def busiest_unit(df: pd.DataFrame) -> pd.DataFrame:
    """Per kernel: ``busiest_pct`` and the ``top_unit`` (metric), ``top_unit_word``, ``top_unit_name``,
    ``top_unit_side``, ``top_unit_level`` that reach it (module docstring), and the busiest pipe of the
    compute side (``pipe_pct``, ``pipe_word``, ``pipe_name``). Breakdown units are preferred over an
    aggregate of the same value (they name the pipe or level); NaN/None without any."""
    names: list[tuple[str, str, str, str, str | None]] = []
    for base in breakdown_metrics(list(df.columns)):
        u = unit_of(base)
        assert u is not None
        names.append((base + _ELAPSED, *u))
    for base, word, name, side, lvl in _AGGREGATES:
        col = base if base.endswith("_pct") else base + _ELAPSED
        if col in df.columns:
            names.append((col, word, name, side, lvl))
    best, pick = _argmax(df, names, None)
    out = pd.DataFrame({"busiest_pct": best}, index=df.index)
    for k, key in enumerate(("top_unit", "top_unit_word", "top_unit_name", "top_unit_side", "top_unit_level")):
        table = np.array([None] + [row[k] for row in names], dtype=object)
        out[key] = table[pick + 1]
    # the busiest compute-side unit that names a pipe (the SM aggregate does not): the compute limiter
    cbest, cpick = _argmax(df, names, "compute")
    words = np.array([None] + [row[1] for row in names], dtype=object)
    cnames = np.array([None] + [row[2] for row in names], dtype=object)
    out["pipe_pct"] = cbest
    out["pipe_word"] = words[cpick + 1]
    out["pipe_name"] = cnames[cpick + 1]
    # "Memory Throughput" alone (a console log): the level whose own % reaches it names the unit, the
    # L1 one measured over active cycles as NCU prints it (docs/formulas.md#findings)
    mem = (out["top_unit_word"] == "memory").to_numpy()
    if mem.any():
        for lvl, col, name in (("l1", "l1tex__throughput.avg.pct_of_peak_sustained_active", "L1/TEX cache"),):
            v = column(df, col).to_numpy(dtype="float64")
            hit = mem & np.isfinite(v) & (v >= best - 1e-6)
            out.loc[hit, ["top_unit", "top_unit_word", "top_unit_name", "top_unit_level"]] = [col, lvl, name, lvl]
    return out
