"""``rooftop ingest``: DCGM inputs into the partitioned Parquet dataset (idempotent, incremental, atomic).

Per input: checksum (streamed) → skip when the manifest already holds that SHA-256 → stream the
samples (``parsers.stream_path``: bounded batches in file order) into one temporary file per
``date/host`` partition → rename → manifest entry (small inputs: held and written together per
commit, ``fleet/batch.py``). The manifest is rewritten atomically every :data:`COMMIT_EVERY` inputs
(or an eighth of the manifest's entries, whichever is more, so the bytes rewritten stay linear in
the inputs), every :data:`COMMIT_BYTES` of input, and at the end, so a crash loses at most the
inputs since the last commit (they are re-ingested next time; their orphan files are removed).

Memory is bounded whatever the input size: the parser holds one chunk and one batch (Prometheus
text: ~8 MB of text, batches of ~128 k samples; nvidia-smi: segments of 128 k lines; parsers without
``parse_batches`` still hold their whole table), the writer about ``dataset.MAX_BUFFERED_BYTES`` (64 MB) of buffered rows.

Only the **complete extent** of an input is read: the bytes up to and including its last ``\\n``
(a file without any ``\\n`` but with ``\\r`` line ends: its last ``\\r``), for the formats read line by
line (:data:`LINE_FORMATS`, UTF-8); UTF-16 files and query JSON documents are read whole.
An unterminated last line (a writer such as ``dcgmi dmon > log`` flushes in blocks, mid-line) is
*held back*: not parsed, stored or counted; the entry's ``size``/``sha256`` are the extent's, its
``held_back_bytes`` the rest, and the summary says so. The line is ingested once its newline
arrives; ``--finished`` (inputs complete) ingests it as it is (entry ``finished: true``). A re-run
that finds no complete new line adds nothing and writes no entry (skipped: "no complete new lines").

Files that grow between ingests (a dmon log or scrape file still being written): when the last
entry for the same path is smaller and its SHA-256 equals the SHA-256 of the file's first ``size``
bytes, the file is an append. Line formats parse prefix-stably at line ends (the first samples of
the longer extent are the earlier extent's samples, in order; :data:`APPENDABLE`), so the first
``stored`` samples (the records of the earlier entries) are skipped and only the rest is written,
as an entry of kind ``"append"`` (``prefix_sha256``, ``prefix_size``, the tail's records/missing/
rejected: the extent's counts minus those of the earlier entries, never negative, so that over a
path's entries ``records + missing + rejected`` is the sample count of the file's complete extent).
Without ``--start``, scrape/tick times of the tail are stamped from the earlier entry's time origin,
so the tail continues the stored ticks. A file whose earlier bytes changed (rotated, rewritten,
truncated) is ingested as a new file, and the summary says so; so is a grown file whose last stored
byte ended no line (ingested with ``--finished`` or by an older rooftop: its cut line may be stored
cut), and a grown file of a format not in :data:`APPENDABLE` (none of the line formats now), whose
earlier samples are then stored twice.
"""

from __future__ import annotations

import errno
import time
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooftop.analyzer.fleet.batch import SMALL_BYTES, Group, HeldInput
from rooftop.analyzer.fleet.dataset import (
    TERMINATORS,
    Digest,
    Manifest,
    PartitionWriter,
    file_digest,
    ingest_lock,
    iso_ms,
    parse_iso,
    prefix_sha256,
    remove_orphans,
)
from rooftop.analyzer.fleet.manifest import canonical
from rooftop.analyzer.progress import ProgressArg, track
from rooftop.parsers import (
    FORMATS,
    Input,
    InputError,
    ParseOptions,
    ParseResult,
    open_input,
    stream_input,
)

