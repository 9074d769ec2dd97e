"""Per-kernel analysis: metrics -> ceilings -> roofline -> label, evidence and lint.

``analyze_kernels(kernels, rules, device)`` returns :class:`KernelAnalysis`:

* ``results``: one row per kernel (same order as the kernel table), flat columns named as in
  :data:`analyzer.document.KERNEL_FIELDS` (except ``family``) plus extras: ``binding_level``,
  ``dominant_class``, ``ridge_<lvl>``, ``attainable_<lvl>``, ``bw_util_<lvl>``, ``pct_of_roof``,
  ``waves``, ``sm_count``, ``sol_verdict``, ``bytes_convention``, ``peak_<class>``, ``bw_<lvl>``,
  ``src_<ceiling>`` (export/builtin/user) and ``ceiling_device``.
* ``devices``: contract entries of every device whose ceilings were used.
* ``lint``: contract lint items; ``kernels`` are row positions in ``results`` (= positions in
  the document's ``kernels`` list).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from analyzer import metrics as M
from analyzer.ceilings import CEILING_COLUMNS, resolve_ceilings
from analyzer.classify import LAUNCH_S, LEVEL_NAMES, classify
from analyzer.devices import load_device_option
from analyzer.lint import lint_kernels
from analyzer.roofline import compute as roofline

_PREFIX = {-5: "f", -4: "p", -3: "n", -2: "µ", -1: "m", 0: "", 1: "k", 2: "M", 3: "G", 4: "T", 5: "P", 6: "E"}
_SOL_TITLES = ("High Throughput", "Latency Issue", "Small Grid", "Balanced Throughput",
               "High Compute Throughput", "High Memory Throughput")


@dataclass
class KernelAnalysis:
    results: pd.DataFrame
    devices: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)


def si(value: float | None, unit: str) -> str:
    """``1.23e12, "FLOP/s"`` -> ``"1.23 TFLOP/s"``."""
    if value is None or not math.isfinite(value):
        return "n/a"
    if value == 0:
        return f"0 {unit}"
    k = int(max(-5, min(6, math.floor(math.log10(abs(value)) / 3))))
    return f"{value / 1000 ** k:.3g} {_PREFIX[k]}{unit}"


def _si_series(values: pd.Series, unit: str) -> list[str]:
    return [si(v, unit) for v in values.to_numpy(dtype="float64")]


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


def _ncu_rules(kernels: pd.DataFrame, rules: pd.DataFrame) -> list[list[dict[str, Any]]]:
    n = len(kernels)
    if rules is None or not len(rules):
        return [[] for _ in range(n)]
    r = rules.reset_index(drop=True)
    speed = pd.to_numeric(r.get("speedup_pct"), errors="coerce") if "speedup_pct" in r.columns else pd.Series(np.nan, index=r.index)
    items = [{"rule": rule, "title": title, "speedup_pct": None if pd.isna(sp) else float(sp)}
             for rule, title, sp in zip(r["rule"].astype("string").fillna("").tolist(),
                                        r.get("title", pd.Series("", index=r.index)).astype("string").fillna("").tolist(),
                                        speed.tolist(), strict=True)]
    keys = list(zip(r["input"].astype("string").tolist(), r["index"].astype("Int64").tolist(), strict=True))
    grouped: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for k, it in zip(keys, items, strict=True):
        grouped.setdefault(k, []).append(it)
    kk = zip(kernels["input"].astype("string").tolist(), kernels["index"].astype("Int64").tolist(), strict=True)
    return [grouped.get(k, []) for k in kk]


def facts_for(kernels: pd.DataFrame, device: str | None = None) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """Every number behind the label, per kernel (index 0..n-1), and the devices used."""
    df = kernels.reset_index(drop=True)
    option = load_device_option(device)
    cc = M.cc_number(df)
    dur, dur_src = M.duration(df)
    launch = M.launch(df)
    fp, partial = M.fp_flops(df, dur)
    t_flops, t_src, t_ops = M.tensor_flops(df, dur, cc)
    flops = fp.assign(tensor=t_flops)
    bytes_, b_src, b_conv = M.bytes_by_level(df, dur, cc)
    ceil = resolve_ceilings(df, dur=dur, cc=cc, launch=launch, tensor_ops=t_ops, bytes_conv=b_conv, option=option)
    if launch["sm_count"].isna().any() and option is not None and option.sm_count:
        launch["sm_count"] = launch["sm_count"].fillna(float(option.sm_count))
    roof = roofline(flops, bytes_, dur, ceil.values).table
    sol_c, sol_m, sol_src = M.sol(df)

    f = pd.DataFrame(index=df.index)
    for col in ("index", "input", "id", "name"):
        f[col] = df[col] if col in df.columns else None
    f["device"] = ceil.device_name
    f["cc"] = df["cc"] if "cc" in df.columns else None
    f["duration_s"] = dur
    f["duration_source"] = dur_src
    f["grid"] = launch["grid"].round().astype("Int64")
    f["block"] = launch["block"].round().astype("Int64")
    f["waves"] = launch["waves"]
    f["sm_count"] = launch["sm_count"]
    f["sol_compute_pct"], f["sol_memory_pct"], f["sol_source"] = sol_c, sol_m, sol_src
    for c in M.FLOP_CLASSES:
        f[f"flops_{c}"] = flops[c]
        f[f"partial_{c}"] = partial[c] if c in partial.columns else None
    f["tensor_source"] = t_src
    for lvl in M.LEVELS:
        f[f"bytes_{lvl}"] = bytes_[lvl]
        f[f"bytes_{lvl}_source"] = b_src[lvl]
    f["bytes_convention"] = M.bytes_convention(b_conv)
    for col in CEILING_COLUMNS:
        f[col] = ceil.values[col]
        f[f"src_{col}"] = ceil.source[col]
        f[f"detail_{col}"] = ceil.detail[col]
    f["tensor_peak_missing"] = ceil.tensor_missing_peak
    f = pd.concat([f, roof], axis=1)
    units = M.unit_throughput(df)
    pipes = M.pipe_utilization(df)
    for lvl in M.LEVELS:
        f[f"unit_{lvl}"] = units[lvl]
    for k in pipes.columns:
        f[f"pipe_{k}"] = pipes[k]
    # lint inputs
    hcounts = [M.counter(df, f"sass_thread_inst_executed_op_{op}_pred_on", dur)[0] for op in ("hadd", "hmul", "hfma")]
    hsum = hcounts[0].fillna(0) + hcounts[1].fillna(0) + hcounts[2].fillna(0)
    f["fp16_counters_zero"] = pd.concat(hcounts, axis=1).notna().any(axis=1) & (hsum == 0)
    unscaled = M.tensor_inst_unscaled(df, dur, cc)
    f["tensor_uncounted"] = f["flops_tensor"].isna() & ((pipes["tensor"] > 0) | (unscaled > 0))
    f["legacy_metrics"] = (sol_src == "legacy") | b_src["dram"].astype("string").str.contains("legacy", na=False)
    max_clock_khz = M.column(df, "device__attribute_clock_rate")
    sm_hz, _ = M.clock_hz(df, "sm")
    f["clock_ratio"] = sm_hz / (max_clock_khz * 1e3)
    return f, ceil.devices


def explain(f: pd.DataFrame, c: pd.DataFrame) -> list[list[str]]:
    """The evidence, in words, for every kernel (numbers formatted once per column)."""
    n = len(f)
    frags: list[list[str | None]] = []

    def add(mask: pd.Series, texts: list[str] | pd.Series) -> None:
        m = mask.fillna(False).to_numpy(dtype=bool)
        t = list(texts)
        frags.append([t[i] if m[i] else None for i in range(n)])

    # 1. NVIDIA's SOL verdict
    sc, sm_ = f["sol_compute_pct"], f["sol_memory_pct"]
    sol_txt = [f"NCU Speed Of Light: compute (SM) {a:.1f}%, memory {b:.1f}% -> SOLBottleneck \"{v}\" "
               "(thresholds 80/60/10, waves < 1; formulas.md §3.1)"
               + (" [legacy sm__sol_pct / gpu__compute_memory_sol_pct]" if s == "legacy" else "")
               for a, b, v, s in zip(sc, sm_, c["sol_verdict"], f["sol_source"], strict=True)]
    add(c["sol_verdict"].notna(), sol_txt)
    stored = f.get("ncu_stored_verdict")
    if stored is not None:
        add(stored.notna(), [f"NCU's own stored verdict: \"{v}\"" for v in stored])

    # 2. overhead reasons
    lim, label = c["limiter"], c["label"]
    over = label == "overhead-bound"
    dur_s = _si_series(f["duration_s"], "s")
    add(over & (lim == "launch"), [f"Duration {d} < {LAUNCH_S * 1e6:.0f} µs: comparable to the 1.2-2.4 µs kernel launch "
                                   "cost (formulas.md §5.2); batch, fuse or graph-capture such launches" for d in dur_s])
    gtxt = [f"Grid of {'?' if pd.isna(g) else int(g)} block(s) on {'?' if pd.isna(s) else int(s)} SMs"
            f" ({'?' if pd.isna(w) else f'{w:.2f}'} waves): SMs sit idle (ncu Small Grid, formulas.md §3.3)"
            for g, s, w in zip(f["grid"], f["sm_count"], f["waves"], strict=True)]
    add(over & (lim == "small-grid"), gtxt)
    ttxt = [f"{w:.2f} waves: the partial last wave can take up to {100.0 / (1 + math.floor(w)):.0f}% of the runtime "
            "(ncu Tail Effect, formulas.md §3.3)" if pd.notna(w) else "" for w in f["waves"]]
    add(over & (lim == "tail"), ttxt)
    add(over & (lim == "latency"), ["Compute and memory both below 60% of peak with at least one full wave: "
                                    "latency-bound (stalls, occupancy, dependencies), not throughput-bound "
                                    "(ncu Latency Issue, formulas.md §3.1, §5.3)"] * n)

    # 3. work and compute roof
    flops_t = _si_series(f["flops"], "FLOP")
    ach = _si_series(f["achieved_flops_s"], "FLOP/s")
    peak = _si_series(f["compute_peak"], "FLOP/s")
    mix = []
    for row in zip(*(f[f"flops_{k}"] for k in M.FLOP_CLASSES), f["flops"], strict=True):
        tot = row[-1]
        parts = [f"{k} {100.0 * v / tot:.0f}%" for k, v in zip(M.FLOP_CLASSES, row[:-1], strict=True)
                 if pd.notna(v) and v > 0 and tot > 0]
        mix.append(", ".join(parts) if parts else "no FLOPs")
    cls_src = [f"peak_{d}" if isinstance(d, str) else "peak_fp32" for d in f["dominant_class"]]
    csrc = [f"src_{p}" for p in cls_src]
    src_words = [f.at[i, s] if s in f.columns else None for i, s in enumerate(csrc)]
    work_txt = [f"Work {a} ({m}); achieved {b} = {100.0 * u:.1f}% of the compute roof {p} ({s or 'no source'})"
                if pd.notna(u) else f"Work {a} ({m}); achieved {b}; compute roof unknown"
                for a, m, b, u, p, s in zip(flops_t, mix, ach, f["compute_util"], peak, src_words, strict=True)]
    add(f["flops"].notna() & f["duration_s"].notna(), work_txt)

    # 4. each level
    for lvl in M.LEVELS:
        b, bw = f[f"bytes_{lvl}"], f[f"bw_{lvl}"]
        rate = _si_series(b / f["duration_s"], "B/s")
        bws = _si_series(bw, "B/s")
        bt = _si_series(b, "B")
        txt = []
        for i in range(n):
            s = f"{LEVEL_NAMES[lvl]}: {bt[i]} ({f.at[i, f'bytes_{lvl}_source']})"
            if pd.notna(f.at[i, f"bw_util_{lvl}"]):
                s += f", {rate[i]} = {100.0 * f.at[i, f'bw_util_{lvl}']:.1f}% of {bws[i]} ({f.at[i, f'src_bw_{lvl}']})"
            elif pd.notna(f.at[i, "duration_s"]):
                s += f", {rate[i]} (no {LEVEL_NAMES[lvl]} ceiling)"
            ai, ridge = f.at[i, f"intensity_{lvl}"], f.at[i, f"ridge_{lvl}"]
            if pd.notna(ai):
                s += f"; AI {ai:.3g} FLOP/B" + (f" {'<' if ai < ridge else '>='} ridge {ridge:.3g}" if pd.notna(ridge) else "")
            txt.append(s)
        add(b.notna(), txt)

    # 5. binding level / decision
    bind = f["binding_level"]
    att = _si_series(f["attainable_flops_s"], "FLOP/s")
    add(bind.notna() & f["attainable_flops_s"].notna(),
        [f"Binding level {LEVEL_NAMES.get(bl, bl)}: attainable {a}; achieved {p:.0f}% of it" if pd.notna(p)
         else f"Binding level {LEVEL_NAMES.get(bl, bl)}: attainable {a}" for bl, a, p in
         zip(bind, att, f["pct_of_roof"], strict=True)])
    units = [", ".join(f"{LEVEL_NAMES[lvl]} {v:.1f}%" for lvl, v in zip(M.LEVELS, row, strict=True) if pd.notna(v))
             for row in zip(*(f[f"unit_{lvl}"] for lvl in M.LEVELS), strict=True)]
    add(pd.Series([bool(u) for u in units]), [f"Memory units (SOL breakdown): {u}" for u in units])
    side = [f"Memory side {m:.1f}% vs compute side {k:.1f}% of peak -> {lab} ({li})"
            for m, k, lab, li in zip(c["memory_side_pct"], c["compute_side_pct"], label, lim, strict=True)]
    add(c["memory_side_pct"].notna() & c["compute_side_pct"].notna() & (label != "overhead-bound"), side)

    # 6. provenance and gaps
    add(f["bytes_convention"].isin(["nersc", "mixed"]),
        ["L1/L2 bytes in NERSC's l1tex__t_bytes / lts__t_bytes convention (formulas.md §1.7, §2)"] * n)
    add(f["duration_source"].notna() & (f["duration_source"] != "gpu__time_duration.sum"),
        [f"Duration from {s}" for s in f["duration_source"]])
    gaps = []
    for i in range(n):
        g = [f"{LEVEL_NAMES[lvl]} bytes" for lvl in M.LEVELS if pd.isna(f.at[i, f"bytes_{lvl}"])]
        if pd.isna(f.at[i, "flops"]):
            g.append("FLOP counters")
        if pd.isna(f.at[i, "sol_compute_pct"]) or pd.isna(f.at[i, "sol_memory_pct"]):
            g.append("SpeedOfLight %")
        if pd.isna(f.at[i, "duration_s"]):
            g.append("duration")
        gaps.append("Not in the export, so not evaluated: " + ", ".join(g) if g else "")
    add(pd.Series([bool(g) for g in gaps]), gaps)
    add(label == "unknown", ["Nothing decides the bound: no SpeedOfLight %, and the roofline lacks FLOPs, bytes, "
                             "time or ceilings for a comparison"] * n)
    return [[t for t in col if t] for col in zip(*frags, strict=True)] if frags else [[] for _ in range(n)]


def analyze_kernels(kernels: pd.DataFrame, rules: pd.DataFrame, device: str | None = None,
                    meta: dict[str, dict[str, Any]] | None = None) -> KernelAnalysis:
    """Analyze every kernel (see the module docstring). ``meta``: parser meta per input path
    (ncu command line for the cache/clock-control lint), optional."""
    if kernels is None or not len(kernels):
        return KernelAnalysis(pd.DataFrame(columns=["index", "input", "name", "label", "limiter"]))
    f, devices = facts_for(kernels, device)
    stored = stored_sol_verdicts(rules)
    if len(stored):
        key = pd.MultiIndex.from_arrays([f["input"].astype("string"), f["index"].astype("Int64")])
        f["ncu_stored_verdict"] = stored.reindex(key).to_numpy()
    c = classify(f)
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
    res["evidence"] = explain(f, c)
    res["ncu_rules"] = _ncu_rules(f, rules)
    extras = ["binding_level", "dominant_class", "pct_of_roof", "waves", "sm_count", "compute_peak", "compute_util",
              "memory_util", "bytes_convention"]
    extras += [f"{p}_{lvl}" for p in ("ridge", "attainable", "bw_util") for lvl in M.LEVELS]
    extras += list(CEILING_COLUMNS) + [f"src_{col}" for col in CEILING_COLUMNS]
    for col in extras:
        res[col] = f[col]
    res["sol_verdict"] = c["sol_verdict"]
    res["ceiling_device"] = f["device"]
    lint = lint_kernels(f, meta=meta)
    return KernelAnalysis(res, devices, lint)
