"""The manifest entry of one ingested input, and what the dataset already holds of a grown file
(its stored prefix: earlier entries and their totals) (docs/formulas.md#fleet-ingest)."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa

from rooftop.analyzer.assumed_times import times_assumed
from rooftop.analyzer.document import created_now
from rooftop.analyzer.store.batch import HeldInput
from rooftop.analyzer.store.dataset import PartitionWriter
from rooftop.analyzer.store.digest import TERMINATORS
from rooftop.analyzer.store.layout import iso_ms
from rooftop.analyzer.store.manifest import Manifest, canonical, rotation_base
from rooftop.parsers.model import ParseResult

BATCH_ROWS = 1_000_000
MAX_REJECTED_KEPT = 50


class NotAppend(Exception):
    """A grown file is not an append after all: another format now, or fewer samples (or fewer
    records, missing or rejected) than stored."""


class Changed(Exception):
    """The file's hashed extent changed (truncated or rewritten) while it was being parsed."""


@dataclass(frozen=True)
class StoredPrefix:
    """What the dataset already holds of a grown file: its earlier entries and their totals."""

    entry: dict[str, Any]  # the latest earlier entry (its sha256 is the prefix's)
    records: int
    missing: int
    rejected: int
    lines: int  # newlines in the prefix: rejections at later lines belong to the tail
    origin: str | None  # time of tick/scrape 0 the earlier ingest stamped with


def prefix_of(manifest: Manifest, prev: dict[str, Any], lines: int) -> StoredPrefix:
    """What the dataset holds of the file whose latest stored version is ``prev``: that entry and
    the totals of its chain of entries; ``lines``: the newlines in that prefix."""
    chain = manifest.chain(prev)
    return StoredPrefix(
        entry=prev,
        records=sum(int(e["records"]) for e in chain),
        missing=sum(int(e["missing"]) for e in chain),
        rejected=sum(int(e["rejected"]) for e in chain),
        lines=lines,
        origin=chain[0].get("time_origin"),
    )


def ends_line(tail: bytes, encoding: str) -> bool:
    """Whether bytes ending in ``tail`` (their last two) end with a line terminator of ``encoding``
    (any other encoding: True)."""
    ends = TERMINATORS.get(encoding)
    return ends is None or tail.endswith(ends[:2])


def input_host(path: Path) -> str:
    """The host key of an input whose samples name no host and that was given no ``--host``:
    ``input:<name>#<6 hex>`` from its rotation family (folder + name without logrotate suffixes), so
    two machines' files never share a GPU key and a rotated log keeps its own (docs/formulas.md#fleet,
    "GPU identity")."""
    folder, base = rotation_base(canonical(path))
    tag = hashlib.sha256(f"{folder}/{base}".encode()).hexdigest()[:6]
    return f"input:{base}#{tag}"


def fill_host(samples: pa.Table, host: str) -> tuple[pa.Table, int]:
    """``samples`` with missing ``host`` values set to ``host``, and how many were filled."""
    col = samples.column("host")
    missing = col.null_count
    if not missing:
        return samples, 0
    import pyarrow.compute as pc

    filled = pc.fill_null(col, pa.scalar(host, col.type))
    return samples.set_column(samples.schema.get_field_index("host"), "host", filled), missing


def write_samples(writer: PartitionWriter | HeldInput, samples: pa.Table, batch_rows: int = BATCH_ROWS) -> None:
    """Feed ``samples`` to ``writer`` in slices (zero-copy) of at most ``batch_rows`` rows."""
    for start in range(0, samples.num_rows, batch_rows):
        writer.write(samples.slice(start, batch_rows))


def manifest_entry(path: Path, size: int, digest: str, result: ParseResult, files: list[str],
                   writer: PartitionWriter | HeldInput, prefix: StoredPrefix | None = None,
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
    assumed = times_assumed(acc.format, result.meta)
    if assumed:
        entry["times_assumed"] = assumed
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
        "ingested_at": created_now(),
    })
    return entry
