"""parsers/prometheus/scan.py against a plain per-line reference (tests/prom_scan_reference.py), and the
whole Prometheus text parser with and without the fast path: same records, same rejections with the
same line numbers (hypothesis, generated dcgm-exporter-like text with the tricky cases)."""

from __future__ import annotations

import tempfile
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import rooftop.parsers.prometheus.records as pr
import rooftop.parsers.prometheus.text as pt
from rooftop.parsers.prometheus.scan import scan_chunk
from rooftop.parsers.source import ParseOptions, Source
from tests.conftest import FIXTURES, corpus_dir
from tests.prom_scan_reference import reference_scan

START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _agree(data: bytes) -> None:
    lines, rest_no, fast = scan_chunk(data)
    ref = reference_scan(data)
    assert rest_no.tolist() == ref.rest
    assert lines.to_pylist() == ref.rest_text
    if fast is None:
        assert not ref.fast
        return
    heads = fast.heads.dictionary.to_pylist()
    got = {int(n): (heads[int(h)], v, t) for n, h, v, t in zip(
        fast.no.tolist(), fast.heads.indices.to_pylist(), fast.value.to_pylist(), fast.ts.to_pylist(), strict=True)}
    assert got == ref.fast


HEADS = [b'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="h"}', b'DCGM_FI_PROF_SM_ACTIVE{gpu="1"}',
         b'DCGM_FI_DEV_FB_USED{gpu="0",pod="a \\"b\\" }c"}', b'DCGM_FI_X{a="\\\\"}', b"DCGM_FI_DEV_SM_CLOCK",
         b'DCGM_FI_NOT_A_FIELD{gpu="0"}', b'go_gc_duration_seconds{quantile="0"}', b"DCGM_FI_{}", b'DCGM_FI_A{b="}"}']
VALUES = [b"1", b"0.5", b"NaN", b"+Inf", b"-Inf", b"1e3", b"abc", b"", b"\xc3\xa9", b"-0", b"9999"]
TIMES = [b"", b" 1700000000000", b" 1700000000", b" -5", b" 99999999999999999999", b" 17e5", b"  1700000000000"]
SEPS = [b" ", b"  ", b"\t", b" \t"]
LEADS = [b"", b"", b"", b" ", b"\t", b"> ", b"*"]
ENDS = [b"\n", b"\n", b"\r\n", b" \n", b"\r\r\n", b"\x0b\n"]
OTHER = [b"# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n", b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n", b"\n",
         b"$ curl localhost:9400/metrics\n", b"\xff\xfe\n", b"}\n"]

_line = st.tuples(st.sampled_from(LEADS), st.sampled_from(HEADS), st.sampled_from(SEPS), st.sampled_from(VALUES),
                  st.sampled_from(TIMES), st.sampled_from(ENDS)).map(b"".join)
_text = st.lists(st.one_of(_line, _line, _line, st.sampled_from(OTHER)), max_size=30).map(b"".join)


@settings(max_examples=400, deadline=None)
@given(_text)
def test_scan_agrees_with_reference_on_prometheus_like_bytes(data: bytes) -> None:
    _agree(data)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300).map(lambda b: b"DCGM_FI_" + b))
def test_scan_agrees_with_reference_on_any_bytes(data: bytes) -> None:
    _agree(data)


def test_hand_computed_chunk() -> None:
    data = (b'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 87 1700000000000\r\n'  # fast, CRLF
            b'DCGM_FI_DEV_GPU_UTIL{gpu="0"}  87\n'  # two spaces: general path
            b'# HELP x\n'
            b'DCGM_FI_A{} 1\t\n'  # a tab: general path
            b'DCGM_FI_DEV_FB_USED{gpu="1"} NaN')
    lines, rest_no, fast = scan_chunk(data)
    assert fast is not None
    assert rest_no.tolist() == [1, 2, 3] and fast.no.tolist() == [0, 4]
    assert lines.to_pylist() == ['DCGM_FI_DEV_GPU_UTIL{gpu="0"}  87', "# HELP x", "DCGM_FI_A{} 1\t"]
    assert fast.value.to_pylist() == ["87", "NaN"] and fast.ts.to_pylist() == ["1700000000000", None]
    assert fast.heads.dictionary.to_pylist() == ['DCGM_FI_DEV_GPU_UTIL{gpu="0"}', 'DCGM_FI_DEV_FB_USED{gpu="1"}']


def _general_only(data: bytes | memoryview) -> tuple[pa.Array, np.ndarray, None]:
    """scan_chunk with no fast lines: every line through parsers/prometheus/grammar.py."""
    lines, rest_no, fast = scan_chunk(data)
    if fast is None:
        return lines, rest_no, None
    text = bytes(data).decode("utf-8").split("\n")
    return pa.array(text, pa.string()), np.arange(len(text)), None


def _parse(path: Path, chunk: int) -> tuple[Any, ...]:
    pt_chunk = pt.CHUNK_BYTES
    pt.CHUNK_BYTES = chunk
    try:
        r = pt.parse(Source(str(path)), ParseOptions(start=START))
    finally:
        pt.CHUNK_BYTES = pt_chunk
    return r.samples.to_pydict(), [(x.line, x.reason) for x in r.rejected], r.meta, r.accounting


def _with_and_without_fast_path(p: Path, chunk: int) -> None:
    fast = _parse(p, chunk)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(pr, "scan_chunk", _general_only)
        general = _parse(p, chunk)
    assert fast[1] == general[1]  # rejections: line numbers and reasons
    assert fast[3] == general[3]  # records + missing + rejected
    assert fast[2] == general[2]
    samples_f, samples_g = fast[0], general[0]
    assert samples_f.keys() == samples_g.keys()
    for col in samples_f:
        assert [("nan" if v != v else v) for v in samples_f[col]] == [
            ("nan" if v != v else v) for v in samples_g[col]], col


@settings(max_examples=150, deadline=None)
@given(_text, st.sampled_from([8 << 20, 97]))
def test_parser_gives_the_same_records_and_rejections_with_and_without_the_fast_path(data: bytes, chunk: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / "m.prom"
        p.write_bytes(b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n" + data)
        _with_and_without_fast_path(p, chunk)


def test_corpus_and_fixture_captures_parse_the_same_with_and_without_the_fast_path() -> None:
    paths = sorted(corpus_dir("dcgm").glob("*.prom")) + sorted((FIXTURES / "dcgm").glob("*.prom"))
    fast_lines = 0
    for p in paths:
        for chunk in (8 << 20, 997):
            _with_and_without_fast_path(p, chunk)
        _lines, _rest, fast = scan_chunk(p.read_bytes().rstrip(b"\n"))
        fast_lines += len(fast.no) if fast is not None else 0
    assert len(paths) >= 10 and fast_lines > 100  # the fast path is exercised, not bypassed
