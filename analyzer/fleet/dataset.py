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
import socket
import tempfile
from collections.abc import Iterator
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

from rooftop.parsers.model import SAMPLE_SCHEMA, InputError

MANIFEST = "_manifest.json"
LOCK = "_ingest.lock"
MANIFEST_VERSION = 1
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


def write_json_atomic(path: Path, payload: Any) -> None:
    data = json.dumps(payload, indent=1, sort_keys=True).encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


# --------------------------------------------------------------------------------------------------
# manifest


@dataclass
class Manifest:
    """``_manifest.json``: one entry per ingested input (path, size, sha256, accounting, files)."""

    root: Path
    entries: list[dict[str, Any]] = field(default_factory=list)

    @classmethod
    def load(cls, root: Path, *, must_exist: bool = False) -> Manifest:
        path = root / MANIFEST
        if not path.exists():
            if must_exist:
                raise InputError(str(root), "is not a rooftop dataset (no _manifest.json)",
                                 "create it with `rooftop ingest INPUT... --to DATASET`")
            return cls(root)
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            entries = data["inputs"]
            if not isinstance(entries, list):
                raise TypeError("inputs is not a list")
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise InputError(str(path), f"is not a readable manifest ({exc})",
                             "restore it from backup or re-ingest into a new dataset") from exc
        return cls(root, entries)

    def save(self) -> None:
        write_json_atomic(self.root / MANIFEST, {"version": MANIFEST_VERSION, "inputs": self.entries})

    def sha256s(self) -> set[str]:
        return {e["sha256"] for e in self.entries}

    def latest_for(self, path: Path) -> dict[str, Any] | None:
        """The last entry ingested from ``path`` (same absolute path), or None."""
        key = os.path.abspath(path)
        for e in reversed(self.entries):
            if os.path.abspath(e["path"]) == key:
                return e
        return None

    def chain(self, entry: dict[str, Any]) -> list[dict[str, Any]]:
        """``entry`` and the entries it appends to (``prefix_sha256`` links), oldest first: together
        they hold every sample of the file version ``entry`` describes."""
        by_sha = {e["sha256"]: e for e in self.entries}
        out = [entry]
        while out[-1].get("kind") == "append" and out[-1].get("prefix_sha256") in by_sha and len(out) <= len(by_sha):
            out.append(by_sha[out[-1]["prefix_sha256"]])
        return out[::-1]

    def files(self) -> list[str]:
        """Dataset-relative partition files, in ingest order (the scan order of every engine)."""
        return [f for e in self.entries for f in e.get("files", [])]


