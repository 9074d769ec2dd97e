"""Value cells of ``dcgmi dmon`` rows as numbers (docs/formulas.md#inputs).

``N/A``, ``N/W`` and ``n/a`` are missing (found by their three bytes in numpy); a block whose values
all parse is cast by Arrow at once, otherwise plain decimals are cast and the rest go through
``pandas.to_numeric`` (a hand annotation like ``38735656050(36.07GB/s)`` becomes NaN: rejected).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

MISSING_LEN = 3  # every missing marker is three bytes: "N/A", "N/W", "n/a"
ASCII_SLASH, ASCII_N, ASCII_A, ASCII_W, ASCII_N_LOWER, ASCII_A_LOWER = (ord(c) for c in "/NAWna")
NUMERIC = r"^-?[0-9]+(?:\.[0-9]+)?$"  # values pyarrow casts exactly like pandas.to_numeric


def missing_mask(vals: pa.Array) -> np.ndarray:
    """Where ``vals`` (string, no nulls) is ``N/A``, ``N/W`` or ``n/a``."""
    offs = np.frombuffer(vals.buffers()[1], dtype=np.int32)[vals.offset : vals.offset + len(vals) + 1]
    data = vals.buffers()[2]
    out = np.zeros(len(vals), dtype=bool)
    if data is None:
        return out
    three = np.flatnonzero(np.diff(offs) == MISSING_LEN)
    if len(three):
        b = np.frombuffer(data, dtype=np.uint8)
        s = offs[three]
        c0, c1, c2 = b[s], b[s + 1], b[s + 2]
        upper = (c0 == ASCII_N) & ((c2 == ASCII_A) | (c2 == ASCII_W))
        lower = (c0 == ASCII_N_LOWER) & (c2 == ASCII_A_LOWER)
        out[three] = (c1 == ASCII_SLASH) & (upper | lower)
    return out


def to_float(vals: pa.Array, missing: np.ndarray) -> np.ndarray:
    """Values as floats (NaN: missing or not a number). Arrow casts the whole array when every
    value parses; otherwise plain decimals are cast and the rest go through ``pandas.to_numeric``."""
    some = missing.any()
    sel = vals.filter(pa.array(~missing)) if some else vals
    try:
        parsed: np.ndarray = pc.cast(sel, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        nums = np.full(len(vals), np.nan)
        simple = pc.match_substring_regex(vals, NUMERIC).to_numpy(zero_copy_only=False)
        if simple.any():
            nums[simple] = pc.cast(vals.filter(pa.array(simple)), pa.float64()).to_numpy(zero_copy_only=False)
        rest = np.flatnonzero(~simple & ~missing)
        if len(rest):
            other = pd.Series(vals.take(pa.array(rest)).to_pylist(), dtype="object")
            nums[rest] = pd.to_numeric(other, errors="coerce").to_numpy(dtype="float64")
        return nums
    if some:
        nums = np.full(len(vals), np.nan)
        nums[~missing] = parsed
        return nums
    return parsed
