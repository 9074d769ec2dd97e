"""The roofline as a plotly figure dict built from the document (kernel families and DCGM windows).

Only the document dict is read; plot text goes through :func:`ptext`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from rooftop.reports.formatting import finite_pos, fmt_num, fmt_pct, get_each, num_column
from rooftop.reports.timelines import window_frame
from rooftop.reports.widgets import LABEL_COLORS, figure, ptext

LEVELS = (("dram", "DRAM", "circle"), ("l2", "L2", "square"), ("l1", "L1", "diamond"))


MAX_FAMILY_POINTS = 3000    # families drawn on the roofline (largest by time); the rest are noted


MAX_WINDOW_POINTS = 3000    # DCGM windows drawn individually; above this they are aggregated


HOVER_NAME = 160            # characters of a family name in hover text


@dataclass(frozen=True)
class Ceiling:
    """One roof: a compute peak (FLOP/s) or a bandwidth (B/s) with where it came from."""

    name: str
    value: float
    source: str | None = None


_BW_LEVELS = (("dram", ("dram", "hbm", "fb")), ("l2", ("l2", "lts")), ("l1", ("l1", "shared", "smem")))


_PRECISIONS = ("fp64", "fp32", "tf32", "bf16", "fp16", "fp8", "fp4", "int8", "tensor", "half",
               "single", "double")


def _leaves(obj: Any, path: tuple[str, ...] = ()) -> list[tuple[tuple[str, ...], Any]]:
    if isinstance(obj, Mapping):
        if "value" in obj and not isinstance(obj.get("value"), Mapping):
            return [(path, obj)]
        out: list[tuple[tuple[str, ...], Any]] = []
        for k, v in obj.items():
            out += _leaves(v, (*path, str(k)))
        return out
    return [(path, obj)]


def ceilings_of(device: Mapping[str, Any]) -> tuple[list[Ceiling], list[Ceiling]]:
    """(compute ceilings, bandwidth ceilings) from a contract device entry.

    Tolerates flat (``{"fp32_flops_s": 1e13, "dram_bytes_s": 2e12}``) and nested
    (``{"flops_s": {"fp32": ..}, "bytes_s": {"dram": ..}}``) shapes; a leaf may be a number or
    ``{"value": x, "source": "..."}``. Bandwidth names are normalised to ``dram``, ``l2``, ``l1``.
    """
    raw = device.get("ceilings") or {}
    sources = device.get("sources") if isinstance(device.get("sources"), Mapping) else {}
    compute: dict[str, Ceiling] = {}
    bandwidth: dict[str, Ceiling] = {}
    for path, leaf in _leaves(raw):
        src = None
        value = leaf
        if isinstance(leaf, Mapping):
            value, src = leaf.get("value"), leaf.get("source")
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            continue
        v = float(value)
        if not math.isfinite(v) or v <= 0:
            continue
        key = ".".join(path)
        low = key.lower()
        src = src or (sources.get(key) if isinstance(sources, Mapping) else None)
        tokens = low.replace(".", "_").replace("-", "_").split("_")
        if "flop" in low or "ops" in tokens or any(p in tokens for p in _PRECISIONS):
            if any(t in tokens for t in ("count", "clock", "hz", "sms")):
                continue
            name = "_".join(t for t in tokens if t not in ("flops", "flop", "s", "peak", "ops", "per",
                                                          "second", "compute")) or "compute"
            compute.setdefault(name, Ceiling(name, v, src))
            continue
        for level, words in _BW_LEVELS:
            if any(w in tokens for w in words) and not any(t in tokens for t in ("size", "capacity", "mb", "kb")):
                bandwidth.setdefault(level, Ceiling(level.upper(), v, src))
                break
    order = {lvl: i for i, (lvl, _) in enumerate(_BW_LEVELS)}
    bw = sorted(bandwidth.items(), key=lambda kv: order[kv[0]])
    return (sorted(compute.values(), key=lambda c: -c.value), [c for _, c in bw])


def family_points(kernels: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """One row per family: time, launches, FLOPs, bytes and intensity per level, majority label.

    Aggregates are sums (FLOPs, bytes, time), so a family's intensity is total FLOPs / total bytes
    and its FLOP/s is total FLOPs / total time (time-weighted, not a mean of ratios).
    """
    n = len(kernels)
    dur = num_column(kernels, "duration_s")
    flops = num_column(kernels, "flops")
    ach = num_column(kernels, "achieved_flops_s")
    flops = np.where(np.isnan(flops), ach * dur, flops)
    df = pd.DataFrame({
        "family": [str(k.get("family") or k.get("name") or "?") for k in kernels],
        "label": [str(k.get("label") or "unknown") for k in kernels],
        "limiter": [str(k.get("limiter") or "unknown") for k in kernels],
        "duration": dur, "flops": flops, "pos": np.arange(n),
    })
    by_level, ai_level = get_each(kernels, "bytes"), get_each(kernels, "intensity")
    for lvl, _, _ in LEVELS:
        b = num_column(by_level, lvl)
        ai = num_column(ai_level, lvl)
        with np.errstate(divide="ignore", invalid="ignore"):
            b = np.where(np.isnan(b) & (ai > 0), flops / ai, b)
        df[f"b_{lvl}"] = b
    if n == 0:
        return df
    d0 = df["duration"].fillna(0.0)
    df["_w"] = d0
    g = df.groupby("family", sort=False)
    agg = g.agg(duration=("duration", lambda s: s.sum(min_count=1)), launches=("pos", "size"),
                flops=("flops", lambda s: s.sum(min_count=1)), top=("pos", "first"))
    for lvl, _, _ in LEVELS:
        agg[f"b_{lvl}"] = g[f"b_{lvl}"].sum(min_count=1)
    # time-weighted majority label and limiter per family
    lab = df.groupby(["family", "label"], sort=False)["_w"].sum().reset_index()
    lab = lab.sort_values("_w", ascending=False).drop_duplicates("family").set_index("family")["label"]
    lim = df.groupby(["family", "limiter"], sort=False)["_w"].sum().reset_index()
    lim = lim.sort_values("_w", ascending=False).drop_duplicates("family").set_index("family")["limiter"]
    longest = df.sort_values("_w", ascending=False).drop_duplicates("family").set_index("family")["pos"]
    agg["label"] = lab
    agg["limiter"] = lim
    agg["top"] = longest
    with np.errstate(divide="ignore", invalid="ignore"):
        agg["flops_s"] = agg["flops"] / agg["duration"]
        for lvl, _, _ in LEVELS:
            agg[f"ai_{lvl}"] = agg["flops"] / agg[f"b_{lvl}"]
    total = float(np.nansum(agg["duration"].to_numpy(dtype=float)))
    agg["share"] = agg["duration"] / total if total > 0 else np.nan
    return agg.reset_index().sort_values("duration", ascending=False, na_position="last")


def roofline_figure(doc: Mapping[str, Any]) -> tuple[dict[str, Any], str]:
    """The hierarchical roofline as a plotly figure dict, and a note on what was left out."""
    kernels = list(doc.get("kernels") or [])
    fam = family_points(kernels)
    notes: list[str] = []
    if len(fam) > MAX_FAMILY_POINTS:
        notes.append(f"Showing the {MAX_FAMILY_POINTS} largest of {len(fam)} kernel families by time.")
        fam = fam.head(MAX_FAMILY_POINTS)
    traces: list[dict[str, Any]] = []
    xs: list[float] = []
    ys: list[float] = []
    max_share = float(np.nanmax(fam["share"].to_numpy(dtype=float))) if len(fam) and fam["share"].notna().any() else 1.0
    drawn = 0
    for lvl, lname, symbol in LEVELS:
        if not len(fam):
            break
        ai = fam[f"ai_{lvl}"].to_numpy(dtype=float)
        perf = fam["flops_s"].to_numpy(dtype=float)
        ok = finite_pos(ai) & finite_pos(perf)
        sub = fam[ok]
        for label in LABEL_COLORS:
            part = sub[sub["label"] == label]
            if not len(part):
                continue
            share = part["share"].to_numpy(dtype=float)
            size = 7 + 33 * np.sqrt(np.nan_to_num(share, nan=0.0) / (max_share or 1.0))
            hover = [
                f"<b>{ptext(r.family, HOVER_NAME)}</b><br>{lname}: AI {getattr(r, f'ai_{lvl}'):.3g} FLOP/B<br>"
                f"{fmt_num(r.flops_s, 'FLOP/s')}<br>{fmt_pct(r.share)} of kernel time · {r.launches} launch(es)"
                f"<br>{ptext(r.label)} / {ptext(r.limiter)}{_evidence(kernels, r.top)}"
                for r in part.itertuples()
            ]
            x = part[f"ai_{lvl}"].to_numpy(dtype=float)
            y = part["flops_s"].to_numpy(dtype=float)
            xs += x.tolist()
            ys += y.tolist()
            drawn += len(part)
            traces.append({
                "type": "scatter", "mode": "markers", "name": label,
                "legendgroup": lvl, "legendgrouptitle": {"text": f"{lname} level"},
                "x": x.tolist(), "y": y.tolist(), "hovertext": hover, "hoverinfo": "text",
                "marker": {"symbol": symbol, "size": np.round(size, 1).tolist(),
                           "color": LABEL_COLORS[label], "opacity": 0.75,
                           "line": {"width": 0.5, "color": "#333"}},
                "meta": {"role": "points", "level": lvl},
            })
    if len(kernels) and not drawn:
        notes.append("No kernel has both FLOPs and bytes, so no kernel point can be placed "
                     "(intensity unknown).")
    wtraces, wnote = _window_traces(doc.get("windows") or [])
    for t in wtraces:
        xs += t["x"]
        ys += t["y"]
    if wnote:
        notes.append(wnote)
    traces += wtraces
    compute: list[Ceiling] = []
    bandwidth: list[Ceiling] = []
    devices = list(doc.get("devices") or [])
    if devices:
        compute, bandwidth = ceilings_of(devices[0])
        if len(devices) > 1:
            notes.append(f"Ceilings of {devices[0].get('name')} (first of {len(devices)} devices).")
    if not compute and not bandwidth:
        notes.append("No device ceilings: measured points only.")
    ridges = [(c, b, c.value / b.value) for c in compute for b in bandwidth]
    xr = [r[2] for r in ridges]
    allx = [v for v in xs + xr if v > 0 and math.isfinite(v)]
    lo = min(allx) / 4 if allx else 1e-2
    hi = max(allx) * 4 if allx else 1e3
    lo, hi = min(lo, 1e-2), max(hi, 1e2)
    top = compute[0].value if compute else None
    for c in compute:
        traces.append({
            "type": "scatter", "mode": "lines", "name": f"{ptext(c.name)} {fmt_num(c.value, 'FLOP/s')}",
            "legendgroup": "ceilings", "legendgrouptitle": {"text": "ceilings"},
            "x": [lo, hi], "y": [c.value, c.value], "hoverinfo": "text",
            "hovertext": [f"{ptext(c.name)} peak {fmt_num(c.value, 'FLOP/s')}"
                          f"<br>source: {ptext(c.source or devices[0].get('source'))}"] * 2,
            "line": {"color": "#222", "width": 1.5, "dash": "solid" if c is compute[0] else "dot"},
            "meta": {"role": "ceiling", "kind": "compute"},
        })
    for b in bandwidth:
        x_end = min(hi, top / b.value) if top else hi
        traces.append({
            "type": "scatter", "mode": "lines", "name": f"{ptext(b.name)} {fmt_num(b.value, 'B/s')}",
            "legendgroup": "ceilings", "legendgrouptitle": {"text": "ceilings"},
            "x": [lo, x_end], "y": [b.value * lo, b.value * x_end], "hoverinfo": "text",
            "hovertext": [f"{ptext(b.name)} bandwidth {fmt_num(b.value, 'B/s')}"
                          f"<br>source: {ptext(b.source or devices[0].get('source'))}"] * 2,
            "line": {"color": {"DRAM": "#c2255c", "L2": "#e8590c", "L1": "#f08c00"}.get(b.name, "#555"),
                     "width": 1.5},
            "meta": {"role": "ceiling", "kind": "bandwidth"},
        })
    if ridges:
        traces.append({
            "type": "scatter", "mode": "markers", "name": "ridge points",
            "legendgroup": "ceilings", "x": [r[2] for r in ridges], "y": [r[0].value for r in ridges],
            "hoverinfo": "text",
            "hovertext": [f"ridge {ptext(b.name)} × {ptext(c.name)}: {x:.3g} FLOP/B" for c, b, x in ridges],
            "marker": {"symbol": "x-thin-open", "size": 9, "color": "#222"},
            "meta": {"role": "ridge"},
        })
    yall = [v for v in ys + [c.value for c in compute] if v > 0 and math.isfinite(v)]
    ylo = min(yall) / 4 if yall else 1e9
    yhi = max(yall) * 3 if yall else 1e15
    layout = {
        "xaxis": {"type": "log", "title": {"text": "arithmetic intensity (FLOP/byte)"},
                  "range": [math.log10(lo), math.log10(hi)]},
        "yaxis": {"type": "log", "title": {"text": "performance (FLOP/s)"},
                  "range": [math.log10(ylo), math.log10(yhi)]},
        "legend": {"groupclick": "togglegroup", "orientation": "v"},
        "height": 560,
    }
    return figure(traces, layout), " ".join(notes)


def _evidence(kernels: Sequence[Mapping[str, Any]], pos: Any) -> str:
    try:
        ev = kernels[int(pos)].get("evidence") or []
    except (TypeError, ValueError, IndexError):
        return ""
    return "".join(f"<br>{ptext(e, 120)}" for e in list(ev)[:3])


def _window_traces(windows: Sequence[Mapping[str, Any]]) -> tuple[list[dict[str, Any]], str]:
    if not windows:
        return [], ""
    df = window_frame(windows)
    with np.errstate(divide="ignore", invalid="ignore"):
        df["ai"] = df["flops_s"] / df["dram_s"]
    df = df[finite_pos(df["ai"]) & finite_pos(df["flops_s"])]
    if not len(df):
        return [], "No DCGM window has both estimated FLOP/s and DRAM bytes/s."
    note = ""
    if len(df) > MAX_WINDOW_POINTS:
        w = df["seconds"].where(df["seconds"] > 0, 1.0)
        df = df.assign(fw=df["flops_s"] * w, bw=df["dram_s"] * w, w=w)
        g = df.groupby(["gpu_key", "label"], sort=False).agg(fw=("fw", "sum"), bw=("bw", "sum"),
                                                               w=("w", "sum"), n=("w", "size"))
        g = g.reset_index()
        g["flops_s"] = g["fw"] / g["w"]
        g["dram_s"] = g["bw"] / g["w"]
        g["ai"] = g["flops_s"] / g["dram_s"]
        note = (f"{len(df)} DCGM windows aggregated to one point per GPU and label "
                "(time-weighted means).")
        df = g
        hover = [f"{ptext(r.gpu_key, HOVER_NAME)} · {ptext(r.label)} ({r.n} windows)<br>AI {r.ai:.3g} FLOP/B"
                 f"<br>{fmt_num(r.flops_s, 'FLOP/s')} · {fmt_num(r.dram_s, 'B/s')} DRAM" for r in df.itertuples()]
    else:
        hover = [f"{ptext(r.gpu_key, HOVER_NAME)} · {ptext(r.label)}<br>{r.start:%Y-%m-%d %H:%M:%S}"
                 f"<br>AI {r.ai:.3g} FLOP/B<br>{fmt_num(r.flops_s, 'FLOP/s')} · {fmt_num(r.dram_s, 'B/s')} DRAM"
                 for r in df.itertuples()]
    trace = {
        "type": "scatter", "mode": "markers", "name": "DCGM windows (DRAM)",
        "legendgroup": "windows", "legendgrouptitle": {"text": "GPU windows"},
        "x": df["ai"].astype(float).tolist(), "y": df["flops_s"].astype(float).tolist(),
        "hovertext": hover, "hoverinfo": "text",
        "marker": {"symbol": "triangle-up", "size": 8,
                   "color": [LABEL_COLORS.get(lab, "#555") for lab in df["label"]],
                   "opacity": 0.6, "line": {"width": 0.5, "color": "#111"}},
        "meta": {"role": "windows"},
    }
    return [trace], note
