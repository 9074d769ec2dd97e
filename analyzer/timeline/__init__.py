"""Timelines (nsys, Kineto): per input and device metrics, labels, steps. ``docs/formulas.md#timelines``.

:func:`analyze_timelines` turns the parsers' events tables into the document's ``timeline`` list
(one entry per input and device) and ``steps`` list (per ProfilerStep / top-level range and device).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.arrays import NA, ints
from rooftop.analyzer.timeline.batch import batch_metrics, range_members
from rooftop.analyzer.timeline.calls import ASYNC_COPY, GRAPH_LAUNCH, call_keys, made_by
from rooftop.analyzer.timeline.causes import HostActivity, IdleSplit, host_activity
from rooftop.analyzer.timeline.comm import communication
from rooftop.analyzer.timeline.copies import PAGEABLE, copy_kind, copy_table
from rooftop.analyzer.timeline.labels import Verdict, label_device, summary_verdict
from rooftop.analyzer.timeline.metrics import (
    GPU_KINDS,
    Acts,
    DeviceTimeline,
    Union,
    device_metrics,
    union,
)
from rooftop.analyzer.timeline.names import EventNames, arrow_strings
from rooftop.analyzer.timeline.optimizer import optimizer_impl
from rooftop.analyzer.timeline.ranks import NcclKernels, collectives
from rooftop.analyzer.timeline.steps import (
    ITERATION,
    beyond_span,
    interleaved,
    launch_times,
    loader_iterations,
    profiler_steps,
    top_level,
    window_timeline,
)
from rooftop.parsers.model import ParseResult

# blocking host calls (docs/formulas.md#timelines): nsys cuda_api_sync's cudaDeviceSynchronize and
# cudaStreamSynchronize; the event/context waits CUPTI records as synchronisation; the synchronous
# copies of nsys cuda_memcpy_sync (less its host-to-device copies <= 64 KB: see sync_exempt). Not:
# cudaStreamQuery (returns at once) and cudaMemset (asynchronous to the host except on pinned or
# managed memory, nsys cuda_memset_sync). Names compared after the nsys ``_vNNNN`` suffix is stripped.
SYNC_APIS = frozenset(
    f"{p}{n}" for p in ("cuda", "hip") for n in ("DeviceSynchronize", "StreamSynchronize", "EventSynchronize",
                                                 "ThreadSynchronize", "Memcpy", "Memcpy2D")
) | {"cuCtxSynchronize", "cuStreamSynchronize", "cuEventSynchronize", "cuMemcpy", "cuMemcpyDtoH",
     "cuMemcpyHtoD", "cuMemcpyDtoH_v2", "cuMemcpyHtoD_v2"}
SYNC_COPY_MIN_H2D_BYTES = 64 * 1024  # nsys cuda_memcpy_sync leaves out host-to-device copies <= 64 KB
_H2D = re.compile(r"(?i)Host-to-Device|HtoD")  # inline flag: .str.contains gets the text (pandas < 3)
_SYNC_API_SET = pa.array(sorted(SYNC_APIS), type=pa.large_string())
STREAM_WAIT = r"(?i)stream\s*wait"  # Kineto "Stream Wait Event", nsys "Stream wait sync": not a host wait
# the columns of the events table the GPU activity rows are taken with (the rest are not read from them)
ACT_COLUMNS = ("device", "kind", "name", "start_ns", "end_ns", "stream", "pid", "correlation", "bytes")
ENTRY_KEYS = ("input", "device", "gpu_name", "kernels", "memcpy", "memset", "span_s", "kernel_sum_s",
              "kernel_busy_s", "gpu_busy_s", "idle_s", "idle_fraction", "gaps", "short_kernels",
              "top_kernels", "label", "limiter", "evidence")


@dataclass
class TimelineAnalysis:
    timeline: list[dict[str, Any]] = field(default_factory=list)
    steps: list[dict[str, Any]] = field(default_factory=list)
    lint: list[dict[str, Any]] = field(default_factory=list)
    # (input, device) -> the device's numbers and verdict, for the ncu join and diff
    devices: dict[tuple[str, str], tuple[DeviceTimeline, Verdict]] = field(default_factory=dict)
    collectives: list[dict[str, Any]] = field(default_factory=list)  # across ranks (ranks.py)
    nccl: list[tuple[ParseResult, NcclKernels]] = field(default_factory=list)  # each input's NCCL kernels


def is_timeline(result: ParseResult) -> bool:
    return bool(result.meta.get("timeline") or result.meta.get("summary_only"))


def _entry(path: str, device: str | None, gpu: str | None, m: dict[str, Any], v: Verdict) -> dict[str, Any]:
    out: dict[str, Any] = {"input": path, "device": device, "gpu_name": gpu}
    out.update(m)
    out.update({"label": v.label, "limiter": v.limiter, "evidence": v.evidence})
    out["idle_by_cause_s"] = {k: round(ns / 1e9, 9) for k, ns in v.idle_split.items()}
    if v.split.host_by:  # docs/formulas.md#timelines: the host part by what the host ran
        out["host_idle_by_activity_s"] = {k: round(ns / 1e9, 9) for k, ns in
                                          sorted(v.split.host_by.items(), key=lambda kv: -kv[1])}
        out["host_idle_top"] = [{"category": c, "name": n, "seconds": round(ns / 1e9, 9)}
                                for c in out["host_idle_by_activity_s"] for n, ns in v.split.top.get(c, [])]
    ordered = {k: out[k] for k in ENTRY_KEYS}
    ordered.update({k: val for k, val in out.items() if k not in ordered})
    return ordered


def sync_cover(ev: pd.DataFrame, device: str) -> Union:
    """Sync records on ``device`` plus host-wide blocking API calls, merged."""
    return _SyncRows.of(ev).cover(device)


@dataclass
class _SyncRows:
    """The synchronisation records (with their device) and blocking API calls of one input."""

    start: np.ndarray
    end: np.ndarray
    device: np.ndarray  # object: the record's device, None for API calls and device-less records
    is_api: np.ndarray

    @classmethod
    def of(cls, ev: pd.DataFrame, blocking: tuple[np.ndarray, np.ndarray] | None = None) -> _SyncRows:
        rows, api = blocking if blocking is not None else blocking_rows(ev)
        return cls(ev["start_ns"].to_numpy(dtype=np.int64)[rows], ev["end_ns"].to_numpy(dtype=np.int64)[rows],
                   arrow_strings(ev["device"]).take(pa.array(rows, type=pa.int64())).to_numpy(zero_copy_only=False),
                   api[rows])

    def cover(self, device: str) -> Union:
        keep = self.is_api | np.array([d is None or d == device for d in self.device], dtype=bool)
        return union(self.start[keep], self.end[keep])


def blocking_rows(ev: pd.DataFrame, names: EventNames | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the rows during which the host is blocked (sync records other than a stream's
    wait on an event, and the blocking API calls), and the mask of API calls over all rows.
    ``names``: ``ev``'s encoded kinds and names (made here when not given); each name test runs once
    per distinct name (:func:`blocking_rows_ref`: the per-row form, held equal in tests)."""
    n = names if names is not None else EventNames.of(ev)
    sync = n.is_kind("sync")
    rows = np.flatnonzero(sync)
    if len(rows):  # cudaStreamWaitEvent makes a stream wait, not the host (CUPTI STREAM_WAIT_EVENT)
        sync[rows[n.test(rows, lambda a: pc.match_substring_regex(a, STREAM_WAIT))]] = False
    rt = n.rows("runtime")
    api = np.zeros(len(ev), dtype=bool)
    api[rt[n.test(rt, lambda a: pc.is_in(a, value_set=_SYNC_API_SET))]] = True
    calls = np.flatnonzero(api)
    api[calls[sync_exempt(ev, calls, n)]] = False
    copies = rt[n.test(rt, lambda a: pc.match_substring_regex(a, ASYNC_COPY))]
    if len(copies):  # an async copy into pageable memory returns only once the copy is done (a host wait)
        d2h = n.rows("memcpy")
        d2h = d2h[n.test(d2h, lambda a: pa.array([is_d2h_pageable(x) for x in a.to_pylist()], type=pa.bool_()))]
        if len(d2h):
            api[copies[_joined(ev, copies, d2h)]] = True
    return np.flatnonzero(sync | api), api


