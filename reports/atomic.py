"""Write output files atomically: a temporary name in the same folder, then rename."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


class OutputError(Exception):
    """An output that cannot be written (missing folder, no permission, disk full)."""


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the whole new one, never half."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{target}: folder {folder} does not exist (create it or choose another path)")
    payload = data.encode("utf-8") if isinstance(data, str) else data
    tmp = ""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=folder)
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; reports are shared files
        os.replace(tmp, target)
    except OSError as exc:
        if tmp:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        reason = exc.strerror or str(exc)
        raise OutputError(f"{target}: cannot write ({reason}); free space or choose another path") from exc
    return target
