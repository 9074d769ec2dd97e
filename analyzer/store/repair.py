"""``rooftop ingest --repair``: drop manifest entries whose partition files are missing or unreadable,
and ingest their inputs again (docs/formulas.md#fleet-ingest).

An entry is broken when one of its files is absent or its Parquet footer cannot be read. A broken
entry takes its whole input with it (every entry of the same identity, and every append whose chain
leads to it), since an append's files hold only its tail: the input is then ingested again whole from
its path, if that still exists; if not, it is listed as lost. The remaining files of dropped entries
are deleted by the orphan sweep that follows.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from rooftop.analyzer.store.manifest import Identity, Manifest, entry_identity

if TYPE_CHECKING:
    from rooftop.analyzer.store.ingest_summary import IngestSummary


def _readable(root: Path, rel: str) -> bool:
    try:
        pq.read_metadata(root / rel)
    except (OSError, pa.ArrowException):
        return False
    return True


def broken_identities(manifest: Manifest) -> set[Identity]:
    """Identities with an entry whose partition file is missing or unreadable, closed under appends
    (an input appended to a broken one's version is broken too)."""
    bad = {entry_identity(e) for e in manifest.entries
           if not all(_readable(manifest.root, f) for f in e.get("files", []))}
    changed = True
    while changed:
        changed = False
        for e in manifest.entries:
            ident = entry_identity(e)
            if ident in bad or e.get("kind") != "append":
                continue
            if any(entry_identity(c) in bad for c in manifest.chain(e)):
                bad.add(ident)
                changed = True
    return bad


def repair_manifest(manifest: Manifest, summary: IngestSummary) -> list[Identity]:
    """Drop the broken inputs' entries (in memory; the caller commits) and return the identities
    ``(host, path)`` of those whose path still exists, to be ingested again with that host."""
    bad = broken_identities(manifest)
    if not bad:
        return []
    dropped: list[dict[str, Any]] = [e for e in manifest.entries if entry_identity(e) in bad]
    manifest.replace_entries([e for e in manifest.entries if entry_identity(e) not in bad])
    out: list[Identity] = []
    for ident in dict.fromkeys(entry_identity(e) for e in dropped):
        summary.repaired.append(ident[1])
        if os.path.isfile(ident[1]):
            out.append(ident)
        else:
            summary.lost.append(ident[1])
    return out
