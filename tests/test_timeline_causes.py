"""Idle time blamed on what held the GPU, and the findings a trace yields on its own (issue 25):
sync only while the host was blocked, host gaps by what the host ran, ProfilerSteps against their
wall time, too little activity is unknown (docs/formulas.md#timelines, #timeline-findings)."""

from __future__ import annotations

import importlib.util
import json
import re
from pathlib import Path
from types import ModuleType
from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.timeline import analyze_timelines
from rooftop.analyzer.timeline.findings import timeline_findings
from rooftop.parsers import parse_path
from rooftop.parsers.model import EVENT_COLUMNS, InputAccounting, ParseResult
from tests.conftest import CORPUS, FIXTURES

CORPUS_TRACE = CORPUS / "trace"
ALEXNET = "facebookresearch__HolisticTraceAnalysis__tests__data__critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
B200 = "AMD-AGI__TraceLens__tests__traces__b200__eager_trace.json.gz"
TRITON = "facebookresearch__HolisticTraceAnalysis__tests__data__triton_example__triton_example.json.gz"
RESNET = "pytorch__kineto__tb_plugin__samples__resnet50_autograd_api_num_workers_0__worker0.pt.trace.json.gz"
RANK0 = "facebookresearch__HolisticTraceAnalysis__tests__data__negative_queue_length_values_check__rank0.json.gz"


