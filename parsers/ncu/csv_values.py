"""Printed values of Nsight Compute ``--csv`` exports as numbers (docs/formulas.md#inputs).

* :func:`numeric_column` / :func:`numeric_frame` convert printed values to floats, vectorized:
  thousands separators, decimal commas, missing tokens (``n/a``, ``nan``, ``(!) nan``, ``no data``,
  empty) and instanced values ``"a; b; c"`` (reduced by the metric's rollup, see
  :func:`instance_reducer`).
* :func:`sanitize_values` masks numbers no export can mean; :func:`to_int` keeps whole numbers.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.ncu.labels import is_count_metric
from rooftop.parsers.numbers import MISSING_TOKENS, looks_decimal_comma, parse_series

_GROUPED_DOTS = r"^[+-]?\d{1,3}(\.\d{3})+(,\d+)?$"
INT_LIMIT = 2.0**62


def regex_mask(s: pd.Series, pattern: str) -> np.ndarray:
    """Boolean array: where ``s`` matches ``pattern`` (RE2 via Arrow, no per-cell Python)."""
    a = pa.array(s.astype(str), type=pa.string())  # typed: an empty column is null-typed otherwise
    return np.asarray(pc.fill_null(pc.match_substring_regex(a, pattern), False).to_numpy(zero_copy_only=False), dtype=bool)


def sample_values(cols: list[pd.Series], n: int = 2000) -> list[str]:
    """A sample of non-empty printed values (for decimal-comma detection)."""
    out: list[str] = []
    for s in cols:
        v = s[s.str.len() > 0].head(max(1, n // max(1, len(cols))))
        out.extend(v.tolist())
    return out


def detect_decimal_comma(sep: str, values: list[str], forced: bool | None) -> bool:
    """Decimal comma only for ``;``-separated files (a ``,`` file cannot hold ``1,5`` unquoted
    safely and ncu itself always writes ``.``), unless the user said so."""
    if forced is not None:
        return forced
    return sep == ";" and looks_decimal_comma(values)


def instance_reducer(metric: str) -> str:
    """How the ``"a; b; c"`` instances of a metric become one number, by the metric's rollup.

    ``<base>.sum[...]`` -> sum, ``<base>.max[...]`` -> max, ``<base>.min[...]`` -> min, anything
    else (``.avg``, legacy names without a rollup) -> mean.
    """
    parts = metric.split(".")
    roll = parts[1] if len(parts) > 1 else ""
    return roll if roll in ("sum", "max", "min") else "mean"


def numeric_column(
    values: pd.Series, reducer: str | pd.Series = "mean", decimal_comma: bool = False
) -> tuple[pd.Series, pd.Series]:
    """Printed values -> ``(float64 numbers, bad mask)``; NaN where missing or not a number.

    Fast path: plain numbers go straight through :func:`pandas.to_numeric`; only the cells it
    cannot read (thousands separators, missing tokens, instances, decimal commas, text) take the
    slower vectorized path. ``reducer`` is one reduction for the whole column or one per row.
    """
    s = values.astype(str)
    if decimal_comma:
        grouped = s.str.match(_GROUPED_DOTS, na=False)
        s = s.where(~grouped, s.str.replace(".", "", regex=False))
        need = pd.Series(True, index=s.index)
        nums = pd.Series(np.nan, index=s.index, dtype="float64")
    else:
        nums = pd.to_numeric(s, errors="coerce").astype("float64")
        need = nums.isna() & (s.str.len() > 0)
    bad = pd.Series(False, index=s.index)
    if not need.any():
        return nums, bad
    sub = s[need]
    inst = sub.str.contains(";", regex=False)
    if inst.any():
        red = reducer if isinstance(reducer, str) else reducer[need][inst]
        vals, vbad = _instanced(sub[inst], red, decimal_comma)
        nums.loc[vals.index] = vals
        bad.loc[vbad.index] = vbad
        sub = sub[~inst]
    if len(sub):
        vals, vbad = parse_series(sub, decimal_comma=decimal_comma)
        nums.loc[vals.index] = vals
        bad.loc[vbad.index] = vbad
    return nums, bad.astype(bool)


def fast_float(s: pd.Series) -> np.ndarray | None:
    """Plain printed numbers (empty cells -> NaN) via one Arrow cast; ``None`` when any cell is
    something else (thousands separators, missing tokens, instances, text)."""
    try:
        a = pa.array(s.astype(str), type=pa.string())  # typed: an empty column is null-typed otherwise
        a = pc.if_else(pc.equal(a, ""), pa.scalar(None, a.type), a)
        return np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def numeric_frame(
    df: pd.DataFrame, cols: list[str], reducers: list[str], decimal_comma: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numeric_column` over many columns at once: ``(float64 [rows, cols], bad mask)``.

    Each column takes :func:`pandas.to_numeric`; the cells it cannot read, from every column, are
    gathered into one Series and converted in a single vectorized pass.
    """
    n = len(df)
    nums = np.full((n, len(cols)), np.nan)
    bad = np.zeros((n, len(cols)), dtype=bool)
    rows_l: list[np.ndarray] = []
    cols_l: list[np.ndarray] = []
    vals_l: list[np.ndarray] = []
    for j, name in enumerate(cols):
        s = df[name]
        fast = None if decimal_comma else fast_float(s)
        if fast is not None:
            nums[:, j] = fast
            continue
        nonempty = (s.str.len() > 0).to_numpy()
        if decimal_comma:
            need = nonempty
        else:
            col = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            nums[:, j] = col
            need = np.isnan(col) & nonempty
        if need.any():
            r = np.flatnonzero(need)
            rows_l.append(r)
            cols_l.append(np.full(len(r), j))
            vals_l.append(s.to_numpy(dtype=object)[r])
    if rows_l:
        ri, ci = np.concatenate(rows_l), np.concatenate(cols_l)
        cells = np.concatenate(vals_l)
        red = np.asarray(reducers, dtype=object)[ci]
        for r in np.unique(red):
            # Text attributes and repeated values: convert each distinct text once.
            sel = red == r
            codes, uniq = pd.factorize(cells[sel])
            vals, vbad = numeric_column(pd.Series(np.asarray(uniq, dtype=object), dtype=str), str(r), decimal_comma)
            nums[ri[sel], ci[sel]] = vals.to_numpy(dtype="float64", na_value=np.nan)[codes]
            bad[ri[sel], ci[sel]] = vbad.to_numpy(dtype=bool)[codes]
    return nums, bad


