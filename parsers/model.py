"""Canonical tables every parser produces, and the row accounting that goes with them.

Kernel table (one row per profiled launch), a pandas DataFrame:

==================  =========  =====================================================================
column              dtype      meaning
==================  =========  =====================================================================
input               string     path of the input file, as given
index               Int64      launch order within that input, 0-based
id                  string     ncu's ``ID`` (or the report's result index); null when absent
line                Int64      1-based line in the input where the launch's record starts (null: binary)
pid                 Int64      process ID
process             string     process name
host                string     host name
name                string     kernel name as ncu printed it (demangled where ncu demangled it)
context, stream     Int64
device              string     device name (``NVIDIA A10G``) or null
device_index        Int64      device ordinal
cc                  string     compute capability ``"8.6"`` or null
grid_dim, block_dim string     ``"(x, y, z)"`` as ncu prints them, or null
grid                Int64      blocks per grid (product of grid_dim, or ``launch__grid_size``)
block               Int64      threads per block (product of block_dim, or ``launch__block_size``)
nvtx                string     NVTX push/pop and start/end ranges joined by `` > `` (default domain bare, others ``domain:range``)
invocations         Int64      launches a row stands for (``--print-summary``: N; otherwise 1)
duration_s          float64    ``gpu__time_duration.sum`` in seconds, or null
<metric>            float64    every other metric, keyed by its ncu metric name
                               (``dram__bytes.sum``), in SI base units: bytes, seconds, Hz
                               (cycles/second), bytes/second; ``%`` values stay percent (0-100).
                               Display labels that map to a metric ID are stored under the ID
                               (``parsers.ncu.labels``); labels that do not map are stored as
                               ``"<Section Name>: <label>"``.
==================  =========  =====================================================================

Rules table (NVIDIA's rule results, ``.ncu-rep`` and details-page rule rows): input, index, section,
rule, type (OPT/INF/WRN/ERR), title, description, speedup_type (local/global), speedup_pct.

GPU sample table (DCGM and nvidia-smi streams), long format, Arrow types (``SAMPLE_SCHEMA``).

Timeline events table (nsys SQLite, Kineto JSON; ``EVENT_COLUMNS``), one row per event, pandas:
input (string), device (string, the file's own device id ``"0"``; null for host events), kind
(``kernel``/``memcpy``/``memset``: GPU activity; ``runtime``: a CUDA/HIP runtime or driver call;
``sync``: a synchronisation record; ``range``: an NVTX range, ``record_function`` annotation or
``ProfilerStep#N``), name (string), start_ns/end_ns (int64 ns on the file's clock, exact), stream,
pid, tid, correlation (Int64), grid_dim/block_dim (``"(x, y, z)"`` or null), bytes (Int64, copies
and sets). Rules on it: ``docs/formulas.md#timelines``.

Host op table (Kineto ``cpu_op`` events; ``OP_COLUMNS``), one row per op, pandas: input, name, start_ns/
end_ns (int64 ns, exact), pid, tid, external_id (Int64, Kineto's ``External id``), and the op's arguments
as recorded with ``record_shapes=True``: input_dims, input_types, input_strides, concrete_inputs (string:
the value as compact JSON, ``[[8944,1024],[1024,2816]]``; null when the trace has none), and collective
(``record_param_comms``: ``{"Collective name": "allreduce", "In msg nelems": 2049000, …}`` as compact JSON
of the keys ``Collective name``, ``In msg nelems``, ``Out msg nelems``, ``Group size``, ``dtype``). Rules on it:
``docs/formulas.md#ops``.

Every parser returns a :class:`ParseResult`; its :class:`InputAccounting` satisfies
``records + missing + rejected == total``: each launch or sample is parsed, known missing (the
export says the value is absent: ``n/a``, DCGM blank sentinels, a failed launch), or rejected with
file, line and reason.
"""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import pandas as pd
import pyarrow as pa

from rooftop.errors import SchemaError

IDENTITY_COLUMNS: dict[str, str] = {
    "input": "string",
    "index": "Int64",
    "id": "string",
    "line": "Int64",
    "pid": "Int64",
    "process": "string",
    "host": "string",
    "name": "string",
    "context": "Int64",
    "stream": "Int64",
    "device": "string",
    "device_index": "Int64",
    "cc": "string",
    "grid_dim": "string",
    "block_dim": "string",
    "grid": "Int64",
    "block": "Int64",
    "nvtx": "string",
    "invocations": "Int64",
    "duration_s": "float64",
}

