"""Roofline arithmetic and ceilings with provenance (hand-computed cases, docs/research/formulas.md §0, §1, §8)."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.kernels.facts import facts_for
from rooftop.analyzer.kernels.roofline import compute

NAN = np.nan


def _ceil(**kw: float) -> pd.DataFrame:
    base = {f"peak_{c}": NAN for c in ("fp64", "fp32", "fp16", "tensor")} | {f"bw_{lvl}": NAN for lvl in ("l1", "l2", "dram")}
    base.update(kw)
    return pd.DataFrame({k: [v] for k, v in base.items()})


def _flops(**kw: float) -> pd.DataFrame:
    return pd.DataFrame({c: [kw.get(c, NAN)] for c in ("fp64", "fp32", "fp16", "tensor")})


def _bytes(**kw: float) -> pd.DataFrame:
    return pd.DataFrame({lvl: [kw.get(lvl, NAN)] for lvl in ("l1", "l2", "dram")})


def test_single_class_intensity_ridge_attainable_binding() -> None:
    # 2 GFLOP FP32 in 1 ms = 2 TFLOP/s; P = 20 TFLOP/s.
    # DRAM: 1 GB at 1 TB/s roof -> AI 2 FLOP/B, ridge 20, attainable min(20, 2 x 1) = 2 TFLOP/s, util 100 %
    # L2: 2 GB at 4 TB/s roof  -> AI 1, ridge 5, attainable min(20, 1 x 4) = 4 TFLOP/s, util 50 %
    r = compute(_flops(fp32=2e9), _bytes(dram=1e9, l2=2e9), pd.Series([1e-3]),
                _ceil(peak_fp32=20e12, bw_dram=1e12, bw_l2=4e12)).table.iloc[0]
    assert r["flops"] == 2e9 and r["achieved_flops_s"] == pytest.approx(2e12)
    assert r["intensity_dram"] == 2.0 and r["intensity_l2"] == 1.0 and math.isnan(r["intensity_l1"])
    assert r["ridge_dram"] == 20.0 and r["ridge_l2"] == 5.0
    assert r["attainable_dram"] == pytest.approx(2e12) and r["attainable_l2"] == pytest.approx(4e12)
    assert r["attainable_flops_s"] == pytest.approx(2e12)  # min over levels
    assert r["binding_level"] == "dram" and r["bw_util_dram"] == pytest.approx(1.0)
    assert r["bw_util_l2"] == pytest.approx(0.5) and r["pct_of_roof"] == pytest.approx(100.0)
    assert r["compute_util"] == pytest.approx(0.1) and r["dominant_class"] == "fp32"


def test_serial_mix_peak_for_mixed_precision() -> None:
    # FP32 1 GFLOP at 1 TFLOP/s peak + tensor 9 GFLOP at 10 TFLOP/s: P = 10e9 / (1e-3 + 0.9e-3) = 5.263 TFLOP/s
    r = compute(_flops(fp32=1e9, tensor=9e9), _bytes(), pd.Series([4e-3]),
                _ceil(peak_fp32=1e12, peak_tensor=10e12)).table.iloc[0]
    assert r["compute_peak"] == pytest.approx(10e9 / 1.9e-3)
    # utilization = achieved / P = 2.5e12 / 5.263e12 = 0.475 = Σ_c (F_c / T) / P_c = 0.25 + 0.225
    assert r["compute_util"] == pytest.approx(0.475)
    assert r["dominant_class"] == "fp32"  # 25 % of its roof beats tensor's 22.5 %
    assert math.isnan(r["attainable_flops_s"])  # no bytes: no memory roof


def test_no_flops_kernel_has_no_flop_roofline_but_a_bandwidth_bound() -> None:
    # 0 FLOPs measured: no intensity, ridge or attainable FLOP/s (docs/formulas.md#work-bytes); its 1e6 B
    # need 1 µs at 1 TB/s, the whole 1 µs run
    r = compute(_flops(fp32=0.0), _bytes(dram=1e6), pd.Series([1e-6]), _ceil(peak_fp32=10e12, bw_dram=1e12)).table.iloc[0]
    assert math.isnan(r["intensity_dram"]) and math.isnan(r["attainable_flops_s"]) and math.isnan(r["ridge_dram"])
    assert r["bw_time_s"] == pytest.approx(1e-6)
    assert r["binding_level"] == "dram" and r["bw_util_dram"] == pytest.approx(1.0)


def test_unknown_peak_gives_no_compute_roof() -> None:
    r = compute(_flops(tensor=1e9), _bytes(dram=1e6), pd.Series([1e-3]), _ceil(peak_fp32=1e12, bw_dram=1e12)).table.iloc[0]
    assert math.isnan(r["compute_peak"]) and math.isnan(r["attainable_flops_s"])


# -- ceilings with provenance ------------------------------------------------------------------

def _kernel(**metrics: object) -> pd.DataFrame:
    row = {"input": "t.csv", "index": 0, "name": "k", "duration_s": 1e-3} | metrics
    return pd.DataFrame([row])


H100_EXPORT = {
    "device": "NVIDIA H100 80GB HBM3", "cc": "9.0",
    "sm__cycles_elapsed.avg.per_second": 1.98e9, "lts__cycles_elapsed.avg.per_second": 1.98e9,
    "l1tex__cycles_elapsed.avg.per_second": 1.98e9, "dram__cycles_elapsed.avg.per_second": 2.62e9,
    "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained": 16896.0,
    "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained": 8448.0,
    "sm__sass_thread_inst_executed_op_hfma_pred_on.sum.peak_sustained": 16896.0,
    "dram__bytes.sum.peak_sustained": 1280.0,
    "lts__lts2xbar_cycles_active.sum.peak_sustained": 160.0,
    "l1tex__lsu_writeback_active_mem_lgds.sum.peak_sustained": 132.0,
    "l1tex__lsu_writeback_active_mem_lgds.sum": 1.0, "lts__lts2xbar_cycles_active.sum": 1.0, "dram__bytes.sum": 1.0,
}


def test_export_ceilings_peak_sustained_times_clock() -> None:
    f, devices = facts_for(_kernel(**H100_EXPORT))
    r = f.iloc[0]
    assert r["peak_fp32"] == pytest.approx(16896 * 2 * 1.98e9)  # 66.9 TFLOP/s (FFMA x2)
    assert r["peak_fp64"] == pytest.approx(8448 * 2 * 1.98e9)
    assert r["peak_fp16"] == pytest.approx(16896 * 4 * 1.98e9)  # HFMA x4
    assert r["bw_dram"] == pytest.approx(1280 * 2.62e9)
    assert r["bw_l2"] == pytest.approx(160 * 32 * 1.98e9)  # 10.14 TB/s
    assert r["bw_l1"] == pytest.approx(132 * 128 * 1.98e9)  # 33.45 TB/s
    for col in ("peak_fp32", "peak_fp64", "peak_fp16", "bw_dram", "bw_l2", "bw_l1"):
        assert r[f"src_{col}"] == "export"
    assert "peak_sustained" in r["detail_bw_l2"]
    # no tensor peak in the export: the table's dense FP16 roof, rescaled by 1.98 / 1.83 GHz
    assert r["src_peak_tensor"] == "builtin" and r["peak_tensor"] == pytest.approx(989.4e12 * 1.98 / 1.83)
    exp = [d for d in devices if d["source"] == "export"]
    assert exp and exp[0]["name"] == "NVIDIA H100 80GB HBM3" and exp[0]["ceilings"]["l2"] == pytest.approx(10.1376e12)


def test_tensor_peak_ops_weighted_over_variants() -> None:
    # fp16 1e12 ops at 540,672/cycle, tf32 1e11 ops at 270,336/cycle, clock 1.98 GHz:
    # P = 1.1e12 / (1e12 / 1.0705e15 + 1e11 / 5.353e14)
    m = dict(H100_EXPORT)
    # as a real H100 raw page has them (fixtures/README.md#capture): the unqualified aggregates' peaks are the
    # 2:4-sparse rates, the dense ones are the op_hgmma_*_sparsity_off paths'
    m.update({"sm__ops_path_tensor_src_fp16.sum": 1e12, "sm__ops_path_tensor_src_fp16.sum.peak_sustained": 2 * 540672.0,
              "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum.peak_sustained": 540672.0,
              "sm__ops_path_tensor_src_tf32_dst_fp32.sum": 1e11,
              "sm__ops_path_tensor_src_tf32_dst_fp32.sum.peak_sustained": 2 * 270336.0,
              "sm__ops_path_tensor_op_hgmma_src_tf32_dst_fp32_sparsity_off.sum.peak_sustained": 270336.0})
    r = facts_for(_kernel(**m))[0].iloc[0]
    p16, p32 = 540672 * 1.98e9, 270336 * 1.98e9
    assert r["peak_tensor"] == pytest.approx(1.1e12 / (1e12 / p16 + 1e11 / p32))
    assert r["src_peak_tensor"] == "export" and r["flops_tensor"] == 1.1e12


def test_builtin_ceilings_scaled_to_measured_clock() -> None:
    r = facts_for(_kernel(device="NVIDIA H100 80GB HBM3", cc="9.0", **{"sm__cycles_elapsed.avg.per_second": 1.5e9}))[0].iloc[0]
    assert r["src_peak_fp32"] == "builtin" and r["peak_fp32"] == pytest.approx(67e12 * 1.5 / 1.98)
    assert r["bw_dram"] == 3350e9 and r["src_bw_dram"] == "builtin"  # DRAM is not in the SM clock domain
    assert "measured SM clock" in r["detail_peak_fp32"]
    r2 = facts_for(_kernel(device="Tesla T4", cc="7.5"))[0].iloc[0]
    assert r2["peak_fp32"] == 8.1e12 and r2["ceiling_device"] == "Tesla T4"  # no clock measured: datasheet value
    r3 = facts_for(_kernel(device="Mystery GPU"))[0].iloc[0]
    assert math.isnan(r3["peak_fp32"]) and pd.isna(r3["src_peak_fp32"])  # nothing invented


def test_nersc_bytes_take_the_nersc_peak() -> None:
    m = dict(H100_EXPORT)
    del m["lts__lts2xbar_cycles_active.sum"]
    m.update({"lts__t_bytes.sum": 1e6, "lts__t_bytes.sum.peak_sustained": 7000.0})
    r = facts_for(_kernel(**m))[0].iloc[0]
    # lts__t_bytes with its peak: that convention for the kernel, never L1 from lsu_writeback beside it
    # (docs/formulas.md#work-bytes); L1 has no l1tex__t_bytes here, so it is not evaluated
    assert r["bytes_convention"] == "t_bytes"
    assert r["bw_l2"] == pytest.approx(7000 * 1.98e9) and "lts__t_bytes" in r["detail_bw_l2"]
    assert np.isnan(r["bytes_l1"]) and r["bytes_l2"] == 1e6


def test_device_option_overrides_export(tmp_path) -> None:
    f = tmp_path / "dev.json"
    f.write_text(json.dumps({"name": "Capped H100", "peaks": {"fp32": 5e13}, "bandwidth": {"dram": 2e12}}))
    ka = analyze_kernels(_kernel(**H100_EXPORT), pd.DataFrame(), device=str(f))
    r = ka.ceilings.iloc[0]
    assert r["peak_fp32"] == 5e13 and r["src_peak_fp32"] == "user"
    assert r["bw_dram"] == 2e12 and r["src_bw_dram"] == "user"
    assert r["src_bw_l2"] == "export"  # the file does not give L2: the export's roof stays
    assert ka.devices[0]["name"] == "Capped H100" and ka.devices[0]["source"] == "user"
    ka2 = analyze_kernels(_kernel(**H100_EXPORT), pd.DataFrame(), device="Tesla T4")
    # a named built-in device replaces the export too, its compute peaks at the measured clock: 8.1 x 1.98 / 1.59
    assert ka2.ceilings.iloc[0]["peak_fp32"] == pytest.approx(8.1e12 * 1.98 / 1.59)
    assert ka2.ceilings.iloc[0]["src_peak_fp32"] == "builtin"
    # the document's extras: a reference to the devices[] entry, numbers only where they differ from it
    res = ka.results.iloc[0]
    head, *rest = res["ceilings"].split("; ")  # most ceilings from the export entry, fp32 and dram from the file
    assert head == "NVIDIA H100 80GB HBM3|export" and len(rest) == 1 and rest[0].endswith("=Capped H100|user")
    assert {"fp32", "dram"} <= set(rest[0].split("=")[0].split(","))
    assert pd.isna(res["peak_fp32"]) and pd.isna(res["bw_dram"])  # 5e13 and 2e12 are the entry's values
    assert ka2.results.iloc[0]["peak_fp32"] == pytest.approx(8.1e12 * 1.98 / 1.59)  # clock-scaled: kept


def test_result_columns_match_the_document_fields() -> None:
    from rooftop.analyzer.document import KERNEL_FIELDS

    ka = analyze_kernels(_kernel(**H100_EXPORT), pd.DataFrame())
    assert set(KERNEL_FIELDS) - {"family"} <= set(ka.results.columns)
    assert isinstance(ka.results.at[0, "evidence"], list) and isinstance(ka.results.at[0, "ncu_rules"], list)
