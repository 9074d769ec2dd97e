"""Tensor-core kernels not judged by their FP32 epilogue, and the real limiter (issue 29 items 2, 3;
docs/formulas.md#work-bytes, #kernel-labels). Hand-computed cases and corpus files."""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace
from typing import Any

import pandas as pd
import pytest

import rooftop
from rooftop.analyzer.findings import rank_findings
from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.metrics.work import tensor_shape
from tests.conftest import corpus_dir

NO_WINDOWS = SimpleNamespace(findings=[])


def _k(index: int, **metrics: Any) -> dict[str, Any]:
    return {"input": "a.csv", "index": index, "name": f"k{index}", "duration_s": 1e-3} | metrics


def _codes(lint: list[dict[str, Any]]) -> dict[str, list[int]]:
    return {i["code"]: i["kernels"] for i in lint}


@pytest.mark.parametrize(("name", "cc", "flop"), [
    ("ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", 8.0, 4096.0),  # HMMA m16n8k16
    ("turing_fp16_s1688gemm_fp16_128x128_ldg8_f2f_nn", 7.5, 2048.0),  # HMMA m16n8k8
    ("cutlass_80_tensorop_i16832gemm_s8_128x256_64x3_tn_align16", 8.6, 8192.0),  # IMMA m16n8k32
    ("volta_h884gemm_64x64_ldg8_nn", 7.0, 512.0),
    ("cutlass_80_tensorop_d884gemm_128x64_16x3_nn_align1", 8.0, 512.0),  # DMMA
])
def test_tensor_shape_table(name: str, cc: float, flop: float) -> None:
    got = tensor_shape(name, cc)
    assert got is not None and got[1] == flop


def test_tensor_shape_unknown_or_wrong_architecture() -> None:
    assert tensor_shape("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", 9.0) is None
    assert tensor_shape("ampere_fp16_s16816gemm_fp16_128x128_nn", 7.0) is None  # no m16n8k16 on Volta
    assert tensor_shape("my_kernel", 8.0) is None


def test_tensor_flops_from_hmma_instructions_and_name_by_hand() -> None:
    # 1e6 HMMA m16n8k16 warp instructions = 4.096e9 FLOP, beside 1e6 FFMA of epilogue (2e6 FLOP)
    k = pd.DataFrame([_k(0, name="ampere_fp16_s16816gemm_fp16_128x128_ldg8_f2f_stages_32x5_nn", cc="8.0",
                         **{"sm__inst_executed_pipe_tensor_op_hmma.sum": 1e6,
                            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6})])
    res = analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB")
    row = res.results.iloc[0]
    assert row["flops_tensor"] == pytest.approx(4.096e9)
    assert row["flops"] == pytest.approx(4.098e9)
    assert "tensor-uncounted" not in _codes(res.lint)
    assert any("m16n8k16 from the kernel name" in e for e in row["evidence"])


def test_uncounted_tensor_work_is_not_placed_by_hand() -> None:
    # a Hopper GEMM whose name gives no shape: 1e6 tensor instructions, 2e6 FLOP of FP32 epilogue, DRAM at
    # 70 % of 3.35 TB/s: compute side unknown -> not placed, no roofline saving, not memory-bound
    k = pd.DataFrame([_k(0, name="sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x128x64", cc="9.0",
                         **{"sm__inst_executed_pipe_tensor.sum": 1e6,
                            "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e6,
                            "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 0.0,
                            "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0,
                            "dram__bytes.sum": 0.7 * 3.35e12 * 1e-3})])
    res = analyze_kernels(k, pd.DataFrame(), device="NVIDIA H100 SXM5 80GB")
    row = res.results.iloc[0]
    assert pd.isna(row["flops"]) and pd.isna(row["achieved_flops_s"]) and pd.isna(row["intensity_dram"])
    assert pd.isna(row["attainable_flops_s"])
    assert row["label"] == "unknown"
    assert _codes(res.lint)["tensor-uncounted"] == [0]
    ev = " | ".join(row["evidence"])
    assert "compute side unknown" in ev and "2 MFLOP of FP32/FP16 instructions counted are not its work" in ev
    assert "FLOP counters" not in ev and "tensor FLOPs" in ev
    [f] = rank_findings(res.results.assign(family="g"), NO_WINDOWS)
    assert f["est_saving_s"] is None and "FLOP/byte" not in f["recommendation"]


@cache
def _doc(name: str) -> dict[str, Any]:
    return rooftop.analyze([str(corpus_dir("ncu") / name)], top=100)


def test_fp16_on_the_shared_pipe_is_not_tensor_work_leleucas() -> None:
    # GA100: sm__inst_executed_pipe_tensor = HFMA / 32 in these kernels: FP16 FMA, not tensor work (was 17/26)
    doc = _doc("leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention__actual_parameter_"
               "analysis__data__5-9__bert_torch_nsight.csv")
    assert not [i for i in doc["lint"] if i["code"] == "tensor-uncounted"]


