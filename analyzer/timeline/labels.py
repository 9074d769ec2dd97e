"""A label per device and per step, with evidence: ``docs/formulas.md#timelines``.

Order of the rules (first match wins):

1. no positive-length kernel, copy or set: ``unknown`` (nothing to decide from).
2. idle fraction > ``OVERHEAD_MIN`` and >= ``IDLE_MIN`` (0.9): ``idle``.
3. idle fraction > ``OVERHEAD_MIN`` (0.5), i.e. the GPU in use < 50 % of the time, as nsys
   ``gpu_time_util`` flags a region (its default ``threshold=50``, ``In-Use < threshold``):
   ``overhead-bound``.
4. copy-only time (GPU busy minus kernel busy) >= ``TRANSFER_MIN`` (0.5) of GPU busy: ``transfer-bound``.
5. otherwise ``kernel-bound`` (the roofline, from a joined ncu profile, says which roof).

The limiter of 2 and 3 is where the idle time sits: ``sync`` when gaps that overlap a
synchronisation call hold >= ``SYNC_MIN`` (0.5) of it; else ``launch`` when gaps < 10 µs hold at
least as much as gaps >= 10 µs; else ``host``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from rooftop.analyzer.timeline.metrics import GAP_SHORT_NS, DeviceTimeline, Union

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


def gaps_touching(gap_s: np.ndarray, gap_e: np.ndarray, cover: Union) -> np.ndarray:
    """Which gaps ``[gap_s, gap_e)`` overlap an interval of ``cover`` (sorted, disjoint)."""
    if not len(gap_s) or not len(cover.starts):
        return np.zeros(len(gap_s), dtype=bool)
    i = np.searchsorted(cover.starts, gap_e, side="left")  # intervals that start before the gap ends
    prev_end = np.where(i > 0, cover.ends[np.maximum(i - 1, 0)], np.iinfo(np.int64).min)
    return (i > 0) & (prev_end > gap_s)


def idle_causes(dt: DeviceTimeline, sync: Union) -> dict[str, int]:
    """Idle ns split into ``sync`` (gaps overlapping a sync call), ``launch`` (other gaps < 10 µs)
    and ``host`` (other gaps >= 10 µs)."""
    gs, ge = dt.busy.ends[:-1], dt.busy.starts[1:]
    g = ge - gs
    is_sync = gaps_touching(gs, ge, sync)
    short = (g < GAP_SHORT_NS) & ~is_sync
    return {"sync": int(g[is_sync].sum()), "launch": int(g[short].sum()),
            "host": int(g[~is_sync & ~short].sum())}


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def label_device(dt: DeviceTimeline, sync: Union) -> Verdict:
    """The label, limiter and evidence for one device or step (rules in the module docstring)."""
    m = dt.metrics
    span = dt.busy.span
    if span == 0:
        return Verdict("unknown", "unknown", [
            "no kernel, memcpy or memset with positive duration: the trace cannot tell where time went "
            f"(a capture with CUDA activity tracing would; {RULE})"])
    idle = span - dt.busy.busy
    frac = idle / span
    causes = idle_causes(dt, sync)
    ev = [f"GPU busy {m['gpu_busy_s']:.6f} s of a {m['span_s']:.6f} s span: idle {_pct(frac)} "
          f"in {m['gaps']['count']} gaps ({m['gaps']['lt_10us']} < 10 µs, {m['gaps']['10_to_100us']} "
          f"10-100 µs, {m['gaps']['gt_100us']} > 100 µs)"]
    if frac > OVERHEAD_MIN:  # in use < 50 %: nsys gpu_time_util's strict comparison
        label = "idle" if frac >= IDLE_MIN else "overhead-bound"
        shares = {k: v / idle for k, v in causes.items()} if idle else {}
        if shares.get("sync", 0) >= SYNC_MIN:
            limiter = "sync"
        elif shares.get("launch", 0) >= shares.get("host", 0):
            limiter = "launch"
        else:
            limiter = "host"
        ev.append(f"idle by cause: gaps overlapping a sync call {_pct(shares.get('sync', 0))}, other gaps "
                  f"< 10 µs (launch) {_pct(shares.get('launch', 0))}, other gaps >= 10 µs (host) "
                  f"{_pct(shares.get('host', 0))}")
        sk = m["short_kernels"]
        if sk["share_of_kernel_busy"] is not None:
            ev.append(f"{sk['count']} short kernels (< 10 µs) hold {_pct(sk['share_of_kernel_busy'])} of kernel busy time")
        ev.append(f"idle fraction >= {IDLE_MIN} -> idle ({RULE})" if label == "idle" else
                  f"idle fraction > {OVERHEAD_MIN} (GPU in use < 50 % of the span, the default threshold "
                  f"of Nsight Systems' gpu_time_util rule) -> overhead-bound ({RULE})")
        return Verdict(label, limiter, ev, {k: float(v) for k, v in causes.items()})
    busy = dt.busy.busy
    copy_only = busy - dt.kernel_busy_ns
    share = copy_only / busy if busy else 0.0
    ev.append(f"copies/sets alone (GPU busy minus kernel busy) fill {_pct(share)} of GPU busy time")
    if share >= TRANSFER_MIN:
        ev.append(f"copy-only share >= {TRANSFER_MIN} -> transfer-bound ({RULE})")
        return Verdict("transfer-bound", "transfer", ev, {k: float(v) for k, v in causes.items()})
    ev.append("kernels fill most of the span -> kernel-bound; which roof limits them needs an ncu "
              f"profile of the same program (rooftop analyze TRACE PROFILE.ncu-rep; {RULE})")
    return Verdict("kernel-bound", "unknown", ev, {k: float(v) for k, v in causes.items()})


def summary_verdict(meta: dict[str, Any]) -> Verdict:
    del meta
    return Verdict("unknown", "unknown", [
        "summary-only input (nsys stats): per-kernel totals without a time axis, so gaps and idle "
        f"time cannot be measured; the .nsys-rep or its SQLite export would decide ({RULE})"])
