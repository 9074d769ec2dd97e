"""Launch identity of Nsight Compute ``--csv`` rows (docs/formulas.md#inputs).

:func:`identity_frame` maps the identity columns of both header generations (ncu <= 2022: ``Kernel
Time`` and no dims; ncu >= 2023: ``Block Size, Grid Size, Device, CC``) to the canonical kernel
columns of :mod:`rooftop.parsers.model`; :func:`fill_launch_identity` fills what they lack from
``launch__*``/``device__*`` metrics.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from rooftop.parsers.model import IDENTITY_COLUMNS
from rooftop.parsers.ncu.csv_values import INT_LIMIT, by_unique, to_int

# Identity columns of both header generations, ncu header name -> canonical kernel column.
IDENTITY_MAP: dict[str, str] = {
    "ID": "id",
    "Process ID": "pid",
    "Process Name": "process",
    "Host Name": "host",
    "Kernel Name": "name",
    "Context": "context",
    "Stream": "stream",
    "Block Size": "block_dim",
    "Grid Size": "grid_dim",
    "Device": "device_index",
    "CC": "cc",
}
# Identity-like columns that are not metrics and have no canonical column.
EXTRA_IDENTITY = ("Kernel Time",)
NON_METRIC_COLUMNS = frozenset(IDENTITY_MAP) | frozenset(EXTRA_IDENTITY)

# Metric-name prefixes that describe the device or launch configuration rather than a measurement:
# a failed launch still has them, so they do not make a launch count as "measured".
STATIC_PREFIXES = ("device__", "launch__", "profiler__", "numa__", "nvlink__", "c2clink__")

_DIMS_RE = r"^\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*$"
INT_RE = r"^\s*\d+\s*$"
_CC_RE = r"^\d+[.,]\d+$"  # "8,6" in a file re-saved with a decimal comma


def factorize_columns(df: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Codes of the distinct value combinations of ``cols`` (first-appearance order) and the
    combinations themselves; no per-row string building."""
    combined = np.zeros(len(df), dtype=np.int64)
    uniques = []
    for c in cols:
        codes, uniq = pd.factorize(df[c])
        uniques.append(np.asarray(uniq, dtype=object))
        combined = combined * (len(uniq) + 1) + codes
    codes, first_combo = pd.factorize(combined)
    # Decode each distinct combination back to its column values.
    combos: list[tuple[str, ...]] = []
    if len(codes):
        first_row = np.full(len(first_combo), -1)
        first_row[codes[::-1]] = np.arange(len(codes))[::-1]
        cols_vals = [df[c].to_numpy(dtype=object)[first_row] for c in cols]
        combos = [tuple(str(v) for v in t) for t in zip(*cols_vals, strict=True)]
    return np.asarray(codes), combos


def _whole(f: float) -> int | None:
    """:func:`to_int` of one float."""
    return int(f) if abs(f) < INT_LIMIT and f == round(f) else None


def _dims_one(v: str) -> int | None:
    m = re.search(_DIMS_RE, v)
    return None if m is None else _whole(float(m[1]) * float(m[2]) * float(m[3]))


def dims_product(dims: pd.Series) -> pd.Series:
    """``"(x, y, z)"`` -> ``x*y*z`` as Int64 (null when the text is not three integers)."""

    def prod(u: pd.Series) -> pd.Series:
        parts = u.str.extract(_DIMS_RE).astype("float64")
        return to_int(parts.prod(axis=1, min_count=3))

    return by_unique(dims, prod, _dims_one).astype("Int64")


def _int_col(u: pd.Series) -> pd.Series:
    return to_int(pd.to_numeric(u.where(u.str.match(INT_RE)), errors="coerce"))


def _int_one(v: str) -> int | None:
    # float(int(...)): the int64 -> float64 rounding pandas applies before to_int's range check
    return _whole(float(int(v))) if re.match(INT_RE, v) else None


def _cc_one(v: str) -> str | None:
    u = v.strip()
    return u.replace(",", ".") if re.match(_CC_RE, u) else None


def identity_frame(df: pd.DataFrame, path: str, line_nos: np.ndarray) -> pd.DataFrame:
    """Canonical identity columns for rows of a raw/details frame (one row per input row)."""
    out = pd.DataFrame(index=df.index)
    out["input"] = path
    out["line"] = pd.array(line_nos, dtype="Int64")
    for src, dst in IDENTITY_MAP.items():
        if src in df.columns:
            out[dst] = df[src]
    for col in ("pid", "context", "stream", "device_index"):
        if col in out.columns:
            out[col] = by_unique(out[col], _int_col, _int_one).astype("Int64")

    def cc_text(u: pd.Series) -> pd.Series:
        u = u.str.strip()
        return u.where(u.str.match(_CC_RE, na=False)).str.replace(",", ".", regex=False).astype("string")

    if "cc" in out.columns:
        out["cc"] = by_unique(out["cc"], cc_text, _cc_one).astype("string")
    for dim, prod in (("grid_dim", "grid"), ("block_dim", "block")):
        if dim in out.columns:
            out[dim] = out[dim].where(out[dim].str.len() > 0)
            out[prod] = dims_product(out[dim])
    out["invocations"] = pd.array([1] * len(out), dtype="Int64")
    return out


def fill_launch_identity(kern: pd.DataFrame) -> pd.DataFrame:
    """Fill grid/block, device, cc and duration from metric columns where the identity lacks them."""
    for prod, metric in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
        if metric in kern.columns:
            fallback = to_int(kern[metric])
            kern[prod] = kern[prod].astype("Int64").fillna(fallback) if prod in kern.columns else fallback
    maj, mnr = "device__attribute_compute_capability_major", "device__attribute_compute_capability_minor"
    if maj in kern.columns and mnr in kern.columns:
        cc = to_int(kern[maj]).astype(str) + "." + to_int(kern[mnr]).astype(str)
        cc = cc.where(kern[maj].notna() & kern[mnr].notna())
        kern["cc"] = kern["cc"].fillna(cc) if "cc" in kern.columns else cc
    if "device__attribute_device_index" in kern.columns:
        idx = to_int(kern["device__attribute_device_index"])
        kern["device_index"] = kern["device_index"].fillna(idx) if "device_index" in kern.columns else idx
    for dur in ("gpu__time_duration.sum", "gpu__time_duration"):  # the second: 2019.x name
        if dur in kern.columns:
            kern["duration_s"] = kern[dur].astype("float64")
            break
    for col, dtype in IDENTITY_COLUMNS.items():  # normalize_kernels cannot make a null float column
        if col not in kern.columns:
            kern[col] = pd.Series(np.nan if dtype == "float64" else pd.NA, index=kern.index, dtype=dtype)
    return kern


def measured_columns(metric_cols: list[str]) -> list[str]:
    """Metric columns that a failed launch would not have (see ``STATIC_PREFIXES``)."""
    measured = [c for c in metric_cols if not c.startswith(STATIC_PREFIXES)]
    return measured or list(metric_cols)
