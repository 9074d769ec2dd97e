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
interval where a counter is missing at either end, or longer than the gap rule (:func:`gap_limit_s`),
is skipped. :func:`across` reads the intervals between tables differenced apart (fleet's files).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.metrics.columns import column
from rooftop.analyzer.windows.gaps import gap_limit

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
    gaps: int = 0  # intervals longer than the gap rule: missing data, not an interval
    reset_hosts: tuple[tuple[str | None, int], ...] = ()  # (host, interval end in epoch ms) of each reset
    edges: pd.DataFrame | None = None  # with ``edges=True``: each series' first and last counter rows
    ends_ms: np.ndarray | None = None  # with ``edges=True``: end (epoch ms) of every interval read


def _ms(ts: pd.Series) -> np.ndarray:
    """Epoch ms of a timestamp column (any resolution, tz-aware or naive UTC)."""
    t = pd.to_datetime(ts, utc=True).dt.tz_localize(None).astype("datetime64[ms]")
    return np.asarray(t.to_numpy()).astype("int64")


def _series_key(cnt: pd.DataFrame) -> np.ndarray:
    ident = [c for c in _IDENTITY if c in cnt.columns]
    if not ident:
        return np.zeros(len(cnt), dtype="int64")
    return np.asarray(cnt[ident].astype("object").where(cnt[ident].notna(), "\x00").astype(str)
                      .agg("\x1f".join, axis=1).to_numpy())


def gap_limit_s(step_s: float, floor_s: float | None) -> float:
    """Longest interval read as one: :data:`~rooftop.analyzer.windows.gaps.GAP_STEPS` x max(the series' median step, the
    window) (docs/formulas.md#counters "Gaps"); infinite when neither is known."""
    return float(gap_limit(step_s, floor_s if floor_s is not None else np.nan))


def difference(df: pd.DataFrame, gap_floor_s: float | None = None, edges: bool = False) -> Differenced:
    """Replace the cumulative counter rows of ``df`` (a sample frame: timestamp, field_id, value,
    identity and label columns) by their increases per interval; other rows unchanged.

    An interval longer than :func:`gap_limit_s` (``gap_floor_s``: the window length) is a gap,
    skipped. ``edges``: also return each series' rows at its first and last counter time, with its
    median step (``_step_s``), so intervals between two tables (two files of a fleet dataset) can be
    differenced later (:func:`across`)."""
    if not len(df):
        return Differenced(df, 0, 0)
    fid = df["field_id"].to_numpy()
    is_counter = np.isin(fid, COUNTER_IDS)
    if not is_counter.any():
        return Differenced(df, 0, 0)
    rest, cnt = df[~is_counter], df[is_counter]
    key = _series_key(cnt)
    out: list[pd.DataFrame] = []
    edge_rows: list[pd.DataFrame] = []
    ends: list[np.ndarray] = []
    reset_hosts: list[tuple[str | None, int]] = []
    intervals = resets = gaps = 0
    for _k, rows in cnt.groupby(key, sort=False):
        wide = rows.pivot_table(index="timestamp", columns="field_id", values="value", aggfunc="last").sort_index()
        last = rows.sort_values("timestamp", kind="stable").drop_duplicates("timestamp", keep="last")
        last = last.set_index("timestamp")
        dt = np.asarray((wide.index[1:] - wide.index[:-1]) / pd.Timedelta(seconds=1), dtype="float64")
        step = float(np.median(dt)) if len(dt) else float("nan")
        if edges:
            for t in ((wide.index[0], wide.index[-1]) if len(wide) > 1 else (wide.index[0],)):
                vals = wide.loc[t]
                e = last.loc[[t]].reset_index().iloc[np.zeros(len(vals), dtype="int64")].reset_index(drop=True)
                e["field_id"] = np.asarray(vals.index, dtype=df["field_id"].dtype)
                e["value"] = vals.to_numpy(dtype="float64")
                e["_step_s"] = step
                edge_rows.append(e[np.isfinite(e["value"].to_numpy())])
        if len(wide) < 2:
            continue
        v = wide.to_numpy(dtype="float64")
        d = v[1:] - v[:-1]
        gap = dt > gap_limit_s(step, gap_floor_s)
        complete = np.isfinite(d).all(axis=1) & ~gap
        drop = complete & (d < 0).any(axis=1)
        ok = complete & ~drop
        intervals += int(ok.sum())
        resets += int(drop.sum())
        gaps += int(gap.sum())
        if drop.any():
            host = last["host"] if "host" in last.columns else None
            for t in wide.index[1:][drop]:
                h = host.loc[t] if host is not None else None
                reset_hosts.append((h if isinstance(h, str) else None, int(pd.Timestamp(t).value // 1_000_000)))
        if not ok.any():
            continue
        end_t = wide.index[1:][ok]
        if edges:
            ends.append(_ms(pd.Series(end_t)))
        part0 = last.loc[end_t].reset_index()
        for j, f in enumerate(wide.columns):
            part = part0.copy()
            part["field_id"] = np.asarray(f, dtype=df["field_id"].dtype)
            part["value"] = d[ok, j] / dt[ok] if int(f) in BYTE_COUNTERS else d[ok, j]
            out.append(part[list(df.columns)])
    extra = {"gaps": gaps, "reset_hosts": tuple(reset_hosts)}
    if edges:
        extra |= {"edges": pd.concat(edge_rows, ignore_index=True) if edge_rows else None,
                  "ends_ms": np.concatenate(ends) if ends else np.zeros(0, dtype="int64")}
    if not out:
        return Differenced(rest, intervals, resets, **extra)  # type: ignore[arg-type]
    merged = pd.concat([rest, *out], ignore_index=True) if len(rest) else pd.concat(out, ignore_index=True)
    return Differenced(merged.sort_values("timestamp", kind="stable", ignore_index=True), intervals, resets,
                       **extra)  # type: ignore[arg-type]


def across(edges: pd.DataFrame | None, gap_floor_s: float, columns: list[str]) -> Differenced:
    """Intervals between tables differenced apart (fleet: two partition files or read runs of one GPU;
    docs/formulas.md#counters "Across files"): ``edges`` holds each table's first and last counter
    rows per series (:func:`difference` with ``edges=True``) and ``_run``, the table it came from.
    Per series (host, index, UUID, PCI bus id, MIG instance), tables in time order: the interval
    from one table's last counter time to the next table's first is read like one inside a table
    (every counter present at both ends, a drop is a reset) when the next begins after the other
    ends and the step is within :func:`gap_limit_s` of the larger of the two tables' median steps;
    else it is missing data. Returns the increase rows (``columns``), intervals, resets, gaps."""
    if edges is None or not len(edges):
        return Differenced(pd.DataFrame(columns=columns), 0, 0)
    e = edges.assign(_t=_ms(edges["timestamp"]), _k=_series_key(edges))
    out: list[pd.DataFrame] = []
    reset_hosts: list[tuple[str | None, int]] = []
    ends: list[int] = []
    intervals = resets = gaps = 0
    for _k, rows in e.groupby("_k", sort=True):
        runs = rows.groupby("_run", sort=False).agg(t0=("_t", "min"), t1=("_t", "max"), step=("_step_s", "max"))
        runs = runs.reset_index().sort_values(["t0", "t1", "_run"], kind="stable").to_numpy(dtype=object)
        for (run_a, _a0, a1, step_a), (run_b, b0, _b1, step_b) in itertools.pairwise(runs):
            if b0 <= a1:
                continue  # overlapping tables: no boundary interval
            dt = (b0 - a1) / 1000.0
            if dt > gap_limit_s(float(np.fmax(float(step_a), float(step_b))), gap_floor_s):
                gaps += 1
                continue
            a = rows[(rows["_run"] == run_a) & (rows["_t"] == a1)].drop_duplicates("field_id", keep="last")
            b = rows[(rows["_run"] == run_b) & (rows["_t"] == b0)].drop_duplicates("field_id", keep="last")
            va = a.set_index("field_id")["value"]
            vb = b.set_index("field_id")["value"]
            fields = sorted(set(va.index) | set(vb.index))
            d = vb.reindex(fields).to_numpy(dtype="float64") - va.reindex(fields).to_numpy(dtype="float64")
            if not np.isfinite(d).all():
                continue  # a counter missing at one end: skipped, as inside a table
            if (d < 0).any():
                resets += 1
                h = b["host"].iloc[0] if "host" in b.columns else None
                reset_hosts.append((h if isinstance(h, str) else None, int(b0)))
                continue
            intervals += 1
            ends.append(int(b0))
            part = b.set_index("field_id").loc[fields].reset_index()
            part["value"] = [x / dt if int(f) in BYTE_COUNTERS else x for f, x in zip(fields, d, strict=True)]
            out.append(part[columns])
    rows_out = pd.concat(out, ignore_index=True) if out else pd.DataFrame(columns=columns)
    return Differenced(rows_out, intervals, resets, gaps=gaps, reset_hosts=tuple(reset_hosts),
                       ends_ms=np.asarray(ends, dtype="int64"))


def counter_lint(d: Differenced) -> list[dict[str, object]]:
    """Lint ``dcgm-counter-reset`` where intervals were rejected because a counter dropped."""
    return reset_lint(d.resets, d.intervals, list(d.reset_hosts))


def reset_lint(resets: int, intervals: int, hosts: list[tuple[str | None, int]]) -> list[dict[str, object]]:
    """Lint ``dcgm-counter-reset``: ``resets`` intervals rejected (``hosts``: host and end of each),
    ``intervals`` read; the message counts them per host (docs/formulas.md#counters)."""
    if not resets:
        return []
    per: dict[str, int] = {}
    for h, _t in hosts:
        per[h or "(no host)"] = per.get(h or "(no host)", 0) + 1
    shown = sorted(per.items(), key=lambda kv: (-kv[1], kv[0]))
    by_host = ", ".join(f"{h} {n}" for h, n in shown[:10]) + (", ..." if len(shown) > 10 else "")
    return [{"code": "dcgm-counter-reset", "kernels": [],
             "message": f"{resets} interval(s) rejected: a cumulative DCGM counter (fields 1084-1096) dropped "
                        f"(driver reload, GPU reset or exporter restart), {intervals} read; the windows use "
                        f"only intervals where every counter rose or held (by host: {by_host}) "
                        "(docs/formulas.md#counters)"}]


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
