"""Data-quality lint for kernel profiles: what could not be evaluated and what looks wrong.

Each item is the contract's ``{"code", "message", "kernels": [position...]}`` where a position is
the kernel's row position in the results table, i.e. its index in the document's ``kernels``
list (not the ncu launch ``index``). Codes:

``missing-metrics``     a metric group absent for some kernels (duration, SOL, FLOPs, a level's bytes, a ceiling)
``partial-counters``    a FLOP class with some of its add/mul/fma counters missing (counted as absent)
``achieved-above-roof`` achieved FLOP/s or bytes/s above the ceiling: a units, counting or ceiling error
``fp16-counters-zero``  tensor-core kernels whose FP16 SASS counters are zero (docs/research/formulas.md §2.5)
``tensor-uncounted``    tensor pipe busy but no ``sm__ops_path_tensor_*`` ops (FLOPs undercounted, §2.3)
``tensor-peak-unknown`` tensor variants with work but no known peak (no tensor roof)
``bytes-convention``    L1/L2 bytes in NERSC's ``*_t_bytes`` convention, not ncu's (docs/research/formulas.md §1.7, §7)
``legacy-metrics``      pre-2020 metric names (``sm__sol_pct``, ``dram__read_bytes``)
``clock-control``       SM clock below the device's max clock: ncu locked clocks (docs/research/formulas.md §2.5, §7 item 6)
``cache-control``       caches flushed before each replay pass (ncu default ``--cache-control all``)
``mixed-devices``       one input holds kernels from more than one device
``rates-only``          no duration: the roofline from ncu's rates, totals unknown (docs/formulas.md#work-bytes)
``device-assumed``      device taken from a hint, a nearest name or CC + SM count (docs/formulas.md#ceilings)
``device-ambiguous``    several table devices fit the hints: only shared ceilings used; pass --device NAME
``device-unknown``      no device identified: ceilings only from the export
``device-contradiction`` --device disagrees with the export's CC or SM count
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

ABOVE_ROOF_TOL = {"export": 1.05, "builtin": 1.10, "user": 1.10}


def _positions(mask: pd.Series) -> list[int]:
    return [int(i) for i in np.flatnonzero(mask.fillna(False).to_numpy(dtype=bool))]


def _item(code: str, message: str, mask: pd.Series) -> dict[str, Any] | None:
    pos = _positions(mask)
    return {"code": code, "message": message, "kernels": pos} if pos else None


_Items = list[dict[str, Any] | None]


def _count(mask: pd.Series, n: int) -> str:
    return f"{int(mask.fillna(False).sum())} of {n} kernel(s)"


def lint_kernels(facts: pd.DataFrame, *, meta: dict[str, dict[str, Any]] | None = None) -> list[dict[str, Any]]:
    """Lint items for a kernel results/facts frame with a 0..n-1 RangeIndex (positions).

    One helper per rule (group), run in the contract's item order.
    """
    f = facts.reset_index(drop=True)
    ro = f["rate_only"].fillna(False).astype(bool) if "rate_only" in f.columns else pd.Series(False, index=f.index)
    out: _Items = []
    out += _lint_rates_only(f, ro)
    out += _lint_missing(f, ro)
    out += _lint_partial(f)
    out += _lint_above_roof(f)
    out += _lint_tensor(f)
    out += _lint_bytes_convention(f)
    out += _lint_legacy(f)
    out += _meta_lint(f, meta or {})
    out += _lint_mixed_devices(f)
    return [o for o in out if o is not None]


def _lint_rates_only(f: pd.DataFrame, ro: pd.Series) -> _Items:
    """Rates only (ncu section CSVs, docs/formulas.md#work-bytes): evaluated from ncu's rates, totals unknown."""
    return [_item("rates-only", f"No duration for {_count(ro, len(f))}: work and traffic totals are unknown; the roofline "
                  "uses ncu's own rates (per-cycle-elapsed x cycles/s, per-second metrics).", ro)]


def _lint_missing(f: pd.DataFrame, ro: pd.Series) -> _Items:
    """``missing-metrics``: absent duration, SOL, FLOPs, a level's bytes, or a FP32/DRAM ceiling."""
    n = len(f)
    out: _Items = []
    missing = {
        "duration": (f["duration_s"].isna() & ~ro, "kernel duration (gpu__time_duration.sum)",
                     "no rates, roofline or launch-overhead check"),
        "sol": (f["sol_compute_pct"].isna() | f["sol_memory_pct"].isna(),
                "SpeedOfLight % (sm__throughput / gpu__compute_memory_throughput)",
                "NVIDIA's SOLBottleneck verdict cannot be reproduced; collect --section SpeedOfLight"),
        "flops": (f["flops"].isna() & ~(ro & f["achieved_flops_s"].notna()), "FLOP counters (sm__sass_thread_inst_executed_op_*, sm__ops_path_tensor_*)",
                  "no arithmetic intensity or compute roof; collect --set roofline"),
    }
    for lvl, metric in (("l1", "l1tex__lsu_writeback_active_mem_lg[ds].sum"), ("l2", "lts__lts2xbar_cycles_active.sum"),
                        ("dram", "dram__bytes.sum")):
        has_rate = ro & f[f"rate_{lvl}"].notna() if f"rate_{lvl}" in f.columns else ro & False
        missing[f"bytes_{lvl}"] = (f[f"bytes_{lvl}"].isna() & ~has_rate, f"{lvl.upper()} bytes ({metric})",
                                   f"the {lvl.upper()} roof could not be evaluated")
    for _key, (mask, what, effect) in missing.items():
        out.append(_item("missing-metrics", f"{what} missing for {_count(mask, n)}: {effect}.", mask))
    for col, what in (("peak_fp32", "FP32 peak"), ("bw_dram", "DRAM bandwidth")):
        mask = f[col].isna() & f["duration_s"].notna()
        out.append(_item("missing-metrics", f"No {what} ceiling (neither in the export nor the device table) for "
                         f"{_count(mask, n)}: pass --device NAME or a ceilings file.", mask))
    return out


def _lint_partial(f: pd.DataFrame) -> _Items:
    """``partial-counters``: a FLOP class with some of its add/mul/fma counters missing."""
    out: _Items = []
    for cls in ("fp64", "fp32", "fp16"):
        col = f"partial_{cls}"
        if col in f.columns:
            mask = f[col].notna()
            if mask.any():
                terms = ", ".join(sorted(set(" ".join(f.loc[mask, col].astype(str)).split())))
                out.append(_item("partial-counters", f"{cls.upper()} FLOPs use only some counters ({terms} missing) "
                                 f"for {_count(mask, len(f))}: the class is undercounted.", mask))
    return out


def _lint_above_roof(f: pd.DataFrame) -> _Items:
    """``achieved-above-roof``: achieved FLOP/s or bytes/s above the ceiling times ``ABOVE_ROOF_TOL``."""
    above = pd.Series(False, index=f.index)
    over_what: list[str] = []
    for cls in ("fp64", "fp32", "fp16", "tensor"):
        tol = f[f"src_peak_{cls}"].map(ABOVE_ROOF_TOL).astype("float64")
        m = (f[f"flops_{cls}"] / f["duration_s"]) > tol * f[f"peak_{cls}"]
        if m.any():
            over_what.append(cls.upper())
        above |= m.fillna(False)
    for lvl in ("l1", "l2", "dram"):
        tol = f[f"src_bw_{lvl}"].map(ABOVE_ROOF_TOL).astype("float64")
        m = (f[f"bytes_{lvl}"] / f["duration_s"]) > tol * f[f"bw_{lvl}"]
        if m.any():
            over_what.append(lvl.upper())
        above |= m.fillna(False)
    return [_item("achieved-above-roof", f"Achieved rate above the ceiling ({', '.join(over_what)}) for {_count(above, len(f))}: "
                  "check units (auto-scaled Kbyte/Mbyte), per-invocation sums, split runs or the device ceilings.",
                  above)]


def _lint_tensor(f: pd.DataFrame) -> _Items:
    """``fp16-counters-zero``, ``tensor-uncounted`` and ``tensor-peak-unknown``."""
    n = len(f)
    out: _Items = []
    tensor_work = f["flops_tensor"].fillna(0) > 0
    fp16_zero = f["fp16_counters_zero"].fillna(False).astype(bool) & tensor_work
    out.append(_item("fp16-counters-zero", f"FP16 SASS counters are zero on {_count(fp16_zero, n)} that use tensor cores: "
                     "their FP16 work is only in sm__ops_path_tensor_* (counted as tensor), so the Half-precision "
                     "roofline shows none (docs/formulas.md#profiling-conditions).", fp16_zero))
    unc = f["tensor_uncounted"].fillna(False).astype(bool)
    out.append(_item("tensor-uncounted", f"Tensor pipe active but no sm__ops_path_tensor_* ops for {_count(unc, n)}: tensor FLOPs "
                     "are not counted (sm__inst_executed_pipe_tensor x 512 holds on V100 only, and the kernel name gives "
                     "no instruction shape), so these kernels are not placed on the roofline; collect "
                     "--section SpeedOfLight_HierarchicalTensorRooflineChart (docs/formulas.md#profiling-conditions).",
                     unc))
    if "tensor_peak_missing" in f.columns:
        tpm = f["tensor_peak_missing"].notna()
        out.append(_item("tensor-peak-unknown", f"No peak for tensor variant(s) with work on {_count(tpm, n)}: no tensor roof; "
                         "collect sm__ops_path_tensor_*.sum.peak_sustained or pass --device.", tpm))
    return out


def _lint_bytes_convention(f: pd.DataFrame) -> _Items:
    """``bytes-convention``: L1/L2 bytes in NERSC's ``*_t_bytes`` convention (docs/formulas.md#work-bytes)."""
    n = len(f)
    nersc = f["bytes_convention"].isin(["nersc", "mixed"])
    ceil_12 = pd.Series(False, index=f.index)
    for col in ("bw_l1", "bw_l2"):
        if col in f.columns:
            ceil_12 |= f[col].notna()
    with_ceil, no_ceil = nersc & ceil_12, nersc & ~ceil_12
    tb = f["bytes_convention"] == "t_bytes"
    return [
        _item("bytes-convention", f"L1/L2 bytes for {_count(with_ceil, n)} use NERSC's l1tex__t_bytes / lts__t_bytes "
              "(all tag-stage traffic) with the device table's L1/L2 ceilings, not ncu's lsu_writeback / lts2xbar: "
              "intensities are not comparable with ncu's hierarchical roofline (docs/formulas.md#work-bytes).",
              with_ceil),
        _item("bytes-convention", f"L1/L2 bytes for {_count(no_ceil, n)} use NERSC's l1tex__t_bytes / lts__t_bytes "
              "(all tag-stage traffic) and no L1/L2 ceiling is known (no device table entry or .peak_sustained): "
              "those levels are shown but not evaluated (docs/formulas.md#work-bytes).", no_ceil),
        _item("bytes-convention", f"L1/L2 bytes and ceilings for {_count(tb, n)} both from l1tex__t_bytes / "
              "lts__t_bytes and their .peak_sustained x unit cycles/s, the hierarchical-roofline metrics the export "
              "carries (one convention per kernel, docs/formulas.md#work-bytes).", tb),
    ]


def _lint_legacy(f: pd.DataFrame) -> _Items:
    """``legacy-metrics``: pre-2020 metric names."""
    legacy = f["legacy_metrics"].fillna(False).astype(bool)
    return [_item("legacy-metrics", f"Pre-2020 metric names (sm__sol_pct, dram__read_bytes ...) used for {_count(legacy, len(f))}: "
                  "SOL % and DRAM bytes are read from them; L1/L2 levels are not available in that layout.", legacy)]


def _clock_low(f: pd.DataFrame) -> pd.Series:
    """Kernels whose measured SM clock is below 97 % of the device's max clock (device__attribute_clock_rate)."""
    if "clock_ratio" not in f.columns:
        return pd.Series(False, index=f.index)
    return (f["clock_ratio"] < 0.97).fillna(False)


def _lint_mixed_devices(f: pd.DataFrame) -> _Items:
    """``mixed-devices``: several devices inside one input."""
    if "device" not in f.columns or "input" not in f.columns:
        return []
    dev = f["device"].astype("string").fillna("") + "|" + f.get("cc", pd.Series("", index=f.index)).astype("string").fillna("")
    per_input = dev.groupby(f["input"].astype("string").fillna("")).transform("nunique")
    mixed = per_input > 1
    return [_item("mixed-devices", f"{_count(mixed, len(f))} come from inputs that mix devices: ceilings are per kernel, but "
                  "compare kernels across devices with care.", mixed)]


_CACHE_NONE = re.compile(r"--cache-control[= ]+none")
_CLOCK_NONE = re.compile(r"--clock-control[= ]+none")


def _meta_lint(f: pd.DataFrame, meta: dict[str, dict[str, Any]]) -> _Items:
    """``cache-control`` and ``clock-control`` from the recorded ncu command line (parser ``meta['command']``)
    and the measured SM clock, one item each (docs/formulas.md#profiling-conditions); ``metrics-not-collected``
    for metrics the export names but printed ``n/a`` for on every launch (parser ``meta['metrics_na']``)."""
    out: list[dict[str, Any] | None] = []
    flushed = pd.Series(False, index=f.index)
    locked = pd.Series(False, index=f.index)
    na: dict[str, list[str]] = {}
    for path, info in (meta or {}).items():
        if "input" not in f.columns:
            break
        rows = (f["input"].astype("string") == path).fillna(False)
        if info.get("metrics_na"):
            na[path] = [str(m) for m in info["metrics_na"]]
        cmd = str(info.get("command") or info.get("command_line") or "")
        if not cmd or ("ncu" not in cmd and "nv-nsight-cu-cli" not in cmd):
            continue
        if not _CACHE_NONE.search(cmd):
            flushed |= rows
        if not _CLOCK_NONE.search(cmd):
            locked |= rows
    # a cold cache changes DRAM bytes only: no item for kernels without DRAM bytes
    flushed &= (f["bytes_dram"] > 0).fillna(False) if "bytes_dram" in f.columns else False
    out.append(_item("cache-control", "Caches were flushed before every replay pass (ncu default --cache-control all) for "
                     f"{int(flushed.sum())} kernel(s): DRAM bytes include cold-cache traffic a warm run may serve from L2 "
                     "(docs/formulas.md#profiling-conditions).", flushed))
    low = _clock_low(f)
    why = []
    if locked.any():
        why.append(f"the recorded command line has ncu's default --clock-control base ({int(locked.sum())} kernel(s))")
    if low.any():
        lo, hi = f.loc[low, "clock_ratio"].min(), f.loc[low, "clock_ratio"].max()
        span = f"{lo:.0%}" if f"{lo:.0%}" == f"{hi:.0%}" else f"{lo:.0%}-{hi:.0%}"
        why.append(f"the SM clock ran at {span} of the device's max clock ({int(low.sum())} kernel(s))")
    out.append(_item("clock-control", f"Clocks below the maximum for {_count(locked | low, len(f))}: " + "; ".join(why) +
                     ". Absolute durations and FLOP/s are at that clock; percent of peak is unaffected "
                     "(docs/formulas.md#profiling-conditions).", locked | low))
    for path, names in na.items():
        rows = (f["input"].astype("string") == path).fillna(False)
        shown = ", ".join(names[:8]) + (f" and {len(names) - 8} more" if len(names) > 8 else "")
        out.append(_item("metrics-not-collected", f"{path}: ncu printed n/a for every launch of {shown}: ncu does so for a "
                         "metric name it does not know or cannot collect on this GPU; check the spelling in --metrics "
                         "against `ncu --query-metrics` (docs/formulas.md#profiling-conditions).", rows))
    return out
