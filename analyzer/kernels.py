"""Per-kernel analysis: metrics -> ceilings -> roofline -> label, evidence and lint.

``analyze_kernels(kernels, rules, device)`` returns :class:`KernelAnalysis`:

* ``results``: one row per kernel (same order as the kernel table), flat columns named as in
  :data:`analyzer.document.KERNEL_FIELDS` (except ``family``) plus extras: ``binding_level``,
  ``dominant_class``, ``ridge_<lvl>``, ``attainable_<lvl>``, ``bw_util_<lvl>``, ``pct_of_roof``,
  ``waves``, ``sol_verdict``, ``bytes_convention``, ``compute_peak``, ``compute_util``, ``memory_util``
  and the ceilings as a reference into ``devices`` (:func:`analyzer.ceilings.ceiling_refs`: column
  ``ceilings``; ``peak_<class>``, ``bw_<lvl>``, ``sm_count``, ``ceiling_device`` only where they
  differ from the referenced entry, NaN/None elsewhere).
* ``devices``: contract entries of every device whose ceilings were used.
* ``ceilings``: every kernel's full ceilings: ``peak_<class>``, ``bw_<lvl>``, ``src_<ceiling>``
  (export/builtin/user), ``detail_<ceiling>``, ``ceiling_device``, ``sm_count``.
* ``lint``: contract lint items; ``kernels`` are row positions in ``results`` (= positions in
  the document's ``kernels`` list).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer import metrics as M
from rooftop.analyzer.ceilings import CEILING_COLUMNS, ceiling_refs, resolve_ceilings
from rooftop.analyzer.classify import LAUNCH_S, LEVEL_NAMES, classify
from rooftop.analyzer.devices import load_device_option
from rooftop.analyzer.document import gc_paused
from rooftop.analyzer.lint import lint_kernels
from rooftop.analyzer.ncu_rules import (
    failed_profile_lint,
    failed_profiles,
    launch_signals,
    rule_errors,
)
from rooftop.analyzer.roofline import compute as roofline

_PREFIX = {-5: "f", -4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
_SOL_TITLES = ("High Throughput", "Latency Issue", "Small Grid", "Balanced Throughput",
               "High Compute Throughput", "High Memory Throughput")


@dataclass
class KernelAnalysis:
    results: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    ceilings: pd.DataFrame | None = None


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


def stored_sol_verdicts(rules: pd.DataFrame) -> pd.Series:
    """NCU's own SOLBottleneck result per (input, index), from rule title or message text."""
    if rules is None or not len(rules) or "rule" not in rules.columns:
        return pd.Series(dtype="object")
    r = rules[rules["rule"].astype("string").isin(["SOLBottleneck", "Bottleneck"])]
    if not len(r):
        return pd.Series(dtype="object")
    title = r["title"].astype("string").fillna("") if "title" in r.columns else pd.Series("", index=r.index)
    desc = r["description"].astype("string").fillna("") if "description" in r.columns else pd.Series("", index=r.index)
    verdict = pd.Series(None, index=r.index, dtype="object")
    for t in _SOL_TITLES:
        verdict = verdict.mask(verdict.isna() & (title == t), t)
    text = desc.str.lower()
    for pat, t in (("greater than 80", "High Throughput"), ("grid is too small", "Small Grid"),
                   ("low compute throughput and memory bandwidth", "Latency Issue"),
                   ("well-balanced", "Balanced Throughput"), ("compute is more heavily utilized", "High Compute Throughput"),
                   ("memory is more heavily utilized", "High Memory Throughput")):
        verdict = verdict.mask(verdict.isna() & text.str.contains(pat, regex=False), t)
    key = pd.MultiIndex.from_arrays([r["input"].astype("string"), r["index"].astype("Int64")])
    out = pd.Series(verdict.to_numpy(), index=key).dropna()
    return out[~out.index.duplicated()]


_NCU_LINKS = ((re.compile(r"@url:([^:@]+):[^@]*@"), r"\1"),          # @url:Text:https://…@ -> Text
              (re.compile(r"@section:[^:@]*:([^@]*)@"), r"\1"),     # @section:Id:Name@ -> Name
              (re.compile(r"@[a-z]+:([^@]*)@"), r"\1"))             # @metric:name@ and others


