"""Findings on kernels whose bound is unknown: no roofline-gap saving, what would decide it.

Rule: docs/formulas.md#findings.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from rooftop.analyzer.findings import rank_findings
from rooftop.analyzer.pipeline import run_analysis
from tests.conftest import corpus_dir
from tests.test_findings import frame

NO_WINDOWS = SimpleNamespace(findings=[])
MISSING = "Not in the export, so not evaluated: L1 bytes, L2 bytes, SpeedOfLight %"


def test_unknown_label_claims_no_roofline_gap_saving() -> None:
    # 10 ms at 1 % of the DRAM/compute roof: the gap (9.9 ms) would be 99 % of the time, but L1/L2 are unknown
    df = frame([{"family": "A", "duration_s": 10e-3, "achieved_flops_s": 1e10, "attainable_flops_s": 1e12,
                 "evidence": ["bound unknown", MISSING]},
                {"family": "B", "label": "memory-bound", "limiter": "dram", "duration_s": 1e-3,
                 "achieved_flops_s": 5e11, "attainable_flops_s": 1e12}])
    out = rank_findings(df, NO_WINDOWS, top=10)
    a = next(f for f in out if f["family"] == "A")
    assert a["est_saving_s"] is None
    assert a["severity"] == "medium"  # share 10/11 >= 10 %, but no estimate -> at most medium
    assert a["title"].startswith("A: unknown (L1 bytes, L2 bytes, SpeedOfLight % not in the export)")
    assert "unclassified" not in a["title"]
    ev = " | ".join(a["evidence"])
    assert "no saving claimed" in ev and "9.9 ms" in ev
    assert "what would decide it: collect the L1 bytes (--section SpeedOfLight_HierarchicalSingleRooflineChart" in ev and "--section SpeedOfLight " in ev
    assert a["recommendation"].startswith("Bound unknown: collect the L1 bytes")
    assert "ncu --set full" not in a["recommendation"]  # the named metrics, not the generic advice too
    # the measured family keeps its roofline-gap estimate
    b = next(f for f in out if f["family"] == "B")
    assert b["est_saving_s"] == pytest.approx(0.5e-3)


def test_unknown_label_uses_nvidia_global_estimate_only() -> None:
    rules = [{"rule": "Occ", "title": "Achieved Occupancy", "speedup_pct": 30.0, "speedup_type": "global"},
             {"rule": "Pipe", "title": "Low Utilization", "speedup_pct": 90.0, "speedup_type": "local"}]
    df = frame([{"family": "A", "duration_s": 10e-3, "achieved_flops_s": 1e10, "attainable_flops_s": 1e12,
                 "ncu_rules": rules, "evidence": [MISSING]}])
    [f] = rank_findings(df, NO_WINDOWS, top=10)
    assert f["est_saving_s"] == pytest.approx(3e-3)  # 30 % x 10 ms, NVIDIA's global estimate
    assert f["severity"] == "medium"  # unknown label: capped
    assert "whole-kernel" in f["evidence"][1] or "whole-kernel" in " ".join(f["evidence"])
    # only a local estimate: nothing claimed
    df.at[0, "ncu_rules"] = rules[1:]
    [f] = rank_findings(df, NO_WINDOWS, top=10)
    assert f["est_saving_s"] is None


@pytest.mark.corpus
def test_avery_unknown_kernels_claim_no_saving() -> None:
    path = corpus_dir("ncu") / "AveryClapp__ESMM-Research__metrics.csv"
    doc = run_analysis([str(path)], device="NVIDIA A10G")
    unknown = [f for f in doc["findings"] if f.get("label") == "unknown"]
    assert unknown
    for f in unknown:
        assert f["est_saving_s"] is None
        assert f["severity"] in ("medium", "low")
        assert "unknown (L1 bytes, L2 bytes, SpeedOfLight % not in the export)" in f["title"]
        assert any(e.startswith("what would decide it: collect") for e in f["evidence"])


def test_ncu_sol_at_80_pct_of_the_labelled_side_caps_severity() -> None:
    # NVIDIA estimates 40 % of 10 ms for warp stalls, rooftop's roofline says 10 % of roof, but NCU's SOL
    # puts the memory side the label names at 83 %: NCU's "High Throughput" -> medium; and a stall fix
    # keeps the work, so it saves at most 10 ms × (1 − 0.83) = 1.7 ms (docs/formulas.md#findings)
    rules = [{"rule": "Lg", "title": "Lg Throttle Stalls", "speedup_pct": 40.0, "speedup_type": "global"}]
    df = frame([{"family": "A", "label": "memory-bound", "limiter": "l1", "duration_s": 10e-3,
                 "achieved_flops_s": 1e11, "attainable_flops_s": 1e12, "pct_of_roof": 10.0,
                 "sol_memory_pct": 83.0, "sol_compute_pct": 83.0, "ncu_rules": rules}])
    [f] = rank_findings(df, NO_WINDOWS, top=10)
    assert f["est_saving_s"] == pytest.approx(1.7e-3) and f["severity"] == "medium"
    assert any("already at 83 % of its roof" in e for e in f["evidence"])
    # the side the label does not name does not cap: compute-bound with memory at 83 %, compute at 30 %
    df.loc[0, ["label", "limiter", "sol_compute_pct"]] = ["compute-bound", "fp32", 30.0]
    assert rank_findings(df, NO_WINDOWS, top=10)[0]["severity"] == "high"


@pytest.mark.corpus
def test_lakshya_naive_gemm_at_ncu_high_throughput_is_not_high() -> None:
    path = corpus_dir("ncu") / "LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep"
    doc = run_analysis([str(path)])
    [f] = [f for f in doc["findings"] if f["family"].startswith("naive_gemm")]
    assert f["severity"] == "medium" and f["est_saving_s"] is not None


def test_roofline_gap_saving_capped_by_ncu_sol() -> None:
    # 10 ms at 20 % of the roofline (gap 8 ms) but NCU's busier unit at 65 %: at most 3.5 ms with the same work
    df = frame([{"family": "A", "label": "memory-bound", "limiter": "l1", "duration_s": 10e-3,
                 "achieved_flops_s": 2e11, "attainable_flops_s": 1e12, "pct_of_roof": 20.0,
                 "sol_memory_pct": 65.0, "sol_compute_pct": 40.0}])
    [f] = rank_findings(df, NO_WINDOWS, top=10)
    assert f["est_saving_s"] == pytest.approx(3.5e-3)
    assert any("busiest unit cannot run above its peak" in e for e in f["evidence"])
    # NVIDIA's estimate for a fix that removes memory work (uncoalesced accesses, 40 % of the sectors
    # excessive) is not held to the same-work bound: the remaining memory work needs 65 % × 0.6 = 39 %, the
    # compute side 40 %, so up to 10 ms × (1 − 0.40) = 6 ms; NVIDIA's 60 % = 6 ms is within it
    df.at[0, "ncu_rules"] = [{"rule": "UncoalescedGlobalAccess", "title": "Uncoalesced Global Accesses",
                              "speedup_pct": 60.0, "speedup_type": "global",
                              "message": "This kernel has uncoalesced global accesses resulting in a total of 400 "
                                         "excessive sectors (40% of the total 1000 sectors)."}]
    [f] = rank_findings(df, NO_WINDOWS, top=10)
    assert f["est_saving_s"] == pytest.approx(6e-3)
    assert f["saving_basis"] == "nvidia-removing" and f["saving_bound_s"] == pytest.approx(6e-3)
