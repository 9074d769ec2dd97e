"""Prometheus exposition text from dcgm-exporter (``curl :9400/metrics``), one or many scrapes.

Vectorized: the file is read in chunks of whole lines (bounded memory). In each chunk the byte
scanner (:mod:`parsers.prometheus.scan`) finds the plain sample lines by byte positions; the rest go through
the line grammar (:mod:`parsers.prometheus.grammar`, Arrow compute and regexes); each distinct
``name{labels}`` head is parsed once per file (:mod:`parsers.prometheus.heads`); rows, rejections and
scrape numbers come from :mod:`parsers.prometheus.records`, time checks from :mod:`parsers.prometheus.times`.
Python only loops over *distinct* names/series, never over lines.

Line kinds:

* ``# HELP`` / ``# TYPE`` / other comments, blank lines, shell prompts, kubectl/curl noise,
  Markdown prose and fences: not samples, skipped.
* ``DCGM_FI_<NAME>{labels} value [timestamp_ms]`` (optionally behind a Markdown ``> `` quote):
  a sample. Missing when the value is ``NaN``/``±Inf`` or a DCGM blank sentinel
  (:func:`parsers.dcgm.fields.sentinel_mask`); rejected (with line and reason) when a line that
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
scaled by :data:`parsers.dcgm.fields.TO_CANONICAL`.

Timestamps: an explicit trailing millisecond timestamp (``promtool tsdb dump`` style) wins. One that
is an epoch time between 1990 and 2200 only in seconds, microseconds or nanoseconds is rescaled
(``meta["timestamps_rescaled_from"]`` counts them); one that is such a time in no scale is rejected
(docs/formulas.md#fleet-ingest, "Time scales").
Otherwise scrapes are told apart by repetition: scrape index of a line = running maximum of "how
many times this series appeared before" (a repeated series starts a new scrape; a series is the
field plus host/gpu/UUID/GPU-instance values, so label drift between scrapes does not hide it),
and scrape *k* is stamped ``start + k * interval``. ``interval`` is dcgm-exporter's default
collect interval, 30 s, unless ``ParseOptions.interval_s`` is given; ``start`` is ``ParseOptions.start`` or the file's mtime minus ``n_scrapes * interval``.
``meta["interval_assumed"]`` says when the 30 s default was used.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    InputAccounting,
    ParseResult,
    Rejected,
    drain_batches,
)
from rooftop.parsers.prometheus.records import State, parse_chunk
from rooftop.parsers.prometheus.times import stamp
from rooftop.parsers.source import ParseOptions, Source

FORMAT = "prometheus-text"
CHUNK_BYTES = 8 << 20
BATCH_ROWS = 1 << 17  # rows per yielded batch (chunks joined up to this; ~20 MB as SAMPLE_SCHEMA)
DEFAULT_SCRAPE_INTERVAL_S = 30.0


def _chunks(src: Source) -> Iterator[pa.Array | bytes | memoryview]:
    """The text of each whole-line chunk of the file.

    UTF-8 files give the raw bytes of each chunk (no trailing newline; split by
    :func:`parsers.prometheus.scan.scan_chunk`), other encodings one array of lines.
    """
    if src.encoding != "utf-8":
        text = src.text()
        yield pc.split_pattern(pa.array([text]), "\n").flatten()
        return
    yield from src.line_blocks(CHUNK_BYTES)  # memoryviews: the fast path reads the bytes in place


def assemble(parts: pa.Table, start_ms: int, interval_ms: int) -> pa.Table:
    """Stamp times and order columns as ``SAMPLE_SCHEMA`` (rows already filtered to records)."""
    scrape = np.asarray(parts["scrape"].to_numpy(), dtype="int64")
    cols = {
        "timestamp": stamp(parts["ts_ms"].combine_chunks(), scrape, start_ms, interval_ms),
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


class _Held:
    """Record parts waiting for the scrape count (their times depend on it): in a list, or spilled
    to a temporary Arrow IPC stream (lz4) so that holding them costs disk, not memory."""

    def __init__(self, spill: bool) -> None:
        self.spill = spill
        self.rows = 0
        self._tables: list[pa.Table] = []
        self._dir: tempfile.TemporaryDirectory[str] | None = None
        self._writer: pa.ipc.RecordBatchStreamWriter | None = None
        self._schema: pa.Schema | None = None

    def add(self, part: pa.Table) -> None:
        self.rows += part.num_rows
        if not self.spill:
            self._tables.append(part)
            return
        if self._writer is None:
            self._dir = tempfile.TemporaryDirectory(prefix="rooftop-prom-")
            self._schema = part.schema
            self._writer = pa.ipc.new_stream(os.path.join(self._dir.name, "held.arrows"), part.schema,
                                             options=pa.ipc.IpcWriteOptions(compression="lz4"))
        assert self._schema is not None
        self._writer.write_table(part if part.schema.equals(self._schema) else part.cast(self._schema))

    def drain(self) -> Iterator[pa.Table]:
        if not self.spill:
            tables, self._tables = self._tables, []
            tables.reverse()
            while tables:  # each part released once handed out
                yield tables.pop()
            return
        if self._writer is None or self._dir is None:
            return
        self._writer.close()
        with pa.ipc.open_stream(os.path.join(self._dir.name, "held.arrows")) as reader:
            for batch in reader:
                yield pa.Table.from_batches([batch])

    def close(self) -> None:
        if self._writer is not None:
            with contextlib.suppress(Exception):
                self._writer.close()
        if self._dir is not None:
            self._dir.cleanup()
        self._tables.clear()


def _coalesce(parts: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """Consecutive parts joined until they hold at least ``rows`` rows (the last may hold fewer)."""
    buf: list[pa.Table] = []
    n = 0
    for t in parts:
        buf.append(t)
        n += t.num_rows
        if n >= rows:
            yield pa.concat_tables(buf, promote_options="permissive")
            buf, n = [], 0
    if buf:
        yield pa.concat_tables(buf, promote_options="permissive")


@dataclass
class _Tally:
    """Record accounting of a file: records + missing (+ rejected, kept apart) = sample lines."""

    records: int = 0
    missing: int = 0
    explicit_all: bool = True  # every row so far had an explicit timestamp
    any_parts: bool = False


def _record_parts(src: Source, state: State, rejected: list[Rejected], tally: _Tally
                  ) -> Iterator[tuple[pa.Table, bool]]:
    """Each chunk's record rows (missing ones counted and left out) and whether all of the chunk's
    rows had explicit timestamps; chunks without records are skipped."""
    offset = 0
    for data in _chunks(src):
        # a block of line_blocks shorter than a full read less a long line is the file's last
        final = not isinstance(data, (bytes, memoryview)) or len(data) < CHUNK_BYTES - (1 << 20)
        t, n_lines = parse_chunk(data, offset, state, src.path, rejected, final)
        offset += n_lines
        if t is None or not t.num_rows:
            continue
        tally.any_parts = True
        miss = np.asarray(t["missing"].to_numpy(), dtype=bool)
        n_miss = int(miss.sum())
        tally.missing += n_miss
        tally.records += len(miss) - n_miss
        explicit = t["ts_ms"].null_count == 0
        tally.explicit_all &= explicit
        rec = t.filter(pa.array(~miss)) if n_miss else t
        if rec.num_rows:
            yield rec, explicit


def _meta(state: State, tally: _Tally, n_scrapes: int, interval_s: float, assumed: bool, start_ms: int,
          start_given: bool = False) -> dict[str, Any]:
    meta: dict[str, Any] = {
        "other_metric_lines": state.other,
        "scrapes": n_scrapes,
        "interval_s": interval_s,
        "interval_assumed": assumed,
        "sentinels": state.sentinels,
        "label_sentinels": state.label_sentinels,
        "unit_ambiguous": state.unit_ambiguous,
        "label_names": sorted(state.heads.seen),
    }
    if state.rescaled:  # explicit timestamps in s/us/ns, not the format's ms: rescaled, said here
        meta["timestamps_rescaled_from"] = dict(sorted(state.rescaled.items()))
    if tally.any_parts:
        meta["explicit_timestamps"] = bool(tally.explicit_all)
        if tally.explicit_all:
            meta["interval_assumed"] = False
        else:  # the time of scrape 0 (what a later ingest of the grown file reuses)
            meta["start"] = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()
            meta["start_from"] = "--start" if start_given else "file mtime"
    return meta


def parse_batches(src: Source, opts: ParseOptions, *, spill: bool = True
                  ) -> Generator[pa.Table, None, ParseResult]:
    """Yield the samples in file order, ``SAMPLE_SCHEMA``, about :data:`BATCH_ROWS` rows per batch
    (several chunks joined); return the whole file's :class:`ParseResult` with empty ``samples``.

    Samples with explicit timestamps, or any when ``opts.start`` is given, go out as their chunks
    are parsed. Scrape-stamped samples without ``opts.start`` need the file's scrape count (the
    start is the mtime minus ``n_scrapes * interval``): from the first such chunk on, record parts
    are held (``spill``: in a temporary lz4 Arrow stream; else in memory) and stamped at the end.
    """
    state, tally = State(), _Tally()
    rejected: list[Rejected] = []
    assumed = opts.interval_s is None
    interval_s = DEFAULT_SCRAPE_INTERVAL_S if assumed else opts.interval_or_default()
    interval_ms = round(interval_s * 1000)
    given = default_start_ms(src, opts, 0, interval_s) if opts.start is not None else None
    held = _Held(spill)
    ready: list[pa.Table] = []  # record parts whose times are known, not yet handed out
    ready_rows = 0
    try:
        for rec, explicit in _record_parts(src, state, rejected, tally):
            if held.rows or not (explicit or given is not None):
                held.add(rec)
                continue
            ready.append(rec)
            ready_rows += rec.num_rows
            if ready_rows >= BATCH_ROWS:
                yield assemble(pa.concat_tables(ready, promote_options="permissive"), given or 0, interval_ms)
                ready, ready_rows = [], 0
        if ready:
            yield assemble(pa.concat_tables(ready, promote_options="permissive"), given or 0, interval_ms)
        n_scrapes = state.max_scrape + 1
        start_ms = given if given is not None else default_start_ms(src, opts, n_scrapes, interval_s)
        for part in _coalesce(held.drain(), BATCH_ROWS):
            yield assemble(part, start_ms, interval_ms)
    finally:
        held.close()
    acc = InputAccounting(src.path, FORMAT, records=tally.records, missing=tally.missing, rejected=len(rejected))
    return ParseResult(accounting=acc, rejected=rejected,
                       meta=_meta(state, tally, n_scrapes, interval_s, assumed, start_ms, opts.start is not None))


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file at once: :func:`parse_batches` drained (held parts in memory) and joined."""
    return drain_batches(parse_batches(src, opts, spill=False))