def ncu_plain_text(text: str) -> str:
    """NVIDIA's rule text as plain words: its ``@url:``/``@section:`` link markup reduced to the
    link's name, whitespace runs to one space."""
    for pat, rep in _NCU_LINKS:
        text = pat.sub(rep, text)
    return " ".join(text.split())


def _ncu_rules(kernels: pd.DataFrame, rules: pd.DataFrame) -> list[list[dict[str, Any]]]:
    n = len(kernels)
    if rules is None or not len(rules):
        with gc_paused():
            return [[] for _ in range(n)]
    r = rules.reset_index(drop=True)
    r = r[~rule_errors(r).to_numpy()].reset_index(drop=True)  # NCU failing to run a rule is no finding
    speed = pd.to_numeric(r.get("speedup_pct"), errors="coerce") if "speedup_pct" in r.columns else pd.Series(np.nan, index=r.index)
    stype = r["speedup_type"].astype("string").fillna("").tolist() if "speedup_type" in r.columns else [""] * len(r)
    # NVIDIA's own rule text (ncu-rep message, details "Rule Description", console paragraph), quoted
    # by findings; only where the export has it (docs/formulas.md#findings)
    msgs = ([ncu_plain_text(m) for m in r["description"].astype("string").fillna("").tolist()]
            if "description" in r.columns else [""] * len(r))
    items = [{"rule": rule, "title": title, "speedup_pct": None if pd.isna(sp) else float(sp),
              "speedup_type": st or None, **({"message": msg} if msg else {})}
             for rule, title, sp, st, msg in zip(r["rule"].astype("string").fillna("").tolist(),
                                                 r.get("title", pd.Series("", index=r.index)).astype("string").fillna("").tolist(),
                                                 speed.tolist(), stype, msgs, strict=True)]
    keys = list(zip(r["input"].astype("string").tolist(), r["index"].astype("Int64").tolist(), strict=True))
    grouped: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for k, it in zip(keys, items, strict=True):
        grouped.setdefault(k, []).append(it)
    kk = zip(kernels["input"].astype("string").tolist(), kernels["index"].astype("Int64").tolist(), strict=True)
    with gc_paused():
        return [grouped.get(k, []) for k in kk]


