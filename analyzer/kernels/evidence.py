"""The evidence sentences of every kernel (docs/formulas.md#kernel-labels): why it got its label,
its work, each memory level, the binding level, and what the export lacks, each sentence built
for a whole column at once with Arrow string kernels."""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.document import gc_paused
from rooftop.analyzer.kernels.classify import LAUNCH_S, LEVEL_NAMES
from rooftop.analyzer.metrics.columns import FLOP_CLASSES, LEVELS

_PREFIX = {-5: "f", -4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}


def si(value: float | None, unit: str) -> str:
    """``1.23e12, "FLOP/s"`` -> ``"1.23 TFLOP/s"``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return f"0 {unit}"
    k = int(max(-5, min(6, math.floor(math.log10(abs(value)) / 3))))
    if abs(round(value / 1000**k, 1)) >= 999.5 and k < 6:
        k += 1
    return f"{value / 1000 ** k:.3g} {_PREFIX[k]}{unit}"


_PREFIXES = np.array([_PREFIX[k] for k in range(-5, 7)], dtype=object)


def _si_texts(u: np.ndarray, unit: str) -> list[str]:
    """:func:`si` of each value of ``u`` (float64), vectorized but for the final ``%``."""
    finite = np.isfinite(u)
    nz = finite & (u != 0)
    k = np.zeros(len(u), dtype=int)
    k[nz] = np.clip(np.floor(np.log10(np.abs(u[nz])) / 3), -5, 6).astype(int)
    mant = np.where(finite, u / np.power(1000.0, k), 0.0)
    bump = np.abs(np.round(mant, 1)) >= 999.5  # 999.9 would print as 1e+03: use the next prefix
    k = np.where(bump & (k < 6), k + 1, k)
    mant = np.where(finite, u / np.power(1000.0, k), 0.0)
    text = list(map("%.3g ".__mod__, mant.tolist()))
    suffix = [p + unit for p in _PREFIXES.tolist()]
    text = list(map(str.__add__, text, [suffix[i] for i in (k + 5).tolist()]))
    for i in np.flatnonzero(~finite).tolist():
        text[i] = "n/a"
    return text


# Evidence text is built with Arrow string kernels over whole columns (C loops, no per-row Python):
# numbers are formatted once per distinct value in Python and gathered with ``take``; a sentence a
# mask does not select is null and dropped when the rows' lists are assembled.
_NULL = pa.scalar(None, pa.string())
Text: TypeAlias = "pa.Array | pa.Scalar | str"


def _cat(*parts: Text) -> pa.Array:
    """Concatenate strings element-wise (null if any part is null)."""
    return pc.binary_join_element_wise(*parts, "")


def _where(mask: Any, yes: Text, no: Text) -> pa.Array:
    return pc.if_else(_mask(mask), yes, no)


def _mask(mask: Any) -> np.ndarray:
    if isinstance(mask, np.ndarray) and mask.dtype == bool:  # already a mask: no Series round trip
        return mask
    if isinstance(mask, pd.Series) and mask.dtype == bool:
        arr: np.ndarray = mask.to_numpy()
        return arr
    return np.asarray(pd.Series(mask).fillna(False).to_numpy(dtype=bool))


def _obj(values: Any) -> pa.Array:
    """Strings as an Arrow array (``None``/NaN -> "")."""
    ser = pd.Series(values)
    try:
        arr = pa.array(ser.to_numpy(dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowTypeError, pa.ArrowInvalid):  # not all strings: str() each, as before
        arr = pa.array(ser.astype("object").where(ser.notna(), "").astype(str).tolist(), type=pa.string())
    return pc.fill_null(arr, "")


def _take(texts: list[str], codes: np.ndarray) -> pa.Array:
    return pa.array(texts, type=pa.string()).take(pa.array(codes))


def _floats(values: Any) -> np.ndarray:
    """Numbers as float64 (what is not a number: NaN); float64 columns pass without a copy."""
    out: np.ndarray
    if isinstance(values, pd.Series) and values.dtype == np.float64:
        out = values.to_numpy()
    else:
        out = pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64")
    return out


def _factorize(values: Any) -> tuple[np.ndarray, np.ndarray]:
    v = _floats(values)
    codes, uniq = pd.factorize(v, use_na_sentinel=False)
    return codes, np.asarray(uniq, dtype="float64")


def _num(values: Any, fmt: str) -> pa.Array:
    """``fmt % value`` per row, "?" where not finite; each distinct value formatted once."""
    codes, u = _factorize(values)
    finite = np.isfinite(u)
    text = list(map(fmt.__mod__, np.where(finite, u, 0.0).tolist()))
    for i in np.flatnonzero(~finite).tolist():
        text[i] = "?"
    return _take(text, codes)


def _si(values: Any, unit: str) -> pa.Array:
    """:func:`si` for a whole column, as an Arrow array (each distinct value formatted once)."""
    codes, u = _factorize(values)
    return _take(_si_texts(u, unit), codes)


def _joined(pieces: list[tuple[np.ndarray, Text]], n: int) -> pa.Array:
    """The pieces whose mask is set, joined with ", " in order ("" where none is)."""
    acc = pa.array([""] * n, type=pa.string())
    for has, piece in pieces:
        empty = pc.equal(acc, "")
        acc = pc.if_else(has, pc.if_else(empty, piece, _cat(acc, ", ", piece)), acc)
    return acc


def _rows(frags: list[pa.Array], n: int) -> list[list[str]]:
    """Per row, its non-null, non-empty fragments in order."""
    if not frags or not n:
        return [[] for _ in range(n)]
    k = len(frags)
    flat = pa.concat_arrays([pc.cast(fr, pa.string()) for fr in frags])  # fragment-major
    flat = flat.take(pa.array(np.arange(k * n).reshape(k, n).T.ravel()))  # row-major
    keep = pc.fill_null(pc.greater(pc.binary_length(flat), 0), False).to_numpy(zero_copy_only=False)
    values = flat.filter(pa.array(keep)).to_numpy(zero_copy_only=False).tolist()
    ends = np.cumsum(keep.reshape(n, k).sum(axis=1)).tolist()
    starts = [0, *ends[:-1]]
    with gc_paused():
        return [values[a:b] for a, b in zip(starts, ends, strict=True)]


def _missing_levels(f: pd.DataFrame) -> pd.Series:
    """Per kernel, the memory levels whose utilisation is unknown and why, e.g.
    ``"L1 (no ceiling), L2 (no bytes in the export)"``; ``""`` when every level is known."""
    n = len(f)
    out = np.full(n, "", dtype=object)
    nan = np.full(n, np.nan)
    for lvl in LEVELS:
        util = f[f"bw_util_{lvl}"].isna().to_numpy() if f"bw_util_{lvl}" in f.columns else np.isnan(nan)
        unit = f[f"unit_{lvl}"].isna().to_numpy() if f"unit_{lvl}" in f.columns else np.isnan(nan)
        has_bytes = f[f"bytes_{lvl}"].notna().to_numpy() if f"bytes_{lvl}" in f.columns else ~np.isnan(nan)
        why = np.where(has_bytes, f", {LEVEL_NAMES[lvl]} (no ceiling)",
                       f", {LEVEL_NAMES[lvl]} (no bytes in the export)").astype(object)
        miss = util & unit
        out[miss] = out[miss] + why[miss]
    return pd.Series([t.lstrip(", ") for t in out.tolist()], index=f.index, dtype=object)


class _Evidence:
    """The columns the sentences read and the sentences so far (one Arrow array each, null where
    a kernel does not get it)."""

    def __init__(self, f: pd.DataFrame, c: pd.DataFrame) -> None:
        self.f, self.c, self.n = f, c, len(f)
        self.lim, self.label = c["limiter"], c["label"]
        self.basis = c["basis"] if "basis" in c.columns else pd.Series("none", index=c.index)
        self.frags: list[pa.Array] = []

    def add(self, mask: Any, texts: Text) -> None:
        self.frags.append(pc.if_else(_mask(mask), texts, _NULL))

    def fin(self, col: str) -> np.ndarray:
        finite: np.ndarray = np.isfinite(_floats(self.f[col]))
        return finite


def explain(f: pd.DataFrame, c: pd.DataFrame) -> list[list[str]]:
    """The evidence, in words, for every kernel; each sentence is built for a whole column at once,
    section by section (docs/formulas.md#kernel-labels)."""
    e = _Evidence(f, c)
    for section in (_decision, _overhead, _work, _levels, _binding, _provenance):
        section(e)
    return _rows(e.frags, e.n)


def _decision(e: _Evidence) -> None:
    """The rule that decided (docs/formulas.md#kernel-labels)."""
    f, c, add, lim, label, basis = e.f, e.c, e.add, e.lim, e.label, e.basis
    legacy = _where(f["sol_source"] == "legacy", " [legacy sm__sol_pct / gpu__compute_memory_sol_pct]", "")
    add(c["sol_verdict"].notna() & f["sol_compute_pct"].notna() & f["sol_memory_pct"].notna(),
        _cat("NCU Speed Of Light: compute (SM) ", _num(f["sol_compute_pct"], "%.1f"), "%, memory ",
             _num(f["sol_memory_pct"], "%.1f"), "% -> SOLBottleneck \"", _obj(c["sol_verdict"]),
             "\" (>= 80 % high throughput, both < 60 % latency or small grid, 60-80 % the side ahead by >= 10 "
             "points; docs/formulas.md#kernel-labels)", legacy))
    one_c = f["sol_compute_pct"].notna() & f["sol_memory_pct"].isna()
    one_m = f["sol_memory_pct"].notna() & f["sol_compute_pct"].isna()
    add((c["sol_verdict"] == "High Throughput") & one_c,
        _cat("NCU Speed Of Light: compute (SM) ", _num(f["sol_compute_pct"], "%.1f"), "% (the memory % is not in the "
             "export) -> \"High Throughput\": one side >= 80 % decides on its own (SOLBottleneck; "
             "docs/formulas.md#kernel-labels)"))
    add((c["sol_verdict"] == "High Throughput") & one_m,
        _cat("NCU Speed Of Light: memory ", _num(f["sol_memory_pct"], "%.1f"), "% (the compute (SM) % is not in the "
             "export) -> \"High Throughput\": one side >= 80 % decides on its own (SOLBottleneck; "
             "docs/formulas.md#kernel-labels)"))
    if "ncu_stored_verdict" in f.columns:
        add(f["ncu_stored_verdict"].notna(), _cat("NCU's own stored verdict: \"", _obj(f["ncu_stored_verdict"]),
                                                  "\" (NCU decides; docs/formulas.md#kernel-labels)"))
    mem_known, cmp_known = c["memory_side_pct"].notna().to_numpy(), c["compute_side_pct"].notna().to_numpy()
    sides = _cat(_where(mem_known, _cat("memory side ", _num(c["memory_side_pct"], "%.1f"), "% of peak"),
                        "memory side not measured"), ", ",
                 _where(cmp_known, _cat("compute side ", _num(c["compute_side_pct"], "%.1f"), "% of peak"),
                        "compute side not measured"))
    add(basis == "roofline-sol",
        _cat("No SpeedOfLight % in the export: NCU's SOLBottleneck thresholds applied to rooftop's roofline "
             "utilisations: ", sides, " -> ", _obj(label), " (", _obj(lim), "); a side is named only at >= 60 %, "
             "both below 60 % with L1, L2 and DRAM measured is latency (docs/formulas.md#kernel-labels)"))
    top = np.fmax(_floats(c["memory_side_pct"]), _floats(c["compute_side_pct"]))
    one_side = (basis == "thin").to_numpy() & (top >= 60.0) & ~(mem_known & cmp_known)
    add(one_side,
        _cat("No SpeedOfLight % in the export; ", sides, ": a side below 80 % is named only against the other "
             "side, which is not measured, so the bound is unknown (docs/formulas.md#kernel-labels)"))
    add((basis == "thin").to_numpy() & ~one_side,
        _cat("No SpeedOfLight % in the export and no side reaches 60 % (", sides, "), but the utilisation of ",
             _obj(_missing_levels(f).where(lambda x: x != "", "the compute side")),
             " is unknown and could bind: bound unknown; collect --section SpeedOfLight, or the missing bytes "
             "(l1tex__t_bytes, lts__t_bytes) or ceilings (--device) (docs/formulas.md#kernel-labels)"))


def _overhead(e: _Evidence) -> None:
    """Why an overhead-bound kernel is: launch cost, small grid, tail, latency."""
    f, c, n, add, lim, label, basis = e.f, e.c, e.n, e.add, e.lim, e.label, e.basis
    over = (label == "overhead-bound").to_numpy()
    add(over & (lim == "launch").to_numpy(),
        _cat("Duration ", _si(f["duration_s"], "s"),
             f" < {LAUNCH_S * 1e6:.0f} µs: comparable to the 1.2-2.4 µs kernel launch cost; "
             "batch, fuse or graph-capture such launches (docs/formulas.md#kernel-labels)"))
    fewer = (f["grid"].astype("float64") < f["sm_count"]).fillna(False).to_numpy()
    add(over & (lim == "small-grid").to_numpy() & fewer,
        _cat("Grid of ", _num(f["grid"].astype("float64"), "%.0f"), " block(s) < ", _num(f["sm_count"], "%.0f"),
             " SMs: ", _num(f["sm_count"] - f["grid"].astype("float64"), "%.0f"),
             " SMs get no block (NCU LaunchConfiguration Small Grid; docs/formulas.md#kernel-labels)"))
    add(over & (lim == "small-grid").to_numpy() & ~fewer,
        _cat("NCU says Small Grid (grid ", _num(f["grid"].astype("float64"), "%.0f"), " blocks",
             _where(f["waves"].notna(), _cat(", ", _num(f["waves"], "%.2f"), " waves"), ""),
             "): the grid cannot fill the device (docs/formulas.md#kernel-labels)"))
    ncu_tail = f["ncu_tail"].astype("object").eq(True).to_numpy() if "ncu_tail" in f.columns else np.zeros(n, bool)
    full = 100.0 * (f["waves"] - np.floor(f["waves"]))
    ncu_no_tail = f["ncu_tail"].astype("object").eq(False).to_numpy() if "ncu_tail" in f.columns else np.zeros(n, bool)
    add(over & (lim == "tail").to_numpy(),
        _cat(_num(f["waves"], "%.2f"), " waves: the last wave is ", _num(full, "%.0f"), "% full, its idle SMs "
             "cost up to ", _num(c["tail_speedup_pct"], "%.1f"), "% of the runtime (est. 100·(1 − partial)/(1 + whole))",
             _where(ncu_tail, "; NCU raised Tail Effect", "; NCU's Tail Effect condition 1/(1 + whole) >= 20 % holds"),
             " (docs/formulas.md#kernel-labels)"))
    fills = (f["grid"].astype("float64") >= f["sm_count"]).fillna(False).to_numpy(dtype=bool)
    add(over & (lim == "latency").to_numpy(),
        _cat("Compute and memory both below 60 % of peak",
             _where(fills, " and the grid gives every SM work",
                    _where(np.asarray(basis == "ncu-sol"),
                           " (grid or SM count not in the export: NCU's verdict rules out a small grid)",
                           " (grid or SM count not in the export: a small grid is not ruled out)")),
             ": latency-bound (stalls, occupancy, dependencies), not throughput-bound",
             _where(ncu_no_tail, _cat("; ", _num(f["waves"], "%.2f"), " waves and NCU raised no Tail Effect"),
                    _where(f["waves"].notna(), _cat("; ", _num(f["waves"], "%.2f"), " waves: no tail effect (NCU's "
                                                    "condition needs 1 <= waves < 5 with a partial wave, rooftop's an "
                                                    "idle last-wave share >= 10 %, here ", _num(c["tail_speedup_pct"], "%.1f"),
                                                    " %)"), "")),
             " (docs/formulas.md#kernel-labels)"))


def _work(e: _Evidence) -> None:
    """The work (FLOPs by class) and where it sits under the compute roof."""
    f, n, add, fin = e.f, e.n, e.add, e.fin
    tot = f["flops"]
    pieces = []
    for k in FLOP_CLASSES:
        share = 100.0 * f[f"flops_{k}"] / tot.where(tot > 0)
        pieces.append((_mask(share.notna() & (f[f"flops_{k}"] > 0)), _cat(f"{k} ", _num(share, "%.0f"), "%")))
    mix = _joined(pieces, n)
    mix = pc.if_else(pc.equal(mix, ""), "no FLOPs", mix)
    dom = f["dominant_class"].fillna("fp32")
    src_word = pa.array([""] * n, type=pa.string())
    for k in FLOP_CLASSES:
        src_word = _where(dom == k, _obj(f[f"src_peak_{k}"]), src_word)
    head = _cat("Work ", _si(tot, "FLOP"), " (", mix, "); achieved ", _si(f["achieved_flops_s"], "FLOP/s"))
    roof_txt = _where(fin("compute_util"),
                      _cat(" = ", _num(100.0 * f["compute_util"], "%.1f"), "% of the compute roof ",
                           _si(f["compute_peak"], "FLOP/s"), " (", src_word, ")"),
                      "; compute roof unknown")
    zero = _flag(f, "zero_flops").to_numpy()
    add(tot.notna() & f["duration_s"].notna() & ~zero, _cat(head, roof_txt))
    fp16_gap = _where(_flag(f, "fp16_uncollected").to_numpy(), "; FP16 not collected", "")
    add(zero, _cat("0 FLOPs measured (the FP64 and FP32 instruction counters are present and zero", fp16_gap,
                   "): an integer or data-movement kernel, so the FLOP roofline does not apply; its bytes bound it "
                   "(docs/formulas.md#work-bytes)"))
    if "tensor_source" in f.columns:
        shaped = f["tensor_source"].astype("string").str.contains("kernel name", na=False).to_numpy()
        add(shaped, _cat("Tensor FLOPs = ", _obj(f["tensor_source"]), ": no sm__ops_path_tensor_* in the export"))
    if "tensor_uncounted" in f.columns:
        unc = f["tensor_uncounted"].astype("object").eq(True).to_numpy()
        counted = f["fp_flops_counted"] if "fp_flops_counted" in f.columns else pd.Series(np.nan, index=f.index)
        add(unc, _cat("Tensor pipe at work but its FLOPs are not counted (no sm__ops_path_tensor_* in the export, "
                      "and no instruction shape in the kernel name to scale sm__inst_executed_pipe_tensor by)",
                      _where(np.isfinite(_floats(counted)), _cat("; the ", _si(counted, "FLOP"), " of FP32/FP16 "
                                                                 "instructions counted are not its work"), ""),
                      ": compute side unknown, so the kernel is not placed on the roofline and gets no roofline "
                      "saving or intensity advice (docs/formulas.md#work-bytes)"))

    if "rate_only" in f.columns:
        ro = f["rate_only"].fillna(False).astype(bool)
        rate_lvls = _joined([(fin(f"rate_{lvl}") & fin(f"bw_util_{lvl}"),
                              _cat(f"{LEVEL_NAMES[lvl]} ", _si(f[f"rate_{lvl}"], "B/s"), " = ",
                                   _num(100.0 * f[f"bw_util_{lvl}"], "%.1f"), "% of ", _si(f[f"bw_{lvl}"], "B/s"),
                                   " (", _obj(f[f"src_bw_{lvl}"]), "), AI ", _num(f[f"intensity_{lvl}"], "%.3g"),
                                   " FLOP/B")) for lvl in LEVELS], n)
        add(ro, _cat("No duration in the export: rates from ncu's per-cycle and per-second metrics "
                     "(achieved work = per-cycle-elapsed FLOP terms x SM frequency, docs/formulas.md#work-bytes): "
                     "achieved ", _si(f["achieved_flops_s"], "FLOP/s"), roof_txt,
                     _where(pc.not_equal(rate_lvls, "").to_numpy(zero_copy_only=False), _cat("; ", rate_lvls), "")))


def _levels(e: _Evidence) -> None:
    """Each memory level: bytes, rate against its ceiling, arithmetic intensity against the ridge."""
    f, add, fin = e.f, e.add, e.fin
    for lvl in LEVELS:
        name = LEVEL_NAMES[lvl]
        b = f[f"bytes_{lvl}"]
        txt = _cat(f"{name}: ", _si(b, "B"), " (", _obj(f[f"bytes_{lvl}_source"]), ")")
        rate = _si(b / f["duration_s"], "B/s")
        util = _cat(", ", rate, " = ", _num(100.0 * f[f"bw_util_{lvl}"], "%.1f"), "% of ",
                    _si(f[f"bw_{lvl}"], "B/s"), " (", _obj(f[f"src_bw_{lvl}"]), ")")
        txt = _cat(txt, _where(fin(f"bw_util_{lvl}"), util,
                               _where(fin("duration_s"), _cat(", ", rate, f" (no {name} ceiling)"), "")))
        ai, ridge = f[f"intensity_{lvl}"], f[f"ridge_{lvl}"]
        cmp_ = _where(ai < ridge, " < ridge ", " >= ridge ")
        txt = _cat(txt, _where(fin(f"intensity_{lvl}"),
                               _cat("; AI ", _num(ai, "%.3g"), " FLOP/B",
                                    _where(fin(f"ridge_{lvl}"), _cat(cmp_, _num(ridge, "%.3g")), "")), ""))
        add(b.notna(), txt)


def _binding(e: _Evidence) -> None:
    """Binding level and the decision."""
    f, c, n, add, fin, lim, label, basis = e.f, e.c, e.n, e.add, e.fin, e.lim, e.label, e.basis
    bind = f["binding_level"].map(LEVEL_NAMES)
    att = _cat("Binding level ", _obj(bind), ": attainable ", _si(f["attainable_flops_s"], "FLOP/s"),
               _where(fin("pct_of_roof"), _cat("; achieved ", _num(f["pct_of_roof"], "%.0f"), "% of it"), ""))
    add(bind.notna() & f["attainable_flops_s"].notna(), att)
    bw_t = f["bw_time_s"] if "bw_time_s" in f.columns else pd.Series(np.nan, index=f.index)
    complete = _flag(f, "bw_time_complete").to_numpy()
    add(f["attainable_flops_s"].isna().to_numpy() & np.isfinite(_floats(bw_t)) & np.isfinite(_floats(f["duration_s"])),
        _cat("Bytes at the bandwidth ceilings need at least ", _si(bw_t, "s"), " (max over levels of bytes / bandwidth) = ",
             _num(100.0 * bw_t / f["duration_s"], "%.1f"), "% of the ", _si(f["duration_s"], "s"), " run",
             _where(complete, "", "; a level whose bytes or ceiling are unknown could need more"),
             " (docs/formulas.md#work-bytes)"))
    if "roof_unknown_level" in f.columns:
        add(f["roof_unknown_level"].notna(),
            _cat("Binding level ", _obj(bind), ": it has no bandwidth ceiling (neither the export nor the device "
                 "table gives one), so the attainable FLOP/s and the roofline gap are unknown; another level's roof "
                 "would overstate them (docs/formulas.md#kernel-labels)"))
    units = _joined([(fin(f"unit_{lvl}"), _cat(f"{LEVEL_NAMES[lvl]} ", _num(f[f"unit_{lvl}"], "%.1f"), "%"))
                     for lvl in LEVELS], n)
    add(pc.not_equal(units, "").to_numpy(zero_copy_only=False), _cat("Memory units (SOL breakdown): ", units))
    add(c["memory_side_pct"].notna() & c["compute_side_pct"].notna() & (label != "overhead-bound") & (basis == "ncu-sol"),
        _cat("Memory side ", _num(c["memory_side_pct"], "%.1f"), "% vs compute side ", _num(c["compute_side_pct"], "%.1f"),
             "% of peak -> ", _obj(label), " (", _obj(lim), "; the busiest level or pipe names the limiter, "
             "docs/formulas.md#kernel-labels)"))


def _flag(f: pd.DataFrame, col: str) -> pd.Series:
    if col not in f.columns:
        return pd.Series(False, index=f.index)
    return f[col].astype("object").eq(True)


def _provenance(e: _Evidence) -> None:
    """Provenance (device assumed, byte convention, duration source) and what the export lacks."""
    f, n, add, label, basis = e.f, e.n, e.add, e.label, e.basis
    if "device_assumed" in f.columns:
        add(f["device_assumed"].notna(), _cat(_obj(f["device_assumed"]), " (docs/formulas.md#ceilings)"))
    nersc = f["bytes_convention"].isin(["nersc", "mixed"]).to_numpy()
    ceil_12 = (f["bw_l1"].notna() | f["bw_l2"].notna()).to_numpy()
    add(nersc & ceil_12,
        "L1/L2 bytes in NERSC's l1tex__t_bytes / lts__t_bytes convention with the device table's L1/L2 ceilings "
        "(docs/formulas.md#work-bytes)")
    add(nersc & ~ceil_12,
        "L1/L2 bytes in NERSC's l1tex__t_bytes / lts__t_bytes convention; no L1/L2 ceiling (no device table entry "
        "or .peak_sustained), so those levels are shown but not evaluated (docs/formulas.md#work-bytes)")
    add(f["bytes_convention"] == "t_bytes",
        "L1/L2 bytes and ceilings both from l1tex__t_bytes / lts__t_bytes and their .peak_sustained "
        "(one convention per kernel, docs/formulas.md#work-bytes)")
    add(f["duration_source"].notna() & (f["duration_source"] != "gpu__time_duration.sum"),
        _cat("Duration from ", _obj(f["duration_source"])))
    ro = f["rate_only"].fillna(False).astype(bool) if "rate_only" in f.columns else pd.Series(False, index=f.index)
    gaps = _joined([(_mask(miss), what) for what, miss in (
        [(f"{LEVEL_NAMES[lvl]} bytes", f[f"bytes_{lvl}"].isna() & ~(ro & f[f"rate_{lvl}"].notna()))
         for lvl in LEVELS]
        + [("FLOP counters", f["flops"].isna() & ~(ro & f["achieved_flops_s"].notna()) & ~_flag(f, "tensor_uncounted")),
           ("tensor FLOPs", _flag(f, "tensor_uncounted")),
           ("SpeedOfLight %", f["sol_compute_pct"].isna() | f["sol_memory_pct"].isna()),
           ("duration", f["duration_s"].isna())])], n)
    add(pc.not_equal(gaps, "").to_numpy(zero_copy_only=False), _cat("Not in the export, so not evaluated: ", gaps))
    add((label == "unknown") & (basis == "none"),
        "Nothing decides the bound: no SpeedOfLight %, no NCU verdict, and the roofline lacks the FLOPs, bytes, time or "
        "ceilings to measure either side (docs/formulas.md#kernel-labels)")
