"""DCGM / nvidia-smi views: window labels and one chart per metric family (GPUs as series), label
shares of window time; static SVG drawn from the document only (docs/formulas.md#report-view)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.schema import WINDOW_LABELS_SHOWN, Document, Window
from rooftop.reports.escape import esc
from rooftop.reports.formatting import fmt_num, fmt_pct, num_column
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.svg_axes import TimeAxis
from rooftop.reports.svg_charts import (
    BUCKET_PX,
    MR,
    Line,
    Span,
    W,
    color,
    figure_html,
    hbars,
    label_margin,
    span_rows,
    time_chart,
)
from rooftop.reports.widgets import LABEL_COLORS, Column, Section, finding_html, table

MAX_TIMELINES = 16          # GPUs drawn as series (the rest are in the label-share tables)
LIST_ROWS = 300           # rows per label-share table shown in the page


_FRAME_CACHE: list[tuple[Sequence[Window], int, pd.DataFrame]] = []


def window_frame(windows: Sequence[Window]) -> pd.DataFrame:
    """Windows as columns (host, gpu, gpu_key, namespace, pod, label, start, end, seconds,
    flops_s, dram_s, m = metrics dict). Built once per windows list and render (cached)."""
    for cached, n, frame in _FRAME_CACHE:
        if cached is windows and n == len(windows):
            return frame
    hosts = [w.get("host") for w in windows]
    gpus = [w["gpu"] for w in windows]
    # the analyzer's gpu_key (host/gpu/mig) when the document has it; older documents: host:gpu
    keys = [w.get("gpu_key") or (f"{h}:{g}" if h not in (None, "") else g)
            for w, h, g in zip(windows, hosts, gpus, strict=True)]
    df = pd.DataFrame({
        "host": pd.Series(hosts, dtype=object), "gpu": pd.Series(gpus, dtype=object),
        "gpu_key": pd.Series(keys, dtype=object),
        "namespace": pd.Series([w.get("namespace") for w in windows], dtype=object),
        "pod": pd.Series([w.get("pod") for w in windows], dtype=object),
        "label": pd.Series([w["label"] for w in windows], dtype=object),
        "start": pd.to_datetime(pd.Series([w["start"] for w in windows], dtype=object), utc=True,
                                errors="coerce", format="ISO8601"),
        "end": pd.to_datetime(pd.Series([w["end"] for w in windows], dtype=object), utc=True,
                              errors="coerce", format="ISO8601"),
        "flops_s": num_column(windows, "est_flops_s"),
        "dram_s": num_column(windows, "est_dram_bytes_s"),
        "m": pd.Series([w["metrics"] for w in windows], dtype=object),
    })
    secs = (df["end"] - df["start"]).dt.total_seconds()
    df["seconds"] = secs.where(secs > 0, 0.0).fillna(0.0)
    _FRAME_CACHE[:] = [(windows, len(windows), df)]
    return df


def windows_share_rows(windows: Sequence[Window]) -> dict[str, list[dict[str, Any]]]:
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


def label_share_chart(rows: Sequence[Mapping[str, Any]], key: str, labels: Sequence[str]) -> str:
    """Stacked horizontal bars (static SVG): label share of GPU time per group, as the document's rows give it."""
    parts = [(lab, LABEL_COLORS.get(lab, "#555")) for lab in labels if any(r.get(lab) for r in rows)]
    svg = hbars(f"Label share of GPU time by {key}", [str(r["group"]) for r in rows], parts,
                [{lab: float(r.get(lab) or 0.0) for lab, _ in parts} for r in rows], unit="ratio", x_max=1.0)
    return figure_html(svg, f"Share of each {key}'s window time per label (hover a segment for its value).")


