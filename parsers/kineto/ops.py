"""Kineto ``cpu_op`` rows (the host op table, ``parsers.model.OP_COLUMNS``): each op's name, span,
thread, ``External id`` and its recorded arguments (``Input Dims``, ``Input type``, ``Input Strides``,
``Concrete Inputs``, and a collective's ``Collective name``, message sizes, group size and dtype) as compact
JSON text. Both readers (the streamed ``ijson`` one and the whole-document
``msgspec`` one) hand the argument values here; :func:`canon` gives equal text for equal values, so the
two readers give the same table (``tests/test_kineto_whole.py``). ``docs/formulas.md#ops``."""

from __future__ import annotations

import json
from array import array
from decimal import Decimal
from typing import Any

import numpy as np
import pandas as pd

from rooftop.parsers.model import OP_COLUMNS
from rooftop.parsers.numbers import INT_NULL, int_column
from rooftop.parsers.trace_io import string_column

ARG_KEYS = ("Input Dims", "Input type", "Input Strides", "Concrete Inputs")
ARG_COLUMNS = ("input_dims", "input_types", "input_strides", "concrete_inputs", "collective")
COMM_KEYS = ("Collective name", "In msg nelems", "Out msg nelems", "Group size", "dtype")


def _default(v: Any) -> Any:
    if isinstance(v, Decimal):  # ijson and the msgspec float hook give exact decimals
        return float(v) if v.is_finite() else str(v)
    raise TypeError(f"not JSON: {type(v).__name__}")


def canon(value: Any) -> str | None:
    """The compact JSON text of an argument value (``None`` stays null)."""
    if value is None:
        return None
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=_default)


Signature = tuple[str, str | None, str | None, str | None, str | None, str | None]  # name, argument texts


def collective(values: tuple[Any, ...]) -> str | None:
    """The compact JSON object of a ``record_param_comms`` op's collective keys (those present)."""
    found = {k: v for k, v in zip(COMM_KEYS, values, strict=True) if v is not None}
    return canon(found) if "Collective name" in found else None


class OpBuilder:
    """Op rows collected column by column; each distinct (name, arguments) is stored once, as a code
    (most ops repeat a few signatures), keyed by whatever the reader hands over (texts or raw bytes)."""

    COLUMNS = ("start_ns", "end_ns", "pid", "tid", "external_id")  # then the signature code, per row

    def __init__(self, input_path: str) -> None:
        self.input = input_path
        self.rows = array("q")  # six integers per op: the columns above and the signature code
        self.codes: dict[Any, int] = {}
        self.sigs: list[Signature] = []

    def __len__(self) -> int:
        return len(self.rows) // 6

    def code(self, key: Any) -> int | None:
        """The code of a signature already seen under ``key``, else ``None``."""
        return self.codes.get(key)

    def new_code(self, key: Any, sig: Signature) -> int:
        code = self.codes[key] = len(self.sigs)
        self.sigs.append(sig)
        return code

    def add(self, code: int, start: int, end: int, pid: int | None, tid: int | None, ext: int | None) -> None:
        self.rows.extend((start, end, INT_NULL if pid is None else pid, INT_NULL if tid is None else tid,
                          INT_NULL if ext is None else ext, code))

    def frame(self) -> pd.DataFrame:
        n = len(self)
        table = np.frombuffer(self.rows, dtype=np.int64).reshape(n, 6) if n else np.zeros((0, 6), np.int64)
        data: dict[str, object] = {"input": string_column([self.input], np.zeros(n, np.int64))}
        idx = table[:, 5]
        for i, col in enumerate(("name", *ARG_COLUMNS)):
            data[col] = string_column([s[i] for s in self.sigs] or [None], idx)
        for j, col in enumerate(self.COLUMNS):
            data[col] = int_column(np.ascontiguousarray(table[:, j]), OP_COLUMNS[col])
        return pd.DataFrame(data)[list(OP_COLUMNS)]
