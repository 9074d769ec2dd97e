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
    # 16 blocks < 132 SMs decides only what the ridge leaves open (intensity 0.01-1000 FLOP/B)
    v = verdict(sig(1e10, 1e7, 1e12, time_s=1e-3, activities=1, blocks=16), H100)
    assert (v.label, v.limiter) == ("overhead-bound", "small-grid")
    assert v.max_saving_s == pytest.approx((1 - 16 / 132) * 1e-3)
    f, lo = 2 * 25136 * 2880, (2880 + 2880 * 25136 + 25136) * 2
    # a GEMV at 54 % of DRAM on 131 blocks for 132 SMs: filling one SM recovers 0.8 %, not the 45 % it is below
    # the roof: not a small grid, and near neither roof: unknown
    v = verdict(sig(f, lo, 2 * f, time_s=80e-6, blocks=131), H100)
    assert (v.label, v.max_saving_s) == ("unknown", None)
    assert any("at most 0.8 % of its time" in e for e in v.evidence)
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


def test_a_grid_just_under_the_sm_count_is_not_small_grid() -> None:
    # the corpus Qwen addmm 8944x1024x1024 bf16 (a persistent GEMM): 120 blocks on 132 SMs at 58.6 % of the BF16
    # tensor roof. Filling the 12 idle SMs recovers at most 9.1 % of its time (NCU Launch Statistics' estimate
    # 1 - 120/132); the SMs with work are 90.9 - 58.6 = 32.3 % below the roof: the grid is not the verdict
    f = 2 * 8944 * 1024 * 1024 + 8944 * 1024
    t = f / (0.586 * 989.4e12)
    v = verdict(sig(f, 3.7e7, 2.7e12, time_s=t, blocks=120), H100)
    assert v.limiter != "small-grid" and v.max_saving_s is None
    assert any("at most 9.1 % of its time" in e and "32.3 %" in e for e in v.evidence)
    # a quarter of the SMs busy on the same op: the idle SMs (73 %) are the larger part, and the saving is theirs
    v = verdict(sig(f / 4, 3.7e7, 2.7e12, time_s=t, blocks=33), H100)
    assert (v.label, v.limiter) == ("overhead-bound", "small-grid")
    assert v.max_saving_s == pytest.approx(0.75 * t, abs=1e-9)


def test_a_small_grid_saving_never_exceeds_what_filling_the_sms_recovers() -> None:
    s = sig(1e10, 1e7, 1e12, time_s=1e-3, blocks=16)
    v = verdict(s, H100)
    op = {"input": "t.json", "device": "0", "name": "aten::mm", "category": "gemm", "shape": "M×N×K 8×8×8",
          "input_types": ["c10::BFloat16", "c10::BFloat16"], "params": {"M": 8, "N": 8}, "calls": 1,
          "kernel_time_s": 1e-3, "time_share": 0.5, "label": v.label, "limiter": v.limiter,
          "pct_of_roof": v.pct_of_roof, "roof": v.roof, "min_time_s": v.min_time_s, "max_saving_s": v.max_saving_s,
          "evidence": v.evidence}
    (finding,) = op_findings([op], 10)
    assert v.min_time_s is not None and 1e-3 - v.min_time_s > (1 - 16 / 132) * 1e-3
    assert finding["est_saving_s"] == pytest.approx((1 - 16 / 132) * 1e-3, abs=1e-9)
    assert ", 1 call, 1 ms (t.json GPU 0)" in finding["title"]  # one call, not "1 calls"
    (two,) = op_findings([{**op, "calls": 2}], 10)
    assert ", 2 calls, 1 ms" in two["title"]
    # a few-µs op reads in µs (it read "0.00458 ms")
    (tiny,) = op_findings([{**op, "kernel_time_s": 4.58e-6, "min_time_s": 1e-6, "max_saving_s": None}], 10)
    assert ", 1 call, 4.58 µs (t.json GPU 0)" in tiny["title"]
    assert "it would take 1 µs: up to 3.58 µs to gain" in tiny["evidence"][-1]


def test_an_unrecorded_element_size_never_places_the_op_in_l2_by_a_guess() -> None:
    # a _foreach_ op: 28 MiB at 1 B/element, 224 MiB at 8: it may or may not fit in the 50 MiB L2. Against the
    # L2 it is memory-bound at 69 %; against DRAM at 208 %: the placements disagree, so no label
    s = sig(1e6, 28 * MB, 56 * MB, compute="fp32", category="elementwise", time_s=28 * MB / (0.69 * 10.1e12))
    s.modelled = Modelled("elementwise", Work(1e6, 28 * MB, 56 * MB, "fp32", ws_max=224 * MB))
    v = verdict(s, H100)
    assert (v.label, v.limiter) == ("unknown", "unknown")
    assert not any("fits in the" in e for e in v.evidence)
    assert any("28–224 MiB per call" in e and "not decided" in e for e in v.evidence)
    # the whole interval inside the L2: placed there as before; the whole interval above it: DRAM
    s.modelled = Modelled("elementwise", Work(1e6, 2 * MB, 4 * MB, "fp32", ws_max=16 * MB))
    assert verdict(s, H100).roof["level"] == "l2"
    s.modelled = Modelled("elementwise", Work(1e6, 60 * MB, 120 * MB, "fp32", ws_max=480 * MB))
    assert verdict(s, H100).roof["level"] == "dram"


def test_launch_advice_follows_the_kernel_count() -> None:
    """A launch-bound op of one 2 µs kernel is not told about "many short kernels" (the fixture's 1-call
    aten::fill_ was); one of 40 kernels over 20 calls is told to capture them in a CUDA graph."""
    v = verdict(sig(0, 16384, 16384, time_s=2e-6, activities=1), H100)
    assert (v.label, v.limiter) == ("overhead-bound", "launch")
    op = {"input": "t.json", "device": "0", "name": "aten::fill_", "category": "elementwise", "shape": "[4096]",
          "input_types": ["float"], "params": {}, "calls": 1, "kernels": 1, "activities": 1, "kernel_time_s": 2e-6,
          "time_share": 0.001, "label": v.label, "limiter": v.limiter, "pct_of_roof": v.pct_of_roof, "roof": v.roof,
          "min_time_s": v.min_time_s, "evidence": v.evidence}
    (one,) = op_findings([op], 10)
    assert "many" not in one["recommendation"]
    assert one["recommendation"].startswith("one GPU activity of 2 µs, about its launch cost: fuse it into the op")
    (many,) = op_findings([{**op, "calls": 20, "kernels": 40, "activities": 40, "kernel_time_s": 8e-5}], 10)
    assert many["recommendation"].startswith("40 GPU activities over 20 calls averaging 2 µs, about their launch "
                                             "cost: capture them in a CUDA graph")
