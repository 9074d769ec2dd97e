"""The optimizer advice follows the implementation the trace shows (docs/formulas.md#timeline-findings):
fused, foreach, or not shown. Hand-made events, the H100 capture and corpus traces."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.timeline import analyze_timelines
from rooftop.analyzer.timeline.findings import _host_advice
from rooftop.parsers import parse_path
from rooftop.parsers.model import EVENT_COLUMNS, InputAccounting, ParseResult
from tests.conftest import CORPUS, FIXTURES


def _impl(*ranges: tuple[str, int, int]) -> Any:
    """A device with two kernels around a host gap and the named host ranges (name, start, end)."""
    base = {c: None for c in EVENT_COLUMNS}
    rows = [{"kind": "kernel", "name": "k", "device": "0", "stream": 7, "start_ns": 0, "end_ns": 1_000},
            {"kind": "kernel", "name": "k", "device": "0", "stream": 7, "start_ns": 900_000, "end_ns": 901_000},
            *({"kind": "range", "name": n, "start_ns": s, "end_ns": e, "pid": 1, "tid": 1} for n, s, e in ranges)]
    full = [{**base, "input": "t", **r} for r in rows]
    ev = pd.DataFrame({c: pd.array([r[c] for r in full], dtype=t) for c, t in EVENT_COLUMNS.items()})
    a = analyze_timelines([ParseResult(InputAccounting("t", "test", records=len(ev)), events=ev,
                                       meta={"timeline": True})])
    return a.timeline[0].get("optimizer_impl")


def test_what_runs_inside_the_optimizer_step_decides() -> None:
    step = ("Optimizer.step#AdamW.step", 10_000, 500_000)
    assert _impl(step, ("aten::_foreach_add_", 20_000, 30_000)) == "foreach"
    assert _impl(step, ("aten::_fused_adamw_", 20_000, 30_000), ("aten::_foreach_add_", 40_000, 50_000)) == "fused"
    assert _impl(("Optimizer.step#FusedAdam.step", 10_000, 500_000)) == "fused"
    # a foreach op outside the step (gradient clipping before it) says nothing about the optimizer
    assert _impl(step, ("aten::_foreach_norm", 600_000, 610_000)) is None
    assert _impl(step, ("aten::add_", 20_000, 30_000)) is None
    assert _impl(("aten::_foreach_add_", 20_000, 30_000)) is None  # no optimizer range at all


def test_the_advice_names_only_what_the_program_does_not_do_yet() -> None:
    plain, foreach, fused = (_host_advice("optimizer", [], i) for i in (None, "foreach", "fused"))
    assert "fused or foreach" in plain
    assert "already runs foreach" in foreach and "fused=True" in foreach
    assert "already runs fused" in fused and "fused=True" not in fused and "foreach" not in fused


def test_captured_sgd_runs_foreach_and_is_told_to_fuse() -> None:
    """kineto_host_loader4: SGD with momentum, PyTorch 2.11's default foreach path (aten::_foreach_add_ and
    _foreach_mul_ in the step): was told to "use a fused or foreach implementation"."""
    from rooftop.analyzer.pipeline import run_analysis

    doc = run_analysis([str(FIXTURES / "capture" / "h100" / "kineto_host_loader4.json.gz")])
    assert doc["timeline"][0]["optimizer_impl"] == "foreach"
    (f,) = [f for f in doc["findings"] if "(optimizer)" in f["title"]]
    assert "already runs foreach" in f["recommendation"] and "fused or foreach" not in f["recommendation"]


@pytest.mark.corpus
@pytest.mark.parametrize(("name", "impl"), [
    ("facebookresearch__HolisticTraceAnalysis__tests__data__negative_queue_length_values_check__rank0.json.gz",
     "fused"),  # Optimizer.step#FusedAdam.step
    ("facebookresearch__HolisticTraceAnalysis__tests__data__nccl_parser_config__nccl_data.json.gz", "foreach"),
    ("pytorch__kineto__tb_plugin__samples__resnet50_autograd_api_num_workers_0__worker0.pt.trace.json.gz", None),
])
def test_corpus_optimizer_implementations(name: str, impl: str | None) -> None:
    p = CORPUS / "trace" / name
    if not p.is_file():
        pytest.skip("trace corpus absent")
    assert {e.get("optimizer_impl") for e in analyze_timelines([parse_path(p)]).timeline} == {impl}
