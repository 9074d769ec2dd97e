"""``-k/--kernel REGEX`` (issue 27): only the matching ncu launches are analysed, as if the profile held
only them, and the document says so; ``rooftop show -k`` prints every fact, ceiling, rule and sentence
behind a launch's verdict (docs/formulas.md#kernel-filter)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

import rooftop
from rooftop.analyzer.schema.evidence import kernel_sentences
from rooftop.cli.commands import main
from rooftop.reports.kernel_detail import chosen, detail_text
from tests.conftest import FIXTURES, corpus_dir

DEMO = FIXTURES / "ncu" / "demo.raw.csv"


def test_filter_keeps_the_matching_launches_and_their_own_analysis() -> None:
    whole: Any = rooftop.analyze(DEMO)
    some: Any = rooftop.analyze(DEMO, kernel="gemv|fill")
    assert sorted(k["name"].split("(")[0] for k in some["kernels"]) == ["fill_kernel", "gemv_kernel"]
    by_name = {k["name"]: k for k in whole["kernels"]}
    for k in some["kernels"]:  # a launch's own label, numbers and sentences do not depend on the others
        w = by_name[k["name"]]
        assert (k["label"], k["limiter"], k["flops"], k["bytes"]) == (w["label"], w["limiter"], w["flops"], w["bytes"])
    total = sum(k["duration_s"] for k in some["kernels"])
    gemv = next(f for f in some["findings"] if f["family"].startswith("gemv_kernel"))
    assert gemv["time_share"] == pytest.approx(next(
        k["duration_s"] for k in some["kernels"] if k["name"].startswith("gemv")) / total)
    [note] = [n for n in some["lint"] if n["code"] == "kernel-filter"]
    assert note["message"].startswith("-k 'gemv|fill': 2 of 5 kernel launches analysed")
    assert not [n for n in whole["lint"] if n["code"] == "kernel-filter"]


def test_ncu_regex_prefix_and_the_errors() -> None:
    assert len(rooftop.analyze(DEMO, kernel="regex:^void gemm_tc")["kernels"]) == 1
    with pytest.raises(rooftop.InputError, match=r"no kernel name matches -k 'nomatch'.*gemv_kernel"):
        rooftop.analyze(DEMO, kernel="nomatch")
    with pytest.raises(rooftop.InputError, match="has no kernels for -k"):
        rooftop.analyze(FIXTURES / "dcgm" / "dmon_v4_phases.txt", kernel="x", start="2025-01-01T00:00:00Z")
    res = CliRunner().invoke(main, ["analyze", str(DEMO), "-k", "(", "--no-html"])
    assert res.exit_code == 2 and "'(' is not a regular expression" in res.output and "Traceback" not in res.output


def test_cli_summary_says_the_filter(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["analyze", str(DEMO), "--kernel", "gemv", "--json", str(tmp_path / "a.json")],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    text = " ".join(ln.strip() for ln in res.output.splitlines())
    assert "-k 'gemv': 1 of 5 kernel launches analysed" in text and "kernels: 1 launch," in text


def test_show_prints_every_fact_ceiling_rule_and_sentence() -> None:
    doc: Any = rooftop.analyze(DEMO, kernel="vectorized_elementwise")
    [k] = doc["kernels"]
    text = detail_text(doc, chosen(doc, 3), width=100)
    lines = text.splitlines()
    assert max(map(len, lines)) <= 100
    flat = " ".join(ln.strip() for ln in lines)
    assert f"kernel 1 of 1: {k['name']}" in flat and f"family: {k['family']}" in flat
    assert f"verdict: {k['label']} ({k['limiter']}), basis ncu-sol" in flat
    assert "finding 1 [" in flat and "est. saving 131 µs" in flat
    for key in doc["devices"][0]["ceilings"]:  # every ceiling of the device it was judged against
        assert f"{key}: " in flat
    for s in kernel_sentences(doc["evidence_facts"], 0, doc["evidence_rules"]):  # every sentence
        assert "-> " + s in flat
    for group in doc["evidence_facts"]:  # every fact, each value named
        assert f"[{group['rule']}]" in flat
        assert all(f"{name} = " in flat for name in group["values"])
    assert all(f"{key}: " in flat for key in k["extra"])


def test_show_command_longest_first_and_limit() -> None:
    res = CliRunner().invoke(main, ["show", str(DEMO), "-k", ".", "--limit", "2"], env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    lines = res.output.splitlines()
    assert max(map(len, lines)) <= 80
    heads = [ln for ln in lines if ln.startswith("kernel ")]
    assert [h.split(": ", 1)[1][:12] for h in heads] == ["void gemm_tc", "void at::nat"]  # 1.21 ms, 1.09 ms
    assert "… and 3 more matching launch(es)" in res.output
    missing = CliRunner().invoke(main, ["show", str(DEMO)])
    assert missing.exit_code == 2 and "-k" in missing.output


def test_show_on_a_corpus_rep() -> None:
    rep = corpus_dir("ncu") / "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__sample_report.ncu-rep"
    if not rep.exists():
        pytest.skip("sample_report.ncu-rep not in the corpus")
    doc: Any = rooftop.analyze(rep, kernel=".")
    p = chosen(doc, 1)[0]
    text = detail_text(doc, [p], width=80)
    assert max(map(len, text.splitlines())) <= 80
    flat = " ".join(ln.strip() for ln in text.splitlines())
    for r in doc["kernels"][p]["ncu_rules"]:
        assert f"{r['rule']}: {r['title']}" in flat


def test_show_reads_a_saved_analysis(tmp_path: Path) -> None:
    """`rooftop show saved.json -k NAME`: the launches of an analysis saved with --json, shown as
    they were analysed (all five launches were, so the finding's share is of all of them)."""
    saved = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(DEMO), "--json", str(saved), "-q"])
    assert res.exit_code == 0, res.output
    doc: Any = rooftop.load(saved)
    shown = CliRunner().invoke(main, ["show", str(saved), "-k", "gemv"])
    assert shown.exit_code == 0, shown.output
    p = next(i for i, k in enumerate(doc["kernels"]) if k["name"].startswith("gemv"))
    assert shown.output.startswith(f"kernel {p + 1} of 5: gemv_kernel")
    for s in kernel_sentences(doc["evidence_facts"], p, doc["evidence_rules"]):
        assert "-> " + s in shown.output
    assert "more matching" not in shown.output
    none = CliRunner().invoke(main, ["show", str(saved), "-k", "nomatch"])
    assert none.exit_code == 2 and "no kernel name matches -k 'nomatch'" in none.output
