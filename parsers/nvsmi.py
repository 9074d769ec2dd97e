"""nvidia-smi streams: ``--query-gpu ... --format=csv`` and ``nvidia-smi dmon``.

Columns map to DCGM field IDs (:data:`parsers.dcgm_fields.SMI_QUERY`, :data:`SMI_DMON`); NVML
utilisation percentages become ratios 0..1 (fields 203/204/206/207), so ``sm``/``mem`` of
``nvidia-smi dmon`` land in GPU_UTIL/MEM_COPY_UTIL -- they are NVML's coarse "kernel resident"
numbers, not DCGM SM_ACTIVE. A sample is one mapped value cell; unmapped columns (``name``,
``pci.bus_id``...) are identity or ignored (``meta["unmapped_columns"]``).

CSV: header with or without ``[unit]`` suffixes, repeated headers (one nvidia-smi call per line
appended to a file), unit suffixes in values (``22 %``), ``[N/A]``/``[Not Supported]`` missing.
The GPU column is ``index``; a custom logger's extra ``gpu`` column wins when ``index`` does not
tell the rows of one timestamp apart. ``timestamp`` (``2023/06/22 18:56:56.252``, local time
without zone: taken as UTC, ``meta["naive_timestamps"]``; ISO with offset: converted).
Without a timestamp column rows are ticked like dmon.

dmon: ``# gpu pwr gtemp ...`` header, ``# Idx W C ...`` units row, ``-`` missing, optional
``-o DT`` date/time columns; rows split on whitespace. PCIe throughput above
:data:`PCIE_MAX_MBS` MB/s (beyond any PCIe 5.0 x16 link) is rejected as a glitch.
Ticks and timestamps as for ``dcgmi dmon`` (``ParseOptions.interval_s``, ``start``).
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pyarrow as pa

from parsers import dcgm_fields as F
from parsers.model import SAMPLE_SCHEMA, InputAccounting, InputError, ParseResult, Rejected
from parsers.prom_text import default_start_ms
from parsers.source import ParseOptions, Source

PCIE_MAX_MBS = 70_000.0
_HEADER_TOKEN = re.compile(r"^[A-Za-z_][A-Za-z0-9_.]*(\s*\[[^\]]*\])?$")
_UNIT_SUFFIX = r"\s*(%|MiB|GiB|KiB|W|MHz|C)$"
_MISSING = frozenset({"[n/a]", "n/a", "[not supported]", "not supported", "-", "", "[unknown error]",
                      "[insufficient permissions]", "[gpu is lost]"})


def _table(ts_ms: np.ndarray, gpu: list[str | None], uuid: list[str | None], model: list[str | None],
           fid: np.ndarray, field: list[str], value: np.ndarray, host: str | None) -> pa.Table:
    n = len(value)
    none = pa.nulls(n, pa.string())
    return pa.table({
        "timestamp": pa.array(ts_ms.astype("datetime64[ms]"), pa.timestamp("ms")).cast(pa.timestamp("ms", tz="UTC")),
        "host": pa.array([host] * n, pa.string()),
        "gpu": pa.array(gpu, pa.string()), "uuid": pa.array(uuid, pa.string()),
        "model": pa.array(model, pa.string()), "mig": none, "mig_profile": none,
        "field_id": pa.array(fid, pa.int32()), "field": pa.array(field, pa.string()),
        "value": pa.array(value, pa.float64()),
        "namespace": none, "pod": none, "container": none, "job": none,
    }).cast(SAMPLE_SCHEMA)


def _ticks(entities: list[str], header_break: list[bool]) -> np.ndarray:
    out = np.empty(len(entities), dtype="int64")
    tick = -1
    seen: set[str] = set()
    for i, e in enumerate(entities):
        if header_break[i] or e in seen:
            seen = set()
        if not seen:
            tick += 1
        seen.add(e)
        out[i] = tick
    return out


def _values(cells: pd.Series) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(numbers, missing, bad) for printed nvidia-smi values."""
    s = cells.astype("string").str.strip()
    missing = s.str.lower().isin(_MISSING).fillna(True).to_numpy(dtype=bool)
    s = s.str.replace(_UNIT_SUFFIX, "", regex=True)
    nums = pd.to_numeric(s.where(~missing), errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(nums) & ~missing
    return nums, missing, bad


def parse_csv(src: Source, opts: ParseOptions) -> ParseResult:
    header: list[str] | None = None
    rows: list[list[str]] = []
    lines: list[int] = []
    rejected: list[Rejected] = []
    headers = 0
    for n, raw in src.lines():
        line = raw.strip()
        if not line:
            continue
        tokens = [t.strip() for t in line.split(",")]
        if all(_HEADER_TOKEN.match(t) for t in tokens) and len(tokens) > 1:
            new = [re.sub(r"\s*\[[^\]]*\]$", "", t).lower() for t in tokens]
            if header is not None and new != header:
                raise InputError(src.path, f"line {n}: the CSV header changes mid-file",
                                 "split the file per nvidia-smi query")
            header = new
            headers += 1
            continue
        if header is None:
            raise InputError(src.path, "no nvidia-smi --query-gpu header line",
                             "run nvidia-smi with --format=csv (not noheader)", line=n)
        if len(tokens) != len(header):
            rejected.append(Rejected(src.path, n, f"{len(tokens)} columns, header has {len(header)}"))
            continue
        rows.append(tokens)
        lines.append(n)
    if header is None:
        raise InputError(src.path, "no nvidia-smi --query-gpu header line", "run nvidia-smi with --format=csv")
    df = pd.DataFrame(rows, columns=header, dtype="object")
    mapped = [c for c in header if c in F.SMI_QUERY]
    meta: dict[str, object] = {"headers": headers, "rows": len(df),
                               "unmapped_columns": [c for c in header if c not in F.SMI_QUERY and c not in
                                                    ("timestamp", "index", "gpu", "uuid", "name")]}
    # rejected rows count the cells they would have given
    acc = InputAccounting(src.path, "nvidia-smi-csv", rejected=len(rejected) * len(mapped))
    ent_col = "index" if "index" in df.columns else "gpu" if "gpu" in df.columns else None
    if (ent_col == "index" and "gpu" in df.columns and "timestamp" in df.columns and len(df)
            and df.duplicated(["timestamp", "index"]).any() and not df.duplicated(["timestamp", "gpu"]).any()):
        ent_col = "gpu"
    meta["gpu_column"] = ent_col
    ent = df[ent_col].astype(str).tolist() if ent_col else ["0"] * len(df)
    if "timestamp" in df.columns and len(df):
        ts = pd.to_datetime(df["timestamp"].str.replace("/", "-", regex=False), errors="coerce", utc=False,
                            format="mixed")
        naive = getattr(ts.dt, "tz", None) is None
        ts = ts.dt.tz_localize("UTC") if naive else ts.dt.tz_convert("UTC")
        meta["naive_timestamps"] = bool(naive)
        ts_ms = ts.dt.tz_localize(None).astype("datetime64[ms]").to_numpy().astype("int64")
        bad_ts = ts.isna().to_numpy()
    else:
        ticks = _ticks(ent, [False] * len(ent))
        start = default_start_ms(src, opts, int(ticks.max()) + 1 if len(ticks) else 0, opts.interval_s)
        ts_ms = start + ticks * round(opts.interval_s * 1000)
        bad_ts = np.zeros(len(df), dtype=bool)
    for i in np.flatnonzero(bad_ts):
        rejected.append(Rejected(src.path, lines[i], f"timestamp {df['timestamp'].iat[i]!r} does not parse"))
    acc.rejected += int(bad_ts.sum()) * len(mapped)
    keep_rows = ~bad_ts
    parts = []
    for c in mapped:
        fid, factor = F.SMI_QUERY[c]
        nums, missing, bad = _values(df[c])
        missing = missing & keep_rows
        bad = bad & keep_rows
        for i in np.flatnonzero(bad):
            rejected.append(Rejected(src.path, lines[i], f"{c}: {df[c].iat[i][:40]!r} is not a number"))
        good = keep_rows & ~missing & ~bad
        acc.records += int(good.sum())
        acc.missing += int(missing.sum())
        acc.rejected += int(bad.sum())
        idx = np.flatnonzero(good)
        parts.append(_table(ts_ms[idx], [ent[i] for i in idx],
                            [df["uuid"].iat[i] for i in idx] if "uuid" in df.columns else [None] * len(idx),
                            [df["name"].iat[i] for i in idx] if "name" in df.columns else [None] * len(idx),
                            np.full(len(idx), fid, "int32"), [c] * len(idx), nums[idx] * factor, opts.host))
    samples = pa.concat_tables(parts) if parts else SAMPLE_SCHEMA.empty_table()
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=samples, rejected=rejected, meta=meta)