def test_one_sol_side_at_80_decides_olajide() -> None:
    # sm__throughput 97.3 %, no memory %: NCU's High Throughput on the compute side, not unknown
    doc = _doc("Olajide-Badejo__GPU-Roofline-Profiler__results__sample_run__ncu__gemm_naive.csv")
    [k] = doc["kernels"]
    assert k["label"] == "compute-bound" and k["extra"]["label_basis"] == "ncu-sol"
    ev = " | ".join(k["evidence"])
    assert "one side >= 80 % decides on its own" in ev and "compute side not measured" not in ev
    [f] = doc["findings"]
    assert "tensor cores" not in f["recommendation"]  # the pipe is not known: no FLOP-pipe advice
    assert "ComputeWorkloadAnalysis" in f["recommendation"]


def test_limiter_from_the_busiest_pipe_averyclapp() -> None:
    # esmm_shmem_multi: SM 87.6 %, FMA-heavy pipe 77.9 % > ALU 69.9 % (no FLOP counters): fma, not unknown
    doc = _doc("AveryClapp__ESMM-Research__profile.ncu-rep")
    k = next(k for k in doc["kernels"] if k["name"].startswith("esmm_shmem_multi("))
    assert (k["label"], k["limiter"]) == ("compute-bound", "fma")
    assert k["extra"]["pipe_pct"] == pytest.approx(77.9, abs=0.05)


