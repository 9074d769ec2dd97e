"""A short ncu CSV column is read value by value (parsers/ncu/csv_values.by_unique's ``one``; issue 30
item 15, bench/NOTES.md "Small ncu files"): the same values as the vectorized path, held equal here on
generated printed values, and on a one-kernel raw page parsed both ways."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as st

from bench.gen_inputs import ncu_raw_header, ncu_raw_row
from rooftop.parsers import parse_path
from rooftop.parsers.ncu import csv_values
from rooftop.parsers.ncu.csv_identity import dims_product, identity_frame
from rooftop.parsers.ncu.csv_values import is_missing_text


@contextmanager
def vectorized_only() -> Iterator[None]:
    """Every column through the vectorized path (the reference)."""
    saved = csv_values.SMALL_COLUMN
    csv_values.SMALL_COLUMN = -1
    try:
        yield
    finally:
        csv_values.SMALL_COLUMN = saved


def both(f: Callable[[], pd.DataFrame | pd.Series]) -> tuple[pd.DataFrame | pd.Series, pd.DataFrame | pd.Series]:
    fast = f()
    with vectorized_only():
        ref = f()
    return fast, ref


# printed values as ncu writes them and as hand-edited files spoil them
_pieces = st.sampled_from(["0", "7", "12", "4611686018427387903", "4611686018427387904", "99999999999999999999",
                           " ", "\t", "(", ")", ",", ", ", ".", "-", "+", "n/a", "N/A", "(!) nan", "(!)", "nan",
                           "no data", "--", "None", "8.6", "8,6", "9.0a", "1e3", "(1, 1, 1)", "(256, 2, 1)",
                           "(2147483647, 65535, 65535)", "\u0663", "\u00a0"])
_values = st.lists(st.lists(_pieces, max_size=5).map("".join), min_size=0, max_size=40)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_identity_columns_equal_both_ways(values: list[str]) -> None:
    cols = ["ID", "Process ID", "Context", "Stream", "Device", "CC", "Grid Size", "Block Size"]
    df = pd.DataFrame({c: pd.Series(values, dtype=object) for c in cols})
    df["Grid Size"] = df["Grid Size"].iloc[::-1].to_numpy()  # other values per row than the ints
    fast, ref = both(lambda: identity_frame(df, "f.csv", pd.RangeIndex(len(df)).to_numpy() + 2))
    pd.testing.assert_frame_equal(fast, ref)


@settings(max_examples=300, deadline=None)
@given(_values)
def test_missing_markers_and_dims_equal_both_ways(values: list[str]) -> None:
    s = pd.Series(values, dtype=object)
    fast, ref = both(lambda: is_missing_text(s))
    pd.testing.assert_series_equal(fast, ref)
    fast, ref = both(lambda: dims_product(s))
    pd.testing.assert_series_equal(fast, ref)


def test_hand_checked_values() -> None:
    s = pd.Series(["(256, 2, 1)", " (1,1,1) ", "(2147483647, 65535, 65535)", "(1, 2)", "n/a"], dtype=object)
    assert dims_product(s).tolist() == [512, 1, pd.NA, pd.NA, pd.NA]
    assert is_missing_text(pd.Series(["(!) nan", " N/A ", "0", ""])).tolist() == [True, True, False, True]


def test_a_one_kernel_raw_page_parses_the_same_both_ways(tmp_path: Path) -> None:
    f = tmp_path / "k.csv"
    f.write_text(ncu_raw_header() + ncu_raw_row(0, "gemm_kernel", random.Random(1)))
    fast, ref = both(lambda: parse_path(f).kernels)
    pd.testing.assert_frame_equal(fast, ref)
    assert len(fast) == 1 and int(fast["grid"].iloc[0]) > 0
