"""GEMM family (``docs/formulas.md#op-gemm``): ``mm``, ``addmm``, ``bmm``, ``baddbmm``, ``matmul``,
``linear``, ``_scaled_mm``, grouped GEMM. FLOPs = 2·M·N·K per product (+ M·N for a bias add), as
``torch.utils.flop_counter`` (``mm_flop``, ``addmm_flop``, ``bmm_flop``) and TraceLens count them.
Bytes: compulsory = A, B, bias, C once; no reuse = every multiply-add reads its A and B element."""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.ops.args import OpArgs, Unmodelled, broadcast, numel
from rooftop.analyzer.ops.work import Work, matrix_roof

# ScalarType codes PyTorch records for an ``out_dtype`` argument (c10/core/ScalarType.h)
_SCALAR_TYPE_BYTES = {5: 2, 6: 4, 7: 8, 15: 2, 23: 1, 24: 1, 25: 1, 26: 1}


def _gemm(batch: int, m: int, n: int, k: int, ba: float, bb: float, bc: float, bias: float | None, roof: str,
          extra_min: float = 0.0) -> Work:
    """One (batched) product C[b,m,n] = A[b,m,k]·B[b,k,n] (+ bias of ``bias`` bytes, broadcast to C)."""
    flops = 2 * batch * m * n * k + (batch * m * n if bias is not None else 0)
    c = batch * m * n * bc
    lo = batch * (m * k * ba + k * n * bb) + c + (bias or 0) + extra_min
    hi = batch * m * n * k * (ba + bb) + c + (batch * m * n * bc if bias is not None else 0) + extra_min
    shape = f"{'B×' if batch > 1 else ''}M×N×K {f'{batch}×' if batch > 1 else ''}{m}×{n}×{k}"
    return Work(flops, lo, hi, roof, shape, {"B": batch, "M": m, "N": n, "K": k, "bias": bias is not None})


def _check(k1: int, k2: int, what: str) -> None:
    if k1 != k2:
        raise Unmodelled(f"{what}: inner dimensions {k1} and {k2} differ")


def mm(a: OpArgs, p: dict[str, Any]) -> Work:
    """``C = A·B`` with A, B at positions ``a``, ``b`` (2-D); optional bias at ``bias``."""
    ia, ib = p["a"], p["b"]
    sa, sb = a.shape(ia), a.shape(ib)
    if len(sa) != 2 or len(sb) != 2:
        raise Unmodelled(f"mm operands are {len(sa)}-D and {len(sb)}-D, not 2-D")
    _check(sa[1], sb[0], "mm")
    bias = a.nbytes(p["bias"]) if "bias" in p and a.is_tensor(p["bias"]) else None
    return _gemm(1, sa[0], sb[1], sa[1], a.bpe(ia), a.bpe(ib), a.bpe(ia), bias, matrix_roof(a, ia))


def bmm(a: OpArgs, p: dict[str, Any]) -> Work:
    """Batched ``C[b] = A[b]·B[b]`` (3-D operands); optional bias at ``bias`` (``baddbmm``)."""
    ia, ib = p["a"], p["b"]
    sa, sb = a.shape(ia), a.shape(ib)
    if len(sa) != 3 or len(sb) != 3:
        raise Unmodelled(f"bmm operands are {len(sa)}-D and {len(sb)}-D, not 3-D")
    _check(sa[2], sb[1], "bmm")
    bias = a.nbytes(p["bias"]) if "bias" in p and a.is_tensor(p["bias"]) else None
    return _gemm(max(sa[0], sb[0]), sa[1], sb[2], sa[2], a.bpe(ia), a.bpe(ib), a.bpe(ia), bias, matrix_roof(a, ia))


def matmul(a: OpArgs, p: dict[str, Any]) -> Work:
    """``torch.matmul`` semantics: 1-D operands gain and lose a unit dimension, batch dims broadcast."""
    sa, sb = a.shape(0), a.shape(1)
    if not sa or not sb:
        raise Unmodelled("matmul of a 0-D tensor")
    m, k = (1, sa[0]) if len(sa) == 1 else sa[-2:]
    k2, n = (sb[0], 1) if len(sb) == 1 else sb[-2:]
    _check(k, k2, "matmul")
    batch = numel(broadcast(tuple(sa[:-2]), tuple(sb[:-2])))
    return _gemm(batch, m, n, k, a.bpe(0), a.bpe(1), a.bpe(0), None, matrix_roof(a, 0))


