"""Elementwise ops, softmax, norms and reductions (``docs/formulas.md#op-pointwise``). FLOPs per element
follow the op's defining formula with the Livermore Loops operation weights (``formulas.WEIGHTS``);
bytes: compulsory = each tensor once; no reuse = a broadcast operand re-read for every output element,
multi-pass kernels (softmax, norms) re-reading their input once per pass."""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.ops.args import OpArgs, Unmodelled, broadcast, numel
from rooftop.analyzer.ops.work import Work, vector_roof

TENSOR_LIST_BYTES = (1.0, 8.0)  # a TensorList's dtype is not recorded: 1 to 8 bytes per element


def _out(a: OpArgs, tensors: list[int], inplace: bool) -> tuple[tuple[int, ...], int]:
    """Output shape and the argument whose dtype it takes (self when in place, else the largest)."""
    if inplace:
        return a.shape(0), 0
    shape = broadcast(*(a.shape(i) for i in tensors))
    big = max(tensors, key=lambda i: (numel(a.shape(i)), -i))
    return shape, big


def elementwise(a: OpArgs, p: dict[str, Any]) -> Work:
    """``p``: ``flops`` per output element (or ``kind`` for pow/gelu/clamp), ``inplace``, ``bool_out``
    (comparisons: 1-byte output), ``reads_self`` (False for fill-like in-place writes)."""
    if p.get("foreach"):
        return foreach(a, p)
    tensors = a.tensors()
    if not tensors:
        raise Unmodelled("no tensor argument with a shape")
    inplace = p.get("inplace", False)
    out, like = _out(a, tensors, inplace)
    n = numel(out)
    b_out = 1.0 if p.get("bool_out") else a.bpe(like)
    reads = [i for i in tensors if p.get("reads_self", True) or i != 0]
    lo = sum(a.nbytes(i) for i in reads) + n * b_out
    hi = sum(n * a.bpe(i) for i in reads) + n * b_out
    w = weight(a, p)
    return Work(w * n, lo, hi, vector_roof(a, like), f"{list(out)}", {"elements": n, "flops_per_element": w})


def weight(a: OpArgs, p: dict[str, Any]) -> float:
    """FLOPs per output element of an elementwise op (``docs/formulas.md#op-pointwise``)."""
    kind = p.get("kind")
    if kind == "pow":  # x ** c with a scalar c: PyTorch's pow_tensor_scalar specialises 2, 3, ±0.5, -1
        c = a.number(1) if not a.is_tensor(1) or a.shape(1) == () else None
        return {2.0: 1.0, 3.0: 2.0, 0.5: 4.0, -0.5: 4.0, -1.0: 4.0, 1.0: 0.0}.get(c, 8.0) if c is not None else 8.0
    if kind == "gelu":  # approximate='tanh': 0.5x(1+tanh(√(2/π)(x+0.044715x³))); else 0.5x(1+erf(x/√2))
        return 16.0 if a.value(1).strip("'\"") == "tanh" else 12.0
    if kind == "clamp":  # one compare per bound given
        return float(sum(1 for i in (1, 2) if a.value(i) not in ("", "None") or a.is_tensor(i))) or 1.0
    return float(p["flops"])


def foreach(a: OpArgs, p: dict[str, Any]) -> Work:
    """``_foreach_<op>`` over TensorLists: the elementwise op on each tensor of the first list; the list's
    dtype is not recorded, so its bytes span 1 to 8 per element."""
    lists = [i for i, t in enumerate(a.types) if t == "TensorList"]
    if not lists:
        raise Unmodelled("no TensorList argument")
    sizes = []
    for i in lists:
        shapes = a.dims[i]
        if not isinstance(shapes, list) or not all(isinstance(s, list) for s in shapes):
            raise Unmodelled(f"TensorList {i} has no shapes")
        sizes.append(sum(numel(tuple(s)) for s in shapes))
    n = sizes[0]
    elems = sum(sizes) + n  # every list read, the result (in place: the first list) written
    w = float(p["flops"])
    lo_b, hi_b = TENSOR_LIST_BYTES
    return Work(w * n, elems * lo_b, elems * hi_b, "fp32", f"{len(a.dims[lists[0]])} tensors, {n} elements",
                {"elements": n, "flops_per_element": w}, ws_max=elems * hi_b)


def softmax(a: OpArgs, p: dict[str, Any]) -> Work:
    """Softmax / log-softmax forward (``self, dim, half_to_float``) and backward (``grad, output, dim, …``).
    FLOPs: forward softmax 15 per element (max 1, subtract 1, exp 8, sum 1, divide 4); log-softmax 12 per
    element (max, subtract, exp, sum, subtract) + 8 per row (log); backward softmax 4 (y·(g − Σg·y)),
    log-softmax 11 (g − exp(y)·Σg). No reuse: three passes over the input (max, sum, normalise)."""
    x = a.shape(0)
    if not x:
        raise Unmodelled("softmax of a 0-D tensor")
    dim = a.number(1 if not p.get("backward") else 2)
    d = int(dim) if dim is not None else -1
    length = x[d] if -len(x) <= d < len(x) else x[-1]
    n, rows = numel(x), numel(x) // max(length, 1)
    b_in = a.bpe(0)
    if p.get("backward"):
        b_out = a.bpe(1) if a.is_tensor(1) else b_in
        lo = n * b_in + n * b_out + n * b_in
        hi = 2 * (n * b_in + n * b_out) + n * b_in
        flops = (11 if p.get("log") else 4) * n
    else:
        b_out = 4.0 if a.flag(2) else b_in
        lo, hi = n * b_in + n * b_out, 3 * n * b_in + n * b_out
        flops = 12 * n + 8 * rows if p.get("log") else 15 * n
    return Work(flops, lo, hi, vector_roof(a, 0), f"{list(x)} dim={d}", {"elements": n, "rows": rows})


