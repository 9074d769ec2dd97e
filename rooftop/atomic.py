"""Files replaced atomically: written under a hidden temporary name in the same folder, fsynced,
renamed over the target, the folder fsynced, so a reader sees the old file or the whole new one,
never half. Serves both the report outputs (:func:`write_atomic`) and the fleet dataset's manifest
(:func:`replace_file`; docs/formulas.md#fleet-ingest)."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from pathlib import Path

from rooftop.errors import OutputError

__all__ = ["TMP_SUFFIX", "fsync_dir", "replace_file", "sweep_stale", "write_atomic"]

TMP_SUFFIX = ".tmp"  # every temporary name ends so: ``.<name>.<pid>-<random>.tmp`` (what an orphan sweep removes)


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


def _mode(path: Path) -> int:
    """The mode of the regular file ``path`` replaces, else what ``open()`` would create (0666 less
    the umask), never ``mkstemp``'s 0600: reports, and a dataset Dask workers or a reporting account
    read, are shared files."""
    try:
        st = os.stat(path, follow_symlinks=False)
    except OSError:
        st = None
    if st is not None and stat.S_ISREG(st.st_mode):
        return stat.S_IMODE(st.st_mode)
    return 0o666 & ~_umask()


def _alive(pid: int) -> bool:
    """Whether a process ``pid`` runs on this machine (one we may not signal counts as running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_stale(path: Path) -> int:
    """Remove the temporaries of ``path`` that a killed writer left (``kill -9``: no clean-up ran):
    those whose process id, in their name, runs no more on this machine. Returns how many."""
    prefix = f".{path.name}."
    removed = 0
    with contextlib.suppress(OSError), os.scandir(path.parent) as it:
        for e in it:
            if not (e.name.startswith(prefix) and e.name.endswith(TMP_SUFFIX)):
                continue
            pid_text = e.name[len(prefix):].split("-", 1)[0]
            if pid_text.isdigit() and int(pid_text) != os.getpid() and not _alive(int(pid_text)) \
                    and e.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError):
                    os.unlink(e.path)
                    removed += 1
    return removed


def replace_file(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` atomically (a symlink at ``path`` is replaced, not followed).
    On any failure the temporary file is removed and the error raised as it came; temporaries of
    ``path`` a killed writer left are removed first (:func:`sweep_stale`)."""
    mode = _mode(path)
    sweep_stale(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.{os.getpid()}-", suffix=TMP_SUFFIX, dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            if hasattr(os, "fchmod"):
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        if not hasattr(os, "fchmod"):  # pragma: no cover - Windows
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    fsync_dir(path.parent)


def write_atomic(path: str | Path, data: str | bytes) -> Path:
    """A report output written atomically (:func:`replace_file`); :class:`OutputError` naming the
    file and what to do when its folder is missing or it cannot be written."""
    target = Path(path)
    folder = target.parent if str(target.parent) else Path(".")
    if not folder.is_dir():
        raise OutputError(f"{target}: folder {folder} does not exist (create it or choose another path)")
    try:
        replace_file(target, data.encode("utf-8") if isinstance(data, str) else data)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise OutputError(f"{target}: cannot write ({reason}); free space or choose another path") from exc
    return target
