"""DCGM 4.6 cumulative profiling counters (fields 1084-1090, 1093-1096: raw monotonic counts of SM
cycles elapsed, SM cycles with an active warp, and tensor / pipe cycles active; NVIDIA/DCGM
``dcgm_fields.h`` v4.6.0) as exact window averages (docs/formulas.md#counters).

Samples of one GPU are differenced in time order: each interval between consecutive sample times
at which the GPU reports every counter it has becomes one row per counter at the interval's end,
valued at the counter's increase (the PCIe byte totals 1091/1092: the increase over the interval's
length, bytes/s). A window's mean of these rows is then the sum of increases over
its intervals divided by their number, the same divisor for every counter, so
``pipe / elapsed`` of the window means is ``sum(d pipe) / sum(d elapsed)``: the exact share of
elapsed SM cycles the pipe was active. An interval where any counter drops (a reset: driver reload,
GPU reset, exporter restart) is rejected and counted, never read as a negative increase; an
interval where a counter is missing at either end is skipped.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column

ELAPSED = 1084
COUNTER_IDS: tuple[int, ...] = (1084, 1085, 1086, 1087, 1088, 1089, 1090, 1091, 1092, 1093, 1094, 1095, 1096)
BYTE_COUNTERS = (1091, 1092)  # PCIe bytes: the interval's increase over its length, bytes/s
# the window column of each counter's increases, and the activity ratio it gives over 1084's
DELTA_COLUMNS: dict[int, str] = {
    1084: "d_sm_cycles_elapsed", 1085: "d_sm_cycles_active", 1086: "d_mma_cycles_active",
    1088: "d_hmma_cycles_active", 1089: "d_imma_cycles_active", 1090: "d_dfma_cycles_active",
    1094: "d_fp64_cycles_active", 1095: "d_fp32_cycles_active", 1096: "d_fp16_cycles_active",
    1091: "pcie_tx_total_bytes_s", 1092: "pcie_rx_total_bytes_s",
}
RATIO_OF: dict[str, str] = {
    "d_sm_cycles_active": "sm_active", "d_mma_cycles_active": "tensor_active",
    "d_hmma_cycles_active": "hmma_active", "d_imma_cycles_active": "imma_active",
    "d_dfma_cycles_active": "dfma_active", "d_fp64_cycles_active": "fp64_active",
    "d_fp32_cycles_active": "fp32_active", "d_fp16_cycles_active": "fp16_active",
}
_IDENTITY = ("host", "gpu", "uuid", "pci_bus_id", "mig")


@dataclass(frozen=True)
class Differenced:
    samples: pd.DataFrame  # counter rows replaced by their increases per interval
    intervals: int  # intervals read
    resets: int  # intervals rejected: a counter dropped


def difference(df: pd.DataFrame) -> Differenced:
    """Replace the cumulative counter rows of ``df`` (a sample frame: timestamp, field_id, value,
    identity and label columns) by their increases per interval; other rows unchanged."""
    if not len(df):
        return Differenced(df, 0, 0)
    fid = df["field_id"].to_numpy()
    is_counter = np.isin(fid, COUNTER_IDS)
    if not is_counter.any():
        return Differenced(df, 0, 0)
    rest, cnt = df[~is_counter], df[is_counter]
    ident = [c for c in _IDENTITY if c in cnt.columns]
    key = pd.Series(np.zeros(len(cnt), dtype="int64"), index=cnt.index) if not ident else \
        cnt[ident].astype("object").where(cnt[ident].notna(), "\x00").astype(str).agg("\x1f".join, axis=1)
    out: list[pd.DataFrame] = []
    intervals = resets = 0
    for _k, rows in cnt.groupby(key.to_numpy(), sort=False):
        wide = rows.pivot_table(index="timestamp", columns="field_id", values="value", aggfunc="last").sort_index()
        if len(wide) < 2:
            continue
        v = wide.to_numpy(dtype="float64")
        d = v[1:] - v[:-1]
        complete = np.isfinite(d).all(axis=1)
        drop = complete & (d < 0).any(axis=1)
        ok = complete & ~drop
        intervals += int(ok.sum())
        resets += int(drop.sum())
        if not ok.any():
            continue
        ends = wide.index[1:][ok]
        dt = np.asarray((wide.index[1:] - wide.index[:-1]) / pd.Timedelta(seconds=1), dtype="float64")[ok]
        last = rows.sort_values("timestamp", kind="stable").drop_duplicates("timestamp", keep="last")
        last = last.set_index("timestamp").loc[ends]
        for j, f in enumerate(wide.columns):
            part = last.reset_index().copy()
            part["field_id"] = np.asarray(f, dtype=df["field_id"].dtype)
            part["value"] = d[ok, j] / dt if int(f) in BYTE_COUNTERS else d[ok, j]
            out.append(part[list(df.columns)])
    if not out:
        return Differenced(rest, intervals, resets)
    merged = pd.concat([rest, *out], ignore_index=True) if len(rest) else pd.concat(out, ignore_index=True)
    return Differenced(merged.sort_values("timestamp", kind="stable", ignore_index=True), intervals, resets)


def counter_lint(d: Differenced) -> list[dict[str, object]]:
    """Lint ``dcgm-counter-reset`` where intervals were rejected because a counter dropped."""
    if not d.resets:
        return []
    return [{"code": "dcgm-counter-reset", "kernels": [],
             "message": f"{d.resets} interval(s) rejected: a cumulative DCGM counter (fields 1084-1096) dropped "
                        f"(driver reload, GPU reset or exporter restart), {d.intervals} read; the windows use "
                        "only intervals where every counter rose or held (docs/formulas.md#counters)"}]


def counter_ratios(w: pd.DataFrame) -> pd.DataFrame:
    """Set each activity ratio a counter gives (``d pipe / d elapsed`` of the window) where the
    window has both; a ratio above 1 (a counter not counted as the elapsed one is) is left unknown.
    Returns ``w`` itself when it holds no counter column."""
    if "d_sm_cycles_elapsed" not in w.columns:
        return w
    el = pd.to_numeric(w["d_sm_cycles_elapsed"], errors="coerce").to_numpy(dtype="float64")
    new: dict[str, np.ndarray] = {}
    for dcol, target in RATIO_OF.items():
        if dcol not in w.columns:
            continue
        dv = pd.to_numeric(w[dcol], errors="coerce").to_numpy(dtype="float64")
        with np.errstate(invalid="ignore", divide="ignore"):
            r = np.where((el > 0) & np.isfinite(dv), dv / el, np.nan)
        r = np.where(r <= 1.0 + 1e-9, np.minimum(r, 1.0), np.nan)
        base = column(w, target).to_numpy(dtype="float64")
        new[target] = np.where(np.isfinite(r), r, base)
    if not new:
        return w
    return w.assign(**new)
