"""Bytes-only ops (``docs/formulas.md#op-memory``): copies, concatenation, fills, embedding and index
gathers (0 FLOPs). A gather reads between one and all of the rows its indices name (duplicates are read
once at best), so its compulsory bytes count one row and its no-reuse bytes one row per index."""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.ops.args import OpArgs, Unmodelled, numel
from rooftop.analyzer.ops.models.pointwise import TENSOR_LIST_BYTES
from rooftop.analyzer.ops.work import Work


def copy(a: OpArgs, p: dict[str, Any]) -> Work:
    """``copy_(self, src)``: read src, write self (a broadcast src is read once at best, once per element at
    worst). ``p["src"]``/``p["dst"]``: positions; ``dst`` None = an out-of-place copy like ``clone``."""
    src = p.get("src", 1)
    dst = p.get("dst", 0)
    s = a.shape(src)
    d = a.shape(dst) if dst is not None else s
    bd = a.bpe(dst) if dst is not None else a.bpe(src)
    n = numel(d)
    lo = numel(s) * a.bpe(src) + n * bd
    hi = n * a.bpe(src) + n * bd
    return Work(0, lo, hi, "none", f"{list(d)}", {"elements": n})


def fill(a: OpArgs, p: dict[str, Any]) -> Work:
    """``fill_``/``zero_``/``uniform_``…: every element of self written once (random fills: 2 FLOPs per
    element, the scale and shift of the random bits; the integer Philox rounds are not floating point)."""
    x = a.shape(0)
    n = numel(x)
    b = n * a.bpe(0)
    return Work(p.get("flops", 0) * n, b, b, "fp32" if p.get("flops") else "none", f"{list(x)}", {"elements": n})


def cat(a: OpArgs, p: dict[str, Any]) -> Work:
    """``cat(tensors, dim)``: every input read once, the output (their sum) written once. The list's dtype
    is not recorded: 1 to 8 bytes per element."""
    shapes = a.dims[0] if a.dims else None
    if not isinstance(shapes, list) or not shapes or not all(isinstance(s, list) for s in shapes):
        raise Unmodelled("the concatenated tensors' shapes are not recorded")
    n = sum(numel(tuple(s)) for s in shapes)
    lo_b, hi_b = TENSOR_LIST_BYTES
    return Work(0, 2 * n * lo_b, 2 * n * hi_b, "none", f"{len(shapes)} tensors, {n} elements", {"elements": n},
                ws_max=2 * n * hi_b)


def gather_rows(a: OpArgs, p: dict[str, Any]) -> Work:
    """``embedding(weight, indices)``, ``index_select(self, dim, index)``: the output holds one row of the
    table per index. Reads the indices and 1 to min(indices, rows) table rows; writes the output."""
    table, idx = a.shape(p["table"]), a.shape(p["index"])
    dim = 0 if p.get("dim") is None else int(a.number(p["dim"]) or 0)
    if not table:
        raise Unmodelled("gather from a 0-D table")
    dim %= len(table)
    row = numel(table) // max(table[dim], 1)
    n_idx = numel(idx)
    b = a.bpe(p["table"])
    out = n_idx * row * b
    ib = n_idx * a.bpe(p["index"])
    lo = ib + row * b + out
    hi = ib + min(n_idx, table[dim]) * row * b + out
    return Work(0, lo, hi, "none", f"{n_idx} rows of {list(table)}", {"indices": n_idx, "row_elements": row})


def gather(a: OpArgs, p: dict[str, Any]) -> Work:
    """``gather(self, dim, index)``: one element of self per index element: reads the index, 1 to
    len(index) elements of self, writes the output (index-shaped)."""
    idx = a.shape(2)
    n = numel(idx)
    b = a.bpe(0)
    ib = n * a.bpe(2)
    return Work(0, ib + b + n * b, ib + 2 * n * b, "none", f"{list(idx)} from {list(a.shape(0))}", {"elements": n})


def scalar_read(a: OpArgs, p: dict[str, Any]) -> Work:
    """``_local_scalar_dense`` (``tensor.item()``): one element copied to the host."""
    b = a.bpe(0)
    return Work(0, b, b, "none", "1 element", {"elements": 1})
