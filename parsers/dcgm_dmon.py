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

How (bounded memory, vectorized): the file is read in blocks of whole lines (:data:`BLOCK_BYTES`).
In a block, newlines and tokens are found with numpy over the bytes (``parsers/dmon_scan.py``,
checked against a per-line reference by hypothesis in tests/test_dmon_scan.py); printable-ASCII lines whose
first tokens are ``GPU``/``GPU-I``/``GPU-CI`` and a number, with one value per header column, are
the fast rows (values sliced out of the block with one Arrow ``take``, cast at once). Every other
line goes through the per-line rules above. Column sets, entities, header events and the tick in
progress are carried from block to block, so nothing depends on where a block is cut.
:func:`parse_batches` yields one sample table per block.
"""

from __future__ import annotations

import io
import re
from collections.abc import Generator, Iterator
from dataclasses import dataclass
from datetime import datetime, timezone

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from rooftop.parsers import dcgm_fields as F
from rooftop.parsers.dmon_scan import FAST_KINDS, KIND_STRIDE, MAX_ID_DIGITS, scan
from rooftop.parsers.model import (
    SAMPLE_SCHEMA,
    InputAccounting,
    InputError,
    ParseResult,
    Rejected,
    drain_batches,
)
from rooftop.parsers.prom_text import default_start_ms
from rooftop.parsers.source import ParseOptions, Source

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
_NUMERIC = r"^-?[0-9]+(?:\.[0-9]+)?$"  # values pyarrow casts exactly like pandas.to_numeric

BLOCK_BYTES = 4 << 20  # bytes read and processed at once: bounded memory, still vectorized
_NONE = -1  # "no row" in the tick / GPU-row bookkeeping (global row indices are >= 0)


def _parse_stamp(text: str) -> int:
    if re.fullmatch(r"\d{10}(?:\.\d+)?", text):
        return round(float(text) * 1000)
    ts = pd.Timestamp(text)
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return int(ts.value // 1_000_000)


def _crlf(data: bytes) -> bytes:
    return data.replace(b"\r\n", b"\n").replace(b"\r", b"\n")


def _blocks(src: Source) -> Iterator[bytes]:
    """The file as blocks of whole lines in UTF-8, ``\\n`` line ends only (CRLF and a lone CR
    end a line, as in :meth:`Source.lines`), each without the newline after its last line.
    Lines are numbered on across blocks: a block of ``m`` newlines holds ``m + 1`` lines."""
    if src.encoding != "utf-8":  # UTF-16: decoded (and newlines translated) by the text layer
        with src.open_bytes() as raw:
            raw.seek(src.bom_len)
            stream = io.TextIOWrapper(raw, encoding=src.encoding, errors="replace", newline=None)
            rest = ""
            while text := stream.read(max(BLOCK_BYTES // 2, 1)):
                chars = rest + text
                cut = chars.rfind("\n")
                if cut < 0:
                    rest = chars
                    continue
                rest = chars[cut + 1 :]
                yield chars[:cut].encode("utf-8", "replace")
            if rest:
                yield rest.encode("utf-8", "replace")
        return
    for view in src.line_blocks(BLOCK_BYTES):
        block = bytes(view)
        if b"\r" in block:
            # a final "\r" is the CR of a CRLF whose "\n" ended the block, or a lone CR ending the file
            block = _crlf(block[:-1] if block.endswith(b"\r") else block)
        yield block


@dataclass
class _Part:
    """A block's samples before their times are known: every column but ``timestamp``, and per
    sample its tick number and wall-clock stamp (ms; -1: none; ``None``: no stamped row)."""

    columns: dict[str, pa.Array]
    tick: np.ndarray
    stamp: np.ndarray | None

    def table(self, start_ms: int, interval_ms: int) -> pa.Table:
        ts = start_ms + self.tick * interval_ms
        if self.stamp is not None:
            ts = np.where(self.stamp >= 0, self.stamp, ts)
        cols = {"timestamp": pa.array(ts, pa.timestamp("ms", tz="UTC")), **self.columns}
        return pa.Table.from_arrays([cols[n] for n in SAMPLE_SCHEMA.names], schema=SAMPLE_SCHEMA)


class _SlowRows:
    """Data rows read the per-line way (values as Python strings), in the order they are found."""

    def __init__(self) -> None:
        self.line: list[int] = []  # 0-based line index within the block
        self.stamp: list[int] = []
        self.cset: list[int] = []
        self.ent: list[int] = []
        self.k: list[int] = []
        self.vals: list[str] = []


class _Parser:
    """Everything carried from block to block, and the per-block work."""

    def __init__(self, path: str, host: str | None) -> None:
        self.path = path
        self.host = host
        self.rejected: list[Rejected] = []
        self.errors: list[str] = []
        self.extra_rejected = 0  # a rejected row is one listing but k samples
        self.headers = 0
        self.cset: int | None = None  # column set in effect
        self.colsets: list[list[tuple[int | None, str]]] = []
        self._colset_of: dict[tuple[tuple[int | None, str], ...], int] = {}
        self._header_sets: dict[tuple[str, ...], int] = {}
        self._col_fid = np.zeros(0, "int64")  # all column sets' columns, concatenated
        self._col_factor = np.zeros(0)
        self._scaled = False  # some column is scaled to canonical units
        self._col_names = pa.array([], pa.string())
        self._cs_off = np.zeros(1, "int64")  # first column of each set in the concatenation
        self._width = np.zeros(1, "int64")  # width of each set, and 0 for "no set" (-1)
        self.entities: dict[str, int] = {}
        self._fast_ent: dict[int, int] = {}  # fast-row entity key -> entity id
        self._e_gpu: list[str | None] = []
        self._e_mig: list[str | None] = []
        self._e_suf: list[str] = []
        self._e_isgpu: list[bool] = []
        self._e_inst: list[bool] = []
        self._e_cache: tuple[int, dict[str, np.ndarray | pa.Array]] = (-1, {})
        self._lastpos = np.zeros(0, "int64")  # per entity: global index of its latest row
        self.lines = 0  # lines in the blocks before this one
        self.rows = 0  # accepted rows so far
        self.events = 0  # header / command lines so far
        self._ev_at_last_row = 0
        self._tick_start = _NONE  # global row index where the tick in progress started
        self.ticks = 0
        self._last_gpu_row = _NONE
        self._last_gpu_ent = -1
        self.known = 0  # value cells of known columns
        self.records = 0
        self.missing = 0
        self.sentinels = 0

    # -- column sets and entities ------------------------------------------------------------
    def colset(self, cols: list[tuple[int | None, str]]) -> int:
        """Index of a column set (a re-printed header gives the same index)."""
        key = tuple(cols)
        if key not in self._colset_of:
            self._colset_of[key] = len(self.colsets)
            self.colsets.append(cols)
            # an ID that is no int32 (no DCGM field is) counts as an unknown column
            fid = np.array([-1 if f is None or not 0 <= f < 2**31 else f for f, _ in cols], dtype="int64")
            factor = np.array([F.canonical_factor(t) if f >= 0 else 1.0 for f, (_, t) in zip(fid, cols, strict=True)],
                              dtype="float64")  # by the column's name: a DCGM 4.6.1 SI field is converted
            self._cs_off = np.insert(self._cs_off, -1, len(self._col_fid))
            self._cs_off[-1] = len(self._col_fid) + len(cols)
            self._width = np.insert(self._width, -1, len(cols))
            self._col_fid = np.concatenate([self._col_fid, fid])
            self._col_factor = np.concatenate([self._col_factor, factor])
            self._scaled = bool((self._col_factor != 1.0).any())
            self._col_names = pa.concat_arrays([self._col_names, pa.array([t for _, t in cols], pa.string())])
        return self._colset_of[key]

    def ent_id(self, name: str) -> int:
        e = self.entities.get(name)
        if e is not None:
            return e
        e = self.entities[name] = len(self.entities)
        gpu = mig = None
        suf = ""
        isgpu = inst = False
        em = _ENTITY.match(name)
        if em is not None:
            kind, eid, link = em.group("kind"), em.group("id"), em.group("link")
            if kind == "GPU":
                gpu, isgpu = eid, link is None
                suf = f"[link {link}]" if link is not None else ""
            elif kind in ("GPU-I", "GPU-CI"):
                inst, mig = True, (eid if kind == "GPU-I" else f"ci{eid}")
            else:
                gpu = f"{kind} {eid}" + (f" LINK {link}" if link else "")
        self._e_gpu.append(gpu)
        self._e_mig.append(mig)
        self._e_suf.append(suf)
        self._e_isgpu.append(isgpu)
        self._e_inst.append(inst)
        self._lastpos = np.append(self._lastpos, _NONE)
        return e

    def _ent_arrays(self) -> dict[str, np.ndarray | pa.Array]:
        """Per-entity columns as arrays (rebuilt when entities were added)."""
        n, cached = self._e_cache
        if n != len(self.entities):
            sufs = ["", *sorted(set(self._e_suf) - {""})]  # code 0: no suffix
            cached = {
                "gpu": pa.array(self._e_gpu, pa.string()),
                "mig": pa.array(self._e_mig, pa.string()),
                "has_mig": np.array([m is not None for m in self._e_mig], dtype=bool),
                "isgpu": np.array(self._e_isgpu, dtype=bool),
                "inst": np.array(self._e_inst, dtype=bool),
                "suf": np.array([sufs.index(s) for s in self._e_suf], dtype="int64"),
                "suf_names": np.array(sufs, dtype=object),
            }
            self._e_cache = (len(self.entities), cached)
        return cached

    # -- rows read line by line --------------------------------------------------------------
    def _short(self, n: int, ntok: int, k: int) -> None:
        """Rejects a row with the wrong token count (one listing, k samples)."""
        self.rejected.append(Rejected(
            self.path, n, f"dmon row has {ntok} tokens; expected an entity and {k} values ({k} samples rejected)"))
        self.extra_rejected += max(k - 1, 0)

    def _slow_row(self, i: int, line: str, stamp: int, cset: int | None, slow: _SlowRows) -> None:
        """One data row the per-line way (``line`` stripped, prefixes removed)."""
        n = self.lines + i + 1
        tokens = line.split()
        if cset is None:
            self.rejected.append(Rejected(self.path, n, "dmon data row before any '#Entity' header: columns unknown"))
            return
        k = len(self.colsets[cset])
        ent_tokens, values = (tokens[:-k], tokens[-k:]) if k else (tokens, [])
        entity = " ".join(ent_tokens)
        if len(tokens) <= k or _ENTITY.match(entity) is None:
            self._short(n, len(tokens), k)
            return
        slow.line.append(i)
        slow.stamp.append(stamp)
        slow.cset.append(cset)
        slow.ent.append(self.ent_id(entity))
        slow.k.append(k)
        slow.vals.extend(values)

    def _other_line(self, i: int, text: str, slow: _SlowRows, ev_line: list[int], ev_set: list[int]) -> None:
        """A line that is not a fast row: header, command, units, error, noise, or a row."""
        line = text.strip()
        if not line:
            return
        m = _HEADER.match(line)
        if m:
            self.headers += 1
            names = tuple(m.group(1).split())
            cs = self._header_sets.get(names)  # dmon repeats its header every 14 ticks
            if cs is None:
                cs = self._header_sets[names] = self.colset([(F.field_id(t), t) for t in names])
            self.cset = cs
            ev_line.append(i)
            ev_set.append(self.cset)
            return
        cm = _COMMAND.search(line)
        if cm and not _ROW_START.match(line):
            ids = [int(x) for x in re.split(r"[,\s]+", cm.group(1)) if x]
            self.cset = self.colset([(f, F.BY_ID[f].short if f in F.BY_ID else str(f)) for f in ids])
            ev_line.append(i)
            ev_set.append(self.cset)
            return
        if _UNITS.match(line) and not _ROW_START.match(line):
            return
        if line.startswith(("Error", "error")) or line.startswith("ERROR"):
            self.errors.append(line)
            return
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
            return  # prompts, fences, '...', prose, 'dmon was stopped ...'
        self._slow_row(i, line, stamp, self.cset, slow)

    # -- one block ---------------------------------------------------------------------------
    def block(self, data: bytes, values: bool = True) -> _Part | None:
        """Parse one block of whole lines; ``values=False`` only follows rows and ticks."""
        sc = scan(data)  # lines, tokens, fast-row candidates (parsers/dmon_scan.py)
        nb = len(data)
        nl, n_lines, lstart, edges, tfirst, ntok = sc.nl, sc.n_lines, sc.lstart, sc.edges, sc.tfirst, sc.ntok
        n_tok = len(sc.tstart)
        ci, key = sc.cand, sc.key
        cand = np.zeros(n_lines, dtype=bool)
        cand[ci] = True
        # every other line, in order: headers and commands change the column set as they come
        cset0 = -1 if self.cset is None else self.cset
        slow = _SlowRows()
        ev_line: list[int] = []
        ev_set: list[int] = []
        lend = np.append(nl, nb)
        other = np.flatnonzero(~cand)
        for i, a, z in zip(other.tolist(), lstart[other].tolist(), lend[other].tolist(), strict=True):
            if a < z:
                self._other_line(i, data[a:z].decode("utf-8", "replace"), slow, ev_line, ev_set)
        ev_l = np.asarray(ev_line, dtype="int64")
        cs = np.asarray([cset0, *ev_set], dtype="int64")[np.searchsorted(ev_l, ci, side="right")]
        k = self._width[cs]
        fast = (k > 0) & (ntok[ci] == k + 2)
        demoted = ci[~fast]
        for i, c, a, z in zip(demoted.tolist(), cs[~fast].tolist(), lstart[demoted].tolist(), lend[demoted].tolist(),
                              strict=True):
            self._slow_row(i, data[a:z].decode("ascii").strip(), -1, None if c < 0 else c, slow)
        ci, key, cs, k = ci[fast], key[fast], cs[fast], k[fast]
        uk, inv = np.unique(key, return_inverse=True)
        ids = np.array([self._fast_id(int(u)) for u in uk.tolist()], dtype="int64")
        f_ent = ids[inv] if len(inv) else np.zeros(0, "int64")
        # rows of the block in line order; vbase/vstep locate their values in [tokens/gaps, slow values]
        n_rg = max(2 * n_tok - 1, 0) if len(ci) else 0
        if slow.line:
            s_k = np.asarray(slow.k, dtype="int64")
            line = np.concatenate([ci, np.asarray(slow.line, dtype="int64")])
            order = np.argsort(line, kind="stable")
            line = line[order]
            ent = np.concatenate([f_ent, np.asarray(slow.ent, dtype="int64")])[order]
            r_cs = np.concatenate([cs, np.asarray(slow.cset, dtype="int64")])[order]
            r_k = np.concatenate([k, s_k])[order]
            stamp = np.concatenate([np.full(len(ci), -1, "int64"), np.asarray(slow.stamp, dtype="int64")])[order]
            vbase = np.concatenate([2 * (tfirst[ci] + 2), n_rg + np.cumsum(s_k) - s_k])[order]
            vstep = np.concatenate([np.full(len(ci), 2, "int64"), np.ones(len(s_k), "int64")])[order]
        else:
            line, ent, r_cs, r_k = ci, f_ent, cs, k
            stamp = None
            vbase, vstep = 2 * (tfirst[ci] + 2), None
        self.lines += n_lines
        n = len(line)
        r_tick, gpu_ent = self._ticks(line, ent, ev_l)
        if not values or n == 0:
            return None
        # cells: k per row, in row order
        uniform = bool((r_cs == r_cs[0]).all())
        if uniform:
            kk = int(r_k[0])
            rowc = np.repeat(np.arange(n), kk)
            jc = np.tile(np.arange(kk), n)
            step = np.full((n, 1), 2, "int64") if vstep is None else vstep[:, None]
            vidx = (vbase[:, None] + step * np.arange(kk)[None, :]).ravel()
            gcol = jc + self._cs_off[r_cs[0]]
        else:
            rowc = np.repeat(np.arange(n), r_k)
            jc = np.arange(len(rowc)) - np.repeat(np.cumsum(r_k) - r_k, r_k)
            vidx = vbase[rowc] + (2 if vstep is None else vstep[rowc]) * jc
            gcol = self._cs_off[r_cs[rowc]] + jc
        fid = self._col_fid[gcol]
        unknown = fid < 0
        if unknown.any():
            names = self._col_names.to_pylist()
            abs_line = self.lines - n_lines + line + 1
            for c in np.flatnonzero(unknown).tolist():
                self.rejected.append(Rejected(self.path, int(abs_line[rowc[c]]), f"unknown dmon column {names[gcol[c]]!r}"))
            known = ~unknown
            rowc, gcol, vidx, fid = rowc[known], gcol[known], vidx[known], fid[known]
        rg = pa.StringArray.from_buffers(n_rg, pa.py_buffer(edges.astype("int32")), pa.py_buffer(data)) \
            if n_rg else pa.array([], pa.string())  # element 2t: token t; 2t + 1: the gap after it
        src_vals = pa.concat_arrays([rg, pa.array(slow.vals, pa.string())]) if slow.vals else rg
        vals = src_vals.take(pa.array(vidx, pa.int64()))
        missing = _missing(vals)
        nums = _to_float(vals, missing)
        bad = np.isnan(nums) & ~missing
        if bad.any():
            abs_line = self.lines - n_lines + line + 1
            for c in np.flatnonzero(bad).tolist():
                self.rejected.append(Rejected(self.path, int(abs_line[rowc[c]]),
                                              f"value {str(vals[c])[:40]!r} is not a number"))
        sentinel = F.sentinel_mask(nums)
        missing |= sentinel
        good = ~missing & ~bad
        self.known += len(vals)
        n_good = int(good.sum())
        self.records += n_good
        self.missing += int(missing.sum())
        self.sentinels += int(sentinel.sum())
        if n_good == 0:
            return None
        e = self._ent_arrays()
        if n_good < len(good) or not uniform or unknown.any():
            idx = np.flatnonzero(good)
            rowc, gcol, fid, nums = rowc[idx], gcol[idx], fid[idx], nums[idx]
            per_cell = (lambda x: x[rowc])  # noqa: E731
        else:  # every cell kept, k per row: repeat instead of gathering
            per_cell = (lambda x: np.repeat(x, kk))  # noqa: E731
        r_suf = e["suf"][ent]
        if r_suf.any():  # GPU n LINK l rows: field name + "[link l]"
            suf = per_cell(r_suf)
            fkey = gcol * len(e["suf_names"]) + suf
            ukey, fcode = np.unique(fkey, return_inverse=True)
            names = self._col_names.to_pylist()
            sn = e["suf_names"]
            fdict = pa.array([names[int(u) // len(sn)] + str(sn[int(u) % len(sn)]) for u in ukey], pa.string())
            field = fdict.take(pa.array(fcode, pa.int64()))
        else:
            field = self._col_names.take(pa.array(gcol, pa.int64()))
        nrow = len(rowc)
        none = pa.nulls(nrow, pa.string())
        has_mig = bool(e["has_mig"].any()) and bool(e["has_mig"][ent].any())
        cols: dict[str, pa.Array] = {
            "host": none if self.host is None else pa.repeat(pa.scalar(self.host, pa.string()), nrow),
            "gpu": e["gpu"].take(pa.array(per_cell(gpu_ent), pa.int64())),
            "uuid": none,
            "model": none,
            "mig": e["mig"].take(pa.array(per_cell(ent), pa.int64())) if has_mig else none,
            "mig_profile": none,
            "field_id": pa.array(fid.astype("int32"), pa.int32()),
            "field": field,
            "value": pa.array(nums * self._col_factor[gcol] if self._scaled else nums, pa.float64()),
            "namespace": none,
            "pod": none,
            "container": none,
            "job": none,
        }
        r_stamp = None if stamp is None or not (stamp >= 0).any() else per_cell(stamp)
        return _Part(cols, per_cell(r_tick), r_stamp)

    def _fast_id(self, key: int) -> int:
        e = self._fast_ent.get(key)
        if e is None:
            digits, num = divmod(key, 10**MAX_ID_DIGITS)
            kind, width = divmod(digits, KIND_STRIDE)
            e = self._fast_ent[key] = self.ent_id(f"{FAST_KINDS[kind]} {num:0{width}d}")
        return e

    def _ticks(self, line: np.ndarray, ent: np.ndarray, ev_l: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Tick number of each row, and the entity whose ``gpu`` each row takes.

        A tick starts at the file's first row, at the first row after a header/command line, and
        where an entity repeats within the tick in progress (carried across blocks)."""
        n = len(line)
        after = self.events + np.searchsorted(ev_l, line, side="left")  # header events before each row
        self.events += len(ev_l)
        if n == 0:
            return np.zeros(0, "int64"), ent
        g = self.rows + np.arange(n)
        reset = np.empty(n, dtype=bool)
        reset[0] = self.rows > 0 and after[0] != self._ev_at_last_row
        reset[1:] = after[1:] != after[:-1]
        self._ev_at_last_row = int(after[-1])
        # previous row of the same entity (global index; _NONE if none)
        by_ent = np.argsort(ent, kind="stable")
        se = ent[by_ent]
        same = se[1:] == se[:-1]
        prev_s = np.empty(n, dtype="int64")
        prev_s[0] = self._lastpos[se[0]]
        prev_s[1:] = np.where(same, g[by_ent[:-1]], self._lastpos[se[1:]])
        prev = np.empty(n, dtype="int64")
        prev[by_ent] = prev_s
        lastmask = np.append(~same, True)
        self._lastpos[se[lastmask]] = g[by_ent[lastmask]]
        # first tick start in the block, then each next start: the first later row that follows a
        # header, or whose entity was seen at or after the current start
        if self._tick_start == _NONE:
            r0 = 0
        else:
            cond = reset | (prev >= self._tick_start)
            r0 = int(np.argmax(cond)) if cond.any() else n
        prev_l = prev - self.rows
        nextocc = np.full(n + 1, n, dtype="int64")
        has = prev_l >= 0
        nextocc[prev_l[has]] = np.flatnonzero(has)
        first_repeat = np.minimum.accumulate(nextocc[::-1])[::-1][:n]
        rpos = np.where(reset, np.arange(n), n)
        next_reset = np.append(np.minimum.accumulate(rpos[::-1])[::-1][1:], n)
        nxt = np.minimum(first_repeat, next_reset).tolist()
        starts: list[int] = []
        s = r0
        while s < n:
            starts.append(s)
            s = nxt[s]
        start = np.zeros(n, dtype=bool)
        start[starts] = True
        r_tick = self.ticks + np.cumsum(start) - 1
        tstart = np.maximum.accumulate(np.where(start, g, self._tick_start))
        self.ticks += len(starts)
        if starts:
            self._tick_start = self.rows + starts[-1]
        # GPU-I / GPU-CI rows: gpu of the latest GPU row in the same tick (dmon lists GPUs first)
        e = self._ent_arrays()
        isgpu = e["isgpu"][ent]
        gpu_ent = ent
        inst = e["inst"][ent]
        if inst.any():
            gpos = np.maximum.accumulate(np.where(isgpu, g, self._last_gpu_row))
            ok = inst & (gpos >= tstart) & (gpos >= 0)
            local = gpos - self.rows
            gent = np.where(local >= 0, ent[np.maximum(local, 0)], self._last_gpu_ent)
            gpu_ent = np.where(ok, gent, ent)
        if isgpu.any():
            lg = int(np.flatnonzero(isgpu)[-1])
            self._last_gpu_row, self._last_gpu_ent = self.rows + lg, int(ent[lg])
        self.rows += n
        return r_tick, gpu_ent

    # -- the whole file ----------------------------------------------------------------------
    def finish(self, src: Source, opts: ParseOptions, start_ms: int) -> ParseResult:
        """Raise :class:`InputError` for unusable files; the result (empty samples) otherwise."""
        path = self.path
        if self.known == 0 and not self.rejected:
            if self.errors:
                raise InputError(path, f"dcgmi dmon printed no samples, only: {self.errors[0][:160]}",
                                 "fix the DCGM error (profiling busy or unsupported?) and capture again")
            if self.headers == 0:
                raise InputError(path, "no dcgmi dmon header or data rows", "pass the output of 'dcgmi dmon -e ...'")
        if self.headers == 0 and self.cset is None and self.rejected and self.known == 0:
            raise InputError(path, "dcgmi dmon rows without the '#Entity' header line: field IDs unknown",
                             "keep the two header lines dcgmi dmon prints (or the 'dcgmi dmon -e ...' command)")
        acc = InputAccounting(path, FORMAT, records=self.records, missing=self.missing,
                              rejected=len(self.rejected) + self.extra_rejected)
        meta: dict[str, object] = {
            "errors": self.errors, "ticks": self.ticks, "headers": self.headers, "rows": self.rows,
            "interval_s": float(opts.interval_s), "sentinels": self.sentinels,
            "start": datetime.fromtimestamp(start_ms / 1000, tz=timezone.utc).isoformat(),
            "start_from": "--start" if opts.start is not None else "file mtime",
        }
        self.rejected.sort(key=lambda r: r.line or 0)
        return ParseResult(accounting=acc, rejected=self.rejected, meta=meta)


