"""Prometheus HTTP API query results (``/api/v1/query`` vector, ``/api/v1/query_range`` matrix).

Also VictoriaMetrics' compatible answer (extra ``isPartial``/``stats`` keys, integer epochs).
Text before the JSON object (the ``curl``/``kubectl`` command, a progress meter) is skipped.

A sample is one ``value`` (vector) or one ``values`` pair (matrix) of a series whose
``__name__`` is a DCGM field. Series of other metrics are skipped and counted in
``meta["other_series"]``. ``NaN``/``±Inf`` and DCGM blank sentinels are missing; a value that is
not a number or a malformed pair is rejected.

Labels: host from ``Hostname``|``hostname``, else ``kubernetes_node``, ``nodename``, ``instance``;
workload from ``exported_namespace``/``exported_pod``/``exported_container`` when present, else
``namespace``/``pod``/``container`` -- except when those name the exporter's own pod (a container
or pod containing ``dcgm-exporter``, added by target discovery), which is no workload and is nulled.
"""

from __future__ import annotations

import json
import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.formats import MAX_FIELD_CHARS
from rooftop.parsers.json_depth import check_json_depth
from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    InputAccounting,
    ParseResult,
    Rejected,
    drain_batches,
)
from rooftop.parsers.pci import normalise_bus_id
from rooftop.parsers.prometheus.records import NO_GPU
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import EPOCH_SCALES, EPOCH_YEARS, epoch_scale

FORMAT = "prometheus-json"
BATCH_ROWS = 1 << 17  # rows per yielded batch (as parsers.prometheus.text)
_HOST = ("Hostname", "hostname", "kubernetes_node", "nodename", "instance")


def _first(metric: dict[str, Any], names: tuple[str, ...]) -> str | None:
    for n in names:
        v = metric.get(n)
        if isinstance(v, str) and v and not F.is_string_sentinel(v):
            return v
    return None