def parse_dmon(src: Source, opts: ParseOptions) -> ParseResult:
    header: list[str] | None = None
    rejected: list[Rejected] = []
    recs: list[tuple[int, list[str], bool, tuple[str, ...]]] = []
    new_header = False
    for n, raw in src.lines():
        line = raw.strip()
        if line.startswith("#"):
            toks = line.lstrip("#").split()
            low = [t.lower() for t in toks]
            if "gpu" in low and any(t in F.SMI_DMON for t in low):
                header = low
                new_header = True
            continue
        if not line or not line[0].isdigit():
            continue  # prompts, fences, prose
        if header is None:
            rejected.append(Rejected(src.path, n, "nvidia-smi dmon row before any '# gpu ...' header"))
            continue
        tokens = line.split()
        if len(tokens) != len(header):
            rejected.append(Rejected(src.path, n, f"{len(tokens)} values, header has {len(header)}"))
            continue
        recs.append((n, tokens, new_header, tuple(header)))
        new_header = False
    if header is None:
        raise InputError(src.path, "no nvidia-smi dmon header ('# gpu pwr ...')", "capture the header lines too")
    ent = [r[1][r[3].index("gpu")] for r in recs]
    ticks = _ticks(ent, [r[2] for r in recs])
    interval_ms = round(opts.interval_s * 1000)
    start = default_start_ms(src, opts, int(ticks.max()) + 1 if len(ticks) else 0, opts.interval_s)
    ts_ms = start + ticks * interval_ms
    dated = [i for i, r in enumerate(recs) if "date" in r[3] and "time" in r[3]]
    if dated:
        text = [recs[i][1][recs[i][3].index("date")] + " " + recs[i][1][recs[i][3].index("time")] for i in dated]
        stamps = pd.to_datetime(pd.Series(text), format="%Y%m%d %H:%M:%S", errors="coerce", utc=True)
        has = stamps.notna().to_numpy()
        ms = stamps.dt.tz_localize(None).astype("datetime64[ms]").to_numpy().astype("int64")
        ts_ms[np.asarray(dated)[has]] = ms[has]
    acc = InputAccounting(src.path, "nvidia-smi-dmon", rejected=len(rejected))
    parts = []
    for hdr in dict.fromkeys(r[3] for r in recs):
        sel = np.array([r[3] == hdr for r in recs], dtype=bool)
        parts += _dmon_columns(src, opts, [r for r, k in zip(recs, sel, strict=True) if k], hdr,
                               ts_ms[sel], [e for e, k in zip(ent, sel, strict=True) if k], acc, rejected)
    samples = pa.concat_tables(parts) if parts else SAMPLE_SCHEMA.empty_table()
    rejected.sort(key=lambda r: r.line or 0)
    meta = {"ticks": int(ticks.max()) + 1 if len(ticks) else 0, "columns": header, "rows": len(recs)}
    return ParseResult(accounting=acc, samples=samples, rejected=rejected, meta=meta)


