"""Kernel ↔ fleet join: what DCGM *should* show for a job, given its ncu kernel mix, vs what it showed.

``predict_signature(results)`` turns the flat kernel results (``analyzer.document.KERNEL_FIELDS``
columns: ``duration_s``, ``flops_tensor``/``fp32``/``fp64``/``fp16``, ``bytes_dram``, ``grid``,
``sol_memory_pct``, ``label``, ``device``) into the duration-weighted DCGM ratios expected *while
kernels run*:

* ``tensor_active_k = flops_tensor_k / duration_k / peak_tensor`` (DCGM 1004 at 1.0 ≈ dense tensor
  peak; docs/research/formulas.md §6.3), likewise ``fp32/fp64/fp16_active`` against the non-tensor peaks;
* ``dram_active_k = bytes_dram_k / duration_k / peak_dram_bw`` (1005; without a DRAM peak the
  kernel's SOL memory % is used as an upper bound);
* ``sm_active_k = min(1, grid_k / sm_count)`` (1002: "a kernel using N/5 blocks ... 0.2"), 1 when
  the grid or the SM count is unknown;
* ``gr_active`` = 1 (the engine is busy whenever a kernel runs);
* signature = Σ duration_k · x_k / Σ duration_k over kernels where x_k is known.

``compare_signature(predicted, windows)`` scales the busy signature by the busy fraction DCGM saw
(``gr_active``): ``expected_x = gr_active_observed × predicted_x``, and reports per metric whether
the observation agrees (within ``max(ABS_TOL, REL_TOL × expected)``), is lower or higher, and what
that means. The gap ``1 - gr_active`` is time outside the profiled kernels.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column
from rooftop.errors import InputError

ABS_TOL = 0.05
REL_TOL = 0.25
BUSY_OK = 0.90  # gr_active at or above this: the GPU ran kernels nearly all the time

# metric -> (flops column, peak key)
PIPE_METRICS: dict[str, tuple[str, str]] = {
    "tensor_active": ("flops_tensor", "tensor"),
    "fp64_active": ("flops_fp64", "fp64"),
    "fp32_active": ("flops_fp32", "fp32"),
    "fp16_active": ("flops_fp16", "fp16"),
}
COMPARED = ("sm_active", "tensor_active", "dram_active", "fp64_active", "fp32_active", "fp16_active")

MEANING: dict[tuple[str, str], str] = {
    ("tensor_active", "lower"):
        "DCGM saw less tensor-pipe work than the profiled kernel mix implies: production runs a "
        "different mix (smaller batches or shapes, non-tensor code paths, kernels the profile "
        "over-weights), or DCGM multiplexed its counters (pre-Hopper).",
    ("tensor_active", "higher"):
        "More tensor work than the profile implies: kernels missing from the profile (ncu -k/-c "
        "filters, other processes on the GPU) or larger shapes in production.",
    ("dram_active", "lower"):
        "Less DRAM traffic than profiled: ncu flushes caches before each replay (--cache-control "
        "all), inflating DRAM bytes; in production L2 stays warm.",
    ("dram_active", "higher"):
        "More DRAM traffic than profiled: unprofiled memory-bound work (copies, element-wise "
        "kernels, NCCL) or larger working sets in production.",
    ("sm_active", "lower"):
        "Fewer SMs busy than the kernel grids imply: short kernels with gaps inside each sampling "
        "interval (launch overhead, synchronisation) or a different launch configuration.",
    ("sm_active", "higher"):
        "More SM activity than profiled: unprofiled kernels or concurrent processes on the GPU.",
}
PIPE_MEANING = {
    "lower": "Less work on this pipe than the profiled mix implies: a different kernel mix in "
             "production, or the profiled kernels are over-represented.",
    "higher": "More work on this pipe than profiled: kernels missing from the profile.",
}


def _ceilings(results: pd.DataFrame, ceilings: Mapping[str, float] | Any | None) -> dict[str, float]:
    """Flat ceilings ``{tensor, fp64, fp32, fp16, dram, sm_count}`` from a mapping, a
    ``DeviceSpec``, or the built-in device named by the results' ``device`` column."""
    if ceilings is None and "device" in results.columns and results["device"].notna().any():
        from rooftop.analyzer.ceilings.devices import lookup

        ceilings = lookup(str(results["device"].dropna().mode().iloc[0]))
    if ceilings is None:
        return {}
    if isinstance(ceilings, Mapping):
        return {k: float(v) for k, v in ceilings.items() if v is not None}
    out: dict[str, float] = {k: float(v) for k, v in getattr(ceilings, "peaks", {}).items()}
    bw = getattr(ceilings, "bandwidth", {})
    if "dram" in bw:
        out["dram"] = float(bw["dram"])
    if getattr(ceilings, "sm_count", None):
        out["sm_count"] = float(ceilings.sm_count)
    return out



