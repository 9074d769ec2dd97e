"""The fleet dataset on disk: hive-partitioned Parquet plus a manifest that is the commit record.

Layout::

    DATASET/
      _manifest.json                       # every ingested input and the files it produced
      date=2026-11-21/host=node-07/part-<sha16>.parquet
      ...

* Files hold every ``SAMPLE_SCHEMA`` column (the true ``host`` value included); the folder names only
  prune scans. Host names are sanitized for paths (:func:`partition_value`): no ``/``, no ``..``,
  no leading ``.``/``_``, bounded length.
* A partition file is written under a hidden temporary name and renamed when complete, so no reader
  ever sees half a file. The manifest is rewritten atomically after the files it names exist;
  readers use only the files the manifest names, so an interrupted ingest leaves a consistent dataset
  (files it wrote without committing are orphans, removed by the next ingest).
* File names derive from the input's SHA-256, so re-writing an input after a crash replaces its files
  instead of duplicating them.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import tempfile
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from hashlib import sha1, sha256
from pathlib import Path
from typing import Any
from urllib.parse import quote

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

# re-exported: the manifest and the lock live in their own modules
from rooftop.analyzer.fleet.ingest_lock import LOCK as LOCK
from rooftop.analyzer.fleet.ingest_lock import IngestLock as IngestLock
from rooftop.analyzer.fleet.ingest_lock import ingest_lock as ingest_lock
from rooftop.analyzer.fleet.manifest import MANIFEST as MANIFEST
from rooftop.analyzer.fleet.manifest import MANIFEST_VERSION as MANIFEST_VERSION
from rooftop.analyzer.fleet.manifest import Manifest as Manifest
from rooftop.parsers.model import SAMPLE_SCHEMA

NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"  # hive convention for null
MAX_PARTITION_CHARS = 120
COMPRESSION = "zstd"
# Values as byte-stream-split floats (no dictionary: values rarely repeat), every other column
# dictionary-encoded. Measured on a 16 M-sample fleet (bench/NOTES.md): files 21 % smaller and the
# columns the fleet pass reads about 20 % cheaper to decode than all-dictionary pages.
ENCODINGS: dict[str, Any] = {
    "use_dictionary": [f.name for f in SAMPLE_SCHEMA if f.name != "value"],
    "use_byte_stream_split": ["value"],
}
TMP_SUFFIX = ".tmp"
MS_PER_DAY = 86_400_000
ROW_GROUP_ROWS = 1 << 18  # rows per Parquet row group a partition buffer is written as
MAX_BUFFERED_BYTES = 64 << 20  # Arrow bytes buffered over all partitions (then the largest are written)
DIGEST_CHUNK = 1 << 20  # bytes per read while hashing an input


def partition_value(value: str | None) -> str:
    """A host (or any label) as a safe path segment: percent-encoded, never ``.``/``..``, bounded.

    >>> partition_value("../../etc"), partition_value("a/b"), partition_value(None)
    ('%2E%2E%2F%2E%2E%2Fetc', 'a%2Fb', '__HIVE_DEFAULT_PARTITION__')
    """
    if value is None or value == "":
        return NULL_PARTITION
    safe = quote(value, safe="-_")  # quote() keeps letters, digits, "-", "_"; "." and "~" encoded below
    safe = safe.replace(".", "%2E").replace("~", "%7E")
    if safe.startswith("_"):
        safe = "%5F" + safe[1:]
    if len(safe) > MAX_PARTITION_CHARS:
        digest = sha1(value.encode("utf-8", "surrogatepass")).hexdigest()[:16]
        head = safe[:80]
        cut = head.rfind("%", len(head) - 2)
        head = head[:cut] if cut >= 0 else head
        safe = f"{head}-{digest}"
    return safe


def day_of(ms: int) -> str:
    return datetime.fromtimestamp(ms // MS_PER_DAY * 86_400, tz=timezone.utc).strftime("%Y-%m-%d")


def partition_dir(day: str, host: str | None) -> str:
    return f"date={day}/host={partition_value(host)}"


_DATE_RE = re.compile(r"(?:^|/)date=(\d{4}-\d{2}-\d{2})/")


def file_date(relpath: str) -> str | None:
    """The ``date=`` partition of a dataset-relative file path."""
    m = _DATE_RE.search(relpath)
    return m.group(1) if m else None


# --------------------------------------------------------------------------------------------------
# atomic files


def fsync_dir(folder: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def _umask() -> int:
    """The process umask (read from /proc where it can be, so no thread sees a changed umask)."""
    with contextlib.suppress(OSError, ValueError, StopIteration), open("/proc/self/status", encoding="ascii") as fh:
        return int(next(ln for ln in fh if ln.startswith("Umask:")).split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def write_json_atomic(path: Path, payload: Any) -> None:
    """Replace ``path`` atomically. The new file keeps the mode of the one it replaces, else it is
    created as ``open()`` would (0666 less the umask), not ``mkstemp``'s 0600: Dask workers and a
    reporting account must be able to read the dataset the umask lets them read."""
    data = json.dumps(payload, indent=1, sort_keys=True).encode("utf-8")
    try:
        mode = path.stat().st_mode & 0o7777
    except OSError:
        mode = 0o666 & ~_umask()
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def remove_orphans(root: Path, manifest: Manifest) -> int:
    """Delete temporary files and partition files no manifest entry names (left by a crash)."""
    keep = set(manifest.files())
    removed = 0
    for p in root.glob(f".{MANIFEST}.*{TMP_SUFFIX}"):  # a manifest save killed before its rename
        with contextlib.suppress(OSError):
            p.unlink()
            removed += 1
    for p in root.glob("date=*/host=*/*"):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and (p.name.endswith(TMP_SUFFIX) or (p.suffix == ".parquet" and rel not in keep)):
            with contextlib.suppress(OSError):
                p.unlink()
                removed += 1
    return removed


# --------------------------------------------------------------------------------------------------
# writing one input's samples


def canonical_samples(table: pa.Table) -> pa.Table:
    """``table`` with exactly the SAMPLE_SCHEMA columns, in order and types (what a writer stores)."""
    return table.select(SAMPLE_SCHEMA.names).cast(SAMPLE_SCHEMA)


def widen_span(start_ms: int | None, end_ms: int | None, lo: int, hi: int) -> tuple[int, int]:
    """The time span ``[start_ms, end_ms]`` widened to cover ``[lo, hi]`` (None: nothing yet)."""
    return (lo if start_ms is None else min(start_ms, lo), hi if end_ms is None else max(end_ms, hi))


class PartitionWriter:
    """Stream sample batches of one input into one Parquet file per ``date/host`` partition.

    Each file is written under a hidden temporary name; :meth:`commit` renames them all and returns
    the dataset-relative paths; :meth:`abort` removes them. Rows are buffered per partition and
    written as one row group once a partition holds :data:`ROW_GROUP_ROWS` rows, so small input
    batches still give full row groups. Memory: at most about :data:`MAX_BUFFERED_BYTES` buffered
    over all partitions (beyond it the largest buffers are written), plus one open writer per
    partition.
    """

    def __init__(self, root: Path, stem: str) -> None:
        self.root = root
        self.stem = stem
        self._writers: dict[str, tuple[pq.ParquetWriter, Path, Path]] = {}
        self._buffers: dict[str, list[pa.Table]] = {}
        self._buffered: dict[str, int] = {}  # rows per partition buffer
        self._bytes: dict[str, int] = {}
        self.rows = 0
        self.batches = 0
        self.touched: set[str] = set()  # partitions written since the caller last reset it
        self.start_ms: int | None = None
        self.end_ms: int | None = None

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        table = canonical_samples(table)
        ms = table.column("timestamp").cast(pa.int64()).to_numpy()
        days = ms // MS_PER_DAY
        hosts = pc.dictionary_encode(table.column("host")).combine_chunks()
        host_idx = hosts.indices.to_numpy(zero_copy_only=False)
        host_idx = np.where(hosts.indices.is_null().to_numpy(zero_copy_only=False), -1, host_idx)
        host_names = hosts.dictionary.to_pylist()
        key = (days - days.min()) * (len(host_names) + 1) + (host_idx + 1)
        order = np.argsort(key, kind="stable")
        sorted_key = key[order]
        bounds = np.flatnonzero(np.diff(sorted_key)) + 1
        starts = np.concatenate(([0], bounds))
        ends = np.concatenate((bounds, [len(order)]))
        for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
            first = int(order[s])
            hi = int(host_idx[first])
            part = partition_dir(day_of(int(ms[first])), host_names[hi] if hi >= 0 else None)
            rows = table.take(pa.array(order[s:e])) if e - s < len(order) else table  # compact copy
            self._writer(part)  # the hidden temporary file exists from the first row on
            self.touched.add(part)
            self._buffers.setdefault(part, []).append(rows)
            self._buffered[part] = self._buffered.get(part, 0) + (e - s)
            self._bytes[part] = self._bytes.get(part, 0) + rows.nbytes
            if self._buffered[part] >= ROW_GROUP_ROWS:
                self._flush(part)
        while self._bytes and sum(self._bytes.values()) > MAX_BUFFERED_BYTES:
            self._flush(max(self._bytes, key=self._bytes.__getitem__))
        self.rows += table.num_rows
        self.batches += 1
        self.start_ms, self.end_ms = widen_span(self.start_ms, self.end_ms, int(ms.min()), int(ms.max()))

    def _flush(self, part: str) -> None:
        tables = self._buffers.pop(part, [])
        self._buffered.pop(part, None)
        self._bytes.pop(part, None)
        if tables:
            self._writer(part).write_table(pa.concat_tables(tables), row_group_size=ROW_GROUP_ROWS)

    def _writer(self, part: str) -> pq.ParquetWriter:
        if part not in self._writers:
            folder = self.root / part
            folder.mkdir(parents=True, exist_ok=True)
            final = folder / f"part-{self.stem}.parquet"
            tmp = folder / f".part-{self.stem}.parquet{TMP_SUFFIX}"
            writer = pq.ParquetWriter(tmp, SAMPLE_SCHEMA, compression=COMPRESSION, **ENCODINGS)
            self._writers[part] = (writer, tmp, final)
        return self._writers[part][0]

    def commit(self) -> list[str]:
        """Close and fsync every file, then rename them into place; returns relative paths."""
        for part in list(self._buffers):
            self._flush(part)
        out: list[str] = []
        for writer, tmp, _final in self._writers.values():
            writer.close()
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        for _writer, tmp, final in self._writers.values():
            os.replace(tmp, final)
            fsync_dir(final.parent)
            out.append(final.relative_to(self.root).as_posix())
        self._writers.clear()
        return sorted(out)

    def abort(self) -> None:
        self._buffers.clear()
        self._buffered.clear()
        self._bytes.clear()
        for writer, tmp, _final in self._writers.values():
            with contextlib.suppress(Exception):
                writer.close()
            with contextlib.suppress(OSError):
                tmp.unlink()
        self._writers.clear()


def file_sha256(path: Path) -> str:
    h = sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Prefix:
    """SHA-256 of a file's first ``size`` bytes, the line terminators in them, their last two bytes."""

    sha256: str
    lines: int
    tail: bytes