def _make_trace() -> ModuleType:
    spec = importlib.util.spec_from_file_location("make_trace", FIXTURES / "make_trace.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _analyse(rows: list[dict[str, Any]]) -> Any:
    base = {c: None for c in EVENT_COLUMNS}
    full = [{**base, "input": "t", "pid": 1, "tid": 1, **r} for r in rows]
    ev = pd.DataFrame({c: pd.array([r[c] for r in full], dtype=t) for c, t in EVENT_COLUMNS.items()})
    r = ParseResult(InputAccounting("t", "test", records=len(ev)), events=ev, meta={"timeline": True})
    return analyze_timelines([r])


def _kernel(start: int, end: int) -> dict[str, Any]:
    return {"kind": "kernel", "name": "k", "device": "0", "stream": 7, "start_ns": start, "end_ns": end, "pid": None}


def _corpus(name: str) -> Any:
    p = CORPUS_TRACE / name
    if not p.is_file():
        pytest.skip("trace corpus absent")
    return analyze_timelines([parse_path(p)])


# -- sync: only the part of a gap the host spent blocked -------------------------------------------

def test_a_sync_that_returns_early_in_a_gap_is_not_the_gap() -> None:
    """The nsys LLaMA pattern: cudaDeviceSynchronize returns 1 µs into a 1.2 ms gap, then the host
    works 1.199 ms more. Only 1 µs is sync; the rest is host (formerly the whole gap was sync)."""
    a = _analyse([_kernel(0, 40_000), _kernel(1_240_000, 1_280_000),
                  {"kind": "runtime", "name": "cudaDeviceSynchronize", "start_ns": 30_000, "end_ns": 41_000}])
    (e,) = a.timeline
    assert e["idle_by_cause_s"] == {"sync": 0.000001, "launch": 0.0, "host": 0.001199}
    assert (e["label"], e["limiter"]) == ("idle", "host")


def test_an_async_copy_into_pageable_memory_is_a_host_wait() -> None:
    """cudaMemcpyAsync of a device-to-host copy into pageable memory returns only once the copy is done
    (CUDA API synchronization behavior): the gap inside the call is sync. A Kineto copy has no process and
    is joined by correlation id. Into pinned memory the call returns at once: the same gap is host."""
    for memory, sync in (("Device -> Pageable", 0.0011605), ("Device -> Pinned", 0.0)):
        a = _analyse([_kernel(0, 40_000), _kernel(1_240_000, 1_280_000),
                      {"kind": "memcpy", "name": f"Memcpy DtoH ({memory})", "device": "0", "stream": 7,
                       "start_ns": 1_200_000, "end_ns": 1_201_000, "pid": None, "correlation": 5, "bytes": 8},
                      {"kind": "runtime", "name": "cudaMemcpyAsync", "start_ns": 30_000, "end_ns": 1_201_500,
                       "correlation": 5}])
        (e,) = a.timeline
        assert e["idle_by_cause_s"] == {"sync": sync, "launch": 0.0, "host": round(0.0011990 - sync, 9)}, memory


@pytest.mark.corpus
def test_corpus_rank0_waits_in_pageable_copies_not_the_host() -> None:
    """The HTA rank0 trace: one cudaMemcpyAsync per step into pageable memory waits ~147 ms with this GPU idle.
    It was host idle (CUDA runtime, 0.465 s, advised to pin buffers although its pageable copies move 15 kB);
    it is sync, and no finding tells it to pin."""
    a = _corpus(RANK0)
    (e,) = [t for t in a.timeline if t["device"] == "0"]
    assert e["limiter"] == "sync" and e["idle_by_cause_s"]["sync"] > 0.45
    assert e["host_idle_by_activity_s"]["CUDA runtime"] < 0.1
    assert not any(t["name"] == "cudaMemcpyAsync" and t["seconds"] > 0.01 for t in e["host_idle_top"])
    (sync,) = [f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-idle-sync"]
    assert "work elsewhere" in sync["recommendation"]  # 8-byte copies: one chunk each, no staging to blame


def test_a_stream_waiting_on_an_event_is_not_the_host_waiting() -> None:
    """CUPTI's STREAM_WAIT_EVENT record (Kineto "Stream Wait Event", nsys "Stream wait sync") times a
    cudaStreamWaitEvent call, which does not block the host."""
    gap = [_kernel(0, 10_000), _kernel(200_000, 210_000)]
    for name, sync in (("Stream Wait Event", 0.0), ("Stream wait sync", 0.0), ("Context Sync", 0.00019)):
        a = _analyse([*gap, {"kind": "sync", "name": name, "device": "0", "start_ns": 5_000, "end_ns": 205_000}])
        assert a.timeline[0]["idle_by_cause_s"]["sync"] == sync, name


@pytest.mark.corpus
def test_corpus_alexnet_is_host_not_sync() -> None:
    """1.96 s of gaps touch a sync call, but the host sat in one for 0.177 ms of them; the host time
    is CUDA runtime calls: one 6.0 s cudaFree, one 3.06 s first cudaLaunchKernel."""
    (e,) = _corpus(ALEXNET).timeline
    assert e["idle_by_cause_s"]["sync"] == 0.000177 and (e["label"], e["limiter"]) == ("idle", "host")
    top = {t["name"]: t["seconds"] for t in e["host_idle_top"] if t["category"] == "CUDA runtime"}
    assert top["cudaFree"] > 5.9 and top["cudaLaunchKernel"] > 3.0
    assert next(iter(e["host_idle_by_activity_s"])) == "CUDA runtime"


# -- too little activity ------------------------------------------------------------------------------

def test_one_kernel_is_too_little_to_judge() -> None:
    for rows in ([_kernel(0, 20)], [_kernel(0, 1_760), _kernel(500, 1_000)]):  # 20 ns; two that merge
        (e,) = _analyse(rows).timeline
        assert (e["label"], e["limiter"]) == ("unknown", "unknown")
        assert "too little activity" in e["evidence"][0]
    (e,) = _analyse([_kernel(0, 20), _kernel(60, 70)]).timeline  # a gap: measurable
    assert e["label"] == "overhead-bound"


@pytest.mark.corpus
def test_corpus_single_triton_kernel_is_unknown() -> None:
    a = _corpus(TRITON)
    assert [(e["label"], e["kernels"]) for e in a.timeline] == [("unknown", 1)]
    assert [s["label"] for s in a.steps] == ["unknown"]
    assert timeline_findings(a.timeline, a.steps) == []


# -- ProfilerSteps against their wall time, host gaps by what the host ran ---------------------------

def test_dataloader_step_is_host_bound_against_its_wall_time(tmp_path: Path) -> None:
    """fixtures/make_trace.loader_doc: 176 ms steps, 70 ms of DataLoader before the first kernel.
    Inside the GPU span the step looked kernel-bound; against its wall it is 57.4 % idle."""
    p = _make_trace().write_loader_kineto(tmp_path / "loader.json")
    a = analyze_timelines([parse_path(p)])
    assert len(a.steps) == 4
    for s in a.steps:
        assert (s["label"], s["limiter"], s["idle_fraction"]) == ("overhead-bound", "host", 0.573863636)
        assert (s["span_s"], s["gpu_busy_s"], s["kernels"]) == (0.176, 0.075, 100)
        assert s["host_idle_by_activity_s"] == {"input pipeline": 0.07, "untraced": 0.0295, "optimizer": 0.001,
                                                "CUDA runtime": 0.0005}
    (f, *_) = timeline_findings(a.timeline, a.steps)
    assert f["rule"] == "timeline-idle-host" and f["severity"] == "high" and f["limiter"] == "host"
    assert "(input pipeline): enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ in the main " \
           "process; median 40 % of a step's wall time (4 steps)" in f["title"]
    assert "num_workers > 0" in f["recommendation"]
    # 3 x 70 ms: the DataLoader calls between the 4 steps' kernels (the first lies before the GPU span)
    assert f["est_saving_s"] == 0.21 == a.timeline[0]["host_idle_by_activity_s"]["input pipeline"]


def _activity(f: dict[str, Any]) -> str:
    """The host activity a host finding's title names."""
    m = re.search(r"waiting on the host \(([^)]*)\)", f["title"])
    assert m, f["title"]
    return m.group(1)


def _three_host_activities_doc() -> dict[str, Any]:
    """Three 1000 µs ProfilerSteps; step T: kernel A [T, T+100), aten::foo [T+100, T+400) with no GPU work,
    kernel B [T+400, T+500), the DataLoader [T+500, T+900), kernel C [T+900, T+1000) (launches inside the
    kernels, so in no gap); step 0 only: cudaMalloc [150, 350) inside aten::foo (a warm-up). Device: span
    3000 µs, host idle 2100 µs = input pipeline 3 x 400 + CPU ops 3 x 300 - 200 + CUDA runtime 200."""
    ev: list[dict[str, Any]] = []
    for i in range(3):
        t = 1000 * i
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 5, "tid": 1, "ts": t,
                   "dur": 1000})
        ev.append({"ph": "X", "cat": "cpu_op", "name": "aten::foo", "pid": 5, "tid": 1, "ts": t + 100, "dur": 300})
        ev.append({"ph": "X", "cat": "user_annotation", "pid": 5, "tid": 1, "ts": t + 500, "dur": 400,
                   "name": "enumerate(DataLoader)#_MultiProcessingDataLoaderIter.__next__"})
        for k, (launch, ts) in enumerate(((t, t), (t + 50, t + 400), (t + 450, t + 900))):
            corr = 10 * i + k + 1
            ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 1, "ts": launch,
                       "dur": 0, "args": {"correlation": corr}})
            ev.append({"ph": "X", "cat": "kernel", "name": f"k{k}", "pid": 0, "tid": 7, "ts": ts, "dur": 100,
                       "args": {"device": 0, "stream": 7, "correlation": corr}})
    ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaMalloc", "pid": 5, "tid": 1, "ts": 150, "dur": 200})
    return {"traceEvents": ev}


