"""Evidence as facts (docs/contract.md#evidence): the registry's template language, facts drawn into
the same sentences wherever they are drawn, sentences only for the longest launches, every launch's
facts in the document, findings drawing their representative's sentences from the facts."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from rooftop.analyzer.kernels import analyze as kernel_analyze
from rooftop.analyzer.kernels import evidence as ev
from rooftop.analyzer.pipeline import analyze_inputs, run_analysis
from rooftop.analyzer.schema import validate_document
from rooftop.analyzer.schema.evidence import (
    RULES,
    compile_template,
    fields,
    kernel_sentences,
    render,
    sentence,
)
from tests.conftest import FIXTURES

DEMO = FIXTURES / "ncu" / "demo.raw.csv"


# ----------------------------------------------------------------------------- the template language

@pytest.mark.parametrize(("template", "values", "drawn"), [
    ("{x}", {"x": "a"}, "a"),
    ("{x}", {}, ""),
    ("{x:%.1f}%", {"x": 12.345}, "12.3%"),
    ("{x:%.1f}", {"x": None}, "?"),
    ("{x:si:B/s}", {"x": 3.35e12}, "3.35 TB/s"),
    ("{x:si:B/s}", {"x": None}, "n/a"),
    ("{x:si:s}", {"x": 2e-6}, "2 µs"),
    ("{x:si:B}", {"x": 999.96e9}, "1 TB"),           # rounds to the next prefix, not "1e+03 GB"
    ("a{[, {x:%.0f}]}b", {"x": 3.0}, "a, 3b"),
    ("a{[, {x:%.0f}]}b", {"x": None}, "ab"),
    ("{[{c?}yes|no]}", {"c": True}, "yes"),
    ("{[{c?}yes|no]}", {"c": False}, "no"),
    ("{[{c?}{x:%.1f}|no]}", {"c": True, "x": None}, "?"),  # a ?-field decides alone
    ("{[{x:%.1f}|none]}", {"x": 0.0}, "0.0"),           # zero is present
    ("{,[a {x:%.0f}][b {y:%.0f}][c {z:%.0f}]}", {"x": 1.0, "z": 3.0}, "a 1, c 3"),
    ("{[; {,[a {x:%.0f}][b {y:%.0f}]}]}", {}, ""),
    ("{[({,[a {x:%.0f}]})|no FLOPs]}", {}, "no FLOPs"),
    ("{[{c?} [legacy\\]]}", {"c": True}, " [legacy]"),
])
def test_template_language(template: str, values: dict[str, object], drawn: str) -> None:
    assert render(template, values) == drawn


def test_every_rule_compiles_and_names_its_units_and_sources() -> None:
    for rid, rule in RULES.items():
        names = fields(rule["template"])
        assert set(rule["units"]) <= names, rid
        assert set(rule["sources"]) <= names, rid
    with pytest.raises(ValueError):
        compile_template("{[unclosed")


# ----------------------------------------------------------------------------- facts -> sentences

def _kernel(**metrics: float) -> pd.DataFrame:
    return pd.DataFrame([{"input": "x", "index": 0, "name": "k", **metrics}])


def test_a_hand_built_kernel_gets_its_facts_and_their_sentences() -> None:
    """2 µs, SOL 1 % / 2 %, 16 blocks, 0.01 waves: NCU's Small Grid verdict, launch-bound; no bytes
    or FLOPs: the not-in-export fact names them (docs/formulas.md#kernel-labels)."""
    ka = kernel_analyze.analyze_kernels(_kernel(
        duration_s=2e-6, **{"sm__throughput.avg.pct_of_peak_sustained_elapsed": 1.0,
                            "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 2.0,
                            "launch__waves_per_multiprocessor": 0.01, "launch__grid_size": 16.0}),
        pd.DataFrame())
    assert ka.evidence is not None
    facts = {g["rule"]: (g["params"], {k: v[0] for k, v in g["values"].items()}) for g in ka.evidence.document()}
    assert facts["sol-verdict"][1] == {"compute_pct": 1.0, "memory_pct": 2.0, "verdict": "Small Grid",
                                       "legacy": False}
    assert facts["launch"] == ({"launch_us": pytest.approx(5.0)}, {"duration_s": 2e-6, "median": False})
    missing = facts["not-in-export"][1]
    assert missing == {"l1_bytes": True, "l2_bytes": True, "dram_bytes": True, "flops": True,
                       "tensor_flops": False, "sol": False, "duration": False}
    assert sentence("launch", {**facts["launch"][0], **facts["launch"][1]}).startswith("Duration 2 µs < 5 µs")
    drawn = ka.results.at[0, "evidence"]
    assert drawn == ka.evidence.sentences([0])[0]
    assert "Not in the export, so not evaluated: L1 bytes, L2 bytes, DRAM bytes, FLOP counters" in drawn


def test_the_document_carries_facts_that_draw_its_sentences() -> None:
    doc = run_analysis([str(DEMO)])
    validate_document(doc)
    facts, rules = doc["evidence_facts"], doc["evidence_rules"]
    assert {g["rule"] for g in facts} == set(rules) and set(rules) <= set(RULES)
    for pos, k in enumerate(doc["kernels"]):
        assert k["evidence"], pos  # a small export: every launch is drawn
        assert kernel_sentences(facts, pos) == k["evidence"]
        assert kernel_sentences(facts, pos, rules) == k["evidence"]  # from the document's own templates
    back = json.loads(json.dumps(facts))
    assert [kernel_sentences(back, i) for i in range(len(doc["kernels"]))] == [k["evidence"] for k in doc["kernels"]]


def test_sentences_only_for_the_longest_launches(monkeypatch: pytest.MonkeyPatch) -> None:
    """Above SENTENCE_KERNELS launches only the longest get sentences in ``kernels[].evidence``; every
    launch keeps its facts, and a finding whose representative is not among them draws its lines
    from the facts."""
    full = run_analysis([str(DEMO)])
    monkeypatch.setattr(kernel_analyze, "shown", lambda d: ev.shown(d, 2))
    doc = run_analysis([str(DEMO)])
    validate_document(doc)
    dur = [k["duration_s"] or 0.0 for k in doc["kernels"]]
    longest = sorted(range(len(dur)), key=lambda i: -dur[i])[:2]
    for pos, k in enumerate(doc["kernels"]):
        assert k["evidence"] == (full["kernels"][pos]["evidence"] if pos in longest else [])
        assert kernel_sentences(doc["evidence_facts"], pos) == full["kernels"][pos]["evidence"]
    assert [f["evidence"] for f in doc["findings"]] == [f["evidence"] for f in full["findings"]]


def test_failed_profiles_have_one_fact() -> None:
    facts = ev.Facts(3)
    facts.add("launch", [True, True, False], params={"launch_us": 5.0}, duration_s=[1e-6, 2e-6, 3e-6])
    facts.add("nothing-decides", [False, True, True])
    facts.only([False, True, False], "profile-failed")
    drawn = facts.sentences(range(3))
    assert drawn[0] == [render(RULES["launch"]["template"], {"launch_us": 5.0, "duration_s": 1e-6})]
    assert drawn[1] == [RULES["profile-failed"]["template"]]
    assert drawn[2] == [RULES["nothing-decides"]["template"]]
    with pytest.raises(KeyError, match=r"not in analyzer/schema/evidence\.py"):
        facts.add("no-such-rule", [True, True, True])


def test_analyze_inputs_keeps_the_facts() -> None:
    ai = analyze_inputs([str(DEMO)])
    assert ai.evidence is not None and ai.evidence.n == len(ai.results)
    assert [ai.evidence.sentences([i])[i] for i in range(len(ai.results))] == list(ai.results["evidence"])