def _missing(vals: pa.Array) -> np.ndarray:
    """``vals`` (string, no nulls) is ``N/A``, ``N/W`` or ``n/a``: three bytes, looked at in numpy."""
    offs = np.frombuffer(vals.buffers()[1], dtype=np.int32)[vals.offset : vals.offset + len(vals) + 1]
    data = vals.buffers()[2]
    out = np.zeros(len(vals), dtype=bool)
    if data is None:
        return out
    three = np.flatnonzero(np.diff(offs) == 3)
    if len(three):
        b = np.frombuffer(data, dtype=np.uint8)
        s = offs[three]
        c0, c1, c2 = b[s], b[s + 1], b[s + 2]
        out[three] = (c1 == ord("/")) & (((c0 == ord("N")) & ((c2 == ord("A")) | (c2 == ord("W"))))
                                         | ((c0 == ord("n")) & (c2 == ord("a"))))
    return out


def _to_float(vals: pa.Array, missing: np.ndarray) -> np.ndarray:
    """Values as floats (NaN: missing or not a number). Arrow casts the whole array when every
    value parses; otherwise plain decimals are cast and the rest go through ``pandas.to_numeric``."""
    some = missing.any()
    sel = vals.filter(pa.array(~missing)) if some else vals
    try:
        parsed = pc.cast(sel, pa.float64()).to_numpy(zero_copy_only=False)
    except pa.ArrowInvalid:
        nums = np.full(len(vals), np.nan)
        simple = pc.match_substring_regex(vals, _NUMERIC).to_numpy(zero_copy_only=False)
        if simple.any():
            nums[simple] = pc.cast(vals.filter(pa.array(simple)), pa.float64()).to_numpy(zero_copy_only=False)
        rest = np.flatnonzero(~simple & ~missing)
        if len(rest):
            other = pd.Series(vals.take(pa.array(rest)).to_pylist(), dtype="object")
            nums[rest] = pd.to_numeric(other, errors="coerce").to_numpy(dtype="float64")
        return nums
    if some:
        nums = np.full(len(vals), np.nan)
        nums[~missing] = parsed
        return nums
    return parsed


