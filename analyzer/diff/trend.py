"""``rooftop trend RUN...``: each kernel family's time across N runs, its between-run noise band, and
the run where a change started (docs/formulas.md#trend).

Pure functions over one launch-duration frame per run (columns ``key``, ``label``, ``duration_s``);
:func:`read_run` turns a saved analysis, an ncu export or a timeline into one.

The run value of a family is its median launch duration in that run (the diff's effect measure).
Between runs, a family's values are judged against the runs since its last change:

* centre = median of those runs; between-run spread σ = 1.4826 × MAD of them (the normal-consistent
  median absolute deviation, ``scipy.stats.median_abs_deviation(scale="normal")``) once there are
  at least :data:`MIN_REFERENCE` of them, else unknown (0);
* the noise band is centre ± max(``min_effect`` × centre, :data:`K_SIGMA` × σ);
* a run outside the band on the same side as the next run starts a change (confirmed); the last run
  outside the band starts an unconfirmed one (no later run to confirm it); a single run outside the
  band with the next one back inside is an outlier, not a change. After a change the reference
  restarts at that run.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff.deltas import pct
from rooftop.analyzer.diff.gate import MIN_EFFECT_PCT, check_pct
from rooftop.analyzer.kernels.families import display_name
from rooftop.analyzer.schema import Document
from rooftop.errors import InputError

K_SIGMA = 3.0
"""Half-width of the noise band in robust standard deviations (3σ: ~99.7 % of a normal spread)."""
MIN_REFERENCE = 3
"""Runs needed before their spread is estimated (a MAD of two values is half their difference)."""
MAX_FAMILIES = 200
"""Families listed in the document, largest total time first (the changes cover all of them)."""
MAD_SCALE = 1.4826
"""1 / Φ⁻¹(3/4): makes the MAD a consistent estimate of σ for normal data."""


@dataclass
class Run:
    """One run as read: its launches (``key``, ``label``, ``duration_s``) and where they came from."""

    path: str
    source: str  # "analysis", "profile" (ncu) or "timeline"
    launches: pd.DataFrame
    lint: list[dict[str, Any]] = field(default_factory=list)


def _kernel_launches(results: pd.DataFrame) -> pd.DataFrame:
    from rooftop.analyzer.diff.match import identify
    from rooftop.analyzer.diff.verdict import short_name

    ided = identify(results)
    labels = {s: short_name(f, g, b, n) for s, f, g, b, n in
              ided[["series", "family", "grid", "block", "nvtx"]].drop_duplicates("series").itertuples(index=False)}
    dur = pd.to_numeric(ided["duration_s"], errors="coerce") if "duration_s" in ided else pd.Series(np.nan)
    return pd.DataFrame({"key": ided["series"].astype(str), "label": ided["series"].map(labels),
                         "duration_s": dur.astype(float)})


def read_run(path: str, device: str | None = None) -> Run:
    """A saved ``rooftop analyze --json``, an ncu export (file or folder) or an nsys/Kineto timeline."""
    from rooftop.analyzer.diff.saved import read_document
    from rooftop.analyzer.diff.sides import frame_from_document

    p = Path(path)
    if not p.exists():
        raise InputError(path, "does not exist", "pass saved analyses (--json), ncu exports or traces, in order")
    doc = read_document(p) if p.is_file() else None
    if doc is not None:
        return Run(path, "analysis", _kernel_launches(frame_from_document(doc, path)))
    from rooftop.analyzer.timeline.diff import is_trace_pair

    if p.is_file() and is_trace_pair(path, path):
        from rooftop.analyzer.diff.timelines import SEP, kernel_samples
        from rooftop.analyzer.diff.verdict import short_name
        from rooftop.parsers import open_input, parse_input

        k = kernel_samples(parse_input(open_input(path)).events, "run")
        parts = k["series"].str.split(SEP)
        label = [short_name(f, g or None, b or None, None, d) for d, f, g, b in
                 zip(parts.str[0], parts.str[2], parts.str[3], parts.str[4], strict=True)]
        return Run(path, "timeline", pd.DataFrame({"key": k["series"], "label": label,
                                                   "duration_s": k["duration_s"].astype(float)}))
    from rooftop.analyzer.pipeline import analyze_inputs

    ai = analyze_inputs([path], device)
    if not len(ai.results):
        raise InputError(path, "holds no kernel launches", "pass saved analyses (--json), ncu exports or traces")
    return Run(path, "profile", _kernel_launches(ai.results), list(ai.lint))


def run_values(runs: Sequence[Run]) -> pd.DataFrame:
    """Per (family key, run): launches, median and total duration; ``label`` per key."""
    parts = []
    for i, r in enumerate(runs):
        d = r.launches[np.isfinite(r.launches["duration_s"].to_numpy(dtype=float))]
        g = d.groupby("key", sort=True)["duration_s"]
        parts.append(pd.DataFrame({"run": i, "n": g.size(), "median_s": g.median(), "total_s": g.sum()}))
    vals = pd.concat(parts).reset_index(names="key") if parts else pd.DataFrame()
    labels = pd.concat([r.launches[["key", "label"]] for r in runs]).drop_duplicates("key").set_index("key")["label"]
    vals["label"] = vals["key"].map(labels)
    return vals


def _robust_sigma(x: np.ndarray) -> float:
    from scipy.stats import median_abs_deviation

    if len(x) < MIN_REFERENCE:
        return 0.0
    return float(median_abs_deviation(x, scale="normal"))


def detect(values: Sequence[float], min_effect: float = MIN_EFFECT_PCT, k_sigma: float = K_SIGMA) -> dict[str, Any]:
    """Bands and change points of one family's run values (NaN: the family did not run; skipped).

    Returns ``bands`` (per run: centre, low, high of the band it was judged against, or None for the
    first run of a segment), ``changes`` ([{run, direction, change, confirmed}]) and ``noise_pct``
    (1.4826 × MAD / median of the first segment's runs, %; None with fewer than
    :data:`MIN_REFERENCE`)."""
    v = np.asarray(values, dtype=float)
    runs = np.flatnonzero(np.isfinite(v))
    bands: list[dict[str, float] | None] = [None] * len(v)
    changes: list[dict[str, Any]] = []
    start = 0  # index into ``runs`` of the current segment's first run
    first_segment_end = len(runs)
    i = 1
    while i < len(runs):
        ref = v[runs[start:i]]
        centre = float(np.median(ref))
        half = max(min_effect / 100.0 * abs(centre), k_sigma * _robust_sigma(ref))
        bands[runs[i]] = {"centre": centre, "low": centre - half, "high": centre + half}
        side = _side(v[runs[i]], centre, half)
        if side:
            nxt = _side(v[runs[i + 1]], centre, half) if i + 1 < len(runs) else None
            if nxt is None or nxt == side:
                changes.append({"run": int(runs[i]), "direction": "slower" if side > 0 else "faster",
                                "change": v[runs[i]] / centre - 1.0 if centre else None,
                                "confirmed": nxt is not None})
                if first_segment_end == len(runs):
                    first_segment_end = i
                start = i
        i += 1
    first = v[runs[:first_segment_end]]
    med = float(np.median(first)) if len(first) else math.nan
    noise = 100.0 * _robust_sigma(first) / med if len(first) >= MIN_REFERENCE and med else None
    return {"bands": bands, "changes": changes, "noise_pct": noise}


def _side(x: float, centre: float, half: float) -> int:
    return 1 if x > centre + half else -1 if x < centre - half else 0


def trend_payload(runs: Sequence[Run], min_effect: float = MIN_EFFECT_PCT) -> dict[str, Any]:
    """The document's ``trend`` key: runs, per family the run values, bands and changes, the noise."""
    check_pct(min_effect, "--min-effect")
    vals = run_values(runs)
    n = len(runs)
    fams = []
    for key, g in vals.groupby("key", sort=False):
        by_run = g.set_index("run")
        med = [float(by_run["median_s"].get(i, np.nan)) for i in range(n)]
        det = detect(med, min_effect)
        fams.append({
            "key": str(key), "label": str(g["label"].iloc[0]),
            "total_s": float(g["total_s"].sum()),
            "runs": [None if i not in by_run.index else
                     {"n": int(by_run.at[i, "n"]), "median_s": float(by_run.at[i, "median_s"]),
                      "total_s": float(by_run.at[i, "total_s"])} for i in range(n)],
            "bands": det["bands"], "changes": det["changes"], "noise_pct": det["noise_pct"],
        })
    fams.sort(key=lambda f: (-f["total_s"], f["key"]))
    changes = [{"family": f["label"], "key": f["key"], **c} for f in fams for c in f["changes"]]
    changes.sort(key=lambda c: (c["run"], -abs(c["change"] or 0.0), c["key"]))
    noise = [f["noise_pct"] for f in fams[:20] if f["noise_pct"] is not None]
    noise_summary = {
        "families_measured": len(noise),
        "median_pct": float(np.median(noise)) if noise else None,
        "p90_pct": float(np.percentile(noise, 90)) if noise else None,
    }
    return {
        "runs": [{"index": i, "path": r.path, "source": r.source, "launches": len(r.launches)}
                 for i, r in enumerate(runs)],
        "min_effect_pct": min_effect, "k_sigma": K_SIGMA, "min_reference": MIN_REFERENCE,
        "families": fams[:MAX_FAMILIES], "listed": [min(len(fams), MAX_FAMILIES), len(fams)],
        "changes": changes, "noise": noise_summary,
        "summary": summary_text(changes, noise_summary, runs, min_effect),
    }


