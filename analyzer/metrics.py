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
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

FP_CLASSES = ("fp64", "fp32", "fp16")
FLOP_CLASSES = ("fp64", "fp32", "fp16", "tensor")
LEVELS = ("l1", "l2", "dram")

# class -> [(SASS op, FLOPs per thread instruction)]  (docs/research/formulas.md §1.2-1.4)
FP_TERMS: dict[str, tuple[tuple[str, float], ...]] = {
    "fp64": (("dadd", 1.0), ("dmul", 1.0), ("dfma", 2.0)),
    "fp32": (("fadd", 1.0), ("fmul", 1.0), ("ffma", 2.0)),
    "fp16": (("hadd", 2.0), ("hmul", 2.0), ("hfma", 4.0)),
}
VOLTA_TENSOR_FLOPS_PER_INST = 512.0  # docs/research/formulas.md §2.3: NERSC, V100 only
L2_BYTES_PER_CYCLE = 32.0  # lts__lts2xbar_cycles_active x 32 (docs/research/formulas.md §1.2)
L1_BYTES_PER_CYCLE = 128.0  # l1tex__lsu_writeback_active_* x 128 (docs/research/formulas.md §1.2)

_TENSOR_RE = re.compile(r"^sm__ops_path_tensor_(?P<v>(?!op_)[a-z0-9_]+?)\.sum(?P<s>\.per_cycle_elapsed|\.per_second)?$")


@dataclass(frozen=True)
class Recipe:
    """One way to get a per-kernel value: the product of ``factor`` and the sum of ``names``
    (all required), times the duration when ``rate`` (a ``.per_second`` metric)."""

    names: tuple[str, ...]
    factor: float = 1.0
    rate: bool = False
    label: str = ""

    def describe(self) -> str:
        if self.label:
            return self.label
        base = " + ".join(self.names)
        if self.factor != 1.0:
            base = f"{base} x {self.factor:g}"
        return f"{base} x duration" if self.rate else base


def _nan(df: pd.DataFrame) -> pd.Series:
    return pd.Series(np.nan, index=df.index, dtype="float64")


def _none(df: pd.DataFrame) -> pd.Series:
    return pd.Series(None, index=df.index, dtype="object")


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A float column, or all-NaN when the export lacks it."""
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce").astype("float64")
    return _nan(df)


def first_of(df: pd.DataFrame, names: Sequence[str]) -> tuple[pd.Series, pd.Series]:
    """Row-wise first non-null among alias columns, and which alias it came from."""
    return _first([(n, column(df, n)) for n in names if n in df.columns], df)


def _first(candidates: list[tuple[str, pd.Series]], df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Row-wise first non-NaN candidate (float64) and its label (object, None where none)."""
    out = np.full(len(df), np.nan)
    src = np.full(len(df), None, dtype=object)
    for label, v in candidates:
        arr = v.to_numpy(dtype="float64", na_value=np.nan)
        take = np.isnan(out) & ~np.isnan(arr)
        if take.any():
            out[take] = arr[take]
            src[take] = label
    return pd.Series(out, index=df.index, dtype="float64"), pd.Series(src, index=df.index, dtype="object")


def resolve(df: pd.DataFrame, recipes: Sequence[Recipe], duration: pd.Series | None = None
            ) -> tuple[pd.Series, pd.Series]:
    """Row-wise first recipe that yields a value; returns (value, recipe description)."""
    candidates: list[tuple[str, pd.Series]] = []
    for r in recipes:
        if not all(n in df.columns for n in r.names):
            continue
        v = column(df, r.names[0])
        for n in r.names[1:]:
            v = v + column(df, n)  # NaN if any part is missing: a pair is all or nothing
        v = v * r.factor
        if r.rate:
            if duration is None:
                continue
            v = v * duration
        candidates.append((r.describe(), v))
    return _first(candidates, df)