# metric families drawn per GPU: (series key, chart title, unit, factor to that unit, coarse NVML signal)
FAMILIES = (
    ("gr_active", "Graphics engine active (DCGM GR_ENGINE_ACTIVE)", "ratio", 1.0, False),
    ("sm_active", "SM active (DCGM SM_ACTIVE)", "ratio", 1.0, False),
    ("tensor_active", "Tensor pipe active (DCGM PIPE_TENSOR_ACTIVE)", "ratio", 1.0, False),
    ("dram_active", "DRAM active (DCGM DRAM_ACTIVE)", "ratio", 1.0, False),
    ("est_ofu", "Efficiency estimate, OFU (tensor active x SM clock / max SM clock)", "ratio", 1.0, False),
    ("gpu_util", "GPU utilization (NVML / nvidia-smi, coarse: any kernel resident)", "ratio", 1.0, True),
    ("mem_copy_util", "Memory copy utilization (NVML / nvidia-smi, coarse)", "ratio", 1.0, True),
    ("power_w", "Power draw (NVML)", "W", 1.0, True),
    ("sm_clock_mhz", "SM clock (NVML)", "Hz", 1e6, True),
    ("mem_clock_mhz", "Memory clock (NVML)", "Hz", 1e6, True),
    ("nvlink_tx_bytes", "NVLink transmit (DCGM NVLINK_TX_BYTES)", "B/s", 1.0, False),
    ("nvlink_rx_bytes", "NVLink receive (DCGM NVLINK_RX_BYTES)", "B/s", 1.0, False),
    ("pcie_tx_bytes", "PCIe transmit (DCGM PCIE_TX_BYTES)", "B/s", 1.0, False),
    ("pcie_rx_bytes", "PCIe receive (DCGM PCIE_RX_BYTES)", "B/s", 1.0, False),
    ("pcie_tx_kbs", "PCIe transmit (NVML / nvidia-smi txpci)", "B/s", 1000.0, True),
    ("pcie_rx_kbs", "PCIe receive (NVML / nvidia-smi rxpci)", "B/s", 1000.0, True),
    ("pcie_tx_total_bytes_s", "PCIe transmit (DCGM PCIE_TX_BYTES_TOTAL, differenced)", "B/s", 1.0, False),
    ("pcie_rx_total_bytes_s", "PCIe receive (DCGM PCIE_RX_BYTES_TOTAL, differenced)", "B/s", 1.0, False),
)
_Y_TITLES = {"ratio": "share of time", "W": "watts", "Hz": "hertz", "B/s": "bytes per second"}


@dataclass(frozen=True)
class Chart:
    """One drawn chart: its family key, title, SVG + caption HTML, and the series (devices) it draws."""

    key: str
    title: str
    html: str
    series: list[str]
    spans: dict[str, int] = field(default_factory=dict)


def _epoch_s(values: Any) -> np.ndarray:
    ts = pd.to_datetime(pd.Series(list(values), dtype=object), utc=True, errors="coerce", format="ISO8601")
    secs: np.ndarray = ((ts - pd.Timestamp(0, tz="UTC")) / pd.Timedelta(seconds=1)).to_numpy(dtype=float)
    return secs


def _floats(values: Sequence[Any], factor: float) -> np.ndarray:
    return np.array([float(v) * factor if isinstance(v, (int, float)) and not isinstance(v, bool) else np.nan
                     for v in values], dtype=float)


def _series_by_gpu(doc: Document, keys: Sequence[str],
                   by_key: Mapping[str, pd.DataFrame]) -> dict[str, tuple[np.ndarray, dict[str, list[Any]]]]:
    """Per GPU: window start times (epoch s) and the metric lists, from ``doc["timelines"]`` or the windows."""
    timelines = doc.get("timelines")
    out: dict[str, tuple[np.ndarray, dict[str, list[Any]]]] = {}
    for key in keys:
        if timelines:
            series = timelines.get(key) or {}
            t_raw = list(series.get("t") or [])
            out[key] = (_epoch_s(t_raw), {m: list(v) for m, v in series.items()
                                          if m not in ("t", "label") and v is not None and len(v) == len(t_raw)})
        elif key in by_key:
            g = by_key[key]
            out[key] = (_epoch_s(g["start"]), {m: [x.get(m) for x in g["m"]] for m, *_r in FAMILIES})
    return out


