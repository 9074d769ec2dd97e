"""A label per device and per step, with evidence: ``docs/formulas.md#timelines``.

Order of the rules (first match wins):

1. no positive-length kernel, copy or set: ``unknown`` (nothing to decide from).
2. one merged busy interval: ``unknown``, too little activity to judge (for a device or a range's
   own work the span is that interval, so idle is 0 by definition, not by measurement: a single
   1.76 µs Triton kernel is not evidence of a kernel-bound program).
3. idle fraction > ``OVERHEAD_MIN`` and >= ``IDLE_MIN`` (0.9): ``idle``.
4. idle fraction > ``OVERHEAD_MIN`` (0.5), i.e. the GPU in use < 50 % of the time, as nsys
   ``gpu_time_util`` flags a region (its default ``threshold=50``, ``In-Use < threshold``):
   ``overhead-bound``.
5. copy-only time (GPU busy minus kernel busy) >= ``TRANSFER_MIN`` (0.5) of GPU busy: ``transfer-bound``.
6. otherwise ``kernel-bound`` (the roofline, from a joined ncu profile, says which roof).

The limiter of 3 and 4 is where the idle time sits (:mod:`.causes`): ``sync`` when the host sat
blocked in a synchronising call for >= ``SYNC_MIN`` (0.5) of it; else ``launch`` when the rest of
gaps < 10 µs holds at least as much as the rest of gaps >= 10 µs; else ``host``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rooftop.analyzer.timeline.causes import UNTRACED, HostActivity, IdleSplit, split_idle
from rooftop.analyzer.timeline.metrics import DeviceTimeline, Union

IDLE_MIN = 0.9
OVERHEAD_MIN = 0.5
TRANSFER_MIN = 0.5
SYNC_MIN = 0.5
RULE = "docs/formulas.md#timelines"


@dataclass
class Verdict:
    label: str
    limiter: str
    evidence: list[str] = field(default_factory=list)
    idle_split: dict[str, float] = field(default_factory=dict)  # ns of idle by cause
    split: IdleSplit = field(default_factory=IdleSplit)  # the same, with the host part by activity


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def _secs(ns: int) -> str:
    return f"{ns / 1e9:.3f} s" if ns >= 1e7 else f"{ns / 1e6:.3f} ms"


def host_text(split: IdleSplit) -> str | None:
    """"host time in gaps >= 10 µs, by what the host ran: input pipeline 41.0 % (enumerate(...)
    0.300 s); ..." or None when there is no host time or nothing to split it by."""
    if not split.host or not split.host_by:
        return None
    parts = []
    for cat, ns in sorted(split.host_by.items(), key=lambda kv: -kv[1]):
        names = split.top.get(cat) or []
        named = f" ({', '.join(f'{n} {_secs(t)}' for n, t in names)})" if names else ""
        parts.append(f"{cat} {_pct(ns / split.host)}{named}")
    return "host time in gaps >= 10 µs, by what the host ran then: " + "; ".join(parts) + (
        f" ({UNTRACED}: no host event recorded)" if UNTRACED in split.host_by else "")


