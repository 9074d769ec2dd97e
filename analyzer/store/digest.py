"""Checksums of a fleet input: SHA-256 of its complete extent (up to its last line terminator, the
rest held back) and of the prefixes a grown or rotated file may continue (docs/formulas.md#fleet-ingest)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from hashlib import sha256
from pathlib import Path
from typing import Any

DIGEST_CHUNK = 1 << 20  # bytes per read while hashing an input


def file_sha256(path: Path) -> str:
    """SHA-256 of the whole file, streamed."""
    h = sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


@dataclass(frozen=True)
class Prefix:
    """SHA-256 of a file's first ``size`` bytes, the line terminators in them, their last two bytes."""

    sha256: str
    lines: int
    tail: bytes


@dataclass(frozen=True)
class Digest:
    """SHA-256 and size of a file's ingested extent, and of some of its prefixes.

    ``size``/``sha256``: the complete extent (with ``hold_back``: up to and including the last line
    terminator) or the whole file; ``held_back``: the bytes after the extent (an unterminated last
    line). ``prefixes``: for each asked prefix size the file is at least as long as, its
    :class:`Prefix`. ``prefix_sha256``/``prefix_lines``/``prefix_tail``: those of ``prefix_size``.
    """

    sha256: str
    size: int
    prefix_sha256: str | None = None
    prefix_lines: int = 0
    held_back: int = 0
    prefix_tail: bytes = b""
    prefixes: dict[int, Prefix] = field(default_factory=dict)

    @property
    def file_size(self) -> int:
        return self.size + self.held_back


# line terminators (newline, carriage return) and their alignment, per encoding
TERMINATORS: dict[str, tuple[bytes, bytes, int]] = {
    "utf-8": (b"\n", b"\r", 1),
    "utf-16-le": (b"\n\x00", b"\r\x00", 2),
    "utf-16-be": (b"\x00\n", b"\x00\r", 2),
}


def _rfind_aligned(chunk: bytes, needle: bytes, base: int, align: int) -> int:
    """Index just past the last ``needle`` in ``chunk`` starting at an absolute offset (``base`` +
    index) that is a multiple of ``align`` (a UTF-16 code unit), or -1."""
    end = len(chunk)
    while True:
        i = chunk.rfind(needle, 0, end)
        if i < 0 or (base + i) % align == 0:
            return -1 if i < 0 else i + len(needle)
        end = i + len(needle) - 1


def file_digest(path: Path, prefix_size: int | None = None, *, hold_back: bool = False,
                encoding: str = "utf-8", prefix_sizes: Iterable[int] = ()) -> Digest:
    """One streamed pass (bounded memory) over ``path``.

    With ``hold_back``, the extent ends after the last line terminator (a file without any newline:
    after the last carriage return; without either: it is empty) and the rest is held back; else it
    is the whole file. ``encoding``: the terminators are those of ``utf-8`` or ``utf-16-le``/``-be``
    (code units at even offsets; the BOM is 2 bytes and :data:`DIGEST_CHUNK` is even, so a unit
    never straddles chunks). For ``prefix_size`` and each of ``prefix_sizes`` the file is at least
    that long: the :class:`Prefix` of its first that many bytes (the file's bytes, whatever the extent).

    One function of about 75 lines: the hash state, line count and cut points are carried from
    chunk to chunk of a single read loop, and splitting the loop would only pass them back and forth.
    """
    nl_bytes, cr_bytes, align = TERMINATORS.get(encoding, TERMINATORS["utf-8"])
    wanted = sorted({s for s in (*prefix_sizes, *(() if prefix_size is None else (prefix_size,))) if s >= 0})
    h = sha256()
    done = 0
    lines = 0
    tail = b""  # the last two bytes hashed
    prefixes: dict[int, Prefix] = {}
    at_nl: tuple[Any, int] | None = None  # hash state and size after the last newline
    at_cr: tuple[Any, int] | None = None  # the same after the last carriage return, while no newline was seen
    with path.open("rb") as fh:
        chunk = b""
        while True:
            while wanted and wanted[0] <= done:  # a cut at the end of what was hashed so far
                prefixes[wanted.pop(0)] = Prefix(h.hexdigest(), lines, tail)
            chunk = fh.read(DIGEST_CHUNK)
            if not chunk:
                break
            cuts: dict[int, list[str]] = {}
            for w in wanted:
                if w >= done + len(chunk):
                    break
                cuts.setdefault(w - done, []).append("prefix")
            if hold_back:
                nl = _rfind_aligned(chunk, nl_bytes, done, align)
                if nl >= 0:
                    cuts.setdefault(nl, []).append("nl")
                    at_cr = None
                elif at_nl is None:
                    cr = _rfind_aligned(chunk, cr_bytes, done, align)
                    if cr >= 0:
                        cuts.setdefault(cr, []).append("cr")
            pos = 0
            for cut in sorted(cuts):
                piece = chunk[pos:cut]
                h.update(piece)
                lines += piece.count(nl_bytes)
                tail = (tail + piece[-2:])[-2:]
                pos = cut
                for what in cuts[cut]:
                    if what == "prefix":
                        prefixes[wanted.pop(0)] = Prefix(h.hexdigest(), lines, tail)  # hexdigest does not finalize
                    elif what == "nl":
                        at_nl = (h.copy(), done + cut)
                    else:
                        at_cr = (h.copy(), done + cut)
            piece = chunk[pos:]
            h.update(piece)
            lines += piece.count(nl_bytes)
            tail = (tail + piece[-2:])[-2:]
            done += len(chunk)
    first = prefixes.get(prefix_size) if prefix_size is not None else None
    common: dict[str, Any] = {"prefix_sha256": first.sha256 if first else None,
                              "prefix_lines": first.lines if first else 0,
                              "prefix_tail": first.tail if first else b"", "prefixes": prefixes}
    if not hold_back:
        return Digest(h.hexdigest(), done, **common)
    mark = at_nl or at_cr
    if mark is None:
        return Digest(sha256().hexdigest(), 0, held_back=done, **common)
    return Digest(mark[0].hexdigest(), mark[1], held_back=done - mark[1], **common)


def prefix_sha256(path: Path, size: int) -> str | None:
    """SHA-256 of the first ``size`` bytes of ``path`` as it is now; None if it is shorter."""
    h = sha256()
    left = size
    with path.open("rb") as fh:
        while left > 0:
            chunk = fh.read(min(DIGEST_CHUNK, left))
            if not chunk:
                return None
            h.update(chunk)
            left -= len(chunk)
    return h.hexdigest()
