"""``rooftop ingest --repair``: drop manifest entries whose partition files are missing or unreadable,
and ingest their inputs again (docs/formulas.md#fleet-ingest).

The manifest itself may be what is broken (:func:`load_for_repair`): an entry that does not
validate is dropped and its input ingested again when its path still exists (else named as
lost); a manifest that is not JSON, or not a manifest at all (a report written over it), is kept
as ``_manifest.json.broken-<time>``, and since nothing then says which inputs its partition files
hold, those are moved (renamed, not deleted) to ``_unreferenced/<time>/`` and the summary says so:
the dataset is readable again (empty), and the inputs can be ingested again.

An entry is broken when one of its files is absent or its Parquet footer cannot be read. A broken
entry takes its whole input with it (every entry of the same identity, and every append whose chain
leads to it), since an append's files hold only its tail: the input is then ingested again whole from
its path, if that still exists; if not, it is listed as lost. The remaining files of dropped entries
are deleted by the orphan sweep that follows.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pyarrow as pa
import pyarrow.parquet as pq

from rooftop.analyzer.store.manifest import (
    MANIFEST,
    Identity,
    Manifest,
    check_entry,
    check_top,
    entry_identity,
)
from rooftop.errors import InputError

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


def load_for_repair(root: Path, summary: IngestSummary) -> tuple[Manifest, list[Identity]]:
    """The manifest for ``--repair`` (see the module docstring) and the identities of inputs whose
    entries were invalid and whose path still exists, to be ingested again."""
    path = root / MANIFEST
    if not path.exists():
        _set_aside(root, None, summary, "there is no _manifest.json")
        return Manifest(root), []
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        raw = check_top(path, data)
    except (OSError, ValueError, RecursionError, InputError) as exc:
        _set_aside(root, path, summary, f"_manifest.json is not a manifest ({str(exc)[:160]})")
        return Manifest(root), []
    kept: list[dict[str, Any]] = []
    again: list[Identity] = []
    for i, e in enumerate(raw):
        try:
            kept.append(check_entry(path, i, e))
        except InputError as exc:
            where: str = str(e["path"]) if isinstance(e, dict) and isinstance(e.get("path"), str) else f"inputs[{i}]"
            summary.manifest_notes.append(f"dropped the invalid entry {where} ({exc.reason})")
            summary.repaired.append(where)
            host = e.get("host") if isinstance(e, dict) and isinstance(e.get("host"), str) else None
            if isinstance(e, dict) and isinstance(e.get("path"), str) and os.path.isfile(e["path"]):
                again.append((host, os.path.abspath(e["path"])))
            else:
                summary.lost.append(where)
    return Manifest(root, kept), again


def _set_aside(root: Path, manifest: Path | None, summary: IngestSummary, why: str) -> None:
    """Keep a broken manifest as ``_manifest.json.broken-<time>`` and move the partition folders
    it may have named to ``_unreferenced/<time>/`` (nothing deleted); say so in the summary."""
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    if manifest is not None:
        kept = root / f"{MANIFEST}.broken-{stamp}"
        os.replace(manifest, kept)
        summary.manifest_notes.append(f"{why}: kept as {kept.name}")
    folders = sorted(p for p in root.glob("date=*") if p.is_dir() and not p.is_symlink())
    if not folders:
        return
    aside = root / "_unreferenced" / stamp
    aside.mkdir(parents=True, exist_ok=True)
    for p in folders:
        os.replace(p, aside / p.name)
    n = sum(1 for _ in aside.rglob("*.parquet"))
    summary.manifest_notes.append(f"{why}, so nothing says which inputs its {n} partition file(s) hold: moved "
                                  f"to {aside.relative_to(root)} (not deleted, not read); ingest the inputs again")
