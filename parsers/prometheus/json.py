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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.formats import MAX_FIELD_CHARS
from rooftop.parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult, Rejected
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import EPOCH_SCALES, EPOCH_YEARS, epoch_scale

FORMAT = "prometheus-json"
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


def _load(src: Source) -> dict[str, Any]:
    text = src.text()
    i = text.find("{")
    while i >= 0:
        try:
            doc, _ = json.JSONDecoder().raw_decode(text, i)
        except ValueError:
            i = text.find("\n{", i + 1)
            i = i + 1 if i >= 0 else -1
            continue
        if isinstance(doc, dict) and isinstance(doc.get("data"), dict):
            return doc
        i = text.find("{", i + 1)
    raise InputError(src.path, "no Prometheus query result ({\"status\", \"data\": {...}}) found",
                     "save the body of /api/v1/query or /api/v1/query_range")


@dataclass
class _Rows:
    """What the series of one answer give: sample columns, rejections and counts."""

    path: str
    rows: dict[str, list[Any]] = field(default_factory=lambda: {c: [] for c in SAMPLE_SCHEMA.names})
    rejected: list[Rejected] = field(default_factory=list)
    missing: int = 0
    other: int = 0
    sentinels: int = 0
    rescaled: dict[str, int] = field(default_factory=dict)  # sample times not in s, by scale

    def reject(self, why: str, n: int = 1) -> None:
        self.rejected += [Rejected(self.path, None, why)] * n


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
        "uuid": _first(metric, ("UUID", "uuid", "gpu_uuid")), "model": _first(metric, ("modelName", "model_name")),
        "mig": _first(metric, ("GPU_I_ID",)), "mig_profile": _first(metric, ("GPU_I_PROFILE",)),
        **_workload(metric), "job": _first(metric, ("hpc_job",)),
    }


def _sample(out: _Rows, k: int, name: str, pair: Any) -> tuple[float, float] | None:
    """(time in ms, value) of one ``[time, "value"]`` pair, or None when rejected."""
    try:
        ts = float(pair[0])
        value = float(pair[1])
    except (TypeError, ValueError, IndexError):
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


def _series(out: _Rows, k: int, series: Any, rtype: str) -> None:
    """The samples of one series (or its rejections, or a count of other metrics)."""
    metric = series.get("metric") or {} if isinstance(series, dict) else {}
    name = metric.get("__name__", "")
    fid = F.BY_NAME.get(name)
    pairs = [series.get("value")] if rtype == "vector" else list(series.get("values") or [])
    long_label = next((k for k, v in metric.items() if isinstance(v, str) and len(v) > MAX_FIELD_CHARS), None)
    if long_label is not None:  # a label value no GPU series has: refused, not carried into the reports
        out.reject(f"series {k}: label {str(long_label)[:40]!r} is longer than {MAX_FIELD_CHARS:,} characters",
                   len(pairs))
        return
    if fid is None:
        if isinstance(name, str) and name.startswith("DCGM_FI_"):
            out.reject(f"series {k}: unknown DCGM field {name!r}", len(pairs))
        else:
            out.other += 1
        return
    labels = _labels(metric)
    factor = F.canonical_factor(name)  # the unit of this name (a DCGM 4.6.1 SI field: converted)
    rows = out.rows
    for pair in pairs:
        got = _sample(out, k, name, pair)
        if got is None:
            continue
        ts_ms, value = got
        if not math.isfinite(value) or F.sentinel_mask(np.array([value]))[0]:
            out.missing += 1
            out.sentinels += int(math.isfinite(value))
            continue
        scale = factor
        if name in F.UNIT_BY_VALUE:  # the unit is told by the value (dcgm_fields.percent_or_ratio)
            f, ambiguous = F.percent_or_ratio(np.array([value]))
            if ambiguous[0]:
                out.missing += 1
                continue
            scale = float(f[0])
        rows["timestamp"].append(round(ts_ms))
        rows["field_id"].append(fid)
        rows["field"].append(name)
        rows["value"].append(value * scale)
        for c, v in labels.items():
            rows[c].append(v)


def _table(rows: dict[str, list[Any]]) -> pa.Table:
    arrays = {c: pa.array(rows[c], type=SAMPLE_SCHEMA.field(c).type) if c != "timestamp" else
              pa.array(np.asarray(rows[c], dtype="int64").astype("datetime64[ms]"), pa.timestamp("ms"))
              .cast(pa.timestamp("ms", tz="UTC")) for c in SAMPLE_SCHEMA.names}
    return pa.table(arrays).cast(SAMPLE_SCHEMA)


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    doc = _load(src)
    rtype = _result_type(doc, src.path)
    out = _Rows(src.path)
    for k, series in enumerate(doc["data"].get("result") or []):
        _series(out, k, series, rtype)
    acc = InputAccounting(src.path, FORMAT, records=len(out.rows["value"]), missing=out.missing,
                          rejected=len(out.rejected))
    meta: dict[str, Any] = {"result_type": rtype, "other_series": out.other, "sentinels": out.sentinels}
    if out.rescaled:  # sample times in ms/us/ns, not the API's seconds: rescaled, said here
        meta["timestamps_rescaled_from"] = dict(sorted(out.rescaled.items()))
    return ParseResult(accounting=acc, samples=_table(out.rows), rejected=out.rejected, meta=meta)
