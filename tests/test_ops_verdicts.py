"""Op verdicts (analyzer/ops/verdicts.py, docs/formulas.md#op-verdicts) on hand-built signatures against the
H100 SXM5 table entry (989.4 TFLOP/s BF16, 67 TFLOP/s FP32, 3.35 TB/s DRAM, 10.1 TB/s L2, 50 MiB L2)."""

from __future__ import annotations

from collections import Counter

import pytest

from rooftop.analyzer.ceilings.devices import lookup
from rooftop.analyzer.ops.findings import op_findings
from rooftop.analyzer.ops.model import Modelled
from rooftop.analyzer.ops.signatures import Signature
from rooftop.analyzer.ops.verdicts import verdict
from rooftop.analyzer.ops.work import Work

H100 = lookup("NVIDIA H100 80GB HBM3")
MB = 2**20


def sig(flops: float, lo: float, hi: float, compute: str = "bf16", time_s: float = 1e-3, calls: int = 1,
        activities: int = 1, blocks: int | None = 1000, category: str = "gemm", kernel: str = "k") -> Signature:
    s = Signature("0", "aten::x", "[]", "[]", "[]", Modelled(category, Work(flops, lo, hi, compute)), calls=calls,
                  activities=activities, kernels=activities, time_ns=int(time_s * 1e9),
                  kernel_names=Counter({kernel: int(time_s * 1e9)}))
    s.max_blocks = blocks
    return s


def test_a_gemv_too_big_for_l2_is_memory_bound_on_dram() -> None:
    # aten::mm 1x25136x2880 bf16: 144.8 MFLOP, 144.8 MB compulsory (> 50 MiB L2), 1 FLOP/B << 295
    f, lo = 2 * 25136 * 2880, (2880 + 2880 * 25136 + 25136) * 2
    v = verdict(sig(f, lo, f * 2 + 25136 * 2, time_s=60e-6), H100)  # 72 % of DRAM
    assert (v.label, v.limiter) == ("memory-bound", "dram")
    assert v.pct_of_roof == pytest.approx(lo / 60e-6 / 3.35e12)
    assert v.min_time_s == pytest.approx(lo / 3.35e12)


def test_a_working_set_that_fits_in_l2_is_never_called_hbm_bound() -> None:
    v = verdict(sig(1e6, 10 * MB, 20 * MB, compute="fp32", category="elementwise", time_s=1.5e-6), H100)  # 69 % of L2
    assert (v.label, v.limiter) == ("memory-bound", "l2") and v.roof["bandwidth"] == 10.1e12


def test_an_interval_on_the_compute_side_is_compute_bound() -> None:
    v = verdict(sig(1e12, 1e9, 2e9, time_s=1.6e-3), H100)  # 500-1000 FLOP/B > 295
    assert (v.label, v.limiter) == ("compute-bound", "tensor")
    assert v.pct_of_roof == pytest.approx(1e12 / 1.6e-3 / 989.4e12)


def test_an_interval_that_straddles_the_ridge_is_unknown_and_says_what_decides() -> None:
    v = verdict(sig(1e12, 1e9, 1e12, time_s=1.6e-3), H100)
    assert (v.label, v.limiter) == ("unknown", "unknown") and v.pct_of_roof is None
    assert any("dram__bytes" in e for e in v.evidence)


def test_short_kernels_and_small_grids_are_overhead() -> None:
    v = verdict(sig(1e6, 1e6, 2e6, time_s=4e-6, activities=2), H100)  # 2 us per kernel
    assert (v.label, v.limiter) == ("overhead-bound", "launch")
    # 96 blocks < 132 SMs decides only what the ridge leaves open (intensity 0.01-1000 FLOP/B)
    v = verdict(sig(1e10, 1e7, 1e12, time_s=1e-3, activities=1, blocks=96), H100)
    assert (v.label, v.limiter) == ("overhead-bound", "small-grid")
    f, lo = 2 * 25136 * 2880, (2880 + 2880 * 25136 + 25136) * 2
    # a GEMV at 54 % of DRAM on 131 blocks for 132 SMs: neither side at 60 %, so NCU's Small Grid decides
    assert verdict(sig(f, lo, 2 * f, time_s=80e-6, blocks=131), H100).limiter == "small-grid"
    # at 72 % of DRAM the memory side is named, small grid or not
    assert verdict(sig(f, lo, 2 * f, time_s=60e-6, blocks=131), H100).label == "memory-bound"
    # below 60 % on a full grid nothing is decided: latency, uncounted bytes or uncounted work
    assert verdict(sig(f, lo, 2 * f, time_s=80e-6, blocks=1024), H100).label == "unknown"


def test_no_roof_no_label() -> None:
    assert verdict(sig(1e9, 1e6, 2e6), None).label == "unknown"
    s = sig(1e9, 1e6, 2e6)
    s.modelled = Modelled("other", None, "no formula for x")
    v = verdict(s, H100)
    assert v.label == "unknown" and "no formula" in v.evidence[0]


def test_an_fp32_gemm_on_tf32_kernels_meets_the_tf32_roof() -> None:
    v = verdict(sig(1e12, 1e9, 2e9, compute="fp32", time_s=4e-3, kernel="sm80_xmma_gemm_tf32f32_tn"), H100)
    assert v.roof["compute"] == "tf32" and v.label == "compute-bound"


def test_findings_never_promise_more_than_the_roofline_bound() -> None:
    f, lo = 2 * 25136 * 2880, (2880 + 2880 * 25136 + 25136) * 2
    s = sig(f, lo, f * 2, time_s=60e-6)
    v = verdict(s, H100)
    op = {"input": "t.json", "device": "0", "name": "aten::mm", "category": "gemm", "shape": "M×N×K 1×25136×2880",
          "input_types": ["c10::BFloat16", "c10::BFloat16"], "params": {"M": 1, "N": 25136}, "calls": 1,
          "kernel_time_s": 60e-6, "time_share": 0.5, "label": v.label, "limiter": v.limiter,
          "pct_of_roof": v.pct_of_roof, "roof": v.roof, "min_time_s": v.min_time_s, "evidence": v.evidence}
    (finding,) = op_findings([op], 10)
    assert finding["est_saving_s"] == pytest.approx(60e-6 - lo / 3.35e12, abs=1e-9)
    assert finding["title"].startswith("aten::mm M×N×K 1×25136×2880 bf16 (GEMV): memory-bound at 72 % of DRAM")
