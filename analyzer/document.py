"""The analysis document: the contract's JSON (``schema_version: 1``) as a plain dict of the type
:class:`rooftop.analyzer.schema.Document`.

Reports render this dict and nothing else, so everything a report shows is here.
Kernel results arrive as a flat DataFrame (columns listed in ``KERNEL_FIELDS``) and are nested
into the contract's shape here, in one place. :func:`build_document` is where the analyzer's
loosely typed parts become a ``Document``: mypy checks every use after it, and
``validate_document`` (run at the reports boundary and in the tests) checks the values.
"""

from __future__ import annotations

import gc
import hashlib
import math
import os
import stat
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import datetime, timezone
from itertools import chain, repeat
from operator import is_not
from typing import Any, cast

import numpy as np
import pandas as pd

from rooftop._version import __version__
from rooftop.analyzer.schema import Document, Kernel, Kind

SCHEMA_VERSION = 1

# Flat result columns (analyzer.kernels.analyze.analyze_kernels) -> where they go in a contract kernel.
KERNEL_FIELDS: dict[str, tuple[str, ...]] = {
    "index": ("index",),
    "input": ("input",),
    "id": ("id",),
    "name": ("name",),
    "family": ("family",),
    "device": ("device",),
    "duration_s": ("duration_s",),
    "grid": ("grid",),
    "block": ("block",),
    "sol_compute_pct": ("sol", "compute_pct"),
    "sol_memory_pct": ("sol", "memory_pct"),
    "flops": ("flops",),
    "flops_fp64": ("flops_by_class", "fp64"),
    "flops_fp32": ("flops_by_class", "fp32"),
    "flops_fp16": ("flops_by_class", "fp16"),
    "flops_tensor": ("flops_by_class", "tensor"),
    "bytes_l1": ("bytes", "l1"),
    "bytes_l2": ("bytes", "l2"),
    "bytes_dram": ("bytes", "dram"),
    "intensity_l1": ("intensity", "l1"),
    "intensity_l2": ("intensity", "l2"),
    "intensity_dram": ("intensity", "dram"),
    "attainable_flops_s": ("attainable_flops_s",),
    "achieved_flops_s": ("achieved_flops_s",),
    "label": ("label",),
    "limiter": ("limiter",),
    "evidence": ("evidence",),
    "ncu_rules": ("ncu_rules",),
    "nvtx": ("nvtx",),  # NVTX ranges the launch ran in, outermost first (docs/contract.md)
}


# Extra columns written on a kernel only where not null: the ceilings a kernel's ``extra.ceilings``
# reference into ``devices[]`` does not imply (analyzer.ceilings.refs.ceiling_refs).
SPARSE_EXTRAS = ("peak_fp64", "peak_fp32", "peak_fp16", "peak_tensor", "bw_l1", "bw_l2", "bw_dram",
                 "sm_count", "ceiling_device")


_PLAIN = {str, int, bool, type(None)}


def jsonable(value: Any) -> Any:
    """Plain JSON types: NaN/NA/inf -> None, numpy scalars -> Python, containers recursively."""
    if value is None or value is pd.NA or value is pd.NaT:
        return None
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if type(value) is list and set(map(type, value)) <= _PLAIN:  # e.g. 100k kernel positions
        return list(value)
    if isinstance(value, (list, tuple, np.ndarray, pd.Series)):
        return [jsonable(v) for v in list(value)]
    if isinstance(value, (np.bool_, bool)):
        return bool(value)
    if isinstance(value, (np.integer, int)):
        return int(value)
    if isinstance(value, (np.floating, float)):
        f = float(value)
        return f if math.isfinite(f) else None
    if isinstance(value, (pd.Timestamp, datetime)):
        ts = pd.Timestamp(value)
        ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
        return ts.isoformat().replace("+00:00", "Z")
    return value if isinstance(value, str) else str(value)