BATCH_ROWS = 1_000_000
COMMIT_EVERY = 64  # inputs per manifest commit, at least (more once the manifest is large)
COMMIT_BYTES = 256 << 20  # input bytes read before a commit, at most
READ_ATTEMPTS = 3  # digests and reads of a file that changes while it is read, before it is unusable
MAX_REJECTED_KEPT = 50
# formats whose samples come out in line order, so a longer file's first samples are the shorter one's
APPENDABLE = frozenset(f.name for f in FORMATS.values() if f.appendable)
# formats read line by line, whose unterminated last line is held back (a query JSON is one document)
LINE_FORMATS = frozenset(f.name for f in FORMATS.values() if f.line_based and f.kind == "samples")


@dataclass
class IngestSummary:
    """What one ``ingest`` run did."""

    dataset: Path
    ingested: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unusable: list[InputError] = field(default_factory=list)
    rewritten: list[str] = field(default_factory=list)  # earlier bytes changed: ingested as new files
    regrown: list[str] = field(default_factory=list)  # grew, format not appendable: ingested whole again
    recut: list[str] = field(default_factory=list)  # grew after an unterminated stored line: ingested as new
    recompressed: list[str] = field(default_factory=list)  # a compressed file grew: ingested whole as new
    held_back: list[str] = field(default_factory=list)  # an unterminated last line was not ingested
    waiting: list[str] = field(default_factory=list)  # skipped: no complete line beyond the stored ones
    rotated: list[str] = field(default_factory=list)  # a rotated copy of a stored version: its tail appended
    repaired: list[str] = field(default_factory=list)  # entries dropped by --repair (partitions gone)
    lost: list[str] = field(default_factory=list)  # repaired entries whose input is gone too
    orphans_removed: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(int(e["records"]) for e in self.ingested)

    @property
    def files(self) -> int:
        return len({f for e in self.ingested for f in e["files"]})  # small inputs share files

    @property
    def appended(self) -> list[dict[str, Any]]:
        return [e for e in self.ingested if e.get("kind") == "append"]

    def describe(self) -> str:
        """The summary as text, one line per :meth:`lines` entry."""
        return "\n".join(self.lines())

    def lines(self) -> list[str]:
        """The summary, one entry per printed line (a file name with a newline stays in its line:
        the command line escapes each entry, docs/contract.md)."""
        rej = sum(int(e["rejected"]) for e in self.ingested)
        miss = sum(int(e["missing"]) for e in self.ingested)
        lines = [
            f"ingested {len(self.ingested)} input(s) into {self.dataset}: {self.rows:,} samples "
            f"({miss:,} missing, {rej:,} rejected) in {self.files} partition file(s), "
            f"{self.seconds:.1f} s"
        ]
        if self.appended:
            lines.append(f"{len(self.appended)} of them grew since their last ingest: only the samples "
                         "after the stored ones were added")
        if self.rotated:
            lines.append(f"{len(self.rotated)} input(s) are rotated copies (logrotate) of a stored version: only "
                         "the samples after the stored ones were added: " + _first(self.rotated))
        if self.repaired:
            lines.append(f"repair: dropped {len(self.repaired)} entr(ies) whose partition files were missing or "
                         "unreadable; their inputs were ingested again where they still exist: "
                         + _first(self.repaired))
        if self.lost:
            lines.append(f"repair: {len(self.lost)} input(s) are gone too: their samples are no longer in the "
                         "dataset: " + _first(self.lost))
        if self.rewritten:
            lines.append(f"{len(self.rewritten)} input(s) changed in their earlier bytes since their last "
                         "ingest (rotated or rewritten): ingested as new files, earlier samples kept: "
                         + _first(self.rewritten))
        if self.recut:
            lines.append(f"{len(self.recut)} input(s) grew since an ingest that stored their unterminated "
                         "last line (--finished, UTF-16, or an older rooftop): ingested as new files, earlier samples "
                         "kept: " + _first(self.recut))
        if self.regrown:
            lines.append(f"{len(self.regrown)} input(s) grew since their last ingest but their format is not "
                         "read in line order: ingested whole again, so their earlier samples are stored twice: "
                         + _first(self.regrown))
        if self.recompressed:
            lines.append(f"{len(self.recompressed)} compressed input(s) grew since their last ingest: a compressed "
                         "file is not appended to, so each was ingested whole as a new file and its earlier samples "
                         "are stored twice: " + _first(self.recompressed))
        same = len(self.skipped) - len(self.waiting)
        if same:
            lines.append(f"skipped {same} input(s) already in the dataset (same SHA-256)")
        if self.waiting:
            lines.append(f"skipped {len(self.waiting)} input(s) with no complete new lines (only a line still "
                         "being written)")
        if self.held_back:
            lines.append(f"held back the unterminated last line of {len(self.held_back)} input(s) (a line still "
                         "being written): it is ingested once its newline arrives; pass --finished if the files "
                         "are complete: " + _first(self.held_back))
        for exc in self.unusable:
            lines.append(f"unusable: {exc}")
        if self.orphans_removed:
            lines.append(f"removed {self.orphans_removed} file(s) left by an interrupted ingest")
        return lines


