"""Findings from a trace on its own (``docs/formulas.md#timeline-findings``): per device, the idle
time by cause (host, sync, launch), each with the time it holds as the recoverable bound (the GPU
cannot gain more than the time it sat idle for that cause), labelled ``overhead-bound`` with the
cause as limiter, and graded by the same severity rule as kernel findings
(:func:`rooftop.analyzer.findings.severity`: the recoverable share, here of the device's span,
>= 10 % high, >= 2 % medium, else low).

A cause is listed when it holds at least :data:`FLOOR` of the span; the host cause as one finding per
host activity (``host_idle_by_activity_s``: input pipeline, CPU ops, CUDA runtime, ...) holding at least
:data:`FLOOR`, each with its own advice and its own time as the saving (what that advice can recover),
graded with two or more steps by its median share of a step's wall time (a warm-up step does not lift
it). No finding comes from a device labelled ``unknown`` (no activity, or too little to judge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rooftop.analyzer.findings.severity import SEVERITY_ORDER, severity
from rooftop.analyzer.timeline.causes import UNTRACED
from rooftop.analyzer.timeline.copies import PAGEABLE, SMALL_COPY_BYTES
from rooftop.analyzer.timeline.pinning import PinSaving, pin_saving
from rooftop.analyzer.timeline.text import duration as _ms
from rooftop.analyzer.timeline.text import size as _gb

RULE = "docs/formulas.md#timeline-findings"
FLOOR = 0.01  # a cause below 1 % of the span is not listed (rooftop's floor)
_SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
_ALLOC = re.compile(r"^(cuda|hip|cu)(Malloc|Free|HostAlloc|FreeHost|MallocHost|MemAlloc|MemFree)", re.I)
_COPY = re.compile(r"^(cuda|hip|cu)Memcpy", re.I)
_LAUNCH = re.compile(r"Launch", re.I)
_GRAPH_LAUNCH = re.compile(r"GraphLaunch", re.I)  # cudaGraphLaunch, cuGraphLaunch, hipGraphLaunch
RULE_COPIES = "docs/formulas.md#timeline-copies"


NAME_MAX = 60  # characters of a kernel name in a finding's title (its evidence carries the whole name)
STEPS_LISTED = 8  # per-step shares listed in a host finding's evidence
HOST_NAME_MAX = 72  # characters of a host event's name in a host finding's title


def _clip(name: str, n: int) -> str:
    """``name`` cut to ``n`` characters with an ellipsis, so a cut name reads as cut."""
    return name if len(name) <= n else name[: n - 1] + "…"



def _where(e: Mapping[str, Any]) -> str:
    return f"{str(e['input']).rsplit('/', 1)[-1]} GPU {e['device']}"


def step_shares(steps: Sequence[Mapping[str, Any]], e: Mapping[str, Any], cat: str) -> list[float]:
    """Per ProfilerStep / iteration of the entry's input and device: ``cat``'s host idle time over
    the step's wall time. A step whose host idle is not split by activity (its idle cause not decided,
    e.g. under CUDA-graph replays) has no share and is left out; one with no host idle has share 0."""
    out = []
    for s in steps:
        if s["input"] == e["input"] and s["device"] == e["device"] and s["kind"] != "range" and s["wall_s"]:
            by = s.get("host_idle_by_activity_s")
            if by is None and not _no_host_idle(s.get("idle_by_cause_s") or {}):
                continue  # the step's host time is not split (or its idle not decided): its share is unknown
            out.append(float((by or {}).get(cat, 0.0)) / float(s["wall_s"]))
    return out


def _no_host_idle(causes: Mapping[str, float]) -> bool:
    """A step's idle is decided and none of it is host time (so every host activity's share is 0)."""
    return "host" in causes and all(float(v) == 0 for k, v in causes.items() if k not in ("sync", "launch"))


def _host_advice(cat: str | None, names: list[dict[str, Any]], impl: str | None = None) -> str:
    top = [str(t["name"]) for t in names]
    if cat == "input pipeline":
        if any(_SINGLE_PROCESS in n for n in top):
            return ("The DataLoader runs in the main process (its iterator is _SingleProcessDataLoaderIter, "
                    "i.e. num_workers=0): set num_workers > 0 (and pin_memory=True) so the next batch is "
                    "prepared while the GPU runs this one.")
        return ("The DataLoader's workers do not keep up: raise num_workers or prefetch_factor, or make "
                "decoding and augmentation cheaper, so the next batch is ready when the GPU needs it.")
    if cat == "optimizer":  # by what the trace shows it runs (docs/formulas.md#timeline-findings)
        if impl == "fused":
            return ("The optimizer already runs fused kernels and its step still holds the host while the GPU "
                    "waits: what is left is its Python and launch overhead: compile the step (torch.compile of the "
                    "optimizer step, capturable=True) or step less often (gradient accumulation).")
        if impl == "foreach":
            return ("The optimizer already runs foreach kernels (aten::_foreach_*, several tensors per launch) and "
                    "its step still holds the host while the GPU waits: use the fused implementation "
                    "(torch.optim.Adam/AdamW/SGD(..., fused=True): a few kernels per step) or compile the step "
                    "(torch.compile).")
        return ("The optimizer step runs on the host while the GPU waits: use a fused or foreach "
                "implementation (e.g. torch.optim.AdamW(..., fused=True)) so it is a few kernels, not "
                "one per parameter.")
    if cat == "CPU ops":
        return (f"The host is busy in PyTorch ops ({', '.join(top)}) between launches: reduce per-op "
                "host overhead (torch.compile, CUDA graphs) and move host-side tensor work out of the loop.")
    if cat == "CUDA runtime":  # advice by the call that holds the most host time
        first = top[0] if top else ""
        if _ALLOC.match(first):
            alloc = [n for n in top if _ALLOC.match(n)]
            return (f"The host sits in allocation calls ({', '.join(alloc)}) while the GPU waits: keep memory "
                    "cached (no torch.cuda.empty_cache() in the loop, steady tensor shapes), allocate before "
                    "the loop; cudaFree also synchronises the device.")
        if _COPY.match(first):
            return ("The host waits in copy calls: copies from pageable memory are staged and block the host; "
                    "pin the host buffers (pin_memory=True, cudaHostAlloc) and use non_blocking copies.")
        if _GRAPH_LAUNCH.search(first):
            return (f"The GPU waits between CUDA-graph replays while the host sits in {first}: a replay ends "
                    "before the host has launched the next, so put more work in each graph (capture the whole "
                    "step, or several replays, as one graph) or fuse the graph's small kernels (torch.compile) "
                    "so a replay does more per launch.")
        if _LAUNCH.search(first):
            return ("The host spends the gaps in launch calls: long first launches load modules (warm-up: "
                    "leave it out of the capture); otherwise fewer, larger launches (fusion, CUDA graphs).")
        return f"The host spends the gaps in CUDA calls ({', '.join(top)}): move them out of the loop."
    if cat == "annotations":
        return (f"The host is inside {', '.join(top)} then, and the trace holds no finer host events: "
                "record CPU ops (Kineto record_shapes/with_stack, or NVTX ranges) to see which part "
                "keeps the GPU waiting.")
    return ("No host event covers these gaps (Python or other work the profiler did not record): capture "
            "with with_stack=True (Kineto) or nsys -t cuda,nvtx,osrt --python-sampling=true to see it.")


def _finding(e: Mapping[str, Any], rule: str, seconds: float, title: str, rec: str,
             evidence: list[str], limiter: str) -> dict[str, Any]:
    span = float(e["span_s"])
    share = seconds / span if span > 0 else 0.0
    evidence = [*evidence, f"the device is {e['label']} over its span (docs/formulas.md#timelines)"]
    return {"rank": 0, "rule": rule, "severity": severity(share, True), "title": title, "kernels": [],
            "time_share": round(share, 9), "est_saving_s": round(seconds, 9), "recommendation": rec,
            "label": "overhead-bound", "limiter": limiter, "evidence": evidence, "source": "timeline",
            "group": _where(e)}


def _pct(share: float) -> str:
    """A share as a percentage: whole points from 1 %, one decimal below."""
    return f"{100 * share:.0f} %" if share >= 0.01 else f"{100 * share:.1f} %"


def _host_one(e: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], cat: str | None,
              seconds: float) -> dict[str, Any]:
    """The finding of one host activity ``cat`` (None: the host time is not split), with ``seconds``
    of host-cause idle as its saving (docs/formulas.md#timeline-findings)."""
    span = float(e["span_s"])
    names = [t for t in e.get("host_idle_top") or [] if t["category"] == cat]
    shares = step_shares(steps, e, cat) if cat is not None else []
    shares = shares if len(shares) >= 2 else []
    what = f"host ({cat})" if cat else "host"
    if names:
        what += ": " + ", ".join(_clip(str(t["name"]), HOST_NAME_MAX) for t in names[:2])
        if cat == "input pipeline" and _SINGLE_PROCESS in str(names[0]["name"]):
            what += " in the main process"
    elif cat == UNTRACED:
        what += ": no host event recorded then"
    typical = float(np.median(shares)) if shares else None
    per_step = "" if typical is None else (
        f"; absent from a typical step (median 0 % of {len(shares)} steps)" if typical == 0 else
        f"; median {_pct(typical)} of a step's wall time ({len(shares)} steps)")
    title = (f"{_where(e)}: GPU idle {_ms(seconds)} ({100 * seconds / span:.1f} % of the span) waiting on "
             f"the {what}{per_step}")
    host = float((e.get("idle_by_cause_s") or {}).get("host", seconds))
    ev = [f"idle {_ms(float(e['idle_s']))} of a {_ms(span)} span ({100 * float(e['idle_fraction']):.1f} %); "
          f"{_ms(host)} of it in gaps >= 10 µs while the host was not blocked in a sync call"
          + (f", {_ms(seconds)} of that attributed to {cat}: the most acting on this advice can recover" if cat
             else "")
          + f" ({RULE})"]
    ev += [s for s in e["evidence"] if s.startswith("host time in gaps")]
    if shares:
        listed = ", ".join(_pct(s) for s in shares[:STEPS_LISTED]) + (", …" if len(shares) > STEPS_LISTED else "")
        ev.append(f"{cat} per step (share of each step's wall time): {listed}; graded by the median "
                  f"{_pct(typical or 0.0)}, what a typical step loses (a warm-up step does not raise it)")
        if typical == 0:
            ev.append(f"{cat} is absent from a typical step (median share 0 over {len(shares)} steps): a warm-up "
                      "or one-off, not recovered per step")
    f = _finding(e, "timeline-idle-host", seconds, title, _host_advice(cat, names, e.get("optimizer_impl")), ev, "host")
    if typical is not None:
        f["severity"] = severity(typical, True)
    return f


def _host(e: Mapping[str, Any], steps: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One finding per host activity holding >= :data:`FLOOR` of the span, its saving that activity's
    share of the host-cause idle (so a device's host findings sum to at most its host-cause idle), in
    ranking order (docs/formulas.md#timeline-findings)."""
    span = float(e["span_s"])
    by = e.get("host_idle_by_activity_s") or {}
    if not by:  # the host time is not split (no host events read): one finding for all of it
        return [_host_one(e, steps, None, float(e["idle_by_cause_s"]["host"]))]
    out = [_host_one(e, steps, str(cat), float(s)) for cat, s in by.items() if float(s) >= FLOOR * span]
    return sorted(out, key=lambda f: (SEVERITY_ORDER[f["severity"]], -float(f["time_share"])))


def _sync(e: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    span = float(e["span_s"])
    title = (f"{_where(e)}: GPU idle {_ms(seconds)} ({100 * seconds / span:.1f} % of the span) while the host "
             "was blocked in a synchronising call")
    ev = [f"{_ms(seconds)} of the idle time lies inside synchronising calls (CUPTI sync records, "
          f"cudaDeviceSynchronize/StreamSynchronize/EventSynchronize, blocking copies: cudaMemcpy, and async copies into "
          f"pageable memory such as .cpu()/.item()) ({RULE})"]
    rec = ("The host waited in a sync while this GPU had no work, so it waited on work elsewhere (another "
           "GPU or process, an event of another stream): remove the wait from the loop (no .item()/.cpu()/"
           "torch.cuda.synchronize() per step) or overlap it with this GPU's next work.")
    staged = [c for c in e.get("copies") or [] if c["op"] == "memcpy" and c["direction"] == "DtoH" and c["pageable"]
              and c["async_calls"] and c.get("bytes") and float(c["bytes"]) / int(c["count"]) > SMALL_COPY_BYTES]
    if staged:  # docs/formulas.md#timeline-findings: large copies into pageable memory are staged chunk by chunk
        ev.append("device-to-host copies into pageable memory, larger than 64 KB on average: "
                  + "; ".join(_copy_line(c) for c in staged))
        rec = ("The host is blocked in device-to-host copies into pageable memory: CUDA stages them through a "
               "pinned buffer chunk by chunk, and this GPU waits while the host copies each chunk out. Copy into a "
               "pinned buffer allocated once (non_blocking=True, then wait on an event) instead of .cpu() into "
               "fresh memory; other waits in the loop (.item(), torch.cuda.synchronize()) hold this GPU too.")
    return _finding(e, "timeline-idle-sync", seconds, title, rec, ev, "sync")



def _launch(e: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], seconds: float) -> dict[str, Any]:
    span = float(e["span_s"])
    g = e["gaps"]
    sk = e["short_kernels"]
    bound = [s for s in steps if s["input"] == e["input"] and s["device"] == e["device"]
             and s["label"] == "overhead-bound" and s["limiter"] == "launch"]
    title = (f"{_where(e)}: GPU idle {_ms(seconds)} ({100 * seconds / span:.1f} % of the span) in "
             f"{g['lt_10us']} gaps < 10 µs between launches")
    ev = [f"{g['lt_10us']} of {g['count']} gaps are < 10 µs (the launch-latency scale); {sk['count']} kernels "
          f"< 10 µs hold {100 * float(sk['share_of_kernel_busy'] or 0):.1f} % of kernel busy time ({RULE})"]
    if bound:
        ev.append(f"{len(bound)} step(s) overhead-bound by launch: " + ", ".join(str(s["name"]) for s in bound[:5]))
    rec = ("Many short kernels launched one by one: fuse them (torch.compile) or capture the step in a CUDA "
           "graph (torch.compile mode='reduce-overhead', torch.cuda.graphs) so launch latency is paid once.")
    return _finding(e, "timeline-idle-launch", seconds, title, rec, ev, "launch")


_P2P = ("point-to-point transfers (pipeline stages or tensor exchanges): post them asynchronously (isend/irecv, "
        "batch_isend_irecv) ahead of the compute that does not need them, or use an interleaved pipeline schedule "
        "so one micro-batch's transfer overlaps another's compute; or send fewer bytes (activations in a "
        "narrower dtype).")
COMM_ADVICE = {  # by the NCCL operation holding most of the exposed time (docs/formulas.md#timeline-communication)
    "AllReduce": "gradient all-reduces: overlap them with the backward pass (DDP bucketing, "
                 "gradient_as_bucket_view), or send fewer bytes (larger buckets, lower-precision gradients).",
    "AllGather": "parameter all-gathers: prefetch the next one while this layer computes (FSDP forward_prefetch "
                 "/ backward_prefetch), or gather fewer bytes (larger wrap units, a narrower dtype).",
    "ReduceScatter": "gradient reduce-scatters: overlap them with the backward pass (FSDP backward_prefetch), or "
                     "send fewer bytes (lower-precision gradients).",
    "SendRecv": _P2P, "Send": _P2P, "Recv": _P2P,
    "other": "overlap it with computation (issue it on a side stream before the compute that does not need it), "
             "or send fewer bytes.",
}


def _communication(e: Mapping[str, Any]) -> dict[str, Any] | None:
    c = e.get("communication")
    span = float(e["span_s"])
    if not c or float(c["exposed_s"]) < FLOOR * span:
        return None
    exposed = float(c["exposed_s"])
    title = (f"{_where(e)}: {_ms(exposed)} of communication ({100 * exposed / span:.1f} % of the span) ran with "
             f"no computation beside it ({100 * float(c['overlap_share'] or 0):.1f} % of {c['kernels']} NCCL "
             "kernels' time overlapped)")
    ev = [f"NCCL kernels busy {_ms(float(c['busy_s']))}, overlapped by computation kernels "
          f"{_ms(float(c['overlapped_s']))}, exposed {_ms(exposed)} (docs/formulas.md#timeline-communication)"]
    by_op = {str(k): float(v) for k, v in (c.get("exposed_by_op_s") or {}).items() if float(v) > 0}
    if by_op:
        ev.append("exposed by NCCL operation (from the kernel names): "
                  + ", ".join(f"{op} {_ms(t)}" for op, t in by_op.items()))
    top = max(by_op, key=lambda op: by_op[op]) if by_op else "other"
    rec = "Communication runs alone: " + COMM_ADVICE.get(top, COMM_ADVICE["other"])
    f = _finding(e, "timeline-exposed-communication", exposed, title, rec, ev, "communication")
    f["label"] = e["label"]
    return f



def _copy_line(c: Mapping[str, Any]) -> str:
    rate = f" = {c['gb_s']:.1f} GB/s" if c.get("gb_s") is not None else ""
    size = f" (sizes {_gb(c['size_min'])} to {_gb(c['size_max'])})" if c.get("size_min") is not None else ""
    moved = f", {_gb(float(c['bytes']))} in {_ms(float(c['time_s']))}{rate}" if c.get("bytes") is not None else \
        f", {_ms(float(c['time_s']))}"
    return f"{c['kind']}: {c['count']} x{moved}{size}"


def _pin_advice(rows: Sequence[Mapping[str, Any]], pin: PinSaving) -> str:
    """Pin, in the words of the directions the pageable copies go (docs/formulas.md#timeline-copies)."""
    dirs = {c.get("direction") for c in rows}
    parts = []
    if "HtoD" in dirs or not dirs & {"HtoD", "DtoH"}:
        parts.append("host-to-device, pin the source once, outside the loop (DataLoader(pin_memory=True), "
                     "tensor.pin_memory(), cudaHostAlloc) and copy with non_blocking=True")
    if "DtoH" in dirs:
        parts.append("device-to-host, copy into a pinned buffer allocated once and reused "
                     "(buf = torch.empty(..., pin_memory=True); buf.copy_(t, non_blocking=True)) instead of .cpu() "
                     "into fresh pageable memory")
    rates = ", ".join(f"{d} {r:.1f} GB/s" for d, r in sorted(pin.rate_gb_s.items(), reverse=True))
    at = f", at the rate this capture's pinned copies reach ({rates})," if rates else ""
    return (f"Pin the host buffers: {'; '.join(parts)}. Pinned copies run by DMA{at} and are truly asynchronous, "
            "so they can overlap with GPU work; allocating pinned memory is itself slow, so pin once, not per copy.")


def _saving_fields(e: Mapping[str, Any], seconds: float | None, time_share: float) -> dict[str, Any]:
    """``est_saving_s`` and severity: by the saving's share of the span when it is known (the other timeline
    findings' rule), else by the copies' time share and at most medium (docs/formulas.md#findings)."""
    span = float(e["span_s"])
    if seconds is None:
        return {"severity": severity(time_share, False), "est_saving_s": None}
    return {"severity": severity(seconds / span if span > 0 else 0.0, True), "est_saving_s": round(seconds, 9)}


def _pageable_rows(e: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [c for c in e.get("copies") or [] if c["pageable"] and c["async_calls"]]


def _pin_lines(pin: PinSaving) -> list[str]:
    if pin.seconds is not None and pin.undecided:
        return [*pin.evidence, f"the saving counts the decided kinds only, so it is at least {_ms(pin.seconds)}: "
                               f"{', '.join(pin.undecided)} not decided ({RULE_COPIES})"]
    return list(pin.evidence)


def _pageable(e: Mapping[str, Any], folded: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """nsys analyze's cuda_memcpy_async rule: asynchronous copies with a pageable side, with what pinning
    them recovers (docs/formulas.md#timeline-copies). ``folded``: the transfer finding this one absorbs
    (its top copy kind is one of these rows and its advice is the same: pin)."""
    rows = _pageable_rows(e)
    if not rows:
        return None
    n = sum(int(c["async_calls"]) for c in rows)
    t = sum(float(c["time_s"]) for c in rows)
    pin = pin_saving(rows, e.get("copies") or [])
    gain = f", {_ms(pin.seconds)} of it recoverable by pinning" if pin.seconds else ""
    title = (f"{_where(e)}: {n} asynchronous copies from or to pageable memory ({_ms(t)} of copy time{gain}): the "
             "host is blocked while each is staged")
    ev = [_copy_line(c) for c in rows] + [
        "nsys analyze cuda_memcpy_async: an async copy with a pageable operand is staged through a pinned "
        f"buffer and returns only when the staging is done ({RULE_COPIES})", *_pin_lines(pin)]
    if folded is not None:
        ev += [f"{folded['title'].split(': ', 1)[-1]} (timeline-transfer, folded here: its top copy kind is one of "
               f"these pageable copies and its advice is the same, {RULE_COPIES})",
               *[x for x in folded["evidence"] if x not in ev and "no link peak" not in x]]
    span = float(e["span_s"])
    share = t / span if span > 0 else 0.0
    return {"rank": 0, "rule": "timeline-pageable-copies", **_saving_fields(e, pin.seconds, share), "title": title,
            "kernels": [], "time_share": round(share, 9), "recommendation": _pin_advice(rows, pin),
            "label": e["label"], "limiter": "transfer", "evidence": ev, "source": "timeline", "group": _where(e)}


def _top_copy(e: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The copy kind (``memcpy``) holding the most copy time."""
    rows = [c for c in e.get("copies") or [] if c["op"] == "memcpy"]
    return max(rows, key=lambda c: float(c["time_s"])) if rows else None


def _transfer(e: Mapping[str, Any], timeline: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """A transfer-bound device: the copy kind that holds most copy time, and what follows from it. The
    saving of pinning pageable copies is counted once: in the pageable-copies finding for the kinds it
    lists, here only for pageable kinds it does not (copies made by synchronous calls)."""
    rows = [c for c in e.get("copies") or [] if c["op"] == "memcpy"]
    top = _top_copy(e)
    if e["label"] != "transfer-bound" or top is None:
        return None
    span = float(e["span_s"])
    busy = float(e["gpu_busy_s"] or 0.0)
    copy_only = busy - float(e["kernel_busy_s"] or 0.0)
    title = (f"{_where(e)}: transfer-bound, copies alone fill {100 * copy_only / busy:.1f} % of GPU busy time; "
             f"{_copy_line(top)}")
    same = [o for o in timeline if o["input"] == e["input"] and o is not e and any(
        c["kind"] == top["kind"] and c["bytes"] == top["bytes"] for c in o.get("copies") or [])]
    ev = [_copy_line(c) for c in sorted(rows, key=lambda c: -float(c["time_s"]))[:4]]
    if same:
        ev.append(f"{len(same) + 1} devices of this input copy the same {_gb(float(top['bytes'] or 0))} "
                  f"({top['kind']}): {', '.join('GPU ' + str(o['device']) for o in [e, *same])}")
    seconds: float | None = None
    if top["memory"] and PAGEABLE in top["memory"]:
        listed = {c["kind"] for c in _pageable_rows(e)}
        pin = pin_saving([c for c in rows if c["pageable"] and c["kind"] not in listed], e.get("copies") or [])
        seconds = pin.seconds
        ev += _pin_lines(pin)
        rec = _pin_advice([c for c in rows if c["pageable"]], pin)
    elif top["direction"] in ("HtoD", "DtoH"):
        rec = ("The copies already use pinned memory, so the host link limits them: move fewer bytes. Keep the "
               "data resident on the GPU across steps and runs, leave one-time loading (weights, datasets) out of "
               "the measured window, and " + ("load it once and share it between the GPUs over NVLink/P2P or "
                                               "shard it (every GPU copies the same bytes from the host)" if same
                                               else "send narrower types or compressed data") + ".")
        ev.append(f"no link peak is known to rooftop, so no saving is estimated ({RULE_COPIES})")
    else:
        rec = "Device-side copies dominate: avoid the copies (views instead of .contiguous()/clones, in-place ops)."
        ev.append(f"no saving is estimated: what avoiding the copies recovers depends on the code ({RULE_COPIES})")
    share = copy_only / span if span > 0 else 0.0
    return {"rank": 0, "rule": "timeline-transfer", **_saving_fields(e, seconds, share), "title": title,
            "kernels": [], "time_share": round(share, 9), "recommendation": rec,
            "label": "transfer-bound", "limiter": "transfer", "evidence": ev, "source": "timeline",
            "group": _where(e)}


def _copy_findings(e: Mapping[str, Any], timeline: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The transfer and pageable-copies findings of one device, the transfer finding folded into the
    pageable one when its top copy kind is one of the pageable kinds listed there (both would say "pin",
    with the same saving) (docs/formulas.md#timeline-copies)."""
    transfer = _transfer(e, timeline)
    top = _top_copy(e)
    fold = transfer is not None and top is not None and top["kind"] in {c["kind"] for c in _pageable_rows(e)}
    pageable = _pageable(e, transfer if fold else None)
    return [f for f in (None if fold else transfer, pageable) if f is not None]


def timeline_findings(timeline: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """Findings of every device entry with a span (rules in the module docstring), unranked."""
    out: list[dict[str, Any]] = []
    for e in timeline:
        span = e.get("span_s") or 0.0
        if e.get("device") is None or span <= 0 or e.get("label") == "unknown":
            continue
        causes = e.get("idle_by_cause_s") or {}
        # gaps inside a CUDA-graph replay carry no cause (idle_by_cause_s "graph"); the others do
        for cause in ("host", "sync", "launch"):
            seconds = float(causes.get(cause, 0.0))
            if seconds < FLOOR * span:
                continue
            out.extend(_host(e, steps) if cause == "host" else [_sync(e, seconds)] if cause == "sync"
                       else [_launch(e, steps, seconds)])
        comm = _communication(e)
        out += [comm] if comm is not None else []
        out += _copy_findings(e, timeline)
    return out


def straggler_findings(colls: Sequence[Mapping[str, Any]], timeline: Sequence[Mapping[str, Any]]
                       ) -> list[dict[str, Any]]:
    """A collective whose straggler made the other participants wait >= :data:`FLOOR` of the
    longest device span: the wait as the recoverable bound (docs/formulas.md#timeline-communication)."""
    span = max((float(e.get("span_s") or 0.0) for e in timeline), default=0.0)
    out = []
    for c in colls:
        wait = float(c["straggler_wait_s"])
        if span <= 0 or wait < FLOOR * span:
            continue
        share = wait / span
        title = (f"{c['straggler']} joins {_clip(str(c['name']), NAME_MAX)} last in {c['straggler_last']} of {c['collectives']} "
                 f"collectives: the other participants wait {_ms(wait)} for it (median skew "
                 f"{_ms(float(c['skew_median_s']))})")
        ev = [f"collective kernel: {c['name']}",
              f"{len(c['participants'])} participants ({', '.join(c['participants'][:8])}); per collective the "
              "shortest kernel joined last, skew = longest - shortest kernel "
              f"(docs/formulas.md#timeline-communication); total skew {_ms(float(c['skew_sum_s']))}"]
        rec = (f"{c['straggler']} is late to the collective: look at what it runs before (its host gaps and "
               "input pipeline, an uneven share of the work or data, a slower GPU or link) and even it out.")
        out.append({"rank": 0, "rule": "timeline-straggler", "severity": severity(share, True), "title": title,
                    "kernels": [], "time_share": round(share, 9), "est_saving_s": round(wait, 9),
                    "recommendation": rec, "label": "overhead-bound", "limiter": "communication",
                    "evidence": ev, "source": "timeline", "group": str(c["straggler"])})
    return out