@dataclass(frozen=True)
class Digest:
    """SHA-256 and size of a file's ingested extent, and of some of its prefixes.

    ``size``/``sha256``: the complete extent (with ``hold_back``: up to and including the last line
    terminator) or the whole file; ``held_back``: the bytes after the extent (an unterminated last
    line). ``prefixes``: for each asked prefix size the file is at least as long as, its
    :class:`Prefix`. ``prefix_sha256``/``prefix_lines``/``prefix_tail``: those of ``prefix_size``.
    """

    sha256: str
    size: int
    prefix_sha256: str | None = None
    prefix_lines: int = 0
    held_back: int = 0
    prefix_tail: bytes = b""
    prefixes: dict[int, Prefix] = field(default_factory=dict)

    @property
    def file_size(self) -> int:
        return self.size + self.held_back


# line terminators (newline, carriage return) and their alignment, per encoding
TERMINATORS: dict[str, tuple[bytes, bytes, int]] = {
    "utf-8": (b"\n", b"\r", 1),
    "utf-16-le": (b"\n\x00", b"\r\x00", 2),
    "utf-16-be": (b"\x00\n", b"\x00\r", 2),
}


def _rfind_aligned(chunk: bytes, needle: bytes, base: int, align: int) -> int:
    """Index just past the last ``needle`` in ``chunk`` starting at an absolute offset (``base`` +
    index) that is a multiple of ``align`` (a UTF-16 code unit), or -1."""
    end = len(chunk)
    while True:
        i = chunk.rfind(needle, 0, end)
        if i < 0 or (base + i) % align == 0:
            return -1 if i < 0 else i + len(needle)
        end = i + len(needle) - 1


