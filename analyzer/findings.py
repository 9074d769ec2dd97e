"""Ranked findings: one per kernel family (the problem), ranked by what fixing it could save.

Rules in docs/formulas.md#findings: families from :func:`analyzer.families.family_table`
(invocation-weighted time); per launch the largest *whole-kernel* (``global``) NVIDIA estimate,
capped at rooftop's roofline gap, else the gap, else unknown (ranked by time share); severity from
the recoverable share of kernel time (>= 10 % high, >= 2 % medium), at most medium without an
estimate, with an unknown label or at >= 80 % of the roof; failed profiles get no finding.
DCGM window findings (``windows.findings``, contract shape) are merged and re-ranked with the
same severity-then-score order.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

SEVERITY_ORDER = {"high": 0, "critical": 0, "medium": 1, "warning": 1, "low": 2, "info": 3}
HIGH, MEDIUM = 0.10, 0.02
ROOF_HIGH = 80.0  # % of the roof at or above which a finding is never high (SOLBottleneck's 80 %)

RECOMMENDATIONS: dict[tuple[str, str], str] = {
    ("memory-bound", "dram"): (
        "Cut DRAM traffic: fuse with the producer/consumer kernel so intermediates are not "
        "materialized in global memory, store data in a lower precision (BF16/FP8) where accuracy "
        "allows, and batch or tile the work so each byte loaded is reused (higher arithmetic intensity)."),
    ("memory-bound", "l2"): (
        "L2 bandwidth binds: tile so the working set stays in L1/shared memory, coalesce accesses "
        "(consecutive threads, consecutive addresses), drop redundant loads, and fuse passes over "
        "the same data."),
    ("memory-bound", "l1"): (
        "L1/shared-memory bandwidth binds: use 128-bit vectorized loads, avoid shared-memory bank "
        "conflicts (padding/swizzling), keep reused values in registers, and cut uncoalesced or "
        "replayed accesses."),
    ("memory-bound", "latency"): (
        "Memory latency, not bandwidth, limits: raise occupancy or in-flight loads per thread "
        "(unrolling, async copies/cp.async/TMA, prefetching) so more requests overlap."),
    ("compute-bound", "tensor"): (
        "Already on tensor cores: use the narrowest accurate dtype (BF16/FP8), keep GEMM dimensions "
        "multiples of 8/16 (alignment), pick a better-tuned kernel or tile shape, or reduce the "
        "work algorithmically (fusion, sparsity)."),
    ("compute-bound", "fp32"): (
        "FP32 CUDA-core math dominates: move it onto tensor cores (TF32/BF16/FP16 via cuBLAS/"
        "cuDNN/CUTLASS or mma), align dimensions to multiples of 8/16, and use fast-math "
        "intrinsics where accuracy allows."),
    ("compute-bound", "fp64"): (
        "FP64 dominates: check whether double precision is needed (FP32 or mixed precision is much "
        "faster on most GPUs); use DMMA tensor-core paths (cuBLAS) where FP64 is required."),
    ("compute-bound", "fp16"): (
        "FP16 CUDA-core math dominates: use tensor cores (HMMA via cuBLAS/CUTLASS) instead of "
        "scalar half arithmetic, with dimensions aligned to multiples of 8."),
    ("overhead-bound", "launch"): (
        "Too short to amortize launch overhead: capture the launch sequence in a CUDA graph, fuse "
        "small kernels, and do more work per launch (fewer, larger launches)."),
    ("overhead-bound", "small-grid"): (
        "The grid is too small to fill the GPU: batch more work per launch (larger grids/batches), "
        "split the reduction dimension (split-K/stream-K), or run independent work concurrently "
        "on other streams."),
    ("overhead-bound", "tail"): (
        "A partial last wave idles most SMs: size the grid to a multiple of the blocks the GPU runs "
        "at once, use a persistent/stream-K kernel, or give each block more work."),
    ("overhead-bound", "latency"): (
        "Neither compute nor memory is near its peak (latency-bound): raise occupancy (fewer "
        "registers/shared memory per block), add instruction-level parallelism (independent work "
        "per thread, unrolling), and check warp stall reasons in `ncu --section WarpStateStats`."),
}
LABEL_DEFAULTS = {
    "memory-bound": RECOMMENDATIONS[("memory-bound", "dram")],
    "compute-bound": ("Compute binds: use tensor cores and the narrowest accurate dtype, align "
                      "dimensions to multiples of 8/16, or reduce the work algorithmically."),
    "overhead-bound": ("Launch/occupancy overhead dominates: CUDA graphs, kernel fusion, larger "
                       "grids/batches and fewer launches."),
}
LATENCY = RECOMMENDATIONS[("overhead-bound", "latency")]
UNKNOWN = ("Metrics are insufficient to classify this kernel: re-profile with `ncu --set full` (or at "
           "least the SpeedOfLight, MemoryWorkloadAnalysis and roofline sections) to see what binds.")


def recommendation(label: str, limiter: str) -> str:
    """The concrete advice for a label/limiter pair."""
    if (label, limiter) in RECOMMENDATIONS:
        return RECOMMENDATIONS[(label, limiter)]
    if limiter == "latency":
        return LATENCY
    if label == "unknown" or label not in LABEL_DEFAULTS:
        return UNKNOWN
    return LABEL_DEFAULTS[label]


def _rule_id(label: str, limiter: str) -> str:
    kind = {"memory-bound": "memory", "compute-bound": "compute", "overhead-bound": "overhead"}.get(label, "unclassified")
    return f"roofline.{kind}.{limiter or 'unknown'}"


def _best_rules(rules: Any, local: bool = False) -> tuple[float | None, str | None, str | None]:
    """Largest ``speedup_pct`` of one launch's ncu rules with its rule id and title: among the
    whole-kernel (``global`` or untyped) estimates, or with ``local=True`` among the ``local``
    ones (a speedup of one unit or pipe, not of the kernel; docs/formulas.md#findings)."""
    best: tuple[float | None, str | None, str | None] = (None, None, None)
    if not isinstance(rules, (list, tuple, np.ndarray)):
        return best
    for r in rules:
        if not isinstance(r, Mapping):
            continue
        if (str(r.get("speedup_type") or "").lower() == "local") != local:
            continue
        raw = r.get("speedup_pct")
        if not isinstance(raw, (int, float)) or isinstance(raw, bool):
            continue
        sp = float(raw)
        if math.isfinite(sp) and sp > 0 and (best[0] is None or sp > best[0]):
            best = (min(sp, 100.0), r.get("rule"), r.get("title"))
    return best


QUOTE_CHARS = 400
"""NVIDIA's rule text is quoted up to this many characters (then cut at a word, with …)."""


def _rule_message(results: pd.DataFrame, kernels: Any, rule: Any) -> str:
    """NVIDIA's text for ``rule`` on the first of ``kernels`` that has it ('' when none does)."""
    if "ncu_rules" not in results or not isinstance(rule, str):
        return ""
    col = results["ncu_rules"]
    for k in list(kernels):
        for r in col.iloc[int(k)] if isinstance(col.iloc[int(k)], (list, tuple)) else []:
            if isinstance(r, Mapping) and r.get("rule") == rule and r.get("message"):
                text = str(r["message"])
                return text if len(text) <= QUOTE_CHARS else text[:QUOTE_CHARS].rsplit(" ", 1)[0] + " …"
    return ""


def _fmt_s(s: float) -> str:
    for f, u in ((1.0, "s"), (1e-3, "ms"), (1e-6, "µs")):
        if abs(s) >= f:
            return f"{s / f:.3g} {u}"
    return f"{s * 1e9:.3g} ns"


def _severity(score: float, estimated: bool, capped: bool = False) -> str:
    """high >= 10 % of all kernel time recoverable, medium >= 2 %, else low; at most medium without
    an estimate or when ``capped`` (unknown label, or at >= 80 % of its roof). docs/formulas.md#findings."""
    sev = "high" if score >= HIGH else "medium" if score >= MEDIUM else "low"
    return "medium" if (sev == "high" and (not estimated or capped)) else sev


def kernel_findings(results: pd.DataFrame, limit: int | None = None) -> list[dict[str, Any]]:
    """Findings, one per family of :func:`analyzer.families.family_table`, best first (at most
    ``limit``), each with a ``_score``. Per-launch savings are weighted by the launches a row
    stands for (``invocations``). Scores and order are computed for all families at once; dicts
    are built only for the kept ones.
    """
    from rooftop.analyzer.advice import advise
    from rooftop.analyzer.families import family_table, launch_weights

    n = len(results)
    if n == 0:
        return []

    def num(col: str) -> np.ndarray:
        if col not in results:
            return np.full(n, np.nan)
        return pd.to_numeric(results[col], errors="coerce").to_numpy(dtype=float)

    w = launch_weights(results).to_numpy()
    dur = num("duration_s") * w
    ach = num("achieved_flops_s")
    att = num("attainable_flops_s")
    with np.errstate(divide="ignore", invalid="ignore"):
        gap_frac = np.clip(1.0 - ach / att, 0.0, 1.0)
    gap = np.where(np.isfinite(gap_frac) & (att > 0) & np.isfinite(dur), dur * gap_frac, np.nan)
    # a unit NCU measured at X % of its peak needs X % of the time at 100 %: no saving above 1 − X
    busiest = np.fmax(num("sol_compute_pct"), num("sol_memory_pct"))
    sol_cap = np.where(np.isfinite(busiest) & np.isfinite(dur), dur * np.clip(1.0 - busiest / 100.0, 0.0, 1.0), np.nan)
    # (only the roofline-gap estimate, which assumes the same work; NVIDIA's rules may remove work)
    gap_est = np.where(np.isfinite(gap) & np.isfinite(sol_cap), np.fmin(gap, sol_cap), gap)
    rules = results["ncu_rules"] if "ncu_rules" in results else pd.Series([None] * n, index=results.index)
    rule_lists = rules.tolist()
    best = [_best_rules(r) for r in rule_lists]
    local = [_best_rules(r, local=True) for r in rule_lists]
    sp = np.array([b[0] if b[0] is not None else np.nan for b in best], dtype=float)
    nv_raw = np.where(np.isfinite(sp) & np.isfinite(dur), dur * sp / 100.0, np.nan)
    # never above rooftop's own roofline bound where there is one (docs/formulas.md#findings)
    capped_nv = np.isfinite(nv_raw) & np.isfinite(gap) & (nv_raw > gap)
    nv = np.where(capped_nv, gap, nv_raw)
    roof_pct = num("pct_of_roof")
    # NCU's SOL % of the side the label names counts as the roof too (its >= 80 % "High Throughput")
    lab = results["label"].astype("object").to_numpy() if "label" in results else np.full(n, None, dtype=object)
    side = np.where(lab == "memory-bound", num("sol_memory_pct"),
                    np.where(lab == "compute-bound", num("sol_compute_pct"), np.nan))
    roof_pct = np.where(np.isfinite(side) & ~(roof_pct >= side), side, roof_pct)
    failed = results["profile_failed"].fillna(False).to_numpy(dtype=bool) if "profile_failed" in results else \
        np.zeros(n, dtype=bool)

    fams = family_table(results)
    fam_rows = fams.set_index("family").to_dict("index")
    total = float(np.nansum(dur))
    pos_family = np.empty(n, dtype=object)
    for fam, ks in zip(fams["family"], fams["kernels"], strict=True):
        pos_family[ks] = fam
    ok_roof = np.isfinite(roof_pct) & np.isfinite(dur)
    frame = pd.DataFrame({"family": pos_family, "gap": gap_est, "sol_capped": gap_est < gap, "nv": nv, "nv_raw": nv_raw, "capped": capped_nv,
                          "roof_t": np.where(ok_roof, roof_pct * dur, np.nan), "t_roof": np.where(ok_roof, dur, np.nan),
                          "failed": failed,
                          "local": [b[0] if b[0] is not None else np.nan for b in local]})
    groups = frame.groupby("family", sort=False)
    agg = fams.set_index("family")[["time_s", "launches", "label", "limiter", "kernels", "representative"]].copy()
    agg["gap_s"] = groups["gap"].sum(min_count=1).reindex(agg.index)
    agg["nv_s"] = groups["nv"].sum(min_count=1).reindex(agg.index)
    agg["n_gap"] = groups["gap"].count().reindex(agg.index).fillna(0)
    agg["n_nv"] = groups["nv"].count().reindex(agg.index).fillna(0)
    agg["rows"] = agg["kernels"].map(len)
    agg["nv_raw_s"] = groups["nv_raw"].sum(min_count=1).reindex(agg.index)
    agg["n_capped"] = groups["capped"].sum().reindex(agg.index).fillna(0)
    agg["n_sol_capped"] = groups["sol_capped"].sum().reindex(agg.index).fillna(0)
    agg["roof_pct"] = (groups["roof_t"].sum(min_count=1) / groups["t_roof"].sum(min_count=1)).reindex(agg.index)
    agg["local_max"] = groups["local"].max().reindex(agg.index)
    agg = agg[~groups["failed"].all().reindex(agg.index).fillna(False).astype(bool)]  # failed profiles: no advice

    # an unknown label: the gap at the measured levels bounds nothing recoverable (an unmeasured level may
    # bind lower), so only NVIDIA's whole-kernel estimate counts (docs/formulas.md#findings)
    unknown = (agg["label"].fillna("unknown") == "unknown").to_numpy()
    agg["est"] = np.where(agg["n_nv"] > 0, agg["nv_s"],
                          np.where((agg["n_gap"] > 0) & ~unknown, agg["gap_s"], np.nan))
    agg["share"] = agg["time_s"].fillna(0.0) / total if total > 0 else 0.0
    agg["score"] = np.where(agg["est"].notna(), agg["est"] / total if total > 0 else 0.0, agg["share"])
    sev = np.where(agg["score"] >= HIGH, 0, np.where(agg["score"] >= MEDIUM, 1, 2))
    agg["capped"] = (agg["label"].fillna("unknown") == "unknown") | (agg["roof_pct"] >= ROOF_HIGH)
    agg["sev"] = np.where((sev == 0) & (agg["est"].isna() | agg["capped"]), 1, sev)
    agg = agg.sort_values(["sev", "score"], ascending=[True, False], kind="stable")
    if limit is not None:
        agg = agg.head(limit)

    # NVIDIA rules of the chosen families: summed estimated saving per rule (names the main rule)
    chosen = set(agg.index)
    rule_rows = [(pos_family[i], b[1] or "", b[2] or "", nv[i]) for i, b in enumerate(best)
                 if b[0] is not None and pos_family[i] in chosen]
    rule_df = pd.DataFrame(rule_rows, columns=["family", "rule", "title", "saving"])
    rules_by_family = {f: g for f, g in rule_df.groupby("family", sort=False)}

    evidence_col = results["evidence"].tolist() if "evidence" in results else [None] * n
    findings: list[dict[str, Any]] = []
    for fam, row in agg.iterrows():
        label = str(row["label"] or "unknown")
        limiter = str(row["limiter"] or "unknown")
        time_s = float(row["time_s"]) if pd.notna(row["time_s"]) else 0.0
        share = time_s / total if total > 0 else 0.0
        ev: list[str] = []
        rec = advise(label, limiter, recommendation(label, limiter), fam_rows.get(fam, {}),
                     float(row["roof_pct"]) if pd.notna(row["roof_pct"]) else math.nan)
        rule = _rule_id(label, limiter)
        nv_s = row["nv_s"] if row["n_nv"] > 0 else None
        gap_s = row["gap_s"] if row["n_gap"] > 0 else None
        if nv_s is not None:
            est: float | None = float(nv_s)
            basis = "NVIDIA's estimated speedup"
            frules = rules_by_family.get(fam, rule_df.iloc[:0])
            top_rules = (frules.groupby(["rule", "title"])["saving"].sum()
                         .sort_values(ascending=False).head(3))
            names = [f"{t if isinstance(t, str) and t else r} (~{_fmt_s(s)})"
                     for (r, t), s in top_rules.items()]
            if len(top_rules):
                main_rule = top_rules.index[0][0]
                if isinstance(main_rule, str) and main_rule:
                    rule = f"ncu.{main_rule}"
            ev.append(f"NVIDIA rules (largest whole-kernel estimated speedup per launch): {', '.join(names)}")
            if row["n_capped"] > 0:
                ev.append(f"NVIDIA's estimate {_fmt_s(float(row['nv_raw_s']))} capped at rooftop's roofline bound "
                          f"in {int(row['n_capped'])} launch record(s): a saving cannot exceed the time above the roof "
                          "(docs/formulas.md#findings)")
            if gap_s is not None:
                ev.append(f"roofline gap (upper bound): {_fmt_s(float(gap_s))}")
            rec += " NVIDIA's rules for these launches: " + "; ".join(
                str(t) for (_, t) in top_rules.index if isinstance(t, str) and t) + "." if len(top_rules) else ""
            quote = _rule_message(results, row["kernels"], top_rules.index[0][0]) if len(top_rules) else ""
            if quote:
                rec += f" NVIDIA's rule text: “{quote}”"
        elif gap_s is not None and label == "unknown":
            est, basis = None, ""
            ev.append(f"no saving claimed: the roofline gap at the measured levels ({_fmt_s(float(gap_s))}) is no "
                      "estimate while the bound is unknown, since an unmeasured level may bind lower (less would be "
                      "recoverable) and NVIDIA gives no whole-kernel estimate; severity from the time share, at most medium "
                      "(docs/formulas.md#findings)")
        elif gap_s is not None:
            est = float(gap_s)
            if row["n_sol_capped"] > 0:
                ev.append(f"capped in {int(row['n_sol_capped'])} launch record(s) at duration × (1 − NCU's busier "
                          "SpeedOfLight % / 100): the busiest unit cannot run above its peak (docs/formulas.md#findings)")
            basis = "the roofline gap, duration × (1 − achieved/attainable), an upper bound"
            if row["n_gap"] < row["rows"]:
                ev.append(f"{int(row['rows'] - row['n_gap'])} of {int(row['rows'])} launch records lack "
                          "achieved or attainable FLOP/s and add no saving")
        else:
            est = None
            basis = ""
            ev.append("no attainable FLOP/s (no device ceiling or FLOP counts) and no NVIDIA speedup "
                      "estimate: ranked by share of GPU time only")
        if est is not None:
            ev.insert(0, f"estimated saving {_fmt_s(est)} from {basis}")
        if pd.notna(row["local_max"]):
            ev.append(f"NVIDIA's local estimates (up to {float(row['local_max']):.1f} % of one unit or pipe) are "
                      "not whole-kernel savings and are not counted (docs/formulas.md#findings)")
        if pd.notna(row["roof_pct"]) and row["roof_pct"] >= ROOF_HIGH:
            ev.append(f"already at {float(row['roof_pct']):.0f} % of its roof (rooftop's roofline, or NCU's SpeedOfLight % "
                      f"of the side its label names; >= {ROOF_HIGH:.0f} %): severity at most medium "
                      "(docs/formulas.md#findings)")
        k_ev = evidence_col[int(row["representative"])]
        if isinstance(k_ev, (list, tuple, np.ndarray)):
            ev += [str(e) for e in list(k_ev)[:4]]
        score = float(row["score"])
        short = _short(str(fam))
        launches = round(float(row["launches"]))
        if label == "unknown":
            missing = _missing_named(k_ev)
            what = f"unknown ({', '.join(missing)} not in the export)" if missing else "unknown"
            decide = _what_decides(missing, k_ev)
            if decide:
                ev.insert(0, f"what would decide it: {decide}")
                # the named metrics replace the generic "re-profile with --set full" advice
                rec = f"Bound unknown: {decide}." + ("" if rec == UNKNOWN else " " + rec)
        else:
            what = f"{label} ({limiter})"
        title = f"{short}: {what}, {share * 100:.1f}% of kernel time in {launches} launch(es)"
        findings.append({
            "rank": 0, "rule": rule, "severity": _severity(score, est is not None, bool(row["capped"])), "title": title,
            "kernels": list(row["kernels"]), "time_share": share,
            "est_saving_s": est, "recommendation": rec,
            "family": str(fam), "label": label, "limiter": limiter, "evidence": ev, "source": "ncu",
            "_score": score,
        })
    return findings


_NOT_EVALUATED = "Not in the export, so not evaluated: "
_DECIDES = {  # what a missing input needs (docs/formulas.md#findings)
    "SpeedOfLight %": "--section SpeedOfLight (sm__throughput, gpu__compute_memory_throughput)",
    "L1 bytes": "the L1 bytes (--section SpeedOfLight_HierarchicalSingleRooflineChart, or l1tex__t_bytes)",
    "L2 bytes": "the L2 bytes (--section SpeedOfLight_HierarchicalSingleRooflineChart, or lts__t_bytes)",
    "DRAM bytes": "dram__bytes (--section SpeedOfLight_RooflineChart)",
    "FLOP counters": "the FLOP counters (--section SpeedOfLight_RooflineChart)",
    "duration": "gpu__time_duration",
}


def _missing_named(k_ev: Any) -> list[str]:
    """The inputs a kernel's evidence names as not in the export."""
    if not isinstance(k_ev, (list, tuple, np.ndarray)):
        return []
    for e in k_ev:
        if isinstance(e, str) and e.startswith(_NOT_EVALUATED):
            return [w.strip() for w in e[len(_NOT_EVALUATED):].split(",") if w.strip()]
    return []


def _what_decides(missing: list[str], k_ev: Any) -> str:
    """The collection (and ``--device``) that would decide an unknown bound, in words."""
    parts = [_DECIDES[m] for m in missing if m in _DECIDES]
    texts = [str(e) for e in k_ev] if isinstance(k_ev, (list, tuple, np.ndarray)) else []
    out = ["collect " + ", ".join(parts)] if parts else []
    if any("pass --device NAME" in t or "pass `--device NAME`" in t for t in texts):
        out.append("pass --device NAME (the ceilings)")
    return "; ".join(out)


def _short(family: str) -> str:
    from rooftop.analyzer.families import display_name

    return display_name(family, 90)


def _window_score(f: Mapping[str, Any]) -> float:
    for key in ("score", "time_share"):
        v = f.get(key)
        if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v):
            return float(v)
    return 0.0


