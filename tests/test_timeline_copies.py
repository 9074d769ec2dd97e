"""Copies on timelines (issue 25 item 8): bytes, direction, memory kinds, bandwidth per copy kind;
pageable asynchronous copies (nsys analyze cuda_memcpy_async); what a transfer-bound trace should
change (docs/formulas.md#timeline-copies)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from fixtures.make_trace import write_copies_kineto
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


def _findings(path: Path) -> list[dict[str, Any]]:
    a = analyze_timelines([parse_path(path)])
    return timeline_findings(a.timeline, a.steps)


def test_pinning_saving_is_measured_on_the_capture_s_own_pinned_copies(tmp_path: Path) -> None:
    """fixtures/make_trace.copies_doc, by hand over 2 steps: H2D pageable 4 x 8 MiB in 8 ms, pinned 4 x 8 MiB in
    1.6 ms -> 6.4 ms; D2H pageable 2 x 4 MiB in 4 ms, pinned 4 x 4 MiB in 1 ms (16.8 GB/s) -> 0.5 ms -> 3.5 ms;
    9.9 ms in all, of a 15.398 ms span: high. The transfer finding (its top kind is the pageable H2D) is folded
    into this one, so the saving is claimed once (was: no saving, both findings saying "pin")."""
    fs = _findings(write_copies_kineto(tmp_path / "copies.json"))
    (f,) = [f for f in fs if f["rule"] == "timeline-pageable-copies"]
    assert f["est_saving_s"] == pytest.approx(0.0099, abs=1e-9)
    assert f["severity"] == "high" and "9.900 ms of it recoverable by pinning" in f["title"]
    assert any("16.8 GB/s" in x and "500.0 µs: 3.500 ms to gain" in x for x in f["evidence"])
    assert any("21.0 GB/s" in x and "1.600 ms: 6.400 ms to gain" in x for x in f["evidence"])
    assert not [g for g in fs if g["rule"] == "timeline-transfer"]
    assert any("timeline-transfer, folded here" in x for x in f["evidence"])
    assert "pinned buffer allocated once" in f["recommendation"] and "pin once" in f["recommendation"]
    assert [g for g in fs if g["est_saving_s"] == f["est_saving_s"]] == [f]  # the pinning saving, claimed once


def test_larger_pinned_copies_do_not_decide_the_saving(tmp_path: Path) -> None:
    """The same with 16 MiB pinned D2H copies against 4 MiB pageable ones: a larger copy runs faster, so the D2H
    saving is not decided and the finding claims the H2D 6.4 ms, saying so and what would decide the rest."""
    fs = _findings(write_copies_kineto(tmp_path / "copies.json", dtoh_pinned_mib=16))
    (f,) = [f for f in fs if f["rule"] == "timeline-pageable-copies"]
    assert f["est_saving_s"] == pytest.approx(0.0064, abs=1e-9)
    (why,) = [x for x in f["evidence"] if x.startswith("memcpy DtoH (Device -> Pageable): what pinning recovers is unknown")]
    assert "median 16.8 MB against 4.2 MB" in why and "a pinned device-to-host copy of at least 4.2 MB" in why
    assert any("at least 6.400 ms" in x for x in f["evidence"])


def test_synchronous_pageable_copies_get_the_saving_in_the_transfer_finding() -> None:
    """Three synchronous 8 MB pageable H2D copies of 2 ms (cudaMemcpy: no nsys async-pageable finding) and
    one 8 MB pinned H2D copy of 0.4 ms (20 GB/s): the device is transfer-bound, its top kind pageable; pinning
    recovers 3 x (2 - 0.4) = 4.8 ms, claimed by the transfer finding alone."""
    rows: list[dict[str, Any]] = []
    for i, (name, call, dur) in enumerate([("Memcpy HtoD (Pageable -> Device)", "cudaMemcpy", 2_000_000)] * 3
                                          + [("Memcpy HtoD (Pinned -> Device)", "cudaMemcpyAsync", 400_000)]):
        t = i * 2_100_000
        rows.append({"kind": "runtime", "name": call, "start_ns": t, "end_ns": t + dur + 60_000,
                     "correlation": 10 + i, "pid": 1, "tid": 1})
        rows.append({"kind": "memcpy", "name": name, "device": "0", "stream": 7, "start_ns": t + 50_000,
                     "end_ns": t + 50_000 + dur, "correlation": 10 + i, "bytes": 8_000_000})
    (e,) = _analyse(rows).timeline
    assert e["label"] == "transfer-bound"
    fs = timeline_findings([e], [])
    assert not [f for f in fs if f["rule"] == "timeline-pageable-copies"]
    (f,) = [f for f in fs if f["rule"] == "timeline-transfer"]
    assert f["est_saving_s"] == pytest.approx(0.0048, abs=1e-9) and f["severity"] == "high"
    assert "pin" in f["recommendation"].lower()


@pytest.mark.corpus
def test_corpus_tiny_pageable_copies_beside_large_pinned_ones_claim_no_saving() -> None:
    """h100_2gpu_1s: 2 pageable H2D copies of 784 B beside pinned ones of median 67.1 MB; the large copies' rate
    says nothing about 784 B (a copy's rate grows with its size): no saving, and what would decide it."""
    if not H100.is_file():
        pytest.skip("trace corpus absent")
    a = analyze_timelines([parse_path(H100)])
    fs = [f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-pageable-copies"]
    assert len(fs) == 2
    for f in fs:
        assert f["est_saving_s"] is None and f["severity"] == "low"
        assert any("median 67.1 MB against 784 B" in x and "at least 784 B" in x for x in f["evidence"])