def test_each_host_activity_is_a_finding_that_saves_its_own_time(tmp_path: Path) -> None:
    """docs/formulas.md#timeline-findings: one finding per host activity, each saving its own gap time (was:
    one finding claiming all 2100 µs under the DataLoader's advice); the warm-up cudaMalloc, in no step but
    the first, keeps its 200 µs but is graded low and says it is a one-off."""
    p = tmp_path / "three.json"
    p.write_text(json.dumps(_three_host_activities_doc()))
    a = analyze_timelines([parse_path(p)])
    (e,) = a.timeline
    assert (e["span_s"], e["idle_by_cause_s"]["host"]) == (0.003, 0.0021)
    host = {_activity(f): f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-idle-host"}
    assert {k: (f["est_saving_s"], f["severity"]) for k, f in host.items()} == {
        "input pipeline": (0.0012, "high"), "CPU ops": (0.0007, "high"), "CUDA runtime": (0.0002, "low")}
    assert sum(f["est_saving_s"] for f in host.values()) == pytest.approx(e["idle_by_cause_s"]["host"], abs=1e-12)
    assert "median 40 % of a step's wall time (3 steps)" in host["input pipeline"]["title"]
    assert "raise num_workers" in host["input pipeline"]["recommendation"]
    assert "median 30 % of a step's wall time (3 steps)" in host["CPU ops"]["title"]  # 10 %, 30 %, 30 %
    assert "aten::foo" in host["CPU ops"]["recommendation"]
    rt = host["CUDA runtime"]
    assert "cudaMalloc; absent from a typical step (median 0 % of 3 steps)" in rt["title"]
    assert "allocation calls" in rt["recommendation"]
    assert any("absent from a typical step (median share 0 over 3 steps): a warm-up or one-off" in x
               for x in rt["evidence"])
    first = timeline_findings(a.timeline, a.steps)[0]
    assert "(input pipeline)" in first["title"]


def _steps_doc(step_name: str) -> dict[str, Any]:
    """One thread: ``step_name`` [0, 10 µs) launches k1 (runs 0-1 µs), k2 (launched at 1 µs, runs 5-6 µs)
    and k4 (launched at 9 µs, runs 99-100 µs, queued behind other work); the next range [10, 100 µs)
    launches k3 (runs 10-90 µs)."""
    ev = [{"ph": "X", "cat": "user_annotation", "name": step_name, "pid": 5, "tid": 1, "ts": 0, "dur": 10},
          {"ph": "X", "cat": "user_annotation", "name": "other", "pid": 5, "tid": 1, "ts": 10, "dur": 90}]
    for corr, (launch, ts, dur) in enumerate([(0, 0, 1), (1, 5, 1), (10, 10, 80), (9, 99, 1)], start=1):
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 1, "ts": launch,
                   "dur": 0, "args": {"correlation": corr}})
        ev.append({"ph": "X", "cat": "kernel", "name": f"k{corr}", "pid": 0, "tid": 7, "ts": ts, "dur": dur,
                   "args": {"device": 0, "stream": 7, "correlation": corr}})
    return {"traceEvents": ev}