def _dmon_columns(src: Source, opts: ParseOptions, recs: list[tuple[int, list[str], bool, tuple[str, ...]]],
                  header: tuple[str, ...], ts_ms: np.ndarray, ent: list[str], acc: InputAccounting,
                  rejected: list[Rejected]) -> list[pa.Table]:
    parts = []
    for j, col in enumerate(header):
        if col not in F.SMI_DMON:
            continue
        fid, factor = F.SMI_DMON[col]
        nums, missing, bad = _values(pd.Series([r[1][j] for r in recs], dtype="object"))
        if col in ("rxpci", "txpci"):
            glitch = ~missing & ~bad & (nums > PCIE_MAX_MBS)
            for i in np.flatnonzero(glitch):
                rejected.append(Rejected(src.path, recs[i][0], f"{col} {recs[i][1][j]} MB/s exceeds any PCIe link "
                                                               f"({PCIE_MAX_MBS:g} MB/s): glitch"))
            bad = bad | glitch
        for i in np.flatnonzero(bad & (nums != nums)):
            rejected.append(Rejected(src.path, recs[i][0], f"{col}: {recs[i][1][j][:40]!r} is not a number"))
        good = ~missing & ~bad
        acc.records += int(good.sum())
        acc.missing += int(missing.sum())
        acc.rejected += int(bad.sum())
        idx = np.flatnonzero(good)
        parts.append(_table(ts_ms[idx], [ent[i] for i in idx], [None] * len(idx), [None] * len(idx),
                            np.full(len(idx), fid, "int32"), [col] * len(idx), nums[idx] * factor, opts.host))
    return parts