@contextlib.contextmanager
def ingest_lock(root: Path) -> Iterator[None]:
    """One ingest at a time per dataset; a lock left by a dead process on this host is taken over."""
    lock = root / LOCK
    me = f"{socket.gethostname()} {os.getpid()}"
    for _ in range(2):
        try:
            fd = os.open(lock, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
        except FileExistsError:
            if _stale(lock):
                with contextlib.suppress(OSError):
                    lock.unlink()
                continue
            raise InputError(str(root), "another `rooftop ingest` is writing this dataset",
                             f"wait for it, or delete {lock} if no ingest is running") from None
        with os.fdopen(fd, "w") as fh:
            fh.write(me)
        break
    try:
        yield
    finally:
        with contextlib.suppress(OSError):
            lock.unlink()


def _stale(lock: Path) -> bool:
    try:
        host, pid = lock.read_text().split()
    except (OSError, ValueError):
        return False
    if host != socket.gethostname():
        return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return True
    except (PermissionError, ValueError):
        return False
    return False


def remove_orphans(root: Path, manifest: Manifest) -> int:
    """Delete temporary files and partition files no manifest entry names (left by a crash)."""
    keep = set(manifest.files())
    removed = 0
    for p in root.glob("date=*/host=*/*"):
        rel = p.relative_to(root).as_posix()
        if p.is_file() and (p.name.endswith(TMP_SUFFIX) or (p.suffix == ".parquet" and rel not in keep)):
            with contextlib.suppress(OSError):
                p.unlink()
                removed += 1
    return removed


# --------------------------------------------------------------------------------------------------
# writing one input's samples


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
        self.start_ms: int | None = None
        self.end_ms: int | None = None

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        table = table.select(SAMPLE_SCHEMA.names).cast(SAMPLE_SCHEMA)
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
            self._buffers.setdefault(part, []).append(rows)
            self._buffered[part] = self._buffered.get(part, 0) + (e - s)
            self._bytes[part] = self._bytes.get(part, 0) + rows.nbytes
            if self._buffered[part] >= ROW_GROUP_ROWS:
                self._flush(part)
        while self._bytes and sum(self._bytes.values()) > MAX_BUFFERED_BYTES:
            self._flush(max(self._bytes, key=self._bytes.__getitem__))
        self.rows += table.num_rows
        self.batches += 1
        lo, hi_ms = int(ms.min()), int(ms.max())
        self.start_ms = lo if self.start_ms is None else min(self.start_ms, lo)
        self.end_ms = hi_ms if self.end_ms is None else max(self.end_ms, hi_ms)

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
class Digest:
    """SHA-256 and size of a file's ingested extent, and of its first ``prefix_size`` bytes.

    ``size``/``sha256``: the complete extent (with ``hold_back``: up to and including the last line
    terminator) or the whole file; ``held_back``: the bytes after the extent (an unterminated last
    line). ``prefix_lines``: newlines in the prefix; ``prefix_tail``: its last (up to) two bytes.
    """

    sha256: str
    size: int
    prefix_sha256: str | None = None
    prefix_lines: int = 0
    held_back: int = 0
    prefix_tail: bytes = b""

    @property
    def file_size(self) -> int:
        return self.size + self.held_back


def file_digest(path: Path, prefix_size: int | None = None, *, hold_back: bool = False) -> Digest:
    """One streamed pass (bounded memory) over ``path``.

    With ``hold_back``, the extent ends after the last ``\\n`` (a file without any ``\\n``: after the
    last ``\\r``; without either: it is empty) and the rest is held back; else it is the whole file.
    When ``prefix_size`` is given and the file is at least that long, the SHA-256 of its first
    ``prefix_size`` bytes too (the file's bytes, whatever the extent).
    """
    h = sha256()
    done = 0
    prefix: str | None = None
    lines = 0
    tail = b""  # the last two bytes hashed before the prefix cut
    at_nl: tuple[Any, int] | None = None  # hash state and size after the last "\n"
    at_cr: tuple[Any, int] | None = None  # the same after the last "\r", while no "\n" was seen
    if prefix_size is not None and prefix_size <= 0:
        prefix, prefix_size = h.hexdigest(), None
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(DIGEST_CHUNK), b""):
            cuts: dict[int, list[str]] = {}
            if prefix_size is not None and prefix is None and done + len(chunk) >= prefix_size:
                cuts.setdefault(prefix_size - done, []).append("prefix")
            if hold_back:
                nl = chunk.rfind(b"\n")
                if nl >= 0:
                    cuts.setdefault(nl + 1, []).append("nl")
                    at_cr = None
                elif at_nl is None:
                    cr = chunk.rfind(b"\r")
                    if cr >= 0:
                        cuts.setdefault(cr + 1, []).append("cr")
            pos = 0
            for cut in sorted(cuts):
                piece = chunk[pos:cut]
                h.update(piece)
                if prefix is None and prefix_size is not None:
                    lines += piece.count(b"\n")
                    tail = (tail + piece)[-2:]
                pos = cut
                for what in cuts[cut]:
                    if what == "prefix":
                        prefix = h.hexdigest()  # hexdigest does not finalize: the hash goes on
                    elif what == "nl":
                        at_nl = (h.copy(), done + cut)
                    else:
                        at_cr = (h.copy(), done + cut)
            piece = chunk[pos:]
            h.update(piece)
            if prefix is None and prefix_size is not None:
                lines += piece.count(b"\n")
                tail = (tail + piece)[-2:]
            done += len(chunk)
    if prefix is None:
        lines, tail = 0, b""
    if not hold_back:
        return Digest(h.hexdigest(), done, prefix, lines, 0, tail)
    mark = at_nl or at_cr
    if mark is None:
        return Digest(sha256().hexdigest(), 0, prefix, lines, done, tail)
    return Digest(mark[0].hexdigest(), mark[1], prefix, lines, done - mark[1], tail)


def iso_ms(ms: int | None) -> str | None:
    if ms is None:
        return None
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).isoformat(timespec="milliseconds").replace(
        "+00:00", "Z")


def parse_iso(value: str | None) -> datetime | None:
    if not value:
        return None
    return datetime.fromisoformat(value.replace("Z", "+00:00"))
