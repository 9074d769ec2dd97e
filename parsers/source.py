"""An input file: sniffed encoding, streamed decoded lines, and the options parsers share."""

from __future__ import annotations

import codecs
import io
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

SNIFF_BYTES = 64 * 1024


@dataclass(frozen=True)
class ParseOptions:
    """Options the user can give for inputs that do not carry the information themselves."""

    interval_s: float = 1.0  # dcgmi dmon -d / nvidia-smi dmon -d, in seconds
    start: datetime | None = None  # wall-clock time of the first dmon tick (UTC); None: file mtime
    host: str | None = None  # host name for streams that do not name one (dmon)
    decimal_comma: bool | None = None  # None: detect per file


class Source:
    """One input file. Decodes UTF-8 (with or without BOM) and UTF-16 (BOM), normalizes CRLF/CR."""

    def __init__(self, path: str | Path) -> None:
        self.path = str(path)
        self._p = Path(path)
        with self._p.open("rb") as fh:
            self.head_bytes = fh.read(SNIFF_BYTES)
        self.encoding, self.bom_len = _sniff_encoding(self.head_bytes)

    @property
    def size(self) -> int:
        return self._p.stat().st_size

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

    def read_bytes(self) -> bytes:
        return self._p.read_bytes()

    def text(self) -> str:
        """The whole decoded text (for formats whose files are small)."""
        raw = self.read_bytes()[self.bom_len :]
        return raw.decode(self.encoding, errors="replace").replace("\r\n", "\n").replace("\r", "\n")

    def lines(self) -> Iterator[tuple[int, str]]:
        """Stream ``(line_number, text)`` pairs, 1-based, without line endings, in bounded memory."""
        with self._p.open("rb") as raw:
            raw.seek(self.bom_len)
            stream = io.TextIOWrapper(raw, encoding=self.encoding, errors="replace", newline=None)
            for n, line in enumerate(stream, start=1):
                yield n, line.rstrip("\n")


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
