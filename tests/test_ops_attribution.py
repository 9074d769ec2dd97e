"""Kernel -> launching op attribution (analyzer/ops/attribution.py, docs/formulas.md#op-attribution):
hand-built events and ops, and the corpus traces."""

from __future__ import annotations

import pandas as pd
import pytest

from rooftop.analyzer.ops.attribution import (
    GRAPH_REPLAY,
    LAUNCH_NOT_IN_TRACE,
    NO_ENCLOSING_OP,
    attribute,
    coverage_times,
)
from rooftop.parsers import parse_path
from rooftop.parsers.model import EVENT_COLUMNS, OP_COLUMNS
from rooftop.parsers.source import ParseOptions
from tests.conftest import corpus_dir


def _events(rows: list[dict[str, object]]) -> pd.DataFrame:
    df = pd.DataFrame(rows).reindex(columns=list(EVENT_COLUMNS))
    return df.astype({c: t for c, t in EVENT_COLUMNS.items()})


def _ops(rows: list[dict[str, object]]) -> pd.DataFrame:
    df = pd.DataFrame(rows).reindex(columns=list(OP_COLUMNS))
    return df.astype({c: t for c, t in OP_COLUMNS.items()})


def _rt(name: str, start: int, corr: int, tid: int = 1) -> dict[str, object]:
    return {"input": "t", "kind": "runtime", "name": name, "start_ns": start, "end_ns": start + 5, "pid": 9,
            "tid": tid, "correlation": corr}


def _k(name: str, start: int, dur: int, corr: int, kind: str = "kernel") -> dict[str, object]:
    return {"input": "t", "device": "0", "kind": kind, "name": name, "start_ns": start, "end_ns": start + dur,
            "stream": 7, "correlation": corr}


def _op(name: str, start: int, end: int, tid: int = 1, dims: str | None = None) -> dict[str, object]:
    return {"input": "t", "name": name, "start_ns": start, "end_ns": end, "pid": 9, "tid": tid, "input_dims": dims}


def test_each_kernel_goes_to_the_innermost_op_holding_its_launch() -> None:
    ops = _ops([_op("aten::linear", 0, 100), _op("aten::addmm", 10, 50, dims="[[4],[2,3],[3,4]]"),
                _op("aten::t", 5, 8), _op("aten::other_thread", 0, 1000, tid=2)])
    ev = _events([_rt("cudaLaunchKernel", 20, 1), _k("gemm", 1000, 100, 1),     # inside addmm
                  _rt("cudaMemsetAsync", 60, 2), _k("Memset", 1100, 10, 2, "memset"),  # inside linear only
                  _rt("cudaLaunchKernel", 200, 3), _k("stray", 1200, 30, 3),  # outside every op of thread 1
                  _k("warmup", 900, 40, 4),  # its launch is not in the trace
                  _rt("cudaGraphLaunch", 30, 5), _k("g1", 1300, 7, 5), _k("g2", 1310, 3, 5)])
    att = attribute(ev, ops)
    names = att.hosts["name"].tolist()
    got = {n: (names[o] if o >= 0 else r) for n, o, r in zip(att.acts["name"], att.acts["op"], att.acts["reason"],
                                                              strict=True)}
    assert got == {"gemm": "aten::addmm", "Memset": "aten::linear", "stray": NO_ENCLOSING_OP,
                   "warmup": LAUNCH_NOT_IN_TRACE, "g1": GRAPH_REPLAY, "g2": GRAPH_REPLAY}
    addmm = names.index("aten::addmm")
    assert [names[i] for i in att.ancestry(addmm)] == ["aten::addmm", "aten::linear"]
    assert att.hosts.loc[addmm, "input_dims"] == "[[4],[2,3],[3,4]]"
    cov = coverage_times(att)["0"]
    assert cov == {"gpu_ns": 190, "attributed_ns": 110, LAUNCH_NOT_IN_TRACE: 40, GRAPH_REPLAY: 10,
                   NO_ENCLOSING_OP: 30}


def test_nvtx_ranges_from_emit_nvtx_are_ops_with_their_sizes() -> None:
    ev = _events([{"input": "t", "kind": "range", "name": "aten::mm, seq = 3, op_id = 7, sizes = [[8, 16], [16, 4]]",
                   "start_ns": 0, "end_ns": 100, "pid": 9, "tid": 1},
                  {"input": "t", "kind": "range", "name": "ProfilerStep#3", "start_ns": 0, "end_ns": 1000,
                   "pid": 9, "tid": 1},
                  _rt("cudaLaunchKernel", 10, 1), _k("gemm", 500, 50, 1)])
    att = attribute(ev, _ops([]))
    assert att.hosts["name"].tolist() == ["aten::mm"]  # a profiler step is not an op
    assert att.hosts.loc[0, "input_dims"] == "[[8,16],[16,4]]"
    assert att.acts["op"].tolist() == [0]


def test_a_launch_on_the_first_instant_of_two_ops_starting_together_goes_to_the_inner_one() -> None:
    ops = _ops([_op("outer", 10, 100), _op("inner", 10, 40)])
    att = attribute(_events([_rt("cudaLaunchKernel", 10, 1), _k("k", 50, 5, 1)]), ops)
    assert att.hosts["name"][att.acts["op"][0]] == "inner"


OPS_TRACES = {  # file stem -> (GPU ms, of it launched before the capture)
    "Falconsai_nsfw_image_detection__1016002": (1.225, 0.0),
    "Qwen_Qwen1.5-0.5B-Chat__1016005": (45.647, 13.742),
    "gaunernst_bert-small-uncased__1016001": (0.309, 0.0),
}


@pytest.mark.parametrize("stem", sorted(OPS_TRACES))
def test_corpus_ops_traces_attribute_every_launched_kernel(stem: str) -> None:
    path = next(corpus_dir("ops").glob(f"*{stem}.json.gz"))
    r = parse_path(str(path), ParseOptions())
    cov = coverage_times(attribute(r.events, r.ops))
    assert list(cov) == ["0"]
    c = cov["0"]
    gpu_ms, before_ms = OPS_TRACES[stem]
    assert round(c["gpu_ns"] / 1e6, 3) == gpu_ms and round(c[LAUNCH_NOT_IN_TRACE] / 1e6, 3) == before_ms
    assert c["attributed_ns"] == c["gpu_ns"] - c[LAUNCH_NOT_IN_TRACE]  # every launched activity has its op


def test_corpus_graph_replays_are_not_guessed() -> None:
    path = corpus_dir("trace") / "AMD-AGI__TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz"
    r = parse_path(str(path), ParseOptions())
    att = attribute(r.events, r.ops)
    replay = att.acts[att.acts["reason"] == GRAPH_REPLAY]
    assert len(replay) == 421 and (replay["op"] == -1).all()
