"""nvidia-smi streams: ``--query-gpu ... --format=csv`` and ``nvidia-smi dmon``.

Columns map to DCGM field IDs (:data:`parsers.dcgm_fields.SMI_QUERY`, :data:`SMI_DMON`); NVML
utilisation percentages become ratios 0..1 (fields 203/204/206/207), so ``sm``/``mem`` of
``nvidia-smi dmon`` land in GPU_UTIL/MEM_COPY_UTIL -- they are NVML's coarse "kernel resident"
numbers, not DCGM SM_ACTIVE. A sample is one mapped value cell; unmapped columns (``name``,
``pci.bus_id``...) are identity or ignored (``meta["unmapped_columns"]``).

CSV: header with or without ``[unit]`` suffixes, repeated headers (one nvidia-smi call per line
appended to a file), unit suffixes in values (``22 %``), ``[N/A]``/``[Not Supported]`` missing.
The GPU column is ``index``; a custom logger's extra ``gpu`` column wins when ``index`` does not
tell the rows of one timestamp apart. ``timestamp`` (``2023/06/22 18:56:56.252``, local time
without zone: taken as UTC, ``meta["naive_timestamps"]``; ISO with offset: converted).
Without a timestamp column rows are ticked like dmon.

dmon: ``# gpu pwr gtemp ...`` header, ``# Idx W C ...`` units row, ``-`` missing, optional
``-o DT`` date/time columns; rows split on whitespace. PCIe throughput above
:data:`PCIE_MAX_MBS` MB/s (beyond any PCIe 5.0 x16 link) is rejected as a glitch.
Ticks and timestamps as for ``dcgmi dmon`` (``ParseOptions.interval_s``, ``start``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.parsers import dcgm_fields as F
from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
    drain_batches,
)
from rooftop.parsers.prom_text import default_start_ms
from rooftop.parsers.source import ParseOptions, Source

PCIE_MAX_MBS = 70_000.0
_HEADER_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(\s*\[[^\]]*\])?$")
_UNIT_SUFFIX = r"\s*(%|MiB|GiB|KiB|W|MHz|C)$"
_MISSING = frozenset({"[n/a]", "n/a", "[not supported]", "not supported", "-", "", "[unknown error]",
                      "[insufficient permissions]", "[gpu is lost]"})


SEGMENT_LINES = 131_072  # lines per segment: the samples of one segment are one batch


@dataclass
class _Part:
    """The samples of one segment, row-major; times of ticked rows relative until the start is known."""

    ts_ms: np.ndarray  # int64: epoch ms where ``absolute``, else tick offset from the start
    absolute: np.ndarray | None  # bool per sample, None = all ticked
    gpu: np.ndarray
    uuid: np.ndarray | None
    model: np.ndarray | None
    fid: np.ndarray
    field: np.ndarray
    value: np.ndarray

    def table(self, start_ms: int, host: str | None) -> pa.Table:
        ts = self.ts_ms if self.absolute is None else self.ts_ms.copy()
        if self.absolute is None:
            ts = ts + start_ms
        elif not self.absolute.all():
            ts[~self.absolute] += start_ms
        return _table(ts, self.gpu, self.uuid, self.model, self.fid, self.field, self.value, host)


def _table(ts_ms: np.ndarray, gpu: np.ndarray, uuid: np.ndarray | None, model: np.ndarray | None,
           fid: np.ndarray, field: np.ndarray, value: np.ndarray, host: str | None) -> pa.Table:
    n = len(value)
    none = pa.nulls(n, pa.string())
    return pa.table({
        "timestamp": pa.array(ts_ms.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC")),
        "host": pa.array([host] * n, pa.string()),
        "gpu": pa.array(gpu, pa.string()),
        "uuid": none if uuid is None else pa.array(uuid, pa.string()),
        "model": none if model is None else pa.array(model, pa.string()), "mig": none, "mig_profile": none,
        "field_id": pa.array(fid, pa.int32()), "field": pa.array(field, pa.string()),
        "value": pa.array(value, pa.float64()),
        "namespace": none, "pod": none, "container": none, "job": none,
    }).cast(SAMPLE_SCHEMA)


class _Ticker:
    """Tick numbers of rows: a new tick when an entity repeats or a header re-starts; resumable."""

    def __init__(self) -> None:
        self.tick = -1
        self.seen: set[str] = set()

    @property
    def count(self) -> int:
        return self.tick + 1

    def run(self, entities: list[str], header_break: list[bool] | None = None) -> np.ndarray:
        out = np.empty(len(entities), dtype="int64")
        tick, seen = self.tick, self.seen
        for i, e in enumerate(entities):
            if (header_break is not None and header_break[i]) or e in seen:
                seen = set()
            if not seen:
                tick += 1
            seen.add(e)
            out[i] = tick
        self.tick, self.seen = tick, seen
        return out


def _values(cells: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, missing, bad) for printed nvidia-smi values."""
    s = cells.astype("string").str.strip()
    missing = s.str.lower().isin(_MISSING).fillna(True).to_numpy(dtype=bool)
    s = s.str.replace(_UNIT_SUFFIX, "", regex=True)
    nums = pd.to_numeric(s.where(~missing), errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(nums) & ~missing
    return nums, missing, bad


def _segments(src: Source, opts: ParseOptions, hold: bool, parts: Iterator[_Part | None],
              stamp: Callable[[], int]) -> Generator[pa.Table, None, None]:
    """Each part as a table (start known: ``stamp()`` before the first), or all held until the end."""
    held: list[_Part] = []
    start_ms: int | None = None
    for part in parts:
        if part is None or not len(part.value):
            continue
        if hold:
            held.append(part)
        else:
            if start_ms is None:
                start_ms = stamp()
            yield part.table(start_ms, opts.host)
    if held:
        final = stamp()
        held.reverse()
        while held:  # each part released once handed out
            yield held.pop().table(final, opts.host)


# --------------------------------------------------------------------------------------------------
# nvidia-smi --query-gpu --format=csv


class _CsvReader:
    """The data rows of a query CSV in segments: (rows, their line numbers, rejected rows)."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.header: list[str] | None = None
        self.headers = 0

    def segments(self, size: int) -> Iterator[tuple[list[list[str]], list[int], list[Rejected]]]:
        src = self.src
        rows: list[list[str]] = []
        lines: list[int] = []
        rejected: list[Rejected] = []
        for n, raw in src.lines():
            line = raw.strip()
            if not line:
                continue
            tokens = [t.strip() for t in line.split(",")]
            if all(_HEADER_TOKEN.match(t) for t in tokens) and len(tokens) > 1:
                new = [re.sub(r"\s*\[[^\]]*\]$", "", t).lower() for t in tokens]
                if self.header is not None and new != self.header:
                    raise InputError(src.path, f"line {n}: the CSV header changes mid-file",
                                     "split the file per nvidia-smi query")
                self.header = new
                self.headers += 1
                continue
            if self.header is None:
                raise InputError(src.path, "no nvidia-smi --query-gpu header line",
                                 "run nvidia-smi with --format=csv (not noheader)", line=n)
            if len(tokens) != len(self.header):
                rejected.append(Rejected(src.path, n, f"{len(tokens)} columns, header has {len(self.header)}"))
            else:
                rows.append(tokens)
                lines.append(n)
            if len(rows) + len(rejected) >= size:
                yield rows, lines, rejected
                rows, lines, rejected = [], [], []
        if rows or rejected:
            yield rows, lines, rejected
        if self.header is None:
            raise InputError(src.path, "no nvidia-smi --query-gpu header line", "run nvidia-smi with --format=csv")


def _first_header(src: Source) -> list[str] | None:
    """The header of a query CSV (its first non-empty line, when that is one)."""
    reader = _CsvReader(src)
    with contextlib.suppress(InputError, StopIteration):
        next(reader.segments(1))
    return reader.header


def _entity_column(src: Source, header: list[str], size: int) -> str | None:
    """The GPU column: ``index``; a custom logger's extra ``gpu`` column when ``index`` repeats within a
    timestamp and ``gpu`` never does, over the whole file (a pass keeping 8 bytes per row hash)."""
    ent_col = "index" if "index" in header else "gpu" if "gpu" in header else None
    if not (ent_col == "index" and "gpu" in header and "timestamp" in header):
        return ent_col
    by_index: list[np.ndarray] = []
    by_gpu: list[np.ndarray] = []
    for rows, _, _ in _CsvReader(src).segments(size):
        df = pd.DataFrame(rows, columns=header, dtype="object")
        by_index.append(pd.util.hash_pandas_object(df[["timestamp", "index"]], index=False).to_numpy())
        by_gpu.append(pd.util.hash_pandas_object(df[["timestamp", "gpu"]], index=False).to_numpy())
    return "gpu" if _repeats(by_index) and not _repeats(by_gpu) else "index"


def _repeats(hashes: list[np.ndarray]) -> bool:
    a = np.concatenate(hashes) if hashes else np.empty(0, "uint64")
    return len(np.unique(a)) < len(a)


def parse_csv_batches(src: Source, opts: ParseOptions, *, hold: bool = False, segment_lines: int | None = None
                      ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, row-major file order: row by row, cells left to right),
    one per segment of ``segment_lines`` (default :data:`SEGMENT_LINES`) data rows; return the whole file's :class:`ParseResult` with
    empty ``samples``. Without a timestamp column rows are ticked; the start is ``opts.start`` or the
    mtime minus the tick count, counted first in a rows-only pass (``hold=True``: segments held instead)."""
    segment_lines = segment_lines or SEGMENT_LINES
    header = _first_header(src)
    ent_col = _entity_column(src, header, segment_lines) if header else None
    timed = header is not None and "timestamp" in header
    interval_ms = round(opts.interval_s * 1000)
    ticker = _Ticker()
    total: int | None = None
    if not timed and not hold and opts.start is None and header is not None:
        count = _Ticker()
        for rows, _, _ in _CsvReader(src).segments(segment_lines):
            if ent_col:
                j = header.index(ent_col)
                count.run([r[j] for r in rows])
            else:
                count.run(["0"] * len(rows))
        total = count.count
    state: dict[str, object] = {}
    reader = _CsvReader(src)
    rejected: list[Rejected] = []
    acc = InputAccounting(src.path, "nvidia-smi-csv")
    nrows = 0

    def parts() -> Iterator[_Part | None]:
        nonlocal nrows
        for rows, lines, rej in reader.segments(segment_lines):
            assert reader.header is not None
            mapped = [c for c in reader.header if c in F.SMI_QUERY]
            rejected.extend(rej)
            acc.rejected += len(rej) * len(mapped)
            nrows += len(rows)
            yield _csv_part(src, opts, reader.header, mapped, rows, lines, ent_col, ticker, interval_ms,
                            acc, rejected, state)

    def stamp() -> int:
        return default_start_ms(src, opts, total if total is not None else ticker.count, opts.interval_s)

    yield from _segments(src, opts, hold, parts(), stamp)
    header = reader.header
    assert header is not None
    meta: dict[str, object] = {"headers": reader.headers, "rows": nrows,
                               "unmapped_columns": [c for c in header if c not in F.SMI_QUERY and c not in
                                                    ("timestamp", "index", "gpu", "uuid", "name")]}
    meta["gpu_column"] = ent_col
    if "naive" in state:
        meta["naive_timestamps"] = state["naive"]
    if not timed:
        start_ms = stamp()
        meta["start"] = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=SAMPLE_SCHEMA.empty_table(), rejected=rejected, meta=meta)