def cc_number(df: pd.DataFrame) -> pd.Series:
    """Compute capability as a float (``"8.6"`` -> 8.6); NaN when unknown."""
    if "cc" not in df.columns:
        return _nan(df)
    codes, uniq = pd.factorize(df["cc"].astype("string"))  # each distinct text parsed once
    nums = pd.to_numeric(pd.Series(np.asarray(uniq, dtype=object), dtype="string").str.extract(r"(\d+\.\d+|\d+)")[0],
                         errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    out = np.append(nums, np.nan)[codes]  # code -1 (missing) -> the appended NaN
    return pd.Series(out, index=df.index, dtype="float64")


# -- time and clocks ---------------------------------------------------------------------------

def duration(df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Kernel duration in seconds: ``gpu__time_duration.sum`` (legacy ``gpu__time_duration``), else
    NERSC's ``sm__cycles_elapsed.avg / sm__cycles_elapsed.avg.per_second`` (docs/research/formulas.md §2.2)."""
    out, src = first_of(df, ["duration_s", "gpu__time_duration.sum", "gpu__time_duration"])
    src = src.replace({"duration_s": "gpu__time_duration.sum"})
    for unit in ("sm", "smsp", "gpc"):
        cyc = column(df, f"{unit}__cycles_elapsed.avg")
        if unit == "gpc" and cyc.isna().all():
            cyc = column(df, "gpc__cycles_elapsed.max")
        hz = column(df, f"{unit}__cycles_elapsed.avg.per_second")
        v = (cyc / hz).where(hz > 0)
        take = out.isna() & v.notna()
        if take.any():
            out = out.mask(take, v)
            src = src.mask(take, f"{unit}__cycles_elapsed / {unit}__cycles_elapsed.avg.per_second")
    return out, src


CLOCK_ALIASES: dict[str, tuple[str, ...]] = {
    "sm": ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second",
           "smsp__cycles_elapsed.avg.per_second"),
    "smsp": ("smsp__cycles_elapsed.avg.per_second", "sm__cycles_elapsed.avg.per_second",
             "gpc__cycles_elapsed.avg.per_second"),
    "dram": ("dram__cycles_elapsed.avg.per_second", "dram__frequency"),
    "lts": ("lts__cycles_elapsed.avg.per_second",),
    "l1tex": ("l1tex__cycles_elapsed.avg.per_second",),
}


def clock_hz(df: pd.DataFrame, unit: str) -> tuple[pd.Series, pd.Series]:
    """Measured clock (cycles/s) of a unit over the kernel (the ceiling multiplier, docs/research/formulas.md §1.1)."""
    return first_of(df, CLOCK_ALIASES[unit])


def unit_cycles(df: pd.DataFrame, unit: str, dur: pd.Series) -> pd.Series:
    """Elapsed cycles of a unit: ``<unit>__cycles_elapsed.avg``, else cycles/s x duration."""
    names = [f"{unit}__cycles_elapsed.avg"]
    if unit in ("sm", "smsp"):
        names.append(f"{'smsp' if unit == 'sm' else 'sm'}__cycles_elapsed.avg")
    cyc, _ = first_of(df, names)
    if unit in CLOCK_ALIASES:
        hz, _ = clock_hz(df, unit)
        cyc = cyc.fillna(hz * dur)
    return cyc


# -- counts and FLOPs --------------------------------------------------------------------------

def counter(df: pd.DataFrame, base: str, dur: pd.Series, prefixes: Sequence[str] = ("sm", "smsp")
            ) -> tuple[pd.Series, pd.Series]:
    """Total count of an ``sm__``/``smsp__`` counter from ``.sum``, ``.sum.per_cycle_elapsed`` or
    ``.sum.per_second`` (docs/research/formulas.md §1.1: per-cycle-elapsed x cycles elapsed = count)."""
    out, src = first_of(df, [f"{p}__{base}.sum" for p in prefixes])
    for p in prefixes:
        for suffix, mult in ((".sum.per_cycle_elapsed", None), (".sum.per_second", dur)):
            name = f"{p}__{base}{suffix}"
            if name not in df.columns:
                continue
            scale = unit_cycles(df, p, dur) if mult is None else mult
            v = column(df, name) * scale
            take = out.isna() & v.notna()
            if take.any():
                out = out.mask(take, v)
                src = src.mask(take, name)
    return out, src


def fp_flops(df: pd.DataFrame, dur: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame]:
    """FP64/FP32/FP16 FLOPs per kernel (docs/research/formulas.md §1.2-1.4, ncu factors).

    Returns (flops, missing): ``flops[cls]`` is NaN when none of the class's counters was
    collected; ``missing[cls]`` names the terms of a partially collected class (counted as
    absent, and linted), else ``None``.
    """
    flops, missing = pd.DataFrame(index=df.index), pd.DataFrame(index=df.index)
    for cls, terms in FP_TERMS.items():
        total, n_present, absent = _nan(df).fillna(0.0), pd.Series(0, index=df.index), []
        for op, factor in terms:
            v, _ = counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)
            total = total + v.fillna(0.0) * factor
            n_present = n_present + v.notna().astype(int)
            absent.append((op, v.isna()))
        flops[cls] = total.where(n_present > 0)
        miss = _none(df)
        partial = (n_present > 0) & (n_present < len(terms))
        if partial.any():
            names = pd.Series("", index=df.index, dtype="object")
            for op, isna in absent:
                names = names.mask(isna, names + op + " ")
            miss = miss.mask(partial, names.str.strip())
        missing[cls] = miss
    return flops, missing


