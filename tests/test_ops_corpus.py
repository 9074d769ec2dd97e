"""Ops on the real traces (docs/formulas.md#ops): coverage of the corpus ops traces, every GEMM / conv /
attention op's FLOPs against the test's own hand formula, traces without shapes left unknown, and the
document's ``ops`` / ``ops_coverage`` keys."""

from __future__ import annotations

import json
import math
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from rooftop.analyzer.ops.analysis import OpsAnalysis, analyze_ops
from rooftop.parsers import parse_path
from rooftop.parsers.source import ParseOptions
from tests.conftest import corpus_dir

SHAPED = [("ops", "Falconsai_nsfw_image_detection__1016002"), ("ops", "Qwen_Qwen1.5-0.5B-Chat__1016005"),
          ("ops", "gaunernst_bert-small-uncased__1016001"), ("trace", "b200__eager_trace"),
          ("trace", "negative_queue_length_values_check__rank0"), ("trace", "amd_trace__mi250")]
NO_SHAPES = ["critical_path__alexnet", "cupti_profiler__benchmark", "resnet50_autograd_api"]


@cache
def ops_of(kind: str, stem: str) -> OpsAnalysis:
    path = next(corpus_dir(kind).glob(f"*{stem}*.json.gz"))
    return analyze_ops([parse_path(str(path), ParseOptions())])


@pytest.mark.parametrize("stem", [s for k, s in SHAPED if k == "ops"])
def test_ops_traces_attribute_and_model_95_percent(stem: str) -> None:
    oa = ops_of("ops", stem)
    (cov,) = oa.coverage
    assert cov["roof_device"] == "NVIDIA H100 SXM5 80GB"
    assert cov["attributed"] >= 0.95 and cov["modelled"] >= 0.95
    rest = cov["attributed_s"] - cov["modelled_s"]  # the rest is named, with its time
    assert math.isclose(sum(u["time_s"] for u in cov["unmodelled"]), rest, abs_tol=1e-9)
    assert all(op["label"] for op in oa.ops) and len(oa.ops) == cov["signatures"]


def test_qwen_names_the_warm_up_kernels_it_cannot_attribute() -> None:
    (cov,) = ops_of("ops", "Qwen_Qwen1.5-0.5B-Chat__1016005").coverage
    assert cov["unattributed"] == [{"reason": "launch not in trace", "time_s": 0.013741827}]
    assert cov["attributed"] == 1.0 and round(cov["attributed_of_all"], 4) == 0.699
    assert cov["unmodelled"] == [{"name": "aten::arange", "reason": "no formula for aten::arange", "time_s": 1.504e-06}]


def _bhsd(shape: list[int], flash_layout: bool) -> tuple[int, int, int, int]:
    b, x, y, d = shape
    return (b, y, x, d) if flash_layout else (b, x, y, d)


