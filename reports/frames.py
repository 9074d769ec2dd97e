"""The document's lists as pandas DataFrames, for notebooks and spreadsheets (``rooftop.analyze(...)``
views, ``--csv``): one row per kernel, finding, window, step or op; nested objects flattened into
``parent_child`` columns; every number's unit in its column name (``_s``, ``_pct``, ``_flop_s``,
``_bytes``, ``_flop_per_byte``). Drawn from the document only (docs/contract.md has each key)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

# flattened key -> name with its unit; keys already ending in a unit (_s, _pct, _flops_s) stay
_UNITS: dict[str, str] = {
    "flops": "flop",
    "achieved_flops_s": "achieved_flop_s",
    "attainable_flops_s": "attainable_flop_s",
    "est_flops_s": "est_flop_s",
    "bytes_l1": "l1_bytes",
    "bytes_l2": "l2_bytes",
    "bytes_dram": "dram_bytes",
    "intensity_l1": "l1_intensity_flop_per_byte",
    "intensity_l2": "l2_intensity_flop_per_byte",
    "intensity_dram": "dram_intensity_flop_per_byte",
    "flops_by_class_fp64": "fp64_flop",
    "flops_by_class_fp32": "fp32_flop",
    "flops_by_class_fp16": "fp16_flop",
    "flops_by_class_tensor": "tensor_flop",
    "time_share": "time_share_fraction",
    "grid": "grid_blocks",
    "block": "block_threads",
}

_FIRST = ("rank", "index", "input", "gpu", "start", "end", "name", "family", "severity", "rule", "title",
          "label", "limiter", "duration_s", "est_saving_s", "time_share")

TABLES = ("kernels", "findings", "windows", "steps", "ops")


def _flatten(row: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in row.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, name + "_"))
        elif isinstance(value, list):
            # a list of plain values reads as one cell; a list of objects (ncu_rules) keeps its items
            out[name] = "; ".join(map(str, value)) if all(not isinstance(v, (Mapping, list)) for v in value) \
                else value
        else:
            out[name] = value
    return out


def frame(rows: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """Rows of the document flattened, units in the column names (see :data:`_UNITS`)."""
    flat = [_flatten(r) for r in rows]
    df = pd.DataFrame(flat)
    first = [c for c in _FIRST if c in df.columns]
    df = df[first + [c for c in df.columns if c not in first]]
    return df.rename(columns={c: _UNITS.get(c, c) for c in df.columns})


def table(doc: Mapping[str, Any], name: str) -> pd.DataFrame:
    """One of :data:`TABLES` of a document (kernels, findings, windows, steps, ops); empty when the
    document has none (a DCGM run has no kernels)."""
    if name not in TABLES:
        raise ValueError(f"no table {name!r}; one of {', '.join(TABLES)}")
    rows = doc.get(name) or []
    return frame(rows if isinstance(rows, list) else [])


def write_csv(doc: Mapping[str, Any], paths: Mapping[str, str]) -> list[str]:
    """Tables of ``doc`` as CSV, ``{"kernels": path, "findings": path}`` (``--csv``); returns the
    files written. A list of objects in a cell (``ncu_rules``) is written as its items' text."""
    from rooftop.atomic import write_atomic

    written = []
    for name, out in paths.items():
        df = table(doc, name)
        for col in df.columns:
            if df[col].map(lambda v: isinstance(v, list)).any():
                df[col] = df[col].map(lambda v: "; ".join(map(str, v)) if isinstance(v, list) else v)
        write_atomic(out, df.to_csv(index=False, lineterminator="\n"))
        written.append(out)
    return written
