"""``nvidia-smi --query-gpu ... --format=csv`` logs into samples (docs/formulas.md#inputs).

Columns map to DCGM field IDs (:data:`rooftop.parsers.dcgm.fields.SMI_QUERY`). Header with or without
``[unit]`` suffixes, repeated headers (one nvidia-smi call per line appended to a file), unit
suffixes in values (``22 %``), ``[N/A]``/``[Not Supported]`` missing. The GPU column is ``index``;
a custom logger's extra ``gpu`` column wins when ``index`` does not tell the rows of one timestamp
apart. ``timestamp`` (``2023/06/22 18:56:56.252``, local time without zone: taken as UTC,
``meta["naive_timestamps"]``; ISO with offset: converted). Without a timestamp column rows are ticked.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator, Iterator
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult, Rejected
from rooftop.parsers.nvsmi.samples import Part, Ticker, parse_unit_cells, query_unit, segments
from rooftop.parsers.prometheus.text import default_start_ms
from rooftop.parsers.source import ParseOptions, Source

_HEADER_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(\s*\[[^\]]*\])?$")


class _CsvReader:
    """The data rows of a query CSV in segments: (rows, their line numbers, rejected rows)."""

    def __init__(self, src: Source) -> None:
        self.src = src
        self.header: list[str] | None = None
        self.units: dict[str, str | None] = {}  # the [unit] of each header column
        self.headers = 0

    def segments(self, size: int) -> Iterator[tuple[list[list[str]], list[int], list[Rejected]]]:
        src = self.src
        rows: list[list[str]] = []
        lines: list[int] = []
        rejected: list[Rejected] = []
        for n, raw in src.lines():
            line = raw.strip().lstrip("\ufeff").strip()  # a byte-order mark mid-file (files joined)
            if not line:
                continue
            tokens = [t.strip() for t in line.split(",")]
            if all(_HEADER_TOKEN.match(t) for t in tokens) and len(tokens) > 1:
                new = [re.sub(r"\s*\[[^\]]*\]$", "", t).lower() for t in tokens]
                units = {c: (m.group(1).strip() if (m := re.search(r"\[([^\]]*)\]$", t)) else None)
                         for c, t in zip(new, tokens, strict=True)}
                if self.header is not None and (new != self.header or units != self.units):
                    raise InputError(src.path, f"line {n}: the CSV header changes mid-file",
                                     "split the file per nvidia-smi query")
                self.header = new
                self.units = units
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


def csv_batches(src: Source, opts: ParseOptions, *, hold: bool, segment_lines: int
                ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, row-major file order: row by row, cells left to right),
    one per segment of ``segment_lines`` data rows; return the whole file's :class:`ParseResult` with
    empty ``samples``. Without a timestamp column rows are ticked; the start is ``opts.start`` or the
    mtime minus the tick count, counted first in a rows-only pass (``hold=True``: segments held instead)."""
    header = _first_header(src)
    ent_col = _entity_column(src, header, segment_lines) if header else None
    timed = header is not None and "timestamp" in header
    interval_ms = round(opts.interval_or_default() * 1000)
    ticker = Ticker()
    total: int | None = None
    if not timed and not hold and opts.start is None and header is not None:
        count = Ticker()
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

    def parts() -> Iterator[Part | None]:
        nonlocal nrows
        for rows, lines, rej in reader.segments(segment_lines):
            assert reader.header is not None
            mapped = [c for c in reader.header if c in F.SMI_QUERY]
            rejected.extend(rej)
            acc.rejected += len(rej) * len(mapped)
            nrows += len(rows)
            yield _csv_part(src, opts, reader.header, mapped, rows, lines, ent_col, ticker, interval_ms,
                            acc, rejected, state, reader.units)

    def stamp() -> int:
        return default_start_ms(src, opts, total if total is not None else ticker.count, opts.interval_or_default())

    yield from segments(src, opts, hold, parts(), stamp)
    header = reader.header
    assert header is not None
    meta: dict[str, object] = {"headers": reader.headers, "rows": nrows,
                               "unmapped_columns": [c for c in header if c not in F.SMI_QUERY and c not in
                                                    ("timestamp", "index", "gpu", "uuid", "name", "pci.bus_id")]}
    meta["gpu_column"] = ent_col
    if "naive" in state:
        meta["naive_timestamps"] = state["naive"]
    if not timed:
        start_ms = stamp()
        meta["start"] = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()
        meta["start_from"] = "--start" if opts.start is not None else "file mtime"
        meta["interval_s"] = opts.interval_or_default()
        meta["interval_from"] = "--interval" if opts.interval_s is not None else "the default 1 s (no timestamps)"
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=SAMPLE_SCHEMA.empty_table(), rejected=rejected, meta=meta)


def _csv_part(src: Source, opts: ParseOptions, header: list[str], mapped: list[str], rows: list[list[str]],
              lines: list[int], ent_col: str | None, ticker: Ticker, interval_ms: int, acc: InputAccounting,
              rejected: list[Rejected], state: dict[str, object], units: dict[str, str | None]) -> Part | None:
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
        expected = query_unit(c)
        nums, missing, bad, bad_unit = parse_unit_cells(df[c], expected, units.get(c))
        missing = missing & keep_rows
        bad = bad & keep_rows
        for i in np.flatnonzero(bad):
            why = (f"its unit is not {expected} or one that converts to it exactly (header unit "
                   f"{units.get(c)!r})" if bad_unit[i] else
                   "is not a finite number" if np.isinf(nums[i]) else "is not a number")
            rejected.append(Rejected(src.path, lines[i], f"{c}: {df[c].iat[i][:40]!r} {why}"))
        good[:, k] = keep_rows & ~missing & ~bad
        vals[:, k] = nums * factor
        acc.records += int(good[:, k].sum())
        acc.missing += int(missing.sum())
        acc.rejected += int(bad.sum())
    r, kk = np.nonzero(good)  # row-major
    return Part(ts_ms[r], np.ones(len(r), dtype=bool) if timed else None, ent[r],
                 df["uuid"].to_numpy(dtype=object)[r] if "uuid" in df.columns else None,
                 df["name"].to_numpy(dtype=object)[r] if "name" in df.columns else None,
                 fids[kk], np.asarray(mapped, dtype=object)[kk], vals[good],
                 df["pci.bus_id"].to_numpy(dtype=object)[r] if "pci.bus_id" in df.columns else None)