def facts_for(kernels: pd.DataFrame, device: str | None = None, meta: dict[str, dict[str, Any]] | None = None
              ) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every number behind the label, per kernel (index 0..n-1), and the devices used.

    ``meta``: parser meta per input path; its ``device_hints`` (application lines naming the GPU,
    :mod:`parsers.ncu_hints`) name the device where the export does not (docs/formulas.md#ceilings).
    Device lint is returned in ``f.attrs["device_lint"]``."""
    df = kernels.reset_index(drop=True)
    hints = {p: m["device_hints"][0] for p, m in (meta or {}).items()
             if isinstance(m, dict) and m.get("device_hints") and len(m["device_hints"]) == 1}
    option = load_device_option(device)
    cc = M.cc_number(df)
    dur, dur_src = M.duration(df)
    launch = M.launch(df)
    fp, partial = M.fp_flops(df, dur)
    t_flops, t_src, t_ops = M.tensor_flops(df, dur, cc)
    flops = fp.assign(tensor=t_flops)
    # absent is not zero (docs/formulas.md#kernel-labels): zero counted FLOPs beside a class whose
    # counters are missing is unknown work, not 0 FLOP
    unknown_work = flops[["fp64", "fp32", "fp16"]].isna().any(axis=1) & ~(flops.fillna(0.0) > 0).any(axis=1)
    flops = flops.mask(unknown_work)
    bytes_, b_src, b_conv = M.bytes_by_level(df, dur, cc)
    rate_only, flops_in, bytes_in, dur_in, b_conv = _rate_inputs(df, cc, dur, flops, bytes_, b_conv)
    ceil = resolve_ceilings(df, dur=dur, cc=cc, launch=launch, tensor_ops=t_ops, bytes_conv=b_conv, option=option,
                            hints=hints)
    if launch["sm_count"].isna().any() and option is not None and option.sm_count:
        launch["sm_count"] = launch["sm_count"].fillna(float(option.sm_count))
    roof = roofline(flops_in, bytes_in, dur_in, ceil.values).table
    roof.loc[rate_only, "flops"] = np.nan  # rates only: the totals are not known
    sol_c, sol_m, sol_src = M.sol(df)

    # the columns are gathered in dicts and framed once: one DataFrame.__setitem__ per column cost
    # ~0.1 ms each, about a sixth of a one-kernel analysis (bench/NOTES.md, command-line start-up)
    idx = df.index
    cols: dict[str, Any] = {col: df[col] if col in df.columns else None
                            for col in ("index", "input", "id", "name", "nvtx", "invocations")}
    exported = df["device"].astype("object").where(df["device"].notna(), None) if "device" in df.columns \
        else pd.Series(None, index=idx, dtype="object")
    cols["device"] = exported.where(exported.notna(), ceil.device_name)
    cols["ceiling_device"] = ceil.device_name
    cols["builtin_device"] = ceil.builtin_name
    cols["device_assumed"] = ceil.assumed
    cols["export_device"] = exported.where(exported.notna(), "unnamed device")  # name of its ``export`` entry
    cols["cc"] = df["cc"] if "cc" in df.columns else None
    cols["duration_s"] = dur
    cols["duration_source"] = dur_src
    cols["grid"] = launch["grid"].round().astype("Int64")
    cols["block"] = launch["block"].round().astype("Int64")
    cols["waves"] = launch["waves"]
    cols["sm_count"] = launch["sm_count"]
    cols["sol_compute_pct"], cols["sol_memory_pct"], cols["sol_source"] = sol_c, sol_m, sol_src
    for c in M.FLOP_CLASSES:
        cols[f"flops_{c}"] = flops[c]
        cols[f"partial_{c}"] = partial[c] if c in partial.columns else None
    cols["tensor_source"] = t_src
    for lvl in M.LEVELS:
        cols[f"bytes_{lvl}"] = bytes_[lvl]
        cols[f"bytes_{lvl}_source"] = b_src[lvl]
    cols["bytes_convention"] = M.bytes_convention(b_conv)
    for col in CEILING_COLUMNS:
        cols[col] = ceil.values[col]
        cols[f"src_{col}"] = ceil.source[col]
        cols[f"detail_{col}"] = ceil.detail[col]
    cols["tensor_peak_missing"] = ceil.tensor_missing_peak
    cols["rate_only"] = rate_only
    for lvl in M.LEVELS:
        cols[f"rate_{lvl}"] = (bytes_in[lvl] / dur_in).where(rate_only)
    units = M.unit_throughput(df)
    pipes = M.pipe_utilization(df)
    more: dict[str, Any] = {f"unit_{lvl}": units[lvl] for lvl in M.LEVELS}
    more.update({f"pipe_{k}": pipes[k] for k in pipes.columns})
    # lint inputs
    hcounts = [M.counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)[0] for op in ("hadd", "hmul", "hfma")]
    hsum = hcounts[0].fillna(0) + hcounts[1].fillna(0) + hcounts[2].fillna(0)
    more["fp16_counters_zero"] = pd.concat(hcounts, axis=1).notna().any(axis=1) & (hsum == 0)
    unscaled = M.tensor_inst_unscaled(df, dur, cc)
    more["tensor_uncounted"] = flops["tensor"].isna() & ((pipes["tensor"] > 0) | (unscaled > 0))
    more["legacy_metrics"] = (sol_src == "legacy") | b_src["dram"].astype("string").str.contains("legacy", na=False)
    max_clock_khz = M.column(df, "device__attribute_clock_rate")
    sm_hz, _ = M.clock_hz(df, "sm")
    more["clock_ratio"] = sm_hz / (max_clock_khz * 1e3)
    f = pd.concat([pd.DataFrame(cols, index=idx), roof, pd.DataFrame(more, index=idx)], axis=1)
    f.attrs["device_lint"] = ceil.lint
    return f, ceil.devices


def _rate_inputs(df: pd.DataFrame, cc: pd.Series, dur: pd.Series, flops: pd.DataFrame, bytes_: pd.DataFrame,
                 conv: pd.DataFrame) -> tuple[pd.Series, pd.DataFrame, pd.DataFrame, pd.Series, pd.DataFrame]:
    """Kernels with no duration but rate metrics (ncu section CSVs): their FLOP/s and bytes/s as the
    roofline's inputs over a 1 s window (docs/formulas.md#work-bytes). Returns (rate-only mask, flops,
    bytes, duration) for :func:`analyzer.roofline.compute`, and the byte convention with the rate rows'."""
    no_dur = dur.isna()
    rate_only = pd.Series(False, index=df.index)
    if not no_dur.any():
        return rate_only, flops, bytes_, dur, conv
    rf, rb, _, rconv = M.rates(df.loc[no_dur], cc[no_dur])
    has = (rf.notna().any(axis=1) | rb.notna().any(axis=1)).reindex(df.index, fill_value=False)
    rate_only = no_dur & has.astype(bool)
    if not rate_only.any():
        return rate_only, flops, bytes_, dur, conv
    rows = rate_only[rate_only].index
    conv = conv.copy()
    conv.loc[rows, list(rconv.columns)] = rconv.loc[rows, list(conv.columns)].to_numpy()
    flops_in, bytes_in = flops.copy(), bytes_.copy()
    flops_in.loc[rows, list(rf.columns)] = rf.loc[rows].to_numpy()
    bytes_in.loc[rows, list(rb.columns)] = rb.loc[rows, list(bytes_in.columns)].to_numpy()
    return rate_only, flops_in, bytes_in, dur.mask(rate_only, 1.0), conv


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
        return mask.to_numpy()
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
    if isinstance(values, pd.Series) and values.dtype == np.float64:
        return values.to_numpy()
    return pd.to_numeric(pd.Series(values), errors="coerce").to_numpy(dtype="float64")


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
    for lvl in M.LEVELS:
        util = f[f"bw_util_{lvl}"].isna().to_numpy() if f"bw_util_{lvl}" in f.columns else np.isnan(nan)
        unit = f[f"unit_{lvl}"].isna().to_numpy() if f"unit_{lvl}" in f.columns else np.isnan(nan)
        has_bytes = f[f"bytes_{lvl}"].notna().to_numpy() if f"bytes_{lvl}" in f.columns else ~np.isnan(nan)
        why = np.where(has_bytes, f", {LEVEL_NAMES[lvl]} (no ceiling)",
                       f", {LEVEL_NAMES[lvl]} (no bytes in the export)").astype(object)
        miss = util & unit
        out[miss] = out[miss] + why[miss]
    return pd.Series([t.lstrip(", ") for t in out.tolist()], index=f.index, dtype=object)


