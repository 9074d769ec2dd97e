"""Kernel family keys: normalised base name + launch configuration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.families import assign_families, base_name, display_name


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


def test_same_kernel_different_templates_share_base_but_config_splits() -> None:
    df = pd.DataFrame({
        "name": ["void k<float>(float*)", "void k<double>(double*)", "void k<float>(float*)", "void k<float>(float*)"],
        "grid": [10, 10, 20, np.nan], "block": [128, 128, 128, np.nan],
    })
    fam = assign_families(df)
    assert fam.tolist() == ["k (grid 10, block 128)", "k (grid 10, block 128)", "k (grid 20, block 128)", "k"]
    assert fam.index.equals(df.index)


def test_missing_config_columns_and_empty() -> None:
    assert assign_families(pd.DataFrame({"name": ["void a<1>()"]})).tolist() == ["a"]
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