def _label_spans(g: pd.DataFrame, ax: TimeAxis, pixels: int) -> tuple[list[Span], bool]:
    """Coloured spans of one GPU's window labels: one per run of equal labels, or, when the windows
    are denser than the pixels, per pixel the label with the most window time in it."""
    g = g[g["start"].notna() & g["end"].notna()]
    if not len(g):
        return [], False
    s, e = _epoch_s(g["start"]), _epoch_s(g["end"])
    labels = g["label"].astype(str).to_numpy()
    if len(g) <= pixels:
        run = np.r_[True, labels[1:] != labels[:-1]]
        starts = np.flatnonzero(run)
        ends = np.r_[starts[1:], len(labels)] - 1
        return [Span(float(s[a]), float(e[b]), LABEL_COLORS.get(labels[a], "#555"),
                     f"{labels[a]}: {ax.stamp(float(s[a]))} – {ax.stamp(float(e[b]))} ({b - a + 1} windows)")
                for a, b in zip(starts, ends, strict=True)], False
    edges = np.linspace(ax.lo, ax.hi, pixels + 1)
    dur = np.clip(e - s, 0.0, None)
    best, best_t = np.full(pixels, "", dtype=object), np.zeros(pixels)
    for lab in dict.fromkeys(labels):
        m = labels == lab
        ls, ld = s[m], dur[m]
        cum = np.r_[0.0, np.cumsum(ld)]

        def covered(t: np.ndarray, ls: np.ndarray = ls, ld: np.ndarray = ld, cum: np.ndarray = cum) -> np.ndarray:
            i = np.searchsorted(ls, t, side="right") - 1
            ok = i >= 0
            j = np.where(ok, i, 0)
            return np.where(ok, cum[j] + np.clip(t - ls[j], 0.0, ld[j]), 0.0)
        c = np.diff(covered(edges))
        win = c > best_t
        best[win], best_t[win] = lab, c[win]
    spans: list[Span] = []
    for i in range(pixels):
        lab = best[i]
        if not lab:
            continue
        if spans and spans[-1].title.startswith(f"{lab}:") and abs(spans[-1].t1 - edges[i]) < 1e-9:
            prev = spans.pop()
            t0 = prev.t0
        else:
            t0 = float(edges[i])
        spans.append(Span(t0, float(edges[i + 1]), LABEL_COLORS.get(lab, "#555"),
                          f"{lab}: {ax.stamp(t0)} – {ax.stamp(float(edges[i + 1]))} (most window time)"))
    return spans, True


def _family_caption(fam: str, reduced: bool, coarse: bool) -> str:
    """The caption under one metric family's chart."""
    cap = ("One line per GPU; each step is one window's value from the document, drawn from the window's "
           "start to the end of the time it covers (a dot: a window that covers no time, e.g. one scrape). "
           "Hover a column for every GPU's value there.")
    if reduced:
        cap += (f" More windows than {BUCKET_PX}-pixel buckets: each bucket shows the min–max envelope "
                "(shaded) and the mean (line) of the windows in it.")
    if coarse:
        cap += " NVML / nvidia-smi signal (dashed), coarse" + (
            ": GPU util counts any kernel resident in the sample period, not how busy the SMs are."
            if fam == "gpu_util" else ".")
    return cap


