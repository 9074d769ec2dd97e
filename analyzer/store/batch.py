"""Small inputs written together: one Parquet file per partition per commit group, not per input.

A nightly folder of thousands of small files (one scrape each) would otherwise cost one Parquet
writer, one ``fsync`` and one directory ``fsync`` per file and partition (measured: most of the
ingest time, bench/NOTES.md "ingest of 10,000 small files"). An input of at most
:data:`SMALL_BYTES` is parsed and checked as any other, its samples held in memory
(:class:`HeldInput`); before each manifest commit the held inputs of the group are written by one
:class:`~rooftop.analyzer.store.dataset.PartitionWriter` and each entry's ``files`` set to the
partition files holding its rows. Several entries may then name the same file: readers deduplicate
(``Manifest.files``, ``pipeline.select_files``), ``--repair`` drops every entry of a broken file.
docs/formulas.md#fleet-ingest.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from rooftop.analyzer.store.dataset import PartitionWriter, canonical_samples, widen_span

SMALL_BYTES = 1 << 20  # inputs up to this size are held and written with their commit group
MAX_HELD_BYTES = 64 << 20  # Arrow bytes held over a group before it is written early


class HeldInput:
    """Collects one small input's samples in memory (the interface of ``PartitionWriter`` that
    ``_write_input`` uses: ``write``, ``rows``, ``start_ms``, ``end_ms``, ``abort``)."""

    def __init__(self) -> None:
        self.tables: list[pa.Table] = []
        self.rows = 0
        self.nbytes = 0
        self.start_ms: int | None = None
        self.end_ms: int | None = None

    def write(self, table: pa.Table) -> None:
        if table.num_rows == 0:
            return
        table = canonical_samples(table)
        lo, hi = pc.min_max(table.column("timestamp").cast(pa.int64())).values()
        self.start_ms, self.end_ms = widen_span(self.start_ms, self.end_ms, lo.as_py(), hi.as_py())
        self.tables.append(table)
        self.rows += table.num_rows
        self.nbytes += table.nbytes

    def abort(self) -> None:
        self.tables.clear()


@dataclass
class Group:
    """The held inputs of one commit group and their (not yet complete) manifest entries."""

    root: Path
    members: list[tuple[dict[str, Any], HeldInput]] = field(default_factory=list)
    nbytes: int = 0

    def add(self, entry: dict[str, Any], held: HeldInput) -> None:
        self.members.append((entry, held))
        self.nbytes += held.nbytes

    @property
    def full(self) -> bool:
        return self.nbytes >= MAX_HELD_BYTES

    def flush(self) -> None:
        """Write the held samples (one file per partition), set each entry's ``files``."""
        if not self.members:
            return
        stem = "g" + sha256("".join(e["sha256"] for e, _ in self.members).encode()).hexdigest()[:15]
        writer = PartitionWriter(self.root, stem)
        touched: list[set[str]] = []
        try:
            for _entry, held in self.members:
                writer.touched = set()
                for t in held.tables:
                    writer.write(t)
                touched.append(writer.touched)
            writer.commit()
        except BaseException:
            writer.abort()
            raise
        for (entry, _held), parts in zip(self.members, touched, strict=True):
            entry["files"] = sorted(f"{p}/part-{stem}.parquet" for p in parts)
        self.members.clear()
        self.nbytes = 0
