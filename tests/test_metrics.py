"""Achieved work and bytes from every metric spelling (hand-computed cases, docs/research/formulas.md §1-2)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.metrics.columns import cc_number
from rooftop.analyzer.metrics.sol import launch, sol
from rooftop.analyzer.metrics.traffic import bytes_by_level, bytes_convention
from rooftop.analyzer.metrics.work import (
    counter,
    duration,
    fp_flops,
    tensor_flops,
    tensor_inst_unscaled,
)

OP = "sass_thread_inst_executed_op_{}_pred_on"


def _df(**cols: list[object]) -> pd.DataFrame:
    return pd.DataFrame(cols)


def test_fp_flops_ncu_factors() -> None:
    df = pd.DataFrame({
        f"sm__{OP.format('fadd')}.sum": [10.0], f"sm__{OP.format('fmul')}.sum": [20.0],
        f"sm__{OP.format('ffma')}.sum": [30.0],
        f"smsp__{OP.format('dadd')}.sum": [1.0], f"smsp__{OP.format('dmul')}.sum": [2.0],
        f"smsp__{OP.format('dfma')}.sum": [3.0],
        f"sm__{OP.format('hadd')}.sum": [1.0], f"sm__{OP.format('hmul')}.sum": [2.0],
        f"sm__{OP.format('hfma')}.sum": [3.0],
    })
    flops, missing = fp_flops(df, pd.Series([1e-3]))
    assert flops.at[0, "fp32"] == 10 + 20 + 2 * 30  # FMA = 2 FLOPs
    assert flops.at[0, "fp64"] == 1 + 2 + 2 * 3  # smsp__ sums are the same count
    assert flops.at[0, "fp16"] == 2 * 1 + 2 * 2 + 4 * 3  # ncu half2: hadd x2, hmul x2, hfma x4 = 18
    assert missing.isna().all().all()


def test_counts_from_per_cycle_elapsed_and_per_second() -> None:
    ffma = f"smsp__{OP.format('ffma')}"
    df = pd.DataFrame({
        f"{ffma}.sum.per_cycle_elapsed": [4.0, 4.0, np.nan],
        "smsp__cycles_elapsed.avg": [1000.0, np.nan, np.nan],
        "smsp__cycles_elapsed.avg.per_second": [np.nan, 2e9, np.nan],
        f"{ffma}.sum.per_second": [np.nan, np.nan, 5e12],
    })
    dur = pd.Series([1e-6, 1e-6, 2e-6])
    count, src = counter(df, OP.format("ffma"), dur)
    assert count[0] == 4 * 1000  # per cycle elapsed x smsp__cycles_elapsed.avg
    assert count[1] == pytest.approx(4 * 2e9 * 1e-6)  # x cycles/s x duration = 8000
    assert count[2] == pytest.approx(5e12 * 2e-6)  # per second x duration
    assert src[0].endswith(".per_cycle_elapsed") and src[2].endswith(".per_second")


def test_partial_fp32_counters_are_reported() -> None:
    df = pd.DataFrame({f"sm__{OP.format('ffma')}.sum": [5.0]})
    flops, missing = fp_flops(df, pd.Series([1.0]))
    assert flops.at[0, "fp32"] == 10.0 and missing.at[0, "fp32"] == "fadd fmul"
    assert math.isnan(flops.at[0, "fp64"])  # never collected: not zero, absent


def test_tensor_aggregate_variants_never_double_count() -> None:
    df = pd.DataFrame({
        "sm__ops_path_tensor_src_fp16.sum": [100.0],
        "sm__ops_path_tensor_src_bf16_dst_fp32.sum": [50.0],
        "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off.sum": [100.0],  # breakdown of src_fp16
        "sm__ops_path_tensor_src_fp16.sum.peak_sustained": [540672.0],  # a ceiling, not work
        "cc": ["9.0"],
    })
    flops, src, ops = tensor_flops(df, pd.Series([1.0]), cc_number(df))
    assert flops[0] == 150.0
    assert set(ops.columns) == {"src_fp16", "src_bf16_dst_fp32"}
    assert "aggregate" in src[0]


def test_tensor_sparsity_split_replaces_the_unsplit_variant() -> None:
    df = pd.DataFrame({
        "sm__ops_path_tensor_src_fp16_dst_fp32.sum": [100.0],
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum": [60.0],
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_on.sum": [40.0],
    })
    flops, _, ops = tensor_flops(df, pd.Series([1.0]), pd.Series([8.0]))
    assert flops[0] == 100.0 and "src_fp16_dst_fp32" not in ops.columns


def test_tensor_per_cycle_elapsed_uses_sm_cycles() -> None:
    df = pd.DataFrame({"sm__ops_path_tensor_src_fp16_dst_fp32.sum.per_cycle_elapsed": [2048.0],
                       "sm__cycles_elapsed.avg.per_second": [1.5e9]})
    flops, _, _ = tensor_flops(df, pd.Series([2e-6]), pd.Series([8.0]))
    assert flops[0] == pytest.approx(2048 * 1.5e9 * 2e-6)  # 6,144,000 ops


def test_volta_tensor_instructions_times_512_only_on_cc70() -> None:
    df = pd.DataFrame({"sm__inst_executed_pipe_tensor.sum": [10.0, 10.0], "cc": ["7.0", "8.0"]})
    cc = cc_number(df)
    flops, src, _ = tensor_flops(df, pd.Series([1.0, 1.0]), cc)
    assert flops[0] == 10 * 512 and "512" in src[0]
    assert math.isnan(flops[1])  # no single factor on Ampere (docs/research/formulas.md §2.3)
    assert tensor_inst_unscaled(df, pd.Series([1.0, 1.0]), cc).tolist()[1] == 10.0


def test_dram_bytes_aliases() -> None:
    df = pd.DataFrame({
        "dram__bytes.sum": [1000.0, np.nan, np.nan, np.nan, np.nan],
        "dram__bytes.sum.per_second": [np.nan, 1e9, np.nan, np.nan, np.nan],
        "dram__bytes_read.sum": [np.nan, np.nan, 30.0, np.nan, np.nan],
        "dram__bytes_write.sum": [np.nan, np.nan, 12.0, np.nan, np.nan],
        "dram__read_bytes": [np.nan, np.nan, np.nan, 7552.0, 100.0],  # legacy 2019 names
        "dram__write_bytes": [np.nan, np.nan, np.nan, 384.0, np.nan],  # a lone read is not DRAM bytes
    })
    dur = pd.Series([1e-3, 2e-6, 1.0, 1.0, 1.0])
    b, src, conv = bytes_by_level(df, dur, pd.Series([np.nan] * 5))
    assert b["dram"].tolist()[:4] == [1000.0, pytest.approx(2000.0), 42.0, 7552.0 + 384.0]
    assert math.isnan(b["dram"][4])
    assert "legacy" in src["dram"][3] and conv["dram"][0] == "ncu"


def test_l2_l1_bytes_ncu_convention_by_cc() -> None:
    df = pd.DataFrame({
        "lts__lts2xbar_cycles_active.sum": [100.0, 100.0, 100.0],
        "l1tex__lsu_writeback_active_mem_lgds.sum": [10.0, 10.0, np.nan],
        "l1tex__lsu_writeback_active_mem_lg.sum": [7.0, 7.0, 7.0],
        "cc": ["9.0", "8.6", "9.0"],
    })
    b, src, conv = bytes_by_level(df, pd.Series([1.0] * 3), cc_number(df))
    assert b["l2"].tolist() == [3200.0] * 3  # x 32 B per L2->xbar cycle
    assert b["l1"].tolist() == [10 * 128.0, 7 * 128.0, 7 * 128.0]  # lgds on CC >= 9.0, lg on 7.5-8.9
    assert "mem_lgds" in src["l1"][0] and src["l1"][1].startswith("l1tex__lsu_writeback_active_mem_lg.")
    assert conv.at[0, "l1"] == "ncu" and conv.at[0, "l2"] == "ncu" and pd.isna(conv.at[0, "dram"])
    assert bytes_convention(conv).tolist() == ["ncu"] * 3


def test_nersc_bytes_fallback_and_convention() -> None:
    df = pd.DataFrame({"lts__t_bytes.sum": [5000.0], "l1tex__t_bytes.sum": [9000.0],
                       "lts__lts2xbar_cycles_active.sum.per_second": [np.nan]})
    b, _src, conv = bytes_by_level(df, pd.Series([1.0]), pd.Series([8.0]))
    assert b.at[0, "l2"] == 5000.0 and b.at[0, "l1"] == 9000.0
    assert bytes_convention(conv).tolist() == ["nersc"]
    # ncu's L2 beside NERSC's L1: never mixed in one kernel (docs/formulas.md#work-bytes): ncu wins the tie
    both = pd.DataFrame({"lts__lts2xbar_cycles_active.sum": [1.0], "l1tex__t_bytes.sum": [9.0]})
    b2, _, conv2 = bytes_by_level(both, pd.Series([1.0]), pd.Series([8.0]))
    assert bytes_convention(conv2).tolist() == ["ncu"]
    assert b2.at[0, "l2"] == 32.0 and np.isnan(b2.at[0, "l1"])


def test_duration_from_cycles_when_no_gpu_time() -> None:
    df = pd.DataFrame({"sm__cycles_elapsed.avg": [2000.0], "sm__cycles_elapsed.avg.per_second": [1e9]})
    d, src = duration(df)
    assert d[0] == pytest.approx(2e-6) and "cycles_elapsed" in src[0]
    d2, src2 = duration(pd.DataFrame({"duration_s": [3e-6], "gpu__time_duration": [9.0]}))
    assert d2[0] == 3e-6 and src2[0] == "gpu__time_duration.sum"
    d3, _ = duration(pd.DataFrame({"gpu__time_duration": [2.72e-6]}))  # legacy name (2019)
    assert d3[0] == 2.72e-6


def test_sol_exactly_as_exported_and_legacy_names() -> None:
    df = pd.DataFrame({"sm__throughput.avg.pct_of_peak_sustained_elapsed": [87.6, np.nan],
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": [33.6, np.nan],
                       "sm__sol_pct": [np.nan, 0.09], "gpu__compute_memory_sol_pct": [np.nan, 3.01]})
    c, m, src = sol(df)
    assert c.tolist() == [87.6, 0.09] and m.tolist() == [33.6, 3.01]
    assert src.tolist() == ["ncu", "legacy"]


def test_launch_columns() -> None:
    df = pd.DataFrame({"grid": pd.array([4096, None], dtype="Int64"), "launch__grid_size": [1.0, 64.0],
                       "launch__waves_per_multiprocessor": [31.03, 0.8], "launch__sm_count": [132.0, 80.0]})
    la = launch(df)
    assert la["grid"].tolist() == [4096.0, 64.0] and la["sm_count"].tolist() == [132.0, 80.0]
