"""Prometheus exposition text from dcgm-exporter (``curl :9400/metrics``), one or many scrapes.

Vectorized: the file is read in chunks of whole lines (bounded memory); each chunk becomes an
Arrow string array and metric name, label block, value and timestamp come out of one
``pyarrow.compute.extract_regex`` pass; each label we need is one more regex over the label-block
column. Python only loops over *distinct* names/series, never over lines.

Line kinds:

* ``# HELP`` / ``# TYPE`` / other comments, blank lines, shell prompts, kubectl/curl noise,
  Markdown prose and fences: not samples, skipped.
* ``DCGM_FI_<NAME>{labels} value [timestamp_ms]`` (optionally behind a Markdown ``> `` quote):
  a sample. Missing when the value is ``NaN``/``±Inf`` or a DCGM blank sentinel
  (:func:`parsers.dcgm_fields.sentinel_mask`); rejected (with line and reason) when a line that
  starts like a DCGM metric does not parse, names a field rooftop does not know, or has a
  non-numeric value.
* Any other well-formed metric line (``go_*``, ``process_*``, ``DCGM_EXP_*``): not a DCGM field;
  skipped and counted in ``meta["other_metric_lines"]``.

Labels (drift handled): host ``Hostname``|``hostname``; uuid ``UUID``|``uuid``|``gpu_uuid``;
model ``modelName``|``model_name``; MIG ``GPU_I_ID``/``GPU_I_PROFILE``; workload
``exported_namespace``/``exported_pod``/``exported_container`` preferred over
``namespace``/``pod``/``container`` (Prometheus renames the exporter's labels that way when they
clash with target labels); job ``hpc_job``. Empty and ``<<<NULL>>>``-style values are null.
Values are taken as printed (ratios 0..1 even where HELP says "%"), except the NVML percentages
scaled by :data:`parsers.dcgm_fields.TO_CANONICAL`.

Timestamps: an explicit trailing millisecond timestamp (``promtool tsdb dump`` style) wins.
Otherwise scrapes are told apart by repetition: scrape index of a line = running maximum of "how
many times this series appeared before" (a repeated series starts a new scrape; a series is the
field plus host/gpu/UUID/GPU-instance values, so label drift between scrapes does not hide it),
and scrape *k* is stamped ``start + k * interval``. ``interval`` is dcgm-exporter's default
collect interval, 30 s, unless ``ParseOptions.interval_s`` is set to something other than its
default; ``start`` is ``ParseOptions.start`` or the file's mtime minus ``n_scrapes * interval``.
``meta["interval_assumed"]`` says when the 30 s default was used.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from parsers import dcgm_fields as F
from parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult, Rejected
from parsers.source import ParseOptions, Source

FORMAT = "prometheus-text"
CHUNK_BYTES = 8 << 20
DEFAULT_SCRAPE_INTERVAL_S = 30.0

_LINE = (
    r"^[ \t]*(?:>[ \t]*)?(?P<name>DCGM_FI_[A-Za-z0-9_]+)(?:\{(?P<labels>.*)\})?[ \t]+"
    r"(?P<value>[^ \t\r]+)(?:[ \t]+(?P<ts>-?[0-9]+))?[ \t\r]*$"
)
_CANDIDATE = r"^[ \t]*(?:>[ \t]*)?\**DCGM_FI_[A-Za-z0-9_]+(?:[{ \t\r]|$)"
_OTHER = (
    r"^[ \t]*[A-Za-z_:][A-Za-z0-9_:]*(?:\{.*\})?[ \t]+"
    r"[-+]?(?:[0-9.]+(?:[eE][-+]?[0-9]+)?|NaN|Inf)(?:[ \t]+-?[0-9]+)?[ \t\r]*$"
)
_NUMBER = r"^[-+]?(?:[0-9]+\.?[0-9]*(?:[eE][-+]?[0-9]+)?|\.[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|nan|[Ii]nf|[Ii]nfinity)$"

# output column -> label names, first present wins
LABELS: dict[str, tuple[str, ...]] = {
    "host": ("Hostname", "hostname"),
    "gpu": ("gpu",),
    "uuid": ("UUID", "uuid", "gpu_uuid"),
    "model": ("modelName", "model_name"),
    "mig": ("GPU_I_ID",),
    "mig_profile": ("GPU_I_PROFILE",),
    "namespace": ("exported_namespace", "namespace"),
    "pod": ("exported_pod", "pod"),
    "container": ("exported_container", "container"),
    "job": ("hpc_job",),
}


def _label_regex(name: str) -> str:
    return r'(?:^|[,{ \t*])' + name + r'="(?P<v>(?:[^"\\]|\\.)*)"'


@dataclass
class _State:
    counts: dict[str, int] = field(default_factory=dict)
    max_scrape: int = -1
    other: int = 0
    sentinels: int = 0
    label_sentinels: int = 0
    label_names: set[str] = field(default_factory=set)


def _chunks(src: Source) -> Iterator[tuple[int, pa.Array]]:
    """(number of lines before this chunk, lines) over whole-line chunks of the file."""
    if src.encoding != "utf-8":
        text = src.text()
        yield 0, pc.split_pattern(pa.array([text]), "\n").flatten()
        return
    done = 0
    with open(src.path, "rb") as fh:
        fh.seek(src.bom_len)
        rest = b""
        while True:
            data = fh.read(CHUNK_BYTES)
            if not data:
                if rest:
                    yield done, pa.array([rest.decode("utf-8", "replace")])
                return
            buf = rest + data
            cut = buf.rfind(b"\n")
            if cut < 0:
                rest = buf
                continue
            rest = buf[cut + 1 :]
            lines = pc.split_pattern(pa.array([buf[:cut].decode("utf-8", "replace")]), "\n").flatten()
            yield done, lines
            done += len(lines)


def _label(labels: pa.Array, names: tuple[str, ...], state: _State) -> pa.Array:
    out: pa.Array | None = None
    for name in names:
        got = pc.struct_field(pc.extract_regex(labels, _label_regex(name)), "v")
        if pc.any(pc.is_valid(got)).as_py():
            state.label_names.add(name)
        out = got if out is None else pc.coalesce(out, got)
    assert out is not None
    if pc.any(pc.match_substring(out, "\\")).as_py():
        out = pc.replace_substring_regex(out, r"\\(.)", r"\1")
    sent = pc.and_(pc.starts_with(out, "<<<"), pc.ends_with(out, ">>>"))
    state.label_sentinels += int(pc.sum(pc.cast(pc.fill_null(sent, False), pa.int64())).as_py() or 0)
    empty = pc.or_(pc.equal(out, ""), sent)
    return pc.if_else(pc.fill_null(empty, False), pa.scalar(None, pa.string()), out)


def _parse_chunk(lines: pa.Array, offset: int, state: _State, path: str,
                 rejected: list[Rejected]) -> pa.Table | None:
    line_no = np.arange(offset + 1, offset + 1 + len(lines), dtype="int64")
    cand = pc.fill_null(pc.match_substring_regex(lines, _CANDIDATE), False)
    other = pc.and_(pc.invert(cand), pc.fill_null(pc.match_substring_regex(lines, _OTHER), False))
    state.other += int(pc.sum(pc.cast(other, pa.int64())).as_py() or 0)
    if not pc.any(cand).as_py():
        return None
    c_lines = pc.filter(lines, cand)
    c_no = line_no[np.asarray(cand)]
    parts = pc.extract_regex(c_lines, _LINE)
    ok = np.asarray(pc.is_valid(parts))
    for n in c_no[~ok]:
        rejected.append(Rejected(path, int(n), "DCGM metric line does not parse as 'name{labels} value [ts]'"))
    if not ok.any():
        return None
    parts = parts.filter(pa.array(ok))
    nos = c_no[ok]
    name = pc.struct_field(parts, "name")
    labels = pc.struct_field(parts, "labels")
    value_s = pc.struct_field(parts, "value")
    ts_s = pc.struct_field(parts, "ts")

    # field IDs through the (few) distinct names
    dname = pc.dictionary_encode(name)
    ids_of = np.array([F.BY_NAME.get(n, -1) for n in dname.dictionary.to_pylist()], dtype="int32")
    fid = ids_of[np.asarray(dname.indices)] if len(ids_of) else np.empty(0, "int32")
    unknown = fid < 0
    numeric = np.asarray(pc.fill_null(pc.match_substring_regex(value_s, _NUMBER), False))
    bad = unknown | ~numeric
    if bad.any():
        names_l = np.asarray(name.to_numpy(zero_copy_only=False), dtype=object)
        vals_l = np.asarray(value_s.to_numpy(zero_copy_only=False), dtype=object)
        for i in np.flatnonzero(bad):
            why = (f"unknown DCGM field {names_l[i]!r}" if unknown[i]
                   else f"value {str(vals_l[i])[:40]!r} is not a number")
            rejected.append(Rejected(path, int(nos[i]), why))
    keep = pa.array(~bad)

    lab = pc.filter(labels, keep)
    lcols = {col: _label(lab, names, state) for col, names in LABELS.items()}
    # scrape index from series repetition (only over lines that are samples). A series is its field
    # and GPU identity, so label drift between scrapes (Hostname -> hostname, pod churn) still repeats.
    ident = [pc.fill_null(lcols[c], "") for c in ("host", "gpu", "uuid", "mig")]
    key = pc.binary_join_element_wise(pc.cast(pa.array(fid[~bad]), pa.string()), *ident, "\x00")
    dkey = pc.dictionary_encode(key)
    kidx = np.asarray(dkey.indices, dtype="int64")
    prior = np.array([state.counts.get(k, 0) for k in dkey.dictionary.to_pylist()], dtype="int64")
    cum = pd.Series(kidx).groupby(kidx).cumcount().to_numpy()
    occ = (prior[kidx] if len(prior) else np.zeros(0, "int64")) + cum
    scrape = np.maximum.accumulate(np.maximum(occ, state.max_scrape)) if len(occ) else occ
    if len(occ):
        state.max_scrape = int(scrape[-1])
        per_key = np.bincount(kidx, minlength=len(prior))
        for k, c in zip(dkey.dictionary.to_pylist(), per_key.tolist(), strict=True):
            state.counts[k] = state.counts.get(k, 0) + int(c)

    fid_k = fid[~bad]
    value = pc.cast(pc.replace_substring_regex(pc.filter(value_s, keep), r"^\+", ""), pa.float64())
    v = np.asarray(value.to_numpy(zero_copy_only=False), dtype="float64")
    factor = np.ones(len(v))
    for f_id, fac in F.TO_CANONICAL.items():
        factor[fid_k == f_id] = fac
    sentinel = F.sentinel_mask(v)
    state.sentinels += int(sentinel.sum())
    missing = sentinel | ~np.isfinite(v)
    ts_f = pc.filter(ts_s, keep)
    ts = pc.cast(pc.if_else(pc.equal(ts_f, ""), pa.scalar(None, pa.string()), ts_f), pa.int64())
    cols: dict[str, pa.Array] = {
        "ts_ms": ts,
        "scrape": pa.array(scrape, pa.int64()),
        "field_id": pa.array(fid_k, pa.int32()),
        "field": pc.filter(name, keep),
        "value": pa.array(v * factor, pa.float64()),
        "missing": pa.array(missing),
    }
    cols.update(lcols)
    return pa.table(cols)


def _stamp(ts_ms: pa.Array, scrape: np.ndarray, start_ms: int, interval_ms: int) -> pa.Array:
    explicit = np.asarray(pc.fill_null(ts_ms, 0).to_numpy(zero_copy_only=False), dtype="int64")
    has = np.asarray(pc.is_valid(ts_ms))
    out = np.where(has, explicit, start_ms + scrape * interval_ms)
    return pa.array(out.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC"))


def assemble(parts: pa.Table, start_ms: int, interval_ms: int) -> pa.Table:
    """Stamp times and order columns as ``SAMPLE_SCHEMA`` (rows already filtered to records)."""
    scrape = np.asarray(parts["scrape"].to_numpy(), dtype="int64")
    cols = {
        "timestamp": _stamp(parts["ts_ms"].combine_chunks(), scrape, start_ms, interval_ms),
        **{c: parts[c] for c in SAMPLE_SCHEMA.names if c != "timestamp"},
    }
    return pa.table(cols).cast(SAMPLE_SCHEMA)


def default_start_ms(src: Source, opts: ParseOptions, n_steps: int, interval_s: float) -> int:
    """``opts.start`` or the file's mtime minus ``n_steps * interval``, in epoch milliseconds."""
    if opts.start is not None:
        st = opts.start if opts.start.tzinfo else opts.start.replace(tzinfo=timezone.utc)
        return round(st.timestamp() * 1000)
    mtime = os.stat(src.path).st_mtime
    return round((mtime - n_steps * interval_s) * 1000)


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    state = _State()
    rejected: list[Rejected] = []
    tables = []
    for offset, lines in _chunks(src):
        t = _parse_chunk(lines, offset, state, src.path, rejected)
        if t is not None and t.num_rows:
            tables.append(t)
    acc = InputAccounting(src.path, FORMAT, rejected=len(rejected))
    default_interval = ParseOptions.__dataclass_fields__["interval_s"].default
    assumed = opts.interval_s == default_interval
    interval_s = DEFAULT_SCRAPE_INTERVAL_S if assumed else float(opts.interval_s)
    n_scrapes = state.max_scrape + 1
    meta = {
        "other_metric_lines": state.other,
        "scrapes": n_scrapes,
        "interval_s": interval_s,
        "interval_assumed": assumed,
        "sentinels": state.sentinels,
        "label_sentinels": state.label_sentinels,
        "label_names": sorted(state.label_names),
    }
    if not tables:
        return ParseResult(accounting=acc, rejected=rejected, meta=meta)
    parts = pa.concat_tables(tables, promote_options="permissive")
    miss = np.asarray(parts["missing"].to_numpy(), dtype=bool)
    acc.missing = int(miss.sum())
    acc.records = int((~miss).sum())
    has_ts = pc.all(pc.is_valid(parts["ts_ms"])).as_py()
    meta["explicit_timestamps"] = bool(has_ts)
    if has_ts:
        meta["interval_assumed"] = False
    start_ms = default_start_ms(src, opts, n_scrapes, interval_s)
    samples = assemble(parts.filter(pa.array(~miss)), start_ms, round(interval_s * 1000))
    return ParseResult(accounting=acc, samples=samples, rejected=rejected, meta=meta)
