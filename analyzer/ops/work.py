"""What a formula gives for one op (``docs/formulas.md#op-formulas``): FLOPs, the bytes interval, the
compute roof it runs against, and the shape it was computed from."""

from __future__ import annotations

from dataclasses import dataclass, field

from rooftop.analyzer.ops.args import FP8, OpArgs, Unmodelled

Params = dict[str, int | float | bool | str]


@dataclass(frozen=True)
class Work:
    """``flops`` (0 for a bytes-only op); ``bytes_min`` (compulsory: each tensor once) and ``bytes_max``
    (no reuse); ``compute``: the device peak key of the roof (``tensor``, ``bf16``, ``fp8``, ``fp32``…,
    ``none`` for bytes-only ops); ``shape``: the dimensions in words (``M×N×K 8944×2816×1024``);
    ``ws_max``: where an element size is not recorded (a ``TensorList``'s dtype, an unrecorded ``out_dtype``),
    the compulsory bytes of one call at the largest size it may have, so the working set is the interval
    ``[bytes_min, ws_max]`` (``None``: ``bytes_min`` is exact; docs/formulas.md#op-verdicts)."""

    flops: float
    bytes_min: float
    bytes_max: float
    compute: str
    shape: str = ""
    params: Params = field(default_factory=dict)
    ws_max: float | None = None

    def __post_init__(self) -> None:
        if self.bytes_max < self.bytes_min:  # a formula's upper bound is never below its lower one
            object.__setattr__(self, "bytes_max", self.bytes_min)
        if self.ws_max is not None and self.ws_max <= self.bytes_min:
            object.__setattr__(self, "ws_max", None)


def matrix_roof(args: OpArgs, i: int) -> str:
    """The compute roof of a matrix op (GEMM, conv, attention) by its operand's dtype: dense tensor-core
    peaks; FP32 runs on the FP32 pipe (PyTorch's default ``allow_tf32=False`` for matmul; a TF32 kernel
    name moves it to ``tf32`` in :mod:`rooftop.analyzer.ops.verdicts`)."""
    t = args.dtype(i)
    if t == "c10::BFloat16":
        return "bf16"
    if t == "c10::Half":
        return "tensor"
    if t in FP8:
        return "fp8"
    if t == "double":
        return "fp64_tensor"
    if t in ("signed char", "c10::qint8"):
        return "int8"
    if t == "float":
        return "fp32"
    raise Unmodelled(f"no compute roof for a {t or 'untyped'} matrix op")


def vector_roof(args: OpArgs, i: int) -> str:
    """Pointwise and reduction ops compute in FP32 (PyTorch's ``opmath`` for half types), FP64 for double."""
    t = args.dtype(i)
    return "fp64" if t == "double" else "fp32"
