"""An input file: sniffed compression and encoding, streamed decoded lines, and the options parsers share.
The byte streams under it (decompression, a capped file) are in :mod:`parsers.streams`."""

from __future__ import annotations

import codecs
import copy
import io
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from rooftop.errors import InputError
from rooftop.parsers.streams import Capped, Decompressed, Reported, compression_of

if TYPE_CHECKING:
    from rooftop.parsers.prometheus.http import PromQuery

SNIFF_BYTES = 64 * 1024
DEFAULT_INTERVAL_S = 1.0  # dcgmi dmon -d 1000 (ms) and nvidia-smi dmon -d 1 (s) defaults


@dataclass(frozen=True)
class ParseOptions:
    """Options the user can give for inputs that do not carry the information themselves."""

    # seconds between ticks (dcgmi dmon -d / nvidia-smi dmon -d); None: the file's own `dcgmi dmon -d`,
    # else the tools' default 1 s (:meth:`interval_or_default`); prom text: dcgm-exporter's 30 s
    interval_s: float | None = None
    start: datetime | None = None  # wall-clock time of the first dmon tick (UTC); None: file mtime
    host: str | None = None  # host name for streams that do not name one (dmon)
    decimal_comma: bool | None = None  # None: detect per file
    prometheus: PromQuery | None = None  # range, selectors, auth for http(s):// inputs (parsers.prometheus.http)
    skip_unreadable: bool = False  # a folder's subfolder that cannot be listed: listed, not fatal (parsers.folders)

    def interval_or_default(self) -> float:
        """The given interval, else :data:`DEFAULT_INTERVAL_S` (``dcgmi dmon -d`` and ``nvidia-smi dmon -d``
        both default to 1 s; docs/formulas.md#inputs)."""
        return DEFAULT_INTERVAL_S if self.interval_s is None else float(self.interval_s)


