"""The small public API: ``import rooftop``, ``rooftop.analyze``, ``rooftop.load``, ``python -m rooftop``."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import rooftop
from rooftop.analyzer.schema import validate_document
from rooftop.cli.commands import main
from rooftop.errors import InputError

from .conftest import FIXTURES, ROOT

DEMO = FIXTURES / "ncu" / "demo.raw.csv"
DMON = FIXTURES / "dcgm" / "dmon_v3_phases.txt"


def _cli_json(tmp_path: Path, *args: str) -> dict:
    out = tmp_path / "cli.json"
    res = CliRunner().invoke(main, [*args, "--json", str(out), "--html", str(tmp_path / "r.html"),
                                    "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text(encoding="utf-8"))


def test_analyze_returns_the_same_verdicts_as_the_command_line(tmp_path: Path) -> None:
    doc = rooftop.analyze(DEMO)
    validate_document(doc)
    cli = _cli_json(tmp_path, "analyze", str(DEMO))
    assert [(k["name"], k["label"], k["limiter"]) for k in doc["kernels"]] == \
        [(k["name"], k["label"], k["limiter"]) for k in cli["kernels"]]
    assert [f["title"] for f in doc["findings"]] == [f["title"] for f in cli["findings"]]


def test_analyze_chooses_the_dcgm_window_as_the_command_line_does(tmp_path: Path) -> None:
    doc = rooftop.analyze([DMON])
    cli = _cli_json(tmp_path, "analyze", str(DMON))
    assert doc["window"] == cli["window"]
    assert [w["label"] for w in doc["windows"]] == [w["label"] for w in cli["windows"]]


def test_load_round_trips_a_saved_document_and_refuses_others(tmp_path: Path) -> None:
    cli = _cli_json(tmp_path, "analyze", str(DEMO))
    assert rooftop.load(tmp_path / "cli.json") == cli
    bad = tmp_path / "other.json"
    bad.write_text('{"schema_version": 2}', encoding="utf-8")
    with pytest.raises(InputError, match="schema_version 1"):
        rooftop.load(bad)
    with pytest.raises(InputError, match="cannot read"):
        rooftop.load(tmp_path / "missing.json")
    cli["kernels"][0]["label"] = "slow"  # schema_version 1, but not a Document: refused, naming the key
    bad.write_text(json.dumps(cli), encoding="utf-8")
    with pytest.raises(InputError, match=r"\$\.kernels\[0\]\.label: expected one of"):
        rooftop.load(bad)


def test_the_package_ships_its_types() -> None:
    """PEP 561: ``py.typed`` is in the package and in its package data, so ``rooftop.analyze()``'s
    ``Document`` reaches a caller's type checker."""
    assert (ROOT / "rooftop" / "py.typed").is_file()
    data = (ROOT / "pyproject.toml").read_text(encoding="utf-8").split("[tool.setuptools.package-data]")[1]
    assert re.search(r'^"rooftop" = \[[^\]]*"py\.typed"', data.split("\n[")[0], flags=re.MULTILINE)
    from rooftop.analyzer.schema import Document

    hints = {"Document": Document}  # imported for type checkers only: `import rooftop` stays cheap
    assert eval(rooftop.analyze.__annotations__["return"], hints) is Document
    assert eval(rooftop.load.__annotations__["return"], hints) is Document


def test_python_dash_m_rooftop_is_the_command_line() -> None:
    res = subprocess.run([sys.executable, "-m", "rooftop", "--help"], cwd=ROOT,
                         capture_output=True, text=True, timeout=120, check=False)
    assert res.returncode == 0 and "analyze" in res.stdout and "fleet" in res.stdout