def test_profiler_steps_are_not_voided_by_interleaving_ranges_are(tmp_path: Path) -> None:
    """docs/formulas.md#timelines: a ProfilerStep holds all the work of its step, so it is measured
    over its wall time and the interleave rule does not apply (the GPU ran 2 of its 10 µs); a
    range's own gaps that other ranges' work filled are not its idle time (unknown)."""
    for name, want in (("ProfilerStep#7", ("overhead-bound", 0.8)), ("mine", ("unknown", 0.0))):
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(_steps_doc(name)))
        s = next(s for s in analyze_timelines([parse_path(p)]).steps if s["name"] == name)
        assert (s["label"], s["idle_fraction"] if name.startswith("Profiler") else 0.0) == want
        if want[0] == "unknown":
            assert "other ranges' work in 82%" in s["evidence"][0]


@pytest.mark.corpus
def test_corpus_rank0_steps_551_to_554_are_judged_like_550() -> None:
    """They were 'unknown' by the interleave rule although they are 63-68 % idle like step 550 (each waits
    ~80 ms in a device-to-host copy into pageable memory: sync, below)."""
    steps = {s["name"]: s for s in _corpus(RANK0).steps if s["kind"] == "profiler-step"}
    for n in range(550, 555):
        s = steps[f"ProfilerStep#{n}"]
        assert (s["label"], s["limiter"]) == ("overhead-bound", "sync"), n
        assert s["idle_fraction"] > 0.5 and s["span_s"] == s["wall_s"]


# -- findings from a trace on its own ------------------------------------------------------------------

