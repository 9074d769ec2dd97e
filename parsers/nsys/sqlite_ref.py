"""The plain reference reader of an nsys SQLite export: every column of every query fetched into a
pandas DataFrame row by row, then cast. Slow and obviously right; :func:`rooftop.parsers.nsys.columns.parse`
(the columnar reader) must give the same :class:`ParseResult` (``tests/test_nsys_sqlite_fast.py``).
Same tables, SQL and rules: ``docs/formulas.md#timelines``."""

from __future__ import annotations

import pandas as pd

from rooftop.parsers.model import EVENT_COLUMNS, ParseResult, Rejected, concat_frames, empty_events
from rooftop.parsers.nsys.sqlite import (
    SQL_COLUMNS,
    VERSION_SUFFIX,
    Db,
    Query,
    parse_with,
    rejected_rows,
)
from rooftop.parsers.source import ParseOptions, Source


def parse_reference(src: Source, opts: ParseOptions) -> ParseResult:
    del opts
    return parse_with(src, _read_frames)


def _read_frames(db: Db, qs: list[Query]) -> tuple[pd.DataFrame, list[Rejected], dict[str, int]]:
    frames, rejected, by_table = [], [], {}
    for q in qs:
        select = ", ".join(f"{q.expr(c)} AS {c}" for c in SQL_COLUMNS)
        cur = db.con.execute(f"SELECT {select} {q.source}")
        df = pd.DataFrame.from_records(cur.fetchall(), columns=list(SQL_COLUMNS))
        bad = (df["start_ns"].isna() | df["end_ns"].isna()).to_numpy(dtype=bool)
        rejected += rejected_rows(db.path, q.table, bad)
        by_table[q.table] = int(bad.sum())
        df = df[~bad]
        df.insert(0, "kind", q.kind)
        frames.append(df)
    return _finish(frames, db.path), rejected, by_table


def _finish(frames: list[pd.DataFrame], path: str) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_events().assign(input=pd.array([], dtype="string"))
    df = concat_frames(frames)
    df["input"] = path
    df["device"] = df["device"].map(lambda v: None if v is None or v != v else str(int(v)))
    names = df["name"].astype(object).to_numpy().copy()
    for i in (df["kind"] == "runtime").to_numpy().nonzero()[0]:
        if isinstance(names[i], str):
            names[i] = VERSION_SUFFIX.sub("", names[i])
    df["name"] = names
    for col, dtype in EVENT_COLUMNS.items():
        df[col] = df[col].astype(dtype)
    return df[list(EVENT_COLUMNS)].reset_index(drop=True)

