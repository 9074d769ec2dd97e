"""Dense tensor peaks from an export (analyzer/ceilings/per_kernel.dense_peak_per_cycle,
docs/formulas.md#ceilings): hand-built rows shaped like a real H100 raw page."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.ceilings.per_kernel import dense_peak_per_cycle

AGG = "sm__ops_path_tensor_src_bf16_dst_fp32.sum.peak_sustained"
HGMMA_OFF = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"
HGMMA_ON = "sm__ops_path_tensor_op_hgmma_src_bf16_dst_fp32_sparsity_on.sum.peak_sustained"
HMMA_OFF = "sm__ops_path_tensor_op_hmma_src_bf16_dst_fp32_sparsity_off.sum.peak_sustained"


def test_the_fastest_dense_path_not_the_sparse_aggregate() -> None:
    df = pd.DataFrame({AGG: [1_081_344.0], HGMMA_ON: [1_081_344.0], HGMMA_OFF: [540_672.0],
                       HMMA_OFF: [360_448.0], "cc": ["9.0"]})
    peak, metric = dense_peak_per_cycle(df, "src_bf16_dst_fp32")
    assert peak.tolist() == [540_672.0] and metric.tolist() == [HGMMA_OFF]


def test_an_unqualified_aggregate_alone_is_not_trusted_from_hopper_on() -> None:
    df = pd.DataFrame({AGG: [1_081_344.0, 1_024.0], "cc": ["9.0", "7.5"]})
    peak, _ = dense_peak_per_cycle(df, "src_bf16_dst_fp32")
    assert np.isnan(peak[0]) and peak[1] == 1_024.0  # Turing has no sparse path: its aggregate is dense


def test_qualified_fp64_and_int1_aggregates_keep_their_own_peak() -> None:
    df = pd.DataFrame({"sm__ops_path_tensor_src_fp8_sparsity_off.sum.peak_sustained": [1_081_344.0],
                       "sm__ops_path_tensor_src_fp64.sum.peak_sustained": [33_792.0], "cc": ["9.0"]})
    assert dense_peak_per_cycle(df, "src_fp8_sparsity_off")[0].tolist() == [1_081_344.0]
    assert dense_peak_per_cycle(df, "src_fp64")[0].tolist() == [33_792.0]
