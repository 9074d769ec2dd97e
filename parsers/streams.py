"""The raw byte streams a :class:`~parsers.source.Source` reads: gzip, zstd, bzip2 and xz content
told by its magic bytes and decompressed forward in bounded memory, and a file's first ``limit``
bytes (docs/formulas.md#inputs). Corrupt or cut-short compressed data is an :class:`InputError`."""

from __future__ import annotations

import bz2
import gzip
import io
import lzma
import os
import re
import zlib
from pathlib import Path
from typing import Any

from rooftop.errors import InputError

# Magic bytes of the compressed containers read transparently (RFC 1952, RFC 8878, bzip2, xz).
_MAGIC = ((b"\x1f\x8b\x08", "gzip"), (b"\x28\xb5\x2f\xfd", "zstd"), (b"\xfd7zXZ\x00", "xz"))
_BZ2 = re.compile(rb"BZh[1-9](1AY&SY|\x17rE8P\x90)")  # block or end-of-stream magic after the header


def compression_of(head: bytes) -> str | None:
    """The compression the magic bytes at the start of ``head`` name, else None."""
    for magic, name in _MAGIC:
        if head.startswith(magic):
            return name
    return "bzip2" if _BZ2.match(head) else None


class Decompressed(io.RawIOBase):
    """The decompressed content of a compressed raw stream, read forward (seek forward only).
    Corrupt or cut-short data is an :class:`InputError` naming the file."""

    def __init__(self, raw: io.BufferedReader, compression: str, name: str) -> None:
        super().__init__()
        self._name = name
        self._what = compression
        self._pos = 0
        self._raw = raw  # gzip/bz2/lzma leave a file object they were given open: closed here
        self._inner = _decompressor(raw, compression, name)

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True  # forward only: the readers seek past a BOM

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        try:
            data = self._inner.read(len(view))
        except _DECOMPRESS_ERRORS as exc:
            raise InputError(self._name, f"cannot be decompressed ({self._what}: {exc}); the file is corrupt or "
                             "cut short", "re-copy it, or compress it again from the original") from exc
        view[: len(data)] = data
        self._pos += len(data)
        return len(data)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        target = offset if whence == io.SEEK_SET else self._pos + offset if whence == io.SEEK_CUR else -1
        if target < self._pos:
            raise io.UnsupportedOperation("a compressed input is read forward only")
        while self._pos < target and self.read(min(1 << 20, target - self._pos)):
            pass
        return self._pos

    def tell(self) -> int:
        return self._pos

    def close(self) -> None:
        if not self.closed:
            try:
                self._inner.close()
            finally:
                self._raw.close()
        super().close()


def _decompressor(raw: io.BufferedReader, compression: str, name: str) -> Any:
    if compression == "gzip":
        return gzip.GzipFile(fileobj=raw, mode="rb")
    if compression == "bzip2":
        return bz2.BZ2File(raw)
    if compression == "xz":
        return lzma.LZMAFile(raw)
    try:
        import zstandard
    except ImportError as exc:
        raw.close()
        raise InputError(name, "is zstd-compressed, and reading it needs the zstandard package",
                         "pip install zstandard") from exc
    return _ZstdReader(raw, zstandard.ZstdDecompressor())


class _ZstdReader:
    """zstd frames (one after another, as ``cat a.zst b.zst`` makes them) read forward in bounded
    memory. ``zstandard``'s own readers end silently at a cut-short frame; this one raises
    ``EOFError`` there, as gzip, bz2 and lzma do. Input is fed :data:`FEED` bytes at a time, which
    bounds the output of one step (a zstd block holds at most 128 KiB)."""

    FEED = 4096

    def __init__(self, raw: io.BufferedReader, dctx: Any) -> None:
        self._raw = raw
        self._dctx = dctx
        self._obj = dctx.decompressobj()
        self._out = bytearray()
        self._in_frame = False  # bytes of an unfinished frame were fed
        self._done = False

    def read(self, n: int) -> bytes:
        while len(self._out) < n and not self._done:
            data = self._raw.read(self.FEED)
            if not data:
                self._done = True
                if self._in_frame:
                    raise EOFError("the last zstd frame ends before its end (file cut short)")
                break
            self._feed(data)
        out = bytes(self._out[:n])
        del self._out[:n]
        return out

    def _feed(self, data: bytes) -> None:
        while data:
            self._out += self._obj.decompress(data)
            self._in_frame = not self._obj.eof
            if not self._obj.eof:
                return
            data = self._obj.unused_data  # the next frame begins in these bytes
            self._obj = self._dctx.decompressobj()
            self._in_frame = bool(data)

    def close(self) -> None:
        self._raw.close()


def _zstd_error() -> tuple[type[Exception], ...]:
    try:
        import zstandard
    except ImportError:
        return ()
    return (zstandard.ZstdError,)


_DECOMPRESS_ERRORS: tuple[type[BaseException], ...] = (EOFError, OSError, lzma.LZMAError, zlib.error, *_zstd_error())


class Reported(io.RawIOBase):
    """A raw stream that reports its position after each read or seek (``report(position)``): the
    byte bar inside one large input (rooftop.progress.reading)."""

    def __init__(self, raw: io.RawIOBase, report: Any) -> None:
        super().__init__()
        self._raw = raw
        self._report = report

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return self._raw.seekable()

    def readinto(self, buffer: Any) -> int:
        n = self._raw.readinto(buffer) or 0
        self._report(self._raw.tell())
        return n

    def readall(self) -> bytes:
        chunks = []
        while chunk := self._raw.read(1 << 20):
            chunks.append(chunk)
            self._report(self._raw.tell())
        return b"".join(chunks)

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        pos = self._raw.seek(offset, whence)
        self._report(pos)
        return pos

    def tell(self) -> int:
        return self._raw.tell()

    def close(self) -> None:
        if not self.closed:
            self._raw.close()
        super().close()


class Capped(io.RawIOBase):
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
