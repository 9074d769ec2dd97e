"""Reading metric columns of the canonical kernel table: a float column or all-NaN, the row-wise
first of several aliases with the alias it came from, and :class:`Recipe` (a product of columns)
(docs/formulas.md#work-bytes). Nothing is invented: ``None``/NaN where no alias is present."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.analyzer.schema.vocab import FLOP_CLASSES as _FLOP_CLASSES
from rooftop.analyzer.schema.vocab import MEMORY_LEVELS

FP_CLASSES = ("fp64", "fp32", "fp16")
FLOP_CLASSES = _FLOP_CLASSES
LEVELS = MEMORY_LEVELS  # innermost first


@dataclass(frozen=True)
class Recipe:
    """One way to get a per-kernel value: the product of ``factor`` and the sum of ``names``
    (all required), times the duration when ``rate`` (a ``.per_second`` metric)."""

    names: tuple[str, ...]
    factor: float = 1.0
    rate: bool = False
    label: str = ""

    def describe(self) -> str:
        if self.label:
            return self.label
        base = " + ".join(self.names)
        if self.factor != 1.0:
            base = f"{base} x {self.factor:g}"
        return f"{base} x duration" if self.rate else base


def nan_series(df: pd.DataFrame) -> pd.Series:
    """An all-NaN float column on ``df``'s index."""
    return pd.Series(np.nan, index=df.index, dtype="float64")


def none_series(df: pd.DataFrame) -> pd.Series:
    """An all-None object column on ``df``'s index."""
    return pd.Series(None, index=df.index, dtype="object")


def column(df: pd.DataFrame, name: str) -> pd.Series:
    """A float column, or all-NaN when the export lacks it."""
    if name in df.columns:
        return pd.to_numeric(df[name], errors="coerce").astype("float64")
    return nan_series(df)


def first_of(df: pd.DataFrame, names: Sequence[str]) -> tuple[pd.Series, pd.Series]:
    """Row-wise first non-null among alias columns, and which alias it came from."""
    return _first([(n, column(df, n)) for n in names if n in df.columns], df)


def _first(candidates: list[tuple[str, pd.Series]], df: pd.DataFrame) -> tuple[pd.Series, pd.Series]:
    """Row-wise first non-NaN candidate (float64) and its label (object, None where none)."""
    out = np.full(len(df), np.nan)
    src = np.full(len(df), None, dtype=object)
    for label, v in candidates:
        arr = v.to_numpy(dtype="float64", na_value=np.nan)
        take = np.isnan(out) & ~np.isnan(arr)
        if take.any():
            out[take] = arr[take]
            src[take] = label
    return pd.Series(out, index=df.index, dtype="float64"), pd.Series(src, index=df.index, dtype="object")


def resolve(df: pd.DataFrame, recipes: Sequence[Recipe], duration: pd.Series | None = None
            ) -> tuple[pd.Series, pd.Series]:
    """Row-wise first recipe that yields a value; returns (value, recipe description)."""
    candidates: list[tuple[str, pd.Series]] = []
    for r in recipes:
        if not all(n in df.columns for n in r.names):
            continue
        v = column(df, r.names[0])
        for n in r.names[1:]:
            v = v + column(df, n)  # NaN if any part is missing: a pair is all or nothing
        v = v * r.factor
        if r.rate:
            if duration is None:
                continue
            v = v * duration
        candidates.append((r.describe(), v))
    return _first(candidates, df)


def cc_number(df: pd.DataFrame) -> pd.Series:
    """Compute capability as a float (``"8.6"`` -> 8.6); NaN when unknown."""
    if "cc" not in df.columns:
        return nan_series(df)
    codes, uniq = pd.factorize(df["cc"].astype("string"))  # each distinct text parsed once
    nums = pd.to_numeric(pd.Series(np.asarray(uniq, dtype=object), dtype="string").str.extract(r"(\d+\.\d+|\d+)")[0],
                         errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
    out = np.append(nums, np.nan)[codes]  # code -1 (missing) -> the appended NaN
    return pd.Series(out, index=df.index, dtype="float64")
