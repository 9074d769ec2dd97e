"""``--device`` that agrees with the export decides the device: no ambiguity lint, evidence says so.

Rule: docs/formulas.md#ceilings (the --device override; the export's CC and SM count only check it).
"""

from __future__ import annotations

import pytest

from rooftop.analyzer.pipeline import analyze_inputs
from tests.conftest import corpus_dir

AVERY = "AveryClapp__ESMM-Research__metrics.csv"


def _avery() -> str:
    return str(corpus_dir("ncu") / AVERY)


@pytest.mark.corpus
def test_device_option_that_agrees_is_stated_not_ambiguous() -> None:
    ai = analyze_inputs([_avery()], device="NVIDIA A10G")
    codes = {item["code"] for item in ai.lint}
    assert not codes & {"device-ambiguous", "device-assumed", "device-unknown", "device-contradiction"}
    for ev in ai.results["evidence"]:
        assert not any("Device not identified" in e for e in ev)
        assert any("Device NVIDIA A10G from --device, which agrees with the export's CC 8.6" in e for e in ev)
    assert set(ai.results["device"]) == {"NVIDIA A10G"}
    assert ai.results["ceilings"].str.startswith("NVIDIA A10G|builtin").all()


@pytest.mark.corpus
def test_device_option_that_contradicts_stays_linted() -> None:
    ai = analyze_inputs([_avery()], device="NVIDIA H100 SXM5 80GB")
    [item] = [i for i in ai.lint if i["code"] == "device-contradiction"]
    assert "CC 8.6 in the export, 9.0 for NVIDIA H100 SXM5 80GB" in item["message"]
    assert not [i for i in ai.lint if i["code"] == "device-ambiguous"]
    assert all(any("contradicts the export" in e for e in ev) for ev in ai.results["evidence"])


@pytest.mark.corpus
def test_no_device_option_is_still_ambiguous() -> None:
    ai = analyze_inputs([_avery()])
    [item] = [i for i in ai.lint if i["code"] == "device-ambiguous"]
    assert "CC 8.6 fits" in item["message"] and "NVIDIA A10G" in item["message"]