def _first(paths: list[str], n: int = 5) -> str:
    return ", ".join(paths[:n]) + (" ..." if len(paths) > n else "")


def ingest_files(paths: list[Path], dataset: Path, options: ParseOptions,
                 progress: ProgressArg = None, finished: bool = False, repair: bool = False) -> IngestSummary:
    """Ingest DCGM inputs into ``dataset`` (created if absent). Raises :class:`InputError` when
    there is nothing to ingest and every input is unusable, or the dataset cannot be written.
    ``finished``: the inputs are complete; an unterminated last line is ingested, not held back.
    ``repair``: first drop the entries whose partition files are missing or unreadable and
    re-ingest their inputs (:func:`rooftop.analyzer.fleet.repair.repair`).

    One input that cannot be read or parsed is listed as unusable with its reason; the others are
    committed (docs/formulas.md#fleet-ingest)."""
    t0 = time.perf_counter()
    dataset = Path(dataset)
    if dataset.exists() and not dataset.is_dir():
        raise InputError(str(dataset), "exists and is not a folder", "choose a dataset folder")
    try:
        dataset.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(dataset), f"cannot be created ({exc.strerror or exc})",
                         "check the path and permissions") from exc
    if not paths and not repair:
        raise InputError(str(dataset), "no input files given", "pass DCGM exports or a folder of them")
    summary = IngestSummary(dataset)
    with ingest_lock(dataset) as lock:
        manifest = Manifest.load(dataset)
        jobs = [(Path(p), options) for p in paths]
        if repair:
            from rooftop.analyzer.fleet.repair import repair_manifest

            given = {canonical(p) for p in paths}
            jobs += [(Path(path), replace(options, host=host)) for host, path in repair_manifest(manifest, summary)
                     if path not in given or host != options.host]
        summary.orphans_removed = remove_orphans(dataset, manifest)
        pending = pending_bytes = 0
        group = Group(dataset)  # small inputs written together before each commit
        with _progress(jobs, progress) as items:
            for path, opts in items:
                entry = _ingest_guarded(path, dataset, opts, manifest, summary, finished, group)
                if entry is None:
                    continue
                manifest.entries.append(entry)
                pending += 1
                pending_bytes += int(entry["size"])
                if group.full:
                    group.flush()
                # commits grow with the manifest (each rewrites it whole: total bytes stay linear in
                # the inputs), and come at least every COMMIT_BYTES of input read
                if pending >= max(COMMIT_EVERY, len(manifest.entries) // 8) or pending_bytes >= COMMIT_BYTES:
                    group.flush()
                    lock.check()
                    manifest.save()
                    pending = pending_bytes = 0
        if pending or summary.repaired or not (dataset / "_manifest.json").exists():
            group.flush()
            lock.check()
            manifest.save()
    summary.seconds = time.perf_counter() - t0
    if not summary.ingested and not summary.skipped and summary.unusable and not summary.repaired:
        raise summary.unusable[0]
    return summary


# errors writing the dataset end the run (no later input could be written either)
_DATASET_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EFBIG})