def predict_signature(results: pd.DataFrame,
                      ceilings: Mapping[str, float] | Any | None = None) -> dict[str, Any]:
    """The DCGM signature a job's kernel mix implies while kernels run (see the module docstring).

    Returns ``{"kernels", "kernel_time_s", "busy": {metric: ratio|None}, "coverage": {metric: share
    of kernel time with a value}, "mix": {label: time share}, "assumptions": [str]}``.
    """
    c = _ceilings(results, ceilings)
    dur = column(results, "duration_s")
    if "invocations" in results.columns:
        dur = dur * column(results, "invocations").fillna(1.0)
    ok = dur.notna() & (dur > 0)
    r, d = results[ok], dur[ok]
    total = float(d.sum())
    assumptions: list[str] = []
    per: dict[str, pd.Series] = {}
    for metric, (col, key) in PIPE_METRICS.items():
        if c.get(key):
            per[metric] = (column(r, col) / d / c[key]).clip(0.0, 1.0)
    if c.get("dram"):
        per["dram_active"] = (column(r, "bytes_dram") / d / c["dram"]).clip(0.0, 1.0)
    else:
        per["dram_active"] = (column(r, "sol_memory_pct") / 100.0).clip(0.0, 1.0)
        assumptions.append("no DRAM peak: dram_active from SOL memory % (an upper bound)")
    grid = column(r, "grid")
    if c.get("sm_count"):
        per["sm_active"] = (grid / c["sm_count"]).clip(upper=1.0).fillna(1.0)
        if grid.isna().any():
            assumptions.append("kernels without a grid size count as using every SM")
    else:
        per["sm_active"] = pd.Series(1.0, index=r.index)
        assumptions.append("no SM count: every kernel counts as using every SM")
    if not c:
        assumptions.append("no device ceilings: pipe ratios (tensor/fp*) not predicted")
    busy: dict[str, float | None] = {"gr_active": 1.0 if total > 0 else None}
    coverage: dict[str, float] = {"gr_active": 1.0 if total > 0 else 0.0}
    for metric, x in per.items():
        known = x.notna()
        kt = float(d[known].sum())
        busy[metric] = float((x[known] * d[known]).sum() / kt) if kt > 0 else None
        coverage[metric] = kt / total if total > 0 else 0.0
    labels = r["label"].fillna("unknown") if "label" in r.columns else pd.Series("unknown", index=r.index)
    mix = (d.groupby(labels).sum() / total).to_dict() if total > 0 else {}
    return {"kernels": len(r), "kernel_time_s": total, "busy": busy, "coverage": coverage,
            "mix": {str(k): float(v) for k, v in mix.items()}, "assumptions": assumptions}


def compare_signature(predicted: dict[str, Any], windows_df: pd.DataFrame) -> list[dict[str, Any]]:
    """Predicted vs observed DCGM ratios over the job's windows (columns ``gr_active``,
    ``sm_active``, ``tensor_active``, ``dram_active``, ...; the window means).

    One dict per metric: ``metric``, ``predicted_busy`` (while kernels run), ``expected`` (scaled
    by the observed busy fraction), ``observed``, ``ratio``, ``verdict`` (``agrees``/``lower``/
    ``higher``/``unmeasured``), ``meaning``. The first row is ``gr_active`` (time in kernels).
    """
    obs = {m: column(windows_df, m).mean() for m in ("gr_active", *COMPARED)}
    busy_obs = obs["gr_active"]
    rows: list[dict[str, Any]] = []
    if np.isfinite(busy_obs):
        busy = float(busy_obs)
        outside = 1.0 - busy
        verdict = "agrees" if busy >= BUSY_OK else "lower"
        meaning = (f"The GPU ran kernels {busy:.0%} of the job's time, as the profile assumes."
                   if verdict == "agrees" else
                   f"{outside:.0%} of the job's time the GPU ran no kernel: time outside the profiled "
                   "kernels (host-side overhead, data loading, synchronisation, communication waits, "
                   "checkpointing). ncu timings cover only kernel time.")
        rows.append({"metric": "gr_active", "predicted_busy": 1.0, "expected": 1.0,
                     "observed": busy, "ratio": busy, "verdict": verdict, "meaning": meaning})
    else:
        busy = 1.0
        rows.append({"metric": "gr_active", "predicted_busy": 1.0, "expected": 1.0, "observed": None,
                     "ratio": None, "verdict": "unmeasured",
                     "meaning": "DCGM_FI_PROF_GR_ENGINE_ACTIVE not collected: the comparison "
                                "assumes the GPU ran kernels all the time."})
    for metric in COMPARED:
        p = predicted.get("busy", {}).get(metric)
        if p is None:
            continue
        expected = busy * float(p)
        o = obs[metric]
        if not np.isfinite(o):
            rows.append({"metric": metric, "predicted_busy": p, "expected": expected, "observed": None,
                         "ratio": None, "verdict": "unmeasured",
                         "meaning": "DCGM did not collect this field for these windows."})
            continue
        o = float(o)
        tol = max(ABS_TOL, REL_TOL * expected)
        verdict = "agrees" if abs(o - expected) <= tol else ("lower" if o < expected else "higher")
        if verdict == "agrees":
            meaning = "DCGM matches the profiled kernel mix."
        else:
            meaning = MEANING.get((metric, verdict), PIPE_MEANING[verdict])
        rows.append({"metric": metric, "predicted_busy": float(p), "expected": expected, "observed": o,
                     "ratio": o / expected if expected > 0 else None, "verdict": verdict,
                     "meaning": meaning})
    return rows


