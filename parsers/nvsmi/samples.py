"""Samples shared by the nvidia-smi parsers (docs/formulas.md#inputs): value cells to numbers,
ticks of rows without a timestamp, and a segment's samples as a ``SAMPLE_SCHEMA`` table."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Iterator
from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa

from rooftop.parsers.model import SAMPLE_SCHEMA
from rooftop.parsers.pci import normalise_array
from rooftop.parsers.source import ParseOptions, Source

HEX = r"0[xX][0-9a-fA-F]{1,16}"  # nvidia-smi prints bitmasks as 0x%016x
UNIT_SUFFIX = r"\s*(%|MiB|GiB|KiB|W|MHz|C)$"  # a unit printed after a value: "22 %"
# The unit nvidia-smi writes for each kind of --query-gpu field, and the units that convert to it
# exactly; any other unit (in the header's [unit] or after a value) is not guessed: the cell is rejected.
SMI_UNITS: dict[str, dict[str, float]] = {
    "%": {"%": 1.0},
    "MiB": {"MiB": 1.0, "GiB": 1024.0, "KiB": 1.0 / 1024},
    "W": {"W": 1.0, "mW": 1e-3, "kW": 1e3},
    "MHz": {"MHz": 1.0, "GHz": 1e3, "kHz": 1e-3},
    "C": {"C": 1.0},
}
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
    pci_bus_id: np.ndarray | None = None  # nvidia-smi ``pci.bus_id``, normalised (parsers/pci.py)

    def table(self, start_ms: int, host: str | None) -> pa.Table:
        ts = self.ts_ms if self.absolute is None else self.ts_ms.copy()
        if self.absolute is None:
            ts = ts + start_ms
        elif not self.absolute.all():
            ts[~self.absolute] += start_ms
        return table(ts, self.gpu, self.uuid, self.model, self.fid, self.field, self.value, host, self.pci_bus_id)


def table(ts_ms: np.ndarray, gpu: np.ndarray, uuid: np.ndarray | None, model: np.ndarray | None,
          fid: np.ndarray, field: np.ndarray, value: np.ndarray, host: str | None,
          pci_bus_id: np.ndarray | None = None) -> pa.Table:
    n = len(value)
    none = pa.nulls(n, pa.string())
    return pa.table({
        "timestamp": pa.array(ts_ms.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC")),
        "host": pa.array([host] * n, pa.string()),
        "gpu": pa.array(gpu, pa.string()),
        "uuid": none if uuid is None else pa.array(uuid, pa.string()),
        "pci_bus_id": none if pci_bus_id is None else normalise_array(pa.array(pci_bus_id, pa.string())),
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
    """(numbers, missing, bad) for printed nvidia-smi values; ``bad``: not a finite number."""
    s = cells.astype("string").str.strip()
    missing = s.str.lower().isin(MISSING).fillna(True).to_numpy(dtype=bool)
    hexa = s.str.fullmatch(HEX).fillna(False).to_numpy(dtype=bool)  # a bitmask: clocks_event_reasons.active
    s = s.str.replace(UNIT_SUFFIX, "", regex=True)
    nums = pd.to_numeric(s.where(~missing & ~hexa), errors="coerce").to_numpy(dtype="float64")
    if hexa.any():
        nums[hexa] = [float(int(str(t), 16)) for t in cells.astype("string").str.strip()[hexa]]
    bad = ~np.isfinite(nums) & ~missing
    return nums, missing, bad


def query_unit(column: str) -> str | None:
    """The unit nvidia-smi writes for a ``--query-gpu`` column (None: no unit, e.g. ``pstate``)."""
    if column.startswith(("utilization.", "fan.")):
        return "%"
    if column.startswith("memory."):
        return "MiB"
    if "power" in column:
        return "W"
    if column.startswith("temperature."):
        return "C"
    if column.startswith("clocks."):
        return "MHz"
    return None


SMALL_COLUMN = 512  # cells read one by one (a small file's column: ~15 pandas calls cost more)
_VALUE_UNIT = re.compile(r"^(?P<num>.*?)(?:\s*(?P<unit>%|[A-Za-z]+))?$")


def _unit_cells_small(cells: list[object], expected: str, header_unit: str | None
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """:func:`parse_unit_cells` cell by cell, the same rules (and the same number parser)."""
    table = SMI_UNITS[expected]
    n = len(cells)
    missing = np.zeros(n, dtype=bool)
    factor = np.full(n, np.nan)
    texts: list[str | None] = []
    for i, cell in enumerate(cells):
        t = None if cell is None or (isinstance(cell, float) and cell != cell) else str(cell).strip()
        if t is None:  # no text at all: not a number (as the vectorised path reads it)
            factor[i] = table.get(header_unit or expected, np.nan)
            texts.append(None)
            continue
        if t.lower() in MISSING:
            missing[i] = True
            texts.append(None)
            continue
        m = _VALUE_UNIT.match(t)
        num, unit = (m.group("num"), m.group("unit")) if m else (t, None)
        if num.strip() == "" or re.fullmatch(r"[-+]?", num):  # "inf", "nan": no unit, a word
            num, unit = t, None
        given = unit if unit is not None else (header_unit or expected)
        factor[i] = table.get(given, np.nan)
        texts.append(num)
    nums = pd.to_numeric(pd.Series(texts, dtype="object"), errors="coerce").to_numpy(dtype="float64")
    bad_unit = np.isnan(factor) & ~missing
    nums = nums * np.where(np.isnan(factor), 1.0, factor)
    bad = (~np.isfinite(nums) & ~missing) | bad_unit
    return nums, missing, bad, bad_unit


def parse_unit_cells(cells: pd.Series, expected: str | None, header_unit: str | None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(numbers in ``expected``'s unit, missing, bad, bad for its unit) of one query column: a
    value's own unit (``"3 GiB"``) or else the header's (``memory.used [GiB]``) is converted by
    :data:`SMI_UNITS`; one that does not convert (``MB``: 1000 or 1024?) is never guessed."""
    if expected is None:
        nums, missing, bad = parse_cells(cells)
        return nums, missing, bad, np.zeros(len(nums), dtype=bool)
    if len(cells) <= SMALL_COLUMN:
        return _unit_cells_small(cells.tolist(), expected, header_unit)
    s = cells.astype("string").str.strip()
    missing = s.str.lower().isin(MISSING).fillna(True).to_numpy(dtype=bool)
    parts = s.str.extract(r"^(?P<num>.*?)(?:\s*(?P<unit>%|[A-Za-z]+))?$")
    unit = parts["unit"]
    num_text = parts["num"]
    word = num_text.str.strip().eq("") | num_text.str.fullmatch(r"[-+]?")  # "inf", "nan": no unit, a word
    unit = unit.where(~word.fillna(False), None)
    num_text = num_text.where(~word.fillna(False), s)
    given = unit.fillna(header_unit) if header_unit else unit.fillna(expected)
    table = SMI_UNITS[expected]
    factor = given.map(lambda u: table.get(str(u), np.nan), na_action="ignore").astype("float64").to_numpy()
    nums = pd.to_numeric(num_text.where(~missing), errors="coerce").to_numpy(dtype="float64")
    nums = _overflowed(nums, num_text, missing)
    bad_unit = np.isnan(factor) & ~missing
    nums = nums * np.where(np.isnan(factor), 1.0, factor)
    bad = (~np.isfinite(nums) & ~missing) | bad_unit
    return nums, missing, bad, bad_unit


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



_EXPONENT = re.compile(r"^\s*[+-]?(\d+\.?\d*|\.\d+)[eE][+-]?\d+\s*$")


def _overflowed(nums: np.ndarray, text: pd.Series, missing: np.ndarray) -> np.ndarray:
    """Numbers beyond float range (``1e400``) as ±inf, as pandas 3's to_numeric reads them (pandas
    2.x gives NaN), so such a cell is "not a finite number" on every pandas."""
    for i in np.flatnonzero(np.isnan(nums) & ~missing):
        cell = text.iat[i]
        if isinstance(cell, str) and _EXPONENT.match(cell):
            nums[i] = float(cell)
    return nums
