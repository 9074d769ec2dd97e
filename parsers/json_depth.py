"""How deep a JSON document nests, checked on its bytes before a parser builds anything.

Every JSON input rooftop reads (Kineto traces, Prometheus query JSON, device files) nests a few
levels deep (a Kineto event's ``args`` holds lists of shapes: depth ~6). A hostile or broken file
nesting thousands deep costs the streaming parser (``ijson``) memory quadratic in the depth (it
keeps the path of every open level: 80 KB of ``[`` took 4 GB), and the recursive decoders a
``RecursionError``. :data:`MAX_DEPTH` levels are allowed; deeper is an :class:`InputError`
naming the file and the byte offset (docs/formulas.md#inputs).

The check is vectorised (NumPy over each chunk, a few passes at memory speed): quotes escaped by
an odd run of backslashes are not string ends; brackets inside strings do not count. It carries
its state (depth, inside a string, a pending backslash run) across chunks, so :class:`DepthGuard`
wraps a byte stream and checks what passes through it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from rooftop.errors import InputError

MAX_DEPTH = 512

_QUOTE, _BACKSLASH = 0x22, 0x5C
_OPEN = (0x5B, 0x7B)  # [ {
_CLOSE = (0x5D, 0x7D)  # ] }


class DepthCheck:
    """The running state of the check over consecutive chunks of one document."""

    def __init__(self, path: str, max_depth: int = MAX_DEPTH) -> None:
        self.path = path
        self.max_depth = max_depth
        self.depth = 0
        self.in_string = False
        self.backslashes = 0  # length of the backslash run that ended the previous chunk
        self.offset = 0

    def feed(self, data: bytes) -> None:
        """Check ``data`` (the next bytes); :class:`InputError` once the nesting is too deep."""
        if not data:
            return
        b = np.frombuffer(data, dtype=np.uint8)
        is_quote = b == _QUOTE
        if self.backslashes or data.find(b'\\"') >= 0:
            is_quote = self._drop_escaped(b, is_quote)
        # inside a string: an odd number of real quotes up to here (xor-prefix), or from before
        in_string = np.bitwise_xor.accumulate(is_quote.view(np.uint8))
        if self.in_string:
            in_string ^= 1
        opens = (b == _OPEN[0]) | (b == _OPEN[1])
        brackets = opens | (b == _CLOSE[0]) | (b == _CLOSE[1])
        brackets &= in_string == 0
        pos = np.flatnonzero(brackets)
        if len(pos):
            depth = self.depth + np.cumsum(np.where(opens[pos], 1, -1))
            if int(depth.max()) > self.max_depth:
                at = self.offset + int(pos[int(np.argmax(depth > self.max_depth))])
                raise InputError(self.path, f"JSON nested too deeply (more than {self.max_depth} levels, at byte {at:,}): "
                                 "no profile or metrics export nests that deep",
                                 "re-export the file; it is damaged or not an export")
            self.depth = int(depth[-1])
        self.in_string = bool(in_string[-1])
        trail = len(data) - len(data.rstrip(b"\\"))
        self.backslashes = trail if trail < len(data) else self.backslashes + trail
        self.offset += len(data)

    def _drop_escaped(self, b: np.ndarray, is_quote: np.ndarray) -> np.ndarray:
        """``is_quote`` without the quotes escaped by an odd run of backslashes before them."""
        quotes = np.flatnonzero(is_quote)
        prev = quotes - 1
        after_bs = np.where(prev >= 0, b[np.maximum(prev, 0)] == _BACKSLASH, self.backslashes > 0)
        out: np.ndarray = is_quote.copy()
        raw = b.tobytes() if len(quotes) else b""
        for q in quotes[after_bs].tolist():  # few: a quote after a backslash is rare in exports
            start = q
            while start > 0 and raw[start - 1] == _BACKSLASH:
                start -= 1
            run = q - start + (self.backslashes if start == 0 else 0)
            if run % 2:
                out[q] = False
        return out


class DepthGuard:
    """A byte stream (``read``) that passes ``fh`` through a :class:`DepthCheck`."""

    def __init__(self, fh: Any, path: str, max_depth: int = MAX_DEPTH) -> None:
        self.fh = fh
        self.check = DepthCheck(path, max_depth)

    def read(self, n: int = -1) -> bytes:
        data: bytes = self.fh.read(n)
        self.check.feed(data)
        return data


def check_json_depth(data: bytes | str, path: str, max_depth: int = MAX_DEPTH) -> None:
    """:class:`InputError` when the document ``data`` nests deeper than ``max_depth``."""
    raw = data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data
    check = DepthCheck(path, max_depth)
    for i in range(0, len(raw), 1 << 22):
        check.feed(raw[i:i + (1 << 22)])