def explain(f: pd.DataFrame, c: pd.DataFrame) -> list[list[str]]:
    """The evidence, in words, for every kernel; each sentence is built for a whole column at once."""
    n = len(f)
    frags: list[pa.Array] = []

    def add(mask: Any, texts: Text) -> None:
        frags.append(pc.if_else(_mask(mask), texts, _NULL))

    def fin(col: str) -> np.ndarray:
        return np.isfinite(_floats(f[col]))

    lim, label = c["limiter"], c["label"]
    # 1. the rule that decided (docs/formulas.md#kernel-labels)
    basis = c["basis"] if "basis" in c.columns else pd.Series("none", index=c.index)
    legacy = _where(f["sol_source"] == "legacy", " [legacy sm__sol_pct / gpu__compute_memory_sol_pct]", "")
    add(c["sol_verdict"].notna() & f["sol_compute_pct"].notna() & f["sol_memory_pct"].notna(),
        _cat("NCU Speed Of Light: compute (SM) ", _num(f["sol_compute_pct"], "%.1f"), "%, memory ",
             _num(f["sol_memory_pct"], "%.1f"), "% -> SOLBottleneck \"", _obj(c["sol_verdict"]),
             "\" (>= 80 % high throughput, both < 60 % latency or small grid, 60-80 % the side ahead by >= 10 "
             "points; docs/formulas.md#kernel-labels)", legacy))
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
    add(basis == "thin",
        _cat("No SpeedOfLight % in the export and no side reaches 60 % (", sides, "), but the utilisation of ",
             _obj(_missing_levels(f).where(lambda x: x != "", "the compute side")),
             " is unknown and could bind: bound unknown; collect --section SpeedOfLight, or the missing bytes "
             "(l1tex__t_bytes, lts__t_bytes) or ceilings (--device) (docs/formulas.md#kernel-labels)"))

    # 2. overhead reasons
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

    # 3. work and compute roof
    tot = f["flops"]
    pieces = []
    for k in M.FLOP_CLASSES:
        share = 100.0 * f[f"flops_{k}"] / tot.where(tot > 0)
        pieces.append((_mask(share.notna() & (f[f"flops_{k}"] > 0)), _cat(f"{k} ", _num(share, "%.0f"), "%")))
    mix = _joined(pieces, n)
    mix = pc.if_else(pc.equal(mix, ""), "no FLOPs", mix)
    dom = f["dominant_class"].fillna("fp32")
    src_word = pa.array([""] * n, type=pa.string())
    for k in M.FLOP_CLASSES:
        src_word = _where(dom == k, _obj(f[f"src_peak_{k}"]), src_word)
    head = _cat("Work ", _si(tot, "FLOP"), " (", mix, "); achieved ", _si(f["achieved_flops_s"], "FLOP/s"))
    roof_txt = _where(fin("compute_util"),
                      _cat(" = ", _num(100.0 * f["compute_util"], "%.1f"), "% of the compute roof ",
                           _si(f["compute_peak"], "FLOP/s"), " (", src_word, ")"),
                      "; compute roof unknown")
    add(tot.notna() & f["duration_s"].notna(), _cat(head, roof_txt))

    if "rate_only" in f.columns:
        ro = f["rate_only"].fillna(False).astype(bool)
        rate_lvls = _joined([(fin(f"rate_{lvl}") & fin(f"bw_util_{lvl}"),
                              _cat(f"{LEVEL_NAMES[lvl]} ", _si(f[f"rate_{lvl}"], "B/s"), " = ",
                                   _num(100.0 * f[f"bw_util_{lvl}"], "%.1f"), "% of ", _si(f[f"bw_{lvl}"], "B/s"),
                                   " (", _obj(f[f"src_bw_{lvl}"]), "), AI ", _num(f[f"intensity_{lvl}"], "%.3g"),
                                   " FLOP/B")) for lvl in M.LEVELS], n)
        add(ro, _cat("No duration in the export: rates from ncu's per-cycle and per-second metrics "
                     "(achieved work = per-cycle-elapsed FLOP terms x SM frequency, docs/formulas.md#work-bytes): "
                     "achieved ", _si(f["achieved_flops_s"], "FLOP/s"), roof_txt,
                     _where(pc.not_equal(rate_lvls, "").to_numpy(zero_copy_only=False), _cat("; ", rate_lvls), "")))

    # 4. each level
    for lvl in M.LEVELS:
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

    # 5. binding level and the decision
    bind = f["binding_level"].map(LEVEL_NAMES)
    att = _cat("Binding level ", _obj(bind), ": attainable ", _si(f["attainable_flops_s"], "FLOP/s"),
               _where(fin("pct_of_roof"), _cat("; achieved ", _num(f["pct_of_roof"], "%.0f"), "% of it"), ""))
    add(bind.notna() & f["attainable_flops_s"].notna(), att)
    units = _joined([(fin(f"unit_{lvl}"), _cat(f"{LEVEL_NAMES[lvl]} ", _num(f[f"unit_{lvl}"], "%.1f"), "%"))
                     for lvl in M.LEVELS], n)
    add(pc.not_equal(units, "").to_numpy(zero_copy_only=False), _cat("Memory units (SOL breakdown): ", units))
    add(c["memory_side_pct"].notna() & c["compute_side_pct"].notna() & (label != "overhead-bound") & (basis == "ncu-sol"),
        _cat("Memory side ", _num(c["memory_side_pct"], "%.1f"), "% vs compute side ", _num(c["compute_side_pct"], "%.1f"),
             "% of peak -> ", _obj(label), " (", _obj(lim), "; the busiest level or pipe names the limiter, "
             "docs/formulas.md#kernel-labels)"))

    # 6. provenance and gaps
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
         for lvl in M.LEVELS]
        + [("FLOP counters", f["flops"].isna() & ~(ro & f["achieved_flops_s"].notna())),
           ("SpeedOfLight %", f["sol_compute_pct"].isna() | f["sol_memory_pct"].isna()),
           ("duration", f["duration_s"].isna())])], n)
    add(pc.not_equal(gaps, "").to_numpy(zero_copy_only=False), _cat("Not in the export, so not evaluated: ", gaps))
    add((label == "unknown") & (basis == "none"),
        "Nothing decides the bound: no SpeedOfLight %, no NCU verdict, and the roofline lacks the FLOPs, bytes, time or "
        "ceilings to measure either side (docs/formulas.md#kernel-labels)")
    return _rows(frags, n)


