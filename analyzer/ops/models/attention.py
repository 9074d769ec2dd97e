"""Scaled dot-product attention (``docs/formulas.md#op-attention``): SDPA and its flash / efficient / cuDNN
ops, ``flash_attn``. FLOPs count the (query, key) pairs the mask keeps, exactly, for any N_Q and N_KV:
forward 2·B·H_Q·pairs·(d_qk + d_v) (QKᵀ and PV, ``torch.utils.flop_counter.sdpa_flop_count`` with the
pair count in place of N_Q·N_KV), backward 2·B·H_Q·pairs·(3·d_qk + 2·d_v) (the scores recomputed, dP, dV,
dQ, dK: ``sdpa_backward_flop_count``). GQA: FLOPs follow the query heads, K and V bytes their own heads.
Causal masks align top-left in PyTorch's SDPA (``is_causal``: ``tril(ones(L, S))``) and bottom-right in
flash-attn >= 2.1 and the flash kernels (``window_size`` counted relative to that diagonal)."""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import numpy as np

from rooftop.analyzer.ops.args import OpArgs, Unmodelled
from rooftop.analyzer.ops.work import Work, matrix_roof

LSE_BYTES = 4  # the per-row softmax statistic (log-sum-exp, fp32) fused kernels write and read back


@lru_cache(maxsize=4096)
def pairs(n_q: int, n_kv: int, causal: bool, bottom_right: bool, left: int = -1, right: int = -1) -> int:
    """The number of (query i, key j) pairs the mask keeps. Query i sits on diagonal
    ``d = i + (n_kv - n_q if bottom_right else 0)``; causal keeps j <= d; a window keeps
    d - left <= j <= d + right (a negative bound is unbounded)."""
    i = np.arange(n_q, dtype=np.int64)
    diag = i + (n_kv - n_q if bottom_right else 0)
    hi = np.full(n_q, n_kv - 1, dtype=np.int64)
    if causal:
        hi = np.minimum(hi, diag)
    if right >= 0:
        hi = np.minimum(hi, diag + right)
    lo = np.maximum(diag - left, 0) if left >= 0 else np.zeros(n_q, dtype=np.int64)
    return int(np.maximum(hi - lo + 1, 0).sum())


def _bhsd(shape: tuple[int, ...], layout: str) -> tuple[int, int, int, int]:
    """(B, H, S, D) of a q/k/v shape in ``BHSD`` or ``BSHD`` layout."""
    if len(shape) != 4:
        raise Unmodelled(f"attention operand of {len(shape)} dims (varlen or packed layout)")
    b, x, y, d = shape
    return (b, x, y, d) if layout == "BHSD" else (b, y, x, d)


def attention(a: OpArgs, p: dict[str, Any]) -> Work:
    """``p``: q/k/v positions (``q`` and the next two), ``layout``, ``causal`` (position of the flag, or
    ``mask_type`` for the efficient kernels' custom mask), ``align`` (``top-left``/``bottom-right``),
    ``window`` (positions of left/right), ``varlen`` (positions that hold cu_seqlens when a tensor),
    ``backward`` (grad_out at ``q - 1``), ``lse`` (writes the per-row statistic)."""
    iq = p.get("q", 0)
    for i in p.get("varlen", ()):
        if a.is_tensor(i):
            raise Unmodelled("variable-length batch: the sequence lengths (cu_seqlens) are not in the trace")
    if p.get("bias") is not None and a.is_tensor(p["bias"]):
        pass  # an additive bias/mask tensor: counted as read, pairs as for no mask (upper bound)
    bq, hq, nq, dqk = _bhsd(a.shape(iq), p["layout"])
    bk, hk, nkv, dk = _bhsd(a.shape(iq + 1), p["layout"])
    bv, hv, nv, dv = _bhsd(a.shape(iq + 2), p["layout"])
    if len({bq, bk, bv}) != 1 or nkv != nv or hk != hv or dqk != dk or hk == 0 or hq % hk:
        raise Unmodelled(f"q/k/v shapes {a.shape(iq)}, {a.shape(iq + 1)}, {a.shape(iq + 2)} do not fit together")
    causal, bottom_right = _mask(a, p)
    left, right = -1, -1
    if "window" in p:
        lv, rv = a.number(p["window"][0]), a.number(p["window"][1])
        left, right = int(lv) if lv is not None else -1, int(rv) if rv is not None else -1
        if left >= 0 or right >= 0:
            bottom_right = True  # flash-attn windows sit on the bottom-right diagonal
    kept = pairs(nq, nkv, causal, bottom_right, left, right)
    backward = p.get("backward", False)
    flops = 2 * bq * hq * kept * ((3 * dqk + 2 * dv) if backward else (dqk + dv))
    eq, ek, ev = a.bpe(iq), a.bpe(iq + 1), a.bpe(iq + 2)
    q, k, v, o = bq * hq * nq * dqk * eq, bq * hk * nkv * dqk * ek, bq * hk * nkv * dv * ev, bq * hq * nq * dv * eq
    lse = bq * hq * nq * LSE_BYTES if p.get("lse", True) else 0
    bias = a.nbytes(p["bias"]) if p.get("bias") is not None and a.is_tensor(p["bias"]) else 0
    if backward:  # reads dO, Q, K, V, O, lse; writes dQ, dK, dV
        lo = o + q + k + v + o + lse + q + k + v + bias
        # unfused, no reuse: the five products (S again, dP, dV, dQ, dK) read both operands per
        # multiply-add; S, P, dP and dS are written and read back once each
        mm = bq * hq * kept * (2 * dqk * (eq + ek) + 2 * dqk * eq + dv * (eq + ev) + 2 * dv * eq)
        hi = mm + 8 * bq * hq * kept * eq + lo
    else:  # reads Q, K, V; writes O (and lse)
        lo = q + k + v + o + lse + bias
        # unfused, no reuse: every multiply-add of QKᵀ and PV reads both operands; S and P are written
        # to memory and read back once each (the algorithm flash attention replaces)
        hi = bq * hq * kept * (dqk * (eq + ek) + dv * (eq + ev)) + 4 * bq * hq * kept * eq + o + lse + bias
    shape = (f"B={bq} H_q={hq} H_kv={hk} N_q={nq} N_kv={nkv} d={dqk}" + (f"/{dv}" if dv != dqk else "")
             + (" causal" if causal else "") + (" bottom-right" if causal and bottom_right and nq != nkv else ""))
    return Work(flops, lo, hi, matrix_roof(a, iq), shape,
                {"B": bq, "H_q": hq, "H_kv": hk, "N_q": nq, "N_kv": nkv, "d_qk": dqk, "d_v": dv,
                 "causal": causal, "pairs": kept, "backward": backward})


def _mask(a: OpArgs, p: dict[str, Any]) -> tuple[bool, bool]:
    """(causal, bottom-right aligned) from the op's flag or custom mask type."""
    if "mask_type" in p:  # xformers/efficient kernels: 0 none, 1 causal from top-left, 2 from bottom-right
        t = a.number(p["mask_type"])
        kind = int(t) if t is not None else 0
        return kind in (1, 2), kind == 2
    causal = a.flag(p["causal"]) if "causal" in p else False
    return causal, p.get("align", "top-left") == "bottom-right"