def tensor_variant_columns(columns: Sequence[str]) -> dict[str, dict[str, str]]:
    """Aggregate tensor variants in the export: variant -> {suffix: column}.

    ``op_*`` per-instruction variants are excluded (they break the aggregate down; adding them
    would count every op twice, docs/research/formulas.md §1.6). A variant without a sparsity suffix is dropped
    when its ``_sparsity_on/off`` split is also present.
    """
    found: dict[str, dict[str, str]] = {}
    for c in columns:
        m = _TENSOR_RE.match(c)
        if m:
            found.setdefault(m.group("v"), {})[".sum" + (m.group("s") or "")] = c
    for v in list(found):
        if any(o.startswith(v + "_sparsity_") for o in found if o != v):
            del found[v]
    return found


def tensor_ops(df: pd.DataFrame, dur: pd.Series) -> pd.DataFrame:
    """Tensor ops (= FLOPs, 2 per MAC) per aggregate variant; one column per variant."""
    out = pd.DataFrame(index=df.index)
    cycles = None
    for variant, cols in tensor_variant_columns(list(df.columns)).items():
        v = column(df, cols[".sum"]) if ".sum" in cols else _nan(df)
        if ".sum.per_cycle_elapsed" in cols:
            cycles = unit_cycles(df, "sm", dur) if cycles is None else cycles
            v = v.fillna(column(df, cols[".sum.per_cycle_elapsed"]) * cycles)
        if ".sum.per_second" in cols:
            v = v.fillna(column(df, cols[".sum.per_second"]) * dur)
        out[variant] = v
    return out


def tensor_flops(df: pd.DataFrame, dur: pd.Series, cc: pd.Series) -> tuple[pd.Series, pd.Series, pd.DataFrame]:
    """Tensor FLOPs: Σ aggregate ``sm__ops_path_tensor_*`` variants (docs/research/formulas.md §1.6), else on
    Volta (CC 7.0) ``sm__inst_executed_pipe_tensor`` x 512 (§2.3). Returns (flops, source, ops by variant)."""
    ops = tensor_ops(df, dur)
    src = _none(df)
    if ops.shape[1]:
        total = ops.sum(axis=1, min_count=1)
        src = src.mask(total.notna(), "sm__ops_path_tensor_* (aggregate variants)")
    else:
        total = _nan(df)
    inst, _ = counter(df, "inst_executed_pipe_tensor", dur)
    volta = (cc >= 7.0) & (cc < 7.2)
    v = (inst * VOLTA_TENSOR_FLOPS_PER_INST).where(volta)
    take = total.isna() & v.notna()
    total = total.mask(take, v)
    src = src.mask(take, "sm__inst_executed_pipe_tensor x 512 (V100)")
    return total, src, ops


