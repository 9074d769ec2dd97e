"""Communication on timelines (issue 25 item 7): NCCL kernels apart, exposed communication and
overlap per device, skew and straggler across ranks (docs/formulas.md#timeline-communication)."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.timeline import analyze_timelines
from rooftop.parsers import parse_path
from tests.conftest import CORPUS, FIXTURES, corpus_dir

NCCL = CORPUS / "trace" / "facebookresearch__HolisticTraceAnalysis__tests__data__nccl_parser_config__nccl_data.json.gz"


def _make_trace() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_trace", FIXTURES / "make_trace.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.mark.corpus
def test_corpus_nccl_overlap_per_device() -> None:
    """21 NCCL kernels, 46.876 ms busy; 7.317 ms of it beside computation kernels: 15.61 % (HTA 0.5.0
    reports 14.31 % on the 14 of them inside the ProfilerSteps it keeps, ts cut to whole µs)."""
    if not NCCL.is_file():
        pytest.skip("trace corpus absent")
    (e,) = analyze_timelines([parse_path(NCCL)]).timeline
    assert e["communication"] == {"kernels": 21, "busy_s": 0.046876493, "overlapped_s": 0.007317025,
                                  "exposed_s": 0.039559468, "overlap_share": 0.156091562,
                                  # by operation: they add up to exposed_s here (no two overlap in time)
                                  "exposed_by_op_s": {"AllReduce": 0.039445134, "Broadcast": 0.000114334}}


def test_rank_folder_skew_and_straggler(tmp_path: Path) -> None:
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.analyzer.schema import validate_document

    folder = _make_trace().write_rank_kineto(tmp_path / "ranks")
    doc = run_analysis([str(folder)])
    validate_document(doc)
    (c,) = doc["collectives"]
    assert (c["participants"], c["collectives"], c["skew_median_s"], c["skew_sum_s"]) == (
        ["rank 0", "rank 1", "rank 2", "rank 3"], 10, 0.003, 0.03)
    assert (c["straggler"], c["straggler_last"], c["straggler_wait_s"]) == ("rank 2", 10, 0.03)
    comm = {e["input"].rsplit("/", 1)[-1]: e["communication"] for e in doc["timeline"]}
    assert comm["rank0.json"] == {"kernels": 10, "busy_s": 0.05, "overlapped_s": 0.01, "exposed_s": 0.04,
                                  "overlap_share": 0.2, "exposed_by_op_s": {"AllReduce": 0.04}}
    assert comm["rank2.json"]["overlap_share"] == 0.0
    rules = {(f["rule"], f.get("group")) for f in doc["findings"]}
    assert ("timeline-straggler", "rank 2") in rules
    assert ("timeline-exposed-communication", "rank0.json GPU 0") in rules


def test_one_rank_has_no_collectives(tmp_path: Path) -> None:
    mt = _make_trace()
    p = tmp_path / "r.json"
    p.write_text(__import__("json").dumps(mt.rank_doc(0)))
    a = analyze_timelines([parse_path(p)])
    assert a.collectives == [] and a.timeline[0]["communication"]["kernels"] == 10


def test_a_long_collective_name_reads_as_cut_and_stays_whole_in_the_evidence() -> None:
    """The corpus mfu_2gpu_before title read 'joins ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned lo
    last in 22 of 33': cut mid-word with nothing to say so, and the whole name nowhere."""
    from rooftop.analyzer.timeline.findings import straggler_findings

    name = "ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned long)4096>)"
    coll = {"name": name, "participants": ["GPU 0", "GPU 1"], "collectives": 33, "straggler": "GPU 1",
            "straggler_last": 22, "straggler_wait_s": 0.0114, "skew_median_s": 7.8e-5, "skew_sum_s": 0.012}
    (f,) = straggler_findings([coll], [{"span_s": 0.3}])
    assert "joins ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<(unsigned l… last in 22 of 33" in f["title"]
    assert f["evidence"][0] == f"collective kernel: {name}"
    (short,) = straggler_findings([{**coll, "name": "ncclAllReduce"}], [{"span_s": 0.3}])
    assert "joins ncclAllReduce last in" in short["title"]


def _acts(rows: list[tuple[str, int, int]]) -> Any:
    from rooftop.analyzer.timeline.metrics import Acts

    return Acts.from_frame(pd.DataFrame({"kind": "kernel", "name": [n for n, _, _ in rows], "stream": 7,
                                         "start_ns": [s for _, s, _ in rows], "end_ns": [e for _, _, e in rows]}))


def test_exposed_communication_by_operation_decides_the_advice() -> None:
    """A 10 ms SendRecv with no compute beside it and a 4 ms AllReduce half under a GEMM: exposed SendRecv
    10 ms, AllReduce 2 ms. The advice names point-to-point transfers, not DDP gradient bucketing (the corpus
    mfu_2gpu_before trace, all SendRecv, was told about DDP and FSDP); an AllReduce-only device is."""
    from rooftop.analyzer.timeline.comm import communication, nccl_op
    from rooftop.analyzer.timeline.findings import timeline_findings

    assert [nccl_op(n) for n in ("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)",
                                 "ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*)",
                                 "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL", "ncclKernel_Broadcast_RING",
                                 "ncclDevKernel_Generic")] == ["SendRecv", "AllReduce", "ReduceScatter",
                                                               "Broadcast", "other"]
    ms = 1_000_000
    c = communication(_acts([("ncclDevKernel_SendRecv(x)", 0, 10 * ms), ("gemm", 20 * ms, 22 * ms),
                             ("ncclKernel_AllReduce_RING_LL_Sum_float", 20 * ms, 24 * ms)]))
    assert c is not None and c["exposed_s"] == 0.012
    assert c["exposed_by_op_s"] == {"SendRecv": 0.01, "AllReduce": 0.002}

    def advice(comm: dict[str, Any]) -> str:
        entry = {"input": "t.json", "device": "0", "span_s": 0.1, "label": "kernel-bound", "communication": comm,
                 "gpu_busy_s": 0.05, "idle_s": 0.05, "idle_fraction": 0.5}
        (f,) = [f for f in timeline_findings([entry], []) if f["rule"] == "timeline-exposed-communication"]
        assert any(e.startswith("exposed by NCCL operation") for e in f["evidence"])
        return str(f["recommendation"])

    p2p = advice(c)
    assert "point-to-point" in p2p and "isend/irecv" in p2p and "DDP" not in p2p
    only_ar = communication(_acts([("ncclKernel_AllReduce_RING_LL_Sum_float", 0, 4 * ms), ("gemm", 5 * ms, 6 * ms)]))
    assert only_ar is not None and "DDP bucketing" in advice(only_ar)


@pytest.mark.corpus
def test_corpus_sendrecv_trace_is_told_about_point_to_point_transfers() -> None:
    path = corpus_dir("trace") / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    from rooftop.analyzer.pipeline import run_analysis

    doc = run_analysis([str(path)])
    recs = [f["recommendation"] for f in doc["findings"] if f["rule"] == "timeline-exposed-communication"]
    assert recs and all("point-to-point" in r and "DDP" not in r for r in recs)