def _ingest_guarded(path: Path, dataset: Path, options: ParseOptions, manifest: Manifest,
                    summary: IngestSummary, finished: bool, group: Group | None = None) -> dict[str, Any] | None:
    """:func:`_ingest_one`, with any failure of this one input listed as unusable (its reason named)
    instead of ending the run; a full or read-only dataset still ends it."""
    try:
        return _ingest_one(path, dataset, options, manifest, summary, finished, group)
    except InputError as exc:
        summary.unusable.append(exc)
    except OSError as exc:
        if exc.errno in _DATASET_ERRNOS or str(exc.filename or "").startswith(str(dataset)):
            raise  # writing the dataset failed, not reading this input
        summary.unusable.append(InputError(str(path), f"cannot be read ({exc.strerror or exc})",
                                           "check the path and permissions"))
    except (RecursionError, MemoryError, OverflowError, ValueError, pa.ArrowException) as exc:
        summary.unusable.append(InputError(
            str(path), f"could not be ingested ({type(exc).__name__}: {str(exc)[:200]})",
            "check the file (other inputs were ingested); please report it if it is a valid export"))
    return None


class _NotAppend(Exception):
    """A grown file is not an append after all: another format now, or fewer samples (or fewer
    records, missing or rejected) than stored."""


class _Changed(Exception):
    """The file's hashed extent changed (truncated or rewritten) while it was being parsed."""


@dataclass(frozen=True)
class _Prefix:
    """What the dataset already holds of a grown file: its earlier entries and their totals."""

    entry: dict[str, Any]  # the latest earlier entry (its sha256 is the prefix's)
    records: int
    missing: int
    rejected: int
    lines: int  # newlines in the prefix: rejections at later lines belong to the tail
    origin: str | None  # time of tick/scrape 0 the earlier ingest stamped with


def _ingest_one(path: Path, dataset: Path, options: ParseOptions, manifest: Manifest,
                summary: IngestSummary, finished: bool = False, group: Group | None = None) -> dict[str, Any] | None:
    """Ingest one input; a file changed while it was read is digested and read again (up to
    :data:`READ_ATTEMPTS` times), so its entry records exactly the bytes that were parsed."""
    for _attempt in range(READ_ATTEMPTS):
        lists = ("rewritten", "recut", "regrown", "rotated", "recompressed")
        marks = [len(getattr(summary, name)) for name in lists]
        try:
            return _ingest_once(path, dataset, options, manifest, summary, finished, group)
        except _Changed:
            for name, n in zip(lists, marks, strict=True):
                del getattr(summary, name)[n:]
    raise InputError(str(path), f"changed while it was read, {READ_ATTEMPTS} times (truncated or rewritten)",
                     "ingest it again once its writer has settled; nothing of it was stored")