def _plain_value(value: Any) -> Any:
    """:func:`jsonable` with fast exits for the common plain types."""
    t = type(value)
    if t is str or t is int or t is bool or value is None:
        return value
    if t is float:
        return value if math.isfinite(value) else None
    if t is list and all(type(v) is str for v in value):
        return value
    return jsonable(value)


def _column_values(results: pd.DataFrame, col: str) -> list[Any]:
    """One result column as plain JSON values (what :func:`jsonable` gives per cell), converted once."""
    if col not in results.columns:
        return [None] * len(results)
    s = results[col]
    dtype = s.dtype
    if isinstance(dtype, np.dtype) and dtype.kind == "f":
        arr = s.to_numpy(dtype="float64")
        out: list[Any] = arr.tolist()
        for i in np.flatnonzero(~np.isfinite(arr)).tolist():
            out[i] = None
        return out
    if isinstance(dtype, np.dtype) and dtype.kind in "iub":
        ints: list[Any] = s.to_numpy().tolist()
        return ints
    if isinstance(dtype, pd.StringDtype):
        strs: list[Any] = s.to_numpy(dtype=object, na_value=None).tolist()
        return strs
    vals: list[Any] = s.tolist()
    types = set(map(type, vals))
    if types <= _PLAIN:  # strings/None (no NaN, no numpy scalars): already plain
        return vals
    if types == {list} and set(map(type, chain.from_iterable(vals))) <= {str}:  # evidence
        return vals
    return [_plain_value(v) for v in vals]


_DEFAULTS: dict[str, Callable[[], Any]] = {"evidence": list, "ncu_rules": list, "label": lambda: "unknown", "limiter": lambda: "unknown"}


@contextmanager
def gc_paused() -> Iterator[None]:
    """No cyclic garbage collection inside: for code that only builds acyclic containers (per-kernel
    dicts and lists), where each automatic full collection would walk every object made so far."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def kernel_records(results: pd.DataFrame) -> list[Kernel]:
    """Nest flat kernel result columns into contract kernel objects (extra columns go in ``extra``;
    those in :data:`SPARSE_EXTRAS` only where not null).

    Column-wise: each column is converted to plain JSON values once, then zipped into records.
    """
    with gc_paused():
        return cast("list[Kernel]", _kernel_records(results))


def _kernel_records(results: pd.DataFrame) -> list[dict[str, Any]]:
    n = len(results)
    cols: dict[str, list[Any]] = {}
    for col in KERNEL_FIELDS:
        vals = _column_values(results, col)
        make = _DEFAULTS.get(col)
        if make is not None:
            vals = [make() if v is None else v for v in vals]
        cols[col] = vals
    extra_cols = [c for c in results.columns if c not in KERNEL_FIELDS and c not in SPARSE_EXTRAS]
    extra = {str(c): _column_values(results, c) for c in extra_cols}
    sparse = {str(c): _column_values(results, c) for c in results.columns if c in SPARSE_EXTRAS}
    top = [c for c, path in KERNEL_FIELDS.items() if len(path) == 1]
    groups: dict[str, list[tuple[str, str]]] = {}
    for c, path in KERNEL_FIELDS.items():
        if len(path) == 2:
            groups.setdefault(path[0], []).append((path[1], c))
    # contract key order: the order of KERNEL_FIELDS, with nested groups where the previous code put them
    order: list[str] = ["sol", "flops_by_class", "bytes", "intensity"]
    order += [KERNEL_FIELDS[c][0] for c in top]
    parts: list[tuple[str, list[Any]]] = []
    for key in order:
        if key in groups:
            names = [k for k, _ in groups[key]]
            parts.append((key, list(map(dict, map(zip, repeat(names), zip(*(cols[c] for _, c in groups[key]),
                                                                              strict=True))))))
        else:
            parts.append((key, cols[key]))
    keys = [k for k, _ in parts]
    records = list(map(dict, map(zip, repeat(keys), zip(*(v for _, v in parts), strict=True)))) if n else []
    _add_extras(records, extra, sparse)
    return records


def _add_extras(records: list[dict[str, Any]], extra: dict[str, list[Any]], sparse: dict[str, list[Any]]) -> None:
    """``extra`` on each record: every ``extra`` column, then the ``sparse`` ones that are not null
    there (no ``extra`` key where that leaves nothing). Rows are grouped by which sparse columns
    they have, so each group's dicts are built by one ``zip`` of whole columns."""
    n = len(records)
    if not n or not (extra or sparse):
        return
    skeys = list(sparse)
    code = np.zeros(n, dtype=np.int64)
    for j, vals in enumerate(sparse.values()):
        code |= np.array(list(map(is_not, vals, repeat(None))), dtype=np.int64) << j
    patterns, inverse = np.unique(code, return_inverse=True)
    for p, pattern in enumerate(patterns.tolist()):
        keys = list(extra) + [k for j, k in enumerate(skeys) if pattern >> j & 1]
        if not keys:
            continue
        cols = [*extra.values(), *(sparse[k] for k in keys[len(extra):])]
        if len(patterns) == 1:
            rows: list[int] = list(range(n))
        else:
            rows = np.flatnonzero(inverse == p).tolist()
            cols = [[c[i] for i in rows] for c in cols]
        for i, d in zip(rows, map(dict, map(zip, repeat(keys), zip(*cols, strict=True))), strict=True):
            records[i]["extra"] = d


