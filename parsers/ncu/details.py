"""Nsight Compute details page CSV (``ncu --csv``, the default page): long format.

One row per (launch, section, metric) plus rule rows (FORMATS.md §4). Header variants: identity
columns of either generation (``Kernel Time`` <= 2022, ``Block Size, Grid Size, Device, CC`` >= 2023),
then ``Section Name``, optional ``Body Item Label``, ``Metric Name, Metric Unit, Metric Value`` and
optional rule columns ``Rule Name, Rule Type, Rule Description[, Estimated Speedup Type, Estimated
Speedup]``. With rule columns, metric rows are **ragged**: they stop after ``Metric Value`` plus one
empty field; these shapes are accepted, any other field count is a rejected row.

Metric rows become kernel-table columns in SI base units (units are auto-scaled per row: ``Mbyte``
in one kernel, ``Kbyte`` in the next; :func:`parsers.units.si_factor`):

* ``Metric Name`` containing ``__`` is a metric ID (``--metrics`` rows): keyed by the ID; so is
  any space-free name in section ``Command line profiler metrics`` (``flop_count_sp.sum``);
* otherwise it is a section display label: keyed by :func:`parsers.ncu.labels.lookup_label`
  ``(section, label)`` when mapped, else ``"<section>: <label>"``, or
  ``"<section>: <body item> / <label>"`` when a ``Body Item Label`` tells repeats apart.

When several rows give the same key for one launch, the value comes from the highest-priority row
that has one: ID rows, then section label rows, then body-item rows (a mapped ID is never
overwritten by a lower-priority row); ties keep the first row. Disagreements are counted in
``meta["conflicting_values"]``. Instanced values ``"a; b"`` reduce as in :mod:`parsers.ncu.raw`.
Metrics whose every value is text (``Function Cache Configuration: CachePreferNone``) are not
numbers: they are listed in ``meta["text_metrics"]`` and left out.

Rule rows (empty metric fields, ``Rule Name`` set; ``Section Name`` is the section identifier) go to
the rules table: section, rule, type (OPT/INF/WRN), description, speedup type, speedup %.

Accounting (per input): a launch is a distinct (ID, Process ID). ``records``: launches with at
least one measured numeric value; ``missing``: launches whose every value is missing (a failed
launch printing ``(!) nan``); ``rejected``: launches known only from rows that could not be read
(cut-off line, wrong field count; a row with an unreadable ID counts as one launch). An unreadable
row of a launch that has other good rows is listed as :class:`Rejected` but the launch stays a
record. A text value in a numeric metric, an infinity or a negative duration becomes NaN with one
:class:`Rejected` line per launch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.parsers.model import (
    RULE_COLUMNS,
    InputAccounting,
    ParseResult,
    Rejected,
    normalize_kernels,
)
from rooftop.parsers.ncu.csv import (
    BadRow,
    BlockReader,
    CsvBlock,
    error_lines,
    no_data_error,
    read_block,
    read_blocks,
    rejected_launches,
)
from rooftop.parsers.ncu.csv_identity import (
    factorize_columns,
    fill_launch_identity,
    identity_frame,
    measured_columns,
)
from rooftop.parsers.ncu.csv_values import (
    detect_decimal_comma,
    instance_reducer,
    numeric_column,
    sample_values,
    sanitize_values,
)
from rooftop.parsers.ncu.hints import scan_text as scan_hints
from rooftop.parsers.ncu.labels import lookup_label
from rooftop.parsers.source import ParseOptions, Source
from rooftop.parsers.units import si_factor

FORMAT = "ncu-details-csv"
REQUIRED = ("Section Name", "Metric Name", "Metric Unit", "Metric Value")
RULE_FIELDS = ("Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup")
PRIO_ID, PRIO_LABEL, PRIO_BODY = 0, 1, 2
CMD_SECTION = "Command line profiler metrics"


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """Parse a details-page export into kernel and rules tables (see module docstring)."""
    text = src.text()
    df, line_nos, bad, sep = read_blocks(src.path, text, _block_reader(src.path))
    codes, launch_keys, first = _launches(df)
    n_launch = len(launch_keys)
    is_metric, is_rule, unnamed = _row_kinds(df, line_nos)
    bad += unnamed
    mcols = [c for c in ("Section Name", "Body Item Label", "Metric Name", "Metric Unit", "Metric Value")
             if c in df.columns]
    mrows = df.loc[is_metric, mcols]
    sample = sample_values([mrows["Metric Value"]]) if sep == ";" else []
    dc = detect_decimal_comma(sep, sample, opts.decimal_comma)
    wide, bad_cells, meta_m = _metrics(mrows, codes[is_metric], line_nos[is_metric], n_launch, dc)
    meta: dict[str, object] = {
        "page": "details",
        "header": "old" if "Kernel Time" in df.columns else "new",
        "separator": sep,
        "decimal_comma": dc,
        "errors": error_lines(text),
        **meta_m,
    }
    hints = scan_hints(text)
    if hints:
        meta["device_hints"] = hints
    ident = identity_frame(df.iloc[first].reset_index(drop=True), src.path, line_nos[first])
    kern = pd.concat([ident, wide], axis=1)
    kern = fill_launch_identity(kern)
    kern["index"] = pd.array(np.arange(n_launch), dtype="Int64")
    measured = measured_columns(list(wide.columns))
    has_value = wide[measured].notna().any(axis=1).to_numpy() if measured else np.zeros(n_launch, bool)
    accepted = {(str(i).strip(), str(p).strip()) for i, p in launch_keys} if bad else set()
    acc = InputAccounting(
        path=src.path,
        format=FORMAT,
        records=int(has_value.sum()),
        missing=int(n_launch - has_value.sum()),
        rejected=rejected_launches(bad, accepted),
    )
    rcols = [c for c in ("Section Name", *RULE_FIELDS) if c in df.columns]
    rules = _rules(df.loc[is_rule, rcols], codes[is_rule], src.path, dc)
    return ParseResult(accounting=acc, kernels=normalize_kernels(kern), rules=rules,
                       rejected=_rejections(src.path, bad, bad_cells), meta=meta)


def _block_reader(path: str) -> BlockReader:
    """Block reader for the details page: required columns checked, ragged metric rows accepted.

    Shapes accepted: the header's width, or ``Metric Value`` plus zero or one field
    (docs/formulas.md#inputs); a header lacking a required column is an error naming it.
    """

    def read_one(block: CsvBlock, text: str) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
        missing_cols = [c for c in REQUIRED if c not in block.header]
        if missing_cols:
            raise no_data_error(path, text, f"details-page header lacks column(s) {', '.join(missing_cols)}")
        mv = block.header.index("Metric Value")
        shapes = {len(block.header)} | {w for w in (mv + 1, mv + 2) if w <= len(block.header)}
        return read_block(block, shapes)

    return read_one


def _launches(df: pd.DataFrame) -> tuple[np.ndarray, list[tuple[str, ...]], np.ndarray]:
    """Launch code of each row, the (ID, Process ID) launches in order of first appearance, and each one's first row."""
    codes, launch_keys = factorize_columns(df, ["ID", "Process ID"])
    first = np.full(len(launch_keys), -1)
    first[codes[::-1]] = np.arange(len(codes))[::-1]
    return codes, launch_keys, first


def _row_kinds(df: pd.DataFrame, line_nos: np.ndarray) -> tuple[np.ndarray, np.ndarray, list[BadRow]]:
    """Metric rows, rule rows, and a :class:`BadRow` for each row that is neither (docs/formulas.md#inputs)."""
    name = df["Metric Name"].str.strip()
    rule_name = df["Rule Name"].str.strip() if "Rule Name" in df.columns else pd.Series("", index=df.index)
    is_metric = (name.str.len() > 0).to_numpy()
    is_rule = (~is_metric) & (rule_name.str.len() > 0).to_numpy()
    neither = ~(is_metric | is_rule)
    unnamed: list[BadRow] = []
    if neither.any():
        ids, pids = df["ID"], df["Process ID"]
        unnamed = [BadRow(int(n), "row has neither a metric name nor a rule name", i, p)
                   for i, p, n in zip(ids[neither], pids[neither], line_nos[neither], strict=True)]
    return is_metric, is_rule, unnamed


def _rejections(path: str, bad: list[BadRow], bad_cells: dict[int, tuple[int, str, str, int]]) -> list[Rejected]:
    """Rows not read (by line), then one line per launch with unusable values (the launch is kept)."""
    rejected = [Rejected(path, b.line, f"row not read: {b.reason}") for b in sorted(bad, key=lambda b: b.line)]
    for launch, (line, col, val, more) in sorted(bad_cells.items()):
        extra = f" (and {more} more)" if more else ""
        rejected.append(Rejected(path, line, f"value {val!r} of metric {col} is not a usable number; "
                                 f"set to null{extra}, launch {launch} kept"))
    return rejected


def _keys(m: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Column key and priority of each metric row (vectorized over unique label combinations)."""
    cols = ["Section Name", "Body Item Label", "Metric Name"] if "Body Item Label" in m.columns else [
        "Section Name", "Metric Name"]
    codes, uniq = factorize_columns(m, cols)
    keys, prios = [], []
    for u in uniq:
        s, n = str(u[0]).strip(), str(u[-1]).strip()
        b = str(u[1]).strip() if len(u) == 3 else ""
        if "__" in n or (s == CMD_SECTION and " " not in n):  # flop_count_sp.sum has no "__"
            keys.append(n)
            prios.append(PRIO_ID)
            continue
        hit = lookup_label(s, n)
        if hit:
            keys.append(hit)
        elif b:
            keys.append(f"{s}: {b} / {n}")
        else:
            keys.append(f"{s}: {n}" if s else n)
        prios.append(PRIO_BODY if b else PRIO_LABEL)
    return np.asarray(keys, dtype=object)[codes], np.asarray(prios)[codes]


def _metrics(
    m: pd.DataFrame, launch: np.ndarray, lines: np.ndarray, n_launch: int, dc: bool
) -> tuple[pd.DataFrame, dict[int, tuple[int, str, str, int]], dict[str, object]]:
    """Wide metric table (one row per launch), bad cells per launch, and facts for ``meta``."""
    meta: dict[str, object] = {}
    if len(m) == 0:
        return pd.DataFrame(index=range(n_launch)), {}, meta
    keys, prio = _keys(m)
    kcodes, kuniq = pd.factorize(pd.Series(keys, dtype=object))
    reducers = pd.Series(np.asarray([instance_reducer(k) for k in kuniq], dtype=object)[kcodes], index=m.index)
    nums, badm = numeric_column(m["Metric Value"], reducers, dc)
    units = m["Metric Unit"].str.strip()
    ucodes, uuniq = pd.factorize(units)
    factors = [si_factor(u) for u in uuniq]
    unknown = sorted({u for u, f in zip(uuniq, factors, strict=True) if f is None})
    if unknown:
        meta["unknown_units"] = unknown
    fac = np.asarray([np.nan if f is None else f for f in factors])[ucodes]  # no unit guessed
    raw_vals = nums.to_numpy(dtype="float64", na_value=np.nan)
    vals = raw_vals * fac
    bad = badm.to_numpy(dtype=bool).copy() | (np.isnan(fac) & ~np.isnan(raw_vals))
    insane = sanitize_values(vals, kuniq[kcodes] if len(kuniq) else [])  # inf, negative durations
    if insane.any():
        vals[insane] = np.nan
        bad |= insane

    long = pd.DataFrame({"launch": launch, "key": kcodes, "val": vals, "prio": prio,
                         "order": np.arange(len(m)), "bad": bad})
    # Keys whose every value is text are text attributes, not metrics.
    anyval = long["val"].notna().groupby(long["key"]).any()
    anybad = long["bad"].groupby(long["key"]).any()
    text_keys = anyval.index[anybad.to_numpy() & ~anyval.to_numpy()]
    meta["text_metrics"] = sorted(str(kuniq[k]) for k in text_keys)
    # every value a missing marker (n/a): what ncu prints for a metric name it does not know
    na_keys = anyval.index[~anybad.to_numpy() & ~anyval.to_numpy()]
    if len(na_keys):
        meta["metrics_na"] = sorted(str(kuniq[k]) for k in na_keys)
    long = long[~long["key"].isin(text_keys)]
    badcells: dict[int, tuple[int, str, str, int]] = {}
    lb = long[long["bad"]]
    if len(lb):
        raw = m["Metric Value"].to_numpy(dtype=object)
        unit_of = units.to_numpy(dtype=object)
        for lau, grp in lb.groupby("launch", sort=True):
            o = int(grp["order"].iloc[0])
            shown = str(raw[o]) if si_factor(unit_of[o]) is not None else f"{raw[o]} {unit_of[o]}"
            badcells[int(lau)] = (int(lines[o]), str(kuniq[int(grp["key"].iloc[0])]), shown, len(grp) - 1)

    long = long.assign(nan=long["val"].isna()).sort_values(["launch", "key", "nan", "prio", "order"])
    nonnan = long[~long["nan"]]
    nuniq = nonnan.groupby(["launch", "key"])["val"].nunique()
    meta["conflicting_values"] = int((nuniq > 1).sum())
    best = long.drop_duplicates(["launch", "key"], keep="first")
    wide = best.pivot(index="launch", columns="key", values="val").reindex(range(n_launch))
    wide.columns = [str(kuniq[k]) for k in wide.columns]
    wide.index = range(n_launch)
    return wide.astype("float64"), badcells, meta


def _rules(r: pd.DataFrame, launch: np.ndarray, path: str, dc: bool) -> pd.DataFrame:
    """Rule rows -> the rules table of :mod:`parsers.model`."""

    def col(name: str) -> pd.Series:
        if name in r.columns:
            s = r[name].str.strip()
            return s.where(s.str.len() > 0).astype("string").reset_index(drop=True)
        return pd.Series(pd.NA, index=range(len(r)), dtype="string")

    if "Estimated Speedup" in r.columns:
        pct, _ = numeric_column(r["Estimated Speedup"], "mean", dc)
        pct = pct.reset_index(drop=True)
    else:
        pct = pd.Series(np.nan, index=range(len(r)))
    out = pd.DataFrame({
        "input": pd.Series([path] * len(r), dtype="string"),
        "index": pd.array(launch, dtype="Int64"),
        "section": col("Section Name"),
        "rule": col("Rule Name"),
        "type": col("Rule Type"),
        "title": pd.Series(pd.NA, index=range(len(r)), dtype="string"),
        "description": col("Rule Description"),
        "speedup_type": col("Estimated Speedup Type"),
        "speedup_pct": pct.astype("float64"),
    })
    return out.astype(RULE_COLUMNS)
