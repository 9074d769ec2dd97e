"""rooftop's op formulas against TraceLens's own reference CSVs for the corpus H100 traces (a second
opinion, not the truth): where both model an op they agree, and each difference is the one
docs/formulas.md#op-tracelens explains."""

from __future__ import annotations

import ast
import csv
import json
import math
from typing import Any

import pytest

from rooftop.analyzer.ops.model import model
from rooftop.analyzer.ops.models.attention import LSE_BYTES
from tests.conftest import corpus_dir


def _js(text: str) -> str:
    def lists(v: Any) -> Any:
        return [lists(x) for x in v] if isinstance(v, (tuple, list)) else v
    return json.dumps(lists(ast.literal_eval(text)))


def _rows() -> list[tuple[str, dict[str, str]]]:
    out = []
    for d in sorted(corpus_dir("ops").glob("*_perf_report_csvs")):
        with (d / "unified_perf_summary.csv").open(encoding="utf-8", newline="") as fh:
            out += [(d.name.split("__")[-2], r) for r in csv.DictReader(fh) if r["has_perf_model"] == "True"]
    return out


def _ours(r: dict[str, str]) -> Any:
    m = model(r["name"], _js(r["Input Dims"]), _js(r["Input type"]), _js(r["Concrete Inputs"]))
    assert m.work is not None, (r["name"], m.reason)
    return m.work


def _tl(r: dict[str, str]) -> tuple[float, float]:
    return float(r["GFLOPS"]) * 1e9, float(r["Data Moved (MB)"]) * 2**20  # its "MB" are MiB


def test_every_op_tracelens_models_is_modelled_by_rooftop_too() -> None:
    rows = _rows()
    assert len(rows) > 40
    for _, r in rows:
        _ours(r)


@pytest.mark.parametrize("category", ["GEMM", "elementwise"])
def test_gemm_and_unit_weight_elementwise_agree_exactly(category: str) -> None:
    checked = 0
    for _, r in _rows():
        if r["op category"] != category or r["name"] in ("aten::copy_", "aten::silu", "aten::rsqrt", "aten::pow"):
            continue
        w, (flops, nbytes) = _ours(r), _tl(r)
        assert math.isclose(w.flops, flops, rel_tol=1e-6), r["name"]
        assert math.isclose(w.bytes_min, nbytes, rel_tol=1e-6), r["name"]
        checked += 1
    assert checked >= 10


def test_attention_differs_only_by_exact_causal_pairs_and_the_softmax_statistic() -> None:
    rows = [r for _, r in _rows() if r["op category"] == "SDPA_fwd"]
    assert len(rows) == 3
    for r in rows:
        w, (flops, nbytes) = _ours(r), _tl(r)
        p = w.params
        n = p["N_q"]
        ratio = (n + 1) / n if p["causal"] else 1.0  # N(N+1)/2 kept pairs against TraceLens's N²/2
        assert math.isclose(w.flops / flops, ratio, rel_tol=1e-6)
        lse = p["B"] * p["H_q"] * n * LSE_BYTES
        assert math.isclose(w.bytes_min - lse, nbytes, rel_tol=1e-6)


def test_convolution_differs_by_the_bias_tracelens_leaves_out() -> None:
    (r,) = [r for _, r in _rows() if r["op category"] == "CONV_fwd"]
    w, (flops, nbytes) = _ours(r), _tl(r)
    out = json.loads(_js(r["Input Dims"]))
    channels = out[1][0]
    y = 4 * channels * 14 * 14  # [4, 768, 14, 14]
    assert math.isclose(w.flops - y, flops, rel_tol=1e-6)
    assert math.isclose(w.bytes_min - channels * 2, nbytes, rel_tol=1e-6)


def test_layer_norm_flops_weighted_bytes_within_one_percent() -> None:
    rows = [r for _, r in _rows() if r["op category"] == "NORM_fwd"]
    assert rows
    for r in rows:
        w, (flops, nbytes) = _ours(r), _tl(r)
        assert 1.55 < w.flops / flops < 1.65  # 8 per element + 13 per row against 5 per element + 6 per channel
        assert abs(w.bytes_min / nbytes - 1) < 0.012