def is_d2h_pageable(name: str | None) -> bool:
    """A device-to-host copy into pageable memory, by its name (:func:`copies.copy_kind`): an async copy
    call that makes one returns only once the copy has completed (docs/formulas.md#timelines)."""
    if name is None:
        return False
    op, direction, memory = copy_kind(name)
    return op == "memcpy" and direction == "DtoH" and PAGEABLE in memory


def sync_exempt(ev: pd.DataFrame, calls: np.ndarray, names: EventNames | None = None) -> np.ndarray:
    """Which of the runtime rows ``calls`` launched a host-to-device copy of <= 64 KB (joined on
    correlation id and process): nsys cuda_memcpy_sync does not count those as blocking."""
    out = np.zeros(len(calls), dtype=bool)
    n = names if names is not None else EventNames.of(ev)
    copy = n.rows("memcpy")
    if not len(calls) or not len(copy):
        return out
    nbytes = ints(ev["bytes"])[copy]
    small = (nbytes != NA) & (nbytes <= SYNC_COPY_MIN_H2D_BYTES) & n.test(
        copy, lambda a: pc.match_substring_regex(a, _H2D.pattern))
    return _joined(ev, calls, copy[small])


def _joined(ev: pd.DataFrame, calls: np.ndarray, copies: np.ndarray) -> np.ndarray:
    """Per row of ``calls``: whether a row of ``copies`` has its (correlation, pid) key; a copy with no
    process (Kineto GPU activity carries none) is joined by correlation id alone."""
    corr, pid = ints(ev["correlation"]), ints(ev["pid"])
    keys = {(c, p) for c, p in zip(corr[copies].tolist(), pid[copies].tolist(), strict=True) if c != NA}
    out: np.ndarray = made_by(corr[calls], pid[calls], keys)
    if any(p == NA for _, p in keys):
        out |= made_by(corr[calls], np.full(len(calls), NA), keys)
    return out


