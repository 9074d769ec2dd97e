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
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooftop.analyzer.store.batch import SMALL_BYTES, Group, HeldInput
from rooftop.analyzer.store.dataset import PartitionWriter, remove_orphans
from rooftop.analyzer.store.digest import TERMINATORS, Digest, file_digest, prefix_sha256
from rooftop.analyzer.store.ingest_entry import (
    Changed,
    NotAppend,
    StoredPrefix,
    ends_line,
    fill_host,
    input_host,
    manifest_entry,
    prefix_of,
    write_samples,
)
from rooftop.analyzer.store.ingest_summary import NOT_A_STREAM, IngestSummary
from rooftop.analyzer.store.layout import parse_iso
from rooftop.analyzer.store.lock import ingest_lock
from rooftop.analyzer.store.manifest import Manifest, canonical
from rooftop.errors import InputError
from rooftop.parsers import Input, open_input, stream_input
from rooftop.parsers.folders import scan_inputs
from rooftop.parsers.formats import FORMATS
from rooftop.parsers.prometheus.http import PromQuery, is_url, pull, source_dir
from rooftop.parsers.source import ParseOptions
from rooftop.progress import ProgressArg, bar_bytes, reading, track

COMMIT_EVERY = 64  # inputs per manifest commit, at least (more once the manifest is large)
COMMIT_BYTES = 256 << 20  # input bytes read before a commit, at most
READ_ATTEMPTS = 3  # digests and reads of a file that changes while it is read, before it is unusable
# formats whose samples come out in line order, so a longer file's first samples are the shorter one's
APPENDABLE = frozenset(f.name for f in FORMATS.values() if f.appendable)
# formats read line by line, whose unterminated last line is held back (a query JSON is one document)
LINE_FORMATS = frozenset(f.name for f in FORMATS.values() if f.line_based and f.kind == "samples")


def ingest_sources(inputs: Sequence[str], dataset: Path, options: ParseOptions, query: PromQuery | None = None,
                   progress: ProgressArg = None, finished: bool = False, repair: bool = False) -> IngestSummary:
    """``rooftop ingest``: files, folders (every file in them) and Prometheus servers (``http(s)://``,
    read over ``query``) into ``dataset``. Every server's range is read first, into hour files
    kept in the dataset (:func:`~rooftop.parsers.prometheus.http.source_dir`), before anything is
    stored; then everything is ingested as files (:func:`ingest_files`); the summary's
    :attr:`~IngestSummary.pulled` says what each server gave."""
    servers = list(dict.fromkeys(i for i in inputs if is_url(i)))
    scanned = scan_inputs([i for i in inputs if not is_url(i)], skip_unreadable=options.skip_unreadable)
    files, pulled = scanned.files, []
    if not files and not servers and scanned.skipped:
        raise scanned.skipped[0]
    if servers:
        if query is None:
            raise InputError(servers[0], "is a Prometheus server address, and reading it needs a range",
                             "give --since and --until (ISO 8601)")
        for server in servers:
            got = pull(server, query, source_dir(Path(dataset), server, query, query.step_s))
            files += got.files
            pulled.append(got.describe(server))
    summary = ingest_files(files, Path(dataset), options=options, progress=progress, finished=finished,
                           repair=repair)
    summary.pulled = pulled
    summary.unusable[:0] = scanned.skipped  # folder entries not read: named with the unusable inputs
    return summary


