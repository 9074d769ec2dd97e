"""A timeline joined to an ncu profile of the same program: where each device's span goes
(``docs/formulas.md#timeline-join``).

Matching: a trace kernel takes the ncu kernels of the same demangled name; failing that, those
with the same base name (the function name before template arguments and parameters) and the same
grid and block. Each matched name gets the ncu roofline efficiency ``e`` = median over its ncu
launches of achieved / attainable FLOP/s (capped at 1); its trace time splits into
``e x time`` at the roofline and ``(1 - e) x time`` above it (by the ncu label and limiter).
Kernel parts are scaled from the plain sum to the kernel union so the parts add up to the span:
roofline + above + unmatched kernels + copies alone + idle (sync, launch, host).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.findings.recommendations import recommendation
from rooftop.analyzer.findings.severity import SEVERITY_ORDER, severity
from rooftop.analyzer.timeline import TimelineAnalysis
from rooftop.analyzer.timeline.metrics import GPU_KINDS
from rooftop.parsers.model import ParseResult

RULE = "docs/formulas.md#timeline-join"
KERNELS_NAMED = 3  # kernels named per above-roofline part, largest first


def base_name(name: str) -> str:
    """``void ns::gemm_tc<half, 128>(Params)`` -> ``gemm_tc``; the text before ``<`` or ``(``."""
    head = re.split(r"[<(]", name, maxsplit=1)[0].strip()
    head = head.removeprefix("void ").strip()
    return head.rsplit("::", 1)[-1]


_GENERIC = {"", "kernel", "kernel2", "device_kernel"}


def display_name(name: str, width: int = 60) -> str:
    """A kernel's short name for a title: its base name (without anonymous namespaces), or, where that is
    generic (``cutlass::Kernel2``), the name up to its parameters; at most ``width`` characters."""
    n = name.removeprefix("void ").replace("(anonymous namespace)::", "")
    b = base_name(n)
    short = n.split("(", 1)[0].strip() if b.lower() in _GENERIC else b
    return short if len(short) <= width else short[: width - 1] + "…"


def _ncu_table(kernels: pd.DataFrame, results: pd.DataFrame) -> pd.DataFrame:
    """Per ncu launch: name, base name, grid/block dims, efficiency, label, limiter."""
    keys = ["input", "index"]
    dims = kernels[[*keys, "grid_dim", "block_dim"]]
    r = results.merge(dims, on=keys, how="left")
    att = pd.to_numeric(r.get("attainable_flops_s"), errors="coerce")
    ach = pd.to_numeric(r.get("achieved_flops_s"), errors="coerce")
    eff = (ach / att).where(att > 0).clip(upper=1.0)
    return pd.DataFrame({"name": r["name"].astype(str), "base": r["name"].astype(str).map(base_name),
                         "grid_dim": r["grid_dim"].astype("string"), "block_dim": r["block_dim"].astype("string"),
                         "eff": eff, "label": r["label"].astype(str), "limiter": r["limiter"].astype(str),
                         "index": r["index"]})


def match(trace_names: pd.DataFrame, ncu: pd.DataFrame) -> dict[str, dict[str, Any]]:
    """Trace kernel ``(name, grid_dim, block_dim)`` rows -> the ncu match per trace name."""
    out: dict[str, dict[str, Any]] = {}
    by_name = {n: g for n, g in ncu.groupby("name", sort=False)}
    by_shape = {k: g for k, g in ncu.groupby(["base", "grid_dim", "block_dim"], sort=False, dropna=False)}
    for row in trace_names.itertuples(index=False):
        name = str(row.name)
        if name in out:
            continue
        g = by_name.get(name)
        how = "name"
        if g is None:
            g = by_shape.get((base_name(name), row.grid_dim, row.block_dim))
            how = "base name + grid + block"
        if g is None:
            continue
        eff = g["eff"].dropna()
        top = g.groupby(["label", "limiter"]).size().sort_values(ascending=False).index[0]
        out[name] = {"how": how, "eff": float(eff.median()) if len(eff) else None, "label": top[0],
                     "limiter": top[1], "ncu_kernels": [int(i) for i in g["index"].tolist()[:20]]}
    return out


def _part(name: str, ns: float, span: int, why: str) -> dict[str, Any]:
    return {"part": name, "seconds": round(ns / 1e9, 9), "share": round(ns / span, 9) if span else None,
            "why": why}


def waterfall(r: ParseResult, device: str, ta: TimelineAnalysis, ncu: pd.DataFrame) -> dict[str, Any] | None:
    """The waterfall of one input's device (None when the device has no span)."""
    dt, verdict = ta.devices[(r.accounting.path, device)]
    span = dt.busy.span
    if span <= 0:
        return None
    ev = r.events
    k = ev[(ev["kind"] == "kernel") & (ev["device"] == device)]
    dur = (k["end_ns"] - k["start_ns"]).to_numpy(dtype=np.int64)
    matches = match(k[["name", "grid_dim", "block_dim"]].drop_duplicates("name"), ncu)
    ksum = int(dur.sum())
    scale = dt.kernel_busy_ns / ksum if ksum else 0.0
    floor = 0.0
    above: dict[str, float] = {}
    by_key: dict[str, dict[str, float]] = {}  # above-roofline part -> kernel base name -> its seconds there
    unmatched = 0.0
    names = k["name"].astype(str).to_numpy()
    per_name = pd.Series(dur, index=names).groupby(level=0).sum()
    for name, t in per_name.items():
        m = matches.get(str(name))
        if m is None:
            unmatched += t * scale
            continue
        eff = m["eff"] if m["eff"] is not None else 0.0
        floor += eff * t * scale
        key = f"above roofline: {m['label']} / {m['limiter']}"
        above[key] = above.get(key, 0.0) + (1 - eff) * t * scale
        who = by_key.setdefault(key, {})
        short = display_name(str(name), 200)
        who[short] = who.get(short, 0.0) + (1 - eff) * t * scale
    copies = dt.busy.busy - dt.kernel_busy_ns
    parts = [_part("kernels at roofline", floor, span, f"matched kernel time x ncu achieved/attainable ({RULE})")]
    parts += [{**_part(n, v, span, f"matched kernel time x (1 - efficiency), by the ncu label ({RULE})"),
               "kernels": [{"name": kn, "seconds": round(ks / 1e9, 9)} for kn, ks in
                           sorted(by_key[n].items(), key=lambda kv: (-kv[1], kv[0]))[:KERNELS_NAMED]]}
              for n, v in sorted(above.items(), key=lambda kv: -kv[1])]
    parts.append(_part("kernels without an ncu match", unmatched, span, f"no ncu kernel of that name or shape ({RULE})"))
    parts.append(_part("copies/sets alone", copies, span, "GPU busy minus kernel busy (docs/formulas.md#timelines)"))
    for cause in ("sync", "launch", "host"):
        parts.append(_part(f"idle: {cause}", verdict.idle_split.get(cause, 0.0), span,
                           "idle gaps by cause (docs/formulas.md#timelines)"))
    return {"input": r.accounting.path, "device": device, "span_s": round(span / 1e9, 9),
            "matched_names": len(matches), "trace_names": int(per_name.size), "parts": parts,
            "matches": [{"name": n, **m} for n, m in list(matches.items())[:50]]}


RECOMMEND = {
    "idle: launch": "fuse small kernels or capture the step in a CUDA graph (fewer launches)",
    "idle: sync": "remove the synchronising calls between launches (non_blocking copies, no .item() in the loop)",
    "idle: host": "feed the GPU sooner: overlap data loading and host work, or move it off the critical path",
    "copies/sets alone": "overlap copies with compute (pinned memory, separate streams) or keep data on the GPU",
}


def findings(waterfalls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Recoverable parts as findings (``est_saving_s`` = the part's seconds), for ranking with the
    kernel findings."""
    out = []
    for w in waterfalls:
        for p in w["parts"]:
            name = p["part"]
            if name in ("kernels at roofline", "kernels without an ncu match") or not p["seconds"]:
                continue
            if name.startswith("idle: "):  # the trace's own findings (docs/formulas.md#timeline-findings)
                continue
            where = f"{str(w['input']).rsplit('/', 1)[-1]} GPU {w['device']}"
            share = f"{100 * (p['share'] or 0):.1f}% of the span"
            extra: dict[str, Any] = {}
            if name.startswith("above roofline: "):
                label, limiter = name.removeprefix("above roofline: ").split(" / ", 1)
                named = p.get("kernels") or []
                names = ", ".join(display_name(str(k["name"]), 48) for k in named)
                title = (f"{where}: kernels ncu calls {label} ({limiter}) spend {share} beyond their roofline "
                         f"bound: {names}")
                rec = f"{names}: {recommendation(label, limiter)}"
                extra = {"label": label, "limiter": limiter}
                ev = [p["why"], *(f"{k['name']}: {1e6 * float(k['seconds']):.4g} µs beyond its roofline bound"
                                  for k in named)]
            else:
                title, rec, ev = f"{where}: {name} is {share}", RECOMMEND.get(name, ""), [p["why"]]
            out.append({"rank": 0, "rule": "timeline-" + re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-"),
                        "severity": severity(float(p["share"] or 0.0), True),
                        "title": title, "kernels": [], "time_share": p["share"], "est_saving_s": p["seconds"],
                        "recommendation": rec, **extra, "source": "timeline", "evidence": ev})
    return out


def rank_together(kernel_findings: list[dict[str, Any]], timeline_findings: list[dict[str, Any]],
                  top: int) -> list[dict[str, Any]]:
    """Kernel, op and timeline findings in one list by severity, then estimated saving (largest first),
    ranks renumbered (docs/formulas.md#findings: severity first, as :func:`rank_findings`)."""
    both = sorted(kernel_findings + timeline_findings,
                  key=lambda f: (SEVERITY_ORDER.get(str(f.get("severity")), len(SEVERITY_ORDER)),
                                 -(f.get("est_saving_s") or 0.0)))[:top]
    return [{**f, "rank": i} for i, f in enumerate(both, start=1)]


def join(results: list[ParseResult], ta: TimelineAnalysis, kernels: pd.DataFrame,
         kernel_results: pd.DataFrame) -> list[dict[str, Any]]:
    """The waterfall of every device of every timeline input, against all ncu kernels given."""
    if not len(kernel_results) or not ta.devices:
        return []
    ncu = _ncu_table(kernels, kernel_results)
    out = []
    for r in results:
        if not len(r.events):
            continue
        for device in r.events.loc[r.events["kind"].isin(GPU_KINDS), "device"].dropna().unique().tolist():
            if (r.accounting.path, device) in ta.devices:
                w = waterfall(r, str(device), ta, ncu)
                if w is not None:
                    out.append(w)
    return out