def parse_batches(src: Source, opts: ParseOptions, *, hold: bool = False
                  ) -> Generator[pa.Table, None, ParseResult]:
    """Yield sample tables (``SAMPLE_SCHEMA``, file order), one per block of :data:`BLOCK_BYTES`
    (~230k samples per 4 MB of dmon text; at most 2 M, a sample takes >= 2 bytes); return the
    whole file's :class:`ParseResult` with empty ``samples``.

    Tick times need the start: ``opts.start``, or the file's mtime minus the number of ticks.
    Without ``opts.start`` the ticks are counted first in a rows-only pass over the file (bounded
    memory, ~half the parse time); ``hold=True`` instead keeps the blocks' samples in memory and
    stamps them at the end (what :func:`parse` does)."""
    interval_s = float(opts.interval_s)
    interval_ms = round(interval_s * 1000)
    start_ms: int | None = None
    if opts.start is not None:
        start_ms = default_start_ms(src, opts, 0, interval_s)
    elif not hold:
        count = _Parser(src.path, opts.host)
        for data in _blocks(src):
            count.block(data, values=False)
        start_ms = default_start_ms(src, opts, count.ticks, interval_s)
    p = _Parser(src.path, opts.host)
    held: list[_Part] = []
    for data in _blocks(src):
        part = p.block(data)
        if part is None:
            continue
        if start_ms is None:
            held.append(part)
        else:
            yield part.table(start_ms, interval_ms)
    final_start = start_ms if start_ms is not None else default_start_ms(src, opts, p.ticks, interval_s)
    result = p.finish(src, opts, final_start)
    held.reverse()
    while held:  # each part released once handed out
        yield held.pop().table(final_start, interval_ms)
    return result


def parse(src: Source, opts: ParseOptions) -> ParseResult:
    """The whole file: :func:`parse_batches` drained (blocks held in memory) and joined."""
    return drain_batches(parse_batches(src, opts, hold=True))
