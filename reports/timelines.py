"""DCGM views: per-GPU timelines (label bands and activity ratios), label shares of window time.

Only the document dict is read; plot text goes through :func:`ptext`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from rooftop.reports.formatting import fmt_num, fmt_pct, num_column
from rooftop.reports.widgets import (
    LABEL_COLORS,
    Column,
    Section,
    esc,
    figure,
    finding_html,
    ptext,
    table,
)

MAX_TIMELINES = 16          # GPUs with a timeline figure


MAX_SERIES_POINTS = 1000    # samples per timeline series (stride-decimated above this)


MAX_BANDS = 400             # label bands per timeline
WINDOW_LABELS = ("compute-bound", "memory-bound", "overhead-bound", "mixed", "idle", "unknown")
LIST_ROWS = 300           # rows per label-share table shown in the page


_FRAME_CACHE: list[tuple[Sequence[Mapping[str, Any]], int, pd.DataFrame]] = []


def window_frame(windows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Windows as columns (host, gpu, gpu_key, namespace, pod, label, start, end, seconds,
    flops_s, dram_s, m = metrics dict). Built once per windows list and render (cached)."""
    for cached, n, frame in _FRAME_CACHE:
        if cached is windows and n == len(windows):
            return frame
    hosts = [w.get("host") for w in windows]
    gpus = [w.get("gpu") for w in windows]
    # the analyzer's gpu_key (host/gpu/mig) when the document has it; older documents: host:gpu
    keys = [str(w["gpu_key"]) if w.get("gpu_key") else f"{h}:{g}" if h not in (None, "") else str(g)
            for w, h, g in zip(windows, hosts, gpus, strict=True)]
    df = pd.DataFrame({
        "host": pd.Series(hosts, dtype=object), "gpu": pd.Series(gpus, dtype=object),
        "gpu_key": pd.Series(keys, dtype=object),
        "namespace": pd.Series([w.get("namespace") for w in windows], dtype=object),
        "pod": pd.Series([w.get("pod") for w in windows], dtype=object),
        "label": pd.Series([str(w.get("label") or "mixed") for w in windows], dtype=object),
        "start": pd.to_datetime(pd.Series([w.get("start") for w in windows], dtype=object), utc=True,
                                errors="coerce", format="ISO8601"),
        "end": pd.to_datetime(pd.Series([w.get("end") for w in windows], dtype=object), utc=True,
                              errors="coerce", format="ISO8601"),
        "flops_s": num_column(windows, "est_flops_s"),
        "dram_s": num_column(windows, "est_dram_bytes_s"),
        "m": pd.Series([w.get("metrics") or {} for w in windows], dtype=object),
    })
    secs = (df["end"] - df["start"]).dt.total_seconds()
    df["seconds"] = secs.where(secs > 0, 0.0).fillna(0.0)
    _FRAME_CACHE[:] = [(windows, len(windows), df)]
    return df


