"""analyzer/view.py: roofline panels with the ceilings used, family rows, why nothing is placeable
(docs/formulas.md#report-view). Hand-computed cases and a real export."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.view import document_view, kernel_view, weighted_median, why_empty
from tests.conftest import corpus_dir


def test_weighted_median_is_the_value_at_half_the_time() -> None:
    # 1 s at 10, 1 s at 20, 3 s at 30: half of 5 s is reached at 30
    assert weighted_median(np.array([10.0, 20.0, 30.0]), np.array([1.0, 1.0, 3.0])) == 30.0
    assert weighted_median(np.array([10.0, 20.0, np.nan]), np.array([3.0, 1.0, 9.0])) == 10.0
    assert weighted_median(np.array([5.0, 7.0]), np.array([0.0, 0.0])) == 5.0  # no time: equal weights
    assert np.isnan(weighted_median(np.array([np.nan]), np.array([1.0])))


def _results() -> tuple[pd.DataFrame, pd.DataFrame]:
    res = pd.DataFrame({
        "index": [0, 1, 2], "input": ["a", "a", "b"], "name": ["k1", "k1", "k2"],
        "family": ["k1 (grid 1, block 1)", "k1 (grid 1, block 1)", "k2 (grid 1, block 1)"],
        "device": ["A100", "A100", "H100"], "duration_s": [1.0, 3.0, 2.0], "flops": [1e9, 3e9, 8e9],
        "bytes_dram": [1e9, 3e9, 1e9], "bytes_l2": [np.nan] * 3, "bytes_l1": [np.nan] * 3,
        "label": ["memory-bound", "memory-bound", "compute-bound"], "limiter": ["dram", "dram", "fp32"],
        "dominant_class": ["fp32", "fp32", "fp32"], "binding_level": ["dram", "dram", None],
    })
    ceil = pd.DataFrame({
        "ceiling_device": ["A100", "A100", "H100"],
        "peak_fp32": [1.9e13, 2.1e13, 6.7e13], "src_peak_fp32": ["export", "export", "builtin"],
        "detail_peak_fp32": ["ffma peak x clock", "ffma peak x clock", "datasheet"],
        "bw_dram": [1.5e12, 1.5e12, np.nan], "src_bw_dram": ["builtin", "builtin", None],
        "detail_bw_dram": ["datasheet", "datasheet", None],
    })
    return res, ceil


def test_one_panel_per_device_with_the_ceilings_its_kernels_used() -> None:
    res, ceil = _results()
    view = kernel_view(res, ceil)
    a100, h100 = view["roofline"]["panels"]  # largest kernel time first: A100 4 s, H100 2 s
    assert (a100["device"], a100["kernels"], h100["device"], h100["kernels"]) == ("A100", 2, "H100", 1)
    fp32 = a100["ceilings"][0]
    # time-weighted median of 1.9e13 (1 s) and 2.1e13 (3 s) = 2.1e13; spread kept
    assert (fp32["key"], fp32["kind"], fp32["value"], fp32["min"], fp32["max"]) == ("fp32", "compute", 2.1e13, 1.9e13, 2.1e13)
    assert (fp32["source"], fp32["entry"], fp32["provenance"], fp32["binding_kernels"]) == (
        "export", "A100|export", "ffma peak x clock", 2)
    dram = a100["ceilings"][1]
    assert (dram["key"], dram["kind"], dram["value"], dram["source"], dram["binding_kernels"]) == (
        "dram", "bandwidth", 1.5e12, "builtin", 2)
    assert [c["key"] for c in h100["ceilings"]] == ["fp32"]  # no DRAM ceiling known for the H100 kernel
    fams = view["families"]
    k1 = fams[a100["families"][0]]
    # Σ FLOP / Σ time = 4e9 / 4 s; Σ FLOP / Σ bytes = 4e9 / 4e9
    assert k1["kernels"] == [0, 1] and k1["achieved_flops_s"] == pytest.approx(1e9)
    assert k1["intensity_dram"] == pytest.approx(1.0) and k1["time_share"] == pytest.approx(4 / 6)
    assert a100["placed"] == a100["labelled"] == a100["families"] and view["roofline"]["why_empty"] is None


def test_nothing_placeable_says_what_to_collect() -> None:
    res, ceil = _results()
    res["flops"] = np.nan
    view = kernel_view(res, ceil)
    assert all(not p["placed"] for p in view["roofline"]["panels"])
    text = view["roofline"]["why_empty"]
    assert "no launch has FLOP counts" in text and "ncu --set full" in text and "bytes" not in text.split(";")[0][-30:]
    assert why_empty(res.iloc[:0]).startswith("No roofline")


def test_document_view_reads_the_ceiling_references_back() -> None:
    doc = {"devices": [{"name": "T4", "source": "export", "ceilings": {"fp32": 2.77e12, "dram": 2.97e11},
                        "sources": {"fp32": "ffma"}},
                       {"name": "T4", "source": "builtin", "ceilings": {"fp16": 1.62e13}, "sources": {}}],
           "kernels": [{"index": 0, "name": "k", "family": "k (grid 1, block 1)", "duration_s": 1.0, "flops": 1e9,
                        "achieved_flops_s": 1e9, "bytes": {"dram": 1e9}, "label": "memory-bound", "limiter": "dram",
                        "extra": {"ceilings": "T4|export; fp16=T4|builtin; l1,l2=none", "peak_fp16": 5.5e12}}]}
    panel = document_view(doc)["roofline"]["panels"][0]
    got = {c["key"]: (c["value"], c["source"]) for c in panel["ceilings"]}
    assert got == {"fp32": (2.77e12, "export"), "fp16": (5.5e12, "builtin"), "dram": (2.97e11, "export")}


def test_real_export_draws_the_export_ceilings_not_the_datasheet() -> None:
    """Issue 15: a Tesla T4 .ncu-rep is classified against the export's FP32 2.77 TFLOP/s and DRAM
    297 GB/s; the view hands exactly those to the chart (the datasheet says 8.1 T and 320 G)."""
    path = corpus_dir("ncu") / "armleth__cuda-mlp-inference__report.ncu-rep"
    if not path.exists():
        pytest.skip(f"{path} not in the corpus")
    pytest.importorskip("ncu_report", reason="the .ncu-rep reader is not installed")
    import rooftop

    doc = rooftop.analyze([str(path)])
    (panel,) = doc["roofline"]["panels"]
    got = {c["key"]: (c["value"], c["source"]) for c in panel["ceilings"]}
    assert got["fp32"][0] == pytest.approx(2.7676e12, rel=1e-3) and got["fp32"][1] == "export"
    assert got["dram"][0] == pytest.approx(2.9698e11, rel=1e-3) and got["dram"][1] == "export"
    assert panel["placed"] and doc["families"][panel["placed"][0]]["label"] == "memory-bound"


def test_levels_with_points_but_no_bandwidth_ceiling_are_named() -> None:
    res, ceil = _results()
    a100, h100 = kernel_view(res, ceil)["roofline"]["panels"]
    # k2 moves 1e9 DRAM bytes on the H100 but no DRAM ceiling is known there: its point has no roof
    assert a100["no_roof"] == [] and h100["no_roof"] == ["dram"]


def test_the_naive_gemm_export_has_l1_points_and_an_l1_roof_from_its_own_percent() -> None:
    rep = corpus_dir("ncu") / "LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep"
    if not rep.exists():
        pytest.skip(f"{rep} not in the corpus")
    pytest.importorskip("ncu_report", reason="the .ncu-rep reader is not installed")
    from rooftop import analyze
    from rooftop.reports.svg_roofline import roofline_svg

    doc = analyze([str(rep)])
    (panel,) = doc["roofline"]["panels"]
    # the GTX 1660 SUPER export gives FP32/FP64 and DRAM peaks and no L1 .peak_sustained; the L1 roof comes
    # from the L1 counter's own % of peak (docs/formulas.md#ceilings), so the L1 points have a roof
    assert panel["no_roof"] == [] and "l1" in {c["level"] for c in panel["ceilings"]}
    assert "no L1 roof" not in roofline_svg(panel, doc["families"])
