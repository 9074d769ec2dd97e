"""CI integration of ``rooftop diff`` (docs/contract.md#ci; issue 28 item 8): exit codes per case,
JUnit XML, the GitHub job summary and annotations."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.reports.ci import junit_xml, step_summary, workflow_commands
from tests.conftest import FIXTURES

BASE = str(FIXTURES / "diff" / "baseline.raw.csv")
CAND = str(FIXTURES / "diff" / "candidate.raw.csv")  # stencil_2d +30 %, total +9 %


def _run(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str]:
    r = CliRunner().invoke(main, ["diff", *args, "-q", "--json", str(tmp_path / "d.json"),
                                  "--html", str(tmp_path / "d.html")], env=env)
    return r.exit_code, r.output


@pytest.mark.parametrize(("args", "code"), [
    ((BASE, CAND, "--fail-on", "10"), 1),                        # a regression beyond the threshold
    ((BASE, CAND, "--fail-on", "40"), 0),                        # below it
    ((BASE, CAND), 0),                                           # report only
    ((BASE, BASE, "--fail-on", "0"), 0),                         # identical runs
    ((BASE, str(FIXTURES / "nope.csv"), "--fail-on", "5"), 2),    # unusable input
    ((BASE, CAND, "--min-effect", "-3"), 2),                     # usage error
])
def test_exit_codes_per_case(tmp_path: Path, args: tuple[str, ...], code: int) -> None:
    assert _run(tmp_path, *args)[0] == code


def test_junit_names_the_regressed_series_as_a_failure(tmp_path: Path) -> None:
    junit = tmp_path / "j.xml"
    rc, _ = _run(tmp_path, BASE, CAND, "--fail-on", "10", "--junit", str(junit))
    assert rc == 1
    root = ET.fromstring(junit.read_bytes())
    suite = root.find("testsuite")
    assert suite is not None
    cases = suite.findall("testcase")
    assert root.get("tests") == str(len(cases)) == "4"  # 3 series + the total kernel time
    failed = [c for c in cases if c.find("failure") is not None]
    assert [c.get("name") for c in failed] == ["stencil_2d (grid 8192, block 128)"]
    msg = failed[0].find("failure").get("message")  # type: ignore[union-attr]
    assert msg is not None and msg.startswith("regressed: stencil_2d (grid 8192, block 128) +3")
    assert "decided by effect+significance" in msg
    total = next(c for c in cases if c.get("name") == "total kernel time")
    assert total.find("failure") is None  # +9 % < 10 %
    rc, _ = _run(tmp_path, BASE, BASE, "--fail-on", "0", "--junit", str(junit))
    assert rc == 0 and ET.fromstring(junit.read_bytes()).get("failures") == "0"


def test_github_summary_and_annotations(tmp_path: Path) -> None:
    summary = tmp_path / "summary.md"
    summary.write_text("earlier step\n", encoding="utf-8")
    env = {"GITHUB_STEP_SUMMARY": str(summary), "GITHUB_ACTIONS": "true"}
    rc, out = _run(tmp_path, BASE, CAND, "--fail-on", "10", env=env)
    assert rc == 1
    text = summary.read_text(encoding="utf-8")
    assert text.startswith("earlier step\n### rooftop diff: FAIL\n")
    assert "#### Regressions (1)" in text and "stencil\\_2d" in text
    errors = [line for line in out.splitlines() if line.startswith("::error")]
    assert errors == [line for line in out.splitlines() if line.startswith("::")]
    assert len(errors) == 1 and errors[0].startswith("::error title=rooftop diff%3A regression::stencil_2d (grid 8192")
    rc, out = _run(tmp_path, BASE, CAND, env=env)  # report only: warnings
    assert rc == 0 and [x.split(" ")[0] for x in out.splitlines() if x.startswith("::")] == ["::warning"]
    rc, out = _run(tmp_path, BASE, CAND, "--fail-on", "10", env={"GITHUB_STEP_SUMMARY": ""})
    assert "::" not in out  # not on GitHub Actions: no workflow commands


def test_workflow_commands_and_junit_escape_hostile_names() -> None:
    evil = "k%0A::error::x,\r\ny\x1b<b>&\x00"
    row = {"series": evil, "short_name": evil, "status": "regressed", "change": 0.3, "method": "mann-whitney",
           "p_adjusted": 1e-9, "decided_by": "effect+significance"}
    doc = {"kind": "diff", "verdict": {"fail": True, "threshold_pct": 5.0, "classify_pct": 5.0, "summary": "FAIL",
                                       "reason": evil, "regressions": [row], "improvements": [], "gate": "matched"},
           "series": [row]}
    (line,) = workflow_commands(doc)
    assert line.isprintable()  # no CR, LF, ESC or NUL reaches the log
    assert line.startswith("::error title=rooftop diff%3A regression::k%250A::error::x,\\r\\ny\\x1b<b>&\\x00 +30.0 %25")
    root = ET.fromstring(junit_xml(doc))
    case = root.find("testsuite/testcase")
    assert case is not None and case.get("name") == "k%0A::error::x,\r\ny\x1b<b>&\ufffd".replace("\x1b", "\ufffd")
    assert "\\<b\\>" in step_summary(doc) or "&lt;b&gt;" in step_summary(doc)


def test_nothing_judged_is_a_warning_and_a_skipped_case() -> None:
    doc = {"kind": "diff", "verdict": {"fail": False, "threshold_pct": 5.0, "summary": "nothing matched: no verdict",
                                       "reason": "nothing to compare", "regressions": [], "improvements": []}}
    assert workflow_commands(doc) == ["::warning title=rooftop diff%3A nothing judged::nothing to compare"]
    root = ET.fromstring(junit_xml(doc))
    assert root.get("skipped") == "1" and root.get("failures") == "0"