def ingest_files(paths: list[Path], dataset: Path, options: ParseOptions,
                 progress: ProgressArg = None, finished: bool = False, repair: bool = False) -> IngestSummary:
    """Ingest DCGM inputs into ``dataset`` (created if absent). Raises :class:`InputError` when
    there is nothing to ingest and every input is unusable, or the dataset cannot be written.
    ``finished``: the inputs are complete; an unterminated last line is ingested, not held back.
    ``repair``: first drop the entries whose partition files are missing or unreadable and
    re-ingest their inputs (:func:`rooftop.analyzer.store.repair.repair`).

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
        jobs = [(Path(p), options) for p in paths]
        if repair:
            from rooftop.analyzer.store.repair import load_for_repair, repair_manifest

            manifest, again = load_for_repair(dataset, summary)
            given = {canonical(p) for p in paths}
            jobs += [(Path(path), replace(options, host=host))
                     for host, path in dict.fromkeys([*again, *repair_manifest(manifest, summary)])
                     if path not in given or host != options.host]
        else:
            manifest = Manifest.load(dataset)
        summary.orphans_removed = remove_orphans(dataset, manifest)
        pending = pending_bytes = 0
        group = Group(dataset)  # small inputs written together before each commit
        one = progress if len(jobs) == 1 else None  # several: the bar counts inputs
        with _progress(jobs, progress) as items:
            for path, opts in items:
                with reading(one, f"ingesting {path.name}", bar_bytes(path)):
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
        if pending or summary.repaired or summary.manifest_notes or not (dataset / "_manifest.json").exists():
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


def _ingest_one(path: Path, dataset: Path, options: ParseOptions, manifest: Manifest,
                summary: IngestSummary, finished: bool = False, group: Group | None = None) -> dict[str, Any] | None:
    """Ingest one input; a file changed while it was read is digested and read again (up to
    :data:`READ_ATTEMPTS` times), so its entry records exactly the bytes that were parsed."""
    for _attempt in range(READ_ATTEMPTS):
        lists = ("rewritten", "recut", "regrown", "rotated", "recompressed")
        marks = [len(getattr(summary, name)) for name in lists]
        try:
            return _ingest_once(path, dataset, options, manifest, summary, finished, group)
        except Changed:
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
        elif not ends_line(digest.prefix_tail, encoding):
            summary.recut.append(name)  # its last stored line may be stored cut: no append after it
        elif prev.get("format") in APPENDABLE:
            prefix = prefix_of(manifest, prev, digest.prefix_lines)
        else:
            summary.regrown.append(name)
    else:
        base = None if compressed else _rotated_base(rotated_from, digest, encoding, size)
        if base is not None:
            summary.rotated.append(f"{name} (begins with {base['path']})")
            prefix = prefix_of(manifest, base, digest.prefixes[int(base["size"])].lines)
        elif prev is not None:
            summary.rewritten.append(name)
    try:
        entry = _write_input(inp, dataset, options, digest, prefix, summary, finished, group)
    except NotAppend:  # fewer samples (or counts) than stored: not prefix-stable; ingest it whole
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
                and ends_line(p.tail, encoding) and c.get("format") in APPENDABLE):
            return c
    return None


def _write_input(inp: Input, dataset: Path, options: ParseOptions, digest: Digest, prefix: StoredPrefix | None,
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
            str(path), f"is a {stream.format} export, {NOT_A_STREAM}",
            f"`rooftop ingest` takes DCGM/nvidia-smi streams; read this {stream.format} export with `rooftop analyze`"))
        return None
    if prefix is not None and stream.format != prefix.entry.get("format"):
        stream.close()
        raise NotAppend(path)  # detected differently now: its samples need not line up
    skip = prefix.records if prefix is not None else 0
    small = group is not None and digest.size <= SMALL_BYTES  # held; written with its commit group
    writer: PartitionWriter | HeldInput = HeldInput() if small else PartitionWriter(dataset, digest.sha256[:16])
    seen = 0
    own_host = input_host(path) if opts.host is None else None  # samples naming no host: the input's
    fill_with = opts.host if opts.host is not None else own_host  # --host also for Prometheus/JSON samples
    filled = 0
    try:
        for batch in stream:
            n = batch.num_rows
            if seen + n > skip:
                part = batch.slice(max(0, skip - seen)) if seen < skip else batch
                if fill_with is not None:
                    part, k = fill_host(part, fill_with)
                    filled += k
                write_samples(writer, part)
            seen += n
        result = stream.result
        assert result is not None
        if seen < skip or (prefix is not None and min(
                result.accounting.records - prefix.records, result.accounting.missing - prefix.missing,
                result.accounting.rejected - prefix.rejected) < 0):
            raise NotAppend(path)  # the earlier samples are not a prefix of these after all
        if prefix_sha256(path, digest.size) != digest.sha256:
            raise Changed(path)  # truncated or rewritten while parsed: what was read is not what was hashed
        files = [] if isinstance(writer, HeldInput) else writer.commit()
    except InputError as exc:
        writer.abort()
        summary.unusable.append(exc)
        return None
    except BaseException:  # NotAppend, Changed, errors: nothing of this input is kept
        writer.abort()
        raise
    entry = manifest_entry(path, digest.size, digest.sha256, result, files, writer, prefix, host=opts.host)
    entry["held_back_bytes"] = digest.held_back
    if filled and own_host is not None:
        entry["host_from_input"] = own_host
    if group is not None and isinstance(writer, HeldInput):
        group.add(entry, writer)  # its files are set when the group is written
    if finished:
        entry["finished"] = True
    return entry


def _progress(items: list[Any], progress: ProgressArg) -> Any:
    return track(items, progress, "ingesting")  # the caller's callback (rooftop/progress.py)