def test_compute_limiter_by_hand() -> None:
    # SOL breakdown: ALU 91 % busiest, FMA 40 %; memory 30 %: compute-bound (alu), advice without tensor cores
    k = pd.DataFrame([_k(0, **{"sm__throughput.avg.pct_of_peak_sustained_elapsed": 91.0,
                               "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 30.0,
                               "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_elapsed": 91.0,
                               "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_elapsed": 40.0})])
    res = analyze_kernels(k, pd.DataFrame())
    row = res.results.iloc[0]
    assert (row["label"], row["limiter"]) == ("compute-bound", "alu")
    [f] = rank_findings(res.results.assign(family="g"), NO_WINDOWS)
    assert "ALU pipe" in f["recommendation"] and "use tensor cores" not in f["recommendation"]
    # the pipe named by NCU's HighPipeUtilization message where the breakdown is not exported
    k2 = pd.DataFrame([_k(0, **{"sm__throughput.avg.pct_of_peak_sustained_elapsed": 85.0,
                                "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 30.0})])
    rules = pd.DataFrame([{"input": "a.csv", "index": 0, "rule": "HighPipeUtilization", "title": "High Utilization",
                           "description": "XU is the highest-utilized pipeline (84.2%) based on active cycles, taking "
                                          "into account the rates of its different instructions.",
                           "speedup_type": "local", "speedup_pct": 15.8}])
    row2 = analyze_kernels(k2, rules).results.iloc[0]
    assert (row2["label"], row2["limiter"]) == ("compute-bound", "xu") and row2["pipe_pct"] == pytest.approx(84.2)


def test_memory_side_below_80_does_not_win_against_an_unmeasured_compute_side() -> None:
    # no SOL, DRAM at 70 % of its roof, no FLOP counters: the compute side could be higher -> unknown
    k = pd.DataFrame([_k(0, **{"dram__bytes.sum": 0.7 * 2.039e12 * 1e-3})])
    row = analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB").results.iloc[0]
    assert row["label"] == "unknown"
    assert any("a side below 80 % is named only against the other" in e for e in row["evidence"])
    # at 90 % it decides on its own, as NCU's High Throughput does
    k.loc[0, "dram__bytes.sum"] = 0.9 * 2.039e12 * 1e-3
    row = analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB").results.iloc[0]
    assert (row["label"], row["limiter"]) == ("memory-bound", "dram")


def test_integer_kernel_zero_flops_bandwidth_bound_by_hand() -> None:
    # FP64/FP32/FP16 counters present and zero; 1 ms; DRAM 1.0e9 B against the A100-80GB's 2.039 TB/s:
    # 0.490 ms at peak, so the bandwidth gap is 1 − 0.490 = 0.510 ms; no intensity, no "collect --set full"
    zero = {f"sm__sass_thread_inst_executed_op_{op}_pred_on.sum": 0.0
            for op in ("dadd", "dmul", "dfma", "fadd", "fmul", "ffma", "hadd", "hmul", "hfma")}
    k = pd.DataFrame([_k(0, **zero, **{"dram__bytes.sum": 1.0e9, "l1tex__t_bytes.sum": 0.0, "lts__t_bytes.sum": 0.0,
                                       "sm__throughput.avg.pct_of_peak_sustained_elapsed": 20.0,
                                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 49.0})])
    res = analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB")
    row = res.results.iloc[0]
    assert row["flops"] == 0 and pd.isna(row["intensity_dram"]) and pd.isna(row["attainable_flops_s"])
    assert row["bw_time_s"] == pytest.approx(1.0e9 / 2.039e12, rel=1e-3) and bool(row["bw_time_complete"])
    ev = " | ".join(row["evidence"])
    assert "0 FLOPs measured" in ev and "FLOP roofline does not apply" in ev and "49.0% of the 1 ms run" in ev
    assert "FLOP counters" not in ev and "AI 0" not in ev
    [f] = rank_findings(res.results.assign(family="g"), NO_WINDOWS)
    assert f["est_saving_s"] == pytest.approx(1e-3 - 1.0e9 / 2.039e12, rel=1e-3)
    assert "bandwidth gap" in f["evidence"][0] and "--set full" not in f["recommendation"]


def test_binding_level_without_ceiling_does_not_fall_through_to_dram_by_hand() -> None:
    # L1 busiest by NCU's SOL unit (90 %) with no L1 ceiling anywhere; DRAM at 10 %: binding level L1,
    # attainable unknown (the DRAM roof would overstate it)
    k = pd.DataFrame([_k(0, **{"sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9,
                               "sm__sass_thread_inst_executed_op_fadd_pred_on.sum": 0.0,
                               "sm__sass_thread_inst_executed_op_fmul_pred_on.sum": 0.0,
                               "l1tex__t_bytes.sum": 8e9, "dram__bytes.sum": 0.1 * 336e9 * 1e-3,
                               "dram__bytes.sum.peak_sustained": 32.0, "dram__cycles_elapsed.avg.per_second": 10.5e9,
                               "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 5120.0,
                               "sm__cycles_elapsed.avg.per_second": 1.5e9,
                               "l1tex__throughput.avg.pct_of_peak_sustained_active": 90.0})])
    row = analyze_kernels(k, pd.DataFrame()).results.iloc[0]
    assert row["binding_level"] == "l1" and row["limiter"] in ("l1", "unknown")
    assert pd.isna(row["attainable_flops_s"]) and pd.isna(row["pct_of_roof"])
    assert any("Binding level L1: it has no bandwidth ceiling" in e for e in row["evidence"])


def test_builtin_l2_ceiling_at_the_measured_clock_by_hand() -> None:
    k = pd.DataFrame([_k(0, **{"lts__t_bytes.sum": 1e9, "sm__cycles_elapsed.avg.per_second": 705e6})])
    full = analyze_kernels(k.drop(columns=["sm__cycles_elapsed.avg.per_second"]), pd.DataFrame(),
                           device="NVIDIA A100-SXM4-80GB").ceilings.iloc[0]["bw_l2"]
    half = analyze_kernels(k, pd.DataFrame(), device="NVIDIA A100-SXM4-80GB").ceilings.iloc[0]["bw_l2"]
    assert half == pytest.approx(full * 705 / 1410)


def test_l1_l2_ceilings_from_ncu_percent_and_binding_level_lakshya() -> None:
    doc = _doc("LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep")
    for k in doc["kernels"]:
        assert (k["label"], k["limiter"]) == ("memory-bound", "l1")
        assert k["extra"]["binding_level"] == "l1"  # was dram at 10 % of its roof
        assert k["bytes"]["l2"] == pytest.approx(k["bytes"]["l2"]) and k["bytes"]["l2"] > 2.7e8  # lts__t_sectors x 32
        ev = " | ".join(k["evidence"])
        assert "lts__t_sectors.sum x 32 B" in ev and "Not in the export, so not evaluated: L2 bytes" not in ev
        assert "of 4.32 TB/s (export)" in ev  # L1: l1tex__lsu_writeback_active_mem_lg rate / its own %


def test_integer_scan_is_not_told_to_collect_what_it_has_thedavidchu() -> None:
    # FP32/FP64 counters of SpeedOfLight_RooflineChart present and zero (FP16 not collected): 0 FLOPs measured
    doc = _doc("thedavidchu__speedy_scan__profile.ncu-rep")
    [k] = doc["kernels"]
    ev = " | ".join(k["evidence"])
    assert "0 FLOPs measured" in ev and "FP16 not collected" in ev and "FLOP counters" not in ev
    assert k["extra"]["bw_time_s"] == pytest.approx(0.534 * k["duration_s"], rel=0.01)  # DRAM 53.4 % binds
    [f] = doc["findings"]
    assert "SpeedOfLight_RooflineChart" not in f["recommendation"] + " ".join(f["evidence"])
    assert f["est_saving_s"] == pytest.approx(k["duration_s"] - k["extra"]["bw_time_s"], rel=1e-6)
