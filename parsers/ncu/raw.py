"""Nsight Compute raw page CSV (``ncu --page raw --csv``): one row per launch, one column per metric.

Layout (FORMATS.md §3): noise, then the header ``"ID","Process ID",...`` with 11 identity columns
(ncu >= 2023: ``... Block Size, Grid Size, Device, CC``) or 8 (2019.x: ``... Kernel Time, Context,
Stream``), then the metric columns; line 2 of the block is the **units row** (empty identity cells),
which is consumed and used to scale every metric column to SI base units
(:func:`parsers.units.si_factor`: ``nsecond`` -> s, ``Kbyte`` -> byte, ``hz``; ``%`` stays percent).

Values: all quoted; thousands separators (``"1,759,000.00"``); ``n/a``, ``nan``, ``(!) nan``,
``no data`` and empty cells are missing. **Instanced values** ``"a; b; c"`` become one number by the
metric's rollup: sum for ``<base>.sum*``, max for ``<base>.max*``, min for ``<base>.min*``, mean
otherwise (``.avg`` and the legacy 2019 names such as ``inst_executed``). Legacy names are kept as
they are; the analyzer maps aliases. Columns whose every non-missing value is text
(``device__attribute_display_name``, ``launch__func_cache_config``) are not metrics: the display
name fills ``device``, the others are listed in ``meta["text_columns"]``.

Accounting: a launch is a distinct (ID, Process ID) row. ``records``: launches with at least one
measured numeric metric (device/launch attributes do not count, a failed launch still has them);
``missing``: launches whose every measured value is missing; ``rejected``: rows that cannot be read
(cut-off line, wrong field count, non-integer ID) and each repeated (ID, PID) row. A cell that is text in
an otherwise numeric column, an infinity or a negative ``gpu__time_duration`` becomes NaN and adds
one :class:`Rejected` line for its launch (the first
such column, plus how many more); the launch itself stays a record, so that line is not counted in
``accounting.rejected``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from rooftop.parsers.model import InputAccounting, ParseResult, Rejected, normalize_kernels
from rooftop.parsers.ncu.csv import (
    BadRow,
    CsvBlock,
    error_lines,
    read_block,
    read_blocks,
    rejected_launches,
)
from rooftop.parsers.ncu.csv_identity import (
    NON_METRIC_COLUMNS,
    fill_launch_identity,
    identity_frame,
    measured_columns,
)
from rooftop.parsers.ncu.csv_values import (
    all_missing_text,
    detect_decimal_comma,
    instance_reducer,
    is_missing_text,
    numeric_frame,
    sample_values,
    sanitize_values,
)
from rooftop.parsers.ncu.hints import scan_text as scan_hints
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import si_factor, unit_refusal

FORMAT = "ncu-raw-csv"


_TEXT_METRICS = ("launch__kernel_name", "device__attribute_display_name")  # string-valued: n/a is no error


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse a raw-page export into the canonical kernel table (see module docstring)."""
    text = src.text()
    units = _UnitsRows()
    df, line_nos, bad, sep = read_blocks(src.path, text, units.read)
    df, line_nos, repeats = _drop_repeats(df, line_nos)
    metric_cols = [c for c in df.columns if c not in NON_METRIC_COLUMNS]
    sample = sample_values([df[c] for c in metric_cols[:200]]) if sep == ";" else []
    dc = detect_decimal_comma(sep, sample, opts.decimal_comma)
    meta: dict[str, object] = {
        "page": "raw",
        "header": "old" if "Kernel Time" in df.columns else "new",
        "separator": sep,
        "decimal_comma": dc,
        "units_row": units.count > 0,
        "errors": error_lines(text),
    }
    cols = _metric_columns(df, metric_cols, units.units, dc)
    meta["text_columns"] = cols.text_cols
    # every value a missing marker (n/a): what ncu prints for a metric name it does not know
    na_cols = [c for c in metric_cols if len(df) and c not in _TEXT_METRICS and all_missing_text(df[c])]
    if na_cols:
        meta["metrics_na"] = na_cols
    hints = scan_hints(text)
    if hints:
        meta["device_hints"] = hints
    if cols.unknown_units:
        meta["unknown_units"] = cols.unknown_units
    metrics = pd.DataFrame(cols.nums, index=df.index, columns=cols.kept)
    kern = _kernel_table(df, src.path, line_nos, metrics, cols.device)
    measured = measured_columns(cols.kept)
    has_value = metrics[measured].notna().any(axis=1) if measured else pd.Series(False, index=df.index)
    accepted = set(zip(df["ID"].str.strip(), df["Process ID"].str.strip(), strict=True)) if bad else set()
    rejected = _bad_rows(src.path, bad + repeats)
    rejected += _bad_cells(src.path, df, line_nos, pd.DataFrame(cols.badm, columns=cols.kept), cols.unknown_units)
    acc = InputAccounting(
        path=src.path,
        format=FORMAT,
        records=int(has_value.sum()),
        missing=int((~has_value).sum()),
        rejected=rejected_launches(bad, accepted) + len(repeats),
    )
    return ParseResult(accounting=acc, kernels=normalize_kernels(kern), rejected=rejected, meta=meta)


