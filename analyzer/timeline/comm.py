"""Communication on a device's timeline (``docs/formulas.md#timeline-communication``).

Communication kernels are those whose name contains ``nccl`` (NCCL and RCCL name their kernels
``ncclKernel_*`` / ``ncclDevKernel_*``); computation kernels are the other kernels; copies and sets
are neither (HTA's ``get_kernel_type`` makes the same three classes). Per device:
``busy_s`` = the union of communication kernels, ``overlapped_s`` = its intersection with the union
of computation kernels, ``exposed_s`` = ``busy_s - overlapped_s`` (communication with no computation
running: the time a perfect overlap could at most remove), ``overlap_share`` = overlapped / busy
(HTA's ``comp_comm_overlap_pctg`` / 100). ``exposed_by_op_s``: the exposed time of each NCCL operation
the kernel names carry (``ncclKernel_AllReduce_*``, ``ncclDevKernel_SendRecv``...; :data:`NCCL_OPS`,
``other`` when none), what the advice for exposed communication is chosen by.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rooftop.analyzer.timeline.intervals import intersect
from rooftop.analyzer.timeline.metrics import Acts, union

# NCCL's operations as its kernel names spell them (longest first: AllReduce before Reduce, SendRecv before Send)
NCCL_OPS = ("AllReduce", "AllGather", "ReduceScatter", "AllToAll", "Broadcast", "SendRecv", "Reduce", "Send",
            "Recv")
_OP = re.compile("|".join(NCCL_OPS))


def nccl_op(name: str) -> str:
    """The NCCL operation a kernel name carries (``ncclDevKernel_SendRecv(...)`` -> ``SendRecv``), else ``other``."""
    m = _OP.search(name)
    return m.group(0) if m else "other"


def communication(acts: Acts) -> dict[str, Any] | None:
    """The communication numbers of one device's activities, or None without communication kernels."""
    is_k = acts.kind == 0
    comm = is_k & (acts.name >= 0)
    comm[comm] = acts.nccl[acts.name[comm]]
    if not comm.any():
        return None
    cu = union(acts.start[comm], acts.end[comm])
    comp = is_k & ~comm
    computing = union(acts.start[comp], acts.end[comp])
    both = intersect(cu, computing).busy
    busy = cu.busy
    ops = np.array([nccl_op(str(n)) for n in acts.names], dtype=object)[acts.name[comm]]
    by_op = {}
    for op in sorted(set(ops.tolist())):  # each operation's kernels: their union less the computation
        mine = np.flatnonzero(comm)[ops == op]
        u = union(acts.start[mine], acts.end[mine])
        by_op[op] = round((u.busy - intersect(u, computing).busy) / 1e9, 9)
    return {"kernels": int(comm.sum()), "busy_s": round(busy / 1e9, 9), "overlapped_s": round(both / 1e9, 9),
            "exposed_s": round((busy - both) / 1e9, 9), "overlap_share": round(both / busy, 9) if busy else None,
            "exposed_by_op_s": dict(sorted(by_op.items(), key=lambda kv: (-kv[1], kv[0])))}