@pytest.mark.corpus
def test_corpus_b200_eager_trace_has_findings() -> None:
    """72.562 ms of host-cause idle: CPU ops 48.167 ms (vLLM's moe_forward first), annotations 17.135 ms,
    CUDA runtime 7.259 ms; no ProfilerStep, so each is graded by its share of the span."""
    a = _corpus(B200)
    host = [f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-idle-host"]
    assert [(f["severity"], f["est_saving_s"]) for f in host] == [
        ("high", 0.048166822), ("high", 0.017135479), ("medium", 0.007259279)]
    assert "(CPU ops): vllm::moe_forward" in host[0]["title"] and "per-op host overhead" in host[0]["recommendation"]
    assert sum(f["est_saving_s"] for f in host) == pytest.approx(0.07256158, abs=1e-9)
    assert host[0]["time_share"] == round(0.048166822 / a.timeline[0]["span_s"], 9)


@pytest.mark.corpus
def test_every_corpus_trace_over_30_percent_idle_has_a_finding() -> None:
    truth = CORPUS_TRACE / "TRUTH.json"
    if not truth.is_file():
        pytest.skip("trace corpus absent")
    for name in json.loads(truth.read_text()):
        a = analyze_timelines([parse_path(CORPUS_TRACE / name)])
        found = {f["group"] for f in timeline_findings(a.timeline, a.steps)}
        for e in a.timeline:
            if (e["idle_fraction"] or 0) > 0.3 and e["label"] != "unknown":
                assert f"{name} GPU {e['device']}" in found, name


@pytest.mark.corpus
def test_corpus_resnet50_num_workers_0_blames_the_dataloader() -> None:
    """No ProfilerStep: the six DataLoader __next__ calls delimit five iterations (the first 4.49 s,
    warm-up: CUDA runtime); in a typical one the GPU waits on the main-process DataLoader."""
    a = _corpus(RESNET)
    its = [s for s in a.steps if s["kind"] == "iteration"]
    assert [s["name"] for s in its] == [f"DataLoader iteration {i}" for i in range(1, 6)]
    assert [round(s["wall_s"], 3) for s in its] == [4.49, 0.161, 0.146, 0.149, 0.194]
    assert all(next(iter(s["host_idle_by_activity_s"])) == "input pipeline" for s in its[1:])
    (f, *rest) = timeline_findings(a.timeline, a.steps)
    assert f["rule"] == "timeline-idle-host" and f["severity"] == "high"
    assert "(input pipeline): enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ in the main process; " \
           "median 26 % of a step's wall time (5 steps)" in f["title"]
    assert "num_workers > 0" in f["recommendation"] and f["est_saving_s"] == 0.216886
    # the warm-up's CUDA runtime calls keep their seconds but not the headline: 81 % of iteration 1, a median 2 %
    (rt,) = [g for g in rest if "(CUDA runtime)" in g["title"]]
    assert (rt["severity"], rt["est_saving_s"]) == ("low", 3.664485)
    assert any(x.startswith("CUDA runtime per step (share of each step's wall time): 81 %, 2 %") for x in rt["evidence"])


def test_graph_replay_gaps_are_not_blamed_on_the_host(tmp_path: Path) -> None:
    """One cudaGraphLaunch replays 10 kernels of 10 µs 40 µs apart (idle 78 %): those gaps are not host
    or launch time, so the limiter is unknown and no idle finding is made (TraceLens#728, HTA#290)."""
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 5, "tid": 1, "ts": 0, "dur": 5,
           "args": {"correlation": 7}}]
    ev += [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": 10 + 50 * i, "dur": 10,
            "args": {"device": 0, "stream": 7, "correlation": 7}} for i in range(10)]
    p = tmp_path / "graph.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    a = analyze_timelines([parse_path(p)])
    (e,) = a.timeline
    assert (e["label"], e["limiter"], e["graph_replay_share"]) == ("overhead-bound", "unknown", 1.0)
    assert "CUDA-graph launches" in e["evidence"][0]
    assert timeline_findings(a.timeline, a.steps) == []


