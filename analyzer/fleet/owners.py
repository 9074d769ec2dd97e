"""The morning questions of a fleet report (docs/formulas.md#fleet, "Owners", "Allocated but idle",
"Coverage"): who used how many GPU-hours (busy / idle / unknown, against the previous period), which
GPUs a workload held while idle, and how much of each host's time the data covers.

Input: classified windows (``analyzer.windows.rules.classify_windows``) with ``covered_s``,
``gpu_share`` and the workload labels the exporter carried (``job`` from ``hpc_job``-style labels,
``namespace``, ``pod``).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.fleet.rollup import gpu_seconds
from rooftop.analyzer.metrics.columns import column
from rooftop.analyzer.windows.identity import physical_ids
from rooftop.analyzer.windows.ofu import weighted_ofu

BUSY = ("compute-bound", "memory-bound", "overhead-bound", "mixed")
IDLE_HELD_SHARE = 0.9  # a GPU held by a workload whose covered time is >= 90 % idle: allocated but idle
MAX_ROWS = 50


def _label(w: pd.DataFrame, c: str) -> np.ndarray:
    if c not in w.columns:
        return np.full(len(w), None, dtype=object)
    v = w[c].astype("object").to_numpy()
    return np.array([x if isinstance(x, str) and x else None for x in v], dtype=object)


def owners_of(w: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Each window's owner and its kind: the job label, else namespace/pod, else the namespace,
    else the host (nothing in the data names a workload: ``host``)."""
    job, ns, pod, host = (_label(w, c) for c in ("job", "namespace", "pod", "host"))
    has_job, has_pod, has_ns = job != None, pod != None, ns != None  # noqa: E711 - elementwise
    ns_pod = np.where(has_ns & has_pod, np.char.add(np.char.add(ns.astype(str), "/"), pod.astype(str)).astype(object),
                      pod)
    owner = np.where(has_job, job, np.where(has_pod, ns_pod, np.where(has_ns, ns, host)))
    owner = np.where(owner == None, "(no host)", owner).astype(object)  # noqa: E711
    kind = np.select([has_job, has_pod, has_ns], ["job", "pod", "namespace"], "host").astype(object)
    return owner, kind


def _hours(w: pd.DataFrame, window_s: float) -> pd.DataFrame:
    owner, kind = owners_of(w)
    lab = w["label"].astype("object").where(w["label"].notna(), "unknown").astype(str).to_numpy()
    h = gpu_seconds(w, window_s) / 3600.0
    est = column(w, "est_ofu").to_numpy(dtype="float64")
    return pd.DataFrame({"owner": owner, "kind": kind, "gpu": physical_ids(w), "h": h, "ofu": est,
                         "busy": np.where(np.isin(lab, BUSY), h, 0.0), "idle": np.where(lab == "idle", h, 0.0),
                         "unknown": np.where(lab == "unknown", h, 0.0)})


def owner_rows(windows: pd.DataFrame, previous: pd.DataFrame, window_s: float) -> list[dict[str, Any]]:
    """GPU-hours by owner, busy / idle / unknown, the previous period's GPU-hours (None: new), and
    the GPU-hour-weighted OFU estimate over the windows that have one (docs/formulas.md#ofu)."""
    if not len(windows):
        return []
    cur = _hours(windows, window_s)
    eff = {(str(k), str(o)): weighted_ofu(d["ofu"].to_numpy(), d["h"].to_numpy())
           for (k, o), d in cur.groupby(["kind", "owner"], sort=False)}
    g = cur.groupby(["kind", "owner"], sort=False).agg(
        gpus=("gpu", "nunique"), gpu_hours=("h", "sum"), busy=("busy", "sum"), idle=("idle", "sum"),
        unknown=("unknown", "sum")).reset_index()
    prev: dict[tuple[str, str], float] = {}
    if len(previous) and "label" in previous.columns:
        p = _hours(previous, window_s).groupby(["kind", "owner"], sort=False)["h"].sum()
        prev = {(str(k), str(o)): float(v) for (k, o), v in p.items()}
    g = g.sort_values(["gpu_hours", "owner"], ascending=[False, True], kind="stable")
    out = []
    for r in g.head(MAX_ROWS).to_dict("records"):
        key = (str(r["kind"]), str(r["owner"]))
        before = prev.get(key)
        out.append({"owner": r["owner"], "kind": r["kind"], "gpus": int(r["gpus"]),
                    "gpu_hours": float(r["gpu_hours"]), "busy_hours": float(r["busy"]),
                    "idle_hours": float(r["idle"]), "unknown_hours": float(r["unknown"]),
                    "previous_gpu_hours": before, "ofu": eff[key][0], "ofu_hours": eff[key][1]})
    return out


def allocated_idle(windows: pd.DataFrame, window_s: float) -> list[dict[str, Any]]:
    """Physical GPUs a workload label (job, pod or namespace) held while >= 90 % of their covered
    time was idle, by idle GPU-hours."""
    if not len(windows):
        return []
    cur = _hours(windows, window_s)
    cur = cur[cur["kind"] != "host"]
    if not len(cur):
        return []
    hosts = pd.Series(_label(windows, "host"), index=windows.index).loc[cur.index]
    cur = cur.assign(host=hosts.to_numpy())
    g = cur.groupby(["gpu", "owner"], sort=False).agg(
        host=("host", "first"), gpu_hours=("h", "sum"), idle=("idle", "sum")).reset_index()
    g = g[(g["gpu_hours"] > 0) & (g["idle"] >= IDLE_HELD_SHARE * g["gpu_hours"])]
    g = g.sort_values(["idle", "gpu"], ascending=[False, True], kind="stable")
    return [{"gpu": r["gpu"], "host": r["host"], "owner": r["owner"], "idle_hours": float(r["idle"]),
             "gpu_hours": float(r["gpu_hours"])} for r in g.head(MAX_ROWS).to_dict("records")]


def host_coverage(windows: pd.DataFrame, window_s: float, lo_ms: int, hi_ms: int) -> list[dict[str, Any]]:
    """Per host: its physical GPUs, the GPU-hours its samples cover, and that as a share of GPUs x
    the period (what is missing is data gaps: exporter down, scrapes failed, host off)."""
    if not len(windows):
        return []
    period_h = max(hi_ms - lo_ms, 1) / 3_600_000.0
    df = pd.DataFrame({"host": _label(windows, "host"), "gpu": physical_ids(windows),
                       "h": gpu_seconds(windows, window_s) / 3600.0})
    df["host"] = df["host"].fillna("(no host)")
    g = df.groupby("host", sort=True).agg(gpus=("gpu", "nunique"), covered=("h", "sum")).reset_index()
    g["share"] = g["covered"] / (g["gpus"] * period_h)
    g = g.sort_values(["share", "host"], kind="stable")
    return [{"host": r["host"], "gpus": int(r["gpus"]), "covered_hours": float(r["covered"]),
             "coverage": float(r["share"])} for r in g.head(MAX_ROWS).to_dict("records")]
