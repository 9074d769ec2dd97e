"""Samples shared by the nvidia-smi parsers (docs/formulas.md#inputs): value cells to numbers,
ticks of rows without a timestamp, and a segment's samples as a ``SAMPLE_SCHEMA`` table."""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.parsers.model import SAMPLE_SCHEMA
from rooftop.parsers.source import ParseOptions, Source

UNIT_SUFFIX = r"\s*(%|MiB|GiB|KiB|W|MHz|C)$"  # a unit printed after a value: "22 %"
MISSING = frozenset({"[n/a]", "n/a", "[not supported]", "not supported", "-", "", "[unknown error]",
                     "[insufficient permissions]", "[gpu is lost]"})


@dataclass
class Part:
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
        return table(ts, self.gpu, self.uuid, self.model, self.fid, self.field, self.value, host)


def table(ts_ms: np.ndarray, gpu: np.ndarray, uuid: np.ndarray | None, model: np.ndarray | None,
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


class Ticker:
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


def parse_cells(cells: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, missing, bad) for printed nvidia-smi values."""
    s = cells.astype("string").str.strip()
    missing = s.str.lower().isin(MISSING).fillna(True).to_numpy(dtype=bool)
    s = s.str.replace(UNIT_SUFFIX, "", regex=True)
    nums = pd.to_numeric(s.where(~missing), errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(nums) & ~missing
    return nums, missing, bad


def segments(src: Source, opts: ParseOptions, hold: bool, parts: Iterator[Part | None],
              stamp: Callable[[], int]) -> Generator[pa.Table, None, None]:
    """Each part as a table (start known: ``stamp()`` before the first), or all held until the end."""
    held: list[Part] = []
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

