"""Copies on timelines (issue 25 item 8): bytes, direction, memory kinds, bandwidth per copy kind;
pageable asynchronous copies (nsys analyze cuda_memcpy_async); what a transfer-bound trace should
change (docs/formulas.md#timeline-copies)."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.timeline import analyze_timelines
from rooftop.analyzer.timeline.copies import copy_kind
from rooftop.analyzer.timeline.findings import timeline_findings
from rooftop.parsers import parse_path
from rooftop.parsers.model import EVENT_COLUMNS, InputAccounting, ParseResult
from tests.conftest import CORPUS

H100 = CORPUS / "trace" / "GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite"


def test_copy_kinds_from_both_spellings() -> None:
    assert copy_kind("Memcpy HtoD (Pageable -> Device)") == ("memcpy", "HtoD", "Pageable -> Device")
    assert copy_kind("[CUDA memcpy Host-to-Device (Pinned -> Device)]") == ("memcpy", "HtoD", "Pinned -> Device")
    assert copy_kind("[CUDA memcpy Device-to-Device]") == ("memcpy", "DtoD", "")
    assert copy_kind("Memset (Device)") == ("memset", "", "Device")
    assert copy_kind("[CUDA memset (Device)]") == ("memset", "", "Device")
    assert copy_kind("[CUDA memset]") == ("memset", "", "")


def _analyse(rows: list[dict[str, Any]]) -> Any:
    base = {c: None for c in EVENT_COLUMNS}
    full = [{**base, "input": "t", **r} for r in rows]
    ev = pd.DataFrame({c: pd.array([r[c] for r in full], dtype=t) for c, t in EVENT_COLUMNS.items()})
    return analyze_timelines([ParseResult(InputAccounting("t", "test", records=len(ev)), events=ev,
                                          meta={"timeline": True})])


def test_pageable_async_copies_are_flagged_with_bandwidth() -> None:
    """Two 8 MB pageable copies of 1 ms (8 GB/s), one made by cudaMemcpyAsync: one async pageable call."""
    rows: list[dict[str, Any]] = []
    for i, call in enumerate(("cudaMemcpyAsync", "cudaMemcpy")):
        t = i * 3_000_000
        rows.append({"kind": "runtime", "name": call, "start_ns": t, "end_ns": t + 1_100_000, "correlation": 10 + i,
                     "pid": 1, "tid": 1})
        rows.append({"kind": "memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "device": "0", "stream": 7,
                     "start_ns": t + 50_000, "end_ns": t + 1_050_000, "correlation": 10 + i, "bytes": 8_000_000})
    rows.append({"kind": "kernel", "name": "k", "device": "0", "stream": 7, "start_ns": 1_100_000,
                 "end_ns": 2_900_000})
    (e,) = _analyse(rows).timeline
    (c,) = e["copies"]
    assert (c["kind"], c["count"], c["bytes"], c["time_s"], c["gb_s"], c["async_calls"], c["pageable"]) == (
        "memcpy HtoD (Pageable -> Device)", 2, 16_000_000, 0.002, 8.0, 1, True)
    f = next(f for f in timeline_findings([e], []) if f["rule"] == "timeline-pageable-copies")
    assert f["est_saving_s"] is None and f["severity"] == "medium" and "pin" in f["recommendation"].lower()


@pytest.mark.corpus
def test_corpus_h100_weight_loading_says_what_to_change() -> None:
    """223 pinned host-to-device copies per GPU, 25.5 GB in 0.92 s = 27.7 GB/s, the same bytes on both GPUs."""
    if not H100.is_file():
        pytest.skip("trace corpus absent")
    a = analyze_timelines([parse_path(H100)])
    for e in a.timeline:
        h2d = next(c for c in e["copies"] if c["kind"] == "memcpy HtoD (Pinned -> Device)")
        assert (h2d["count"], h2d["bytes"], round(h2d["gb_s"], 1)) == (223, 25_475_252_224, 27.7)
        assert round(h2d["time_s"], 2) == 0.92
    fs = [f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-transfer"]
    assert len(fs) == 2
    f = fs[0]
    assert "memcpy HtoD (Pinned -> Device): 223 x, 25.5 GB" in f["title"] and "27.7 GB/s" in f["title"]
    assert "share it between the GPUs" in f["recommendation"] and "already use pinned memory" in f["recommendation"]
    assert any("2 devices of this input copy the same 25.5 GB" in x for x in f["evidence"])
    assert f["est_saving_s"] is None and f["severity"] == "medium"
