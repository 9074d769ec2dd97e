"""Nsight Compute ``--csv`` exports (raw page and details page): finding and reading the CSV blocks.

Rules (docs/formulas.md#inputs; corpus FORMATS.md):

* :func:`locate_blocks` finds every CSV block in a file: a block starts at a line beginning
  ``"ID","Process ID"`` (or ``"ID";"Process ID"``: a file re-saved in a decimal-comma locale) and
  holds the data lines after it. Everything else (``==PROF==``/``==ERROR==``/``==WARNING==`` lines,
  the application's own stdout before, between and after the blocks) is noise and is skipped.
* :func:`read_block` turns a block into a DataFrame of strings with a real CSV parser (pandas C
  engine: kernel names, ``"(x, y, z)"`` dims and rule texts contain commas and quotes). Each line is
  first screened by its quote count; lines that do not look like ``k`` plain quoted fields are
  re-checked exactly with :mod:`csv`, so a truncated line (open quote, too few or too many fields)
  is rejected with its line number while the rows around it are kept.

Launch identity is in :mod:`rooftop.parsers.ncu.csv_identity`, printed values to numbers in
:mod:`rooftop.parsers.ncu.csv_values`; their public names are importable from here too.
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
import pyarrow.csv as pa_csv

from rooftop.errors import InputError
from rooftop.parsers.ncu.csv_identity import INT_RE
from rooftop.parsers.ncu.csv_values import regex_mask

__all__ = [
    "BadRow", "BlockReader", "CsvBlock", "error_lines", "locate_blocks", "no_data_error",
    "read_block", "read_blocks", "rejected_launches", "split_valid_ids",
]

HEADER_RE = re.compile(r'^\ufeff?"ID"(?P<sep>[,;])"Process ID"', re.M)
# The widest real export: ncu --page raw with every metric of a Blackwell GPU is ~8,000 columns
# (2,600 base metrics x their rollups); a header wider than this is refused before it is split.
MAX_CSV_COLUMNS = 20_000
ERROR_RE = re.compile(r"^==ERROR==.*$", re.M)


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


def locate_blocks(text: str, path: str = "") -> list[CsvBlock]:
    """Every CSV block of ``text`` (already decoded, ``\\n`` line ends), noise lines skipped.
    A header of more than :data:`MAX_CSV_COLUMNS` columns is an :class:`InputError` naming ``path``
    (its separators are counted before anything is split, so the refusal is quick and small).

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
                if line.count(sep) >= MAX_CSV_COLUMNS:
                    raise InputError(path, f"the ncu CSV header has {line.count(sep) + 1:,} columns, more than "
                                     f"any Nsight Compute export ({MAX_CSV_COLUMNS:,} at most)",
                                     "export the raw page again with ncu --csv --page raw", line=first_no + i)
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


def split_valid_ids(df: pd.DataFrame, line_nos: np.ndarray) -> tuple[pd.DataFrame, np.ndarray, list[BadRow]]:
    """Drop rows whose ``ID`` or ``Process ID`` is not an integer; they become :class:`BadRow`."""
    ok = pd.Series(regex_mask(df["ID"], INT_RE) & regex_mask(df["Process ID"], INT_RE), index=df.index)
    if ok.all():
        return df, line_nos, []
    badrows = [
        BadRow(int(n), f"ID {i!r} / Process ID {p!r} is not an integer")
        for i, p, n in zip(df.loc[~ok, "ID"], df.loc[~ok, "Process ID"], line_nos[~ok.to_numpy()], strict=True)
    ]
    keep = ok.to_numpy()
    return df.loc[keep].reset_index(drop=True), line_nos[keep], badrows


BlockReader = Callable[[CsvBlock, str], tuple[pd.DataFrame, np.ndarray, list[BadRow]]]


def read_blocks(path: str, text: str,
                read_one: BlockReader) -> tuple[pd.DataFrame, np.ndarray, list[BadRow], str]:
    """Every CSV block of an export read with ``read_one(block, text)``, rows without integer IDs
    dropped (as :class:`BadRow`), blocks concatenated; also the first block's separator.
    ``InputError`` when there is no header or no data row at all."""
    blocks = locate_blocks(text, path)
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
