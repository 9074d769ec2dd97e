"""The byte scanner of the ``dcgmi dmon`` parser: lines, tokens and fast-row candidates of one block
(docs/formulas.md#inputs).

``parsers/dcgm/dmon/reader.py`` reads a file in blocks of whole lines. :func:`scan` finds, with numpy over
the block's bytes (no per-line Python):

* lines: split at ``\\n``; a line is *clean* when all its bytes are printable ASCII (32..126; tabs,
  ``\\r`` and UTF-8 go the per-line way);
* tokens: maximal runs of bytes > 32 (space and every control byte separate tokens);
* fast-row candidates: clean lines with at least two tokens whose first token is ``GPU``,
  ``GPU-I`` or ``GPU-CI`` (kind 0, 1, 2) and whose second is 1..:data:`MAX_ID_DIGITS` ASCII digits;
  each gets the key ``(kind * 8 + digits) * 10**MAX_ID_DIGITS + id``, one per distinct entity
  spelling (``GPU 01`` and ``GPU 1`` differ, as they would per line).

``tests/test_dmon_scan.py`` keeps a plain per-line reference implementation and checks, with
hypothesis, that both agree on any bytes.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

NEWLINE = 0x0A
SPACE = 0x20  # bytes <= SPACE separate tokens
PRINTABLE_LO, PRINTABLE_HI = 0x20, 0x7E  # printable ASCII: a "clean" line has only these
ASCII_G, ASCII_P, ASCII_U, ASCII_DASH, ASCII_I, ASCII_C, ASCII_0 = (ord(c) for c in "GPU-IC0")
FAST_KINDS = ("GPU", "GPU-I", "GPU-CI")  # entity kinds of the fast rows (code 0, 1, 2)
KIND_GPU, KIND_GPU_I, KIND_GPU_CI = range(len(FAST_KINDS))
NO_KIND = -1
MAX_ID_DIGITS = 6  # fast rows' entity ids have at most this many digits (others: per line)
KIND_STRIDE = 8  # key = (kind * KIND_STRIDE + digits) * 10**MAX_ID_DIGITS + id; digits < KIND_STRIDE
MAX_BLOCK = 2**31 - 1  # token offsets are int32 in the Arrow view of the block: larger blocks have no fast rows


@dataclass(frozen=True)
class Scan:
    """What :func:`scan` found in one block (indices are into the block's bytes/lines/tokens)."""

    nl: np.ndarray  # offsets of the newlines
    lstart: np.ndarray  # first byte of each line (len(nl) + 1 lines)
    clean: np.ndarray  # per line: printable ASCII only
    edges: np.ndarray  # token boundaries: start, end, start, end ...
    tstart: np.ndarray  # first byte of each token
    tend: np.ndarray  # one past its last byte
    tfirst: np.ndarray  # per line: index of its first token (== the next line's when it has none)
    ntok: np.ndarray  # per line: number of tokens
    cand: np.ndarray  # line indices of the fast-row candidates, ascending
    key: np.ndarray  # their entity keys

    @property
    def n_lines(self) -> int:
        return len(self.lstart)


def scan(data: bytes) -> Scan:
    """Lines, tokens and fast-row candidates of ``data`` (see the module docstring)."""
    b = np.frombuffer(data, dtype=np.uint8)
    nb = len(b)
    odd = np.flatnonzero((b - np.uint8(PRINTABLE_LO)) > PRINTABLE_HI - PRINTABLE_LO)  # uint8 wraps
    is_nl = b[odd] == NEWLINE
    nl = odd[is_nl]
    n_lines = len(nl) + 1
    lstart = np.concatenate([[0], nl + 1])
    clean = np.ones(n_lines, dtype=bool)
    clean[np.searchsorted(nl, odd[~is_nl])] = False
    sp = b <= SPACE
    edges = np.flatnonzero(sp[1:] != sp[:-1]) + 1  # runs of bytes > SPACE: edges alternate start/end
    if nb and not sp[0]:
        edges = np.concatenate([[0], edges])
    if nb and not sp[-1]:
        edges = np.concatenate([edges, [nb]])
    tstart, tend = edges[0::2], edges[1::2]
    n_tok = len(tstart)
    tfirst = np.searchsorted(tstart, lstart)
    ntok = np.diff(np.append(tfirst, n_tok))
    cand, key = _candidates(b, clean, ntok, tfirst, tstart, tend)
    return Scan(nl, lstart, clean, edges, tstart, tend, tfirst, ntok, cand, key)


def _candidates(b: np.ndarray, clean: np.ndarray, ntok: np.ndarray, tfirst: np.ndarray, tstart: np.ndarray,
                tend: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Lines whose first two tokens are a fast entity kind and its id, and their keys."""
    nb = len(b)
    ci = np.flatnonzero(clean & (ntok >= 2))
    t0 = tfirst[ci]
    s0, len0 = tstart[t0], tend[t0] - tstart[t0]
    s1, len1 = tstart[t0 + 1], tend[t0 + 1] - tstart[t0 + 1]
    last = max(nb - 1, 0)

    def at(s: np.ndarray, j: int) -> np.ndarray:
        byte: np.ndarray = b[np.minimum(s + j, last)]
        return byte

    gpu = (at(s0, 0) == ASCII_G) & (at(s0, 1) == ASCII_P) & (at(s0, 2) == ASCII_U)
    dash = at(s0, 3) == ASCII_DASH
    kind = np.full(len(ci), NO_KIND, dtype="int64")
    kind[gpu & (len0 == len(FAST_KINDS[KIND_GPU]))] = KIND_GPU
    kind[gpu & (len0 == len(FAST_KINDS[KIND_GPU_I])) & dash & (at(s0, 4) == ASCII_I)] = KIND_GPU_I
    kind[gpu & (len0 == len(FAST_KINDS[KIND_GPU_CI])) & dash & (at(s0, 4) == ASCII_C) & (at(s0, 5) == ASCII_I)] = KIND_GPU_CI
    num = np.zeros(len(ci), dtype="int64")
    ok = (kind != NO_KIND) & (len1 <= MAX_ID_DIGITS) & (nb < MAX_BLOCK)
    for j in range(min(MAX_ID_DIGITS, int(len1.max()) if len(len1) else 0)):
        inside = j < len1
        d = at(s1, j).astype("int64") - ASCII_0
        ok &= ~inside | ((d >= 0) & (d <= 9))  # an ASCII digit
        num = np.where(inside, num * 10 + d, num)
    key = (kind[ok] * KIND_STRIDE + len1[ok]) * 10**MAX_ID_DIGITS + num[ok]
    return ci[ok], key
