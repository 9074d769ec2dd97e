"""``rooftop ingest``: DCGM inputs into the partitioned Parquet dataset (idempotent, incremental, atomic).

Per input: checksum (streamed) → skip when the manifest already holds that SHA-256 → parse
(``parsers.parse_path``) → write the sample table in slices of :data:`BATCH_ROWS` rows into one
temporary file per ``date/host`` partition → rename → manifest entry. The manifest is rewritten
atomically every :data:`COMMIT_EVERY` inputs and at the end, so a crash loses at most the inputs
since the last commit (they are re-ingested next time; their orphan files are removed).

Memory: the writer side holds one slice plus one row group per open partition. The parser side is
the parser's: ``ParseResult.samples`` is a whole table, so a single huge input costs its parsed size
(about 20-30 bytes per sample in Arrow), not its text size; split very large dumps before ingesting.
"""

from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa

from analyzer.fleet.dataset import (
    Manifest,
    PartitionWriter,
    file_sha256,
    ingest_lock,
    iso_ms,
    remove_orphans,
)
from parsers import InputError, ParseOptions, ParseResult, parse_path, validate_samples

BATCH_ROWS = 1_000_000
COMMIT_EVERY = 64
MAX_REJECTED_KEPT = 50


@dataclass
class IngestSummary:
    """What one ``ingest`` run did."""

    dataset: Path
    ingested: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    unusable: list[InputError] = field(default_factory=list)
    orphans_removed: int = 0
    seconds: float = 0.0

    @property
    def rows(self) -> int:
        return sum(int(e["records"]) for e in self.ingested)

    @property
    def files(self) -> int:
        return sum(len(e["files"]) for e in self.ingested)

    def describe(self) -> str:
        rej = sum(int(e["rejected"]) for e in self.ingested)
        miss = sum(int(e["missing"]) for e in self.ingested)
        lines = [
            f"ingested {len(self.ingested)} input(s) into {self.dataset}: {self.rows:,} samples "
            f"({miss:,} missing, {rej:,} rejected) in {self.files} partition file(s), "
            f"{self.seconds:.1f} s"
        ]
        if self.skipped:
            lines.append(f"skipped {len(self.skipped)} input(s) already in the dataset (same SHA-256)")
        for exc in self.unusable:
            lines.append(f"unusable: {exc}")
        if self.orphans_removed:
            lines.append(f"removed {self.orphans_removed} file(s) left by an interrupted ingest")
        return "\n".join(lines)


def ingest_files(paths: list[Path], dataset: Path, options: ParseOptions,
                 progress: bool = False) -> IngestSummary:
    """Ingest DCGM inputs into ``dataset`` (created if absent). Raises :class:`InputError` when
    there is nothing to ingest and every input is unusable, or the dataset cannot be written."""
    t0 = time.perf_counter()
    dataset = Path(dataset)
    if dataset.exists() and not dataset.is_dir():
        raise InputError(str(dataset), "exists and is not a folder", "choose a dataset folder")
    try:
        dataset.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(str(dataset), f"cannot be created ({exc.strerror or exc})",
                         "check the path and permissions") from exc
    if not paths:
        raise InputError(str(dataset), "no input files given", "pass DCGM exports or a folder of them")
    summary = IngestSummary(dataset)
    with ingest_lock(dataset):
        manifest = Manifest.load(dataset)
        summary.orphans_removed = remove_orphans(dataset, manifest)
        known = manifest.sha256s()
        pending = 0
        with _progress(paths, progress) as items:
            for path in items:
                entry = _ingest_one(Path(path), dataset, options, known, summary)
                if entry is None:
                    continue
                manifest.entries.append(entry)
                known.add(entry["sha256"])
                pending += 1
                if pending >= COMMIT_EVERY:
                    manifest.save()
                    pending = 0
        if pending or not (dataset / "_manifest.json").exists():
            manifest.save()
    summary.seconds = time.perf_counter() - t0
    if not summary.ingested and not summary.skipped and summary.unusable:
        raise summary.unusable[0]
    return summary


def _ingest_one(path: Path, dataset: Path, options: ParseOptions, known: set[str],
                summary: IngestSummary) -> dict[str, Any] | None:
    try:
        size = path.stat().st_size
        digest = file_sha256(path)
    except OSError as exc:
        summary.unusable.append(InputError(str(path), f"cannot be read ({exc.strerror or exc})",
                                           "check the path and permissions"))
        return None
    if digest in known:
        summary.skipped.append(str(path))
        return None
    try:
        result = parse_path(path, options)
    except InputError as exc:
        summary.unusable.append(exc)
        return None
    if result.kind != "dcgm":
        summary.unusable.append(InputError(
            str(path), f"is a {result.accounting.format} export, not a DCGM metric stream",
            "`rooftop ingest` takes DCGM/nvidia-smi streams; use `rooftop analyze` for ncu exports"))
        return None
    samples = validate_samples(result.samples)
    writer = PartitionWriter(dataset, digest[:16])
    try:
        write_samples(writer, samples)
        files = writer.commit()
    except BaseException:
        writer.abort()
        raise
    entry = manifest_entry(path, size, digest, result, files, writer)
    summary.ingested.append(entry)
    return entry


def write_samples(writer: PartitionWriter, samples: pa.Table, batch_rows: int = BATCH_ROWS) -> None:
    """Feed ``samples`` to ``writer`` in slices (zero-copy) of at most ``batch_rows`` rows."""
    for start in range(0, samples.num_rows, batch_rows):
        writer.write(samples.slice(start, batch_rows))


def manifest_entry(path: Path, size: int, digest: str, result: ParseResult, files: list[str],
                   writer: PartitionWriter) -> dict[str, Any]:
    acc = result.accounting
    return {
        "path": str(path),
        "size": size,
        "sha256": digest,
        "format": acc.format,
        "records": acc.records,
        "missing": acc.missing,
        "rejected": acc.rejected,
        "rows": writer.rows,
        "start": iso_ms(writer.start_ms),
        "end": iso_ms(writer.end_ms),
        "files": files,
        "rejected_examples": [r.as_dict() for r in result.rejected[:MAX_REJECTED_KEPT]],
        "ingested_at": datetime.now(timezone.utc).isoformat(timespec="seconds").replace("+00:00", "Z"),
    }


def _progress(items: list[Path], enabled: bool) -> Any:
    if not enabled or len(items) < 2:
        return contextlib.nullcontext(items)
    import click

    return click.progressbar(items, label="ingesting", file=None)