def test_gaps_between_graph_launches_are_classified(tmp_path: Path) -> None:
    """Two cudaGraphLaunch calls, each replaying 3 kernels of 10 µs 2 µs apart; the second call holds the
    host for 100 µs, during which the GPU idles: that gap is host time (was: every gap of a replayed
    device left unclassified, no finding at 80 % idle); the 4 gaps inside the replays are 'graph'."""
    ev = [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 5, "tid": 1, "ts": t, "dur": d,
           "args": {"correlation": c}} for t, d, c in ((0, 5, 7), (40, 100, 8))]
    ev += [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": t0 + 12 * i, "dur": 10,
            "args": {"device": 0, "stream": 7, "correlation": c}} for t0, c in ((6, 7), (141, 8)) for i in range(3)]
    p = tmp_path / "graphs.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    a = analyze_timelines([parse_path(p)])
    (e,) = a.timeline
    assert e["idle_by_cause_s"]["graph"] == pytest.approx(4 * 2e-6)
    assert e["idle_by_cause_s"]["host"] == pytest.approx((141 - 40) * 1e-6)  # 40 = end of the first replay
    assert (e["label"], e["limiter"]) == ("overhead-bound", "host")
    (f,) = [f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-idle-host"]
    assert "cudaGraphLaunch" in f["title"] and "more work in each graph" in f["recommendation"]


@pytest.mark.corpus
def test_corpus_vllm_graph_execution_replay_share() -> None:
    (e,) = _corpus("AMD-AGI__TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz").timeline
    assert e["graph_replay_share"] == 0.969282052 and e["label"] == "kernel-bound"


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "call", "advice"), [
    (ALEXNET, "cudaFree", "allocation calls"),
    ("GindaChen__nsys-ai__tests__fixtures__mock.sqlite", "cudaLaunchKernel", "load modules"),
])
def test_runtime_advice_follows_the_longest_call(name: str, call: str, advice: str) -> None:
    a = _corpus(name)
    f = next(f for f in timeline_findings(a.timeline, a.steps) if f["rule"] == "timeline-idle-host")
    assert f"(CUDA runtime): {call}" in f["title"] and advice in f["recommendation"]


def _graph_step(tmp_path: Path, eager_us: int) -> Any:
    """A ProfilerStep with two cudaGraphLaunch calls (3 kernels of 10 µs each, the second call holding the
    host 100 µs while the GPU idles) and one eager kernel of ``eager_us`` launched by cudaLaunchKernel."""
    ev: list[dict[str, Any]] = [{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 5, "tid": 1,
                                 "ts": 0, "dur": 400 + eager_us}]
    ev += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaGraphLaunch", "pid": 5, "tid": 1, "ts": t, "dur": d,
            "args": {"correlation": c}} for t, d, c in ((1, 5, 7), (40, 100, 8))]
    ev += [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": t0 + 12 * i, "dur": 10,
            "args": {"device": 0, "stream": 7, "correlation": c}} for t0, c in ((6, 7), (141, 8)) for i in range(3)]
    ev += [{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 5, "tid": 1, "ts": 200, "dur": 5,
            "args": {"correlation": 9}},
           {"ph": "X", "cat": "kernel", "name": "eager", "pid": 0, "tid": 7, "ts": 210, "dur": eager_us,
            "args": {"device": 0, "stream": 7, "correlation": 9}}]
    p = tmp_path / f"graph_step_{eager_us}.json"
    p.write_text(json.dumps({"traceEvents": ev}))
    return analyze_timelines([parse_path(p)])


def test_step_causes_unknown_under_low_graph_coverage(tmp_path: Path) -> None:
    """60 of the step's 70 µs of GPU time replayed (coverage 14 % < 50 %): the step keeps its label and idle
    total, but its causes are one `unknown` entry and its limiter `unknown` (was: host) with what would
    decide it (docs/formulas.md#timelines, steps under CUDA graphs)."""
    a = _graph_step(tmp_path, 10)
    (s,) = a.steps
    assert s["kind"] == "profiler-step" and s["label"] == "overhead-bound" and s["limiter"] == "unknown"
    assert set(s["idle_by_cause_s"]) == {"unknown"}
    assert s["idle_by_cause_s"]["unknown"] == pytest.approx(s["idle_s"], abs=1e-9)
    assert "host_idle_by_activity_s" not in s
    assert s["evidence"][0].startswith("kernel attribution coverage 14.3 % (< 50 %)")
    assert "--cuda-graph-trace=node" in s["evidence"][0]
    assert not any(e.startswith("idle by cause") for e in s["evidence"])


def test_step_causes_kept_under_high_graph_coverage(tmp_path: Path) -> None:
    """An eager kernel of 100 µs next to 60 µs replayed (coverage 62 %): the step's causes are decided."""
    a = _graph_step(tmp_path, 100)
    (s,) = a.steps
    assert "unknown" not in s["idle_by_cause_s"] and s["idle_by_cause_s"]["host"] > 0
    assert not s["evidence"][0].startswith("kernel attribution coverage")
    # the 4 gaps of 2 µs inside the two replays are the graph's own, as on the device: not launch time
    assert s["idle_by_cause_s"]["graph"] == pytest.approx(4 * 2e-6)
    assert s["idle_by_cause_s"]["launch"] == pytest.approx(6e-6)  # only the step's first 6 µs, before any kernel


