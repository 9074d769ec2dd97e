"""``nvidia-smi dmon`` logs into samples (docs/formulas.md#inputs).

Columns map to DCGM field IDs (:data:`rooftop.parsers.dcgm.fields.SMI_DMON`). ``# gpu pwr gtemp ...``
header, ``# Idx W C ...`` units row, ``-`` missing, optional ``-o DT`` date/time columns; rows split
on whitespace. PCIe throughput above :data:`PCIE_MAX_MBS` MB/s (beyond any PCIe 5.0 x16 link) is
rejected as a glitch. Ticks and timestamps as for ``dcgmi dmon`` (``ParseOptions.interval_s``, ``start``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Generator, Iterator
from dataclasses import replace
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.errors import InputError
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult, Rejected
from rooftop.parsers.nvsmi.samples import Part, Ticker, parse_cells, segments
from rooftop.parsers.prometheus.text import default_start_ms
from rooftop.parsers.source import ParseOptions, Source

PCIE_MAX_MBS = 70_000.0

_Rec = tuple[int, list[str], bool, tuple[str, ...]]


_COMMAND = re.compile(rb"nvidia-smi[ \t]+dmon\b[^\n]*")
_DELAY = re.compile(rb"(?:[ \t]-d[ \t]*|[ \t]--delay(?:=|[ \t]+))(\d+)\b")


def file_delay(src: Source) -> tuple[int, int] | None:
    """``(line, seconds)`` of the first ``nvidia-smi dmon ... -d N`` command pasted in the file
    (nvidia-smi dmon's ``-d`` is in seconds, default 1: ``nvidia-smi dmon -h``); None without one."""
    lines_before = 0
    for block in src.line_blocks(8 << 20):
        data = bytes(block)
        if b"dmon" in data:
            for m in _COMMAND.finditer(data):
                d = _DELAY.search(m.group(0))
                if d and int(d.group(1)) > 0:
                    return lines_before + data.count(b"\n", 0, m.start()) + 1, int(d.group(1))
        lines_before += data.count(b"\n") + 1
    return None


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


def dmon_batches(src: Source, opts: ParseOptions, *, hold: bool, segment_lines: int
                 ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, row-major file order), one per segment of
    ``segment_lines`` rows; return the whole file's :class:`ParseResult` with empty ``samples``.
    Ticks as :func:`parsers.dcgm.dmon.reader.parse_batches`: the start is ``opts.start`` or the mtime minus
    the tick count, counted first in a rows-only pass (``hold=True``: segments held instead)."""
    interval_from = "--interval" if opts.interval_s is not None else "nvidia-smi dmon's default -d 1 (no -d in the file)"
    if opts.interval_s is None:
        own = file_delay(src)
        if own is not None:
            opts = replace(opts, interval_s=float(own[1]))
            interval_from = f"the file's nvidia-smi dmon -d {own[1]} (line {own[0]})"
    total: int | None = None
    if not hold and opts.start is None:
        count = Ticker()
        with contextlib.suppress(InputError):  # raised again by the parsing pass
            for recs, _ in _DmonReader(src).segments(segment_lines):
                count.run([r[1][r[3].index("gpu")] for r in recs], [r[2] for r in recs])
        total = count.count
    interval_ms = round(opts.interval_or_default() * 1000)
    ticker = Ticker()
    reader = _DmonReader(src)
    rejected: list[Rejected] = []
    acc = InputAccounting(src.path, "nvidia-smi-dmon")
    dated_rows = [0]  # rows stamped from their own -o DT date/time columns

    def parts() -> Iterator[Part | None]:
        for recs, rej in reader.segments(segment_lines):
            rejected.extend(rej)
            acc.rejected += len(rej)
            yield _dmon_part(src, recs, ticker, interval_ms, acc, rejected, dated_rows)

    def stamp() -> int:
        return default_start_ms(src, opts, total if total is not None else ticker.count, opts.interval_or_default())

    yield from segments(src, opts, hold, parts(), stamp)
    start_ms = stamp()
    meta: dict[str, object] = {"ticks": ticker.count, "columns": reader.header, "rows": reader.rows,
                               "start": datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat(),
                               "interval_s": opts.interval_or_default(), "interval_from": interval_from}
    if dated_rows[0]:  # -o DT: the machine's local date and time, no zone (read as UTC)
        meta["dated_rows"] = dated_rows[0]
        meta["naive_timestamps"] = True
    if dated_rows[0] < reader.rows:  # rows without their own time are ticked from the start
        meta["start_from"] = "--start" if opts.start is not None else "file mtime"
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=SAMPLE_SCHEMA.empty_table(), rejected=rejected, meta=meta)


def _dmon_part(src: Source, recs: list[_Rec], ticker: Ticker, interval_ms: int, acc: InputAccounting,
               rejected: list[Rejected], dated_rows: list[int] | None = None) -> Part | None:
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
        if dated_rows is not None:
            dated_rows[0] += int(has.sum())
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
            nums, missing, bad = parse_cells(pd.Series(cells, dtype="object"))
            if col in ("rxpci", "txpci"):
                glitch = ~missing & ~bad & (nums > PCIE_MAX_MBS)
                for i in np.flatnonzero(glitch):
                    rejected.append(Rejected(src.path, recs[sel[i]][0], f"{col} {cells[i]} MB/s exceeds any PCIe "
                                                                        f"link ({PCIE_MAX_MBS:g} MB/s): glitch"))
                bad = bad | glitch
            for i in np.flatnonzero(bad & ~np.isfinite(nums)):
                what = "a finite number" if np.isinf(nums[i]) else "a number"
                rejected.append(Rejected(src.path, recs[sel[i]][0], f"{col}: {cells[i][:40]!r} is not {what}"))
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
    return Part(ts_ms[row], absolute[row], ent[row], None, None, np.concatenate(fids)[order],
                 np.concatenate(fields)[order], np.concatenate(values)[order])