def label_device(dt: DeviceTimeline, sync: Union, host: HostActivity | None = None,
                 pids: tuple[int, ...] = (), names: bool = True,
                 inside: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None) -> Verdict:
    """The label, limiter and evidence for one device or step (rules in the module docstring)."""
    m = dt.metrics
    span = dt.span
    if dt.busy.busy == 0 or span <= 0:
        return Verdict("unknown", "unknown", [
            "no kernel, memcpy or memset with positive duration: the trace cannot tell where time went "
            f"(a capture with CUDA activity tracing would; {RULE})"])
    if len(dt.busy.starts) < 2:
        return Verdict("unknown", "unknown", [
            f"one busy interval ({m['kernels']} kernel(s), {m['memcpy']} copies, {m['memset']} sets, busy "
            f"{dt.busy.busy / 1e9:.9f} s of {span / 1e9:.9f} s): too little activity to judge how the program "
            "uses the GPU (for a device or a range the span is that interval, so idle is 0 by definition); "
            f"a capture of more of the program would decide ({RULE})"])
    idle = span - dt.busy.busy
    frac = idle / span
    gs, ge = dt.idle_intervals()
    # gaps between two kernels of one CUDA-graph launch: neither host nor launch time (no cause decided)
    in_graph = inside(gs, ge) if inside is not None else np.zeros(len(gs), dtype=bool)
    split = split_idle(gs[~in_graph], ge[~in_graph], sync, host, pids, names)
    causes: dict[str, int] = dict(split.causes())
    if in_graph.any():
        causes["graph"] = int((ge[in_graph] - gs[in_graph]).sum())
    g = m["gaps"]
    ev = [f"GPU busy {m['gpu_busy_s']:.6f} s of a {m['span_s']:.6f} s {'wall time' if dt.window else 'span'}: "
          f"idle {_pct(frac)} in {g['count']} gaps ({g['lt_10us']} < 10 µs, {g['10_to_100us']} "
          f"10-100 µs, {g['gt_100us']} > 100 µs)"]
    idle_split = {k: float(v) for k, v in causes.items()}
    shares = {k: v / idle for k, v in causes.items()} if idle else {}
    if idle:
        ev.append(f"idle by cause: host blocked in a sync call {_pct(shares['sync'])}, rest of gaps "
                  f"< 10 µs (launch) {_pct(shares['launch'])}, rest of gaps >= 10 µs (host) {_pct(shares['host'])}"
                  + (f", inside CUDA-graph replays (between two kernels of one graph launch: not host or "
                     f"launch time, cause not decided) {_pct(shares['graph'])}" if "graph" in shares else ""))
        text = host_text(split)
        if text:
            ev.append(text)
    if frac > OVERHEAD_MIN:  # in use < 50 %: nsys gpu_time_util's strict comparison
        label = "idle" if frac >= IDLE_MIN else "overhead-bound"
        if shares.get("graph", 0) > max(shares.get(k, 0) for k in ("sync", "launch", "host")):
            limiter = "unknown"
        elif shares.get("sync", 0) >= SYNC_MIN:
            limiter = "sync"
        elif shares.get("launch", 0) >= shares.get("host", 0):
            limiter = "launch"
        else:
            limiter = "host"
        sk = m["short_kernels"]
        if sk["share_of_kernel_busy"] is not None:
            ev.append(f"{sk['count']} short kernels (< 10 µs) hold {_pct(sk['share_of_kernel_busy'])} of kernel busy time")
        ev.append(f"idle fraction >= {IDLE_MIN} -> idle ({RULE})" if label == "idle" else
                  f"idle fraction > {OVERHEAD_MIN} (GPU in use < 50 % of the span, the default threshold "
                  f"of Nsight Systems' gpu_time_util rule) -> overhead-bound ({RULE})")
        return Verdict(label, limiter, ev, idle_split, split)
    busy = dt.busy.busy
    copy_only = busy - dt.kernel_busy_ns
    share = copy_only / busy if busy else 0.0
    ev.append(f"copies/sets alone (GPU busy minus kernel busy) fill {_pct(share)} of GPU busy time")
    if share >= TRANSFER_MIN:
        ev.append(f"copy-only share >= {TRANSFER_MIN} -> transfer-bound ({RULE})")
        return Verdict("transfer-bound", "transfer", ev, idle_split, split)
    ev.append("kernels fill most of the span -> kernel-bound; which roof limits them needs an ncu "
              f"profile of the same program (rooftop analyze TRACE PROFILE.ncu-rep; {RULE})")
    return Verdict("kernel-bound", "unknown", ev, idle_split, split)


def summary_verdict(meta: dict[str, Any]) -> Verdict:
    del meta
    return Verdict("unknown", "unknown", [
        "summary-only input (nsys stats): per-kernel totals without a time axis, so gaps and idle "
        f"time cannot be measured; the .nsys-rep or its SQLite export would decide ({RULE})"])
