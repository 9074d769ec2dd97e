"""Atomic files in a fleet dataset: a file replaced by rename after fsync, so no reader sees half a
file, and the removal of what an interrupted ingest left (docs/formulas.md#fleet-ingest)."""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rooftop.analyzer.store.manifest import MANIFEST

if TYPE_CHECKING:
    from rooftop.analyzer.store.manifest import Manifest

TMP_SUFFIX = ".tmp"


def fsync_dir(folder: Path) -> None:
    """fsync a folder (its renames durable); errors ignored where a file system cannot."""
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