def analyze_kernels(kernels: pd.DataFrame, rules: pd.DataFrame, device: str | None = None,
                    meta: dict[str, dict[str, Any]] | None = None) -> KernelAnalysis:
    """Analyze every kernel (see the module docstring). ``meta``: parser meta per input path
    (ncu command line for the cache/clock-control lint), optional."""
    if kernels is None or not len(kernels):
        return KernelAnalysis(pd.DataFrame(columns=["index", "input", "name", "label", "limiter"]))
    f, devices = facts_for(kernels, device, meta)
    stored = stored_sol_verdicts(rules)
    if len(stored):
        key = pd.MultiIndex.from_arrays([f["input"].astype("string"), f["index"].astype("Int64")])
        f["ncu_stored_verdict"] = stored.reindex(key).to_numpy()
    sig = launch_signals(f[["input", "index"]].assign(launch__waves_per_multiprocessor=f["waves"]), rules)
    f["ncu_tail"], f["ncu_small_grid"] = sig["ncu_tail"].to_numpy(), sig["ncu_small_grid"].to_numpy()
    failed = failed_profiles(f, rules, meta, f["duration_s"])
    c = classify(f)
    c.loc[failed.to_numpy(), ["label", "limiter", "basis"]] = ["unknown", "unknown", "failed"]
    res = pd.DataFrame({
        "index": f["index"], "input": f["input"], "id": f["id"], "name": f["name"], "device": f["device"],
        "duration_s": f["duration_s"], "grid": f["grid"], "block": f["block"],
        "sol_compute_pct": f["sol_compute_pct"], "sol_memory_pct": f["sol_memory_pct"],
        "flops": f["flops"],
        **{f"flops_{k}": f[f"flops_{k}"] for k in M.FLOP_CLASSES},
        **{f"bytes_{lvl}": f[f"bytes_{lvl}"] for lvl in M.LEVELS},
        **{f"intensity_{lvl}": f[f"intensity_{lvl}"] for lvl in M.LEVELS},
        "attainable_flops_s": f["attainable_flops_s"], "achieved_flops_s": f["achieved_flops_s"],
        "label": c["label"], "limiter": c["limiter"],
    })
    ev = explain(f, c)
    for i in np.flatnonzero(failed.to_numpy(dtype=bool)).tolist():
        ev[i] = ["Profile failed: NCU collected no metrics for this launch (no duration; its rule results are "
                 "errors), so no label, saving or advice is given (lint failed-profile; docs/formulas.md#kernel-labels)"]
    res["evidence"] = ev
    res["profile_failed"] = failed.to_numpy(dtype=bool)
    res["ncu_rules"] = _ncu_rules(f, rules)
    res["invocations"] = pd.to_numeric(f["invocations"], errors="coerce").fillna(1).astype("Int64")
    res["nvtx"] = f["nvtx"].astype("object").where(f["nvtx"].notna(), None)
    extras = ["binding_level", "dominant_class", "pct_of_roof", "waves", "compute_peak", "compute_util",
              "memory_util", "bytes_convention"]
    extras += [f"{p}_{lvl}" for p in ("ridge", "attainable", "bw_util") for lvl in M.LEVELS]
    for col in extras:
        res[col] = f[col]
    res["sol_verdict"] = c["sol_verdict"]
    res["label_basis"] = c["basis"]
    refs = ceiling_refs(f[list(CEILING_COLUMNS)], f[[f"src_{col}" for col in CEILING_COLUMNS]].set_axis(
        list(CEILING_COLUMNS), axis=1), f["ceiling_device"], f["export_device"], f["sm_count"], devices,
        builtin_device=f["builtin_device"])
    for col in refs.columns:
        res[col] = refs[col]
    full = [*CEILING_COLUMNS, *(f"src_{col}" for col in CEILING_COLUMNS), *(f"detail_{col}" for col in CEILING_COLUMNS),
            "ceiling_device", "sm_count"]
    lint = lint_kernels(f, meta=meta) + list(f.attrs.get("device_lint", []))
    failed_item = failed_profile_lint(failed, f, meta)
    if failed_item is not None:
        lint.insert(0, failed_item)
    return KernelAnalysis(res, devices, lint, f[full].copy())
