"""Findings of a window analysis: GPU-hours per group and label (docs/formulas.md#windows)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.windows.lint import _txt

_RECO = {
    "memory-bound": "Cut DRAM traffic: fuse element-wise/normalisation kernels (torch.compile, fused "
                    "optimizers), use lower precision (bf16/fp8) for activations and weights, improve reuse "
                    "(larger tiles, flash-attention style kernels); profile the top kernels with ncu.",
    "overhead-bound": "Keep the GPU fed: overlap input loading (more DataLoader workers, pinned memory, "
                      "prefetch), batch larger, capture steady-state steps in CUDA graphs / torch.compile, "
                      "remove host synchronisation (.item(), .cpu()) from the loop.",
    "idle": "The GPU is allocated to a workload but idle: release it, scale the deployment down, or share "
            "it (MIG / time-slicing).",
}


def _findings(w: pd.DataFrame) -> list[dict[str, Any]]:
    if not len(w):
        return []
    hours = w["window_s"].to_numpy(dtype="float64") / 3600.0
    total = float(hours.sum()) or 1.0
    ns = w["namespace"].astype("object")
    ident = [f"{_txt(h)}/{_txt(g)}" + (f"/mig {m}" if isinstance(m, str) else "")
             for h, g, m in zip(w["host"], w["gpu"], w["mig"], strict=True)]
    group = [f"namespace {n}" if isinstance(n, str) and n else f"GPU {i}" for n, i in zip(ns, ident, strict=True)]
    df = w.assign(_h=hours, _group=group, _workload=ns.notna() | w["pod"].notna())
    out: list[dict[str, Any]] = []
    for (grp, label), sub in df.groupby(["_group", "label"], sort=True):
        if label == "idle":
            sub = sub[sub["_workload"]]
        if label not in _RECO or not len(sub):
            continue
        gh = float(sub["_h"].sum())
        means = {m: float(np.nanmean(sub[m])) for m in ("gr_active", "sm_active", "tensor_active", "dram_active")
                 if sub[m].notna().any()}
        share = gh / total

        def ratio(metric: str, means: dict[str, float] = means) -> str:
            v = means.get(metric)
            return f"{v:.2f}" if v is not None and np.isfinite(v) else "not collected"

        if label == "memory-bound":
            title = (f"{grp}: {gh:.2f} GPU-hours memory-bound at DRAM-active {ratio('dram_active')} "
                     f"and tensor-active {ratio('tensor_active')}")
            saving = None
        elif label == "overhead-bound":
            title = (f"{grp}: {gh:.2f} GPU-hours overhead-bound (GR-active {ratio('gr_active')}, "
                     f"SM-active {ratio('sm_active')})")
            idle_frac = (1.0 - sub["gr_active"]).clip(lower=0).fillna(0).to_numpy()
            saving = float((sub["window_s"].to_numpy() * idle_frac).sum())
        else:
            title = f"{grp}: {gh:.2f} GPU-hours allocated to a workload but idle"
            saving = float(sub["window_s"].sum())
        out.append({
            "rank": 0, "rule": f"dcgm-{label if label != 'idle' else 'idle-allocated'}",
            "severity": "high" if share >= 0.25 else "medium" if share >= 0.05 else "low",
            "title": title, "kernels": [], "time_share": share, "est_saving_s": saving,
            "recommendation": _RECO[label], "gpu_hours": gh, "group": grp, "label": label,
            "windows": len(sub), "metrics": means,
        })
    out.sort(key=lambda f: (-f["gpu_hours"], f["title"]))
    for i, f in enumerate(out, start=1):
        f["rank"] = i
    return out