def _csv_part(src: Source, opts: ParseOptions, header: list[str], mapped: list[str], rows: list[list[str]],
              lines: list[int], ent_col: str | None, ticker: _Ticker, interval_ms: int, acc: InputAccounting,
              rejected: list[Rejected], state: dict[str, object]) -> _Part | None:
    if not rows:
        return None
    df = pd.DataFrame(rows, columns=header, dtype="object")
    n = len(df)
    ent = df[ent_col].astype(str).to_numpy(dtype=object) if ent_col else np.full(n, "0", dtype=object)
    timed = "timestamp" in df.columns
    if timed:
        ts = pd.to_datetime(df["timestamp"].str.replace("/", "-", regex=False), errors="coerce", utc=False,
                            format="mixed")
        naive = getattr(ts.dt, "tz", None) is None
        ts = ts.dt.tz_localize("UTC") if naive else ts.dt.tz_convert("UTC")
        state["naive"] = bool(naive) and bool(state.get("naive", True))
        ts_ms = ts.dt.tz_localize(None).astype("datetime64[ms]").to_numpy().astype("int64")
        bad_ts = ts.isna().to_numpy()
    else:
        ts_ms = ticker.run(ent.tolist()) * interval_ms
        bad_ts = np.zeros(n, dtype=bool)
    for i in np.flatnonzero(bad_ts):
        rejected.append(Rejected(src.path, lines[i], f"timestamp {df['timestamp'].iat[i]!r} does not parse"))
    acc.rejected += int(bad_ts.sum()) * len(mapped)
    keep_rows = ~bad_ts
    good = np.zeros((n, len(mapped)), dtype=bool)
    vals = np.zeros((n, len(mapped)), dtype="float64")
    fids = np.zeros(len(mapped), dtype="int32")
    for k, c in enumerate(mapped):
        fid, factor = F.SMI_QUERY[c]
        fids[k] = fid
        nums, missing, bad = _values(df[c])
        missing = missing & keep_rows
        bad = bad & keep_rows
        for i in np.flatnonzero(bad):
            rejected.append(Rejected(src.path, lines[i], f"{c}: {df[c].iat[i][:40]!r} is not a number"))
        good[:, k] = keep_rows & ~missing & ~bad
        vals[:, k] = nums * factor
        acc.records += int(good[:, k].sum())
        acc.missing += int(missing.sum())
        acc.rejected += int(bad.sum())
    r, kk = np.nonzero(good)  # row-major
    return _Part(ts_ms[r], np.ones(len(r), dtype=bool) if timed else None, ent[r],
                 df["uuid"].to_numpy(dtype=object)[r] if "uuid" in df.columns else None,
                 df["name"].to_numpy(dtype=object)[r] if "name" in df.columns else None,
                 fids[kk], np.asarray(mapped, dtype=object)[kk], vals[good])


