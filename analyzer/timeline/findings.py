"""Findings from a trace on its own (``docs/formulas.md#timeline-findings``): per device, the idle
time by cause (host, sync, launch), each with the time it holds as the recoverable bound (the GPU
cannot gain more than the time it sat idle for that cause), labelled ``overhead-bound`` with the
cause as limiter, and graded by the same severity rule as kernel findings
(:func:`rooftop.analyzer.findings.severity`: the recoverable share, here of the device's span,
>= 10 % high, >= 2 % medium, else low).

A cause is listed when it holds at least :data:`FLOOR` of the span. No finding comes from a device
labelled ``unknown`` (no activity, or too little to judge).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rooftop.analyzer.findings.severity import severity

RULE = "docs/formulas.md#timeline-findings"
FLOOR = 0.01  # a cause below 1 % of the span is not listed (rooftop's floor)
_SINGLE_PROCESS = "_SingleProcessDataLoaderIter"
_ALLOC = re.compile(r"^(cuda|hip|cu)(Malloc|Free|HostAlloc|FreeHost|MallocHost|MemAlloc|MemFree)", re.I)
_COPY = re.compile(r"^(cuda|hip|cu)Memcpy", re.I)
_LAUNCH = re.compile(r"Launch", re.I)


def _ms(s: float) -> str:
    return f"{s:.3f} s" if s >= 1 else f"{s * 1e3:.3f} ms" if s >= 1e-3 else f"{s * 1e6:.1f} µs"


def _where(e: Mapping[str, Any]) -> str:
    return f"{str(e['input']).rsplit('/', 1)[-1]} GPU {e['device']}"


def _top(e: Mapping[str, Any]) -> tuple[str | None, list[dict[str, Any]]]:
    """The host activity holding most of the host idle time, and its named events."""
    by = e.get("host_idle_by_activity_s") or {}
    if not by:
        return None, []
    cat = max(by, key=lambda k: by[k])
    return cat, [t for t in e.get("host_idle_top") or [] if t["category"] == cat]


def step_shares(steps: Sequence[Mapping[str, Any]], e: Mapping[str, Any], cat: str) -> list[float]:
    """Per ProfilerStep / iteration of the entry's input and device: ``cat``'s host idle time over
    the step's wall time."""
    out = []
    for s in steps:
        if s["input"] == e["input"] and s["device"] == e["device"] and s["kind"] != "range" and s["wall_s"]:
            out.append(float((s.get("host_idle_by_activity_s") or {}).get(cat, 0.0)) / float(s["wall_s"]))
    return out


def _host_advice(cat: str | None, names: list[dict[str, Any]]) -> str:
    top = [str(t["name"]) for t in names]
    if cat == "input pipeline":
        if any(_SINGLE_PROCESS in n for n in top):
            return ("The DataLoader runs in the main process (its iterator is _SingleProcessDataLoaderIter, "
                    "i.e. num_workers=0): set num_workers > 0 (and pin_memory=True) so the next batch is "
                    "prepared while the GPU runs this one.")
        return ("The DataLoader's workers do not keep up: raise num_workers or prefetch_factor, or make "
                "decoding and augmentation cheaper, so the next batch is ready when the GPU needs it.")
    if cat == "optimizer":
        return ("The optimizer step runs on the host while the GPU waits: use a fused or foreach "
                "implementation (e.g. torch.optim.AdamW(..., fused=True)) so it is a few kernels, not "
                "one per parameter.")
    if cat == "CPU ops":
        return (f"The host is busy in PyTorch ops ({', '.join(top)}) between launches: reduce per-op "
                "host overhead (torch.compile, CUDA graphs) and move host-side tensor work out of the loop.")
    if cat == "CUDA runtime":
        alloc = [n for n in top if _ALLOC.match(n)]
        if alloc:
            return (f"The host sits in allocation calls ({', '.join(alloc)}) while the GPU waits: keep memory "
                    "cached (no torch.cuda.empty_cache() in the loop, steady tensor shapes), allocate before "
                    "the loop; cudaFree also synchronises the device.")
        if any(_COPY.match(n) for n in top):
            return ("The host waits in copy calls: copies from pageable memory are staged and block the host; "
                    "pin the host buffers (pin_memory=True, cudaHostAlloc) and use non_blocking copies.")
        if any(_LAUNCH.search(n) for n in top):
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


def _host(e: Mapping[str, Any], steps: Sequence[Mapping[str, Any]], seconds: float) -> dict[str, Any]:
    cat, names = _top(e)
    span = float(e["span_s"])
    what = f"host ({cat})" if cat else "host"
    if names:
        what += f": {names[0]['name']}"
        if cat == "input pipeline" and _SINGLE_PROCESS in str(names[0]["name"]):
            what += " in the main process"
    shares = step_shares(steps, e, cat) if cat else []
    per_step = (f", {100 * float(np.median(shares)):.0f} % of each step (median of {len(shares)})"
                if shares else "")
    title = (f"{_where(e)}: GPU idle {_ms(seconds)} ({100 * seconds / span:.1f} % of the span) waiting on "
             f"the {what}{per_step}")
    ev = [f"idle {_ms(float(e['idle_s']))} of a {_ms(span)} span ({100 * float(e['idle_fraction']):.1f} %); "
          f"{_ms(seconds)} of it in gaps >= 10 µs while the host was not blocked in a sync call ({RULE})"]
    ev += [s for s in e["evidence"] if s.startswith("host time in gaps")]
    return _finding(e, "timeline-idle-host", seconds, title, _host_advice(cat, names), ev, "host")


def _sync(e: Mapping[str, Any], seconds: float) -> dict[str, Any]:
    span = float(e["span_s"])
    title = (f"{_where(e)}: GPU idle {_ms(seconds)} ({100 * seconds / span:.1f} % of the span) while the host "
             "was blocked in a synchronising call")
    ev = [f"{_ms(seconds)} of the idle time lies inside synchronising calls (CUPTI sync records, "
          f"cudaDeviceSynchronize/StreamSynchronize/EventSynchronize, blocking copies) ({RULE})"]
    rec = ("The host waited in a sync while this GPU had no work, so it waited on work elsewhere (another "
           "GPU or process, an event of another stream): remove the wait from the loop (no .item()/.cpu()/"
           "torch.cuda.synchronize() per step) or overlap it with this GPU's next work.")
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


def timeline_findings(timeline: Sequence[Mapping[str, Any]], steps: Sequence[Mapping[str, Any]]
                      ) -> list[dict[str, Any]]:
    """Findings of every device entry with a span (rules in the module docstring), unranked."""
    out: list[dict[str, Any]] = []
    for e in timeline:
        span = e.get("span_s") or 0.0
        if e.get("device") is None or span <= 0 or e.get("label") == "unknown":
            continue
        causes = e.get("idle_by_cause_s") or {}
        for cause in ("host", "sync", "launch"):
            seconds = float(causes.get(cause, 0.0))
            if seconds < FLOOR * span:
                continue
            out.append(_host(e, steps, seconds) if cause == "host" else _sync(e, seconds) if cause == "sync"
                       else _launch(e, steps, seconds))
    return out
