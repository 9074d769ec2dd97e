"""Collectives (``docs/formulas.md#op-communication``): the bytes each rank moves over its links, as
nccl-tests defines them (``doc/PERFORMANCE.md``): algorithm bandwidth = S / t, bus bandwidth = algbw ×
factor, S the collective's data size (all-gather: the gathered output; reduce-scatter: the input; the
others: the buffer), factor 2(n−1)/n for all-reduce, (n−1)/n for all-gather, reduce-scatter and
all-to-all, 1 for broadcast, reduce, send and receive. FLOPs 0 (a reduction's adds, at most one per
element, are not counted). The sizes come from ``record_param_comms`` (Kineto) or, without a group size,
from the tensor (``symm_mem`` all-reduce): then n is unknown and the bus bytes span n = 2 to n → ∞."""

from __future__ import annotations

import json
from typing import Any

from rooftop.analyzer.ops.args import OpArgs, Unmodelled, numel
from rooftop.analyzer.ops.work import Work

_DTYPE_BYTES = {"Float": 4, "Double": 8, "Half": 2, "BFloat16": 2, "Long": 8, "Int": 4, "Short": 2, "Char": 1,
                "Byte": 1, "Bool": 1, "Float8_e4m3fn": 1, "Float8_e5m2": 1, "ComplexFloat": 8}


def kind(name: str) -> str | None:
    """The collective of a name (``allreduce``, ``_allgather_base``, ``nccl:all_reduce``…), normalised."""
    n = name.lower().replace("nccl:", "").replace("_", "").replace("intotensor", "").replace("base", "")
    n = n.replace("tensor", "").replace("coalesced", "")
    for key, out in (("allreduce", "allreduce"), ("reducescatter", "reducescatter"), ("allgather", "allgather"),
                     ("alltoall", "alltoall"), ("broadcast", "broadcast"), ("reduce", "reduce"), ("send", "send"),
                     ("recv", "recv")):
        if key in n:
            return out
    return None


def factor(coll: str, n: int) -> float:
    if coll == "allreduce":
        return 2 * (n - 1) / n
    if coll in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def collective(name: str, text: str | None, a: OpArgs) -> Work:
    """The bus bytes of a collective op from its ``record_param_comms`` sizes, else its first tensor."""
    info: dict[str, Any] = json.loads(text) if text else {}
    coll = kind(str(info.get("Collective name", ""))) or kind(name)
    if coll is None:
        raise Unmodelled(f"{name}: not a collective rooftop knows (nccl-tests' list)")
    if info:
        n_in, n_out = info.get("In msg nelems"), info.get("Out msg nelems")
        b = _DTYPE_BYTES.get(str(info.get("dtype")))
        group = info.get("Group size")
        if b is None or not isinstance(n_in, int) or not isinstance(group, int) or group < 1:
            raise Unmodelled(f"{name}: the collective's dtype, size or group size is not recorded")
        size = (n_out if coll == "allgather" and isinstance(n_out, int) else n_in) * b
        bus = size * factor(coll, group) if group > 1 else 0.0
        return Work(0, bus, bus, "none", f"{coll} {size:.0f} B, {group} ranks",
                    {"collective": coll, "size_bytes": size, "ranks": group})
    if not a.has_shapes or not a.tensors():
        raise Unmodelled(f"{name}: no message size (record_param_comms or a tensor argument) in the trace")
    t = a.tensors()[0]
    nbytes = numel(a.shape(t)) * a.bpe(t)
    lo, hi = nbytes * factor(coll, 2), nbytes * (2.0 if coll == "allreduce" else 1.0)
    return Work(0, lo, hi, "none", f"{coll} {nbytes:.0f} B, ranks not recorded",
                {"collective": coll, "size_bytes": nbytes})