def tensor_inst_unscaled(df: pd.DataFrame, dur: pd.Series, cc: pd.Series) -> pd.Series:
    """``sm__inst_executed_pipe_tensor`` on a non-Volta GPU: no single FLOP factor exists (§2.3)."""
    inst, _ = counter(df, "inst_executed_pipe_tensor", dur)
    return inst.where(~((cc >= 7.0) & (cc < 7.2)))


# -- bytes per level ---------------------------------------------------------------------------

DRAM_RECIPES = (
    Recipe(("dram__bytes.sum",)),
    Recipe(("dram__bytes.sum.per_second",), rate=True),
    Recipe(("dram__bytes_read.sum", "dram__bytes_write.sum")),
    Recipe(("dram__bytes_op_read.sum", "dram__bytes_op_write.sum")),
    Recipe(("dram__read_bytes", "dram__write_bytes"), label="dram__read_bytes + dram__write_bytes (legacy 2019 names)"),
    Recipe(("dram__read_bytes.sum", "dram__write_bytes.sum")),
    Recipe(("dram__bytes_per_sec",), rate=True, label="dram__bytes_per_sec x duration (legacy 2019 name)"),
)
L2_NCU_RECIPES = (
    Recipe(("lts__lts2xbar_cycles_active.sum",), L2_BYTES_PER_CYCLE),
    Recipe(("derived__lts__lts2xbar_bytes.sum",)),
    Recipe(("lts__lts2xbar_cycles_active.sum.per_second",), L2_BYTES_PER_CYCLE, rate=True),
    Recipe(("derived__lts__lts2xbar_bytes.sum.per_second",), rate=True),
)
L2_NERSC_RECIPES = (
    Recipe(("lts__t_bytes.sum",)),
    Recipe(("lts__t_bytes.sum.per_second",), rate=True),
)
L1_NERSC_RECIPES = (
    Recipe(("l1tex__t_bytes.sum",)),
    Recipe(("l1tex__t_bytes.sum.per_second",), rate=True),
)


def _l1_recipes(kind: str) -> tuple[Recipe, ...]:
    name = {"lgds": "l1tex__lsu_writeback_active_mem_lgds", "lg": "l1tex__lsu_writeback_active_mem_lg",
            "all": "l1tex__lsu_writeback_active"}[kind]
    derived = {"lgds": "derived__l1tex__lsu_writeback_bytes_mem_lgds", "lg": "derived__l1tex__lsu_writeback_bytes_mem_lg",
               "all": "derived__l1tex__lsu_writeback_bytes"}[kind]
    return (
        Recipe((f"{name}.sum",), L1_BYTES_PER_CYCLE),
        Recipe((f"{derived}.sum",)),
        Recipe((f"{name}.sum.per_second",), L1_BYTES_PER_CYCLE, rate=True),
        Recipe((f"{derived}.sum.per_second",), rate=True),
    )


def l1_order(cc: pd.Series) -> dict[str, pd.Series]:
    """Which L1 writeback counter ncu's sections use at each CC (docs/research/formulas.md §1.2, §7 item 2)."""
    return {"lgds": cc >= 9.0, "lg": (cc >= 7.5) & (cc < 9.0), "all": cc < 7.5}


