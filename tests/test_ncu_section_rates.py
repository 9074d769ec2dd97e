"""ncu section CSVs without a duration: the roofline from ncu's own rates (issue 14 item 8).

Rule: docs/formulas.md#work-bytes (rates only). Hand-computed from the file's printed values.
"""

from __future__ import annotations

import pandas as pd
import pytest

from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.pipeline import analyze_inputs
from tests.conftest import corpus_dir


def test_rates_only_hand_case() -> None:
    """FFMA 100/cycle (x2), FADD 10/cycle at 2 GHz = 420 GFLOP/s; DRAM 210 GB/s -> AI 2 FLOP/B."""
    row = {"input": "s.csv", "index": 0, "name": "k",
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed": 100.0,
           "smsp__sass_thread_inst_executed_op_fadd_pred_on.sum.per_cycle_elapsed": 10.0,
           "sm__cycles_elapsed.avg.per_second": 2e9, "dram__bytes.sum.per_second": 210e9,
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 1000.0,
           "dram__bytes.sum.peak_sustained": 64.0, "dram__cycles_elapsed.avg.per_second": 7e9}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame())
    r = ka.results.iloc[0]
    assert r["achieved_flops_s"] == pytest.approx(420e9)
    assert r["intensity_dram"] == pytest.approx(2.0)
    assert pd.isna(r["flops"]) and pd.isna(r["bytes_dram"])  # totals unknown without a duration
    assert r["bw_util_dram"] == pytest.approx(210e9 / (64 * 7e9))
    assert [i["code"] for i in ka.lint].count("rates-only") == 1


def test_absolute_counts_are_not_taken_for_rates() -> None:
    row = {"input": "s.csv", "index": 0, "name": "k", "dram__bytes.sum": 1e9,
           "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9}
    r = analyze_kernels(pd.DataFrame([row]), pd.DataFrame()).results.iloc[0]
    assert pd.isna(r["achieved_flops_s"])  # counts over an unknown time are no rate
    assert r["intensity_dram"] == pytest.approx(2.0) and r["flops"] == pytest.approx(2e9)  # but AI needs no time


@pytest.mark.corpus
def test_codegandee_roofline_section_csv() -> None:
    """(158.12 FFMA ops + 1.97 FADD + 0 FMUL per cycle) x 2.15 GHz = 344.19 GFLOP/s; / 345.14 GB/s = 0.997 FLOP/B;
    roofs: 21,760 FFMA/cycle x 2 x 2.15 GHz = 93.57 TFLOP/s, 128 B/cycle x 13.72 GHz = 1.756 TB/s."""
    [p] = [p for p in corpus_dir("ncu").iterdir() if p.name.endswith("section_SpeedOfLight_RooflineChart.csv")]
    ai = analyze_inputs([str(p)])
    r = ai.results.iloc[0]
    assert r["achieved_flops_s"] == pytest.approx(344.19e9, rel=1e-3)
    assert r["intensity_dram"] == pytest.approx(344.19 / 345.14, rel=1e-3)
    [exp] = [d for d in ai.devices if d["source"] == "export"]
    assert exp["ceilings"]["fp32"] == pytest.approx(93.568e12)
    assert exp["ceilings"]["dram"] == pytest.approx(1.75616e12)
    text = " ".join(r["evidence"])
    # DRAM 19.7 %, FP32 0.4 %, no SOL %, no L1/L2: no side reaches 60 % and L1/L2 could bind, so the
    # bound is unknown (docs/formulas.md#kernel-labels, issue 14 item 1); the point is placed all the same
    assert r["label"] == "unknown" and "no side reaches 60 %" in text
    assert "No duration in the export" in text and "achieved 344 GFLOP/s" in text and "AI 0.997 FLOP/B" in text
    assert "rates-only" in {i["code"] for i in ai.lint}