RULE_COLUMNS: dict[str, str] = {
    "input": "string",
    "index": "Int64",
    "section": "string",
    "rule": "string",
    "type": "string",
    "title": "string",
    "description": "string",
    "speedup_type": "string",
    "speedup_pct": "float64",
}

EVENT_COLUMNS: dict[str, str] = {
    "input": "string",
    "device": "string",
    "kind": "string",
    "name": "string",
    "start_ns": "int64",
    "end_ns": "int64",
    "stream": "Int64",
    "pid": "Int64",
    "tid": "Int64",
    "correlation": "Int64",
    "grid_dim": "string",
    "block_dim": "string",
    "bytes": "Int64",
}

OP_COLUMNS: dict[str, str] = {
    "input": "string",
    "name": "string",
    "start_ns": "int64",
    "end_ns": "int64",
    "pid": "Int64",
    "tid": "Int64",
    "external_id": "Int64",
    "input_dims": "string",
    "input_types": "string",
    "input_strides": "string",
    "concrete_inputs": "string",
    "collective": "string",
}

SAMPLE_SCHEMA = pa.schema(
    [
        pa.field("timestamp", pa.timestamp("ms", tz="UTC"), nullable=False),
        pa.field("host", pa.string()),
        pa.field("gpu", pa.string()),  # GPU index as text ("0"); entity id for dmon
        pa.field("uuid", pa.string()),
        pa.field("pci_bus_id", pa.string()),  # "00000000:3B:00.0" (NVML's form, parsers/pci.py); null if not given
        pa.field("model", pa.string()),  # "NVIDIA H100 80GB HBM3"
        pa.field("mig", pa.string()),  # GPU instance id ("1"), null when not MIG
        pa.field("mig_profile", pa.string()),  # "1g.10gb"
        pa.field("field_id", pa.int32(), nullable=False),  # DCGM field ID: the stable key
        pa.field("field", pa.string()),  # DCGM field name as it came in
        pa.field("value", pa.float64(), nullable=False),  # ratios 0..1, bytes, W, ...
        pa.field("namespace", pa.string()),
        pa.field("pod", pa.string()),
        pa.field("container", pa.string()),
        pa.field("job", pa.string()),
    ]
)
"""One row per (time, GPU, field) sample. Missing values are counted, not stored."""


@dataclass(frozen=True)
class Rejected:
    """A record that could not be used: where it was and why."""

    path: str
    line: int | None
    reason: str

    def as_dict(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "reason": self.reason}


@dataclass
class InputAccounting:
    """Row accounting for one input file: ``records + missing + rejected`` is every launch/sample."""

    path: str
    format: str
    records: int = 0
    missing: int = 0
    rejected: int = 0

    @property
    def total(self) -> int:
        return self.records + self.missing + self.rejected

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "records": self.records,
            "missing": self.missing,
            "rejected": self.rejected,
        }


_EMPTY: dict[str, pd.DataFrame] = {}  # built once; callers get a copy (~0.1 ms instead of ~3 ms)


def empty_kernels() -> pd.DataFrame:
    if "kernels" not in _EMPTY:
        _EMPTY["kernels"] = pd.DataFrame({c: pd.Series(dtype=t) for c, t in IDENTITY_COLUMNS.items()})
    return _EMPTY["kernels"].copy()


def empty_rules() -> pd.DataFrame:
    if "rules" not in _EMPTY:
        _EMPTY["rules"] = pd.DataFrame({c: pd.Series(dtype=t) for c, t in RULE_COLUMNS.items()})
    return _EMPTY["rules"].copy()


def empty_events() -> pd.DataFrame:
    if "events" not in _EMPTY:
        _EMPTY["events"] = pd.DataFrame({c: pd.Series(dtype=t) for c, t in EVENT_COLUMNS.items()})
    return _EMPTY["events"].copy()


def empty_ops() -> pd.DataFrame:
    if "ops" not in _EMPTY:
        _EMPTY["ops"] = pd.DataFrame({c: pd.Series(dtype=t) for c, t in OP_COLUMNS.items()})
    return _EMPTY["ops"].copy()


def empty_samples() -> pa.Table:
    return SAMPLE_SCHEMA.empty_table()