def timeline_charts(doc: Document) -> tuple[list[Chart], str]:
    """The GPU timelines as static SVG: one row of window labels per GPU, then one chart per metric
    family with the GPUs as series (``doc["timelines"]`` when present, else the window metrics)."""
    windows = doc["windows"]
    df = window_frame(windows)
    timelines = doc.get("timelines")
    by_key = {str(k): g.sort_values("start") for k, g in df.groupby("gpu_key", sort=False)}
    keys = [str(k) for k in timelines] if timelines else sorted(by_key, key=lambda k: -by_key[k]["seconds"].sum())
    notes = []
    if len(keys) > MAX_TIMELINES:
        notes.append(f"Timelines for {MAX_TIMELINES} of {len(keys)} GPUs (most window time first); label shares "
                     "below cover all.")
        keys = keys[:MAX_TIMELINES]
    if not windows:
        notes.append("No DCGM windows.")
    window = doc.get("window")
    if window and window.get("reason"):
        notes.append(f"Windows: {window.get('reason')}.")
    data = _series_by_gpu(doc, keys, by_key)
    times = [v for k in keys for v in (data[k][0] if k in data else [])]
    times += [v for k in keys if k in by_key for v in _epoch_s(by_key[k]["end"])]
    finite = [v for v in times if math.isfinite(v)]
    if not finite:
        return [], " ".join(notes)
    lo, hi = min(finite), max(finite)
    ax = TimeAxis(lo, hi, epoch=True) if hi > lo else TimeAxis(lo - 0.5, hi + 0.5, epoch=True)
    charts = []
    ml = label_margin([k for k in keys if k in by_key])  # the label rows' names; every chart shares it
    rows, counts, dense = [], {}, False
    for k in keys:
        if k in by_key:
            spans, agg = _label_spans(by_key[k], ax, int(W - ml - MR))
            rows.append((k, spans))
            counts[k] = len(spans)
            dense |= agg
    if rows:
        present = dict.fromkeys(lab for k in keys if k in by_key for lab in by_key[k]["label"])
        svg = span_rows("Window label per GPU", rows, ax, [(lab, LABEL_COLORS.get(lab, "#555")) for lab in present],
                        ml=ml)
        cap = ("One row per GPU: each window coloured by its label (docs/formulas.md#windows); hover for the label "
               "and times." + (" Where a pixel holds several windows it shows the label with the most window "
                               "time in it." if dense else ""))
        charts.append(Chart("labels", "Window label per GPU", figure_html(svg, cap), list(counts), counts))
    ends = {k: _epoch_s(by_key[k]["end"]) for k in keys
            if k in by_key and k in data and len(by_key[k]) == len(data[k][0])}
    for fam, title, unit, factor, coarse in FAMILIES:
        lines = [Line(f"GPU {k}", data[k][0], _floats(data[k][1][fam], factor), color(n), dash=coarse,
                      end=ends.get(k)) for n, k in enumerate(keys) if k in data and fam in data[k][1]]
        lines = [ln for ln in lines if np.isfinite(ln.y).any()]
        if not lines:
            continue
        svg, reduced = time_chart(title, lines, ax, unit=unit, y_title=_Y_TITLES[unit],
                                  y_range=(0.0, 1.0) if unit == "ratio" else None, ml=ml)
        charts.append(Chart(fam, title, figure_html(svg, _family_caption(fam, reduced, coarse)),
                            [ln.name for ln in lines]))
    if len(charts) == (1 if rows else 0):
        notes.append("No activity field in this input: window labels only.")
    return charts, " ".join(notes)


# the activity fields an instant's table shows, in the order of the charts (metric key, header)
_INSTANT_FIELDS = (("gr_active", "GR active"), ("sm_active", "SM active"), ("sm_occupancy", "SM occupancy"),
                   ("tensor_active", "tensor"), ("fp16_active", "FP16"), ("fp32_active", "FP32"),
                   ("fp64_active", "FP64"), ("dram_active", "DRAM active"), ("gpu_util", "GPU util (NVML)"),
                   ("mem_copy_util", "copy util (NVML)"))


def is_instant(windows: Sequence[Window]) -> bool:
    """Every window one sampling instant (``covered_s`` 0: a single scrape), so no time to draw."""
    return bool(windows) and all(w.get("covered_s") == 0 for w in windows)


def instant_html(windows: Sequence[Window]) -> str:
    """A single-scrape input: what each GPU read at that instant, its label and the evidence for it, in
    place of charts with one dot (issue 24, 'Single-scrape pages')."""
    times = sorted({str(w["start"]) for w in windows})
    when = times[0] if len(times) == 1 else f"{times[0]} to {times[-1]}, {len(times)} instants"
    shown = [(k, h) for k, h in _INSTANT_FIELDS if any(w["metrics"].get(k) is not None for w in windows)]
    rows = [{"gpu": w.get("gpu_key") or w["gpu"], "model": w.get("model"), "time": w["start"],
             "label": w["label"], "limiter": w.get("limiter"),
             **{k: w["metrics"].get(k) for k, _ in shown}, "evidence": " · ".join(w.get("evidence") or [])}
            for w in windows]
    cols = [Column("gpu", "GPU"), Column("model", "model"), Column("time", "time (UTC)"), Column("label", "label"),
            Column("limiter", "limiter")]
    cols += [Column(k, h, fmt_pct, numeric=True) for k, h in shown]
    cols.append(Column("evidence", "evidence"))
    note = (f"Instant samples: no time covered. Every window is one sampling instant ({when}), so there is no "
            "timeline to draw and no GPU-hours; each GPU's values at that instant, its label and the evidence "
            "for it (docs/formulas.md#windows).")
    return f'<p class="note">{esc(note)}</p><div class="tablewrap">{table(rows[:LIST_ROWS], cols)}</div>'


