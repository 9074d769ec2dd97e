"""Shared machinery for Nsight Compute ``--csv`` exports (raw page and details page).

* :func:`locate_blocks` finds every CSV block in a file: a block starts at a line beginning
  ``"ID","Process ID"`` (or ``"ID";"Process ID"``: a file re-saved in a decimal-comma locale) and
  holds the data lines after it. Everything else (``==PROF==``/``==ERROR==``/``==WARNING==`` lines,
  the application's own stdout before, between and after the blocks) is noise and is skipped.
* :func:`read_block` turns a block into a DataFrame of strings with a real CSV parser (pandas C
  engine: kernel names, ``"(x, y, z)"`` dims and rule texts contain commas and quotes). Each line is
  first screened by its quote count; lines that do not look like ``k`` plain quoted fields are
  re-checked exactly with :mod:`csv`, so a truncated line (open quote, too few or too many fields)
  is rejected with its line number while the rows around it are kept.
* :func:`identity_frame` maps the identity columns of both header generations (ncu <= 2022: ``Kernel
  Time`` and no dims; ncu >= 2023: ``Block Size, Grid Size, Device, CC``) to the canonical kernel
  columns of :mod:`parsers.model`.
* :func:`numeric_column` converts printed values to floats, vectorized: thousands separators,
  decimal commas, missing tokens (``n/a``, ``nan``, ``(!) nan``, ``no data``, empty) and instanced
  values ``"a; b; c"`` (reduced by the metric's rollup, see :func:`instance_reducer`).
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from io import StringIO

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv

from rooftop.parsers.model import IDENTITY_COLUMNS, InputError
from rooftop.parsers.numbers import MISSING_TOKENS, looks_decimal_comma, parse_series

HEADER_RE = re.compile(r'^\ufeff?"ID"(?P<sep>[,;])"Process ID"', re.M)
ERROR_RE = re.compile(r"^==ERROR==.*$", re.M)

# Identity columns of both header generations, ncu header name -> canonical kernel column.
IDENTITY_MAP: dict[str, str] = {
    "ID": "id",
    "Process ID": "pid",
    "Process Name": "process",
    "Host Name": "host",
    "Kernel Name": "name",
    "Context": "context",
    "Stream": "stream",
    "Block Size": "block_dim",
    "Grid Size": "grid_dim",
    "Device": "device_index",
    "CC": "cc",
}
# Identity-like columns that are not metrics and have no canonical column.
EXTRA_IDENTITY = ("Kernel Time",)
NON_METRIC_COLUMNS = frozenset(IDENTITY_MAP) | frozenset(EXTRA_IDENTITY)

# Metric-name prefixes that describe the device or launch configuration rather than a measurement:
# a failed launch still has them, so they do not make a launch count as "measured".
STATIC_PREFIXES = ("device__", "launch__", "profiler__", "numa__", "nvlink__", "c2clink__")

_DIMS_RE = r"^\s*\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)\s*$"
_INT_RE = r"^\s*\d+\s*$"
_CC_RE = r"^\d+[.,]\d+$"  # "8,6" in a file re-saved with a decimal comma
_GROUPED_DOTS = r"^[+-]?\d{1,3}(\.\d{3})+(,\d+)?$"


@dataclass
class CsvBlock:
    """One CSV block: its header and the data lines after it (1-based file line numbers)."""

    header_line: int
    sep: str
    header: list[str]
    header_text: str = ""
    lines: list[str] = field(default_factory=list)
    line_nos: list[int] = field(default_factory=list)


@dataclass
class BadRow:
    """A data line that could not be used: 1-based line, reason, and its ID/PID when readable."""

    line: int
    reason: str
    id: str | None = None
    pid: str | None = None


def error_lines(text: str) -> list[str]:
    """The ``==ERROR==`` lines of a capture, stripped (to quote them in an :class:`InputError`)."""
    if "==ERROR==" not in text:
        return []
    return [m.group(0).strip() for m in ERROR_RE.finditer(text)]


def no_data_error(path: str, text: str, what: str) -> InputError:
    """The :class:`InputError` for an export with no usable data, quoting ncu's ``==ERROR==`` line."""
    errs = error_lines(text)
    if errs:
        reason = f"{what}; ncu reported: {errs[0][:300]}"
        hint = "fix the error ncu reported and profile again"
    else:
        reason = what
        hint = "profile again; check that ncu matched at least one kernel (-k/--kernel-name, -c)"
    return InputError(path, reason, hint)


