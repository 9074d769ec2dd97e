"""NVIDIA's rule text reaches the kernels' ``ncu_rules`` as plain words and is quoted by findings."""

from __future__ import annotations

from rooftop.analyzer.kernels.ncu_results import ncu_plain_text

from .conftest import CORPUS


def test_link_markup_becomes_the_link_name() -> None:
    raw = ("Inspect the @section:WarpStateStats:Warp State Statistics@ and see the\n  @url:CUDA Best "
           "Practices Guide:https://docs.nvidia.com/cuda/x.html#y@ for @metric:sm__warps_active.avg@.")
    assert ncu_plain_text(raw) == ("Inspect the Warp State Statistics and see the CUDA Best Practices Guide "
                                   "for sm__warps_active.avg.")


def test_finding_quotes_nvidias_rule_text_from_the_report() -> None:
    import pytest

    path = CORPUS / "ncu" / "armleth__cuda-mlp-inference__report.ncu-rep"
    if not path.is_file():
        pytest.skip("corpus absent")
    pytest.importorskip("ncu_report")
    import rooftop

    doc = rooftop.analyze([path])
    rules = doc["kernels"][0]["ncu_rules"]
    assert any(r.get("message", "").startswith("Every scheduler is capable of issuing") for r in rules)
    assert all("@section:" not in r.get("message", "") for r in rules)
    rec = doc["findings"][0]["recommendation"]
    assert "NVIDIA's rule text: “The difference between calculated theoretical (100.0%)" in rec
