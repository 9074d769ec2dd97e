"""Kernel family keys: normalised base name + launch configuration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.kernels.families import (
    assign_families,
    base_name,
    display_name,
    family_key,
    family_table,
    qualified_name,
)


@pytest.mark.parametrize(("name", "expected"), [
    # return type, template args and argument list dropped
    ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "at::detail::Array<char *, 1>>(int, T2, T3)", "at::native::vectorized_elementwise_kernel"),
    # lambda inside template args, nested parentheses
    ("void at::native::elementwise_kernel<128, 2, at::native::gpu_kernel_impl<at::native::AddFunctor<float>>"
     "(at::TensorIteratorBase &, const T1 &)::[lambda(int) (instance 1)]>(int, T3)",
     "at::native::elementwise_kernel"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
    ("vectorized_elementwise_kernel", "vectorized_elementwise_kernel"),
    # both anonymous-namespace spellings give the same key
    ("void (anonymous namespace)::softmax_warp_forward<float, float, float, 10, false>(T2 *, const T1 *, int)",
     "(anonymous)::softmax_warp_forward"),
    ("void <unnamed>::softmax_warp_forward<float>(float*)", "(anonymous)::softmax_warp_forward"),
    # ncu console's simplified names lose the leading '<' (corpus: AlpriElse silu console log)
    ("void unnamed>::gemm_naive_kernel(const float *, float *, int)", "(anonymous)::gemm_naive_kernel"),
    # Itanium-mangled names
    ("_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEEEEviT0_",
     "at::native::vectorized_elementwise_kernel"),
    ("_Z6kernelPfi", "kernel"),
    ("cutlass::Kernel2<cutlass_80_wmma_tensorop_s161616gemm_f16_32x32_128x1_tn_align8>(Params)",
     "cutlass::Kernel2"),
    ("void foo<(bool)1, (x > 2)>(int)", "foo"),
    ("float Bar::operator()(int) const", "Bar::operator()"),
    ("", "?"),
])
def test_base_name(name: str, expected: str) -> None:
    assert base_name(name) == expected


def test_template_arguments_and_config_both_split_families() -> None:
    df = pd.DataFrame({
        "name": ["void k<float>(float*)", "void k<double>(double*)", "void k<float>(float*)", "void k<float>(float*)"],
        "grid": [10, 10, 20, np.nan], "block": [128, 128, 128, np.nan],
    })
    fam = assign_families(df)
    assert fam.tolist() == ["k<float> (grid 10, block 128)", "k<double> (grid 10, block 128)",
                            "k<float> (grid 20, block 128)", "k<float>"]
    assert fam.index.equals(df.index)
    assert family_key(df).tolist() == fam.tolist()


@pytest.mark.parametrize(("name", "expected"), [
    ("void InitializeMatrix_kernel<__half, (bool)1>(T1 *, int, int, int)", "InitializeMatrix_kernel<__half, (bool)1>"),
    ("void cutlass::Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8>(T1::Params)",
     "cutlass::Kernel<cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8>"),
    ("void (anonymous namespace)::softmax_warp_forward<float, 10>(T2 *, int)",
     "(anonymous)::softmax_warp_forward<float, 10>"),
    ("void foo<(bool)1, (x > 2)>(int)", "foo<(bool)1, (x > 2)>"),
    ("float Bar::operator()(int) const", "Bar::operator()"),
    ("ampere_sgemm_128x64_nn", "ampere_sgemm_128x64_nn"),
    ("void  k<int,\tfloat>( int )", "k<int, float>"),
    ("_Z6kernelPfi", "_Z6kernelPfi"),
    ("", "?"),
])
def test_qualified_name_keeps_template_arguments(name: str, expected: str) -> None:
    assert qualified_name(name) == expected


def test_family_split_when_label_or_limiter_differ() -> None:
    df = pd.DataFrame({"name": ["k<1>(int)"] * 3 + ["j(int)"] * 2, "grid": 8, "block": 128,
                       "label": ["memory-bound", "overhead-bound", "memory-bound", "compute-bound", "compute-bound"],
                       "limiter": ["dram", "launch", "dram", "fp32", "fp32"]})
    fam = assign_families(df)
    assert fam.tolist() == ["k<1> (grid 8, block 128) [memory-bound dram]",
                            "k<1> (grid 8, block 128) [overhead-bound launch]",
                            "k<1> (grid 8, block 128) [memory-bound dram]",
                            "j (grid 8, block 128)", "j (grid 8, block 128)"]
    # the identity used by diff matching does not depend on the verdict
    assert family_key(df).tolist()[:3] == ["k<1> (grid 8, block 128)"] * 3


def test_family_table_hand_computed() -> None:
    # two launches of k (one a per-kernel summary row standing for 3 invocations) and one of j
    df = pd.DataFrame({
        "name": ["k(int)", "k(int)", "j(int)"], "grid": 4, "block": 64, "device": "X",
        "label": "memory-bound", "limiter": "dram", "invocations": [1, 3, 1],
        "duration_s": [1e-3, 2e-3, 1e-3], "flops": [1e9, 2e9, np.nan],
        "bytes_l1": np.nan, "bytes_l2": [4e9, 8e9, 1e9], "bytes_dram": [2e9, np.nan, 1e9],
        "attainable_flops_s": [2e12, 4e12, np.nan], "nvtx": ["a > b", "a > b", None],
    })
    t = family_table(df)
    assert t["family"].tolist() == ["k (grid 4, block 64)", "j (grid 4, block 64)"]
    k = t.iloc[0]
    assert k["launches"] == 4 and k["kernels"] == [0, 1] and k["representative"] == 1
    assert k["time_s"] == pytest.approx(1e-3 + 3 * 2e-3)
    assert k["time_share"] == pytest.approx(7e-3 / 8e-3)
    assert k["flops"] == pytest.approx(1e9 + 6e9)
    assert k["achieved_flops_s"] == pytest.approx(7e9 / 7e-3)
    assert k["intensity_l2"] == pytest.approx(7e9 / (4e9 + 24e9))
    assert k["intensity_dram"] == pytest.approx(1e9 / 2e9)  # only the launch with both numbers
    assert np.isnan(k["intensity_l1"]) and np.isnan(k["bytes_l1"])
    assert k["attainable_flops_s"] == pytest.approx((2e12 * 1e-3 + 4e12 * 6e-3) / 7e-3)
    assert k["nvtx"] == ["a > b"] and k["label"] == "memory-bound" and k["device"] == "X"
    j = t.iloc[1]
    assert np.isnan(j["flops"]) and np.isnan(j["achieved_flops_s"]) and j["nvtx"] == []
    assert list(t.columns)[:8] == ["family", "key", "name", "device", "grid", "block", "label", "limiter"]
    assert len(family_table(df.iloc[:0])) == 0


def test_missing_config_columns_and_empty() -> None:
    assert assign_families(pd.DataFrame({"name": ["void a<1>()"]})).tolist() == ["a<1>"]
    assert len(assign_families(pd.DataFrame({"name": []}))) == 0


def test_hostile_names_never_raise() -> None:
    names = ["<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>", "((((", ">>>>", "a<" * 3000]
    fam = assign_families(pd.DataFrame({"name": names, "grid": 1, "block": 32}))
    assert fam.notna().all() and (fam.str.len() > 0).all()


def test_display_name_shortens_long_keys_and_keeps_config() -> None:
    key = "::".join(f"ns{i}" for i in range(40)) + "::kernel (grid 1, block 2)"
    short = display_name(key, 60)
    assert len(short) <= 60 and short.endswith("::kernel (grid 1, block 2)") and short.startswith("…")
    assert display_name("short (grid 1, block 2)") == "short (grid 1, block 2)"