def file_digest(path: Path, prefix_size: int | None = None, *, hold_back: bool = False,
                encoding: str = "utf-8", prefix_sizes: Iterable[int] = ()) -> Digest:
    """One streamed pass (bounded memory) over ``path``.

    With ``hold_back``, the extent ends after the last line terminator (a file without any newline:
    after the last carriage return; without either: it is empty) and the rest is held back; else it
    is the whole file. ``encoding``: the terminators are those of ``utf-8`` or ``utf-16-le``/``-be``
    (code units at even offsets; the BOM is 2 bytes and :data:`DIGEST_CHUNK` is even, so a unit
    never straddles chunks). For ``prefix_size`` and each of ``prefix_sizes`` the file is at least
    that long: the :class:`Prefix` of its first that many bytes (the file's bytes, whatever the extent).
    """
    nl_bytes, cr_bytes, align = TERMINATORS.get(encoding, TERMINATORS["utf-8"])
    wanted = sorted({s for s in (*prefix_sizes, *(() if prefix_size is None else (prefix_size,))) if s >= 0})
    h = sha256()
    done = 0
    lines = 0
    tail = b""  # the last two bytes hashed
    prefixes: dict[int, Prefix] = {}
    at_nl: tuple[Any, int] | None = None  # hash state and size after the last newline
    at_cr: tuple[Any, int] | None = None  # the same after the last carriage return, while no newline was seen
    with path.open("rb") as fh:
        chunk = b""
        while True:
            while wanted and wanted[0] <= done:  # a cut at the end of what was hashed so far
                prefixes[wanted.pop(0)] = Prefix(h.hexdigest(), lines, tail)
            chunk = fh.read(DIGEST_CHUNK)
            if not chunk:
                break
            cuts: dict[int, list[str]] = {}
            for w in wanted:
                if w >= done + len(chunk):
                    break
                cuts.setdefault(w - done, []).append("prefix")
            if hold_back:
                nl = _rfind_aligned(chunk, nl_bytes, done, align)
                if nl >= 0:
                    cuts.setdefault(nl, []).append("nl")
                    at_cr = None
                elif at_nl is None:
                    cr = _rfind_aligned(chunk, cr_bytes, done, align)
                    if cr >= 0:
                        cuts.setdefault(cr, []).append("cr")
            pos = 0
            for cut in sorted(cuts):
                piece = chunk[pos:cut]
                h.update(piece)
                lines += piece.count(nl_bytes)
                tail = (tail + piece[-2:])[-2:]
                pos = cut
                for what in cuts[cut]:
                    if what == "prefix":
                        prefixes[wanted.pop(0)] = Prefix(h.hexdigest(), lines, tail)  # hexdigest does not finalize
                    elif what == "nl":
                        at_nl = (h.copy(), done + cut)
                    else:
                        at_cr = (h.copy(), done + cut)
            piece = chunk[pos:]
            h.update(piece)
            lines += piece.count(nl_bytes)
            tail = (tail + piece[-2:])[-2:]
            done += len(chunk)
    first = prefixes.get(prefix_size) if prefix_size is not None else None
    common: dict[str, Any] = {"prefix_sha256": first.sha256 if first else None,
                              "prefix_lines": first.lines if first else 0,
                              "prefix_tail": first.tail if first else b"", "prefixes": prefixes}
    if not hold_back:
        return Digest(h.hexdigest(), done, **common)
    mark = at_nl or at_cr
    if mark is None:
        return Digest(sha256().hexdigest(), 0, held_back=done, **common)
    return Digest(mark[0].hexdigest(), mark[1], held_back=done - mark[1], **common)


def prefix_sha256(path: Path, size: int) -> str | None:
    """SHA-256 of the first ``size`` bytes of ``path`` as it is now; None if it is shorter."""
    h = sha256()
    left = size
    with path.open("rb") as fh:
        while left > 0:
            chunk = fh.read(min(DIGEST_CHUNK, left))
            if not chunk:
                return None
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