def norm(a: OpArgs, p: dict[str, Any]) -> Work:
    """Layer / RMS / group / batch norm forward and backward. ``p``: ``x`` (input position), ``kind``
    (``layer``, ``rms``, ``group``, ``batch``), ``backward``, ``fused_add`` (vLLM's fused residual add),
    ``params`` (positions of weight/bias-like vectors). FLOPs per element: layer 8 (mean 1, variance 3,
    normalise 2, affine 2; 6 without affine), RMS 4 (square 1, sum 1, normalise 1, weight 1), batch/group as
    layer; per row (statistic) 13 for layer/batch/group (two divides, eps add, rsqrt), 9 for RMS. Backward
    12 per element, 8 per row. No reuse: the input read twice (statistics pass, normalise pass)."""
    ix = p.get("x", 0)
    x = a.shape(ix)
    n = numel(x)
    rows = _rows(a, p, x)
    b = a.bpe(ix)
    params = sum(a.nbytes(i) for i in p.get("params", ()) if a.is_tensor(i))
    affine = any(a.is_tensor(i) for i in p.get("params", ()))
    kind = p["kind"]
    if p.get("backward"):
        flops = 12 * n + 8 * rows
        stats = 2 * rows * 4
        lo = 3 * n * b + stats + 2 * params  # reads dY, X, statistics, weight; writes dX, dW, dB
        hi = 5 * n * b + stats + params * (1 + rows)
    else:
        per = (4 if kind == "rms" else 8 if affine else 6) + (1 if p.get("fused_add") else 0)
        flops = per * n + (9 if kind == "rms" else 13) * rows
        stats = 0 if kind == "rms" or p.get("no_stats") else 2 * rows * 4
        extra = 2 * n * b if p.get("fused_add") else 0  # reads the residual, writes the sum back
        lo = 2 * n * b + params + stats + extra
        hi = 3 * n * b + params * rows + stats + extra + (n * b if p.get("fused_add") else 0)
    return Work(flops, lo, hi, vector_roof(a, ix), f"{list(x)} rows={rows}", {"elements": n, "rows": rows})


def _rows(a: OpArgs, p: dict[str, Any], x: tuple[int, ...]) -> int:
    """Statistics computed: rows of the normalised shape (layer, RMS), N·groups (group), channels (batch)."""
    kind = p["kind"]
    if kind == "batch":
        return x[1] if len(x) > 1 else 1
    if kind == "group":
        g = a.number(p["groups"]) if "groups" in p else None
        return x[0] * int(g) if g else x[0]
    shape = a.ints(p["normalized"]) if "normalized" in p else None
    inner = numel(shape) if shape else x[-1]
    return numel(x) // max(inner, 1)


REDUCE_FLOPS: dict[str, tuple[float, float]] = {  # (per input element, per output element)
    "sum": (1, 0), "nansum": (1, 0), "mean": (1, 4), "amax": (1, 0), "amin": (1, 0), "max": (1, 0),
    "min": (1, 0), "prod": (1, 0), "all": (1, 0), "any": (1, 0), "argmax": (1, 0), "argmin": (1, 0),
    "norm": (2, 4), "linalg_vector_norm": (2, 4), "var": (4, 4), "std": (4, 8), "var_mean": (4, 4),
    "std_mean": (4, 8), "logsumexp": (11, 8), "cumsum": (1, 0), "cumprod": (1, 0), "count_nonzero": (1, 0),
}


def reduce(a: OpArgs, p: dict[str, Any]) -> Work:
    """A reduction of ``self`` over ``dim`` (argument 1 as recorded; all dims when absent). FLOPs per input
    element and per output element from :data:`REDUCE_FLOPS`; bytes: input once, output once (one pass)."""
    x = a.shape(0)
    dims = a.ints(1) if len(a.concrete) > 1 else None
    single = a.number(1) if dims is None and len(a.concrete) > 1 else None
    if dims is None and single is not None and float(single).is_integer() and -len(x) <= single < len(x):
        dims = (int(single),)  # max.dim / argmax(self, dim): one dim as a scalar
    if p.get("scan"):
        out = x
    elif dims:
        keep = [s for i, s in enumerate(x) if i not in {d % len(x) for d in dims}] if x else []
        out = tuple(keep)
    else:
        out = ()
    n_in, n_out = numel(x), numel(out)
    per_in, per_out = REDUCE_FLOPS[p["op"]]
    b_in = a.bpe(0)
    b_out = 1.0 if p["op"] in ("all", "any") else 8.0 if p["op"] in ("argmax", "argmin", "count_nonzero") else b_in
    lo = n_in * b_in + n_out * b_out
    return Work(per_in * n_in + per_out * n_out, lo, lo, vector_roof(a, 0), f"{list(x)} → {list(out)}",
                {"elements": n_in, "outputs": n_out})