def _split_header(line: str, sep: str) -> list[str]:
    return next(csv.reader([line], delimiter=sep))


def locate_blocks(text: str) -> list[CsvBlock]:
    """Every CSV block of ``text`` (already decoded, ``\\n`` line ends), noise lines skipped.

    A data line is one that starts with a quote, or an unquoted line whose first field is an
    integer and that has at least as many separators as the shortest known row shape (a re-saved
    file may drop the quotes). A header line identical to the current one (a second capture
    appended to the same log) just continues the block; a different header starts a new block.
    """
    blocks: list[CsvBlock] = []
    m = HEADER_RE.search(text)
    if not m:
        return blocks
    start = m.start()
    lines = text[start:].split("\n")
    first_no = text.count("\n", 0, start) + 1
    cur: CsvBlock | None = None
    min_seps = 0
    for i, line in enumerate(lines):
        if not line:
            continue
        c0 = line[0]
        if c0 == '"' or c0 == "\ufeff":
            hm = HEADER_RE.match(line)
            if hm:
                sep = hm.group("sep")
                if cur is not None and line == cur.header_text:
                    continue
                text_ = line.lstrip("\ufeff")
                cur = CsvBlock(first_no + i, sep, _split_header(text_, sep), line)
                blocks.append(cur)
                min_seps = max(len(cur.header) // 2, 1)
                continue
            if cur is not None:
                cur.lines.append(line)
                cur.line_nos.append(first_no + i)
        elif cur is not None and c0.isdigit():
            head = line.split(cur.sep, 1)[0]
            if head.isdigit() and line.count(cur.sep) >= min_seps:
                cur.lines.append(line)
                cur.line_nos.append(first_no + i)
    return blocks


def read_block(block: CsvBlock, shapes: set[int]) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
    """Parse a block's data lines into strings (every column ``str``; absent ragged fields ``""``).

    ``shapes`` are the accepted field counts (the header width, plus the ragged widths of the
    details page). Returns the frame, the file line number of each row, and the rejected lines.
    """
    sep = block.sep
    ncols = len(block.header)
    q2 = '"' + sep + '"'
    fast = {2 * k: k - 1 for k in shapes}
    good: list[str] = []
    good_nos: list[int] = []
    bad: list[BadRow] = []
    for line, no in zip(block.lines, block.line_nos, strict=True):
        nq = line.count('"')
        if nq in fast and line.count(q2) == fast[nq] and line[0] == '"' and line[-1] == '"':
            good.append(line)
            good_nos.append(no)
            continue
        # Exact check for everything else (escaped quotes, unquoted fields, truncation).
        if nq % 2:
            bad.append(_bad(line, no, sep, "unterminated quoted field (line cut off?)"))
            continue
        fields = next(csv.reader([line], delimiter=sep))
        if len(fields) in shapes:
            good.append(line)
            good_nos.append(no)
        else:
            expect = " or ".join(str(s) for s in sorted(shapes))
            bad.append(_bad(line, no, sep, f"has {len(fields)} fields, expected {expect}"))
    if not good:
        return pd.DataFrame(columns=block.header, dtype=str), np.zeros(0, dtype=np.int64), bad
    joined = "\n".join(good)
    df = _read_arrow(joined, sep, ncols) if len(shapes) == 1 else None
    if df is not None:
        df.columns = _unique(block.header)
        return df, np.asarray(good_nos, dtype=np.int64), bad
    df = pd.read_csv(
        StringIO(joined),
        sep=sep,
        header=None,
        names=list(range(ncols)),
        dtype=str,
        keep_default_na=False,
        na_filter=False,
        index_col=False,
        engine="c",
        quotechar='"',
        doublequote=True,
        skip_blank_lines=False,
    )
    df.columns = _unique(block.header)
    return df, np.asarray(good_nos, dtype=np.int64), bad


def _read_arrow(joined: str, sep: str, ncols: int) -> pd.DataFrame | None:
    """Rows of one width as ``str`` columns with Arrow's CSV reader (no Python string per cell;
    same cells as the pandas reader below); ``None`` where Arrow cannot read them."""
    names = [str(i) for i in range(ncols)]
    try:
        tbl = pa_csv.read_csv(
            pa.py_buffer(joined.encode("utf-8")),
            read_options=pa_csv.ReadOptions(column_names=names),
            parse_options=pa_csv.ParseOptions(delimiter=sep, quote_char='"', double_quote=True,
                                              newlines_in_values=False, ignore_empty_lines=False),
            convert_options=pa_csv.ConvertOptions(column_types=dict.fromkeys(names, pa.string()),
                                                  strings_can_be_null=False, quoted_strings_can_be_null=False),
        )
    except (pa.ArrowInvalid, UnicodeEncodeError):
        return None
    if tbl.num_rows != joined.count("\n") + 1:
        return None
    return tbl.to_pandas(types_mapper=lambda _t: _STR_DTYPE)


_STR_DTYPE = pd.StringDtype("pyarrow", na_value=np.nan)  # pandas' default ``str``


def _unique(names: list[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for n in names:
        k = seen.get(n, 0)
        out.append(n if k == 0 else f"{n}#{k}")
        seen[n] = k + 1
    return out


def _bad(line: str, no: int, sep: str, reason: str) -> BadRow:
    head = line.split(sep, 2)
    ident = [h.strip().strip('"') for h in head[:2]]
    ok = len(ident) == 2 and all(x.isdigit() for x in ident)
    return BadRow(no, reason, ident[0] if ok else None, ident[1] if ok else None)


def rejected_launches(bad: list[BadRow], accepted: set[tuple[str, str]]) -> int:
    """How many launches are lost to unreadable rows: distinct (ID, PID) of bad rows that are not
    accepted launches, plus one per bad row whose ID cannot be read."""
    lost: set[tuple[str, str]] = set()
    unknown = 0
    for b in bad:
        if b.id is None or b.pid is None:
            unknown += 1
        elif (b.id, b.pid) not in accepted:
            lost.add((b.id, b.pid))
    return len(lost) + unknown


def regex_mask(s: pd.Series, pattern: str) -> np.ndarray:
    """Boolean array: where ``s`` matches ``pattern`` (RE2 via Arrow, no per-cell Python)."""
    a = pa.array(s.astype(str))
    return np.asarray(pc.fill_null(pc.match_substring_regex(a, pattern), False).to_numpy(zero_copy_only=False), dtype=bool)


def factorize_columns(df: pd.DataFrame, cols: list[str]) -> tuple[np.ndarray, list[tuple[str, ...]]]:
    """Codes of the distinct value combinations of ``cols`` (first-appearance order) and the
    combinations themselves; no per-row string building."""
    combined = np.zeros(len(df), dtype=np.int64)
    uniques = []
    for c in cols:
        codes, uniq = pd.factorize(df[c])
        uniques.append(np.asarray(uniq, dtype=object))
        combined = combined * (len(uniq) + 1) + codes
    codes, first_combo = pd.factorize(combined)
    # Decode each distinct combination back to its column values.
    combos: list[tuple[str, ...]] = []
    if len(codes):
        first_row = np.full(len(first_combo), -1)
        first_row[codes[::-1]] = np.arange(len(codes))[::-1]
        cols_vals = [df[c].to_numpy(dtype=object)[first_row] for c in cols]
        combos = [tuple(str(v) for v in t) for t in zip(*cols_vals, strict=True)]
    return np.asarray(codes), combos


def split_valid_ids(df: pd.DataFrame, line_nos: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
    """Drop rows whose ``ID`` or ``Process ID`` is not an integer; they become :class:`BadRow`."""
    ok = pd.Series(regex_mask(df["ID"], _INT_RE) & regex_mask(df["Process ID"], _INT_RE), index=df.index)
    if ok.all():
        return df, line_nos, []
    badrows = [
        BadRow(int(n), f"ID {i!r} / Process ID {p!r} is not an integer")
        for i, p, n in zip(df.loc[~ok, "ID"], df.loc[~ok, "Process ID"], line_nos[~ok.to_numpy()], strict=True)
    ]
    keep = ok.to_numpy()
    return df.loc[keep].reset_index(drop=True), line_nos[keep], badrows


def sample_values(cols: list[pd.Series], n: int = 2000) -> list[str]:
    """A sample of non-empty printed values (for decimal-comma detection)."""
    out: list[str] = []
    for s in cols:
        v = s[s.str.len() > 0].head(max(1, n // max(1, len(cols))))
        out.extend(v.tolist())
    return out


def detect_decimal_comma(sep: str, values: list[str], forced: bool | None) -> bool:
    """Decimal comma only for ``;``-separated files (a ``,`` file cannot hold ``1,5`` unquoted
    safely and ncu itself always writes ``.``), unless the user said so."""
    if forced is not None:
        return forced
    return sep == ";" and looks_decimal_comma(values)


def instance_reducer(metric: str) -> str:
    """How the ``"a; b; c"`` instances of a metric become one number, by the metric's rollup.

    ``<base>.sum[...]`` -> sum, ``<base>.max[...]`` -> max, ``<base>.min[...]`` -> min, anything
    else (``.avg``, legacy names without a rollup) -> mean.
    """
    parts = metric.split(".")
    roll = parts[1] if len(parts) > 1 else ""
    return roll if roll in ("sum", "max", "min") else "mean"


def numeric_column(
    values: pd.Series, reducer: str | pd.Series = "mean", decimal_comma: bool = False
) -> tuple[pd.Series, pd.Series]:
    """Printed values -> ``(float64 numbers, bad mask)``; NaN where missing or not a number.

    Fast path: plain numbers go straight through :func:`pandas.to_numeric`; only the cells it
    cannot read (thousands separators, missing tokens, instances, decimal commas, text) take the
    slower vectorized path. ``reducer`` is one reduction for the whole column or one per row.
    """
    s = values.astype(str)
    if decimal_comma:
        grouped = s.str.match(_GROUPED_DOTS, na=False)
        s = s.where(~grouped, s.str.replace(".", "", regex=False))
        need = pd.Series(True, index=s.index)
        nums = pd.Series(np.nan, index=s.index, dtype="float64")
    else:
        nums = pd.to_numeric(s, errors="coerce").astype("float64")
        need = nums.isna() & (s.str.len() > 0)
    bad = pd.Series(False, index=s.index)
    if not need.any():
        return nums, bad
    sub = s[need]
    inst = sub.str.contains(";", regex=False)
    if inst.any():
        red = reducer if isinstance(reducer, str) else reducer[need][inst]
        vals, vbad = _instanced(sub[inst], red, decimal_comma)
        nums.loc[vals.index] = vals
        bad.loc[vbad.index] = vbad
        sub = sub[~inst]
    if len(sub):
        vals, vbad = parse_series(sub, decimal_comma=decimal_comma)
        nums.loc[vals.index] = vals
        bad.loc[vbad.index] = vbad
    return nums, bad.astype(bool)


def fast_float(s: pd.Series) -> np.ndarray | None:
    """Plain printed numbers (empty cells -> NaN) via one Arrow cast; ``None`` when any cell is
    something else (thousands separators, missing tokens, instances, text)."""
    try:
        a = pa.array(s.astype(str))
        a = pc.if_else(pc.equal(a, ""), pa.scalar(None, a.type), a)
        return np.asarray(pc.cast(a, pa.float64()).to_numpy(zero_copy_only=False), dtype="float64")
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError):
        return None


def numeric_frame(
    df: pd.DataFrame, cols: list[str], reducers: list[str], decimal_comma: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """:func:`numeric_column` over many columns at once: ``(float64 [rows, cols], bad mask)``.

    Each column takes :func:`pandas.to_numeric`; the cells it cannot read, from every column, are
    gathered into one Series and converted in a single vectorized pass.
    """
    n = len(df)
    nums = np.full((n, len(cols)), np.nan)
    bad = np.zeros((n, len(cols)), dtype=bool)
    rows_l: list[np.ndarray] = []
    cols_l: list[np.ndarray] = []
    vals_l: list[np.ndarray] = []
    for j, name in enumerate(cols):
        s = df[name]
        fast = None if decimal_comma else fast_float(s)
        if fast is not None:
            nums[:, j] = fast
            continue
        nonempty = (s.str.len() > 0).to_numpy()
        if decimal_comma:
            need = nonempty
        else:
            col = pd.to_numeric(s, errors="coerce").to_numpy(dtype="float64", na_value=np.nan)
            nums[:, j] = col
            need = np.isnan(col) & nonempty
        if need.any():
            r = np.flatnonzero(need)
            rows_l.append(r)
            cols_l.append(np.full(len(r), j))
            vals_l.append(s.to_numpy(dtype=object)[r])
    if rows_l:
        ri, ci = np.concatenate(rows_l), np.concatenate(cols_l)
        cells = np.concatenate(vals_l)
        red = np.asarray(reducers, dtype=object)[ci]
        for r in np.unique(red):
            # Text attributes and repeated values: convert each distinct text once.
            sel = red == r
            codes, uniq = pd.factorize(cells[sel])
            vals, vbad = numeric_column(pd.Series(np.asarray(uniq, dtype=object), dtype=str), str(r), decimal_comma)
            nums[ri[sel], ci[sel]] = vals.to_numpy(dtype="float64", na_value=np.nan)[codes]
            bad[ri[sel], ci[sel]] = vbad.to_numpy(dtype=bool)[codes]
    return nums, bad


def _instanced(
    s: pd.Series, reducer: str | pd.Series, decimal_comma: bool
) -> tuple[pd.Series, pd.Series]:
    parts = s.str.split(";").explode()
    vals, vbad = parse_series(parts, decimal_comma=decimal_comma)
    g = vals.groupby(level=0)
    if isinstance(reducer, str):
        out = _reduce(g, reducer)
    else:
        out = pd.Series(np.nan, index=s.index, dtype="float64")
        for red in reducer.unique():
            rows = reducer.index[reducer == red]
            out.loc[rows] = _reduce(vals[vals.index.isin(rows)].groupby(level=0), str(red))
    bad = vbad.groupby(level=0).any()
    # An instance list where every instance is missing is missing, not bad.
    return out.reindex(s.index).astype("float64"), bad.reindex(s.index).fillna(False).astype(bool)


def _reduce(g: pd.core.groupby.SeriesGroupBy, reducer: str) -> pd.Series:
    if reducer == "sum":
        return g.sum(min_count=1)
    if reducer == "max":
        return g.max()
    if reducer == "min":
        return g.min()
    return g.mean()


INT_LIMIT = 2.0**62


def to_int(x: pd.Series) -> pd.Series:
    """Floats -> Int64: whole numbers within +-2**62 kept, anything else (NaN, inf, 1.5) null."""
    f = pd.to_numeric(x, errors="coerce").astype("float64")
    ok = f.notna() & (f.abs() < INT_LIMIT) & (f == f.round())
    return f.where(ok).astype("Int64")


def sanitize_values(values: np.ndarray, names: np.ndarray | list[str]) -> np.ndarray:
    """Mask of numbers no export can mean: infinities, and negative durations (``gpu__time_duration*``).

    ``values`` is ``[rows, cols]`` with ``names`` per column, or 1-D with one name per value.
    """
    bad = np.isinf(values)
    is_dur = np.asarray([str(n).startswith("gpu__time_duration") for n in names], dtype=bool)
    if is_dur.any():
        with np.errstate(invalid="ignore"):
            bad |= (values < 0) & (is_dur if values.ndim == 1 else is_dur[np.newaxis, :])
    return bad


def _by_unique(s: pd.Series, func: object) -> pd.Series:
    """Apply a vectorized ``func`` to the distinct values of ``s`` only, then broadcast back
    (identity columns repeat a handful of values over 100k launches)."""
    codes, uniq = pd.factorize(s.astype(str), use_na_sentinel=True)
    res = func(pd.Series(np.asarray(uniq, dtype=object), dtype=str))  # type: ignore[operator]
    arr = pd.array(res).take(codes, allow_fill=True)
    return pd.Series(arr, index=s.index)


def dims_product(dims: pd.Series) -> pd.Series:
    """``"(x, y, z)"`` -> ``x*y*z`` as Int64 (null when the text is not three integers)."""

    def prod(u: pd.Series) -> pd.Series:
        parts = u.str.extract(_DIMS_RE).astype("float64")
        return to_int(parts.prod(axis=1, min_count=3))

    return _by_unique(dims, prod).astype("Int64")


def _int_col(u: pd.Series) -> pd.Series:
    return to_int(pd.to_numeric(u.where(u.str.match(_INT_RE)), errors="coerce"))


def identity_frame(df: pd.DataFrame, path: str, line_nos: np.ndarray) -> pd.DataFrame:
    """Canonical identity columns for rows of a raw/details frame (one row per input row)."""
    out = pd.DataFrame(index=df.index)
    out["input"] = path
    out["line"] = pd.array(line_nos, dtype="Int64")
    for src, dst in IDENTITY_MAP.items():
        if src in df.columns:
            out[dst] = df[src]
    for col in ("pid", "context", "stream", "device_index"):
        if col in out.columns:
            out[col] = _by_unique(out[col], _int_col).astype("Int64")

    def cc_text(u: pd.Series) -> pd.Series:
        u = u.str.strip()
        return u.where(u.str.match(_CC_RE, na=False)).str.replace(",", ".", regex=False).astype("string")

    if "cc" in out.columns:
        out["cc"] = _by_unique(out["cc"], cc_text).astype("string")
    for dim, prod in (("grid_dim", "grid"), ("block_dim", "block")):
        if dim in out.columns:
            out[dim] = out[dim].where(out[dim].str.len() > 0)
            out[prod] = dims_product(out[dim])
    out["invocations"] = pd.array([1] * len(out), dtype="Int64")
    return out


def fill_launch_identity(kern: pd.DataFrame) -> pd.DataFrame:
    """Fill grid/block, device, cc and duration from metric columns where the identity lacks them."""
    for prod, metric in (("grid", "launch__grid_size"), ("block", "launch__block_size")):
        if metric in kern.columns:
            fallback = to_int(kern[metric])
            kern[prod] = kern[prod].astype("Int64").fillna(fallback) if prod in kern.columns else fallback
    maj, mnr = "device__attribute_compute_capability_major", "device__attribute_compute_capability_minor"
    if maj in kern.columns and mnr in kern.columns:
        cc = to_int(kern[maj]).astype(str) + "." + to_int(kern[mnr]).astype(str)
        cc = cc.where(kern[maj].notna() & kern[mnr].notna())
        kern["cc"] = kern["cc"].fillna(cc) if "cc" in kern.columns else cc
    if "device__attribute_device_index" in kern.columns:
        idx = to_int(kern["device__attribute_device_index"])
        kern["device_index"] = kern["device_index"].fillna(idx) if "device_index" in kern.columns else idx
    for dur in ("gpu__time_duration.sum", "gpu__time_duration"):  # the second: 2019.x name
        if dur in kern.columns:
            kern["duration_s"] = kern[dur].astype("float64")
            break
    for col, dtype in IDENTITY_COLUMNS.items():  # normalize_kernels cannot make a null float column
        if col not in kern.columns:
            kern[col] = pd.Series(np.nan if dtype == "float64" else pd.NA, index=kern.index, dtype=dtype)
    return kern


def measured_columns(metric_cols: list[str]) -> list[str]:
    """Metric columns that a failed launch would not have (see ``STATIC_PREFIXES``)."""
    measured = [c for c in metric_cols if not c.startswith(STATIC_PREFIXES)]
    return measured or list(metric_cols)


def is_missing_text(s: pd.Series) -> pd.Series:
    """True where a printed value is a missing marker (``n/a``, ``(!) nan``, empty ...)."""

    def miss(u: pd.Series) -> pd.Series:
        t = u.str.strip().str.replace(r"^\(!\)\s*", "", regex=True).str.lower()
        return t.isin(MISSING_TOKENS)

    return _by_unique(s, miss).astype(bool)


BlockReader = Callable[[CsvBlock, str], tuple[pd.DataFrame, np.ndarray, list[BadRow]]]


def read_blocks(path: str, text: str,
                read_one: BlockReader) -> tuple[pd.DataFrame, np.ndarray, list[BadRow], str]:
    """Every CSV block of an export read with ``read_one(block, text)``, rows without integer IDs
    dropped (as :class:`BadRow`), blocks concatenated; also the first block's separator.
    ``InputError`` when there is no header or no data row at all."""
    blocks = locate_blocks(text)
    if not blocks:
        raise no_data_error(path, text, 'no ncu CSV header ("ID","Process ID",...) found')
    frames: list[pd.DataFrame] = []
    line_parts: list[np.ndarray] = []
    bad: list[BadRow] = []
    for block in blocks:
        df, nos, b = read_one(block, text)
        bad += b
        df, nos, b = split_valid_ids(df, nos)
        bad += b
        frames.append(df)
        line_parts.append(nos)
    df = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True).fillna("")
    if len(df) == 0 and not bad:
        raise no_data_error(path, text, "the ncu CSV header is present but there are no data rows")
    return df, np.concatenate(line_parts), bad, blocks[0].sep