def _workload(metric: dict[str, Any]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    exported = any(f"exported_{k}" in metric for k in ("namespace", "pod", "container"))
    for k in ("namespace", "pod", "container"):
        out[k] = _first(metric, (f"exported_{k}",) if exported else (k,))
    if not exported and any("dcgm-exporter" in (out[k] or "") for k in ("pod", "container")):
        out = {k: None for k in out}
    return out


class _SeriesRef:
    """What :func:`_load`'s object hook leaves in the answer for one series object: its index in
    the collector (the series itself is kept compact there)."""

    __slots__ = ("k",)

    def __init__(self, k: int) -> None:
        self.k = k


@dataclass
class _Compact:
    """One series as the decoder left it: its labels and either float arrays of its pairs (the
    clean case) or the raw pairs (anything odd: read one by one, as before)."""

    metric: dict[str, Any]
    value: Any  # the "value" pair (vector), or None
    ts: np.ndarray | None = None  # "values" pairs, when every one is [number, number-text]
    vals: np.ndarray | None = None
    pairs: list[Any] | None = None  # "values" as given, when not clean


def _floats(items: Any) -> np.ndarray | None:
    try:
        return np.fromiter(map(float, items), dtype="float64")
    except (TypeError, ValueError):
        return None


def _compact(metric: dict[str, Any], value: Any, values: Any) -> _Compact:
    """Arrays when every pair is ``[time in s, number]`` (the API's form), else the pairs."""
    pairs = _as_list(values)
    if pairs and all(type(p) is list and len(p) == 2 for p in pairs):
        ts = _floats(p[0] for p in pairs)
        vals = _floats(p[1] for p in pairs)
        if ts is not None and vals is not None and _seconds(ts):
            return _Compact(metric, value, ts, vals)
    return _Compact(metric, value, pairs=pairs)


def _as_list(values: Any) -> list[Any]:
    """``values`` as a list of pairs to read (a non-list: its items, or itself, each rejected)."""
    if isinstance(values, list):
        return values
    if not values:
        return []
    return list(values) if isinstance(values, (str, dict, tuple)) else [values]


def _load(src: Source) -> tuple[dict[str, Any], list[_Compact]]:
    """The answer's outer objects and its series, compact: each series object is turned into
    arrays by the decoder's object hook as soon as it is decoded, so memory holds the text and
    ~16 bytes per sample, never the whole answer as Python objects (that took ~23x the file)."""
    text = src.text()
    check_json_depth(text, src.path)
    collected: list[_Compact] = []

    def hook(pairs: list[tuple[str, Any]]) -> Any:
        obj = dict(pairs)
        if isinstance(obj.get("metric"), dict) and ("values" in obj or "value" in obj):
            collected.append(_compact(obj["metric"], obj.get("value"), obj.get("values")))
            return _SeriesRef(len(collected) - 1)
        return obj

    decoder = json.JSONDecoder(object_pairs_hook=hook)
    i = text.find("{")
    while i >= 0:
        collected.clear()
        try:
            doc, _ = decoder.raw_decode(text, i)
        except (ValueError, RecursionError):
            i = text.find("\n{", i + 1)
            i = i + 1 if i >= 0 else -1
            continue
        if isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            return doc, list(collected)
        i = text.find("{", i + 1)
    raise InputError(src.path, "no Prometheus query result ({\"status\", \"data\": {...}}) found",
                     "save the body of /api/v1/query or /api/v1/query_range")


@dataclass
class _Rows:
    """What the series of one answer give: sample parts, rejections and counts."""

    path: str
    parts: list[tuple[np.ndarray, np.ndarray, int, str, dict[str, str | None]]] = field(default_factory=list)
    rows: int = 0
    rejected: list[Rejected] = field(default_factory=list)
    missing: int = 0
    other: int = 0
    sentinels: int = 0
    rescaled: dict[str, int] = field(default_factory=dict)  # sample times not in s, by scale

    def reject(self, why: str, n: int = 1) -> None:
        self.rejected += [Rejected(self.path, None, why)] * n

    def add(self, ts_ms: np.ndarray, values: np.ndarray, fid: int, name: str,
            labels: dict[str, str | None]) -> None:
        if len(ts_ms):
            self.parts.append((ts_ms, values, fid, name, labels))
            self.rows += len(ts_ms)


def _result_type(doc: dict[str, Any], path: str) -> str:
    rtype = doc["data"].get("resultType")
    if doc.get("status") not in (None, "success"):
        raise InputError(path, f"query failed: {doc.get('error', doc.get('status'))}", "re-run the query")
    if rtype not in ("vector", "matrix"):
        raise InputError(path, f"resultType {rtype!r} is not a series result", "query a vector or a range")
    return str(rtype)


def _labels(metric: dict[str, Any]) -> dict[str, str | None]:
    return {
        "host": _first(metric, _HOST), "gpu": _first(metric, ("gpu",)),
        "uuid": _first(metric, ("UUID", "uuid", "gpu_uuid")),
        "pci_bus_id": normalise_bus_id(_first(metric, ("pci_bus_id",))), "model": _first(metric, ("modelName", "model_name")),
        "mig": _first(metric, ("GPU_I_ID",)), "mig_profile": _first(metric, ("GPU_I_PROFILE",)),
        **_workload(metric), "job": _first(metric, ("hpc_job",)),
    }


def _sample(out: _Rows, k: int, name: str, pair: Any) -> tuple[float, float] | None:
    """(time in ms, value) of one ``[time, "value"]`` pair, or None when rejected."""
    try:
        ts = float(pair[0])
        value = float(pair[1])
    except (TypeError, ValueError, IndexError, KeyError):
        out.reject(f"series {k} ({name}): bad sample {str(pair)[:60]}")
        return None
    scale = epoch_scale(ts) if math.isfinite(ts) else None  # the API's unit is s; ms/us/ns detected
    if scale is None:
        out.reject(f"series {k} ({name}): timestamp {str(pair[0])[:40]} is not an epoch time between "
                   f"{EPOCH_YEARS[0]} and {EPOCH_YEARS[1]} in s (nor ms, us, ns) (docs/formulas.md#fleet-ingest)")
        return None
    if scale != "s":
        out.rescaled[scale] = out.rescaled.get(scale, 0) + 1
    return ts * (EPOCH_SCALES[scale] * 1000), value


def _seconds(ts: np.ndarray) -> bool:
    """Every time is an epoch time in seconds (the API's unit) within :data:`EPOCH_YEARS`."""
    return bool(len(ts)) and epoch_scale(float(ts.min())) == "s" and epoch_scale(float(ts.max())) == "s"


def _pairs_arrays(out: _Rows, k: int, name: str, series: _Compact, rtype: str) -> tuple[np.ndarray, np.ndarray]:
    """(time in ms, value) arrays of a series' pairs; odd pairs rejected one by one."""
    if rtype == "matrix" and series.ts is not None and series.vals is not None:
        return series.ts * 1000.0, series.vals
    pairs = [series.value] if rtype == "vector" else series.pairs or []
    got = [x for x in (_sample(out, k, name, p) for p in pairs) if x is not None]
    return (np.array([g[0] for g in got], dtype="float64"), np.array([g[1] for g in got], dtype="float64"))


def _n_pairs(series: _Compact, rtype: str) -> int:
    if rtype == "vector":
        return 1
    return len(series.ts) if series.ts is not None else len(series.pairs or [])


def _other(out: _Rows, k: int, item: Any, rtype: str) -> None:
    """A result item the decoder did not take for a series: read as before (an object with a
    label object but no pairs; anything else is not a series and counted with other metrics)."""
    metric = item.get("metric") if isinstance(item, dict) else None
    if isinstance(metric, dict):
        _read(out, k, _Compact(metric, item.get("value"), pairs=_as_list(item.get("values"))), rtype)
    else:
        out.other += 1


def _read(out: _Rows, k: int, series: _Compact, rtype: str) -> None:
    metric = series.metric
    name = metric.get("__name__", "")
    fid = F.name_id(name) if isinstance(name, str) else None
    long_label = next((k for k, v in metric.items() if isinstance(v, str) and len(v) > MAX_FIELD_CHARS), None)
    if long_label is not None:  # a label value no GPU series has: refused, not carried into the reports
        out.reject(f"series {k}: label {str(long_label)[:40]!r} is longer than {MAX_FIELD_CHARS:,} characters",
                   _n_pairs(series, rtype))
        return
    if fid is None:
        if isinstance(name, str) and name.startswith("DCGM_FI_"):
            out.reject(f"series {k}: unknown DCGM field {name!r}", _n_pairs(series, rtype))
        else:
            out.other += 1
        return
    labels = _labels(metric)
    if labels["gpu"] is None and labels["uuid"] is None:  # cannot be placed on a GPU (docs/formulas.md#inputs)
        out.reject(f"series {k} ({name}): {NO_GPU}", _n_pairs(series, rtype))
        return
    ts_ms, values = _pairs_arrays(out, k, name, series, rtype)
    if not len(values):
        return
    finite = np.isfinite(values)
    sentinel = F.sentinel_mask(values)
    gone = ~finite | sentinel
    out.missing += int(gone.sum())
    out.sentinels += int((finite & sentinel).sum())
    scale: Any = F.canonical_factor(name)  # the unit of this name (a DCGM 4.6.1 SI field: converted)
    if name in F.UNIT_BY_VALUE:  # the unit is told by the value (dcgm_fields.percent_or_ratio)
        f, ambiguous = F.percent_or_ratio(values)
        ambiguous &= ~gone
        out.missing += int(ambiguous.sum())
        gone |= ambiguous
        scale = f[~gone]
    keep = ~gone
    out.add(np.round(ts_ms[keep]).astype("int64"), values[keep] * scale, fid, name, labels)


def _table(out: _Rows, parts: list[tuple[np.ndarray, np.ndarray, int, str, dict[str, str | None]]]) -> pa.Table:
    if not parts:
        return SAMPLE_SCHEMA.empty_table()
    counts = np.array([len(p[0]) for p in parts])
    ts = np.concatenate([p[0] for p in parts])
    arrays: dict[str, Any] = {
        "timestamp": pa.array(ts.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC")),
        "field_id": pa.array(np.repeat(np.array([p[2] for p in parts], dtype="int32"), counts), pa.int32()),
        "field": _repeat([p[3] for p in parts], counts),
        "value": pa.array(np.concatenate([p[1] for p in parts]), pa.float64()),
    }
    for c in SAMPLE_SCHEMA.names:
        if c not in arrays:
            arrays[c] = _repeat([p[4][c] for p in parts], counts)
    return pa.table({c: arrays[c] for c in SAMPLE_SCHEMA.names}).cast(SAMPLE_SCHEMA)


def _repeat(values: list[str | None], counts: np.ndarray) -> pa.Array:
    """One string column: ``values[i]`` repeated ``counts[i]`` times (built as a dictionary)."""
    index: dict[str | None, int] = {}
    codes = np.array([index.setdefault(v, len(index)) for v in values], dtype="int32")
    dictionary = pa.array(list(index), pa.string())
    return pa.DictionaryArray.from_arrays(pa.array(np.repeat(codes, counts), pa.int32()), dictionary).cast(pa.string())


def parse_batches(src: Source, opts: ParseOptions) -> Generator[pa.Table, None, ParseResult]:
    """The samples in answer order, ``SAMPLE_SCHEMA``, about :data:`BATCH_ROWS` rows per batch;
    returns the :class:`ParseResult` with empty ``samples`` (memory: the text, ~16 bytes per
    sample, one batch)."""
    del opts
    doc, series = _load(src)
    rtype = _result_type(doc, src.path)
    out = _Rows(src.path)
    result = doc["data"].get("result") or []
    for k, item in enumerate(result if isinstance(result, list) else []):
        if isinstance(item, _SeriesRef):
            _read(out, k, series[item.k], rtype)
            series[item.k] = _EMPTY  # its arrays are in out.parts now
        else:
            _other(out, k, item, rtype)
        if sum(len(p[0]) for p in out.parts) >= BATCH_ROWS:
            yield _table(out, out.parts)
            out.parts = []
    if out.parts:
        yield _table(out, out.parts)
    acc = InputAccounting(src.path, FORMAT, records=out.rows, missing=out.missing, rejected=len(out.rejected))
    meta: dict[str, Any] = {"result_type": rtype, "other_series": out.other, "sentinels": out.sentinels}
    if out.rescaled:  # sample times in ms/us/ns, not the API's seconds: rescaled, said here
        meta["timestamps_rescaled_from"] = dict(sorted(out.rescaled.items()))
    return ParseResult(accounting=acc, rejected=out.rejected, meta=meta)


_EMPTY = _Compact({}, None, pairs=[])


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole answer at once: :func:`parse_batches` drained and joined."""
    return drain_batches(parse_batches(src, opts))
