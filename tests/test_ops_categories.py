"""GPU time by op category and the top ops per ProfilerStep (analyzer/ops/categories.py,
docs/formulas.md#op-categories): a hand-built trace with hand-computed sums, the corpus CUDA-graph and eager
traces, and the reports (HTML, Markdown, terminal at 80 columns)."""

from __future__ import annotations

import math
from functools import cache
from pathlib import Path

import pandas as pd
import pytest

from rooftop.analyzer.ops.analysis import OpsAnalysis, analyze_ops
from rooftop.analyzer.ops.attribution import attribute, coverage_times
from rooftop.analyzer.ops.categories import category_split, step_ops
from rooftop.analyzer.ops.signatures import signatures
from rooftop.analyzer.pipeline import run_analysis
from rooftop.analyzer.schema import Document
from rooftop.parsers import parse_path
from rooftop.parsers.model import EVENT_COLUMNS, OP_COLUMNS
from rooftop.parsers.source import ParseOptions
from rooftop.reports.html import render_html
from rooftop.reports.markdown import render_markdown
from rooftop.reports.terminal import _split_line, summary_text
from tests.conftest import corpus_dir

CAPTURE = Path(__file__).resolve().parents[1] / "fixtures" / "capture" / "h100" / "kineto_train.json.gz"