def rank_findings(results: pd.DataFrame, windows: Any, top: int = 10) -> list[dict[str, Any]]:
    """Contract findings (kernel families + DCGM windows), ranked, at most ``top``.

    When both kinds exist, each keeps at least ``top // 3`` slots if it has that many.
    """
    kf = kernel_findings(results, limit=max(int(top), 0)) if results is not None and len(results) else []
    wf = []
    for f in list(getattr(windows, "findings", None) or []):
        g = dict(f)
        g.setdefault("source", "dcgm")
        g["_score"] = _window_score(g)
        wf.append(g)

    def order(f: Mapping[str, Any]) -> tuple[int, float]:
        return (SEVERITY_ORDER.get(str(f.get("severity")), 2), -float(f["_score"]))

    kf.sort(key=order)
    wf.sort(key=order)
    top = max(int(top), 0)
    if kf and wf:
        floor = top // 3
        keep_w = max(min(len(wf), floor), top - len(kf))
        keep_k = max(min(len(kf), floor), top - keep_w)
        chosen = kf[:keep_k] + wf[:min(keep_w, top - min(keep_k, len(kf)))]
    else:
        chosen = (kf or wf)[:top]
    chosen.sort(key=order)
    out = []
    for rank, f in enumerate(chosen[:top], start=1):
        g = {k: v for k, v in f.items() if k != "_score"}
        g["rank"] = rank
        out.append(g)
    return out
