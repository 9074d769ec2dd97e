"""The files a folder named on the command line stands for, and every entry it does not read, named.

A folder means every regular file in it and its subfolders, sorted by path; hidden files (a name
starting with ``.``) are not read. Nothing is passed over without a word (docs/formulas.md#inputs,
"Folders"): each entry that is not read becomes an :class:`InputError` the caller lists with the
unusable inputs (the summary, the JSON's ``inputs`` and ``rejected``):

- a symlink to a folder is not followed (it can lead out of the folder or back into it: a loop);
  name it on the command line to read it;
- a dangling symlink, a symlink loop, or an entry that is not a regular file (FIFO, socket,
  device) is not read;
- a subfolder that cannot be listed (no permission) stops the run, unless ``skip_unreadable``
  (``--skip-unreadable``): then it is listed too.

A symlink to a regular file is read like the file. A path named on the command line is taken as
given (a symlinked folder named there is walked).
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

from rooftop.errors import InputError


@dataclass
class Scanned:
    """What the command line's paths stand for: files to read, and entries not read (named)."""

    files: list[Path] = field(default_factory=list)
    skipped: list[InputError] = field(default_factory=list)


def scan_inputs(paths: list[str] | tuple[str, ...], *, skip_unreadable: bool = False) -> Scanned:
    """Files named on the command line; a folder means every regular file in it (see the module
    docstring for what is not read and how it is said)."""
    out = Scanned()
    for raw in paths:
        p = Path(raw)
        if p.is_dir():
            found: list[Path] = []
            _walk(p, found, out.skipped, skip_unreadable)
            out.files.extend(sorted(found))
        else:
            out.files.append(p)
    return out


def _walk(folder: Path, found: list[Path], skipped: list[InputError], skip_unreadable: bool) -> None:
    try:
        with os.scandir(folder) as it:
            entries = sorted(it, key=lambda e: e.name)
    except OSError as exc:
        err = InputError(str(folder), f"folder cannot be listed ({exc.strerror or exc})",
                         "fix its permissions, or pass --skip-unreadable to go on without it")
        if not skip_unreadable:
            raise err from exc
        skipped.append(err)
        return
    for e in entries:
        path = Path(folder, e.name)
        if e.is_symlink():
            why = _symlink(path)
            if why is None:
                if not e.name.startswith("."):
                    found.append(path)
            else:
                skipped.append(InputError(str(path), why[0], why[1]))
        elif e.is_dir(follow_symlinks=False):
            _walk(path, found, skipped, skip_unreadable)
        elif e.name.startswith("."):
            continue
        elif e.is_file(follow_symlinks=False):
            found.append(path)
        else:
            skipped.append(InputError(str(path), "is not a regular file (a FIFO, socket or device): not read",
                                      "write the stream to a file first"))


def _symlink(path: Path) -> tuple[str, str] | None:
    """Why the symlink ``path`` is not read, or None when it leads to a regular file."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return ("is a dangling symlink (its target does not exist): not read", "fix or remove the link")
    except OSError as exc:
        return (f"is a symlink that cannot be followed ({exc.strerror or exc}; a loop?): not read",
                "fix or remove the link")
    if stat.S_ISDIR(st.st_mode):
        return ("is a symlink to a folder: not followed (it may lead out of the folder, or back into it)",
                "name it on the command line to read it")
    if not stat.S_ISREG(st.st_mode):
        return ("is a symlink to something that is not a regular file: not read", "write the stream to a file first")
    return None