def _ingest_once(path: Path, dataset: Path, options: ParseOptions, manifest: Manifest,
                 summary: IngestSummary, finished: bool, group: Group | None = None) -> dict[str, Any] | None:
    ident = (options.host, canonical(path))
    prev = manifest.latest(ident)
    size = path.stat().st_size
    inp = open_input(path)  # opened and detected once; refuses FIFOs and devices
    encoding = inp.source.encoding
    compressed = inp.source.compression is not None  # no line ends in compressed bytes: read whole
    hold = not finished and encoding in TERMINATORS and not compressed and inp.format.name in LINE_FORMATS
    prev_size = int(prev["size"]) if prev is not None else None
    rotated_from = manifest.rotation_candidates(ident, size)
    sizes = [int(c["size"]) for c in rotated_from]
    digest = file_digest(path, prev_size if prev_size is not None and prev_size <= size else None,
                         hold_back=hold, encoding=encoding, prefix_sizes=sizes)
    name = str(path)
    same_prefix = prev is not None and digest.prefix_sha256 == prev["sha256"]
    # no complete byte beyond the stored ones (an entry ingested with --finished may hold more)
    stored = prev_size is not None and same_prefix and digest.size <= prev_size
    if (digest.size == 0 and digest.held_back) or stored or manifest.holds(options.host, digest.sha256):
        summary.skipped.append(name)
        if digest.held_back and not (stored and digest.file_size == prev_size):
            summary.waiting.append(name)  # only the unterminated last line is new (or there is no other)
            summary.held_back.append(name)
        return None
    prefix = None
    if prev is not None and same_prefix:
        if compressed:
            summary.recompressed.append(name)  # a grown compressed file: ingested whole as a new file
        elif not _ends_line(digest.prefix_tail, encoding):
            summary.recut.append(name)  # its last stored line may be stored cut: no append after it
        elif prev.get("format") in APPENDABLE:
            prefix = _prefix_of(manifest, prev, digest.prefix_lines)
        else:
            summary.regrown.append(name)
    else:
        base = None if compressed else _rotated_base(rotated_from, digest, encoding, size)
        if base is not None:
            summary.rotated.append(f"{name} (begins with {base['path']})")
            prefix = _prefix_of(manifest, base, digest.prefixes[int(base["size"])].lines)
        elif prev is not None:
            summary.rewritten.append(name)
    try:
        entry = _write_input(inp, dataset, options, digest, prefix, summary, finished, group)
    except _NotAppend:  # fewer samples (or counts) than stored: not prefix-stable; ingest it whole
        summary.rewritten.append(name)
        entry = _write_input(inp, dataset, options, digest, None, summary, finished, group)
    if entry is not None:
        summary.ingested.append(entry)
        if digest.held_back:
            summary.held_back.append(name)
    return entry


def _rotated_base(candidates: list[dict[str, Any]], digest: Digest, encoding: str,
                  size: int) -> dict[str, Any] | None:
    """The longest stored version (same host, same rotation family) this file begins with and
    continues after a complete line, in an appendable format: the file is a rotated copy of it."""
    for c in sorted(candidates, key=lambda e: -int(e["size"])):
        p = digest.prefixes.get(int(c["size"]))
        if (p is not None and p.sha256 == c["sha256"] and int(c["size"]) <= digest.size
                and _ends_line(p.tail, encoding) and c.get("format") in APPENDABLE):
            return c
    return None


_TERMINATORS = {
    "utf-8": (b"\n", b"\r"),
    "utf-16-le": (b"\n\x00", b"\r\x00"),
    "utf-16-be": (b"\x00\n", b"\x00\r"),
}


def _ends_line(tail: bytes, encoding: str) -> bool:
    """Whether bytes ending in ``tail`` (their last two) end with a line terminator."""
    ends = _TERMINATORS.get(encoding)
    return ends is None or tail.endswith(ends)


def _prefix_of(manifest: Manifest, prev: dict[str, Any], lines: int) -> _Prefix:
    chain = manifest.chain(prev)
    return _Prefix(
        entry=prev,
        records=sum(int(e["records"]) for e in chain),
        missing=sum(int(e["missing"]) for e in chain),
        rejected=sum(int(e["rejected"]) for e in chain),
        lines=lines,
        origin=chain[0].get("time_origin"),
    )