def linear(a: OpArgs, p: dict[str, Any]) -> Work:
    """``y = x·Wᵀ + b``: x[..., K], W[N, K], optional b[N]."""
    sx, sw = a.shape(0), a.shape(1)
    if len(sw) != 2 or not sx:
        raise Unmodelled("linear weight is not 2-D")
    _check(sx[-1], sw[1], "linear")
    bias = a.nbytes(2) if a.is_tensor(2) else None
    return _gemm(1, numel(sx) // sx[-1], sw[0], sx[-1], a.bpe(0), a.bpe(1), a.bpe(0), bias, matrix_roof(a, 0))


def scaled_mm(a: OpArgs, p: dict[str, Any]) -> Work:
    """``_scaled_mm(A, B, scale_a, scale_b, bias, scale_result, out_dtype, …)``: an FP8 GEMM with scales;
    the output element size is the recorded ``out_dtype``, else an interval of 1 to 4 bytes."""
    sa, sb = a.shape(0), a.shape(1)
    if len(sa) != 2 or len(sb) != 2:
        raise Unmodelled("scaled_mm operands are not 2-D")
    _check(sa[1], sb[0], "scaled_mm")
    m, k, n = sa[0], sa[1], sb[1]
    code = a.number(6)
    scales = sum(a.nbytes(i) for i in (2, 3, 5) if a.is_tensor(i))
    bias = a.nbytes(4) if a.is_tensor(4) else None
    roof = matrix_roof(a, 0)
    if code is not None and int(code) in _SCALAR_TYPE_BYTES:
        return _gemm(1, m, n, k, a.bpe(0), a.bpe(1), _SCALAR_TYPE_BYTES[int(code)], bias, roof, scales)
    lo = _gemm(1, m, n, k, a.bpe(0), a.bpe(1), 1, bias, roof, scales)
    hi = _gemm(1, m, n, k, a.bpe(0), a.bpe(1), 4, bias, roof, scales)
    return Work(lo.flops, lo.bytes_min, hi.bytes_max, roof, lo.shape, lo.params, ws_max=hi.bytes_min)


def grouped_mm(a: OpArgs, p: dict[str, Any]) -> Work:
    """``_grouped_mm(mat_a, mat_b, offs, bias, out_dtype)``: G products in one op. 2-D A [ΣM, K] with 3-D B
    [G, K, N] (groups along M): 2·ΣM·K·N; 3-D with 3-D: G·2·M·N·K; 2-D with 2-D (groups along K):
    2·M·N·ΣK; 3-D A [G, M, K] with 2-D B [K, ΣN]: 2·M·K·ΣN."""
    sa, sb = a.shape(0), a.shape(1)
    ba, bb = a.bpe(0), a.bpe(1)
    bc = ba if ba >= 2 else 2  # FP8 inputs give a 16-bit output unless out_dtype says otherwise
    roof = matrix_roof(a, 0)
    offs = a.nbytes(2) if a.is_tensor(2) else 0
    if len(sa) == 2 and len(sb) == 3:
        _check(sa[1], sb[1], "grouped_mm")
        m, k, n, g = sa[0], sa[1], sb[2], sb[0]
        flops, out = 2 * m * k * n, m * n
        shape = f"ΣM×N×K {m}×{n}×{k}, G={g}"
    elif len(sa) == 3 and len(sb) == 3:
        _check(sa[2], sb[1], "grouped_mm")
        g, m, k, n = sa[0], sa[1], sa[2], sb[2]
        flops, out = 2 * g * m * n * k, g * m * n
        shape = f"G×M×N×K {g}×{m}×{n}×{k}"
    elif len(sa) == 2 and len(sb) == 2:
        _check(sa[1], sb[0], "grouped_mm")
        m, k, n = sa[0], sa[1], sb[1]
        g = a.shape(2)[0] if a.is_tensor(2) else 1
        flops, out = 2 * m * n * k, g * m * n
        shape = f"M×N×ΣK {m}×{n}×{k}, G={g}"
    elif len(sa) == 3 and len(sb) == 2:
        _check(sa[2], sb[0], "grouped_mm")
        g, m, k, n = sa[0], sa[1], sa[2], sb[1]
        flops, out = 2 * m * k * n, m * n
        shape = f"M×ΣN×K {m}×{n}×{k}, G={g}"
    else:
        raise Unmodelled(f"grouped_mm of {len(sa)}-D and {len(sb)}-D operands")
    lo = numel(sa) * ba + numel(sb) * bb + out * bc + offs
    hi = flops / 2 * (ba + bb) + out * bc + offs
    return Work(flops, lo, hi, roof, shape, {"grouped": True})