def dcgm_sections(doc: Document) -> list[Section] | None:
    """GPU timelines, label shares of window time per group, and the window findings; a single-scrape
    input gets one table of its instants instead of the first two (:func:`instant_html`)."""
    windows = doc["windows"]
    if not windows:
        return None
    out: list[Section] = []
    if is_instant(windows):
        out.append(Section("GPU timelines", instant_html(windows), anchor="timelines"))
        _window_findings(doc, out)
        return out
    charts, note = timeline_charts(doc)
    out.append(Section("GPU timelines", f'<p class="note">{esc(note)}</p>' + "".join(c.html for c in charts),
                       anchor="timelines"))
    body = []
    for key, rows in windows_share_rows(windows).items():
        if len(rows) < 1:
            continue
        body.append(f"<h3>Label share of GPU time by {esc(key)}</h3>")
        cols = [Column("group", key)] + [Column(lab, lab, fmt_pct, numeric=True) for lab in WINDOW_LABELS_SHOWN]
        cols.append(Column("hours", "GPU-hours", lambda v: fmt_num(v), numeric=True))
        if key in ("gpu", "host") and 1 < len(rows) <= 200:
            body.append(label_share_chart(rows, key, WINDOW_LABELS_SHOWN))
        body.append(f'<div class="tablewrap">{table(rows[:LIST_ROWS], cols)}</div>')
    out.append(Section("GPU label shares", "".join(body), anchor="shares"))
    _window_findings(doc, out)
    return out


def _window_findings(doc: Document, out: list[Section]) -> None:
    wf = [f for f in doc["findings"] if f.get("source") == "dcgm"]
    if wf:
        kernels = doc["kernels"]
        items = "".join(finding_html(f, kernels) for f in wf)
        out.append(Section("Window findings", f'<ol class="findings">{items}</ol>', anchor="wfindings"))


MD_ROWS = 30  # GPUs listed in the Markdown's label table


def dcgm_md_section(doc: Document) -> MdSection | None:
    """The Markdown's GPU labels: per GPU its label shares of window time and GPU-hours (the HTML's share
    table), or, for a single-scrape input, each GPU's label, limiter and evidence at that instant."""
    windows = doc["windows"]
    if not windows:
        return None
    if is_instant(windows):
        rows = [{"gpu": w.get("gpu_key") or w["gpu"], "label": w["label"], "limiter": w.get("limiter"),
                 "evidence": " · ".join(w.get("evidence") or [])} for w in windows]
        body = ("Instant samples: no time covered (each window one sampling instant); each GPU's label there.\n\n"
                + md_table(rows[:MD_ROWS], [("gpu", "GPU"), ("label", "label"), ("limiter", "limiter"),
                                            ("evidence", "evidence")], limit=400))
        n = len(rows)
    else:
        share_rows = windows_share_rows(windows).get("gpu") or []
        labels = [lab for lab in WINDOW_LABELS_SHOWN if any(r.get(lab) for r in share_rows)]
        cols: list[tuple[str, str] | tuple[str, str, Any]] = [("group", "GPU")]
        cols += [(lab, lab, fmt_pct) for lab in labels]
        cols.append(("hours", "GPU-hours", fmt_num))
        body = "Label share of each GPU's window time (docs/formulas.md#windows).\n\n" + md_table(
            share_rows[:MD_ROWS], cols)
        n = len(share_rows)
    if n > MD_ROWS:
        body += f"\n\n{n - MD_ROWS} more GPUs in the HTML/JSON report."
    return MdSection("GPU labels", body)
