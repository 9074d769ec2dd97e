"""Copies and sets on a device's timeline (``docs/formulas.md#timeline-copies``): per copy kind
(operation, direction, memory kinds) the count, bytes, time, achieved bandwidth and sizes, as
``nsys stats`` ``cuda_gpu_mem_time_sum`` / ``cuda_gpu_mem_size_sum`` give them, and the
asynchronous copies from pageable memory that ``nsys analyze``'s ``cuda_memcpy_async`` rule flags.

Kinds come from the names: Kineto ``Memcpy HtoD (Pageable -> Device)``, ``Memset (Device)``; nsys
``[CUDA memcpy Host-to-Device (Pinned -> Device)]``, ``[CUDA memset (Device)]`` (the memory kinds
from ``srcKind``/``dstKind``/``memKind`` where the export has them).
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.timeline.arrays import NA, ints
from rooftop.analyzer.timeline.calls import made_by
from rooftop.analyzer.timeline.metrics import union
from rooftop.analyzer.timeline.names import arrow_strings, encode_strings

_KINETO = re.compile(r"^(Memcpy|Memset)(?: (\w+))?(?: \((.*)\))?$")
_NSYS = re.compile(r"^\[CUDA (memcpy|memset)(?: ([\w-]+?))?(?: \((.*)\))?\]$")
_DIRECTION = {"host-to-device": "HtoD", "device-to-host": "DtoH", "device-to-device": "DtoD",
              "peer-to-peer": "PtoP", "host-to-host": "HtoH", "array-to-device": "AtoD",
              "device-to-array": "DtoA"}
PAGEABLE = "Pageable"
PINNED = "Pinned"
HOST_LINK = ("HtoD", "DtoH")  # the copy directions that cross the host link (PCIe / NVLink-C2C)
SMALL_COPY_BYTES = 64 * 1024  # at or below: one staging chunk, and the link's fixed cost outweighs its bandwidth
_COPY_KINDS = pa.array(["memcpy", "memset"], type=pa.large_string())


def copy_kind(name: str) -> tuple[str, str, str]:
    """(``memcpy``/``memset``, direction ``HtoD``... or ``""``, memory kinds or ``""``) of a name."""
    m = _KINETO.match(name) or _NSYS.match(name)
    if not m:
        return ("memset" if "memset" in name.lower() else "memcpy", "", "")
    op, direction, memory = m.group(1).lower(), m.group(2) or "", m.group(3) or ""
    return op, _DIRECTION.get(direction.lower(), direction), memory


def _label(op: str, direction: str, memory: str) -> str:
    return " ".join(p for p in (op, direction, f"({memory})" if memory else "") if p)


def copy_table(act: pd.DataFrame, async_corr: set[tuple[int, int]], rows: np.ndarray | None = None) -> list[dict[str, Any]]:
    """One row per copy kind of one device's ``memcpy``/``memset`` events; ``async_corr``: the
    (correlation, pid) keys of asynchronous copy calls (``cudaMemcpyAsync``...); ``rows``: the
    positions in ``act`` of the device's copies and sets (found by kind when not given)."""
    if rows is None:
        rows = np.flatnonzero(np.asarray(pc.is_in(arrow_strings(act["kind"]), value_set=_COPY_KINDS)
                                         .to_numpy(zero_copy_only=False), dtype=bool))
    if not len(rows):
        return []
    code, uniq = encode_strings(arrow_strings(act["name"]).take(pa.array(rows, type=pa.int64())).fill_null(""))
    kinds = [copy_kind(n) for n in uniq.to_pylist()]  # each distinct name parsed and labelled once
    label = np.array([_label(*k) for k in kinds], dtype=object)[code]
    start, end = act["start_ns"].to_numpy(dtype=np.int64)[rows], act["end_ns"].to_numpy(dtype=np.int64)[rows]
    nbytes, corr, pid = ints(act["bytes"])[rows], ints(act["correlation"])[rows], ints(act["pid"])[rows]
    out = []
    for key in sorted(set(label.tolist())):
        sel = label == key
        op, direction, memory = kinds[code[np.argmax(sel)]]
        b = nbytes[sel]
        known = b[b != NA]
        dur = int((end[sel] - start[sel]).sum())
        total = int(known.sum()) if len(known) else None
        is_async = made_by(corr[sel], pid[sel], async_corr)
        out.append({"kind": key, "op": op, "direction": direction or None, "memory": memory or None,
                    "count": int(sel.sum()), "bytes": total, "bytes_missing": int(len(b) - len(known)),
                    "time_s": round(dur / 1e9, 9), "busy_s": round(union(start[sel], end[sel]).busy / 1e9, 9),
                    "gb_s": round(total / dur, 3) if total is not None and dur > 0 else None,
                    "size_min": int(known.min()) if len(known) else None,
                    "size_median": float(np.median(known)) if len(known) else None,
                    "size_max": int(known.max()) if len(known) else None,
                    "pageable": PAGEABLE in memory, "async_calls": int(is_async.sum())})
    return out
