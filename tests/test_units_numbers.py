"""Unit scaling and number parsing, checked by hand against values ncu prints."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.metrics.columns import column
from rooftop.parsers.numbers import (
    INT_NULL,
    int_column,
    looks_decimal_comma,
    parse_number,
    parse_series,
)
from rooftop.parsers.units import base_unit, si_factor


@pytest.mark.parametrize(
    ("unit", "factor"),
    [
        ("byte", 1.0),
        ("Kbyte", 1e3),
        ("Mbyte", 1e6),
        ("Gbyte", 1e9),
        ("nsecond", 1e-9),
        ("ns", 1e-9),
        ("usecond", 1e-6),
        ("us", 1e-6),
        ("msecond", 1e-3),
        ("ms", 1e-3),
        ("second", 1.0),
        ("cycle/nsecond", 1e9),  # SM frequency 1.59 cycle/nsecond = 1.59 GHz
        ("cycle/usecond", 1e6),
        ("Ghz", 1e9),
        ("Mhz", 1e6),
        ("hz", 1.0),
        ("byte/second", 1.0),
        ("Gbyte/s", 1e9),
        ("Gbyte/second", 1e9),
        ("Tbyte/second", 1e12),
        ("Kbyte/block", 1e3),
        ("%", 1.0),
        ("", 1.0),
        ("inst/cycle", 1.0),
        ("register/thread", 1.0),
        ("sector", 1.0),
    ],
)
def test_si_factor(unit: str, factor: float) -> None:
    assert si_factor(unit) == factor


def test_byte_prefixes_are_decimal_as_ncu_prints_them() -> None:
    # ncu console logs print the 1024-byte driver shared-memory reservation as "1.02 Kbyte/block"
    # and a 32 KiB carve-out as "32.77 Kbyte": 1024 / 1000 = 1.024, 32768 / 1000 = 32.768.
    assert round(1024 / si_factor("Kbyte/block"), 2) == 1.02  # type: ignore[operator]
    assert round(32768 / si_factor("Kbyte"), 2) == 32.77  # type: ignore[operator]


def test_unknown_unit_shape_is_none() -> None:
    assert si_factor("(!) weird unit") is None


def test_base_unit() -> None:
    assert base_unit("Mbyte") == "byte"
    assert base_unit("usecond") == "second"
    assert base_unit("cycle/nsecond") == "cycle/second"
    assert base_unit("Gbyte/s") == "byte/second"


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("1,759,000.00", 1759000.0),
        ("2,147,483,647.00", 2147483647.0),
        ("5,318,969,728.00", 5318969728.0),
        ("195904", 195904.0),
        ("1.11", 1.11),
        ("-3.5", -3.5),
        ("1e-3", 0.001),
    ],
)
def test_parse_number(text: str, value: float) -> None:
    assert parse_number(text) == value


@pytest.mark.parametrize("text", ["", "n/a", "N/A", "nan", "(!) nan", "(!) n/a", "no data", "N/W"])
def test_missing_tokens_are_none(text: str) -> None:
    assert parse_number(text) is None


def test_decimal_comma_only_when_asked() -> None:
    assert parse_number("1.234,5", decimal_comma=True) == 1234.5
    assert parse_number("0,75", decimal_comma=True) == 0.75
    # ncu's own convention: a lone comma group is a thousands separator.
    assert parse_number("1,234") == 1234.0
    assert parse_number("1.234,5") is None


def test_looks_decimal_comma() -> None:
    assert looks_decimal_comma(["1.234,5", "0,75", "12"])
    assert not looks_decimal_comma(["1,234.5", "0.75"])
    assert not looks_decimal_comma(["1,234", "12"])  # ambiguous: thousands


def test_parse_series_flags_text_but_not_missing() -> None:
    nums, bad = parse_series(pd.Series(["1,234", "n/a", "CachePreferNone", "(!) nan", "2.5", None]))
    assert nums.iloc[0] == 1234.0 and nums.iloc[4] == 2.5
    assert math.isnan(nums.iloc[1]) and math.isnan(nums.iloc[2]) and math.isnan(nums.iloc[3])
    assert bad.tolist() == [False, False, True, False, False, False]


def test_parse_series_decimal_comma() -> None:
    nums, bad = parse_series(pd.Series(["1.234,5", "0,5"]), decimal_comma=True)
    assert nums.tolist() == [1234.5, 0.5]
    assert not bad.any()


def test_int_column_marks_the_null_sentinel_missing_only_where_the_dtype_allows() -> None:
    raw = np.array([3, INT_NULL, 0, -5], dtype=np.int64)
    nullable = int_column(raw, "Int64")
    assert str(nullable.dtype) == "Int64" and nullable.isna().tolist() == [False, True, False, False]
    assert nullable.fillna(7).tolist() == [3, 7, 0, -5]
    plain = int_column(raw[[0, 2]], "int64")
    assert plain.dtype == np.int64 and plain.tolist() == [3, 0] and plain.flags.writeable


def test_float_column_is_nan_where_absent_or_not_a_number() -> None:
    df = pd.DataFrame({"a": ["1.5", "x", None], "b": pd.array([1, None, 3], dtype="Int64")})
    assert np.allclose(column(df, "a"), [1.5, np.nan, np.nan], equal_nan=True)
    assert column(df, "b").dtype == "float64" and np.isnan(column(df, "b")[1])
    assert column(df, "missing").isna().all() and len(column(df, "missing")) == 3