@pytest.mark.corpus
def test_corpus_vllm_graph_step_causes_unknown() -> None:
    """Corpus vLLM decode under CUDA graphs: its step (96.9 % replayed) read launch 14.6 % / host 85.4 %
    of its idle time; the causes are now unknown, the measured totals unchanged."""
    a = _corpus("AMD-AGI__TraceLens__tests__traces__inference__vllm_decode_full__graph_execution.json.gz")
    (s,) = a.steps
    assert (s["label"], s["limiter"]) == ("kernel-bound", "unknown")
    assert s["idle_by_cause_s"] == {"unknown": s["idle_s"]} and s["idle_s"] == 2.5473e-05
    assert s["evidence"][0].startswith("kernel attribution coverage 3.1 % (< 50 %): 96.9 %")


def test_the_summary_top_line_is_the_device_s_highest_severity_finding() -> None:
    """Ranked by seconds, a low finding (a warm-up's 3 s) can lead a trace's list; the per-device `top:` line
    names the first finding of the highest severity (docs/formulas.md#timeline-findings)."""
    from rooftop.reports.terminal import _timeline_lines

    e = {"input": "t.json", "device": "0", "label": "overhead-bound", "limiter": "host", "idle_fraction": 0.8}
    mk = [{"group": "t.json GPU 0", "severity": sev, "title": f"t.json GPU 0: {t}"}
          for sev, t in (("low", "warm-up 3 s"), ("medium", "optimizer 50 ms"), ("high", "loader 200 ms"),
                         ("high", "ops 100 ms"))]
    lines = _timeline_lines({"timeline": [e], "findings": mk})
    assert lines[1] == "    top: loader 200 ms"
    assert _timeline_lines({"timeline": [e], "findings": mk[:2]})[1] == "    top: optimizer 50 ms"


@pytest.mark.corpus
def test_corpus_resnet50_summary_headlines_the_dataloader_not_the_warm_up() -> None:
    p = CORPUS_TRACE / RESNET
    if not p.is_file():
        pytest.skip("trace corpus absent")
    import rooftop
    from rooftop.reports.terminal import summary_text

    doc = rooftop.analyze(p)
    first = doc["findings"][0]  # severity first: the typical step's DataLoader wait, not the warm-up's seconds
    assert "(input pipeline)" in first["title"] and first["severity"] == "high"
    (warm,) = [f for f in doc["findings"] if "(CUDA runtime)" in f["title"]]
    assert warm["severity"] == "low" and warm["est_saving_s"] > first["est_saving_s"] and warm["rank"] > first["rank"]
    (top,) = [ln for ln in summary_text(doc).splitlines() if ln.startswith("    top: ")]
    assert "(input pipeline): enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__ in the main" in top


def test_unsplit_host_time_is_one_finding_with_the_advice_to_record_host_events() -> None:
    """A device entry without host_idle_by_activity_s (no host events read): its whole host-cause idle is one
    finding, the advice to record the host (docs/formulas.md#timeline-findings)."""
    e = {"input": "t", "device": "0", "span_s": 1.0, "idle_s": 0.5, "idle_fraction": 0.5, "label": "idle",
         "idle_by_cause_s": {"host": 0.4, "sync": 0.0, "launch": 0.0}, "evidence": []}
    (f,) = timeline_findings([e], [])
    assert (f["rule"], f["est_saving_s"], f["severity"]) == ("timeline-idle-host", 0.4, "high")
    assert "waiting on the host" in f["title"] and "No host event covers these gaps" in f["recommendation"]


def test_copy_call_advice_is_to_pin() -> None:
    """Host gaps spent in a copy call that is not a host wait (a pageable host-to-device copy: staged, then
    returned) get the pinning advice (docs/formulas.md#timeline-findings)."""
    from rooftop.analyzer.timeline.findings import _host_advice

    assert "pin the host buffers" in _host_advice("CUDA runtime", [{"name": "cudaMemcpyAsync"}])
    assert "pin the host buffers" not in _host_advice("CUDA runtime", [{"name": "cudaLaunchKernel"}])
