"""The op model against ncu (analyzer/ops/ncu_join.py, docs/formulas.md#op-ncu) on the generated matched pair
fixtures/trace/ops_pair.json + fixtures/ncu/demo.raw.csv (fixtures/make_trace.py ops_pair_doc)."""

from __future__ import annotations

import pytest

from rooftop.analyzer.pipeline import run_analysis
from rooftop.analyzer.schema import validate_document
from tests.conftest import FIXTURES


def test_each_category_of_the_model_is_set_against_the_counters() -> None:
    doc = run_analysis([str(FIXTURES / "trace" / "ops_pair.json"), str(FIXTURES / "ncu" / "demo.raw.csv")])
    validate_document(doc)
    (pair,) = doc["ops_ncu"]
    assert (pair["kernels_matched"], pair["kernels_unmatched"], pair["calls_compared"]) == (4, 0, 4)
    cats = {c["category"]: c for c in pair["categories"]}
    n, m = 8192, 16384
    gemm = cats["gemm"]
    assert gemm["calls"] == 2
    assert gemm["model_flops"] == 2 * n**3 + 2 * m * m
    assert gemm["measured_flops"] == 2 * n**3 + 2 * n * n + 2 * m * m  # ncu also counts the epilogue's FP32 ops
    assert gemm["flops_error"] == pytest.approx(-2 * n * n / (2 * n**3 + 2 * n * n + 2 * m * m))
    measured = 2 * (2 * n * n * 2) + n * n * 2 + (m * m * 4 + 2 * m * 4)  # demo: A, B read twice; gemv A once
    assert gemm["measured_dram_bytes"] == measured
    assert gemm["model_bytes_min"] == 3 * n * n * 2 + (m * m + 2 * m) * 4 and gemm["dram_in_interval"] == 1.0
    ew = cats["elementwise"]
    assert ew["flops_error"] == 0.0 and ew["bytes_min_error"] == 0.0
    assert cats["copy"]["measured_dram_bytes"] == cats["copy"]["model_bytes_min"] == 4096 * 4


def test_a_trace_alone_has_no_cross_check() -> None:
    doc = run_analysis([str(FIXTURES / "trace" / "ops_pair.json")])
    assert "ops_ncu" not in doc and doc["ops_coverage"][0]["modelled"] == 1.0
