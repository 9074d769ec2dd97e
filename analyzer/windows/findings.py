"""Findings of a window analysis: GPU-hours per group and label (docs/formulas.md#windows)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.fields import gpu_key

HIGH_GPU_HOURS = 8.0  # one GPU's working day at stake (docs/formulas.md#fleet, "Severity")
MEDIUM_GPU_HOURS = 1.0  # one GPU-hour at stake
HIGH_SHARE, MEDIUM_SHARE = 0.25, 0.05  # ... and that share of the GPU time analysed


def severity_by_hours(hours: float, share: float) -> str:
    """Severity from the GPU-hours at stake and their share of the GPU time analysed: ``high`` at
    >= 8 GPU-hours and >= 25 %, ``medium`` at >= 1 GPU-hour and >= 5 %, else ``low``."""
    if hours >= HIGH_GPU_HOURS and share >= HIGH_SHARE:
        return "high"
    if hours >= MEDIUM_GPU_HOURS and share >= MEDIUM_SHARE:
        return "medium"
    return "low"

_RECO = {
    "memory-bound": "Cut DRAM traffic: fuse element-wise/normalisation kernels (torch.compile, fused "
                    "optimizers), use lower precision (bf16/fp8) for activations and weights, improve reuse "
                    "(larger tiles, flash-attention style kernels); profile the top kernels with ncu.",
    "overhead-bound": "Keep the GPU fed: overlap input loading (more DataLoader workers, pinned memory, "
                      "prefetch), batch larger, capture steady-state steps in CUDA graphs / torch.compile, "
                      "remove host synchronisation (.item(), .cpu()) from the loop.",
    "idle": "The GPU is allocated to a workload but idle: release it, scale the deployment down, or share "
            "it (MIG / time-slicing).",
    "idle-unattributed": "Find out who held the GPU while it idled: if a job or pod had it, release it, scale "
                         "the deployment down or share it (MIG / time-slicing); if nothing did, it is spare "
                         "capacity. Workload labels decide this: dcgm-exporter's Kubernetes pod mapping "
                         "(namespace/pod labels) or an HPC job label on the samples.",
}
IDLE_UNATTRIBUTED_SHARE = 0.25  # idle >= a quarter of a GPU's covered time (as the fleet's idle finding)


def hours_text(h: float) -> str:
    """GPU time at stake in words: GPU-hours, or GPU-seconds below 0.1 GPU-hours."""
    return f"{h:.2f} GPU-hours" if h >= 0.1 else f"{h * 3600:.0f} GPU-seconds"


def _findings(w: pd.DataFrame) -> list[dict[str, Any]]:
    if not len(w):
        return []
    secs = (w["covered_s"] if "covered_s" in w.columns else w["window_s"]).to_numpy(dtype="float64")
    if "gpu_share" in w.columns:  # a MIG instance stands for its slices of the GPU (docs/formulas.md#windows)
        secs = secs * w["gpu_share"].to_numpy(dtype="float64")
    w = w.assign(_secs=secs)
    hours = w["_secs"].to_numpy(dtype="float64") / 3600.0
    total = float(hours.sum()) or 1.0
    ns = w["namespace"].astype("object")
    ident = [gpu_key(h, g, m) for h, g, m in zip(w["host"], w["gpu"], w["mig"], strict=True)]
    group = [f"namespace {n}" if isinstance(n, str) and n else f"GPU {i}" for n, i in zip(ns, ident, strict=True)]
    df = w.assign(_h=hours, _group=group, _workload=ns.notna() | w["pod"].notna())
    out: list[dict[str, Any]] = []
    covered_h = df.groupby("_group")["_h"].sum()  # each group's GPU-hours, once
    for (grp, label), sub in df.groupby(["_group", "label"], sort=True):
        if label == "idle":
            out += _unattributed_idle(str(grp), sub[~sub["_workload"]], float(covered_h[grp]), total)
            sub = sub[sub["_workload"]]
        if label not in _RECO or not len(sub):
            continue
        gh = float(sub["_h"].sum())
        if gh <= 0:  # only instant samples: no time at stake (linted dcgm-single-sample-window)
            continue
        means = {m: float(np.nanmean(sub[m])) for m in ("gr_active", "sm_active", "tensor_active", "dram_active")
                 if sub[m].notna().any()}
        share = gh / total

        def ratio(metric: str, means: dict[str, float] = means) -> str:
            v = means.get(metric)
            return f"{v:.2f}" if v is not None and np.isfinite(v) else "not collected"

        if label == "memory-bound":
            title = (f"{grp}: {hours_text(gh)} memory-bound at DRAM-active {ratio('dram_active')} "
                     f"and tensor-active {ratio('tensor_active')}")
            saving = None
        elif label == "overhead-bound":
            title = (f"{grp}: {hours_text(gh)} overhead-bound (GR-active {ratio('gr_active')}, "
                     f"SM-active {ratio('sm_active')})")
            idle_frac = (1.0 - sub["gr_active"]).clip(lower=0).fillna(0).to_numpy()
            saving = float((sub["_secs"].to_numpy() * idle_frac).sum())
        else:
            title = f"{grp}: {hours_text(gh)} allocated to a workload but idle"
            saving = float(sub["_secs"].sum())
        out.append({
            "rank": 0, "rule": f"dcgm-{label if label != 'idle' else 'idle-allocated'}",
            "severity": severity_by_hours(gh, share),
            "title": title, "kernels": [], "time_share": share, "est_saving_s": saving,
            "recommendation": _RECO[label], "gpu_hours": gh, "group": grp, "label": label,
            "windows": len(sub), "metrics": means,
        })
    out.sort(key=lambda f: (-f["gpu_hours"], f["title"]))
    for i, f in enumerate(out, start=1):
        f["rank"] = i
    return out


def _unattributed_idle(grp: str, idle: pd.DataFrame, covered: float, total: float) -> list[dict[str, Any]]:
    """Idle windows that no workload label claims: a finding when they hold >= 25 % of the GPU's
    covered time. No saving is claimed: whether anything held the GPU is not in the data
    (docs/formulas.md#windows, "Window findings")."""
    gh = float(idle["_h"].sum()) if len(idle) else 0.0
    if gh <= 0 or covered <= 0 or gh / covered < IDLE_UNATTRIBUTED_SHARE:
        return []
    return [{
        "rank": 0, "rule": "dcgm-idle-unattributed", "severity": severity_by_hours(gh, gh / total),
        "title": (f"{grp}: idle {hours_text(gh)}, {100.0 * gh / covered:.0f} % of its covered time; "
                  "no workload label says whether a job held it"),
        "kernels": [], "time_share": gh / total, "est_saving_s": None,
        "recommendation": _RECO["idle-unattributed"], "gpu_hours": gh, "group": grp, "label": "idle",
        "windows": len(idle), "metrics": {},
    }]
