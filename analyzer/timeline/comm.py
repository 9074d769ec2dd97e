"""Communication on a device's timeline (``docs/formulas.md#timeline-communication``).

Communication kernels are those whose name contains ``nccl`` (NCCL and RCCL name their kernels
``ncclKernel_*`` / ``ncclDevKernel_*``); computation kernels are the other kernels; copies and sets
are neither (HTA's ``get_kernel_type`` makes the same three classes). Per device:
``busy_s`` = the union of communication kernels, ``overlapped_s`` = its intersection with the union
of computation kernels, ``exposed_s`` = ``busy_s - overlapped_s`` (communication with no computation
running: the time a perfect overlap could at most remove), ``overlap_share`` = overlapped / busy
(HTA's ``comp_comm_overlap_pctg`` / 100).
"""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.timeline.intervals import intersect
from rooftop.analyzer.timeline.metrics import Acts, union


def communication(acts: Acts) -> dict[str, Any] | None:
    """The communication numbers of one device's activities, or None without communication kernels."""
    is_k = acts.kind == 0
    comm = is_k & (acts.name >= 0)
    comm[comm] = acts.nccl[acts.name[comm]]
    if not comm.any():
        return None
    cu = union(acts.start[comm], acts.end[comm])
    comp = is_k & ~comm
    both = intersect(cu, union(acts.start[comp], acts.end[comp])).busy
    busy = cu.busy
    return {"kernels": int(comm.sum()), "busy_s": round(busy / 1e9, 9), "overlapped_s": round(both / 1e9, 9),
            "exposed_s": round((busy - both) / 1e9, 9), "overlap_share": round(both / busy, 9) if busy else None}
