"""Convolution forward, backward and transposed (``docs/formulas.md#op-conv``), as
``torch.utils.flop_counter.conv_flop_count``: 2 · N · prod(weight) · prod(spatial) FLOPs, the spatial
size being the output's (forward) or the input's (transposed); weight [C_out, C_in/groups, k…] already
holds the grouping. A bias adds one FLOP per output element. Backward: grad input and grad weight each
cost the forward's FLOPs, by ``output_mask``; grad bias one add per grad-output element."""

from __future__ import annotations

from typing import Any

from rooftop.analyzer.ops.args import OpArgs, Unmodelled, numel
from rooftop.analyzer.ops.work import Work, matrix_roof


def _tuple(a: OpArgs, i: int | None, nd: int, default: int) -> tuple[int, ...]:
    if i is None:
        return (default,) * nd
    v = a.ints(i)
    if v is None:
        if a.value(i).strip() in ("", "None"):
            return (default,) * nd
        raise Unmodelled(f"argument {i} ({a.value(i)!r}) is not an int list")
    return v * nd if len(v) == 1 else v


def out_shape(x: tuple[int, ...], w: tuple[int, ...], stride: tuple[int, ...], pad: tuple[int, ...],
              dil: tuple[int, ...], transposed: bool, out_pad: tuple[int, ...], groups: int) -> tuple[int, ...]:
    """The output shape (PyTorch's Conv/ConvTranspose shape formulas, torch.nn docs)."""
    nd = len(x) - 2
    if transposed:
        sp = tuple((x[2 + i] - 1) * stride[i] - 2 * pad[i] + dil[i] * (w[2 + i] - 1) + out_pad[i] + 1
                   for i in range(nd))
        return (x[0], w[1] * groups, *sp)
    sp = tuple((x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(nd))
    return (x[0], w[0], *sp)


def _work(a: OpArgs, x: tuple[int, ...], w: tuple[int, ...], y: tuple[int, ...], transposed: bool,
          bias: bool, bx: float, bw: float, passes: int = 1, bias_grad: bool = False) -> Work:
    macs_per = numel(w[1:])  # per output (or, transposed, per input) element: C_in/g · prod(k)
    per = numel(x) if transposed else numel(y)
    flops = passes * 2 * per * macs_per + (numel(y) if bias or bias_grad else 0)
    lo = numel(x) * bx + numel(w) * bw + numel(y) * bx + (w[0] * bx if bias or bias_grad else 0)
    hi = passes * per * macs_per * (bx + bw) + numel(y) * bx + (numel(y) * bx if bias or bias_grad else 0)
    shape = f"x{list(x)} w{list(w)} → y{list(y)}"
    return Work(flops, lo, hi, matrix_roof(a, 0), shape, {"transposed": transposed, "passes": passes})


def conv(a: OpArgs, p: dict[str, Any]) -> Work:
    """Forward convolution. ``p`` gives the argument positions of bias, stride, padding, dilation,
    transposed, output_padding and groups for this op's schema (``None``: not in the schema)."""
    x, w = a.shape(0), a.shape(1)
    if len(x) < 3 or len(w) != len(x):
        raise Unmodelled(f"convolution of a {len(x)}-D input with a {len(w)}-D weight")
    nd = len(x) - 2
    stride, pad = _tuple(a, p.get("stride"), nd, 1), _tuple(a, p.get("padding"), nd, 0)
    if p.get("padding") is not None and a.value(p["padding"]).strip("'\"") in ("same", "valid"):
        raise Unmodelled("padding given as a string")
    dil = _tuple(a, p.get("dilation"), nd, 1)
    transposed = p.get("transposed_always", False) or (p.get("transposed") is not None and a.flag(p["transposed"]))
    out_pad = _tuple(a, p.get("output_padding"), nd, 0)
    g = a.number(p["groups"]) if p.get("groups") is not None else 1.0
    groups = int(g) if g else 1
    y = out_shape(x, w, stride, pad, dil, transposed, out_pad, groups)
    if any(s <= 0 for s in y):
        raise Unmodelled(f"output shape {y} is empty")
    bias = p.get("bias") is not None and a.is_tensor(p["bias"])
    return _work(a, x, w, y, transposed, bias, a.bpe(0), a.bpe(1))


def conv_backward(a: OpArgs, p: dict[str, Any]) -> Work:
    """``convolution_backward(grad_output, input, weight, bias_sizes, stride, padding, dilation,
    transposed, output_padding, groups, output_mask)``."""
    gy, x, w = a.shape(0), a.shape(1), a.shape(2)
    mask = [v.strip().lower() == "true" for v in a.value(10).strip("[]").split(",")] if a.value(10) else [True] * 3
    mask += [True] * (3 - len(mask))
    transposed = a.flag(7)
    passes = int(mask[0]) + int(mask[1])
    work = _work(a, x, w, gy, transposed, False, a.bpe(1), a.bpe(2), passes, bias_grad=mask[2])
    bx, bw = a.bpe(1), a.bpe(2)  # reads grad_output, input, weight; writes the grads asked for
    lo = (numel(gy) + numel(x) + mask[0] * numel(x)) * bx + (1 + mask[1]) * numel(w) * bw + mask[2] * w[0] * bx
    hi = max(work.bytes_max, lo)
    return Work(work.flops, lo, hi, work.compute, work.shape,
                {**work.params, "grad_input": mask[0], "grad_weight": mask[1], "grad_bias": mask[2]})
