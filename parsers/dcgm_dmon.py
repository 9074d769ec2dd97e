"""``dcgmi dmon`` text (DCGM 1.x/2.x ``# Entity``, 3.x ``#Entity``, 4.x wider columns).

Rules (see the corpus FORMATS.md §1):

* A header line ``#Entity``/``# Entity`` names the columns by dmon short name (``GRACT``); the
  units row (``ID``/``Id``) is skipped. Headers repeat every 14 ticks; a new header may change
  the columns. A shell command ``dcgmi dmon ... -e 1001,1004`` also announces the columns, which
  lets rows pasted without their header (seen in the corpus) be read.
* Data rows are split on whitespace and values are taken **from the right** (one per column);
  what is left is the entity: ``GPU 0``, ``GPU-I 1``, ``GPU-CI 2``, ``GPU 0 LINK 3``,
  ``Switch 0``, ``CPU Core 5``... Fixed widths are never used.
* ``N/A``, ``N/W`` and DCGM blank sentinels are missing; a value that is not a number (hand
  annotations like ``38735656050(36.07GB/s)``) is rejected with its line.
* ``Error ...`` lines are kept in ``meta["errors"]``; a file whose only content is an error
  raises :class:`InputError`. ``dmon was stopped ...`` (Ctrl-C trailer), prompts, Markdown fences,
  ``...`` elisions and prose are skipped.
* No timestamps in dmon output: a tick is one block of entity rows (a new tick starts when an
  entity repeats); tick *k* is stamped ``start + k * ParseOptions.interval_s`` with ``start`` =
  ``ParseOptions.start`` or the file's mtime minus ``n_ticks * interval``. Ticks count on across
  several ``dcgmi dmon`` runs pasted in one file. A leading wall-clock prefix added by a wrapper
  (``2024-05-01 12:00:00`` / ``2024-05-01T12:00:00Z`` / epoch seconds) is used as the timestamp.
* Entities -> sample columns: ``GPU n`` -> gpu ``n``; ``GPU-I n`` -> mig ``n`` with gpu = the
  ``GPU`` row seen before it in the same tick (dmon lists GPUs then their instances), else null;
  ``GPU-CI n`` -> mig ``ci<n>``; ``GPU g LINK l`` -> gpu ``g``, field ``<SHORT>[link l]``; other
  entities (``Switch 0``, ``CPU 1``) -> gpu ``"Switch 0"``. host = ``ParseOptions.host``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from parsers import dcgm_fields as F
from parsers.model import SAMPLE_SCHEMA, InputAccounting, InputError, ParseResult, Rejected
from parsers.prom_text import default_start_ms
from parsers.source import ParseOptions, Source

FORMAT = "dcgm-dmon"
_HEADER = re.compile(r"^\s*#\s?Entity\b(.*)$")
_UNITS = re.compile(r"^\s*(ID|Id)\b")
_ENTITY = re.compile(
    r"^(?P<kind>GPU-I|GPU-CI|GPU|Switch|CPU Core|CPU|CX|vGPU|SW)\s+(?P<id>\d+)(?:\s+LINK\s+(?P<link>\d+))?$"
)
_ROW_START = re.compile(r"^\s*(GPU-I|GPU-CI|GPU|Switch|CPU Core|CPU|CX|vGPU|SW)\s+\d+\b")
_COMMAND = re.compile(r"dcgmi\s+dmon\b.*?\s-e\s+([0-9][0-9,\s]*[0-9])")
_STAMP = re.compile(
    r"^\s*(?P<ts>\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?|\d{10}(?:\.\d+)?)\s+"
    r"(?=(?:GPU|GPU-I|GPU-CI|Switch|CPU|CX|vGPU|SW)\s+\d)"
)
_MISSING = frozenset({"N/A", "N/W", "n/a"})


def _parse_stamp(text: str) -> int:
    if re.fullmatch(r"\d{10}(?:\.\d+)?", text):
        return round(float(text) * 1000)
    ts = pd.Timestamp(text)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value // 1_000_000)


def _expand(colsets: list[list[tuple[int | None, str]]], r_set: np.ndarray, r_suffix: list[str]) -> dict:
    """Per-cell arrays for rows laid out flat, k values per row (k = that row's header width).

    ``row`` (row index), ``fid`` (-1 = unknown column), ``unknown``, ``short`` (column name) and
    ``field`` (``short + suffix``, a string array).
    """
    widths = np.array([len(c) for c in colsets], dtype="int64")
    offs = np.concatenate([[0], np.cumsum(widths)])
    g_fid = np.array([-1 if f is None else f for c in colsets for f, _ in c], dtype="int64")
    g_short = [t for c in colsets for _, t in c]
    sets = np.asarray(r_set, dtype="int64")
    k = widths[sets] if len(sets) else np.zeros(0, "int64")
    row = np.repeat(np.arange(len(sets)), k)
    starts = np.concatenate([[0], np.cumsum(k)])[:-1]
    gcol = offs[sets][row] + (np.arange(len(row)) - starts[row]) if len(row) else np.zeros(0, "int64")
    suf_codes, suf_uniq = pd.factorize(pd.Series(r_suffix, dtype="object"))
    key = gcol * max(len(suf_uniq), 1) + np.asarray(suf_codes, dtype="int64")[row]
    present = np.zeros(int(key.max()) + 1 if len(key) else 1, dtype=bool)
    present[key] = True
    ukey = np.flatnonzero(present)
    inv = (np.cumsum(present) - 1)[key]
    names = [g_short[int(u) // max(len(suf_uniq), 1)] + str(suf_uniq[int(u) % max(len(suf_uniq), 1)])
             for u in ukey]
    fid = g_fid[gcol] if len(gcol) else np.zeros(0, "int64")
    field = pa.DictionaryArray.from_arrays(pa.array(inv.astype("int32")), pa.array(names, pa.string()))
    return {"row": row, "fid": fid, "unknown": fid < 0, "short": [g_short[int(g)] for g in gcol[fid < 0]],
            "field": field.cast(pa.string())}


_FAST = r"^ *(?:GPU|GPU-I|GPU-CI) +[0-9]+(?: +[!-~]+)* *$"  # ASCII-space data rows, vectorized path
_NUMERIC = r"^-?[0-9]+(?:\.[0-9]+)?$"  # values pyarrow casts exactly like pandas.to_numeric


class _Rows:
    """Accepted data rows in any order (sorted by line at the end); values flat, in Arrow chunks."""

    def __init__(self) -> None:
        self.colsets: list[list[tuple[int | None, str]]] = []
        self.entities: dict[str, int] = {}
        self._colset_of: dict[tuple[tuple[int | None, str], ...], int] = {}
        self.line: list[np.ndarray] = []
        self.stamp: list[np.ndarray] = []
        self.cset: list[np.ndarray] = []
        self.ent: list[np.ndarray] = []
        self.voff: list[np.ndarray] = []  # offset of the row's first value in the concatenated values
        self.vals: list[pa.Array] = []
        self.nvals = 0

    def colset(self, cols: list[tuple[int | None, str]]) -> int:
        """Index of a column set (a re-printed header gives the same index)."""
        key = tuple(cols)
        if key not in self._colset_of:
            self._colset_of[key] = len(self.colsets)
            self.colsets.append(cols)
        return self._colset_of[key]

    def ent_id(self, name: str) -> int:
        return self.entities.setdefault(name, len(self.entities))

    def add(self, line: np.ndarray, stamp: np.ndarray, cset: int, ent: np.ndarray, k: int, vals: pa.Array) -> None:
        self.line.append(line)
        self.stamp.append(stamp)
        self.cset.append(np.full(len(line), cset, dtype="int64"))
        self.ent.append(ent)
        self.voff.append(self.nvals + k * np.arange(len(line), dtype="int64"))
        self.vals.append(vals)
        self.nvals += len(vals)


def _short(path: str, n: int, ntok: int, k: int, rejected: list[Rejected]) -> int:
    """Rejects a row with the wrong token count; returns the extra rejected samples."""
    rejected.append(Rejected(
        path, n, f"dmon row has {ntok} tokens; expected an entity and {k} values ({k} samples rejected)"))
    return max(k - 1, 0)


def _slow_row(path: str, n: int, line: str, stamp: int, cset: int | None, rows: _Rows,
              rejected: list[Rejected]) -> int:
    """One data row the per-line way (``line`` stripped, prefixes removed); returns extra rejected."""
    tokens = line.split()
    if cset is None:
        rejected.append(Rejected(path, n, "dmon data row before any '#Entity' header: columns unknown"))
        return 0
    k = len(rows.colsets[cset])
    ent_tokens, values = tokens[:-k] if k else tokens, tokens[-k:] if k else []
    entity = " ".join(ent_tokens)
    if len(tokens) <= k or _ENTITY.match(entity) is None:
        return _short(path, n, len(tokens), k, rejected)
    rows.add(np.array([n]), np.array([stamp]), cset, np.array([rows.ent_id(entity)]), k,
             pa.array(values, pa.string()))
    return 0


def _fast_rows(path: str, lines: pa.Array, numbers: np.ndarray, cset: int, rows: _Rows,
               rejected: list[Rejected]) -> int:
    """ASCII data rows sharing one column set, split at once (values from the right)."""
    k = len(rows.colsets[cset])
    parts = pc.ascii_split_whitespace(pc.ascii_trim_whitespace(lines), max_splits=k, reverse=True)
    lens = pc.list_value_length(parts).to_numpy(zero_copy_only=False)
    full = lens == k + 1
    ent_d = pc.dictionary_encode(pc.list_element(parts.filter(pa.array(full)), 0))
    codes = ent_d.indices.to_numpy(zero_copy_only=False).astype("int64")
    uniq = [" ".join(str(e).split()) for e in ent_d.dictionary.to_pylist()]
    u_ok = np.array([_ENTITY.match(e) is not None for e in uniq] + [False], dtype=bool)
    u_id = np.array([rows.ent_id(e) for e in uniq] + [-1], dtype="int64")
    code_all = np.full(len(lens), len(uniq), dtype="int64")
    code_all[full] = codes
    ok = u_ok[code_all]
    extra = 0
    for i in np.flatnonzero(~ok):
        extra += _short(path, int(numbers[i]), len(str(lines[int(i)]).split()), k, rejected)
    good = np.flatnonzero(ok)
    if len(good) == 0:
        return extra
    flat = pc.list_flatten(parts.filter(pa.array(ok)))
    pos = (np.arange(len(good))[:, None] * (k + 1) + np.arange(1, k + 1)[None, :]).ravel()
    rows.add(numbers[good], np.full(len(good), -1, dtype="int64"), cset, u_id[code_all[good]], k,
             flat.take(pa.array(pos)))
    return extra


def _ticks(ent: np.ndarray, reset: np.ndarray) -> np.ndarray:
    """Tick-start flags: the first row after a header, or an entity repeating within the current tick."""
    start = reset.copy()
    if len(ent) == 0:
        return start
    start[0] = True
    lastpos = [-2] * (int(ent.max()) + 1)
    s = -1
    r: int
    e: int
    for r, (e, rs) in enumerate(zip(ent.tolist(), reset.tolist(), strict=True)):
        if rs or lastpos[e] >= s:
            s = r
            start[r] = True
        lastpos[e] = r
    return start


SEGMENT_LINES = 500_000  # lines decoded and split at once: bounded memory, still vectorized


def _segments(src: Source) -> Iterator[tuple[int, list[str]]]:
    """The file as ``(index of the first line, lines)`` runs of at most ``SEGMENT_LINES``, streamed."""
    buf: list[str] = []
    first = 0
    for n, line in src.lines():
        if len(buf) >= SEGMENT_LINES:
            yield first, buf
            first, buf = n - 1, []
        buf.append(line)
    if buf:
        yield first, buf


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    path = src.path
    rejected: list[Rejected] = []
    errors: list[str] = []
    rows = _Rows()
    headers = 0
    extra_rejected = 0  # a rejected row is one listing but k samples
    cset: int | None = None
    ev_line: list[int] = [-1]  # 0-based line index where a column set takes effect (header/command)
    ev_set: list[int] = [-1]  # -1: none
    for first, text_lines in _segments(src):
        arr = pa.array(text_lines, pa.string())
        fast = pc.match_substring_regex(arr, _FAST).to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(~fast).tolist():
            n = first + i + 1
            line = text_lines[i].strip()
            if not line:
                continue
            m = _HEADER.match(line)
            if m:
                headers += 1
                cset = rows.colset([(F.field_id(t), t) for t in m.group(1).split()])
                ev_line.append(first + i)
                ev_set.append(cset)
                continue
            cm = _COMMAND.search(line)
            if cm and not _ROW_START.match(line):
                ids = [int(x) for x in re.split(r"[,\s]+", cm.group(1)) if x]
                cset = rows.colset([(f, F.BY_ID[f].short if f in F.BY_ID else str(f)) for f in ids])
                ev_line.append(first + i)
                ev_set.append(cset)
                continue
            if _UNITS.match(line) and not _ROW_START.match(line):
                continue
            if line.startswith(("Error", "error")) or line.startswith("ERROR"):
                errors.append(line)
                continue
            stamp = -1
            sm = _STAMP.match(line)
            if sm:
                try:
                    stamp = _parse_stamp(sm.group("ts"))
                except ValueError:
                    stamp = -1
                line = line[sm.end():]
            if line.startswith(">"):
                line = line.lstrip("> ").strip()
            if not _ROW_START.match(line):
                continue  # prompts, fences, '...', prose, 'dmon was stopped ...'
            extra_rejected += _slow_row(path, n, line, stamp, cset, rows, rejected)
        # fast rows: column set in effect = the latest header/command before the line
        f_idx = np.flatnonzero(fast)
        evl, evs = np.asarray(ev_line, dtype="int64"), np.asarray(ev_set, dtype="int64")
        f_set = evs[np.searchsorted(evl, first + f_idx, side="right") - 1]
        widths = np.array([len(c) for c in rows.colsets] + [0], dtype="int64")
        for cs in np.unique(f_set).tolist():
            sel = f_idx[f_set == cs]
            if cs >= 0 and widths[cs] > 0:
                extra_rejected += _fast_rows(path, arr.take(pa.array(sel)), first + sel + 1, cs, rows, rejected)
            else:
                for i in sel.tolist():
                    extra_rejected += _slow_row(path, first + i + 1, text_lines[i].strip(), -1,
                                                None if cs < 0 else cs, rows, rejected)
    columns = None if cset is None else rows.colsets[cset]
    evl = np.asarray(ev_line, dtype="int64")
    widths = np.array([len(c) for c in rows.colsets] + [0], dtype="int64")
    # rows in line order
    cat = (lambda xs: np.concatenate(xs) if xs else np.zeros(0, "int64"))  # noqa: E731
    r_line0 = cat(rows.line)
    order = np.argsort(r_line0, kind="stable")
    r_line = r_line0[order]
    r_set = cat(rows.cset)[order]
    r_ent = cat(rows.ent)[order]
    r_stamp = cat(rows.stamp)[order]
    r_voff = cat(rows.voff)[order]
    n_rows = len(r_line)
    # ticks: a header/command line before a row resets the tick
    ev_arr = evl[1:] + 1  # 1-based line numbers of header/command lines
    after = np.searchsorted(ev_arr, r_line, side="left")
    reset = np.zeros(n_rows, dtype=bool)
    if n_rows:
        reset[1:] = after[1:] != after[:-1]
    start = _ticks(r_ent, reset)
    r_tick = np.cumsum(start) - 1
    tick = int(r_tick[-1]) if n_rows else -1
    idx = np.arange(n_rows)
    tstart = np.maximum.accumulate(np.where(start, idx, 0)) if n_rows else idx
    names = list(rows.entities)
    u_ems = [_ENTITY.match(e) for e in names]
    u_gpu = np.array([None] * len(names), dtype=object)
    u_mig = np.array([None] * len(names), dtype=object)
    u_suf = np.array([""] * len(names), dtype=object)
    u_isgpu = np.zeros(len(names), dtype=bool)
    u_inst = np.zeros(len(names), dtype=bool)  # GPU-I / GPU-CI: gpu from the tick's last GPU row
    u_eid = np.array([""] * len(names), dtype=object)
    for j, em in enumerate(u_ems):
        if em is None:
            continue
        kind, eid, link = em.group("kind"), em.group("id"), em.group("link")
        u_eid[j] = eid
        if kind == "GPU":
            u_gpu[j] = eid
            u_isgpu[j] = link is None
            if link is not None:
                u_suf[j] = f"[link {link}]"
        elif kind in ("GPU-I", "GPU-CI"):
            u_inst[j] = True
            u_mig[j] = eid if kind == "GPU-I" else f"ci{eid}"
        else:
            u_gpu[j] = f"{kind} {eid}" + (f" LINK {link}" if link else "")
    gpos = np.maximum.accumulate(np.where(u_isgpu[r_ent], idx, -1)) if n_rows else idx
    g_gpu = u_gpu[r_ent]
    inst = u_inst[r_ent] & (gpos >= tstart)
    g_gpu[inst] = u_eid[r_ent[gpos[inst]]]
    r_gpu, r_mig, r_suffix = g_gpu, u_mig[r_ent], u_suf[r_ent]
    k_row = widths[r_set] if n_rows else np.zeros(0, "int64")
    used, r_used = np.unique(r_set, return_inverse=True)  # column sets that have rows
    cells = _expand([rows.colsets[int(u)] for u in used], r_used, r_suffix.tolist())
    for j, ci in enumerate(np.flatnonzero(cells["unknown"])):
        rejected.append(Rejected(path, int(r_line[cells["row"][ci]]), f"unknown dmon column {cells['short'][j]!r}"))
    known = ~cells["unknown"]
    row = cells["row"][known]
    all_vals = pa.concat_arrays(rows.vals) if rows.vals else pa.array([], pa.string())
    vstarts = np.concatenate([[0], np.cumsum(k_row)])[:-1]
    vidx = r_voff[cells["row"]] + (np.arange(len(cells["row"])) - vstarts[cells["row"]])
    vals = all_vals.take(pa.array(vidx[known], pa.int64()))
    meta: dict[str, object] = {"errors": errors, "ticks": tick + 1, "headers": headers, "rows": n_rows,
                               "interval_s": float(opts.interval_s)}
    if len(vals) == 0 and not rejected:
        if errors:
            raise InputError(path, f"dcgmi dmon printed no samples, only: {errors[0][:160]}",
                             "fix the DCGM error (profiling busy or unsupported?) and capture again")
        if headers == 0:
            raise InputError(path, "no dcgmi dmon header or data rows", "pass the output of 'dcgmi dmon -e ...'")
    if headers == 0 and columns is None and rejected and len(vals) == 0:
        raise InputError(path, "dcgmi dmon rows without the '#Entity' header line: field IDs unknown",
                         "keep the two header lines dcgmi dmon prints (or the 'dcgmi dmon -e ...' command)")
    lines_arr = r_line[row]
    missing = pc.is_in(vals, pa.array(sorted(_MISSING))).to_numpy(zero_copy_only=False)
    simple = pc.match_substring_regex(vals, _NUMERIC).to_numpy(zero_copy_only=False)
    nums = np.full(len(vals), np.nan)
    if simple.any():
        nums[simple] = pc.cast(vals.filter(pa.array(simple)), pa.float64()).to_numpy(zero_copy_only=False)
    rest = np.flatnonzero(~simple & ~missing)
    if len(rest):
        other_vals = pd.Series(vals.take(pa.array(rest)).to_pylist(), dtype="object")
        nums[rest] = pd.to_numeric(other_vals, errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(nums) & ~missing
    for bi in np.flatnonzero(bad):
        rejected.append(Rejected(path, int(lines_arr[bi]), f"value {str(vals[int(bi)])[:40]!r} is not a number"))
    sentinel = F.sentinel_mask(nums)
    missing = missing | sentinel
    good = ~missing & ~bad
    fid_arr = cells["fid"][known].astype("int32")
    factor = np.ones(len(nums))
    for f_id, fac in F.TO_CANONICAL.items():
        factor[fid_arr == f_id] = fac
    acc = InputAccounting(path, FORMAT, records=int(good.sum()), missing=int(missing.sum()),
                          rejected=len(rejected) + extra_rejected)
    meta["sentinels"] = int(sentinel.sum())
    interval_ms = round(float(opts.interval_s) * 1000)
    start_ms = default_start_ms(src, opts, tick + 1, float(opts.interval_s))
    ticks = r_tick[row]
    stamps = r_stamp[row]
    ts = np.where(stamps >= 0, stamps, start_ms + ticks * interval_ms)[good]
    idx = np.flatnonzero(good)
    nrow = len(idx)

    take = pa.array(row[idx], pa.int64())

    def pick(xs: np.ndarray) -> pa.Array:
        return pa.array(xs, pa.string()).take(take) if nrow else pa.array([], pa.string())

    none = pa.nulls(nrow, pa.string())
    table = pa.table({
        "timestamp": pa.array(ts.astype("datetime64[ms]"), pa.timestamp("ms")).cast(
            pa.timestamp("ms", tz="UTC")),
        "host": pa.array([opts.host] * nrow, pa.string()),
        "gpu": pick(r_gpu),
        "uuid": none,
        "model": none,
        "mig": pick(r_mig),
        "mig_profile": none,
        "field_id": pa.array(fid_arr[good], pa.int32()),
        "field": cells["field"].take(pa.array(np.flatnonzero(known)[idx], pa.int64())),
        "value": pa.array((nums * factor)[good], pa.float64()),
        "namespace": none,
        "pod": none,
        "container": none,
        "job": none,
    }).cast(SAMPLE_SCHEMA)
    meta["start"] = datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat()
    rejected.sort(key=lambda r: r.line or 0)
    return ParseResult(accounting=acc, samples=table, rejected=rejected, meta=meta)
