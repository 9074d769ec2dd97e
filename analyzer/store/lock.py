"""One ``rooftop ingest`` at a time per dataset: an ``flock`` on ``DATASET/_ingest.lock``.

Rules (docs/formulas.md#fleet-ingest):

* The lock is the kernel's advisory lock on the open file, taken atomically (``LOCK_EX | LOCK_NB``;
  Windows: ``msvcrt.locking``) and released by the kernel when its process ends, however it ends
  (``kill -9`` included). So a lock file that exists but is not locked (empty, or naming a dead
  owner: left by a killed ingest or an older rooftop) is stale by construction and simply reused;
  no process ever decides another's lock is stale, so two ingests can never both take it over.
* After locking, the holder checks that the path still names the file it locked (another process
  may have unlinked it meanwhile) and retries otherwise; it unlinks the file while still holding it.
* The owner line (``host pid``) written into the file is for messages only.
* The lock is opened with ``O_NOFOLLOW`` and must be a regular file with one link: a lock path
  replaced by a symlink (or a hard link) to a file outside the dataset is refused, never
  truncated through.
* Before every manifest commit the holder re-checks that the path still names its locked file
  (:meth:`IngestLock.check`); if someone deleted the lock by hand and another ingest started, the
  commit is refused instead of overwriting the other's.
"""

from __future__ import annotations

import contextlib
import errno
import os
import socket
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

from rooftop.errors import InputError

LOCK = "_ingest.lock"
_RETRIES = 50


def _try_lock(fd: int) -> bool:
    if sys.platform == "win32":  # pragma: no cover - exercised on Windows only
        import msvcrt

        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True
    import fcntl

    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def _open_lock(path: Path) -> int:
    """The lock file opened for writing, never through a link: ``O_NOFOLLOW`` (a symlink at the
    path is refused, not followed out of the dataset), and it must be a regular file with one link
    (a hard link to a file elsewhere would be truncated with it)."""
    flags = os.O_CREAT | os.O_RDWR | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise _foreign(path, "is a symbolic link") from exc
        raise
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode) or st.st_nlink != 1:
        os.close(fd)
        raise _foreign(path, "is not a regular file" if not stat.S_ISREG(st.st_mode) else
                       f"has {st.st_nlink} hard links")
    return fd


def _foreign(path: Path, what: str) -> InputError:
    return InputError(str(path), f"{what}: rooftop never writes through it (it could lead out of the dataset)",
                      "remove it (no ingest is running if none holds it), then run the ingest again")


def _same_file(fd: int, path: Path) -> bool:
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return False
    mine = os.fstat(fd)
    return (st.st_dev, st.st_ino) == (mine.st_dev, mine.st_ino)


class IngestLock:
    """The held lock of one dataset (see the module docstring)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = root / LOCK
        self.fd = -1

    def acquire(self) -> None:
        for _ in range(_RETRIES):
            fd = _open_lock(self.path)
            if not _try_lock(fd):
                owner = _read_owner(fd)
                os.close(fd)
                raise InputError(str(self.root), f"another `rooftop ingest` is writing this dataset{owner}",
                                 "wait for it to finish (its lock is released when it ends, even if killed)")
            if _same_file(fd, self.path):
                os.ftruncate(fd, 0)
                os.write(fd, f"{socket.gethostname()} {os.getpid()}\n".encode())
                self.fd = fd
                return
            os.close(fd)  # unlinked by its previous holder between our open and our lock: retry
        raise InputError(str(self.root), "could not lock the dataset (its lock file keeps changing)",
                         "check that nothing else deletes _ingest.lock, then retry")

    def check(self) -> None:
        """Raise unless this process still holds the lock the path names."""
        if self.fd < 0 or not _same_file(self.fd, self.path):
            raise InputError(str(self.path), "was removed or replaced while this ingest held it",
                             "another ingest may be writing the dataset: nothing was committed; "
                             "run this ingest again once it has finished")

    def release(self) -> None:
        if self.fd < 0:
            return
        with contextlib.suppress(OSError):
            if _same_file(self.fd, self.path):
                os.unlink(self.path)  # still locked: nobody can take this inode meanwhile
        os.close(self.fd)  # releases the lock
        self.fd = -1


def _read_owner(fd: int) -> str:
    with contextlib.suppress(OSError, UnicodeDecodeError):
        text = os.pread(fd, 200, 0).decode().strip()
        if text:
            return f" ({text.splitlines()[0]!r}: host and process id)"
    return ""


@contextlib.contextmanager
def ingest_lock(root: Path) -> Iterator[IngestLock]:
    """Hold the dataset's ingest lock for the ``with`` block."""
    lock = IngestLock(root)
    lock.acquire()
    try:
        yield lock
    finally:
        lock.release()
