"""THE table of op formulas (``docs/formulas.md#op-formulas``): one row per op name with its category,
the formula family that computes its FLOPs and bytes (:mod:`rooftop.analyzer.ops.models`), the argument
positions of its schema, and the section of docs/formulas.md that gives the formula and its source.
An op that is not here (or whose arguments do not fit its formula) is ``unmodelled``, with its time."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from rooftop.analyzer.ops.args import OpArgs
from rooftop.analyzer.ops.models import attention, conv, gemm, memory, pointwise
from rooftop.analyzer.ops.work import Work

CATEGORIES = ("gemm", "conv", "attention", "softmax", "norm", "reduce", "elementwise", "embedding", "copy",
              "communication", "other")


@dataclass(frozen=True)
class Formula:
    category: str
    model: Callable[[OpArgs, dict[str, Any]], Work]
    params: dict[str, Any] = field(default_factory=dict)
    source: str = ""  # the docs/formulas.md anchor


def _row(category: str, model: Callable[[OpArgs, dict[str, Any]], Work], source: str,
         **params: Any) -> Formula:
    return Formula(category, model, params, f"docs/formulas.md#{source}")


FORMULAS: dict[str, Formula] = {
    # GEMM family: 2·M·N·K (+ M·N bias)
    "aten::mm": _row("gemm", gemm.mm, "op-gemm", a=0, b=1),
    "aten::addmm": _row("gemm", gemm.mm, "op-gemm", a=1, b=2, bias=0),
    "aten::_addmm_activation": _row("gemm", gemm.mm, "op-gemm", a=1, b=2, bias=0),
    "aten::bmm": _row("gemm", gemm.bmm, "op-gemm", a=0, b=1),
    "aten::baddbmm": _row("gemm", gemm.bmm, "op-gemm", a=1, b=2, bias=0),
    "aten::matmul": _row("gemm", gemm.matmul, "op-gemm"),
    "aten::linear": _row("gemm", gemm.linear, "op-gemm"),
    "aten::_scaled_mm": _row("gemm", gemm.scaled_mm, "op-gemm"),
    "aten::_grouped_mm": _row("gemm", gemm.grouped_mm, "op-gemm"),
    "aten::_scaled_grouped_mm": _row("gemm", gemm.grouped_mm, "op-gemm"),
    # convolution
    "aten::convolution": _row("conv", conv.conv, "op-conv", bias=2, stride=3, padding=4, dilation=5,
                              transposed=6, output_padding=7, groups=8),
    "aten::_convolution": _row("conv", conv.conv, "op-conv", bias=2, stride=3, padding=4, dilation=5,
                               transposed=6, output_padding=7, groups=8),
    "aten::conv1d": _row("conv", conv.conv, "op-conv", bias=2, stride=3, padding=4, dilation=5, groups=6),
    "aten::conv2d": _row("conv", conv.conv, "op-conv", bias=2, stride=3, padding=4, dilation=5, groups=6),
    "aten::conv3d": _row("conv", conv.conv, "op-conv", bias=2, stride=3, padding=4, dilation=5, groups=6),
    "aten::cudnn_convolution": _row("conv", conv.conv, "op-conv", padding=2, stride=3, dilation=4, groups=5),
    "aten::miopen_convolution": _row("conv", conv.conv, "op-conv", bias=2, padding=3, stride=4, dilation=5,
                                     groups=6),
    "aten::cudnn_convolution_transpose": _row("conv", conv.conv, "op-conv", padding=2, output_padding=3,
                                              stride=4, dilation=5, groups=6, transposed_always=True),
    "aten::convolution_backward": _row("conv", conv.conv_backward, "op-conv"),
    # attention: exact kept (query, key) pairs
    "aten::scaled_dot_product_attention": _row("attention", attention.attention, "op-attention", layout="BHSD",
                                               causal=5, bias=3, lse=False),
    "aten::_scaled_dot_product_flash_attention": _row("attention", attention.attention, "op-attention",
                                                      layout="BHSD", causal=4),
    "aten::_scaled_dot_product_efficient_attention": _row("attention", attention.attention, "op-attention",
                                                          layout="BHSD", causal=6, bias=3),
    "aten::_scaled_dot_product_cudnn_attention": _row("attention", attention.attention, "op-attention",
                                                      layout="BHSD", causal=6, bias=3),
    "aten::_scaled_dot_product_fused_attention_overrideable": _row("attention", attention.attention,
                                                                   "op-attention", layout="BHSD", causal=5, bias=3),
    "aten::_flash_attention_forward": _row("attention", attention.attention, "op-attention", layout="BSHD",
                                           causal=8, align="bottom-right", varlen=(3, 4), window=(11, 12)),
    "aten::_efficient_attention_forward": _row("attention", attention.attention, "op-attention", layout="BSHD",
                                               mask_type=9, bias=3, varlen=(4, 5, 12)),
    "flash_attn::_flash_attn_forward": _row("attention", attention.attention, "op-attention", layout="BSHD",
                                            causal=5, align="bottom-right", window=(6, 7)),
    "aten::_scaled_dot_product_flash_attention_backward": _row("attention", attention.attention, "op-attention",
                                                               layout="BHSD", q=1, causal=11, backward=True),
    "aten::_scaled_dot_product_efficient_attention_backward": _row("attention", attention.attention,
                                                                   "op-attention", layout="BHSD", q=1, causal=11,
                                                                   backward=True),
    "aten::_scaled_dot_product_cudnn_attention_backward": _row("attention", attention.attention, "op-attention",
                                                               layout="BHSD", q=1, causal=14, backward=True),
    "aten::_flash_attention_backward": _row("attention", attention.attention, "op-attention", layout="BSHD", q=1,
                                            causal=11, align="bottom-right", varlen=(6, 7), window=(15, 16),
                                            backward=True),
    "aten::_efficient_attention_backward": _row("attention", attention.attention, "op-attention", layout="BSHD",
                                                q=1, mask_type=14, varlen=(6, 7), backward=True),
    "flash_attn::_flash_attn_backward": _row("attention", attention.attention, "op-attention", layout="BSHD",
                                             q=1, causal=11, align="bottom-right", window=(12, 13), backward=True),
    # softmax
    "aten::_softmax": _row("softmax", pointwise.softmax, "op-pointwise"),
    "aten::softmax": _row("softmax", pointwise.softmax, "op-pointwise"),
    "aten::_log_softmax": _row("softmax", pointwise.softmax, "op-pointwise", log=True),
    "aten::log_softmax": _row("softmax", pointwise.softmax, "op-pointwise", log=True),
    "aten::_softmax_backward_data": _row("softmax", pointwise.softmax, "op-pointwise", backward=True),
    "aten::_log_softmax_backward_data": _row("softmax", pointwise.softmax, "op-pointwise", backward=True, log=True),
    # norms
    "aten::native_layer_norm": _row("norm", pointwise.norm, "op-pointwise", kind="layer", normalized=1,
                                    params=(2, 3)),
    "aten::layer_norm": _row("norm", pointwise.norm, "op-pointwise", kind="layer", normalized=1, params=(2, 3)),
    "aten::native_layer_norm_backward": _row("norm", pointwise.norm, "op-pointwise", kind="layer", normalized=2,
                                             params=(5,), backward=True),
    "aten::_fused_rms_norm": _row("norm", pointwise.norm, "op-pointwise", kind="rms", normalized=1, params=(2,)),
    "aten::rms_norm": _row("norm", pointwise.norm, "op-pointwise", kind="rms", normalized=1, params=(2,),
                           no_stats=True),
    "_C::rms_norm": _row("norm", pointwise.norm, "op-pointwise", kind="rms", x=1, params=(2,), no_stats=True),
    "_C::fused_add_rms_norm": _row("norm", pointwise.norm, "op-pointwise", kind="rms", params=(2,),
                                   fused_add=True, no_stats=True),
    "aten::native_group_norm": _row("norm", pointwise.norm, "op-pointwise", kind="group", groups=6, params=(1, 2)),
    "aten::native_batch_norm": _row("norm", pointwise.norm, "op-pointwise", kind="batch", params=(1, 2)),
    "aten::cudnn_batch_norm": _row("norm", pointwise.norm, "op-pointwise", kind="batch", params=(1, 2)),
    "aten::_native_batch_norm_legit": _row("norm", pointwise.norm, "op-pointwise", kind="batch", params=(1, 2)),
    "aten::_native_batch_norm_legit_no_training": _row("norm", pointwise.norm, "op-pointwise", kind="batch",
                                                       params=(1, 2)),
    "aten::native_batch_norm_backward": _row("norm", pointwise.norm, "op-pointwise", kind="batch", x=1,
                                             params=(2,), backward=True),
    "aten::cudnn_batch_norm_backward": _row("norm", pointwise.norm, "op-pointwise", kind="batch", params=(2,),
                                            backward=True),
    # bytes-only: copies, fills, concatenation, gathers
    "aten::copy_": _row("copy", memory.copy, "op-memory"),
    "aten::clone": _row("copy", memory.copy, "op-memory", src=0, dst=None),
    "aten::_to_copy": _row("copy", memory.copy, "op-memory", src=0, dst=None),
    "aten::contiguous": _row("copy", memory.copy, "op-memory", src=0, dst=None),
    "aten::fill_": _row("copy", memory.fill, "op-memory"),
    "aten::zero_": _row("copy", memory.fill, "op-memory"),
    "aten::uniform_": _row("elementwise", memory.fill, "op-memory", flops=2),
    "aten::normal_": _row("elementwise", memory.fill, "op-memory", flops=2),
    "aten::cat": _row("copy", memory.cat, "op-memory"),
    "aten::stack": _row("copy", memory.cat, "op-memory"),
    "aten::_local_scalar_dense": _row("copy", memory.scalar_read, "op-memory"),
    "aten::embedding": _row("embedding", memory.gather_rows, "op-memory", table=0, index=1),
    "aten::index_select": _row("embedding", memory.gather_rows, "op-memory", table=0, index=2, dim=1),
    "aten::gather": _row("embedding", memory.gather, "op-memory"),
}

# Elementwise FLOPs per output element: the op's defining formula with the Livermore Loops weights
# (add, subtract, multiply, compare 1; divide, square root 4; exp, log, sin, tanh, erf, pow 8):
# docs/formulas.md#op-pointwise lists each formula.
WEIGHTS: dict[str, float] = {
    "add": 1, "sub": 1, "rsub": 1, "mul": 1, "neg": 1, "abs": 1, "relu": 1, "threshold": 1,
    "threshold_backward": 1, "clamp_min": 1, "clamp_max": 1, "maximum": 1, "minimum": 1, "fmax": 1, "fmin": 1,
    "where": 1, "masked_fill": 1, "sign": 1, "sgn": 1, "floor": 1, "ceil": 1, "round": 1, "trunc": 1,
    "square": 1, "lerp": 3, "addcmul": 3, "addcdiv": 6, "div": 4, "reciprocal": 4, "sqrt": 4, "rsqrt": 4,
    "exp": 8, "exp2": 8, "expm1": 8, "log": 8, "log2": 8, "log10": 8, "log1p": 8, "sin": 8, "cos": 8, "tan": 8,
    "tanh": 8, "erf": 8, "erfc": 8, "erfinv": 8, "atan": 8, "asin": 8, "acos": 8, "sinh": 8, "cosh": 8,
    "atan2": 8, "sigmoid": 14, "sigmoid_backward": 3, "tanh_backward": 3, "silu": 15, "silu_backward": 18,
    "gelu_backward": 25, "softplus": 17, "mish": 26, "hardswish": 5, "hardsigmoid": 4, "leaky_relu": 2,
    "elu": 11, "logical_not": 1, "bitwise_not": 1, "mse_loss": 3, "mse_loss_backward": 3, "xlogy": 9,
    "copysign": 1, "fmod": 4, "remainder": 4, "hypot": 7,
}
COMPARISONS = ("eq", "ne", "lt", "le", "gt", "ge", "logical_and", "logical_or", "logical_xor", "isnan",
               "isinf", "isfinite", "bitwise_and", "bitwise_or", "bitwise_xor")
SPECIAL = {"pow": "pow", "gelu": "gelu", "clamp": "clamp"}
_FILLS = ("fill", "zero", "uniform", "normal")


def formula(name: str) -> Formula | None:
    """The formula row for an op name (elementwise ops and their in-place / ``_foreach_`` forms are
    built from :data:`WEIGHTS`), else ``None``."""
    row = FORMULAS.get(name)
    if row is not None:
        return row
    if not name.startswith("aten::"):
        return None
    base = name[6:]
    foreach = base.startswith("_foreach_")
    if foreach:
        base = base[len("_foreach_"):]
    inplace = base.endswith("_") and not base.endswith("__")
    base = base.rstrip("_")
    params: dict[str, Any] = {"inplace": inplace, "foreach": foreach}
    if base in WEIGHTS:
        params["flops"] = WEIGHTS[base]
    elif base in COMPARISONS:
        params.update(flops=1, bool_out=not inplace)
    elif base in SPECIAL:
        params["kind"] = SPECIAL[base]
        params.setdefault("flops", 1)
    else:
        return None
    return Formula("elementwise", pointwise.elementwise, params, "docs/formulas.md#op-pointwise")


REDUCTIONS = frozenset(pointwise.REDUCE_FLOPS)


def reduction(name: str) -> Formula | None:
    base = name[6:] if name.startswith("aten::") else ""
    if base in REDUCTIONS:
        return Formula("reduce", pointwise.reduce, {"op": base, "scan": base in ("cumsum", "cumprod")},
                       "docs/formulas.md#op-pointwise")
    return None


def lookup(name: str) -> Formula | None:
    """The formula of an op name: the table, then the elementwise and reduction rows it implies."""
    return formula(name) or reduction(name)
