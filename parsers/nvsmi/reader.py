"""nvidia-smi streams: ``--query-gpu ... --format=csv`` and ``nvidia-smi dmon`` (docs/formulas.md#inputs).

The entry points the format registry names (``parsers/formats.py``). Columns map to DCGM field IDs
(:data:`rooftop.parsers.dcgm.fields.SMI_QUERY`, :data:`~rooftop.parsers.dcgm.fields.SMI_DMON`);
NVML utilisation percentages become ratios 0..1 (fields 203/204/206/207), so ``sm``/``mem`` of
``nvidia-smi dmon`` land in GPU_UTIL/MEM_COPY_UTIL -- they are NVML's coarse "kernel resident"
numbers, not DCGM SM_ACTIVE. A sample is one mapped value cell; ``index``, ``uuid``, ``name`` and
``pci.bus_id`` are identity (the bus id normalised, :mod:`rooftop.parsers.pci`), other unmapped
columns ignored (``meta["unmapped_columns"]``).

The query CSV rules are in :mod:`rooftop.parsers.nvsmi.csv`, the dmon rules in
:mod:`rooftop.parsers.nvsmi.dmon`, what both share (cells, ticks, tables) in
:mod:`rooftop.parsers.nvsmi.samples`.
"""

from __future__ import annotations

from collections.abc import Generator

import pyarrow as pa

from rooftop.parsers.model import ParseResult, drain_batches
from rooftop.parsers.nvsmi.csv import csv_batches
from rooftop.parsers.nvsmi.dmon import dmon_batches
from rooftop.parsers.source import ParseOptions, Source

SEGMENT_LINES = 131_072  # lines per segment: the samples of one segment are one batch


def parse_csv_batches(src: Source, opts: ParseOptions, *, hold: bool = False, segment_lines: int | None = None
                      ) -> Generator[pa.Table, None, ParseResult]:
    """Query CSV sample tables, one per segment of ``segment_lines`` (default :data:`SEGMENT_LINES`)
    data rows; returns the whole file's :class:`ParseResult` with empty ``samples``
    (:func:`rooftop.parsers.nvsmi.csv.csv_batches`)."""
    return csv_batches(src, opts, hold=hold, segment_lines=segment_lines or SEGMENT_LINES)


def parse_csv(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_csv_batches` drained (segments held) and joined."""
    return drain_batches(parse_csv_batches(src, opts, hold=True))


def parse_dmon_batches(src: Source, opts: ParseOptions, *, hold: bool = False, segment_lines: int | None = None
                       ) -> Generator[pa.Table, None, ParseResult]:
    """dmon sample tables, one per segment of ``segment_lines`` (default :data:`SEGMENT_LINES`) rows;
    returns the whole file's :class:`ParseResult` with empty ``samples``
    (:func:`rooftop.parsers.nvsmi.dmon.dmon_batches`)."""
    return dmon_batches(src, opts, hold=hold, segment_lines=segment_lines or SEGMENT_LINES)


def parse_dmon(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_dmon_batches` drained (segments held) and joined."""
    return drain_batches(parse_dmon_batches(src, opts, hold=True))