@dataclass
class ParseResult:
    """What a parser hands on: the tables, the accounting and what it learned about the input."""

    accounting: InputAccounting
    kernels: pd.DataFrame = field(default_factory=empty_kernels)
    rules: pd.DataFrame = field(default_factory=empty_rules)
    samples: pa.Table = field(default_factory=empty_samples)
    rejected: list[Rejected] = field(default_factory=list)
    events: pd.DataFrame = field(default_factory=empty_events)  # timelines (EVENT_COLUMNS)
    ops: pd.DataFrame = field(default_factory=empty_ops)  # host ops with their arguments (OP_COLUMNS)
    # Free-form facts about the input: ncu version, command line, units mode, dmon interval ...
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def kind(self) -> str:
        """``"ncu"`` for kernel profiles, ``"dcgm"`` for GPU sample streams."""
        from rooftop.parsers.formats import FORMATS  # the registry's kind, not the name (no cycle)

        fmt = FORMATS.get(self.accounting.format)
        return "dcgm" if self.samples.num_rows or (fmt is not None and fmt.kind == "samples") else "ncu"


def drain_batches(batches: Generator[pa.Table, None, ParseResult]) -> ParseResult:
    """A ``parse_batches`` generator run to the end: its result, with every batch joined as ``samples``."""
    tables = []
    while True:
        try:
            tables.append(next(batches))
        except StopIteration as stop:
            result: ParseResult = stop.value
            break
    if tables:
        result.samples = tables[0] if len(tables) == 1 else pa.concat_tables(tables)
    return result


def normalize_kernels(df: pd.DataFrame) -> pd.DataFrame:
    """Add missing identity columns and cast them (and metrics) to their documented dtypes."""
    out = df.copy()
    for col, dtype in IDENTITY_COLUMNS.items():
        if col not in out.columns:
            fill = float("nan") if dtype == "float64" else pd.NA  # pandas 3: no NA in float64
            out[col] = pd.Series([fill] * len(out), dtype=dtype, index=out.index)
        else:
            out[col] = out[col].astype(dtype)
    metric_cols = [c for c in out.columns if c not in IDENTITY_COLUMNS]
    for c in metric_cols:
        if out[c].dtype != "float64":
            out[c] = pd.to_numeric(out[c], errors="coerce").astype("float64")
    ordered = list(IDENTITY_COLUMNS) + sorted(metric_cols)
    return out[ordered]


def validate_kernels(df: pd.DataFrame) -> pd.DataFrame:
    """Check a kernel table against the schema above; raise :class:`SchemaError` naming the column."""
    for col, dtype in IDENTITY_COLUMNS.items():
        if col not in df.columns:
            raise SchemaError(f"kernel table lacks column {col!r}")
        if str(df[col].dtype) != dtype:
            raise SchemaError(f"kernel column {col!r} is {df[col].dtype}, expected {dtype}")
    for col in df.columns:
        if col not in IDENTITY_COLUMNS and df[col].dtype != "float64":
            raise SchemaError(f"metric column {col!r} is {df[col].dtype}, expected float64")
    if df["input"].isna().any() or df["index"].isna().any() or df["name"].isna().any():
        raise SchemaError("kernel table has rows without input, index or name")
    dup = df.duplicated(["input", "index"])
    if dup.any():
        raise SchemaError(f"kernel table repeats (input, index) {df.loc[dup, 'index'].iloc[0]}")
    dur = df["duration_s"]
    if (dur < 0).any():
        raise SchemaError("kernel table has negative durations")
    return df


def validate_samples(table: pa.Table) -> pa.Table:
    """Check a GPU sample table against ``SAMPLE_SCHEMA``; raise :class:`SchemaError`."""
    if not table.schema.equals(SAMPLE_SCHEMA, check_metadata=False):
        raise SchemaError(f"sample table schema differs from SAMPLE_SCHEMA: {table.schema}")
    return table


def concat_frames(frames: list[pd.DataFrame]) -> pd.DataFrame:
    """``pd.concat(frames, ignore_index=True)`` without pandas 2.x's FutureWarning about empty or
    all-NA columns (each pandas version keeps its own dtype rule; the values are the same)."""
    import warnings

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="The behavior of DataFrame concatenation with empty or all-NA",
                                category=FutureWarning)
        return pd.concat(frames, ignore_index=True)
