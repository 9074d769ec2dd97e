"""The op formula table (analyzer/ops/formulas.py, docs/formulas.md#op-formulas) on hand-computed cases:
each family's FLOPs and bytes from shapes, causal attention with N_Q != N_KV, GQA, what stays unmodelled."""

from __future__ import annotations

import json

import pytest

from rooftop.analyzer.ops.model import NO_SHAPES, model
from rooftop.analyzer.ops.models.attention import pairs
from rooftop.analyzer.ops.work import Work

BF16, F32 = "c10::BFloat16", "float"


def run(name: str, dims: list[object], types: list[str], concrete: list[str] | None = None,
        collective: dict[str, object] | None = None) -> Work:
    m = model(name, json.dumps(dims), json.dumps(types), json.dumps(concrete or [""] * len(dims)),
              json.dumps(collective) if collective else None)
    assert m.work is not None, m.reason
    return m.work


def test_mm_addmm_bmm_baddbmm() -> None:
    w = run("aten::mm", [[8, 16], [16, 4]], [BF16, BF16])
    assert w.flops == 2 * 8 * 4 * 16 and w.compute == "bf16"
    assert w.bytes_min == 2 * (8 * 16 + 16 * 4 + 8 * 4)
    assert w.bytes_max == 8 * 4 * 16 * (2 + 2) + 8 * 4 * 2  # every multiply-add reads both operands
    w = run("aten::addmm", [[4], [8, 16], [16, 4], [], []], [F32, F32, F32, "Scalar", "Scalar"], ["", "", "", "1", "1"])
    assert w.flops == 2 * 8 * 4 * 16 + 8 * 4 and w.compute == "fp32"
    assert w.bytes_min == 4 * (4 + 8 * 16 + 16 * 4 + 8 * 4)
    w = run("aten::bmm", [[3, 8, 16], [3, 16, 4]], [BF16, BF16])
    assert w.flops == 3 * 2 * 8 * 4 * 16
    w = run("aten::baddbmm", [[3, 8, 4], [3, 8, 16], [3, 16, 4], [], []], [BF16] * 3 + ["Scalar"] * 2)
    assert w.flops == 3 * (2 * 8 * 4 * 16 + 8 * 4)


def test_matmul_linear_scaled_and_grouped() -> None:
    assert run("aten::matmul", [[2, 1, 8, 16], [5, 16, 4]], [BF16, BF16]).flops == 10 * 2 * 8 * 4 * 16
    assert run("aten::matmul", [[16], [16, 4]], [BF16, BF16]).flops == 2 * 4 * 16  # a vector times a matrix
    w = run("aten::linear", [[2, 3, 16], [4, 16], [4]], [BF16, BF16, BF16])
    assert w.flops == 2 * 6 * 4 * 16 + 6 * 4
    fp8 = "c10::Float8_e4m3fn"
    w = run("aten::_scaled_mm", [[8, 16], [16, 4], [], [], [], [], [], []],
            [fp8, fp8, F32, F32, "", "", "Scalar", "Scalar"], ["", "", "", "", "", "", "15", "False"])
    assert w.flops == 2 * 8 * 4 * 16 and w.compute == "fp8"
    assert w.bytes_min == 8 * 16 + 16 * 4 + 8 * 4 * 2 + 2 * 4  # a BF16 output (ScalarType 15), two fp32 scales
    w = run("aten::_scaled_mm", [[8, 16], [16, 4]], [fp8, fp8], ["", ""])
    assert (w.bytes_min, w.bytes_max) == (8 * 16 + 16 * 4 + 8 * 4, 8 * 4 * 16 * 2 + 8 * 4 * 4)  # out: 1 to 4 B
    # grouped: 2-D A [sum M, K] x 3-D B [G, K, N] -> 2 * sum M * K * N
    w = run("aten::_grouped_mm", [[96, 16], [4, 16, 8], [4]], [BF16, BF16, "int"])
    assert w.flops == 2 * 96 * 16 * 8
    assert run("aten::_grouped_mm", [[4, 8, 16], [4, 16, 2]], [BF16, BF16]).flops == 4 * 2 * 8 * 2 * 16