def _instanced(
    s: pd.Series, reducer: str | pd.Series, decimal_comma: bool
) -> tuple[pd.Series, pd.Series]:
    parts = s.str.split(";").explode()
    vals, vbad = parse_series(parts, decimal_comma=decimal_comma)
    g = vals.groupby(level=0)
    if isinstance(reducer, str):
        out = _reduce(g, reducer)
    else:
        out = pd.Series(np.nan, index=s.index, dtype="float64")
        for red in reducer.unique():
            rows = reducer.index[reducer == red]
            out.loc[rows] = _reduce(vals[vals.index.isin(rows)].groupby(level=0), str(red))
    bad = vbad.groupby(level=0).any()
    # An instance list where every instance is missing is missing, not bad.
    return out.reindex(s.index).astype("float64"), bad.reindex(s.index).fillna(False).astype(bool)


def _reduce(g: pd.core.groupby.SeriesGroupBy, reducer: str) -> pd.Series:
    if reducer == "sum":
        return g.sum(min_count=1)
    if reducer == "max":
        return g.max()
    if reducer == "min":
        return g.min()
    return g.mean()



def to_int(x: pd.Series) -> pd.Series:
    """Floats -> Int64: whole numbers within +-2**62 kept, anything else (NaN, inf, 1.5) null."""
    f = pd.to_numeric(x, errors="coerce").astype("float64")
    ok = f.notna() & (f.abs() < INT_LIMIT) & (f == f.round())
    return f.where(ok).astype("Int64")


def sanitize_values(values: np.ndarray, names: np.ndarray | list[str]) -> np.ndarray:
    """Mask of numbers no export can mean: infinities, and negative counts (durations, bytes,
    sectors, requests, instructions, cycles: docs/formulas.md#inputs).

    ``values`` is ``[rows, cols]`` with ``names`` per column, or 1-D with one name per value.
    """
    bad: np.ndarray = np.isinf(values)
    is_count = np.asarray([is_count_metric(str(n)) for n in names], dtype=bool)
    if is_count.any():
        with np.errstate(invalid="ignore"):
            bad |= (values < 0) & (is_count if values.ndim == 1 else is_count[np.newaxis, :])
    return bad


SMALL_COLUMN = 512  # a column this short is read value by value (bench/NOTES.md, "Small ncu files")


def by_unique(
    s: pd.Series, func: Callable[[pd.Series], pd.Series], one: Callable[[str], object] | None = None
) -> pd.Series:
    """Apply a vectorized ``func`` to the distinct values of ``s`` only, then broadcast back
    (identity columns repeat a handful of values over 100k launches).

    ``one`` is ``func`` for one value (``None`` for a null result). A column of at most
    :data:`SMALL_COLUMN` ASCII values goes through it: a one-kernel file's columns cost pandas' fixed
    per-call price several times over otherwise. ``tests/test_ncu_small_columns.py`` holds both equal."""
    if one is not None and len(s) <= SMALL_COLUMN:
        texts = s.astype(str).tolist()  # a missing value stays missing (pandas' str dtype): null out
        if all(not isinstance(t, str) or t.isascii() for t in texts):
            seen: dict[str, object] = {}
            vals = [None if not isinstance(t, str) else seen[t] if t in seen else seen.setdefault(t, one(t))
                    for t in texts]
            return pd.Series(vals, index=s.index, dtype=object)
    codes, uniq = pd.factorize(s.astype(str), use_na_sentinel=True)
    res = func(pd.Series(np.asarray(uniq, dtype=object), dtype=str))
    arr = pd.array(res).take(codes, allow_fill=True)
    return pd.Series(arr, index=s.index)


_WARN_MARK = r"^\(!\)\s*"


def _miss_one(v: str) -> bool:
    return re.sub(_WARN_MARK, "", v.strip()).lower() in MISSING_TOKENS


def is_missing_text(s: pd.Series) -> pd.Series:
    """True where a printed value is a missing marker (``n/a``, ``(!) nan``, empty ...)."""

    def miss(u: pd.Series) -> pd.Series:
        t = u.str.strip().str.replace(_WARN_MARK, "", regex=True).str.lower()
        return t.isin(MISSING_TOKENS)

    return by_unique(s, miss, _miss_one).astype(bool)


PROBE_ROWS = 64  # rows :func:`all_missing_text` reads before the whole column


def all_missing_text(s: pd.Series) -> bool:
    """``is_missing_text(s).all()``: every printed value a missing marker. The first
    :data:`PROBE_ROWS` values are read first: one that is not a marker decides it (a column of numbers
    is not read whole: 100k distinct values cost ~30 ms a column, bench/NOTES.md)."""
    if len(s) > PROBE_ROWS and not bool(is_missing_text(s.iloc[:PROBE_ROWS]).all()):
        return False
    return bool(is_missing_text(s).all())