def _events(rows: list[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows).reindex(columns=list(EVENT_COLUMNS)).astype(dict(EVENT_COLUMNS.items()))


def _ops(rows: list[dict[str, object]]) -> pd.DataFrame:
    return pd.DataFrame(rows).reindex(columns=list(OP_COLUMNS)).astype(dict(OP_COLUMNS.items()))


def _rt(name: str, start: int, corr: int) -> dict[str, object]:
    return {"input": "t", "kind": "runtime", "name": name, "start_ns": start, "end_ns": start + 5, "pid": 9,
            "tid": 1, "correlation": corr}


def _k(start: int, dur: int, corr: int) -> dict[str, object]:
    return {"input": "t", "device": "0", "kind": "kernel", "name": f"k{corr}", "start_ns": start,
            "end_ns": start + dur, "stream": 7, "correlation": corr}


def _step(n: int, start: int, end: int) -> dict[str, object]:
    return {"input": "t", "kind": "range", "name": f"ProfilerStep#{n}", "start_ns": start, "end_ns": end, "pid": 9,
            "tid": 1}


def _op(name: str, start: int, end: int) -> dict[str, object]:
    return {"input": "t", "name": name, "start_ns": start, "end_ns": end, "pid": 9, "tid": 1}


# step 1 [0, 1000): mm 300 ns + 100 ns (two calls), add 50; step 2 [1000, 2000): mm 200, softmax 120,
# copy_ 30; one graph replay kernel of 200 ns and one warm-up kernel of 100 ns nobody launched in the trace
OPS = [_op("aten::mm", 10, 100), _op("aten::mm", 110, 200), _op("aten::add", 300, 400),
       _op("aten::mm", 1010, 1100), _op("aten::_softmax", 1200, 1300), _op("aten::copy_", 1400, 1500)]
EVENTS = [_step(1, 0, 1000), _step(2, 1000, 2000),
          _rt("cudaLaunchKernel", 20, 1), _k(5000, 300, 1), _rt("cudaLaunchKernel", 120, 2), _k(5400, 100, 2),
          _rt("cudaLaunchKernel", 310, 3), _k(5600, 50, 3), _rt("cudaLaunchKernel", 1020, 4), _k(6000, 200, 4),
          _rt("cudaLaunchKernel", 1210, 5), _k(6300, 120, 5), _rt("cudaLaunchKernel", 1410, 6), _k(6500, 30, 6),
          _rt("cudaGraphLaunch", 1600, 7), _k(7000, 200, 7), _k(4000, 100, 8)]


def test_category_sums_and_the_unattributed_rest_are_the_hand_computed_ones() -> None:
    att = attribute(_events(EVENTS), _ops(OPS))
    sigs = signatures(att)
    t = coverage_times(att)["0"]
    assert (t["gpu_ns"], t["attributed_ns"]) == (1100, 800)
    split = category_split(sigs, "0", t["gpu_ns"], t["attributed_ns"])
    got = {r["category"]: (r["time_s"], r["share"]) for r in split["categories"]}
    assert got == {"gemm": (600e-9, round(600 / 1100, 6)), "unattributed": (300e-9, round(300 / 1100, 6)),
                   "softmax": (120e-9, round(120 / 1100, 6)), "elementwise": (50e-9, round(50 / 1100, 6)),
                   "copy": (30e-9, round(30 / 1100, 6))}
    assert [r["category"] for r in split["categories"]] == ["gemm", "softmax", "elementwise", "copy", "unattributed"]
    assert split["categories_status"] == "unknown"  # 800 of 1100 ns attributed: 72.7 % < 95 %
    # every kernel attributed: known
    full = category_split(sigs, "0", 800, 800)
    assert full["categories_status"] == "known" and full["categories"][-1]["category"] == "copy"


def test_each_profiler_step_lists_its_largest_ops() -> None:
    att = attribute(_events(EVENTS), _ops(OPS))
    got = step_ops(att, signatures(att), _events(EVENTS))
    one, two = got[("ProfilerStep#1", "0")], got[("ProfilerStep#2", "0")]
    assert one["attributed_s"] == 450e-9 and two["attributed_s"] == 350e-9  # the graph replay is in no op
    assert [(o["name"], o["category"], o["calls"], o["kernel_time_s"]) for o in one["top_ops"]] == [
        ("aten::mm", "gemm", 2, 400e-9), ("aten::add", "elementwise", 1, 50e-9)]
    assert [o["name"] for o in two["top_ops"]] == ["aten::mm", "aten::_softmax", "aten::copy_"]


@cache
def _corpus(stem: str) -> OpsAnalysis:
    path = next(corpus_dir("trace").glob(f"*{stem}*.json.gz"))
    return analyze_ops([parse_path(str(path), ParseOptions())])


def test_a_cuda_graph_trace_says_how_little_was_attributed_and_leaves_the_split_unknown() -> None:
    (cov,) = _corpus("vllm_decode_full__graph_execution").coverage
    assert cov["categories_status"] == "unknown"
    assert round(cov["attributed_of_all"], 3) == 0.031
    rest = cov["categories"][-1]
    assert rest["category"] == "unattributed" and round(rest["share"], 3) == 0.969
    assert math.isclose(sum(r["time_s"] for r in cov["categories"]), cov["gpu_time_s"], abs_tol=1e-8)


def test_the_eager_b200_trace_has_a_known_split_summing_to_its_gpu_time() -> None:
    (cov,) = _corpus("b200__eager_trace").coverage
    assert cov["categories_status"] == "known"
    assert "unattributed" not in {r["category"] for r in cov["categories"]}
    assert math.isclose(sum(r["time_s"] for r in cov["categories"]), cov["gpu_time_s"], abs_tol=1e-8)
    ops = _corpus("b200__eager_trace").ops
    for r in cov["categories"]:  # each category's time is its ops' time
        assert math.isclose(sum(o["kernel_time_s"] for o in ops if o["category"] == r["category"]), r["time_s"],
                            abs_tol=1e-8)


def test_hta_rank0_steps_carry_their_top_ops() -> None:
    oa = _corpus("negative_queue_length_values_check__rank0")
    steps = {k[1]: v for k, v in oa.steps.items()}
    assert {"ProfilerStep#550", "ProfilerStep#554"} <= set(steps)
    for v in steps.values():
        times = [o["kernel_time_s"] for o in v["top_ops"]]
        assert times == sorted(times, reverse=True) and sum(times) <= v["attributed_s"] + 1e-9


@pytest.fixture(scope="module")
def train() -> Document:
    d: Document = run_analysis([str(CAPTURE)])  # type: ignore[assignment]
    return d


def test_the_reports_draw_the_split_and_the_steps_top_ops(train: Document) -> None:
    steps = [s for s in train["steps"] if s["kind"] == "profiler-step"]
    assert steps and all(s["top_ops"] and s["top_ops"][0]["name"] == "aten::copy_" for s in steps)
    page = render_html(train)
    assert 'id="op-categories"' in page and "GPU time by op category" in page and "top ops (GPU time)" in page
    md = render_markdown(train)
    assert "## GPU time by op category" in md and "elementwise 24.9%" in md
    text = summary_text(train, width=80)
    line = next(x for x in text.splitlines() if "by category:" in x)
    assert line.startswith("    by category: elementwise 25% · copy 21% · gemm 19%") and len(line) <= 80


def test_an_unknown_split_says_why_within_80_columns() -> None:
    # the corpus Qwen trace: 69.9 % of all GPU time attributed, the rest launched before the capture
    cov = {"categories_status": "unknown", "attributed_of_all": 0.699,
           "unattributed": [{"reason": "launch not in trace", "time_s": 0.0137}], "categories": []}
    assert _split_line(cov) == "    by category: unknown, 69.9% attributed (rest: launch not in trace)"
    cov["unattributed"] = [{"reason": "graph replay", "time_s": 0.0104}, {"reason": "no enclosing op", "time_s": 1e-6},
                           {"reason": "launch not in trace", "time_s": 1e-6}]
    line = _split_line(cov, width=60)
    assert line == "    by category: unknown, 69.9% attributed (rest: graph replay)" or len(line) <= 60
    assert len(_split_line(cov)) <= 80
