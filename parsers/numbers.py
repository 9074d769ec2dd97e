"""Numbers as ncu and DCGM print them: thousands separators, decimal commas, missing markers."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

# Values an export uses to say "no value": counted as missing, never as rejected.
MISSING_TOKENS = frozenset(
    {"", "n/a", "na", "nan", "(!) nan", "no data", "none", "null", "-", "--", "n/w", "(!) n/a"}
)
_THOUSANDS = re.compile(r"^[+-]?\d{1,3}(,\d{3})+(\.\d+)?$")
_DECIMAL_COMMA = re.compile(r"^[+-]?\d{1,3}(\.\d{3})*,\d+$|^[+-]?\d+,\d+$")


def is_missing_token(text: str) -> bool:
    return text.strip().lower() in MISSING_TOKENS


def parse_number(text: str, decimal_comma: bool = False) -> float | None:
    """Parse one printed number; ``None`` when it is not a number (caller decides missing/rejected).

    ``1,234,567.5`` (thousands separators) always parses. ``1.234,5`` parses only with
    ``decimal_comma=True`` (a file in a decimal-comma locale), because ``1,234`` alone is
    ambiguous and ncu's own convention is the thousands separator.
    """
    t = text.strip()
    if t.startswith("(!)"):
        t = t[3:].strip()
    if t.lower() in MISSING_TOKENS:
        return None
    if decimal_comma and _DECIMAL_COMMA.match(t):
        t = t.replace(".", "").replace(",", ".")
    elif _THOUSANDS.match(t):
        t = t.replace(",", "")
    try:
        return float(t)
    except ValueError:
        return None


def looks_decimal_comma(samples: list[str]) -> bool:
    """True when printed numbers use a decimal comma (``1.234,5``, ``0,75``) and never ``1,234.5``."""
    dc = sum(1 for s in samples if _DECIMAL_COMMA.match(s.strip()) and not _THOUSANDS.match(s.strip()))
    us = sum(1 for s in samples if "." in s and "," in s and s.rfind(".") > s.rfind(","))
    return dc > 0 and us == 0


def parse_series(values: pd.Series, decimal_comma: bool = False) -> tuple[pd.Series, pd.Series]:
    """Vectorized :func:`parse_number` over strings.

    Returns ``(numbers, bad)``: float64 values (NaN where missing or unparseable) and a boolean mask
    of cells that held text that is neither a number nor a missing token.
    """
    s = values.astype("string").str.strip()
    s = s.str.replace(r"^\(!\)\s*", "", regex=True)
    missing = s.isna() | s.str.lower().isin(MISSING_TOKENS)
    if decimal_comma:
        dc = s.str.match(_DECIMAL_COMMA.pattern, na=False)
        s = s.where(~dc, s.str.replace(".", "", regex=False).str.replace(",", ".", regex=False))
    th = s.str.match(_THOUSANDS.pattern, na=False)
    s = s.where(~th, s.str.replace(",", "", regex=False))
    nums = pd.to_numeric(s.where(~missing), errors="coerce").astype("float64")
    bad = nums.isna() & ~missing
    return nums, bad.fillna(False).astype(bool)


INT_NULL = -(2**63)  # the missing-value marker of int64 columns while a parser builds them


def int_column(values: np.ndarray, dtype: str) -> np.ndarray | pd.arrays.IntegerArray:
    """An int64 column built with :data:`INT_NULL` for missing values, as the table's ``dtype``:
    ``"int64"`` (never missing) a writable copy, ``"Int64"`` with those values null."""
    if dtype == "int64":
        return values.copy()
    mask = values == INT_NULL
    return pd.arrays.IntegerArray(np.where(mask, 0, values), mask)