class Source:
    """One input file. Decodes UTF-8 (with or without BOM) and UTF-16 (BOM), normalizes CRLF/CR;
    gzip, zstd, bzip2 and xz files (told by their magic bytes, not their name) are decompressed as
    they are read, in bounded memory (docs/formulas.md#inputs).

    Only regular files are read: a FIFO, device or socket is an :class:`InputError` at once (it is
    opened non-blocking, so a FIFO without a writer does not hang).

    ``path`` names the input in messages and accounting; ``file`` is the file whose bytes are read
    (the same file, or a temporary decompressed copy for parsers that read by path).

    ``limit``: read only the first ``limit`` bytes *of the file* (``rooftop ingest`` reads the
    complete lines of a file still being written). Every read path honours it (:attr:`size`,
    :meth:`read_bytes`, :meth:`text`, :meth:`lines`, :meth:`open_bytes`); the sniffed head
    (:attr:`head_bytes`, :meth:`head_text`, for format detection) does not.

    ``max_line_bytes``: when set (by :func:`parsers.open_input`, from the format), a longer line read
    by :meth:`lines`, :meth:`line_blocks` or :meth:`text` is an :class:`InputError` naming the line.
    """

    def __init__(self, path: str | Path, limit: int | None = None, *, file: str | Path | None = None) -> None:
        self.path = str(path)
        self.file = Path(file if file is not None else path)
        self._p = self.file
        self.limit = None if limit is None else max(0, int(limit))
        self.max_line_bytes: int | None = None
        raw_head = _regular_head(self.file, self.path)
        self.compression = compression_of(raw_head)
        if self.compression is None:
            self.head_bytes = raw_head
        else:
            with self.open_bytes(limit=False) as fh:
                self.head_bytes = fh.read(SNIFF_BYTES)
        self.encoding, self.bom_len = _sniff_encoding(self.head_bytes)

    def with_limit(self, limit: int | None) -> Source:
        """This source read up to ``limit`` bytes of the file (the head is not read again)."""
        other = copy.copy(self)
        other.limit = None if limit is None else max(0, int(limit))
        return other

    @property
    def size(self) -> int:
        """Bytes of the file that are read (compressed bytes for a compressed file)."""
        size = self.file.stat().st_size
        return size if self.limit is None else min(size, self.limit)

    @property
    def is_binary(self) -> bool:
        """NUL bytes in a file that is not UTF-16: a binary report or garbage."""
        return self.encoding == "binary"

    def head_text(self, max_chars: int = SNIFF_BYTES) -> str:
        if self.is_binary:
            return ""
        return self._decode(self.head_bytes[self.bom_len :])[:max_chars]

    def tail_text(self) -> str:
        """The decoded last :data:`SNIFF_BYTES` of the content (bounded memory; a compressed file is
        decompressed to its end to find them)."""
        if self.is_binary:
            return ""
        with self.open_bytes() as fh:
            if self.compression is None:
                end = fh.seek(0, io.SEEK_END)
                fh.seek(max(self.bom_len, end - SNIFF_BYTES))
                data = fh.read()
            else:
                data = b""
                while chunk := fh.read(1 << 20):
                    data = (data + chunk)[-SNIFF_BYTES:]
        return self._decode(data)

    def _decode(self, data: bytes) -> str:
        text = codecs.getincrementaldecoder(self.encoding)(errors="replace").decode(data)
        return text.replace("\r\n", "\n").replace("\r", "\n")

    def open_bytes(self, *, limit: bool = True) -> io.BufferedReader:
        """The content opened for binary reading (decompressed); with a ``limit``, reads of the file
        end there (EOF)."""
        from rooftop.progress import position_report

        report = position_report()
        raw: io.BufferedReader
        if report is not None:  # a bar shows how far the reading got (rooftop.progress.reading)
            inner: io.RawIOBase = (self.file.open("rb", buffering=0) if self.limit is None or not limit
                                   else Capped(self.file, self.limit))
            raw = io.BufferedReader(Reported(inner, report))
        elif self.limit is None or not limit:
            raw = self.file.open("rb")
        else:
            raw = io.BufferedReader(Capped(self.file, self.limit))
        if self.compression is None:
            return raw
        return io.BufferedReader(Decompressed(raw, self.compression, self.path), buffer_size=1 << 16)

    def read_bytes(self) -> bytes:
        with self.open_bytes() as fh:
            return fh.read()

    def text(self) -> str:
        """The whole decoded text (for formats whose files are small)."""
        raw = self.read_bytes()[self.bom_len :]
        if self.max_line_bytes is not None:
            line = _long_line(raw, self.max_line_bytes)
            if line is not None:
                raise self._too_long(line)
        return raw.decode(self.encoding, errors="replace").replace("\r\n", "\n").replace("\r", "\n")

    def _too_long(self, line: int) -> InputError:
        cap = self.max_line_bytes or 0
        return InputError(self.path, f"line {line} is longer than {cap:,} bytes, the most rooftop reads in one line "
                          "of this format", "check that the file is what it claims to be; split or drop that line",
                          line=line)

    def line_blocks(self, size: int) -> Iterator[memoryview]:
        """The raw bytes after the BOM in blocks of about ``size`` bytes, each ending at a ``\\n``
        (not included) so that no line is split; then the unterminated rest, if any. Byte-level:
        for UTF-8 files (callers translate ``\\r``). Lines over :attr:`max_line_bytes` raise."""
        cap = self.max_line_bytes
        lines_before = 0
        with self.open_bytes() as fh:
            fh.seek(self.bom_len)
            rest = b""
            while data := fh.read(size):
                buf = rest + data if rest else data
                cut = buf.rfind(b"\n")
                if cap is not None:
                    at = _long_line(buf, cap, None if cut < 0 else cut + 1)
                    if at is not None:
                        raise self._too_long(lines_before + at)
                if cut < 0:
                    rest = buf
                    continue
                rest = buf[cut + 1 :]
                if cap is not None:
                    lines_before += buf.count(b"\n", 0, cut + 1)
                yield memoryview(buf)[:cut]  # no copy
            if rest:
                if cap is not None and len(rest) > cap:
                    raise self._too_long(lines_before + 1)
                yield memoryview(rest)

    def lines(self) -> Iterator[tuple[int, str]]:
        """Stream ``(line_number, text)`` pairs, 1-based, without line endings, in bounded memory."""
        cap = self.max_line_bytes
        with self.open_bytes() as raw:
            raw.seek(self.bom_len)
            stream = io.TextIOWrapper(raw, encoding=self.encoding, errors="replace", newline=None)
            if cap is None:
                for n, line in enumerate(stream, start=1):
                    yield n, line.rstrip("\n")
                return
            n = 0
            while line := stream.readline(cap + 1):
                n += 1
                if len(line) > cap and not line.endswith("\n"):
                    raise self._too_long(n)
                yield n, line.rstrip("\n")


def _long_line(buf: bytes, cap: int, end: int | None = None) -> int | None:
    """The 1-based number (within ``buf[:end]``) of the first line longer than ``cap`` bytes, else
    None. Steps about ``cap`` bytes at a time (``rfind`` in a window): O(len/cap) searches."""
    pos, n = 0, len(buf) if end is None else end
    while n - pos > cap:
        nl = buf.rfind(b"\n", pos, pos + cap + 1)
        if nl < 0:
            return buf.count(b"\n", 0, pos) + 1
        pos = nl + 1
    return None


def _regular_head(file: Path, name: str) -> bytes:
    """The first :data:`SNIFF_BYTES` of ``file``; :class:`InputError` unless it is a regular file.
    Opened non-blocking so that a FIFO without a writer is refused instead of waited for."""
    fd = os.open(file, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = "a FIFO (named pipe)" if stat.S_ISFIFO(mode) else "a device" if (
                stat.S_ISCHR(mode) or stat.S_ISBLK(mode)) else "a socket" if stat.S_ISSOCK(mode) else "not a file"
            raise InputError(name, f"is {what}, not a regular file; rooftop reads only files, whose size is known",
                             "write the stream to a file first (e.g. `cmd > capture.txt`) and pass that file")
        chunks, got = [], 0
        while got < SNIFF_BYTES and (chunk := os.read(fd, SNIFF_BYTES - got)):
            chunks.append(chunk)
            got += len(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


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
