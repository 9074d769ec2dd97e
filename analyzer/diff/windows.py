"""Two DCGM captures or two fleet periods compared (docs/formulas.md#windows-diff): GPU-hours, the
share of GPU time per label, and per owner the efficiency (time-weighted SM activity), gated with
the diff's effect size and significance (:mod:`analyzer.diff.gate`, :mod:`analyzer.diff.stats`).

Input is each side's ``windows`` list (contract records of ``rooftop analyze`` on DCGM streams or of
``rooftop fleet``); everything here is a pure function of the two lists.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.deltas import pct
from rooftop.analyzer.diff.gate import Gate, decide, p_text
from rooftop.analyzer.schema.vocab import SIDES as _SIDES
from rooftop.analyzer.schema.vocab import WINDOW_LABELS

SIDES = _SIDES
OWNER_KEYS = ("namespace", "job", "pod")
"""The owner of a window: the first of these it names, else its host and GPU."""
EFFICIENCY = ("sm_active", "gr_active", "gpu_util")
"""Efficiency of an owner, the first both sides carry: SM activity (DCGM_FI_PROF_SM_ACTIVE), else
graphics-engine activity (DCGM_FI_PROF_GR_ENGINE_ACTIVE), else GPU utilisation (DCGM_FI_DEV_GPU_UTIL /
nvidia-smi utilization.gpu: the time any kernel ran, the coarsest)."""
LABELS = WINDOW_LABELS


def owner(w: dict[str, Any], by: Sequence[str] = ()) -> tuple[str, str]:
    """(kind, name) of a window's owner (docs/formulas.md#windows-diff): the fleet's ``--by`` keys
    when given, else the first of :data:`OWNER_KEYS` the window names, else its host and GPU."""
    if by:
        return "+".join(by), ", ".join(f"{w.get(k)}" for k in by)
    for k in OWNER_KEYS:
        v = w.get(k)
        if v:
            return k, str(v)
    host, gpu = w.get("host"), w.get("gpu_key") or w.get("gpu")
    return "gpu", f"{host} GPU {gpu}" if host and not str(gpu).startswith(str(host)) else f"GPU {gpu}"


def window_frame(windows: Sequence[dict[str, Any]], side: str, by: Sequence[str] = ()) -> pd.DataFrame:
    """One row per window: side, owner kind and name (``by``: a fleet's group keys), label, covered
    seconds, and each :data:`EFFICIENCY` metric (NaN where the window has none)."""
    rows = []
    for w in windows:
        m = w.get("metrics") or {}
        kind, name = owner(w, by)
        rows.append({"side": side, "owner_kind": kind, "owner": name, "label": str(w.get("label") or "unknown"),
                     "covered_s": float(w.get("covered_s") or 0.0),
                     **{k: float(m[k]) if isinstance(m.get(k), (int, float)) and not isinstance(m.get(k), bool)
                        else np.nan for k in EFFICIENCY}})
    cols = ["side", "owner_kind", "owner", "label", "covered_s", *EFFICIENCY]
    return pd.DataFrame(rows, columns=cols).astype({k: float for k in EFFICIENCY})


def common_metric(g: pd.DataFrame) -> str:
    """The owner's efficiency metric: the first of :data:`EFFICIENCY` that windows of both sides
    carry (one side only: the first it carries); "" when none."""
    sides = [g[g["side"] == s] for s in SIDES]
    present = [s for s in sides if len(s)]
    for k in EFFICIENCY:
        if all(np.isfinite(s[k].to_numpy(dtype=float)).any() for s in present):
            return k
    return ""


def no_common_metric(frames: Sequence[pd.DataFrame]) -> list[str]:
    """Owners with windows on both sides and an efficiency metric on each, but none in common (not
    compared; the diff lints them)."""
    both = pd.concat(frames, ignore_index=True)
    out = []
    for (kind, name), g in both.groupby(["owner_kind", "owner"], sort=True):
        has = [np.isfinite(g.loc[g["side"] == s, list(EFFICIENCY)].to_numpy(dtype=float)).any() for s in SIDES]
        if all(has) and not common_metric(g):
            out.append(f"{kind} {name}" if kind != "gpu" else str(name))
    return out


def _both(b: float | None, c: float | None) -> dict[str, Any]:
    return {"baseline": b, "candidate": c, "delta": None if b is None or c is None else c - b,
            "change": None if b is None or c is None or b == 0 else c / b - 1.0}


def hours_and_shares(frames: Sequence[pd.DataFrame]) -> dict[str, Any]:
    """GPU-hours per side and, per label, GPU-hours and share of the side's GPU-hours (the fleet rule:
    Σ covered_s / 3600, docs/formulas.md#fleet)."""
    hours = [float(f["covered_s"].sum()) / 3600.0 for f in frames]
    labels: dict[str, Any] = {}
    seen = [lb for lb in LABELS if any((f["label"] == lb).any() for f in frames)]
    seen += sorted({lb for f in frames for lb in f["label"]} - set(seen))
    for lb in seen:
        h = [float(f.loc[f["label"] == lb, "covered_s"].sum()) / 3600.0 for f in frames]
        share = [x / t if t else None for x, t in zip(h, hours, strict=True)]
        both = _both(share[0], share[1])
        both["points"] = None if share[0] is None or share[1] is None else 100.0 * (share[1] - share[0])
        labels[lb] = {"gpu_hours": _both(h[0], h[1]), "share": both}
    return {"gpu_hours": _both(hours[0], hours[1]), "labels": labels}


def owner_table(frames: Sequence[pd.DataFrame], gate: Gate, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """Per owner: windows and GPU-hours per side, time-weighted mean efficiency, its change, the
    test over the windows' efficiencies, status (higher is better: a drop regresses) and what decided."""
    both = pd.concat(frames, ignore_index=True)
    idle = _idle_shares(both)
    rows = []
    samples: list[tuple[np.ndarray, np.ndarray]] = []
    for (kind, name), g in both.groupby(["owner_kind", "owner"], sort=True):
        metric = common_metric(g)
        if not metric:
            continue
        g = g.assign(efficiency=g[metric])
        g = g[np.isfinite(g["efficiency"].to_numpy(dtype=float))]
        b, c = g[g["side"] == "baseline"], g[g["side"] == "candidate"]
        mb, mc = _weighted(b), _weighted(c)
        rows.append({"owner_kind": kind, "owner": name, "metric": metric,
                     "n_base": len(b), "n_cand": len(c), "hours_base": b["covered_s"].sum() / 3600.0,
                     "hours_cand": c["covered_s"].sum() / 3600.0, "mean_base": mb, "mean_cand": mc,
                     "change": mc / mb - 1.0 if mb and mc is not None and math.isfinite(mc) else np.nan,
                     "idle_share_base": idle.get((kind, name, "baseline"), np.nan),
                     "idle_share_cand": idle.get((kind, name, "candidate"), np.nan)})
        samples.append((b["efficiency"].to_numpy(dtype=float), c["efficiency"].to_numpy(dtype=float)))
    if not rows:
        return pd.DataFrame()
    t = pd.DataFrame(rows)
    tested = stats.testable(t["n_base"].to_numpy(), t["n_cand"].to_numpy(), alpha)
    p = np.full(len(t), np.nan)
    idx = np.flatnonzero(tested)
    p[idx] = stats.batch_p_values([samples[i] for i in idx])
    t["p_value"], t["p_adjusted"] = p, stats.holm(p)
    t["method"] = np.where(tested, "mann-whitney", "threshold-only")
    t["significant"] = np.isfinite(t["p_adjusted"]) & (t["p_adjusted"] <= alpha)
    # higher is better: judge the drop as the regression (the change with its sign turned)
    status, decided = decide(t.assign(change=-t["change"]), gate.threshold)
    t["status"], t["decided_by"] = status, decided
    t["delta_s"] = (t["hours_cand"] - t["hours_base"]) * 3600.0
    t["short_name"] = [f"{k} {n}" if k != "gpu" else n for k, n in zip(t["owner_kind"], t["owner"], strict=True)]
    t["note"] = [f"{a} vs {b} windows: Mann–Whitney U, Holm-adjusted" if m == "mann-whitney"
                 else f"{min(a, b)} window(s): too few for a test, threshold only"
                 for m, a, b in zip(t["method"], t["n_base"], t["n_cand"], strict=True)]
    t["series"] = t["short_name"]
    return t


def _idle_shares(frame: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """Per (owner kind, owner, side): the share of the owner's covered time in windows labelled
    ``idle`` (every window of the owner, with or without an efficiency; reported, not gated)."""
    if not len(frame):
        return {}
    f = frame.assign(idle_s=np.where(frame["label"] == "idle", frame["covered_s"], 0.0))
    sums = f.groupby(["owner_kind", "owner", "side"])[["idle_s", "covered_s"]].sum()
    return {key: float(r.idle_s / r.covered_s) for key, r in zip(sums.index, sums.itertuples(), strict=True)
            if r.covered_s > 0}


def _weighted(f: pd.DataFrame) -> float | None:
    w = f["covered_s"].to_numpy(dtype=float)
    v = f["efficiency"].to_numpy(dtype=float)
    if not len(v):
        return None
    if w.sum() > 0:
        return float((w * v).sum() / w.sum())
    return float(v.mean())


OWNER_FIELDS = ["series", "short_name", "owner_kind", "owner", "metric", "status", "decided_by", "method", "note",
                "n_base", "n_cand", "hours_base", "hours_cand", "mean_base", "mean_cand", "change", "p_value",
                "p_adjusted", "significant", "idle_share_base", "idle_share_cand"]


def owner_records(t: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract records of the owner rows (``OWNER_FIELDS``, plus ``change_pct``)."""
    out = []
    for r in t.reindex(columns=OWNER_FIELDS).to_dict("records"):
        rec: dict[str, Any] = {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                               for k, v in r.items()}
        for k in ("n_base", "n_cand"):
            rec[k] = int(rec[k] or 0)
        rec["significant"] = bool(rec["significant"])
        rec["decided_by"] = rec["decided_by"] or None
        rec["change_pct"] = None if rec["change"] is None else 100.0 * rec["change"]
        out.append(rec)
    return out


def owner_text(rows: pd.DataFrame, k: int = 5) -> str:
    """``namespace ns1 SM activity 0.80 → 0.60 (-25 %, p=1e-09 Holm-adjusted)``; ``and N more``."""
    parts = []
    for r in rows.head(k).itertuples():
        ev = f"{p_text(r.p_adjusted)} Holm-adjusted" if r.method == "mann-whitney" else str(r.note)
        parts.append(f"{r.short_name} {_metric(r.metric)} {r.mean_base:.2f} → {r.mean_cand:.2f} ({pct(r.change)}, {ev})")
    return "; ".join(parts) + (f" and {len(rows) - k} more" if len(rows) > k else "")


def _metric(m: str) -> str:
    return {"sm_active": "SM activity", "gr_active": "GR-engine activity", "gpu_util": "GPU utilisation"}.get(
        m, "activity")


def shares_text(hs: dict[str, Any]) -> str:
    """``GPU-hours 0.33 → 0.33; idle 30 % → 45 % (+15 points), ...`` (labels that moved ≥ 1 point first)."""
    gh = hs["gpu_hours"]
    moved = sorted(((lb, v) for lb, v in hs["labels"].items() if v["share"]["points"] is not None),
                   key=lambda x: -abs(x[1]["share"]["points"]))
    parts = [f"{lb} {100 * v['share']['baseline']:.0f} % → {100 * v['share']['candidate']:.0f} % "
             f"({v['share']['points']:+.0f} points)" for lb, v in moved if abs(v["share"]["points"]) >= 1.0][:4]
    text = f"GPU-hours {_h(gh['baseline'])} → {_h(gh['candidate'])}"
    if not gh["baseline"] or not gh["candidate"]:
        return text + "; label shares not compared (no GPU time on one side)"
    return text + ("; label shares: " + ", ".join(parts) if parts else "; label shares within 1 point")


def _h(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3g}"