def test_convolution_forward_transposed_backward() -> None:
    # x [2, 3, 32, 32], w [8, 3, 3, 3], stride 2, padding 1 -> y [2, 8, 16, 16]
    w = run("aten::convolution", [[2, 3, 32, 32], [8, 3, 3, 3], [8], [], [], [], [], [], []],
            [BF16, BF16, BF16] + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
            ["", "", "", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1"])
    out = 2 * 8 * 16 * 16
    assert w.flops == 2 * out * 3 * 3 * 3 + out
    assert w.bytes_min == 2 * (2 * 3 * 32 * 32 + 8 * 3 * 3 * 3 + out + 8)
    # cudnn's schema: padding before stride, no bias; groups 4 (weight [8, 1, 3, 3] on 4 channels... [8, 1]: g=4)
    w = run("aten::cudnn_convolution", [[1, 4, 10, 10], [8, 1, 3, 3], [], [], [], [], [], [], []],
            [BF16, BF16] + ["ScalarList"] * 3 + ["Scalar"] * 4, ["", "", "[0, 0]", "[1, 1]", "[1, 1]", "4", "", "", ""])
    assert w.flops == 2 * (1 * 8 * 8 * 8) * 1 * 3 * 3
    # transposed: x [1, 8, 5, 5], w [8, 4, 2, 2], stride 2 -> y [1, 4, 10, 10]; flops on the input
    w = run("aten::convolution", [[1, 8, 5, 5], [8, 4, 2, 2], [], [], [], [], [], [], []],
            [F32, F32, ""] + ["ScalarList"] * 3 + ["Scalar", "ScalarList", "Scalar"],
            ["", "", "", "[2, 2]", "[0, 0]", "[1, 1]", "True", "[0, 0]", "1"])
    assert w.flops == 2 * (8 * 5 * 5) * 4 * 2 * 2 and w.shape.endswith("y[1, 4, 10, 10]")
    # backward, grad input and weight, no bias: twice the forward's products
    w = run("aten::convolution_backward", [[2, 8, 16, 16], [2, 3, 32, 32], [8, 3, 3, 3], [], [], [], [], [], [], [], []],
            [BF16] * 3 + ["ScalarList"] * 4 + ["Scalar", "ScalarList", "Scalar", "ScalarList"],
            ["", "", "", "[8]", "[2, 2]", "[1, 1]", "[1, 1]", "False", "[0, 0]", "1", "[True, True, False]"])
    assert w.flops == 2 * (2 * out * 27)


def _count(nq: int, nkv: int, causal: bool, bottom_right: bool, left: int = -1, right: int = -1) -> int:
    """The kept pairs by brute force (the test's own count)."""
    kept = 0
    for i in range(nq):
        d = i + (nkv - nq if bottom_right else 0)
        for j in range(nkv):
            ok = (not causal or j <= d) and (left < 0 or j >= d - left) and (right < 0 or j <= d + right)
            kept += ok
    return kept


@pytest.mark.parametrize(("nq", "nkv", "causal", "br", "left", "right"), [
    (7, 7, True, False, -1, -1), (5, 9, True, False, -1, -1), (5, 9, True, True, -1, -1),
    (9, 5, True, True, -1, -1), (9, 5, True, False, -1, -1), (6, 6, False, False, -1, -1),
    (8, 8, True, True, 3, -1), (4, 10, False, True, 2, 1)])
def test_kept_pairs_are_counted_exactly(nq: int, nkv: int, causal: bool, br: bool, left: int, right: int) -> None:
    assert pairs(nq, nkv, causal, br, left, right) == _count(nq, nkv, causal, br, left, right)


def test_causal_attention_with_nq_ne_nkv_and_gqa() -> None:
    # decode-like chunk: 4 new queries against 10 keys, 32 query heads sharing 8 KV heads, flash layout (B,S,H,D)
    dims = [[2, 4, 32, 128], [2, 10, 8, 128], [2, 10, 8, 128]] + [[]] * 12
    types = [BF16] * 3 + [""] * 2 + ["Scalar"] * 10
    concrete = ["", "", "", "", "", "4", "10", "0.", "True", "False", "", "-1", "-1", "", ""]
    w = run("aten::_flash_attention_forward", dims, types, concrete)
    kept = 4 * 10 - (1 + 2 + 3)  # bottom-right: row i keeps 7 + i keys
    assert kept == 34 and w.params["pairs"] == kept
    assert w.flops == 2 * 2 * 32 * kept * (128 + 128)
    q = o = 2 * 32 * 4 * 128 * 2
    k = v = 2 * 8 * 10 * 128 * 2  # GQA: K and V bytes follow their 8 heads
    assert w.bytes_min == q + k + v + o + 2 * 32 * 4 * 4
    # the same shapes through SDPA (B,H,S,D): is_causal is top-left, rows keep 1..4 keys
    dims = [[2, 32, 4, 128], [2, 8, 10, 128], [2, 8, 10, 128], [], [], [], []]
    w = run("aten::_scaled_dot_product_efficient_attention", dims, [BF16] * 3 + ["", "Scalar", "Scalar", "Scalar"],
            ["", "", "", "", "False", "0.", "True"])
    assert w.params["pairs"] == 1 + 2 + 3 + 4 and w.flops == 2 * 2 * 32 * 10 * 256


def test_attention_backward_and_varlen() -> None:
    dims = [[1, 8, 16, 64]] * 5 + [[1, 8, 16]] + [[]] * 9
    w = run("aten::_scaled_dot_product_flash_attention_backward", dims, [BF16] * 5 + [F32] + [""] * 9,
            ["", "", "", "", "", "", "", "", "16", "16", "0.", "True", "", "", ""])
    assert w.flops == 2 * 8 * (16 * 17 // 2) * (3 * 64 + 2 * 64)
    m = model("aten::_flash_attention_forward", json.dumps([[40, 8, 64], [40, 8, 64], [40, 8, 64], [3], [3]]),
              json.dumps([BF16] * 3 + ["int", "int"]), json.dumps([""] * 5))
    assert m.work is None and "cu_seqlens" in m.reason


def test_softmax_norms_reductions_elementwise() -> None:
    n = 4 * 128
    w = run("aten::_softmax", [[4, 128], [], []], [BF16, "Scalar", "Scalar"], ["", "-1", "False"])
    assert (w.flops, w.bytes_min, w.bytes_max) == (15 * n, 2 * n * 2, 4 * n * 2)
    w = run("aten::native_layer_norm", [[4, 128], [], [128], [128], []], [BF16, "ScalarList", BF16, BF16, "Scalar"],
            ["", "[128]", "", "", "1e-05"])
    assert w.flops == 8 * n + 13 * 4 and w.bytes_min == 2 * n * 2 + 2 * 128 * 2 + 2 * 4 * 4
    w = run("_C::fused_add_rms_norm", [[4, 128], [4, 128], [128], []], [BF16] * 3 + ["Scalar"])
    assert w.flops == 5 * n + 9 * 4 and w.bytes_min == 4 * n * 2 + 128 * 2
    w = run("aten::mean", [[4, 128], [], [], []], [F32, "ScalarList", "Scalar", ""], ["", "[-1]", "True", ""])
    assert w.flops == n + 4 * 4 and w.bytes_min == (n + 4) * 4
    assert run("aten::gelu", [[n], []], [BF16, ""], ["", "'tanh'"]).flops == 16 * n
    assert run("aten::gelu", [[n], []], [BF16, ""], ["", ""]).flops == 12 * n
    assert run("aten::silu", [[n]], [BF16]).flops == 15 * n
    assert run("aten::pow", [[n], []], [F32, "Scalar"], ["", "2"]).flops == n
    w = run("aten::add", [[4, 128], [128], []], [BF16, BF16, "Scalar"], ["", "", "1"])
    assert (w.flops, w.bytes_min, w.bytes_max) == (n, (n + 128 + n) * 2, 3 * n * 2)  # broadcast re-read
    w = run("aten::add_", [[4, 128], [4, 128], []], [F32, F32, "Scalar"], ["", "", "1"])
    assert w.bytes_min == 3 * n * 4  # in place: self read and written
    assert run("aten::eq", [[n], []], ["long int", "Scalar"], ["", "1"]).bytes_min == n * 8 + n  # bool output


def test_bytes_only_ops_and_collectives() -> None:
    w = run("aten::copy_", [[4, 128], [4, 128], []], [BF16, F32, "Scalar"], ["", "", "False"])
    assert (w.flops, w.bytes_min) == (0, 4 * 128 * (2 + 4))
    w = run("aten::cat", [[[4, 1, 8], [4, 7, 8]], []], ["TensorList", "Scalar"], ["", "1"])
    assert (w.bytes_min, w.bytes_max) == (2 * 256 * 1, 2 * 256 * 8)  # the list's dtype is not recorded
    w = run("aten::embedding", [[1000, 64], [3, 5], [], [], []], [BF16, "long int", "Scalar", "Scalar", "Scalar"])
    assert (w.bytes_min, w.bytes_max) == (15 * 8 + 64 * 2 + 15 * 64 * 2, 15 * 8 + 15 * 64 * 2 + 15 * 64 * 2)
    w = run("nccl:all_reduce", [], [], [], {"Collective name": "allreduce", "In msg nelems": 1000,
                                            "Out msg nelems": 1000, "Group size": 4, "dtype": "Float"})
    assert w.bytes_min == w.bytes_max == 4000 * 2 * 3 / 4 and w.flops == 0  # nccl-tests busbw factor
    w = run("nccl:_all_gather_base", [], [], [], {"Collective name": "_allgather_base", "In msg nelems": 10,
                                                  "Out msg nelems": 80, "Group size": 8, "dtype": "BFloat16"})
    assert w.bytes_min == 160 * 7 / 8
    w = run("symm_mem::multimem_all_reduce_", [[100], [], []], [BF16, "", ""])
    assert (w.bytes_min, w.bytes_max) == (200.0, 400.0)  # ranks not recorded: n = 2 .. infinity


def test_what_stays_unmodelled_says_why() -> None:
    assert model("aten::mm", None, None, None).reason == NO_SHAPES
    assert model("vllm::moe_forward", "[[8,16]]", '["float"]', '[""]').reason == "no formula for vllm::moe_forward"
    assert model("triton_poi_fused_add_0", "[[8]]", '["float"]', '[""]').category == "other"
    m = model("aten::mm", "[[8,16],[15,4]]", '["float","float"]', '["",""]')
    assert m.work is None and "differ" in m.reason