class _UnitsRows:
    """Block reader that consumes each block's units row and keeps the first unit seen per column.

    A units row has every identity cell empty (the row after each header; docs/formulas.md#inputs).
    """

    def __init__(self) -> None:
        self.units: dict[str, str] = {}
        self.count = 0  # units rows seen

    def read(self, block: CsvBlock, _text: str) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
        """Read one block (a :data:`parsers.ncu.csv.BlockReader`), its units rows taken out."""
        df, nos, bad = read_block(block, {len(block.header)})
        ident_cols = [c for c in df.columns if c in NON_METRIC_COLUMNS]
        is_units = (df[ident_cols] == "").all(axis=1) if ident_cols else pd.Series(False, index=df.index)
        for _, row in df.loc[is_units].iterrows():  # one per block
            self.count += 1
            for c in df.columns:
                if c not in NON_METRIC_COLUMNS and c not in self.units:
                    self.units[c] = str(row[c])
        units_at = np.flatnonzero(is_units.to_numpy())
        if len(units_at) == 1 and units_at[0] == 0:  # the usual place: no copy
            df, nos = df.iloc[1:].reset_index(drop=True), nos[1:]
        elif len(units_at):
            df, nos = df.loc[~is_units.to_numpy()].reset_index(drop=True), nos[~is_units.to_numpy()]
        return df, nos, bad


def _drop_repeats(df: pd.DataFrame, line_nos: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
    """Keep the first row of each (ID, PID), reject the others, each counted (docs/formulas.md#inputs).

    records + missing + rejected = the rows of the page.
    """
    dup = df.duplicated(["ID", "Process ID"]).to_numpy()
    repeats = [BadRow(int(n), f"repeats launch ID {i} of process {p}", i, p)
               for i, p, n in zip(df.loc[dup, "ID"], df.loc[dup, "Process ID"], line_nos[dup], strict=True)]
    if repeats:
        df, line_nos = df.loc[~dup].reset_index(drop=True), line_nos[~dup]
    return df, line_nos, repeats


@dataclass
class _MetricColumns:
    """The numeric metric columns of a page: values in SI units, unreadable-cell mask, and what was left out."""

    kept: list[str]
    nums: np.ndarray
    badm: np.ndarray
    text_cols: list[str]
    device: pd.Series | None
    unknown_units: dict[str, str]


def _metric_columns(df: pd.DataFrame, metric_cols: list[str], units: dict[str, str], dc: bool) -> _MetricColumns:
    """Numbers of every metric column, reduced, scaled to SI and sanitized (docs/formulas.md#inputs).

    A column with unreadable cells and no number at all is a text attribute, not a metric; the
    display name becomes the ``device`` column.
    """
    nums, badm = numeric_frame(df, metric_cols, [instance_reducer(c) for c in metric_cols], dc)
    text_mask = badm.any(axis=0) & np.isnan(nums).all(axis=0)
    text_cols = [c for c, t in zip(metric_cols, text_mask, strict=True) if t]
    device: pd.Series | None = None
    if "device__attribute_display_name" in df.columns:
        name = df["device__attribute_display_name"]
        device = name.where(~is_missing_text(name))
        text_cols = [c for c in text_cols if c != "device__attribute_display_name"]
    keep = ~text_mask
    for j, c in enumerate(metric_cols):
        if c == "device__attribute_display_name":
            keep[j] = False
    kept = [c for c, k in zip(metric_cols, keep, strict=True) if k]
    nums, badm = nums[:, keep], badm[:, keep]
    unknown_units = {c: units[c] for c in kept if si_factor(units.get(c, "")) is None}
    factors = np.array([si_factor(units.get(c, "")) or np.nan for c in kept])  # no unit guessed
    badm = badm | (np.isnan(factors)[np.newaxis, :] & ~np.isnan(nums))
    nums = nums * factors
    insane = sanitize_values(nums, kept)  # inf, 1e309, negative durations: null and listed
    if insane.any():
        nums[insane] = np.nan
        badm = badm | insane
    return _MetricColumns(kept, nums, badm, text_cols, device, unknown_units)


def _kernel_table(
    df: pd.DataFrame, path: str, line_nos: np.ndarray, metrics: pd.DataFrame, device: pd.Series | None
) -> pd.DataFrame:
    """Identity columns, metric columns, ``device`` and launch ``index``: the kernel table before normalizing."""
    ident = identity_frame(df, path, line_nos)
    kern = pd.concat([ident, metrics], axis=1)
    if device is not None:
        kern["device"] = device
    kern = fill_launch_identity(kern)
    kern["index"] = pd.array(np.arange(len(kern)), dtype="Int64")
    return kern


def _bad_rows(path: str, bad: list[BadRow]) -> list[Rejected]:
    return [Rejected(path, b.line, f"row not read: {b.reason}") for b in sorted(bad, key=lambda b: b.line)]


def _bad_cells(path: str, df: pd.DataFrame, line_nos: np.ndarray, mask: pd.DataFrame,
               unknown_units: dict[str, str]) -> list[Rejected]:
    """One :class:`Rejected` per launch with unreadable cells (first column named, others counted;
    a column whose unit cannot be scaled says so)."""
    rows = np.flatnonzero(mask.any(axis=1).to_numpy())
    out = []
    for r in rows:
        cols = mask.columns[mask.iloc[r].to_numpy()]
        first = cols[0]
        more = f" (and {len(cols) - 1} more columns)" if len(cols) > 1 else ""
        why = unit_refusal(unknown_units[first]) if first in unknown_units else "not a usable number"
        out.append(Rejected(path, int(line_nos[r]),
                            f"value {df.at[r, first]!r} in column {first}: {why}; set to null{more}, launch kept"))
    return out
