"""An op's recorded arguments (``Input Dims``, ``Input type``, ``Concrete Inputs``) read back from the op
table's JSON text, with the element sizes of PyTorch's dtypes (``docs/formulas.md#op-formulas``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

# bytes per element of the dtype names Kineto writes (c10::toString / the C++ type names)
BYTES_PER_ELEMENT: dict[str, float] = {
    "double": 8, "float": 4, "c10::Half": 2, "c10::BFloat16": 2, "c10::Float8_e4m3fn": 1, "c10::Float8_e5m2": 1,
    "c10::Float8_e4m3fnuz": 1, "c10::Float8_e5m2fnuz": 1, "c10::Float8_e8m0fnu": 1, "c10::Float4_e2m1fn_x2": 1,
    "long int": 8, "long": 8, "int64_t": 8, "unsigned long": 8, "int": 4, "unsigned int": 4, "short int": 2,
    "short": 2, "signed char": 1, "unsigned char": 1, "bool": 1, "c10::complex<float>": 8,
    "c10::complex<double>": 16, "c10::complex<c10::Half>": 4, "c10::qint8": 1, "c10::quint8": 1, "c10::qint32": 4,
}
FP8 = {"c10::Float8_e4m3fn", "c10::Float8_e5m2", "c10::Float8_e4m3fnuz", "c10::Float8_e5m2fnuz"}
HALF = {"c10::Half", "c10::BFloat16"}
INTS = {"long int", "long", "int64_t", "unsigned long", "int", "unsigned int", "short int", "short", "signed char",
        "unsigned char", "bool"}


class Unmodelled(Exception):
    """The op's formula cannot be applied: why, in words (the op goes to the ``unmodelled`` bucket)."""


@lru_cache(maxsize=65536)
def _load(text: str | None) -> Any:
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return None


@dataclass(frozen=True)
class OpArgs:
    """One op's arguments. ``dims[i]`` is a tuple of ints for a tensor, ``None`` otherwise (a scalar,
    a list, ``None``); ``types[i]`` the dtype name; ``concrete[i]`` the recorded value text."""

    dims: tuple[Any, ...]
    types: tuple[str, ...]
    concrete: tuple[str, ...]

    @classmethod
    def of(cls, dims: str | None, types: str | None, concrete: str | None) -> OpArgs:
        d, t, c = _load(dims), _load(types), _load(concrete)
        d = tuple(d) if isinstance(d, list) else ()
        t = tuple(str(x) for x in t) if isinstance(t, list) else ()
        c = tuple("" if x is None else str(x) for x in c) if isinstance(c, list) else ()
        return cls(d, t, c)

    @property
    def has_shapes(self) -> bool:
        return bool(self.dims)

    def shape(self, i: int) -> tuple[int, ...]:
        """The dims of tensor argument ``i``; :class:`Unmodelled` when it is not a tensor's."""
        if i >= len(self.dims) or not isinstance(self.dims[i], list) or not all(
                isinstance(x, int) and not isinstance(x, bool) for x in self.dims[i]):
            raise Unmodelled(f"argument {i} has no tensor shape")
        if i < len(self.types) and self.types[i] in ("", "Scalar", "ScalarList", "TensorList"):
            raise Unmodelled(f"argument {i} is a {self.types[i] or 'non-tensor'}, not a tensor")
        return tuple(self.dims[i])

    def is_tensor(self, i: int) -> bool:
        try:
            self.shape(i)
        except Unmodelled:
            return False
        return True

    def tensors(self) -> list[int]:
        """Positions of the tensor arguments."""
        return [i for i in range(len(self.dims)) if self.is_tensor(i)]

    def dtype(self, i: int) -> str:
        return self.types[i] if i < len(self.types) else ""

    def bpe(self, i: int) -> float:
        """Bytes per element of tensor ``i``; :class:`Unmodelled` for a dtype not in the table."""
        t = self.dtype(i)
        if t not in BYTES_PER_ELEMENT:
            raise Unmodelled(f"dtype {t or '(none)'} of argument {i} has no known element size")
        return BYTES_PER_ELEMENT[t]  # a Float4_e2m1fn_x2 element is one byte holding two values

    def nbytes(self, i: int) -> float:
        return numel(self.shape(i)) * self.bpe(i)

    def value(self, i: int) -> str:
        """The concrete value text of argument ``i`` ('' when not recorded)."""
        return self.concrete[i] if i < len(self.concrete) else ""

    def flag(self, i: int, default: bool = False) -> bool:
        v = self.value(i).strip().lower()
        if v in ("true", "1"):
            return True
        if v in ("false", "0"):
            return False
        return default

    def number(self, i: int) -> float | None:
        try:
            return float(self.value(i))
        except ValueError:
            return None

    def ints(self, i: int) -> tuple[int, ...] | None:
        """An int list argument recorded as text (``"[1, 1]"``), else ``None``."""
        v = _load(self.value(i)) if self.value(i).startswith("[") else None
        if isinstance(v, list) and all(isinstance(x, int) for x in v):
            return tuple(v)
        return None


def numel(shape: tuple[int, ...]) -> int:
    return math.prod(shape) if shape else 1


def broadcast(*shapes: tuple[int, ...]) -> tuple[int, ...]:
    """NumPy/PyTorch broadcasting of shapes; :class:`Unmodelled` when they do not broadcast."""
    n = max((len(s) for s in shapes), default=0)
    out = []
    for k in range(n):
        sizes = {s[len(s) - n + k] for s in shapes if len(s) - n + k >= 0}
        sizes.discard(1)
        if len(sizes) > 1:
            raise Unmodelled(f"shapes {shapes} do not broadcast")
        out.append(sizes.pop() if sizes else 1)
    return tuple(out)
