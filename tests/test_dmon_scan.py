"""parsers/dcgm/dmon/scan.py against a plain per-line reference implementation (hypothesis: any bytes)."""

from __future__ import annotations

import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.parsers.dcgm.dmon.scan import FAST_KINDS, KIND_STRIDE, MAX_ID_DIGITS, scan

_TOKEN = re.compile(rb"[\x21-\xff]+")  # a run of bytes > space


def reference(data: bytes) -> tuple[list[bool], list[list[bytes]], dict[int, int]]:
    """Per line: clean (printable ASCII only), its tokens; the fast candidates' keys by line."""
    cleans, tokens, keys = [], [], {}
    for i, line in enumerate(data.split(b"\n")):
        clean = all(0x20 <= c <= 0x7E for c in line)
        toks = _TOKEN.findall(line)
        cleans.append(clean)
        tokens.append(toks)
        if clean and len(toks) >= 2 and toks[0].decode() in FAST_KINDS and toks[1].isdigit() \
                and len(toks[1]) <= MAX_ID_DIGITS:
            kind = FAST_KINDS.index(toks[0].decode())
            keys[i] = (kind * KIND_STRIDE + len(toks[1])) * 10**MAX_ID_DIGITS + int(toks[1])
    return cleans, tokens, keys


def _agree(data: bytes) -> None:
    sc = scan(data)
    cleans, tokens, keys = reference(data)
    assert sc.n_lines == len(cleans)
    assert sc.clean.tolist() == cleans
    assert sc.ntok.tolist() == [len(t) for t in tokens]
    got = [data[a:z] for a, z in zip(sc.tstart.tolist(), sc.tend.tolist(), strict=True)]
    assert got == [t for line in tokens for t in line]
    assert [int(sc.tfirst[i]) for i in range(sc.n_lines)] == list(np.cumsum([0] + [len(t) for t in tokens])[:-1])
    assert dict(zip(sc.cand.tolist(), sc.key.tolist(), strict=True)) == keys


PIECES = [b"GPU", b"GPU-I", b"GPU-CI", b"GPU-", b"GPX", b"GP", b" ", b"  ", b"\t", b"\n", b"\r", b"\x00", b"\x7f",
          b"0", b"7", b"12", b"007", b"123456", b"1234567", b"N/A", b"0.125", b"-", b"\xc3\xa9", b"#Entity", b"x"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=80).map(b"".join))
def test_scan_agrees_with_reference_on_dmon_like_bytes(data: bytes) -> None:
    _agree(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300))
def test_scan_agrees_with_reference_on_any_bytes(data: bytes) -> None:
    _agree(data)


def test_hand_computed_block() -> None:
    data = b"#Entity GRACT\nGPU 0  0.5\n  GPU-I 12 1\nGPU-CI 007 x\nGPU 1234567 1\nGPU\t1 2\n"
    sc = scan(data)
    assert sc.ntok.tolist() == [2, 3, 3, 3, 3, 3, 0]
    assert sc.cand.tolist() == [1, 2, 3]  # line 4: id too long; line 5: a tab is not clean
    assert sc.key.tolist() == [(0 * 8 + 1) * 10**6 + 0, (1 * 8 + 2) * 10**6 + 12, (2 * 8 + 3) * 10**6 + 7]