def windows_share_rows(windows: Sequence[Mapping[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Label shares of window time per GPU, host, namespace and pod (rows sorted by GPU-hours)."""
    df = window_frame(windows)
    out: dict[str, list[dict[str, Any]]] = {}
    for key, col in (("gpu", "gpu_key"), ("host", "host"), ("namespace", "namespace"), ("pod", "pod")):
        sub = df[df[col].notna() & (df[col].astype(str) != "")]
        if not len(sub) or (key == "host" and sub[col].nunique() < 1):
            continue
        piv = sub.pivot_table(index=col, columns="label", values="seconds", aggfunc="sum", fill_value=0.0)
        total = piv.sum(axis=1)
        shares = piv.div(total.where(total > 0, 1.0), axis=0)
        rows = []
        for grp in total.sort_values(ascending=False).index:
            row: dict[str, Any] = {"group": str(grp), "hours": float(total[grp]) / 3600.0}
            row.update({str(lab): float(shares.loc[grp, lab]) for lab in shares.columns})
            rows.append(row)
        out[key] = rows
    return out


def label_share_figure(rows: Sequence[Mapping[str, Any]], key: str, labels: Sequence[str]) -> dict[str, Any]:
    """Stacked horizontal bars: label share of GPU time per group."""
    groups = [ptext(r["group"], 60) for r in rows]
    traces = [{"type": "bar", "orientation": "h", "name": lab, "y": groups,
               "x": [float(r.get(lab, 0.0)) for r in rows], "marker": {"color": LABEL_COLORS.get(lab, "#555")},
               "hovertemplate": "%{y}: %{x:.1%}<extra>" + ptext(lab) + "</extra>"}
              for lab in labels if any(r.get(lab) for r in rows)]
    return figure(traces, {"barmode": "stack", "xaxis": {"tickformat": ".0%", "range": [0, 1]},
                           "yaxis": {"automargin": True, "autorange": "reversed"}},
                  title=f"label share by {key}", height=min(120 + 22 * len(rows), 1400))


_RATIOS = (("gr_active", "#495057"), ("sm_active", "#1971c2"), ("tensor_active", "#2b8a3e"),
           ("dram_active", "#d9480f"))
# NVML / nvidia-smi signals: coarse (GPU_UTIL = any kernel resident in the sample period)
_COARSE_RATIOS = (("gpu_util", "GPU util (NVML, coarse)", "#5f3dc4"),
                  ("mem_copy_util", "memory util (NVML, coarse)", "#c2255c"))
_COARSE_UNITS = (("power_w", "power W (NVML)", "#e67700", "y"), ("sm_clock_mhz", "SM clock MHz", "#1098ad", "y2"),
                 ("mem_clock_mhz", "memory clock MHz", "#0b7285", "y2"))


def _decimate(n: int) -> slice:
    return slice(None, None, max(1, math.ceil(n / MAX_SERIES_POINTS)))


def timeline_figures(doc: Mapping[str, Any]) -> tuple[list[dict[str, Any]], str]:
    """Per-GPU timelines: label bands (one per run of equal labels) plus the key activity ratios.

    Uses ``doc["timelines"]`` when present ({gpu_key: {"t": [...], "gr_active": [...], ...}}),
    otherwise the window metrics themselves.
    """
    windows = doc.get("windows") or []
    df = window_frame(windows)
    timelines = doc.get("timelines") if isinstance(doc.get("timelines"), Mapping) else None
    by_key = {k: g.sort_values("start") for k, g in df.groupby("gpu_key", sort=False)}
    alias: dict[str, str] = {}
    for k, g in by_key.items():
        h, gp = g["host"].iloc[0], g["gpu"].iloc[0]
        for a in (k, f"{h}/{gp}", f"{h}|{gp}", f"{h}:{gp}", str(gp)):
            alias.setdefault(a, k)
    keys = list(timelines.keys()) if timelines else sorted(by_key, key=lambda k: -by_key[k]["seconds"].sum())
    notes = []
    if len(keys) > MAX_TIMELINES:
        notes.append(f"Timelines for {MAX_TIMELINES} of {len(keys)} GPUs; label shares below cover all.")
        keys = keys[:MAX_TIMELINES]
    figs = []
    for key in keys:
        g = by_key.get(alias.get(str(key), str(key)))
        traces: list[dict[str, Any]] = []
        extra: dict[str, Any] | None = None
        if timelines:
            series = timelines[key] or {}
            t_raw = list(series.get("t") or [])
            sl = _decimate(len(t_raw))
            t = _epoch_ms(t_raw[sl])
            for name, color in _RATIOS:
                vals = series.get(name)
                if vals is None or len(vals) != len(t_raw) or all(v is None for v in vals):
                    continue
                traces.append({"type": "scatter", "mode": "lines", "name": name, "x": t,
                               "y": _ratios(list(vals)[sl]),
                               "line": {"color": color, "width": 1.2, "shape": "hv"}})
            for name, title, color in _COARSE_RATIOS:
                vals = series.get(name)
                if vals is not None and len(vals) == len(t_raw):
                    traces.append({"type": "scatter", "mode": "lines", "name": title, "x": t,
                                   "y": _ratios(list(vals)[sl]),
                                   "line": {"color": color, "width": 1.2, "shape": "hv", "dash": "dot"}})
            extra = _coarse_figure(key, series, t, sl, len(t_raw))
        elif g is not None:
            sl = _decimate(len(g))
            t = _epoch_ms(g["start"].iloc[sl])
            for name, color in _RATIOS:
                vals = _ratios([m.get(name) for m in g["m"].iloc[sl]])
                if any(v is not None for v in vals):
                    traces.append({"type": "scatter", "mode": "lines", "name": name, "x": t, "y": vals,
                                   "line": {"color": color, "width": 1.2, "shape": "hv"}})
        shapes = _bands(g) if g is not None else []
        for lab in dict.fromkeys(g["label"]) if g is not None else []:
            traces.append({"type": "scatter", "mode": "markers", "x": [None], "y": [None],
                           "name": f"window: {ptext(lab)}", "hoverinfo": "skip",
                           "marker": {"symbol": "square", "size": 10, "color": LABEL_COLORS.get(lab, "#555")}})
        layout: dict[str, Any] = {"shapes": shapes, "yaxis": {"range": [0, 1.12], "title": {"text": "ratio"}},
                                  "xaxis": {"type": "date"}}
        if not any(t.get("mode") == "lines" for t in traces):  # nothing but the label bands
            layout["annotations"] = [{"text": "no activity field in this input: label bands only", "xref": "paper",
                                      "yref": "paper", "x": 0.5, "y": 0.45, "showarrow": False}]
        figs.append(figure(traces, layout, title=f"GPU {ptext(key, 80)}", height=300))
        if extra is not None:
            figs.append(extra)
    if not windows:
        notes.append("No DCGM windows.")
    window = doc.get("window") if isinstance(doc.get("window"), Mapping) else None
    if window and window.get("reason"):
        notes.append(f"Windows: {window.get('reason')}.")
    notes.append("Label bands (top strip) and activity ratios per GPU.")
    if any(isinstance(v, Mapping) and any(c in v for c, *_r in (*_COARSE_RATIOS, *_COARSE_UNITS))
           for v in (timelines or {}).values()):
        notes.append("Dotted lines and the power/clock charts are NVML/nvidia-smi signals, coarse: GPU util "
                     "counts any kernel resident in the sample period, not how busy the SMs are.")
    return figs, " ".join(notes)


def _coarse_figure(key: Any, series: Mapping[str, Any], t: list[int | None], sl: slice,
                   n: int) -> dict[str, Any] | None:
    """Power (W, left axis) and clocks (MHz, right axis) of one GPU when its timeline has them."""
    traces = []
    for name, title, color, axis in _COARSE_UNITS:
        vals = series.get(name)
        if vals is None or len(vals) != n:
            continue
        y = [round(float(v), 2) if isinstance(v, (int, float)) and math.isfinite(v) else None
             for v in list(vals)[sl]]
        traces.append({"type": "scatter", "mode": "lines", "name": title, "x": t, "y": y, "yaxis": axis,
                       "line": {"color": color, "width": 1.2, "shape": "hv"}})
    if not traces:
        return None
    layout = {"xaxis": {"type": "date"}, "yaxis": {"title": {"text": "W"}, "rangemode": "tozero"},
              "yaxis2": {"title": {"text": "MHz"}, "overlaying": "y", "side": "right", "rangemode": "tozero"}}
    return figure(traces, layout, title=f"GPU {ptext(key, 80)}: power and clocks (NVML, coarse)", height=240)


def _ms(ts: pd.Timestamp) -> int:
    return int((ts - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(milliseconds=1))


def _epoch_ms(values: Any) -> list[int | None]:
    """Times as epoch milliseconds (plotly date axes take them; far smaller than ISO strings)."""
    ts = pd.to_datetime(pd.Series(list(values), dtype=object), utc=True, errors="coerce", format="ISO8601")
    ms = (ts - pd.Timestamp(0, tz="UTC")) // pd.Timedelta(milliseconds=1)
    return [None if pd.isna(v) else int(v) for v in ms]


def _ratios(values: Sequence[Any]) -> list[float | None]:
    return [round(float(v), 4) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
            else None for v in values]


def _bands(g: pd.DataFrame) -> list[dict[str, Any]]:
    """Rectangles along the top strip, one per run of consecutive windows with the same label."""
    g = g[g["start"].notna() & g["end"].notna()]
    if not len(g):
        return []
    run_id = (g["label"] != g["label"].shift()).cumsum()
    runs = g.groupby(run_id, sort=False).agg(label=("label", "first"), start=("start", "min"), end=("end", "max"))
    if len(runs) > MAX_BANDS:
        runs = runs.iloc[:: math.ceil(len(runs) / MAX_BANDS)]
    return [{"type": "rect", "xref": "x", "yref": "paper", "x0": _ms(r.start), "x1": _ms(r.end),
             "y0": 0.93, "y1": 1.0, "line": {"width": 0}, "fillcolor": LABEL_COLORS.get(r.label, "#555"),
             "opacity": 0.85, "layer": "below"} for r in runs.itertuples()]


def dcgm_sections(doc: dict[str, Any]) -> list[Section] | None:
    windows = doc.get("windows") or []
    if not windows:
        return None
    out: list[Section] = []
    figs, note = timeline_figures(doc)
    out.append(Section("GPU timelines", f'<p class="note">{esc(note)}</p>', plots=figs,
                       anchor="timelines"))
    body = []
    plots = []
    for key, rows in windows_share_rows(windows).items():
        if len(rows) < 1:
            continue
        body.append(f"<h3>Label share of GPU time by {esc(key)}</h3>")
        cols = [Column("group", key)] + [Column(lab, lab, fmt_pct, numeric=True) for lab in WINDOW_LABELS]
        cols.append(Column("hours", "GPU-hours", lambda v: fmt_num(v), numeric=True))
        body.append(f'<div class="tablewrap">{table(rows[:LIST_ROWS], cols)}</div>')
        if key in ("gpu", "host") and 1 < len(rows) <= 200:
            plots.append(label_share_figure(rows, key, WINDOW_LABELS))
    out.append(Section("GPU label shares", "".join(body), plots=plots, anchor="shares"))
    wf = [f for f in doc.get("findings") or [] if f.get("source") == "dcgm"]
    if wf:
        kernels = list(doc.get("kernels") or [])
        items = "".join(finding_html(f, kernels) for f in wf)
        out.append(Section("Window findings", f'<ol class="findings">{items}</ol>', anchor="wfindings"))
    return out