def parse_csv(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_csv_batches` drained (segments held) and joined."""
    return drain_batches(parse_csv_batches(src, opts, hold=True))


# --------------------------------------------------------------------------------------------------
# nvidia-smi dmon

_Rec = tuple[int, list[str], bool, tuple[str, ...]]


class _DmonReader:
    """The data rows of ``nvidia-smi dmon`` in segments: (line, tokens, after a new header, header)."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.header: list[str] | None = None
        self.rows = 0

    def segments(self, size: int) -> Iterator[tuple[list[_Rec], list[Rejected]]]:
        src = self.src
        rejected: list[Rejected] = []
        recs: list[_Rec] = []
        new_header = False
        header: list[str] | None = None
        for n, raw in src.lines():
            line = raw.strip()
            if line.startswith("#"):
                toks = line.lstrip("#").split()
                low = [t.lower() for t in toks]
                if "gpu" in low and any(t in F.SMI_DMON for t in low):
                    header = self.header = low
                    new_header = True
                continue
            if not line or not line[0].isdigit():
                continue  # prompts, fences, prose
            if header is None:
                rejected.append(Rejected(src.path, n, "nvidia-smi dmon row before any '# gpu ...' header"))
            else:
                tokens = line.split()
                if len(tokens) != len(header):
                    rejected.append(Rejected(src.path, n, f"{len(tokens)} values, header has {len(header)}"))
                else:
                    recs.append((n, tokens, new_header, tuple(header)))
                    new_header = False
            if len(recs) + len(rejected) >= size:
                self.rows += len(recs)
                yield recs, rejected
                recs, rejected = [], []
        self.rows += len(recs)
        if recs or rejected:
            yield recs, rejected
        if header is None:
            raise InputError(src.path, "no nvidia-smi dmon header ('# gpu pwr ...')", "capture the header lines too")


def parse_dmon_batches(src: Source, opts: ParseOptions, *, hold: bool = False, segment_lines: int | None = None
                       ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, row-major file order), one per segment of
    ``segment_lines`` rows; return the whole file's :class:`ParseResult` with empty ``samples``.
    Ticks as :func:`parsers.dcgm_dmon.parse_batches`: the start is ``opts.start`` or the mtime minus
    the tick count, counted first in a rows-only pass (``hold=True``: segments held instead)."""
    segment_lines = segment_lines or SEGMENT_LINES
    total: int | None = None
    if not hold and opts.start is None:
        count = _Ticker()
        with contextlib.suppress(InputError):  # raised again by the parsing pass
            for recs, _ in _DmonReader(src).segments(segment_lines):
                count.run([r[1][r[3].index("gpu")] for r in recs], [r[2] for r in recs])
        total = count.count
    interval_ms = round(opts.interval_s * 1000)
    ticker = _Ticker()
    reader = _DmonReader(src)
    rejected: list[Rejected] = []
    acc = InputAccounting(src.path, "nvidia-smi-dmon")

    def parts() -> Iterator[_Part | None]:
        for recs, rej in reader.segments(segment_lines):
            rejected.extend(rej)
            acc.rejected += len(rej)
            yield _dmon_part(src, recs, ticker, interval_ms, acc, rejected)

    def stamp() -> int:
        return default_start_ms(src, opts, total if total is not None else ticker.count, opts.interval_s)

    yield from _segments(src, opts, hold, parts(), stamp)
    start_ms = stamp()
    meta = {"ticks": ticker.count, "columns": reader.header, "rows": reader.rows,
            "start": datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()}
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=SAMPLE_SCHEMA.empty_table(), rejected=rejected, meta=meta)


def _dmon_part(src: Source, recs: list[_Rec], ticker: _Ticker, interval_ms: int, acc: InputAccounting,
               rejected: list[Rejected]) -> _Part | None:
    if not recs:
        return None
    ent = np.array([r[1][r[3].index("gpu")] for r in recs], dtype=object)
    ts_ms = ticker.run(ent.tolist(), [r[2] for r in recs]) * interval_ms
    absolute = np.zeros(len(recs), dtype=bool)
    dated = [i for i, r in enumerate(recs) if "date" in r[3] and "time" in r[3]]
    if dated:
        text = [recs[i][1][recs[i][3].index("date")] + " " + recs[i][1][recs[i][3].index("time")] for i in dated]
        stamps = pd.to_datetime(pd.Series(text), format="%Y%m%d %H:%M:%S", errors="coerce", utc=True)
        has = stamps.notna().to_numpy()
        ms = stamps.dt.tz_localize(None).astype("datetime64[ms]").to_numpy().astype("int64")
        ts_ms[np.asarray(dated)[has]] = ms[has]
        absolute[np.asarray(dated)[has]] = True
    rows: list[np.ndarray] = []
    fids: list[np.ndarray] = []
    fields: list[np.ndarray] = []
    values: list[np.ndarray] = []
    for hdr in dict.fromkeys(r[3] for r in recs):
        sel = np.flatnonzero(np.array([r[3] == hdr for r in recs], dtype=bool))
        cols = [(j, col) for j, col in enumerate(hdr) if col in F.SMI_DMON]
        good = np.zeros((len(sel), len(cols)), dtype=bool)
        vals = np.zeros((len(sel), len(cols)), dtype="float64")
        for k, (j, col) in enumerate(cols):
            factor = F.SMI_DMON[col][1]
            cells = [recs[i][1][j] for i in sel]
            nums, missing, bad = _values(pd.Series(cells, dtype="object"))
            if col in ("rxpci", "txpci"):
                glitch = ~missing & ~bad & (nums > PCIE_MAX_MBS)
                for i in np.flatnonzero(glitch):
                    rejected.append(Rejected(src.path, recs[sel[i]][0], f"{col} {cells[i]} MB/s exceeds any PCIe "
                                                                        f"link ({PCIE_MAX_MBS:g} MB/s): glitch"))
                bad = bad | glitch
            for i in np.flatnonzero(bad & (nums != nums)):
                rejected.append(Rejected(src.path, recs[sel[i]][0], f"{col}: {cells[i][:40]!r} is not a number"))
            good[:, k] = ~missing & ~bad
            vals[:, k] = nums * factor
            acc.records += int(good[:, k].sum())
            acc.missing += int(missing.sum())
            acc.rejected += int(bad.sum())
        r, kk = np.nonzero(good)
        rows.append(sel[r])
        fids.append(np.array([F.SMI_DMON[c][0] for _, c in cols], dtype="int32")[kk])
        fields.append(np.array([c for _, c in cols], dtype=object)[kk])
        values.append(vals[good])
    row = np.concatenate(rows)
    order = np.argsort(row, kind="stable")  # row-major across header groups
    row = row[order]
    return _Part(ts_ms[row], absolute[row], ent[row], None, None, np.concatenate(fids)[order],
                 np.concatenate(fields)[order], np.concatenate(values)[order])


def parse_dmon(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_dmon_batches` drained (segments held) and joined."""
    return drain_batches(parse_dmon_batches(src, opts, hold=True))