def summary_text(changes: Sequence[dict[str, Any]], noise: dict[str, Any], runs: Sequence[Run],
                 min_effect: float) -> str:
    """One paragraph: where changes started (the first few), and the measured between-run noise."""
    if changes:
        named = "; ".join(
            f"{display_name(str(c['family']), 80)} {c['direction']} from run {c['run'] + 1} ({pct(c['change'])}"
            f"{'' if c['confirmed'] else ', unconfirmed: the last run'})" for c in changes[:5])
        more = f" and {len(changes) - 5} more" if len(changes) > 5 else ""
        text = f"{len(changes)} change(s) over {len(runs)} runs: {named}{more}."
    else:
        text = f"No family left its noise band over {len(runs)} runs (band ≥ ±{min_effect:g} %)."
    if noise["p90_pct"]:
        text += (f" Between-run noise of the top families (1.4826 × MAD of their run medians): median "
                 f"{noise['median_pct']:.2g} %, 90th percentile {noise['p90_pct']:.2g} %; a diff's --min-effect "
                 f"below that would gate on noise.")
    elif noise["p90_pct"] is None:
        text += f" Between-run noise needs at least {MIN_REFERENCE} runs of a family before a change."
    return text


def _run_lint(runs: Sequence[Run]) -> list[dict[str, Any]]:
    """Each run's lint once: an entry several runs share names them (``run``: the first)."""
    seen: dict[tuple[str, str], dict[str, Any]] = {}
    where: dict[tuple[str, str], list[int]] = {}
    for i, r in enumerate(runs):
        for lt in r.lint:
            key = (str(lt.get("code")), str(lt.get("message")))
            seen.setdefault(key, {**lt, "run": i})
            where.setdefault(key, []).append(i + 1)
    out = []
    for key, lt in seen.items():
        runs_of = sorted(set(where[key]))
        if len(runs_of) > 1:
            lt = {**lt, "message": f"{lt.get('message')} (runs {', '.join(map(str, runs_of))})"}
        out.append(lt)
    return out


def run_trend(paths: Sequence[str], *, device: str | None = None, min_effect: float = MIN_EFFECT_PCT,
              command: str = "") -> Document:
    """The whole ``trend`` job: the contract document of kind ``trend`` (docs/contract.md)."""
    from rooftop.analyzer.document import build_document

    check_pct(min_effect, "--min-effect")
    if len(paths) < 2:
        raise InputError("RUN", f"{len(paths)} run(s) given", "pass at least two runs, oldest first")
    runs = [read_run(p, device) for p in paths]
    lint = _run_lint(runs)
    sources = sorted({r.source for r in runs} - {"analysis"})
    if len(sources) > 1:
        lint.append({"code": "trend-mixed-sources", "kernels": [],
                     "message": f"runs come from {', '.join(sources)}: a timeline names kernels per GPU, an ncu "
                                "export per launch configuration, so their families do not line up"})
    inputs = [{"path": r.path, "format": r.source, "records": len(r.launches), "missing": 0, "rejected": 0,
               "run": i} for i, r in enumerate(runs)]
    return build_document(kind="trend", inputs=inputs, rejected=[], devices=[], kernels=None, findings=[],
                          lint=lint, command=command, extra={"trend": trend_payload(runs, min_effect)})