def bytes_by_level(df: pd.DataFrame, dur: pd.Series, cc: pd.Series
                   ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Bytes moved at L1, L2 and DRAM per kernel, one L1/L2 convention per kernel (docs/formulas.md#work-bytes).

    Returns (bytes, source, convention): ``source[level]`` names the metric used, and
    ``convention[level]`` is ``"ncu"`` (``lsu_writeback`` x 128 / ``lts2xbar`` x 32, ncu's hierarchical
    sections), ``"t_bytes"`` (``l1tex__t_bytes`` / ``lts__t_bytes`` with their ``.peak_sustained`` in the
    export: those metrics and their own ceilings at every level), ``"nersc"`` (``*_t_bytes`` without
    peaks) or ``None`` when the level was not collected. L1 and L2 never mix conventions: the kernel takes
    the convention covering more of the two levels (ties: ``t_bytes``, then ``ncu``, then ``nersc``).
    """
    out = pd.DataFrame(index=df.index)
    src = pd.DataFrame(index=df.index)
    conv = pd.DataFrame(index=df.index)

    out["dram"], src["dram"] = resolve(df, DRAM_RECIPES, dur)
    conv["dram"] = _none(df).mask(out["dram"].notna(), "ncu")

    l2, l2s = resolve(df, L2_NCU_RECIPES, dur)
    l2n, l2ns = resolve(df, L2_NERSC_RECIPES, dur)
    # L1: the counter ncu uses at this CC first, then the other ncu variants.
    cands = {k: resolve(df, _l1_recipes(k), dur) for k in ("lgds", "lg", "all")}
    prefer = l1_order(cc)
    l1, l1s = _nan(df), _none(df)
    for k in ("lgds", "lg", "all"):  # preferred variant for the row's CC
        v, s = cands[k]
        take = l1.isna() & v.notna() & prefer[k]
        l1, l1s = l1.mask(take, v), l1s.mask(take, s)
    for k in ("lgds", "lg", "all"):  # unknown CC, or the export chose another variant
        v, s = cands[k]
        take = l1.isna() & v.notna()
        l1, l1s = l1.mask(take, v), l1s.mask(take, s)
    l1n, l1ns = resolve(df, L1_NERSC_RECIPES, dur)

    n_ncu = l1.notna().astype(int) + l2.notna().astype(int)
    n_tb = l1n.notna().astype(int) + l2n.notna().astype(int)
    tb_peaks = (column(df, "l1tex__t_bytes.sum.peak_sustained").notna() & l1n.notna()) | \
        (column(df, "lts__t_bytes.sum.peak_sustained").notna() & l2n.notna())
    use_tb = (n_tb > 0) & ((n_tb > n_ncu) | (tb_peaks & (n_tb >= n_ncu)))
    tb_word = pd.Series("nersc", index=df.index, dtype="object").mask(tb_peaks, "t_bytes")
    for lvl, (v, s), (vn, sn) in (("l1", (l1, l1s), (l1n, l1ns)), ("l2", (l2, l2s), (l2n, l2ns))):
        out[lvl] = v.mask(use_tb, vn)
        src[lvl] = s.mask(use_tb, sn)
        conv[lvl] = _none(df).mask(~use_tb & v.notna(), "ncu").mask(use_tb & vn.notna(), tb_word)
    return out[list(LEVELS)], src[list(LEVELS)], conv[list(LEVELS)]


def bytes_convention(conv: pd.DataFrame) -> pd.Series:
    """One word per kernel for the L1/L2 byte convention: ncu, t_bytes, nersc (never mixed since
    :func:`bytes_by_level` picks one per kernel; ``mixed`` only for a hand-built table), or None."""
    l1, l2 = conv["l1"], conv["l2"]
    both = l1.notna() & l2.notna()
    out = l2.fillna(l1)
    return out.mask(both & (l1 != l2), "mixed")


def rate_frame(df: pd.DataFrame) -> pd.DataFrame:
    """Only the rate metrics (``.per_cycle_elapsed``, ``.per_second``), clocks and device attributes.

    For exports without a duration (ncu's section CSVs, docs/formulas.md#work-bytes): the work and
    traffic functions run on this frame with a duration of 1 s return FLOP/s and bytes/s exactly as
    ncu's roofline sections compute them (per-cycle-elapsed x cycles per second, docs/research/formulas.md §1.1),
    never an absolute count mistaken for a rate."""
    keep = [c for c in df.columns if c.endswith((".per_cycle_elapsed", ".per_second", "_per_sec", ".peak_sustained"))
            or c.startswith("device__") or c in ("cc", "input", "index")]
    return df[keep]


def rates(df: pd.DataFrame, cc: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """(FLOP/s by class, bytes/s by level, byte-rate source, convention by level) from :func:`rate_frame`."""
    sub = rate_frame(df)
    one = pd.Series(1.0, index=df.index)
    fp, _ = fp_flops(sub, one)
    t, _, _ = tensor_flops(sub, one, cc)
    b, bsrc, conv = bytes_by_level(sub, one, cc)
    return fp.assign(tensor=t), b, bsrc, conv


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
    src = _none(df).mask(c.notna() | m.notna(), "ncu").mask(legacy, "legacy")
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
