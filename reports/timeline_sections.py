"""Report sections for timelines (nsys, PyTorch profiler): per-device busy/idle strip, gap
histogram, the device and step tables, and the ncu-joined waterfall. Drawn only from the
document's ``timeline``/``steps``/``waterfall`` (rules: docs/formulas.md#timelines)."""

from __future__ import annotations

from typing import Any

from rooftop.reports.formatting import fmt_pct, fmt_time
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.widgets import LABEL_COLORS, Column, Section, esc, figure, ptext, table

STEP_ROWS = 200
MD_STEP_ROWS = 20
_BUCKETS = ("< 1 µs", "1-10 µs", "10-100 µs", "0.1-1 ms", "1-10 ms", "10-100 ms", "0.1-1 s", "> 1 s")


def _where(e: dict[str, Any]) -> str:
    name = str(e.get("input") or "").rsplit("/", 1)[-1]
    dev = e.get("device")
    return f"{name} · GPU {dev}" if dev is not None else name


def _rows(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for e in entries:
        gaps = e.get("gaps") or {}
        sk = e.get("short_kernels") or {}
        top = (e.get("top_kernels") or [{}])[0]
        out.append({"where": _where(e), "step": e.get("name"), "gpu": e.get("gpu_name"),
                    "label": e.get("label"), "limiter": e.get("limiter"), "kernels": e.get("kernels"),
                    "span": e.get("span_s"), "wall": e.get("wall_s"), "idle": e.get("idle_fraction"),
                    "gaps": gaps.get("count"), "short": sk.get("share_of_kernel_busy"),
                    "top": top.get("name"), "evidence": "; ".join(e.get("evidence") or [])})
    return out


_COLUMNS = [Column("where", "input · device"), Column("gpu", "GPU"), Column("label", "label"),
            Column("limiter", "limiter"), Column("kernels", "kernels", numeric=True),
            Column("span", "span", fmt_time, numeric=True), Column("idle", "idle", fmt_pct, numeric=True),
            Column("gaps", "gaps", numeric=True),
            Column("short", "short-kernel share", fmt_pct, numeric=True),
            Column("top", "top kernel", css="name"), Column("evidence", "evidence", css="name")]


def _strip_figure(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    rows = [e for e in entries if e.get("busy_strip")]
    if not rows:
        return None
    data = []
    # one heatmap row per device at a numeric y named by tick labels: plotly.js throws on several
    # heatmap traces that each bring their own category on one axis (no chart is drawn at all)
    for row, e in enumerate(rows):
        st = e["busy_strip"]
        frac = st["busy_fraction"]
        xs = [round(i * st["bin_s"], 9) for i in range(len(frac))]
        data.append({"type": "heatmap", "x": xs, "y": [row], "z": [frac], "zmin": 0, "zmax": 1,
                     "colorscale": [[0, "#f1f3f5"], [1, LABEL_COLORS.get("compute-bound", "#1c7ed6")]],
                     "showscale": e is rows[0], "colorbar": {"title": {"text": "busy"}},
                     "hovertemplate": "t=%{x:.6f} s<br>busy %{z:.0%}<extra></extra>"})
    return figure(data, {"xaxis": {"title": {"text": "seconds from the first GPU activity"}},
                         "yaxis": {"automargin": True, "tickvals": list(range(len(rows))),
                                   "ticktext": [ptext(_where(e)) for e in rows]}},
                  title="GPU busy / idle per device",
                  height=120 + 40 * len(rows))


def _gap_figure(entries: list[dict[str, Any]]) -> dict[str, Any] | None:
    rows = [e for e in entries if e.get("gap_histogram") and sum(e["gap_histogram"]["count"])]
    if not rows:
        return None
    data = [{"type": "bar", "name": ptext(_where(e)), "x": list(_BUCKETS), "y": e["gap_histogram"]["idle_s"],
             "customdata": e["gap_histogram"]["count"],
             "hovertemplate": "%{x}: %{customdata} gaps, %{y:.6f} s idle<extra></extra>"} for e in rows]
    return figure(data, {"barmode": "group", "xaxis": {"title": {"text": "gap length"}},
                         "yaxis": {"title": {"text": "idle seconds in gaps of this length"}}},
                  title="Idle gaps between GPU activity", height=380)


def timeline_sections(doc: dict[str, Any]) -> list[Section] | None:
    entries = list(doc.get("timeline") or [])
    if not entries:
        return None
    plots = [f for f in (_strip_figure(entries), _gap_figure(entries)) if f]
    body = ('<p class="note">Per input and device: where the span between the first and the last GPU '
            "activity went (kernels, copies, idle gaps), and the label the rules give it "
            "(docs/formulas.md#timelines). Summary-only inputs (nsys stats) have no time axis.</p>"
            + table(_rows(entries), _COLUMNS))
    out = [Section("Timelines", body, plots=plots, anchor="timelines")]
    steps = list(doc.get("steps") or [])
    if steps:
        cols = [Column("step", "step / range", css="name"), Column("wall", "wall", fmt_time, numeric=True),
                *_COLUMNS[:-2]]
        out.append(Section("Steps", table(_rows(steps[:STEP_ROWS]), cols), anchor="steps",
                           note="" if len(steps) <= STEP_ROWS else f"first {STEP_ROWS} of {len(steps)}"))
    wf = waterfall_section(doc)
    if wf is not None:
        out.append(wf)
    return out


def waterfall_section(doc: dict[str, Any]) -> Section | None:
    """Where each device's wall time goes, joined to ncu (``waterfall``)."""
    parts = list(doc.get("waterfall") or [])
    if not parts:
        return None
    data = []
    for w in parts:
        names = [ptext(p["part"]) for p in w["parts"]]
        data.append({"type": "waterfall", "name": ptext(_where(w)), "x": names,
                     "y": [p["seconds"] for p in w["parts"]], "measure": ["relative"] * len(names),
                     "hovertemplate": "%{x}: %{y:.6f} s<extra></extra>"})
    rows = [{"where": _where(w), "part": p["part"], "seconds": p["seconds"], "share": p.get("share"),
             "why": p.get("why")} for w in parts for p in w["parts"]]
    body = table(rows, [Column("where", "input · device"), Column("part", "part"),
                        Column("seconds", "seconds", fmt_time, numeric=True),
                        Column("share", "share of span", fmt_pct, numeric=True), Column("why", "rule", css="name")])
    fig = figure(data, {"yaxis": {"title": {"text": "seconds"}}}, title="Wall time: roofline, above it, idle",
                 height=420)
    return Section("Waterfall (timeline + ncu)", '<p class="note">' + esc(
        "Kernel time at its roofline is the floor for this algorithm; time above it is recoverable by "
        "fixing the kernel's limiter; idle gaps are recoverable by launching, syncing or feeding the GPU "
        "differently (docs/formulas.md#timelines).") + "</p>" + body, plots=[fig], anchor="waterfall")


def timeline_md_sections(doc: dict[str, Any]) -> list[MdSection] | None:
    entries = list(doc.get("timeline") or [])
    if not entries:
        return None
    cols: list[Any] = [("where", "input · device"), ("label", "label"), ("limiter", "limiter"),
                       ("kernels", "kernels"), ("span", "span", fmt_time), ("idle", "idle", fmt_pct),
                       ("gaps", "gaps"), ("short", "short-kernel share", fmt_pct), ("top", "top kernel")]
    out = [MdSection("Timelines", md_table(_rows(entries), cols, limit=120)
                     + "\n\nRules: docs/formulas.md#timelines.")]
    steps = list(doc.get("steps") or [])
    if steps:
        more = f"\n\nFirst {MD_STEP_ROWS} of {len(steps)}." if len(steps) > MD_STEP_ROWS else ""
        out.append(MdSection("Steps", md_table(_rows(steps[:MD_STEP_ROWS]),
                                               [("step", "step / range"), ("wall", "wall", fmt_time), *cols],
                                               limit=120) + more))
    parts = list(doc.get("waterfall") or [])
    if parts:
        rows = [{"where": _where(w), "part": p["part"], "seconds": p["seconds"], "share": p.get("share")}
                for w in parts for p in w["parts"]]
        out.append(MdSection("Waterfall (timeline + ncu)", md_table(
            rows, [("where", "input · device"), ("part", "part"), ("seconds", "seconds", fmt_time),
                   ("share", "share of span", fmt_pct)])))
    return out


def _diff_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for r in doc.get("timeline_diff") or []:
        idle, ks, span = r.get("idle_fraction") or {}, r.get("kernel_sum_s") or {}, r.get("span_s") or {}
        gaps, label = r.get("gaps") or {}, r.get("label") or {}
        out.append({"device": r.get("device"), "idle_b": idle.get("baseline"), "idle_c": idle.get("candidate"),
                    "gaps_b": gaps.get("baseline"), "gaps_c": gaps.get("candidate"),
                    "ks_b": ks.get("baseline"), "ks_c": ks.get("candidate"), "span_b": span.get("baseline"),
                    "span_c": span.get("candidate"),
                    "label": f"{label.get('baseline')} → {label.get('candidate')}"})
    return out


def _series_rows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    rows = [s for s in doc.get("timeline_series") or [] if s.get("significant")]
    return sorted(rows, key=lambda s: -abs(s.get("change") or 0.0))


_DIFF_MD: list[Any] = [("device", "GPU"), ("idle_b", "idle before", fmt_pct), ("idle_c", "idle after", fmt_pct),
                       ("gaps_b", "gaps before"), ("gaps_c", "gaps after"),
                       ("ks_b", "kernel time before", fmt_time), ("ks_c", "kernel time after", fmt_time),
                       ("label", "label")]
_SERIES_MD: list[Any] = [("device", "GPU"), ("series", "kernel / gaps"), ("n_base", "n before"),
                         ("n_cand", "n after"), ("change", "median change", fmt_pct), ("p_adjusted", "p (Holm)")]


def timeline_diff_sections(doc: dict[str, Any]) -> list[Section] | None:
    """``rooftop diff`` of two timelines: per-device numbers and the series beyond noise."""
    if not doc.get("timeline_diff"):
        return None
    cols = [Column(c[0], c[1], c[2] if len(c) > 2 else None, numeric=c[0] not in ("device", "label"))
            for c in _DIFF_MD]
    out = [Section("Timelines: before → after", table(_diff_rows(doc), cols), anchor="timeline-diff")]
    scols = [Column(c[0], c[1], c[2] if len(c) > 2 else None, numeric=c[0].startswith(("n_", "change", "p_")),
                    css="name" if c[0] == "series" else "") for c in _SERIES_MD]
    out.append(Section("Changes beyond noise (kernels and idle gaps)", table(_series_rows(doc), scols),
                       anchor="timeline-series", note="docs/formulas.md#timeline-diff"))
    return out


def timeline_diff_md_sections(doc: dict[str, Any]) -> list[MdSection] | None:
    if not doc.get("timeline_diff"):
        return None
    return [MdSection("Timelines: before → after", md_table(_diff_rows(doc), _DIFF_MD)),
            MdSection("Changes beyond noise (kernels and idle gaps)",
                      md_table(_series_rows(doc)[:30], _SERIES_MD, limit=120)
                      + "\n\nRules: docs/formulas.md#timeline-diff.")]
