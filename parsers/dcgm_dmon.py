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
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa

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


def _expand(colsets: list[list[tuple[int | None, str]]], r_set: list[int], r_suffix: list[str]) -> dict:
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
    ukey, inv = np.unique(key, return_inverse=True)
    names = [g_short[int(u) // max(len(suf_uniq), 1)] + str(suf_uniq[int(u) % max(len(suf_uniq), 1)])
             for u in ukey]
    fid = g_fid[gcol] if len(gcol) else np.zeros(0, "int64")
    field = pa.DictionaryArray.from_arrays(pa.array(inv.astype("int32")), pa.array(names, pa.string()))
    return {"row": row, "fid": fid, "unknown": fid < 0, "short": [g_short[int(g)] for g in gcol[fid < 0]],
            "field": field.cast(pa.string())}


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    path = src.path
    rejected: list[Rejected] = []
    errors: list[str] = []
    columns: list[tuple[int | None, str]] | None = None  # (field id, short name) per column
    tick = -1
    seen: set[str] = set()
    last_gpu: str | None = None
    headers = 0
    n_rows = 0
    extra_rejected = 0  # a rejected row is one listing but k samples
    # collected per data row (values: k per row, flat); cells are expanded with numpy afterwards
    colsets: list[list[tuple[int | None, str]]] = []
    colset_of: dict[int, int] = {}  # id(columns) -> index in colsets
    r_tick: list[int] = []
    r_stamp: list[int] = []
    r_gpu: list[str | None] = []
    r_mig: list[str | None] = []
    r_suffix: list[str] = []
    r_line: list[int] = []
    r_set: list[int] = []
    c_val: list[str] = []
    for n, raw in src.lines():
        line = raw.strip()
        if not line:
            continue
        m = _HEADER.match(line)
        if m:
            headers += 1
            columns = [(F.field_id(t), t) for t in m.group(1).split()]
            seen = set()  # a header (first or re-printed) always starts a new tick
            continue
        cm = _COMMAND.search(line)
        if cm and not _ROW_START.match(line):
            ids = [int(x) for x in re.split(r"[,\s]+", cm.group(1)) if x]
            columns = [(i, F.BY_ID[i].short if i in F.BY_ID else str(i)) for i in ids]
            seen = set()
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
        tokens = line.split()
        if columns is None:
            rejected.append(Rejected(path, n, "dmon data row before any '#Entity' header: columns unknown"))
            continue
        k = len(columns)
        ent_tokens, values = tokens[:-k] if k else tokens, tokens[-k:] if k else []
        em = _ENTITY.match(" ".join(ent_tokens))
        if len(tokens) <= k or em is None:
            rejected.append(Rejected(
                path, n, f"dmon row has {len(tokens)} tokens; expected an entity and {k} values "
                f"({k} samples rejected)"))
            extra_rejected += max(k - 1, 0)
            continue
        entity = " ".join(ent_tokens)
        if entity in seen:
            seen = set()
        if not seen:
            tick += 1
            last_gpu = None
        seen.add(entity)
        n_rows += 1
        kind, eid, link = em.group("kind"), em.group("id"), em.group("link")
        gpu: str | None
        mig: str | None = None
        suffix = ""
        if kind == "GPU":
            gpu = eid
            if link is not None:
                suffix = f"[link {link}]"
            else:
                last_gpu = eid
        elif kind == "GPU-I":
            gpu, mig = last_gpu, eid
        elif kind == "GPU-CI":
            gpu, mig = last_gpu, f"ci{eid}"
        else:
            gpu = f"{kind} {eid}" + (f" LINK {link}" if link else "")
        cs = colset_of.get(id(columns))
        if cs is None:
            cs = colset_of[id(columns)] = len(colsets)
            colsets.append(columns)
        r_tick.append(tick)
        r_stamp.append(stamp)
        r_gpu.append(gpu)
        r_mig.append(mig)
        r_suffix.append(suffix)
        r_line.append(n)
        r_set.append(cs)
        c_val.extend(values)
    cells = _expand(colsets, r_set, r_suffix)
    for j, i in enumerate(np.flatnonzero(cells["unknown"])):
        rejected.append(Rejected(path, r_line[cells["row"][i]], f"unknown dmon column {cells['short'][j]!r}"))
    known = ~cells["unknown"]
    row = cells["row"][known]
    c_val = [v for v, ok in zip(c_val, known.tolist(), strict=True) if ok] if not known.all() else c_val
    meta: dict[str, object] = {"errors": errors, "ticks": tick + 1, "headers": headers, "rows": n_rows,
                               "interval_s": float(opts.interval_s)}
    if not c_val and not rejected:
        if errors:
            raise InputError(path, f"dcgmi dmon printed no samples, only: {errors[0][:160]}",
                             "fix the DCGM error (profiling busy or unsupported?) and capture again")
        if headers == 0:
            raise InputError(path, "no dcgmi dmon header or data rows", "pass the output of 'dcgmi dmon -e ...'")
    if headers == 0 and columns is None and rejected and not c_val:
        raise InputError(path, "dcgmi dmon rows without the '#Entity' header line: field IDs unknown",
                         "keep the two header lines dcgmi dmon prints (or the 'dcgmi dmon -e ...' command)")
    vals = pd.Series(c_val, dtype="object")
    lines_arr = np.asarray(r_line, dtype="int64")[row]
    missing = vals.isin(_MISSING).to_numpy()
    nums = pd.to_numeric(vals.where(~missing), errors="coerce").to_numpy(dtype="float64")
    bad = np.isnan(nums) & ~missing
    for i in np.flatnonzero(bad):
        rejected.append(Rejected(path, int(lines_arr[i]), f"value {c_val[i][:40]!r} is not a number"))
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
    ticks = np.asarray(r_tick, dtype="int64")[row]
    stamps = np.asarray(r_stamp, dtype="int64")[row]
    ts = np.where(stamps >= 0, stamps, start_ms + ticks * interval_ms)[good]
    idx = np.flatnonzero(good)
    nrow = len(idx)

    take = pa.array(row[idx], pa.int64())

    def pick(xs: list[str | None]) -> pa.Array:
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
