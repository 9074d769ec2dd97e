"""An input file: sniffed encoding, streamed decoded lines, and the options parsers share."""

from __future__ import annotations

import codecs
import io
import os
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class ParseOptions:
    """Options the user can give for inputs that do not carry the information themselves."""

    interval_s: float = 1.0  # dcgmi dmon -d / nvidia-smi dmon -d, in seconds
    start: datetime | None = None  # wall-clock time of the first dmon tick (UTC); None: file mtime
    host: str | None = None  # host name for streams that do not name one (dmon)
    decimal_comma: bool | None = None  # None: detect per file


class Source:
    """One input file. Decodes UTF-8 (with or without BOM) and UTF-16 (BOM), normalizes CRLF/CR.

    ``limit``: read only the first ``limit`` bytes (``rooftop ingest`` reads the complete lines of a
    file still being written). Every read path honours it (:attr:`size`, :meth:`read_bytes`,
    :meth:`text`, :meth:`lines`, :meth:`open_bytes`); the sniffed head (:attr:`head_bytes`,
    :meth:`head_text`, for format detection) does not.
    """

    def __init__(self, path: str | Path, limit: int | None = None) -> None:
        self.path = str(path)
        self._p = Path(path)
        self.limit = None if limit is None else max(0, int(limit))
        with self._p.open("rb") as fh:
            self.head_bytes = fh.read(SNIFF_BYTES)
        self.encoding, self.bom_len = _sniff_encoding(self.head_bytes)

    @property
    def size(self) -> int:
        size = self._p.stat().st_size
        return size if self.limit is None else min(size, self.limit)

    @property
    def is_binary(self) -> bool:
        """NUL bytes in a file that is not UTF-16: a binary report or garbage."""
        return self.encoding == "binary"

    def head_text(self, max_chars: int = SNIFF_BYTES) -> str:
        if self.is_binary:
            return ""
        data = self.head_bytes[self.bom_len :]
        text = codecs.getincrementaldecoder(self.encoding)(errors="replace").decode(data)
        return text.replace("\r\n", "\n").replace("\r", "\n")[:max_chars]

    def open_bytes(self) -> io.BufferedReader:
        """The file opened for binary reading; with a ``limit``, reads end there (EOF)."""
        if self.limit is None:
            return self._p.open("rb")
        return io.BufferedReader(_Capped(self._p, self.limit))

    def read_bytes(self) -> bytes:
        if self.limit is None:
            return self._p.read_bytes()
        with self.open_bytes() as fh:
            return fh.read()

    def text(self) -> str:
        """The whole decoded text (for formats whose files are small)."""
        raw = self.read_bytes()[self.bom_len :]
        return raw.decode(self.encoding, errors="replace").replace("\r\n", "\n").replace("\r", "\n")

    def line_blocks(self, size: int) -> Iterator[memoryview]:
        """The raw bytes after the BOM in blocks of about ``size`` bytes, each ending at a ``\\n``
        (not included) so that no line is split; then the unterminated rest, if any. Byte-level:
        for UTF-8 files (callers translate ``\\r``)."""
        with self.open_bytes() as fh:
            fh.seek(self.bom_len)
            rest = b""
            while data := fh.read(size):
                buf = rest + data if rest else data
                cut = buf.rfind(b"\n")
                if cut < 0:
                    rest = buf
                    continue
                rest = buf[cut + 1 :]
                yield memoryview(buf)[:cut]  # no copy
            if rest:
                yield memoryview(rest)

    def lines(self) -> Iterator[tuple[int, str]]:
        """Stream ``(line_number, text)`` pairs, 1-based, without line endings, in bounded memory."""
        with self.open_bytes() as raw:
            raw.seek(self.bom_len)
            stream = io.TextIOWrapper(raw, encoding=self.encoding, errors="replace", newline=None)
            for n, line in enumerate(stream, start=1):
                yield n, line.rstrip("\n")


class _Capped(io.RawIOBase):
    """A file's first ``limit`` bytes as a seekable raw stream (reads past ``limit`` are EOF)."""

    def __init__(self, path: Path, limit: int) -> None:
        super().__init__()
        self._fh = path.open("rb", buffering=0)
        self._limit = limit
        self._pos = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        left = self._limit - self._pos
        if left <= 0:
            return 0
        view = memoryview(buffer).cast("B")
        n = self._fh.readinto(view[: min(left, len(view))]) or 0
        self._pos += n
        return n

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        if whence == io.SEEK_END:
            offset, whence = min(self._limit, os.fstat(self._fh.fileno()).st_size) + offset, io.SEEK_SET
        self._pos = self._fh.seek(offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            self._fh.close()
        super().close()


def _sniff_encoding(head: bytes) -> tuple[str, int]:
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8", 3
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le", 2
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be", 2
    if b"\x00" in head:
        # UTF-16 without BOM: every other byte NUL in ASCII text.
        even, odd = head[0::2], head[1::2]
        if len(head) >= 8 and odd.count(0) > 0.9 * len(odd) and even.count(0) < 0.1 * len(even):
            return "utf-16-le", 0
        if len(head) >= 8 and even.count(0) > 0.9 * len(even) and odd.count(0) < 0.1 * len(odd):
            return "utf-16-be", 0
        return "binary", 0
    return "utf-8", 0
