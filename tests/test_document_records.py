"""kernel_records: nesting flat result columns, ``extra`` and sparse extras per row pattern."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from rooftop.analyzer.document import kernel_records


def test_sparse_extras_follow_each_rows_pattern() -> None:
    res = pd.DataFrame({
        "index": [0, 1, 2], "name": ["a", "b", "c"], "bytes_dram": [1.0, np.nan, math.inf],
        "peak_fp32": [np.nan, 2.0, 3.0], "bw_dram": [5.0, np.nan, 6.0],
    })
    recs = kernel_records(res)
    assert recs[0]["bytes"]["dram"] == 1.0 and recs[1]["bytes"]["dram"] is None and recs[2]["bytes"]["dram"] is None
    # no extra columns: extra holds only the sparse values that are there, in column order
    assert recs[0]["extra"] == {"bw_dram": 5.0}
    assert recs[1]["extra"] == {"peak_fp32": 2.0}
    assert list(recs[2]["extra"]) == ["peak_fp32", "bw_dram"]


def test_no_extra_key_when_nothing_to_say_and_extra_columns_first() -> None:
    res = pd.DataFrame({"index": [0, 1], "peak_fp32": [np.nan, 1.0], "waves": [0.5, np.nan],
                        "evidence": [["x", "y"], None], "note": pd.array(["p", None], dtype="string")})
    recs = kernel_records(res)
    assert recs[0]["extra"] == {"waves": 0.5, "note": "p"}
    assert recs[1]["extra"] == {"waves": None, "note": None, "peak_fp32": 1.0}
    assert recs[0]["evidence"] == ["x", "y"] and recs[1]["evidence"] == []
    only_sparse = kernel_records(pd.DataFrame({"index": [0], "peak_fp32": [np.nan]}))
    assert "extra" not in only_sparse[0]


def test_object_columns_with_numpy_values_are_converted() -> None:
    res = pd.DataFrame({"index": [0, 1], "label": pd.Series([np.float64("nan"), "memory-bound"], dtype=object),
                        "mixed": pd.Series([np.int64(3), "x"], dtype=object)})
    recs = kernel_records(res)
    assert recs[0]["label"] == "unknown" and recs[1]["label"] == "memory-bound"
    assert recs[0]["extra"]["mixed"] == 3 and type(recs[0]["extra"]["mixed"]) is int