def blocking_rows_ref(ev: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """:func:`blocking_rows` as plain pandas string passes over all rows (the reference). Positions of the rows during which the host is blocked (sync records other than a stream's
    wait on an event, and the blocking API calls), and the mask of API calls over all rows."""
    kind = ev["kind"]
    sync = (kind == "sync").to_numpy(dtype=bool, na_value=False)
    if sync.any():  # cudaStreamWaitEvent makes a stream wait, not the host (CUPTI STREAM_WAIT_EVENT)
        sync[np.flatnonzero(sync)[ev["name"].iloc[np.flatnonzero(sync)].str.contains(
            STREAM_WAIT, regex=True).to_numpy(dtype=bool, na_value=False)]] = False
    api = ((kind == "runtime") & ev["name"].isin(SYNC_APIS)).to_numpy(dtype=bool, na_value=False)
    api[np.flatnonzero(api)[sync_exempt_ref(ev, np.flatnonzero(api))]] = False
    is_async = ((kind == "runtime") & ev["name"].str.contains(ASYNC_COPY, regex=True)).to_numpy(dtype=bool, na_value=False)
    d2h = ((kind == "memcpy").to_numpy(dtype=bool, na_value=False)
           & np.array([is_d2h_pageable(x) for x in ev["name"].astype(object).where(ev["name"].notna(), None)], dtype=bool))
    corr, pid = ints(ev["correlation"]), ints(ev["pid"])
    keys = {(int(c), int(p)) for c, p in zip(corr[d2h], pid[d2h], strict=True) if c != NA}
    for i in np.flatnonzero(is_async):
        api[i] |= (int(corr[i]), int(pid[i])) in keys or (int(corr[i]), NA) in keys
    return np.flatnonzero(sync | api), api


def sync_exempt_ref(ev: pd.DataFrame, calls: np.ndarray) -> np.ndarray:
    """:func:`sync_exempt` with the name test on every copy row (the reference). Which of the runtime rows ``calls`` launched a host-to-device copy of <= 64 KB (joined on
    correlation id and process): nsys cuda_memcpy_sync does not count those as blocking."""
    out = np.zeros(len(calls), dtype=bool)
    copy = np.flatnonzero((ev["kind"] == "memcpy").to_numpy(dtype=bool, na_value=False))
    if not len(calls) or not len(copy):
        return out
    nbytes = ints(ev["bytes"].iloc[copy])
    names = ev["name"].iloc[copy].fillna("")
    small = (nbytes != NA) & (nbytes <= SYNC_COPY_MIN_H2D_BYTES) & names.str.contains(_H2D.pattern).to_numpy(dtype=bool)
    corr, pid = ints(ev["correlation"]), ints(ev["pid"])
    keys = {(int(c), int(p)) for c, p in zip(corr[copy[small]], pid[copy[small]], strict=True) if c != NA}
    if keys:  # a copy with no process (Kineto) matches its correlation id alone
        out = np.array([(int(c), int(p)) in keys or (int(c), NA) in keys
                        for c, p in zip(corr[calls], pid[calls], strict=True)], dtype=bool)
    return out


def _summary_entries(r: ParseResult) -> list[dict[str, Any]]:
    out = []
    for sec in r.meta.get("sections", [{}]):
        e: dict[str, Any] = {k: None for k in ENTRY_KEYS}
        v = summary_verdict(r.meta)
        e.update({"input": r.accounting.path, "kernels": sec.get("kernels"), "memcpy": sec.get("memcpy"),
                  "memset": sec.get("memset"), "kernel_sum_s": sec.get("kernel_sum_s"),
                  "top_kernels": sec.get("top_kernels", []), "label": v.label, "limiter": v.limiter,
                  "evidence": v.evidence, "section": sec.get("section")})
        out.append(e)
    return out


def analyze_input(r: ParseResult, out: TimelineAnalysis) -> None:
    """Add one input's timeline entries, steps and lint to ``out``."""
    path = r.accounting.path
    if r.meta.get("summary_only"):
        out.timeline.extend(_summary_entries(r))
        return
    ev = r.events
    gpus: dict[str, str] = r.meta.get("gpu_names") or {}
    names = EventNames.of(ev)  # kinds and names encoded once for every name test below
    act_rows = names.rows(*GPU_KINDS)
    cols = [ev.columns.get_loc(c) for c in ACT_COLUMNS if c in ev.columns]
    contiguous = len(act_rows) and int(act_rows[-1]) - int(act_rows[0]) + 1 == len(act_rows)
    act = ev.iloc[int(act_rows[0]):int(act_rows[-1]) + 1, cols] if contiguous else ev.iloc[act_rows, cols]  # a slice: no copy
    if not len(act):
        empty = device_metrics(act)
        v = label_device(empty, union(np.zeros(0, np.int64), np.zeros(0, np.int64)))
        skipped = r.meta.get("skipped_by_category") or {}
        if skipped:
            v.evidence.append("event categories in the file: " + ", ".join(
                f"{k} x{n}" for k, n in sorted(skipped.items(), key=lambda kv: -kv[1])[:8]))
        out.timeline.append(_entry(path, None, None, empty.metrics, v))
        out.lint.append({"code": "trace-no-gpu-activity", "kernels": [],
                         "message": f"{path}: no kernel, memcpy or memset events; timeline metrics are "
                                    "empty (docs/formulas.md#timelines)"})
        return
    acts = Acts.from_frame(act, names.take(act_rows))
    devices = act["device"].to_numpy(dtype=object)
    blocking = blocking_rows(ev, names)
    sync = _SyncRows.of(ev, blocking)
    ctx = _Context(r, ev, act, acts, sync, host_activity(ev, blocking[0], r.ops, names),
                   async_calls=call_keys(ev, ASYNC_COPY, names), graph_calls=call_keys(ev, GRAPH_LAUNCH, names))
    impl = optimizer_impl(ctx.host)
    is_copy = acts.kind > 0  # memcpy, memset
    is_nccl = (acts.kind == 0) & (acts.name >= 0)
    is_nccl[is_nccl] = acts.nccl[acts.name[is_nccl]]
    if is_nccl.any():
        rows = np.flatnonzero(is_nccl)
        out.nccl.append((r, NcclKernels(devices[rows], acts.names[acts.name[rows]], acts.start[rows], acts.end[rows])))
    for device in sorted(act["device"].dropna().unique().tolist(), key=_dev_key):
        on_dev = devices == device
        dt = device_metrics(acts.subset(on_dev))
        ctx.covers[device] = sync.cover(device)
        ctx.pids[device] = ctx.device_pids(on_dev)
        dev_act = act.iloc[np.flatnonzero(on_dev)] if ctx.graph_calls else None  # read only under graph launches
        replay = _graph_share(dev_act, ctx.graph_calls) if dev_act is not None else None
        inside = ctx.inside[device] = graph_gaps(dev_act, ctx.graph_calls) if dev_act is not None and replay else None
        v = label_device(dt, ctx.covers[device], ctx.host, ctx.pids[device], inside=inside)
        v = graph_verdict(v, replay)
        out.devices[(path, device)] = (dt, v)
        entry = _entry(path, device, gpus.get(device), dt.metrics, v)
        if replay is not None:
            entry["graph_replay_share"] = replay
        comm = communication(acts.subset(on_dev))  # docs/formulas.md#timeline-communication
        if comm is not None:
            entry["communication"] = comm
        copies = copy_table(act, ctx.async_calls, np.flatnonzero(on_dev & is_copy))  # docs/formulas.md#timeline-copies
        if copies:
            entry["copies"] = copies
        if impl is not None:  # docs/formulas.md#timeline-findings: the optimizer advice follows it
            entry["optimizer_impl"] = impl
        out.timeline.append(entry)
    _steps(ctx, out, names)  # the encoded kinds and names


GRAPH_MIN = 0.5  # at this share of GPU time replayed from CUDA graphs, idle causes are unknown


def _graph_share(act: pd.DataFrame, keys: set[tuple[int, int]]) -> float | None:
    """The share of a device's GPU time made by a CUDA/HIP graph launch (None: no graph launch)."""
    if not keys:
        return None
    dur = (act["end_ns"] - act["start_ns"]).to_numpy(dtype=np.int64)
    total = int(dur.sum())
    replayed = made_by(ints(act["correlation"]), ints(act["pid"]), keys)
    return round(int(dur[replayed].sum()) / total, 9) if total else None


def graph_gaps(act: pd.DataFrame, keys: set[tuple[int, int]]) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """Which idle gaps ``(start, end)`` of a device lie inside one CUDA-graph replay: the activity that
    ends the gap's left side and the one that starts its right side were made by the same graph launch
    (same correlation id and process). Those gaps are the graph's own dependencies, not host or launch
    time; gaps between two launches are classified as any other (docs/formulas.md#timelines)."""
    start = ints(act["start_ns"])
    end = ints(act["end_ns"])
    keep = end > start
    order = np.lexsort((end[keep], start[keep]))
    s, e = start[keep][order], end[keep][order]
    corr, pid = ints(act["correlation"])[keep][order], ints(act["pid"])[keep][order]
    replayed = made_by(corr, pid, keys)
    # position of the latest-ending activity among the first j + 1 (the one that ends the busy run)
    last = np.maximum.accumulate(np.where(e == np.maximum.accumulate(e), np.arange(len(e)), 0)) if len(e) \
        else np.zeros(0, dtype=np.int64)

    def inside(gs: np.ndarray, ge: np.ndarray) -> np.ndarray:
        nxt = np.searchsorted(s, ge, side="left")
        ok = (nxt > 0) & (nxt < len(s))
        prev = np.where(ok, last[np.clip(nxt - 1, 0, max(len(s) - 1, 0))], 0)
        nxt = np.clip(nxt, 0, max(len(s) - 1, 0))
        same: np.ndarray = ok & replayed[prev] & replayed[nxt] & (corr[prev] == corr[nxt]) & (pid[prev] == pid[nxt])
        return same

    return inside


def graph_verdict(v: Verdict, share: float | None) -> Verdict:
    """A verdict whose GPU time is mostly CUDA-graph replay says so: no op launched those kernels one by
    one, and the gaps inside a replay are left unclassified (docs/formulas.md#timelines)."""
    if share is None or share < GRAPH_MIN:
        return v
    note = (f"{100 * share:.1f} % of the GPU time was launched by CUDA-graph launches (cudaGraphLaunch and "
            "kin): gaps between two kernels of one replay are not host or launch time and are left "
            "unclassified; gaps between launches are classified as usual; no op launched those kernels one "
            "by one, so op attribution is not decided here (docs/formulas.md#timelines)")
    return Verdict(v.label, v.limiter, [note, *v.evidence], v.idle_split, v.split)


STEP_COVERAGE_MIN = 1 - GRAPH_MIN  # a step's causes are decided only with this share of its GPU time launched op by op


def graph_step_verdict(v: Verdict, share: float | None) -> Verdict:
    """A step whose kernel attribution coverage (the share of its GPU time launched op by op, i.e. not
    replayed from a CUDA-graph launch) is below :data:`STEP_COVERAGE_MIN` keeps its label and idle
    total but its idle causes and limiter are ``unknown``, with what would decide them
    (docs/formulas.md#timelines)."""
    if not share or 1 - share >= STEP_COVERAGE_MIN:
        return v
    idle = sum(v.idle_split.values())
    note = (f"kernel attribution coverage {100 * (1 - share):.1f} % (< {100 * STEP_COVERAGE_MIN:.0f} %): "
            f"{100 * share:.1f} % of this step's GPU time was replayed from CUDA-graph launches (cudaGraphLaunch "
            "and kin), whose kernels no call launched one by one, so the gap rules (sync call, launch < 10 µs, "
            "host >= 10 µs) do not say what held the GPU: the step's idle causes and limiter are unknown; a "
            "capture with per-node graph tracing (nsys --cuda-graph-trace=node) or of the step without CUDA "
            "graphs (eager) would decide them (docs/formulas.md#timelines)")
    kept = [e for e in v.evidence if not e.startswith(("idle by cause", "host time in gaps"))]
    return Verdict(v.label, "unknown", [note, *kept], {"unknown": float(idle)} if idle else {}, IdleSplit())


def _dev_key(d: str) -> tuple[int, str]:
    return (int(d), d) if d.lstrip("-").isdigit() else (1 << 30, d)


@dataclass
class _Context:
    """One input's events and what every device and step of it shares."""

    r: ParseResult
    ev: pd.DataFrame
    act: pd.DataFrame
    acts: Acts
    sync: _SyncRows
    host: HostActivity
    covers: dict[str, Union] = field(default_factory=dict)
    pids: dict[str, tuple[int, ...]] = field(default_factory=dict)
    async_calls: set[tuple[int, int]] = field(default_factory=set)
    graph_calls: set[tuple[int, int]] = field(default_factory=set)
    inside: dict[str, Callable[[np.ndarray, np.ndarray], np.ndarray] | None] = field(default_factory=dict)

    def device_pids(self, on_dev: np.ndarray) -> tuple[int, ...]:
        """The processes that launched a device's work: the activities' own (nsys), else those of
        the runtime calls with their correlation ids (Kineto), else none known (all)."""
        pid = ints(self.act["pid"])[on_dev]
        known = np.unique(pid[pid != NA])
        if not len(known):
            corr = ints(self.act["correlation"])[on_dev]
            rt = (self.ev["kind"] == "runtime").to_numpy(dtype=bool, na_value=False)
            rt_corr, rt_pid = ints(self.ev["correlation"])[rt], ints(self.ev["pid"])[rt]
            hit = np.isin(rt_corr, corr[corr != NA]) & (rt_pid != NA)
            known = np.unique(rt_pid[hit])
        return tuple(int(p) for p in known)


def _steps(ctx: _Context, out: TimelineAnalysis, enc: EventNames) -> None:
    r, ev, act, acts = ctx.r, ctx.ev, ctx.act, ctx.acts
    gpus: dict[str, str] = r.meta.get("gpu_names") or {}
    rows = enc.rows("range")
    start, end, pid = ev["start_ns"].to_numpy(dtype=np.int64), ev["end_ns"].to_numpy(dtype=np.int64), ints(ev["pid"])
    sel, left_out = top_level(start[rows], end[rows], pid[rows], ints(ev["tid"])[rows],
                              profiler_steps(ev["name"])[rows])
    rows = rows[sel]
    names: list[Any] = enc.text(rows)
    lo, hi, rpid = start[rows], end[rows], pid[rows]
    if not any(str(n).startswith("ProfilerStep#") for n in names):
        its, i_lo, i_hi, i_pid = loader_iterations(ctx.host)  # no ProfilerStep: DataLoader __next__ calls
        if its:
            names, lo, hi = names + its, np.r_[lo, i_lo], np.r_[hi, i_hi]
            rpid = np.r_[rpid, np.full(len(its), i_pid, dtype=np.int64)]
            order = np.lexsort((hi, lo))
            names, lo, hi, rpid = [names[i] for i in order.tolist()], lo[order], hi[order], rpid[order]
    if not names:
        return
    rt = enc.rows("runtime")
    act_pid = ints(act["pid"])
    corr = ints(ev["correlation"])
    launch = launch_times(act["start_ns"].to_numpy(dtype=np.int64), ints(act["correlation"]), act_pid,
                          start[rt], corr[rt], pid[rt])
    member_pid = np.where(act_pid == NA, -1, act_pid) if (act_pid != NA).any() else None
    dev_code, dev_names = pd.factorize(act["device"].to_numpy(dtype=object, na_value=None))
    is_iter = np.array([str(n).startswith(ITERATION) for n in names], dtype=bool)
    is_step = is_iter | np.array([str(n).startswith("ProfilerStep#") for n in names], dtype=bool)
    sets = range_members(launch, member_pid, lo, hi, rpid, dev_code)
    plain = np.flatnonzero(~is_step[sets.range_idx])  # ranges: their own work, measured in one pass
    own = dict(zip(plain.tolist(), batch_metrics(acts, sets.subset(plain)), strict=True))
    listed = sorted(range(len(sets)), key=lambda i: (int(sets.range_idx[i]), _dev_key(dev_names[sets.device[i]])))
    for i in listed:
        r_i, device = int(sets.range_idx[i]), dev_names[sets.device[i]]
        pos = sets.of(i)
        if is_step[r_i]:  # the device over the step's wall time (docs/formulas.md#timelines)
            dt = window_timeline(acts.subset(np.flatnonzero(dev_code == sets.device[i])), int(lo[r_i]), int(hi[r_i]))
            v = label_device(dt, ctx.covers[device], ctx.host, ctx.pids[device], names=False,
                             inside=ctx.inside.get(device))  # gaps inside one graph replay: 'graph'
        else:  # a range: its own work, which may queue behind other ranges' work
            dt = own[i]
            v = label_device(dt, ctx.covers[device],  # host time not split by activity for ranges
                             inside=ctx.inside.get(device))
            v = interleaved(v, dt.busy, out.devices[(r.accounting.path, device)][0].busy)
            v = beyond_span(v, acts.subset(pos), int(hi[r_i] - lo[r_i]))
        if ctx.graph_calls:  # docs/formulas.md#timelines: step causes under CUDA graphs
            v = graph_step_verdict(v, _graph_share(act.iloc[np.sort(pos)], ctx.graph_calls))
        step = _entry(r.accounting.path, device, gpus.get(device), dt.metrics, v)
        out.steps.append({"name": names[r_i], "kind": "iteration" if is_iter[r_i] else
                          "profiler-step" if is_step[r_i] else "range",
                          "wall_s": round(int(hi[r_i] - lo[r_i]) / 1e9, 9), **step,
                          "ops_attributed_s": None, "top_ops": None})  # filled by the op analysis
    if left_out:
        out.lint.append({"code": "trace-steps-truncated", "kernels": [],
                         "message": f"{r.accounting.path}: {left_out} shorter top-level ranges not "
                                    "listed in steps (docs/formulas.md#timelines)"})


def analyze_timelines(results: list[ParseResult]) -> TimelineAnalysis:
    out = TimelineAnalysis()
    for r in results:
        if is_timeline(r):
            analyze_input(r, out)
    out.collectives = collectives(out.nccl)
    return out