def _write_input(inp: Input, dataset: Path, options: ParseOptions, digest: Digest, prefix: _Prefix | None,
                 summary: IngestSummary, finished: bool = False, group: Group | None = None) -> dict[str, Any] | None:
    """Stream the extent of one input (its first ``digest.size`` bytes: what was hashed, even if the
    file grows meanwhile) into the dataset; its manifest entry, or None (unusable: in ``summary``).
    With ``prefix``, the first ``prefix.records`` samples are already stored and are skipped."""
    path = Path(inp.path)
    opts = options
    if prefix is not None and options.start is None and prefix.origin:
        opts = replace(options, start=parse_iso(prefix.origin))
    try:
        stream = stream_input(inp, opts, limit=digest.size)
    except InputError as exc:
        summary.unusable.append(exc)
        return None
    if stream.kind != "dcgm":
        stream.close()
        summary.unusable.append(InputError(
            str(path), f"is a {stream.format} export, not a DCGM metric stream",
            "`rooftop ingest` takes DCGM/nvidia-smi streams; use `rooftop analyze` for ncu exports"))
        return None
    if prefix is not None and stream.format != prefix.entry.get("format"):
        stream.close()
        raise _NotAppend(path)  # detected differently now: its samples need not line up
    skip = prefix.records if prefix is not None else 0
    small = group is not None and digest.size <= SMALL_BYTES  # held; written with its commit group
    writer: PartitionWriter | HeldInput = HeldInput() if small else PartitionWriter(dataset, digest.sha256[:16])
    seen = 0
    try:
        for batch in stream:
            n = batch.num_rows
            if seen + n > skip:
                write_samples(writer, batch.slice(max(0, skip - seen)) if seen < skip else batch)
            seen += n
        result = stream.result
        assert result is not None
        if seen < skip or (prefix is not None and min(
                result.accounting.records - prefix.records, result.accounting.missing - prefix.missing,
                result.accounting.rejected - prefix.rejected) < 0):
            raise _NotAppend(path)  # the earlier samples are not a prefix of these after all
        if prefix_sha256(path, digest.size) != digest.sha256:
            raise _Changed(path)  # truncated or rewritten while parsed: what was read is not what was hashed
        files = [] if isinstance(writer, HeldInput) else writer.commit()
    except InputError as exc:
        writer.abort()
        summary.unusable.append(exc)
        return None
    except BaseException:  # _NotAppend, _Changed, errors: nothing of this input is kept
        writer.abort()
        raise
    entry = manifest_entry(path, digest.size, digest.sha256, result, files, writer, prefix, host=opts.host)
    entry["held_back_bytes"] = digest.held_back
    if group is not None and isinstance(writer, HeldInput):
        group.add(entry, writer)  # its files are set when the group is written
    if finished:
        entry["finished"] = True
    return entry


def write_samples(writer: PartitionWriter | HeldInput, samples: pa.Table, batch_rows: int = BATCH_ROWS) -> None:
    """Feed ``samples`` to ``writer`` in slices (zero-copy) of at most ``batch_rows`` rows."""
    for start in range(0, samples.num_rows, batch_rows):
        writer.write(samples.slice(start, batch_rows))


def manifest_entry(path: Path, size: int, digest: str, result: ParseResult, files: list[str],
                   writer: PartitionWriter | HeldInput, prefix: _Prefix | None = None,
                   host: str | None = None) -> dict[str, Any]:
    """The manifest record of one ingest of ``path`` (identity: ``host``, canonical path); with
    ``prefix``, of its appended tail only."""
    acc = result.accounting
    rejected = result.rejected
    entry: dict[str, Any] = {
        "path": canonical(path),
        "host": host,
        "size": size,
        "sha256": digest,
        "format": acc.format,
        "kind": "file",
        "records": acc.records,
        "missing": acc.missing,
        "rejected": acc.rejected,
    }
    if prefix is not None:
        entry.update(kind="append", prefix_sha256=prefix.entry["sha256"], prefix_size=int(prefix.entry["size"]),
                     prefix_input=[prefix.entry.get("host"), prefix.entry["path"]],
                     records=acc.records - prefix.records, missing=acc.missing - prefix.missing,
                     rejected=acc.rejected - prefix.rejected)
        rejected = [r for r in rejected if r.line is None or r.line > prefix.lines]
    origin = result.meta.get("start")  # time of tick/scrape 0 when the parser stamped ticks
    if isinstance(origin, str):
        entry["time_origin"] = origin
    entry.update({
        "rows": writer.rows,
        "start": iso_ms(writer.start_ms),
        "end": iso_ms(writer.end_ms),
        "files": files,
        "rejected_examples": [r.as_dict() for r in rejected[:MAX_REJECTED_KEPT]],
        "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    })
    return entry


def _progress(items: list[Any], progress: ProgressArg) -> Any:
    return track(items, progress, "ingesting")  # the caller's callback (analyzer/progress.py)