def file_sha256(path: str) -> str | None:
    """The SHA-256 of the regular file ``path``; None for anything else (a FIFO, device or folder
    is never opened for reading: it could block or never end) or when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        h = hashlib.sha256()
        with os.fdopen(fd, "rb", closefd=False) as fh:
            for chunk in iter(lambda: fh.read(1 << 20), b""):
                h.update(chunk)
        return h.hexdigest()
    except OSError:
        return None
    finally:
        os.close(fd)


def created_now() -> str:
    """The run's creation time, UTC to the second; ``SOURCE_DATE_EPOCH`` (the reproducible-builds
    convention, seconds since the epoch) fixes it so that two runs give identical bytes
    (docs/contract.md, keys beyond the sketch)."""
    fixed = os.environ.get("SOURCE_DATE_EPOCH", "").strip()
    when = (datetime.fromtimestamp(int(fixed), timezone.utc) if fixed.isdigit()
            else datetime.now(timezone.utc))
    return when.isoformat(timespec="seconds").replace("+00:00", "Z")


def build_document(
    *,
    kind: Kind,
    inputs: Sequence[Mapping[str, Any]],
    rejected: Sequence[Mapping[str, Any]],
    devices: Sequence[Mapping[str, Any]],
    kernels: pd.DataFrame | None = None,
    findings: Sequence[Mapping[str, Any]] | None = None,
    windows: Sequence[Mapping[str, Any]] | None = None,
    lint: Sequence[Mapping[str, Any]] | None = None,
    command: str = "",
    extra: Mapping[str, Any] | None = None,
    plain: Mapping[str, Any] | None = None,
) -> Document:
    """Assemble the contract document. ``kind`` is ``analyze``, ``fleet`` or ``diff``; ``extra`` holds
    the optional keys of :class:`Document` the command writes; ``plain`` more of them that are
    already plain JSON values (large column-wise parts: not walked by :func:`jsonable` again)."""
    doc: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "tool": {"name": "rooftop", "version": __version__},
        "kind": kind,
        "run": {
            "command": command,
            "created": created_now(),
            "input_sha256": {i["path"]: file_sha256(i["path"]) for i in inputs},
        },
        "inputs": inputs,
        "rejected": rejected,
        "devices": devices,
        "kernels": [],
        "findings": findings or [],
        "windows": windows or [],
        "lint": lint or [],
    }
    if extra:
        doc.update(extra)
    out: Document = jsonable(doc)  # the parts as plain JSON values, of the types Document declares
    if kernels is not None and len(kernels) and not (extra and "kernels" in extra):
        out["kernels"] = kernel_records(kernels)  # already plain: not walked again
    out.update(plain or {})  # type: ignore[typeddict-item]
    return out