def kernel_join(results: pd.DataFrame, windows_df: pd.DataFrame,
                ceilings: Mapping[str, float] | Any | None = None) -> dict[str, Any]:
    """The document's ``kernel_join`` entry (rendered by ``reports.fleet_sections``):
    ``{"predicted": predict_signature(...), "comparison": compare_signature(...)}``."""
    predicted = predict_signature(results, ceilings)
    return {"predicted": predicted, "comparison": compare_signature(predicted, windows_df)}


# ------------------------------------------------------------------------- fleet: one job's windows
JOIN_FILTERS = ("job", "pod", "namespace", "host")  # window columns a join may select on
MAX_SHOWN = 5  # values named when a filter matches nothing


@dataclass(frozen=True)
class JoinRequest:
    """``rooftop fleet --kernels``: the profiled kernels (flat results) and which windows they
    ran in (``column == value``; every window of the period when ``column`` is None)."""

    results: pd.DataFrame
    column: str | None = None
    value: str | None = None
    ceilings: Any = None
    profiles: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        if self.column is not None and self.column not in JOIN_FILTERS:
            raise ValueError(f"cannot select windows by {self.column!r}; choose from {JOIN_FILTERS}")

    @property
    def label(self) -> str:
        return "every window" if self.column is None else f"{self.column} = {self.value}"


def select_windows(windows: pd.DataFrame, column: str | None, value: str | None) -> pd.DataFrame:
    """The windows whose ``column`` equals ``value`` (all of them when ``column`` is None).

    Raises ``InputError`` naming a few values present when nothing matches."""
    if column is None:
        if not len(windows):
            raise InputError("--kernels", "the period holds no DCGM windows to compare with",
                             "pick a period with samples (--since/--until)")
        return windows
    have = (windows[column].astype("string") if column in windows.columns
            else pd.Series(pd.NA, index=windows.index, dtype="string"))
    picked = windows[(have == str(value)).fillna(False).to_numpy(dtype=bool)]
    if not len(picked):
        present = sorted(str(v) for v in have.dropna().unique())
        shown = ", ".join(present[:MAX_SHOWN]) + (f" (+{len(present) - MAX_SHOWN} more)"
                                                  if len(present) > MAX_SHOWN else "")
        raise InputError(f"--{column}", f"{value!r} matches no DCGM window in the period",
                         f"{column} values present: {shown}" if present
                         else f"the dataset carries no {column} label in this period")
    return picked


def fleet_join(request: JoinRequest, windows: pd.DataFrame) -> dict[str, Any]:
    """The fleet document's ``kernel_join``: ``kernel_join`` over the selected windows, plus
    ``selection`` (filter, profiles, windows, GPUs, first/last window start)."""
    picked = select_windows(windows, request.column, request.value)
    out = kernel_join(request.results, picked, request.ceilings)
    gpus = [c for c in ("host", "gpu", "mig") if c in picked.columns]
    start = pd.to_datetime(picked["start"], utc=True) if "start" in picked.columns else None
    out["selection"] = {
        "filter": request.label, "column": request.column, "value": request.value,
        "profiles": list(request.profiles), "windows": len(picked),
        "gpus": int(picked[gpus].drop_duplicates().shape[0]) if gpus else None,
        "first": start.min().isoformat() if start is not None else None,
        "last": start.max().isoformat() if start is not None else None,
    }
    return out