def hand_flops(op: dict[str, Any]) -> int:
    """The test's own formula for the GEMM / conv / attention ops in the corpus."""
    name, dims, c = op["name"], op["input_dims"], op["concrete_inputs"] or []
    if name == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k
    if name == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return 2 * m * n * k + m * n
    if name == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return 2 * b * m * n * k
    if name == "aten::cudnn_convolution":  # (input, weight, padding, stride, dilation, groups, ...)
        x, w = dims[0], dims[1]
        pad, stride, dil = (json.loads(c[i]) for i in (2, 3, 4))
        out = [(x[2 + i] + 2 * pad[i] - dil[i] * (w[2 + i] - 1) - 1) // stride[i] + 1 for i in range(len(x) - 2)]
        return 2 * x[0] * w[0] * math.prod(out) * math.prod(w[1:])
    if name == "aten::_flash_attention_forward":  # (B, S, H, D); is_causal at 8, bottom-right
        b, hq, nq, d = _bhsd(dims[0], True)
        _, _, nkv, dv = _bhsd(dims[2], True)
        causal = c[8] == "True"
        kept = sum(min(nkv, max(0, i + nkv - nq + 1)) for i in range(nq)) if causal else nq * nkv
        return 2 * b * hq * kept * (d + dv)
    raise AssertionError(f"no hand formula for {name}: add one")


@pytest.mark.parametrize(("kind", "stem"), SHAPED)
def test_every_gemm_conv_attention_flop_count_equals_the_hand_formula(kind: str, stem: str) -> None:
    checked = 0
    for op in ops_of(kind, stem).ops:
        if op["category"] in ("gemm", "conv", "attention") and op["flops"] is not None:
            assert op["flops"] == hand_flops(op) * op["calls"], (op["name"], op["input_dims"])
            checked += 1
    assert checked or kind == "trace"


def test_causal_attention_in_the_corpus_counts_n_times_n_plus_one_over_two() -> None:
    att = [op for op in ops_of("ops", "Qwen_Qwen1.5-0.5B-Chat__1016005").ops if op["category"] == "attention"]
    assert att and all(op["params"]["causal"] and op["params"]["pairs"] == 559 * 560 // 2 for op in att)


@pytest.mark.parametrize("stem", NO_SHAPES)
def test_traces_without_shapes_come_out_unknown(stem: str) -> None:
    path = next(corpus_dir("trace").glob(f"*{stem}*.json.gz"))
    oa = analyze_ops([parse_path(str(path), ParseOptions())])
    # an op whose GPU work is only host<->device copies is decided by its copies, not by shapes (alexnet's
    # aten::copy_ of 16 pageable host-to-device copies: transfer-bound, docs/formulas.md#op-verdicts)
    link = [op for op in oa.ops if op["label"] == "transfer-bound"]
    assert all(op["top_kernels"] and all(k.startswith("Memcpy HtoD") for k in op["top_kernels"]) for op in link)
    assert all(op["flops"] is None and op["label"] == "unknown" for op in oa.ops if op not in link)
    assert all(c["modelled"] in (0.0, None) for c in oa.coverage)
    if oa.ops:  # aten ops are named as without shapes, not estimated
        shaped = [op for op in oa.ops if op["name"].startswith("aten::mm") or op["name"] == "aten::addmm"]
        assert all("record_shapes" in (op["unmodelled"] or "") for op in shaped)


def test_other_shaped_traces_name_what_is_unmodelled() -> None:
    (b200,) = ops_of("trace", "b200__eager_trace").coverage
    assert b200["roof_device"] == "NVIDIA B200" and b200["attributed"] == 1.0
    assert b200["unmodelled"][0]["name"] == "vllm::moe_forward"
    comm = [op for op in ops_of("trace", "b200__eager_trace").ops if op["category"] == "communication"]
    assert comm and all(op["label"] == "unknown" and op["bytes_min"] for op in comm)


def test_the_document_carries_ops_and_coverage() -> None:
    path = next(corpus_dir("ops").glob("*bert-small*.json.gz"))
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.analyzer.schema import validate_document

    doc = run_analysis([str(path)])
    validate_document(doc)
    assert doc["ops_coverage"][0]["modelled"] == 1.0
    assert {op["category"] for op in doc["ops"]} >= {"gemm", "attention", "norm", "elementwise"}
    assert any(f.get("source") == "ops" for f in doc["findings"])


def test_qwen_persistent_gemm_is_not_called_small_grid() -> None:
    # addmm 8944x1024x1024: 120 blocks on 132 SMs at 58.6 % of the BF16 tensor roof (docs/formulas.md#op-verdicts)
    oa = ops_of("ops", "Qwen_Qwen1.5-0.5B-Chat__1016005")
    (op,) = [o for o in oa.ops if o["name"] == "aten::addmm" and o["shape"] == "M×N×K 8944×1024×1024"]
    assert op["limiter"] != "small-grid" and op["max_saving_s"] is None
    assert any("120 blocks for 132 SMs" in e and "at most 9.1 %" in e for e in op["evidence"])
    for o in oa.ops:  # a small-grid verdict anywhere claims no more than its idle SMs
        if o["limiter"] == "small-grid":
            assert o["max_saving_s"] is not None and o["max_saving_s"] <= o["kernel_time_s"]


def test_the_optimizer_foreach_ops_are_not_placed_in_l2_from_a_guessed_dtype() -> None:
    # our H100 training capture: AdamW's _foreach_* ops over 27 tensors, 14.7 M elements (TensorList: no dtype)
    path = Path(__file__).resolve().parents[1] / "fixtures" / "capture" / "h100" / "kineto_train.json.gz"
    oa = analyze_ops([parse_path(str(path), ParseOptions())])
    foreach = [o for o in oa.ops if o["name"].startswith("aten::_foreach_")]
    assert len(foreach) >= 7
    for o in foreach:
        assert not any("fits in the" in e for e in o["evidence"]), o["name"]
        assert o["roof"].get("level") != "l2"
    assert any("28–224 MiB per call" in e for o in foreach for e in o["evidence"])
