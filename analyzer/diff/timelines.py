"""Two timelines compared by what changed (docs/formulas.md#timeline-diff): per device the busy and
idle time, idle by gap bucket and by cause, kernel time per family, step time; the gated series
(kernel families' launch durations, step times) with the diff's gate (:mod:`analyzer.diff.gate`).

Pure functions over the parsers' events tables and :class:`analyzer.timeline.TimelineAnalysis`;
:func:`analyzer.timeline.diff.run_trace_diff` assembles the document.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from rooftop.analyzer.diff import stats
from rooftop.analyzer.diff.deltas import pct
from rooftop.analyzer.diff.gate import Gate, decide
from rooftop.analyzer.diff.verdict import short_name
from rooftop.analyzer.kernels.families import qualified_name
from rooftop.analyzer.schema.vocab import SIDES as _SIDES
from rooftop.analyzer.timeline import TimelineAnalysis
from rooftop.analyzer.timeline.metrics import GAP_LONG_NS, GAP_SHORT_NS

SIDES = _SIDES
SEP = "\x1f"
"""Joins a series key's parts (device, kind, family, grid, block) into the statistics' series id."""

GAP_BUCKETS = {"lt_10us": "gaps < 10 µs", "10_to_100us": "gaps 10–100 µs", "gt_100us": "gaps > 100 µs"}
CAUSES = {"sync": "sync (the host blocked in a synchronisation)", "launch": "launch (other gaps < 10 µs)",
          "host": "host (other gaps ≥ 10 µs)"}
STEP_KIND = "profiler-step"
MAX_CHANGES = 200
"""Change rows kept in the document, largest first (the verdict's sentences use the first few)."""


# ----------------------------------------------------------------------------- gated series


def _dims(col: pd.Series) -> pd.Series:
    return col.astype(object).where(col.notna(), "").astype(str)


def kernel_samples(events: pd.DataFrame, side: str) -> pd.DataFrame:
    """One row per kernel launch: ``series`` = device, ``kernel``, family (qualified name), grid,
    block joined by :data:`SEP`; ``side``; ``duration_s``; ``name`` (the launch's full name)."""
    k = events[events["kind"] == "kernel"]
    names = k["name"].astype(object).where(k["name"].notna(), "").astype(str)
    codes, uniques = pd.factorize(names)
    fam = np.array([qualified_name(u) for u in uniques], dtype=object)[codes] if len(k) else np.array([], dtype=object)
    dev = k["device"].astype(object).where(k["device"].notna(), "?").astype(str).to_numpy()
    grid = _dims(k["grid_dim"]).to_numpy() if "grid_dim" in k else np.full(len(k), "", dtype=object)
    block = _dims(k["block_dim"]).to_numpy() if "block_dim" in k else np.full(len(k), "", dtype=object)
    key = pd.Series(dev, dtype=object) + SEP + "kernel" + SEP + pd.Series(fam, dtype=object) + SEP \
        + pd.Series(grid, dtype=object) + SEP + pd.Series(block, dtype=object)
    dur = (k["end_ns"].to_numpy(dtype=np.int64) - k["start_ns"].to_numpy(dtype=np.int64)) / 1e9
    return pd.DataFrame({"series": key.to_numpy(), "side": side, "duration_s": dur, "name": names.to_numpy()})


def step_samples(steps: Sequence[dict[str, Any]], side: str) -> pd.DataFrame:
    """One row per step: ProfilerStep#N ranges as ``step`` series of their device, and top-level
    ranges whose name repeats on a device as ``range`` series (wall time of each)."""
    rows = []
    for s in steps:
        dev, wall = str(s.get("device")), s.get("wall_s")
        if wall is None:
            continue
        if s.get("kind") == STEP_KIND:
            rows.append((SEP.join([dev, "step", "ProfilerStep#N", "", ""]), float(wall), str(s.get("name"))))
        else:
            rows.append((SEP.join([dev, "range", str(s.get("name")), "", ""]), float(wall), str(s.get("name"))))
    out = pd.DataFrame(rows, columns=["series", "duration_s", "name"])
    out.insert(1, "side", side)
    return out


def repeated(samples: pd.DataFrame) -> pd.DataFrame:
    """Range series kept only when their name repeats on both sides (a unit of work done again)."""
    is_range = samples["series"].str.split(SEP).str[1] == "range"
    counts = samples[is_range].groupby(["series", "side"]).size().unstack(fill_value=0)
    keep = set(counts.index[(counts.get("baseline", 0) >= 2) & (counts.get("candidate", 0) >= 2)]) \
        if len(counts) else set()
    return samples[~is_range | samples["series"].isin(keep)]


def series_table(samples: pd.DataFrame, gate: Gate, alpha: float = stats.ALPHA) -> pd.DataFrame:
    """Per series: the statistics, status and what decided it, key parts, time on each side."""
    if not len(samples):
        return pd.DataFrame()
    st = stats.compare_series(samples[["series", "side", "duration_s"]], alpha=alpha)
    st["status"], st["decided_by"] = decide(st, gate.threshold)
    parts = pd.Series(st.index, index=st.index).str.split(SEP)
    st["gpu"], st["kind"], st["family"] = parts.str[0], parts.str[1], parts.str[2]
    st["grid"], st["block"] = parts.str[3], parts.str[4]
    sums = samples.groupby(["series", "side"])["duration_s"].sum().unstack()
    st["time_base_s"] = sums.get("baseline", pd.Series(dtype=float)).reindex(st.index)
    st["time_cand_s"] = sums.get("candidate", pd.Series(dtype=float)).reindex(st.index)
    st["delta_s"] = st["time_cand_s"].fillna(0.0) - st["time_base_s"].fillna(0.0)
    names = samples.drop_duplicates("series").set_index("series")["name"]
    st["name"] = names.reindex(st.index)
    st["note"] = [_note(k, m, int(a), int(b)) for k, m, a, b in
                  zip(st["kind"], st["method"], st["n_base"], st["n_cand"], strict=True)]
    what = np.where(st["kind"] == "kernel", "median launch", "median wall time")
    st["explanation"] = [f"{w} {pct(c)}" for w, c in zip(what, st["change"], strict=True)]
    st["nvtx"] = ""
    st["short_name"] = [_label(r) for r in st.itertuples()]
    st["series_name"] = st["short_name"]
    return st.reset_index(names="key")


def _label(r: Any) -> str:
    if r.kind == "step":
        return f"GPU {r.gpu}: step time (ProfilerStep#N)"
    if r.kind == "range":
        return f"GPU {r.gpu}: range {short_name(r.family)}"
    return short_name(r.family, r.grid or None, r.block or None, None, r.gpu)


def _note(kind: str, method: str, n_base: int, n_cand: int) -> str:
    what = "launches" if kind == "kernel" else "steps" if kind == "step" else "ranges"
    if method == "mann-whitney":
        return f"{n_base} vs {n_cand} {what}: Mann–Whitney U, Holm-adjusted"
    if min(n_base, n_cand) <= 1:
        return f"single {what[:-1]}: threshold only"
    return f"{min(n_base, n_cand)} {what}: too few for a test here, threshold only"


SERIES_FIELDS = ["series", "short_name", "kind", "device", "family", "name", "grid", "block", "status",
                 "decided_by", "method", "note", "n_base", "n_cand", "median_base_s", "median_cand_s", "change",
                 "p_value", "p_adjusted", "significant", "time_base_s", "time_cand_s", "delta_s", "explanation"]


def series_records(table: pd.DataFrame) -> list[dict[str, Any]]:
    """Contract records of the timeline series (``SERIES_FIELDS``, plus ``change_pct``)."""
    out = []
    for r in table.itertuples():
        rec = {"series": r.short_name, "short_name": r.short_name, "kind": r.kind, "device": r.gpu,
               "family": r.family, "name": r.name, "grid": r.grid or None, "block": r.block or None,
               "status": r.status, "decided_by": r.decided_by or None, "method": r.method, "note": r.note,
               "n_base": int(r.n_base), "n_cand": int(r.n_cand), "median_base_s": _f(r.median_base_s),
               "median_cand_s": _f(r.median_cand_s), "change": _f(r.change), "p_value": _f(r.p_value),
               "p_adjusted": _f(r.p_adjusted), "significant": bool(r.significant),
               "time_base_s": _f(r.time_base_s), "time_cand_s": _f(r.time_cand_s), "delta_s": _f(r.delta_s),
               "explanation": r.explanation}
        c = rec["change"]
        rec["change_pct"] = None if c is None else float(c) * 100.0
        out.append(rec)
    return out


def _f(v: Any) -> float | None:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


# ----------------------------------------------------------------------------- what changed


def _both(b: float | None, c: float | None) -> dict[str, Any]:
    delta = None if b is None or c is None else round(c - b, 9)
    change = None if b is None or c is None or b == 0 else c / b - 1.0
    return {"baseline": b, "candidate": c, "delta": delta, "change": change}


def gap_split(gaps_ns: np.ndarray) -> dict[str, tuple[int, float]]:
    """(count, idle seconds) per gap bucket, with the buckets of docs/formulas.md#timelines."""
    g = np.asarray(gaps_ns, dtype=np.int64)
    masks = {"lt_10us": g < GAP_SHORT_NS, "10_to_100us": (g >= GAP_SHORT_NS) & (g <= GAP_LONG_NS),
             "gt_100us": g > GAP_LONG_NS}
    return {k: (int(m.sum()), round(float(g[m].sum()) / 1e9, 9)) for k, m in masks.items()}


def device_parts(ta: TimelineAnalysis) -> dict[str, dict[str, Any]]:
    """Per device of one side: idle by gap bucket (count, seconds), idle by cause (seconds), the
    timeline entry, and its steps."""
    out: dict[str, dict[str, Any]] = {}
    entries = {str(e["device"]): e for e in ta.timeline}
    for (_inp, device), (dt, verdict) in ta.devices.items():
        out[str(device)] = {
            "entry": entries.get(str(device), {}),
            "gaps": gap_split(dt.busy.gaps),
            "causes": {k: round(float(v) / 1e9, 9) for k, v in verdict.idle_split.items()},
        }
    for s in ta.steps:
        d = out.setdefault(str(s.get("device")), {"entry": {}, "gaps": {}, "causes": {}})
        d.setdefault("steps", []).append(s)
    return out


def device_changes(parts: Sequence[dict[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Per device (either side): both sides of idle by gap bucket and by cause, gap counts, steps."""
    out: dict[str, dict[str, Any]] = {}
    for device in sorted(set(parts[0]) | set(parts[1])):
        b, c = parts[0].get(device, {}), parts[1].get(device, {})
        gb, gc = b.get("gaps") or {}, c.get("gaps") or {}
        cb, cc = b.get("causes") or {}, c.get("causes") or {}
        nsteps = [sum(1 for s in side.get("steps", []) if s.get("kind") == STEP_KIND) for side in (b, c)]
        out[device] = {
            "idle_by_gap_s": {k: _both(gb.get(k, (0, None))[1] if b else None, gc.get(k, (0, None))[1] if c else None)
                              for k in GAP_BUCKETS},
            "gap_count": {k: _both(float(gb[k][0]) if k in gb else None, float(gc[k][0]) if k in gc else None)
                          for k in GAP_BUCKETS},
            "idle_by_cause_s": {k: _both(cb.get(k) if b else None, cc.get(k) if c else None) for k in CAUSES},
            "host_idle_by_activity_s": _activities(b.get("entry") or {}, c.get("entry") or {}, bool(b), bool(c)),
            "steps": {"baseline": nsteps[0], "candidate": nsteps[1]},
        }
    return out


def _activities(eb: dict[str, Any], ec: dict[str, Any], has_b: bool, has_c: bool) -> dict[str, dict[str, Any]]:
    """Both sides of the host idle time by what the host ran (``host_idle_by_activity_s``, #timelines)."""
    ab, ac = eb.get("host_idle_by_activity_s") or {}, ec.get("host_idle_by_activity_s") or {}
    return {k: _both(ab.get(k, 0.0) if has_b else None, ac.get(k, 0.0) if has_c else None)
            for k in sorted(set(ab) | set(ac))}


def ranked_changes(rows: dict[str, dict[str, Any]], series: pd.DataFrame,
                   entries: Sequence[dict[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """Every compared quantity as one change row, the largest absolute time change first: per device
    idle by gap bucket, idle by cause, copy time, and kernel time per family (sums over the capture);
    step time (median) where steps exist."""
    out: list[dict[str, Any]] = []

    def add(device: str, what: str, name: str, both: dict[str, Any], count: dict[str, Any] | None = None,
            family: str | None = None) -> None:
        if both.get("delta") is None and both.get("baseline") is None and both.get("candidate") is None:
            return
        rec = {"device": device, "what": what, "name": name, **both}
        if count is not None:
            rec["count"] = {"baseline": count.get("baseline"), "candidate": count.get("candidate")}
        if family is not None:
            rec["family"] = family
        out.append(rec)

    for device, r in rows.items():
        for k, label in GAP_BUCKETS.items():
            add(device, "idle-gaps", label, r["idle_by_gap_s"][k], r["gap_count"][k])
        for k, label in CAUSES.items():
            add(device, "idle-cause", label, r["idle_by_cause_s"][k])
        for k, both in r.get("host_idle_by_activity_s", {}).items():
            add(device, "host-activity", k, both)
        eb, ec = (e.get(device, {}) for e in entries)
        for f, label in (("memcpy_sum_s", "copy time"), ("memset_sum_s", "memset time")):
            add(device, "copies", label, _both(eb.get(f) if eb else None, ec.get(f) if ec else None))
    if len(series):
        for s in series.itertuples():
            if s.kind == "kernel":
                tb = 0.0 if not s.n_base else _f(s.time_base_s)
                tc = 0.0 if not s.n_cand else _f(s.time_cand_s)
                add(str(s.gpu), "kernel", s.short_name, _both(tb, tc),
                    {"baseline": int(s.n_base), "candidate": int(s.n_cand)}, family=str(s.family))
            elif s.n_base and s.n_cand:
                add(str(s.gpu), s.kind, s.short_name, _both(_f(s.median_base_s), _f(s.median_cand_s)),
                    {"baseline": int(s.n_base), "candidate": int(s.n_cand)})
    order = {"step": 0, "range": 1, "idle-gaps": 2, "idle-cause": 3, "host-activity": 4, "kernel": 5, "copies": 6}
    out.sort(key=lambda x: (-abs(x.get("delta") or 0.0), x["device"], order.get(x["what"], 9), x["name"]))
    for rec in out:
        rec["text"] = change_text(rec)
    return out[:MAX_CHANGES]


def ms(v: float | None) -> str:
    """Seconds to 3 significant digits, trailing zeros kept: ``26.0 ms``, ``274 ms``, ``1.50 s``,
    ``880 µs``; ``n/a`` when unknown."""
    if v is None or not math.isfinite(v):
        return "n/a"
    a = abs(v)
    scaled, unit = (v, "s") if a >= 1 else (v * 1e3, "ms") if a >= 1e-3 or a == 0 else (v * 1e6, "µs")
    x = abs(scaled)
    decimals = 0 if x == 0 or x >= 100 else 1 if x >= 10 else 2
    return f"{scaled:.{decimals}f} {unit}"


def _chg(c: float | None) -> str:
    return "new" if c is None else pct(c)


def change_text(rec: dict[str, Any]) -> str:
    """One change row in words: ``GPU 0 idle in gaps 10–100 µs: 5.21 → 30.1 ms (+478 %; 176 → 779 gaps)``."""
    dev, what, name = rec["device"], rec["what"], rec["name"]
    b, c = rec.get("baseline"), rec.get("candidate")
    n = rec.get("count") or {}
    if what == "idle-gaps":
        head = f"GPU {dev} idle in {name}"
        tail = f"; {_n(n.get('baseline'))} → {_n(n.get('candidate'))} gaps"
    elif what == "idle-cause":
        head, tail = f"GPU {dev} idle by cause {name}", ""
    elif what == "host-activity":
        head, tail = f"GPU {dev} host idle while the host ran {name}", ""
    elif what == "copies":
        head, tail = f"GPU {dev} {name}", ""
    elif what == "kernel":
        head = f"{name} kernel time"
        tail = f"; {_n(n.get('baseline'))} → {_n(n.get('candidate'))} launches"
    else:
        head = f"{name} median"
        tail = f"; {_n(n.get('baseline'))} → {_n(n.get('candidate'))} {'steps' if what == 'step' else 'ranges'}"
    return f"{head}: {ms(b)} → {ms(c)} ({_chg(rec.get('change')) if b else 'new'}{tail})"


def _n(v: Any) -> str:
    return "?" if v is None else f"{int(v)}"


def headline(device: str, row: dict[str, Any]) -> str:
    """``GPU 0: idle 26.0 → 59.1 ms (+127 %), busy 274 → 240 ms of a 300 → 299 ms capture``."""
    idle, busy, span = (row.get(k) or {} for k in ("idle_s", "gpu_busy_s", "span_s"))
    return (f"GPU {device}: idle {ms(idle.get('baseline'))} → {ms(idle.get('candidate'))} "
            f"({_chg(_ratio(idle))}), busy {ms(busy.get('baseline'))} → {ms(busy.get('candidate'))} "
            f"({_chg(_ratio(busy))}) of a {ms(span.get('baseline'))} → {ms(span.get('candidate'))} capture")


def _ratio(both: dict[str, Any]) -> float | None:
    b, c = both.get("baseline"), both.get("candidate")
    return None if b is None or c is None or b == 0 else c / b - 1.0


def same_work(series: pd.DataFrame) -> bool:
    """Both captures hold the same kernel launches: every kernel series (device, family, grid,
    block) has as many launches on each side, and there is at least one."""
    k = series[series["kind"] == "kernel"] if len(series) else series
    return bool(len(k)) and bool((k["n_base"] == k["n_cand"]).all())


def throughput(rows: dict[str, dict[str, Any]], series: pd.DataFrame) -> tuple[str | None, str]:
    """How throughput is compared, if at all (``step``, ``span`` or None), and the sentence saying
    so (docs/formulas.md#timeline-diff)."""
    steps = series[(series["kind"] == "step") & (series["n_base"] > 0) & (series["n_cand"] > 0)] \
        if len(series) else series
    if len(steps):
        gpus = ", ".join(sorted(set(steps["gpu"].astype(str))))
        return "step", (f"throughput compared by step time (ProfilerStep#N on GPU {gpus}); "
                        "idle and kernel time are sums over each capture")
    if same_work(series):
        return "span", ("both captures hold the same kernel launches (every family as many times on every GPU), "
                        "so each GPU's span is the time of the same work: throughput compared by span (a sum, "
                        "not a test)")
    one = [d for d, r in rows.items() if (r["steps"]["baseline"] > 0) != (r["steps"]["candidate"] > 0)]
    if one:
        return None, (f"step markers (ProfilerStep#N) on one side only (GPU {', '.join(one)}) and different kernel "
                      "launches: throughput cannot be compared; idle and kernel time are sums over captures that "
                      "may hold different work")
    return None, ("these captures have no step markers (ProfilerStep#N) and hold different kernel launches, so "
                  "throughput cannot be compared: idle and kernel time are sums over capture windows that may hold "
                  "different work (record steps with torch.profiler's prof.step() to compare step time)")
