"""Kernel ↔ fleet join on constructed cases (arithmetic written out)."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from rooftop.analyzer.fleet.join import compare_signature, predict_signature

# peak tensor 1e15 FLOP/s, fp32 1e14, DRAM 2e12 B/s, 100 SMs
CEIL = {"tensor": 1e15, "fp32": 1e14, "dram": 2e12, "sm_count": 100}


def _kernels() -> pd.DataFrame:
    # A: 3 s, 1.8e15 tensor FLOP -> 1.8e15/3/1e15 = 0.6; 1.2e12 B -> 1.2e12/3/2e12 = 0.2; grid 200 -> 1.0
    # B: 1 s, no tensor -> 0.0; 1.6e12 B -> 0.8; grid 50 -> 0.5; fp32 2e13 -> 0.2
    return pd.DataFrame({
        "name": ["gemm", "softmax"], "duration_s": [3.0, 1.0],
        "flops_tensor": [1.8e15, 0.0], "flops_fp32": [0.0, 2e13], "bytes_dram": [1.2e12, 1.6e12],
        "grid": [200, 50], "label": ["compute-bound", "memory-bound"],
    })


def test_predict_signature_is_duration_weighted():
    sig = predict_signature(_kernels(), CEIL)
    b = sig["busy"]
    assert sig["kernel_time_s"] == 4.0 and sig["kernels"] == 2
    assert b["tensor_active"] == pytest.approx((3 * 0.6 + 1 * 0.0) / 4)  # 0.45
    assert b["dram_active"] == pytest.approx((3 * 0.2 + 1 * 0.8) / 4)  # 0.35
    assert b["sm_active"] == pytest.approx((3 * 1.0 + 1 * 0.5) / 4)  # 0.875
    assert b["fp32_active"] == pytest.approx((3 * 0.0 + 1 * 0.2) / 4)  # 0.05
    assert b["gr_active"] == 1.0
    assert sig["mix"] == {"compute-bound": 0.75, "memory-bound": 0.25}
    assert "fp64_active" not in b  # no fp64 peak given


def test_predict_without_ceilings_uses_sol_memory_and_says_so():
    k = _kernels().assign(sol_memory_pct=[30.0, 90.0])
    sig = predict_signature(k, {})
    assert sig["busy"]["dram_active"] == pytest.approx((3 * 0.3 + 1 * 0.9) / 4)  # 0.45
    assert sig["busy"]["sm_active"] == 1.0
    assert "tensor_active" not in sig["busy"]
    assert any("SOL memory" in a for a in sig["assumptions"])


def test_predict_ignores_kernels_without_duration_and_weights_invocations():
    k = pd.concat([_kernels(), pd.DataFrame({"name": ["x"], "duration_s": [math.nan]})],
                  ignore_index=True).assign(invocations=[1, 3, 1])
    sig = predict_signature(k, CEIL)
    # B now weighs 3 s: tensor (3*0.6 + 3*0)/6 = 0.3
    assert sig["kernel_time_s"] == 6.0 and sig["kernels"] == 2
    assert sig["busy"]["tensor_active"] == pytest.approx(0.3)


def test_compare_finds_time_outside_kernels_and_cache_flush_dram():
    sig = predict_signature(_kernels(), CEIL)
    # DCGM: busy 80 % -> expected tensor 0.8*0.45 = 0.36, dram 0.8*0.35 = 0.28, sm 0.8*0.875 = 0.70
    win = pd.DataFrame({"gr_active": [0.7, 0.9], "tensor_active": [0.35, 0.37],
                        "dram_active": [0.10, 0.10], "sm_active": [0.69, 0.71],
                        "fp32_active": [0.04, 0.04]})
    rows = {r["metric"]: r for r in compare_signature(sig, win)}
    assert rows["gr_active"]["verdict"] == "lower"
    assert rows["gr_active"]["observed"] == pytest.approx(0.8)
    assert "20% of the job's time" in rows["gr_active"]["meaning"]
    assert rows["tensor_active"]["expected"] == pytest.approx(0.36)
    assert rows["tensor_active"]["verdict"] == "agrees"
    assert rows["dram_active"]["expected"] == pytest.approx(0.28)
    assert rows["dram_active"]["verdict"] == "lower"  # |0.10-0.28| = 0.18 > max(0.05, 0.07)
    assert "cache" in rows["dram_active"]["meaning"]
    assert rows["dram_active"]["ratio"] == pytest.approx(0.10 / 0.28)
    assert rows["sm_active"]["verdict"] == "agrees"
    assert rows["fp32_active"]["verdict"] == "agrees"  # 0.04 vs 0.04


def test_compare_higher_and_unmeasured():
    sig = predict_signature(_kernels(), CEIL)
    win = pd.DataFrame({"gr_active": [1.0], "tensor_active": [0.9], "dram_active": [math.nan]})
    rows = {r["metric"]: r for r in compare_signature(sig, win)}
    assert rows["gr_active"]["verdict"] == "agrees"
    assert rows["tensor_active"]["verdict"] == "higher"  # 0.9 vs 0.45 (tol 0.1125)
    assert rows["dram_active"]["verdict"] == "unmeasured"
    assert rows["sm_active"]["verdict"] == "unmeasured"  # column absent


def test_compare_without_gr_active_assumes_always_busy():
    sig = predict_signature(_kernels(), CEIL)
    rows = compare_signature(sig, pd.DataFrame({"tensor_active": [0.45]}))
    assert rows[0]["verdict"] == "unmeasured"
    t = next(r for r in rows if r["metric"] == "tensor_active")
    assert t["expected"] == pytest.approx(0.45) and t["verdict"] == "agrees"


def test_device_spec_from_results_device_column():
    k = _kernels().assign(device="NVIDIA H100 80GB HBM3")
    sig = predict_signature(k)
    # H100 SXM built-in: tensor 989.4e12 -> A: 1.8e15/3/989.4e12 = 0.6064
    assert sig["busy"]["tensor_active"] == pytest.approx(3 * (1.8e15 / 3 / 989.4e12) / 4)


def test_kernel_join_renders_in_fleet_sections():
    from rooftop.analyzer.document import jsonable
    from rooftop.analyzer.fleet.join import kernel_join
    from rooftop.reports.fleet_sections import markdown_sections, sections

    join = jsonable(kernel_join(_kernels(), pd.DataFrame({"gr_active": [0.8], "tensor_active": [0.36]}), CEIL))
    doc = {"kind": "fleet", "groups": [], "fleet": {}, "kernel_join": join}
    html = next(s for s in sections(doc) if s.title == "Kernels vs DCGM").html_body
    assert "tensor_active" in html and "agrees" in html and "ran no kernel" in html
    md = next(s for s in markdown_sections(doc) if s.title == "Kernels vs DCGM").body
    assert "| gr\\_active | 1.00 | 1.00 | 0.80 | lower |" in md  # cells are Markdown-escaped
