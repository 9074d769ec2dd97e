"""Fleet roll-ups over classified windows: per-group GPU-hours, label shares, utilization, trend, findings.

Input: the classified windows table (``analyzer.windows.classify_windows``), one row per GPU and
window, with columns

==================  ==========================================================================
host, gpu, mig,     identity of the GPU (``mig`` null when not MIG); ``namespace``, ``pod``,
model, ...          ``container``, ``job`` when the window maths keep them
start               window start (UTC timestamp)
label               idle / compute-bound / memory-bound / overhead-bound / mixed / unknown
gr_active, ...      window means of the DCGM profiling ratios (0..1), where measured
est_flops_s,        estimated FLOP/s and DRAM bytes/s (null without device ceilings)
est_dram_bytes_s
==================  ==========================================================================

Every window stands for the GPU-seconds its samples span (``covered_s``, docs/formulas.md#windows;
``window_s`` for tables without it) times its ``gpu_share`` (a MIG instance its slices). ``gpus``
counts physical GPUs (:func:`~rooftop.analyzer.windows.identity.physical_ids`: UUID, else host +
index; MIG instances are part of theirs). ``--by gpu`` groups host + gpu index + MIG instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column
from rooftop.analyzer.schema.vocab import WINDOW_LABELS
from rooftop.analyzer.windows.findings import hours_text, severity_by_hours
from rooftop.analyzer.windows.identity import physical_ids

GROUPABLE = ("host", "model", "gpu", "namespace", "pod", "container", "job")
GPU_IDENTITY = ("host", "gpu", "mig")
LABELS = WINDOW_LABELS  # in this order: the keys of groups[].labels
METRICS = ("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active",
           "fp64_active", "fp32_active", "fp16_active")
NONE_KEY = "(none)"

# what counts as "moved" night over night
MOVE_HOURS_REL = 0.20  # GPU-hours changed by 20 %
MOVE_SHARE_ABS = 0.10  # a label's share of GPU-time moved by 10 points
MOVE_METRIC_ABS = 0.10  # a utilization ratio moved by 0.10
MOVE_FLOPS_REL = 0.20  # estimated FLOP/s changed by 20 %

# finding thresholds (share of the group's GPU-time)
IDLE_SHARE = 0.25
OVERHEAD_SHARE = 0.20
MEMORY_SHARE = 0.30


def group_columns(by: Sequence[str]) -> list[str]:
    """The window columns a ``--by`` list groups on (``gpu`` expands to host + gpu + mig)."""
    bad = [b for b in by if b not in GROUPABLE]
    if bad:
        raise ValueError(f"cannot group by {', '.join(bad)}; choose from {', '.join(GROUPABLE)}")
    cols: list[str] = []
    for b in by or ["host"]:
        for c in GPU_IDENTITY if b == "gpu" else (b,):
            if c not in cols:
                cols.append(c)
    return cols


def _text(s: pd.Series) -> pd.Series:
    """Values as text, missing as NONE_KEY (``astype(str)`` keeps missing values missing)."""
    obj = s.astype("object")
    return obj.where(obj.notna(), NONE_KEY).astype(str)


def gpu_seconds(w: pd.DataFrame, window_s: float) -> np.ndarray:
    """GPU-seconds each window stands for: ``covered_s`` (``window_s`` for tables without it) x
    ``gpu_share`` (1 where absent) (docs/formulas.md#fleet, "GPU-hours")."""
    secs = (pd.to_numeric(w["covered_s"], errors="coerce").fillna(0.0).to_numpy(dtype="float64")
            if "covered_s" in w.columns else np.full(len(w), float(window_s)))
    if "gpu_share" in w.columns:
        secs = secs * pd.to_numeric(w["gpu_share"], errors="coerce").fillna(1.0).to_numpy(dtype="float64")
    return np.asarray(secs, dtype="float64")


def gpu_count(windows: pd.DataFrame) -> int:
    """Physical GPUs among ``windows`` (the one GPU count of header, tables and findings)."""
    return len(set(physical_ids(windows).tolist())) if len(windows) else 0


def rollup(windows: pd.DataFrame, by: Sequence[str], window_s: float) -> pd.DataFrame:
    """One row per group: ``gpus``, ``windows``, ``gpu_hours``, ``hours_<label>``, ``share_<label>``,
    duration-weighted means of :data:`METRICS`, ``est_flops_s``/``est_dram_bytes_s`` (means),
    ``est_flop`` (total FLOP estimate). Sorted by GPU-hours (desc), then key."""
    cols = group_columns(by)
    w = windows.copy(deep=False)  # columns are added, never changed in place (copy-on-write)
    for c in [*cols, *GPU_IDENTITY]:
        if c not in w.columns:
            w[c] = None
    w["_gpu_id"] = physical_ids(w)  # one physical GPU: UUID, else host/index; MIG instances are part of it
    for c in cols:
        w[c] = _text(w[c])
    # a window stands for the time its samples span (docs/formulas.md#windows), not window_s,
    # times its share of its physical GPU (a MIG instance its slices: a MIG GPU is counted once)
    secs = gpu_seconds(w, window_s)
    hours = secs / 3600.0
    w["_hours"] = hours
    lab = w["label"].astype("object").where(w["label"].notna(), "unknown").astype(str)
    new: dict[str, Any] = {f"hours_{label}": np.where(lab == label, hours, 0.0) for label in LABELS}
    agg: dict[str, Any] = {"_gpu_id": "nunique", "label": "size", "_hours": "sum"}
    agg.update({f"hours_{label}": "sum" for label in LABELS})
    present = [m for m in METRICS if m in w.columns]
    for m in [*present, "est_flops_s", "est_dram_bytes_s"]:
        v = column(w, m)
        new[f"_{m}_sum"] = v.fillna(0.0)
        new[f"_{m}_n"] = v.notna().astype("int64")
        agg[f"_{m}_sum"] = "sum"
        agg[f"_{m}_n"] = "sum"
    # FLOP totals weight each window's estimate by the seconds it covers; means stay per window
    new["_est_flop"] = new["_est_flops_s_sum"] * secs
    agg["_est_flop"] = "sum"
    w = pd.concat([w, pd.DataFrame(new, index=w.index)], axis=1)
    g = w.groupby(cols, sort=True, dropna=False).agg(agg).reset_index()
    out = g[cols].copy()
    out["gpus"] = g["_gpu_id"].astype("int64")
    out["windows"] = g["label"].astype("int64")
    out["gpu_hours"] = g["_hours"].astype("float64")
    for label in LABELS:
        out[f"hours_{label}"] = g[f"hours_{label}"]
        out[f"share_{label}"] = g[f"hours_{label}"] / out["gpu_hours"].where(out["gpu_hours"] > 0)
    for m in [*present, "est_flops_s", "est_dram_bytes_s"]:
        n = g[f"_{m}_n"]
        out[m] = (g[f"_{m}_sum"] / n.where(n > 0)).astype("float64")
    out["est_flop"] = g["_est_flop"]
    out = out.sort_values(["gpu_hours", *cols], ascending=[False, *([True] * len(cols))],
                          kind="stable").reset_index(drop=True)
    return out


def trend(current: pd.DataFrame, previous: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """``current`` roll-up joined with the previous period's: ``prev_<col>``, ``d_<col>`` and
    ``moved`` (list of plain-words changes beyond the MOVE_* thresholds)."""
    cols = group_columns(by)
    keep = ["gpu_hours", *[f"share_{label}" for label in LABELS],
            *[m for m in METRICS if m in previous.columns], "est_flops_s"]
    prev = previous[[*cols, *keep]].rename(columns={c: f"prev_{c}" for c in keep})
    out = current.merge(prev, on=cols, how="left", sort=False)
    for c in keep:
        if c in out.columns and f"prev_{c}" in out.columns:
            out[f"d_{c}"] = out[c] - out[f"prev_{c}"]
    out["moved"] = [_moved(r) for r in out.to_dict("records")]
    return out


def _moved(r: dict[str, Any]) -> list[str]:
    prev_h = r.get("prev_gpu_hours")
    if prev_h is None or not np.isfinite(prev_h):
        return ["new this period"]
    moves: list[str] = []
    rel = (r["gpu_hours"] - prev_h) / prev_h if prev_h > 0 else np.inf
    if abs(rel) >= MOVE_HOURS_REL:
        moves.append(f"GPU-hours {prev_h:.2f} → {r['gpu_hours']:.2f} ({rel:+.0%})")
    for label in LABELS:
        d = r.get(f"d_share_{label}")
        if d is not None and np.isfinite(d) and abs(d) >= MOVE_SHARE_ABS:
            moves.append(f"{label} share {r[f'prev_share_{label}']:.0%} → {r[f'share_{label}']:.0%}")
    for m in METRICS:
        d = r.get(f"d_{m}")
        if d is not None and np.isfinite(d) and abs(d) >= MOVE_METRIC_ABS:
            moves.append(f"{m} {r[f'prev_{m}']:.2f} → {r[m]:.2f}")
    pf, cf = r.get("prev_est_flops_s"), r.get("est_flops_s")
    if pf and cf and np.isfinite(pf) and np.isfinite(cf) and pf > 0 and abs(cf / pf - 1) >= MOVE_FLOPS_REL:
        moves.append(f"est. FLOP/s {pf:.3g} → {cf:.3g} ({cf / pf - 1:+.0%})")
    return moves


def group_records(table: pd.DataFrame, by: Sequence[str]) -> list[dict[str, Any]]:
    """The document's ``groups``: one dict per row of :func:`trend` (or :func:`rollup`)."""
    cols = group_columns(by)
    out: list[dict[str, Any]] = []
    for r in table.to_dict("records"):
        rec: dict[str, Any] = {
            "key": {c: (None if r[c] == NONE_KEY else r[c]) for c in cols},
            "gpus": r["gpus"], "windows": r["windows"], "gpu_hours": r["gpu_hours"],
            "labels": {label: {"gpu_hours": r[f"hours_{label}"], "share": r[f"share_{label}"]}
                       for label in LABELS},
            "metrics": {m: r[m] for m in METRICS if m in r},
            "est_flops_s": r["est_flops_s"], "est_flop": r["est_flop"],
            "est_dram_bytes_s": r["est_dram_bytes_s"],
            "dram_utilization": r.get("dram_active"),
        }
        rec["previous"] = None if not np.isfinite(r.get("prev_gpu_hours", np.nan)) else {
            "gpu_hours": r["prev_gpu_hours"],
            "labels": {label: {"share": r[f"prev_share_{label}"]} for label in LABELS},
            "metrics": {m: r[f"prev_{m}"] for m in METRICS if f"prev_{m}" in r},
            "est_flops_s": r.get("prev_est_flops_s"),
        }
        rec["moved"] = r.get("moved", [])
        out.append(rec)
    return out


def _key_text(key: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v if v is not None else NONE_KEY}" for k, v in key.items())


def fleet_findings(groups: list[dict[str, Any]], top: int) -> list[dict[str, Any]]:
    """Ranked fleet findings from group records: idle, overhead-bound and memory-bound GPU-time,
    and night-over-night moves. Ranked by the share of the fleet's GPU-time they concern."""
    total_h = sum(g["gpu_hours"] for g in groups) or 1.0
    cands: list[dict[str, Any]] = []
    for g in groups:
        if not g["gpu_hours"] > 0:  # instant samples only: no time at stake (linted)
            continue
        key = _key_text(g["key"])
        labels = g["labels"]
        idle = labels["idle"]
        if idle["share"] >= IDLE_SHARE:
            cands.append(_finding(
                "fleet-idle", severity_by_hours(idle["gpu_hours"], idle["gpu_hours"] / total_h),
                f"{key}: GPUs idle {idle['share']:.0%} of {hours_text(g['gpu_hours'])}",
                g, idle["gpu_hours"], total_h, idle["gpu_hours"] * 3600.0,
                "Idle GPU-time is capacity paid for and unused: release or share idle GPUs "
                "(smaller allocations, MIG/time-slicing, queue backfill), and check jobs that hold GPUs "
                "while waiting on input or other jobs."))
        ovh = labels["overhead-bound"]
        if ovh["share"] >= OVERHEAD_SHARE:
            cands.append(_finding(
                "fleet-overhead-bound", severity_by_hours(ovh["gpu_hours"], ovh["gpu_hours"] / total_h),
                f"{key}: overhead-bound {ovh['share']:.0%} of {hours_text(g['gpu_hours'])} "
                "(launch or host overhead)",
                g, ovh["gpu_hours"], total_h, None,
                "The GPU waits on the host or runs tiny kernels: capture CUDA graphs, batch small "
                "launches, add data-loader workers / pinned memory, overlap copies; confirm with an "
                "Nsight Systems timeline of one step."))
        mem = labels["memory-bound"]
        if mem["share"] >= MEMORY_SHARE:
            cands.append(_finding(
                "fleet-memory-bound", severity_by_hours(mem["gpu_hours"], mem["gpu_hours"] / total_h),
                f"{key}: memory-bound {mem['share']:.0%} of {hours_text(g['gpu_hours'])}",
                g, mem["gpu_hours"], total_h, None,
                "DRAM bandwidth limits these jobs: larger batches (inference), kernel fusion, "
                "lower-precision weights/KV cache raise arithmetic intensity; profile the top kernels "
                "with ncu and run `rooftop analyze`."))
        moved = [m for m in g.get("moved", []) if m != "new this period"]
        if moved:
            cands.append(_finding(
                "fleet-moved", "info",
                f"{key}: changed night over night: {'; '.join(moved[:3])}",
                g, g["gpu_hours"], total_h, None,
                "Check what changed for this group (job mix, software, placement) against the previous "
                "period; a falling utilization with steady GPU-hours is a regression to chase."))
    order = {"high": 0, "medium": 1, "low": 2, "info": 3}
    cands.sort(key=lambda f: (order[f["severity"]], -f["gpu_hours"], f["title"]))
    for i, f in enumerate(cands[:top], start=1):
        f["rank"] = i
    return cands[:top]


def _finding(rule: str, severity: str, title: str, group: dict[str, Any], hours: float,
             total_h: float, saving_s: float | None, rec: str) -> dict[str, Any]:
    return {"rank": 0, "rule": rule, "severity": severity, "title": title, "kernels": [],
            "time_share": hours / total_h, "gpu_hours": hours, "est_saving_s": saving_s, "recommendation": rec,
            "group": group["key"]}
