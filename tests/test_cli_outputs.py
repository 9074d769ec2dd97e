"""Outputs a user controls (issue 27): HTML only when asked or when nothing else was, --no-html,
--csv for spreadsheets, --open, and the summary says where each file went."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from tests.conftest import FIXTURES

DEMO = str(FIXTURES / "ncu" / "demo.raw.csv")


_RUNS = iter(range(1000))


def _run(args: list[str], cwd: Path) -> tuple[int, str, str]:
    """``rooftop ARGS`` in a fresh folder under ``cwd``; exit code, output, the files it left."""
    import os

    where = cwd / f"run{next(_RUNS)}"
    where.mkdir()
    before = Path.cwd()
    os.chdir(where)
    try:
        res = CliRunner().invoke(main, args)
    finally:
        os.chdir(before)
    return res.exit_code, res.stdout + res.stderr, "\n".join(sorted(p.name for p in where.iterdir()))


def test_json_to_stdout_writes_no_html(tmp_path: Path) -> None:
    """`rooftop analyze X --json - | jq` used to overwrite rooftop-report.html silently."""
    code, out, files = _run(["analyze", DEMO, "--json", "-"], tmp_path)
    assert code == 0, out
    assert json.loads(out[: out.rindex("}") + 1])["kind"] == "analyze"
    assert files == "" and "rooftop-report.html" not in out


def test_html_by_default_only_when_nothing_else_is_asked_and_said(tmp_path: Path) -> None:
    code, out, files = _run(["analyze", DEMO], tmp_path)
    assert code == 0, out
    assert "rooftop-report.html" in files and "wrote: rooftop-report.html" in out
    code, out, files = _run(["analyze", DEMO, "--md", "r.md"], tmp_path)
    assert code == 0 and files.split() == ["r.md", "r.roofline.svg"] and "wrote: r.md" in out  # md's chart
    code, out, files = _run(["analyze", DEMO, "--md", "r.md", "--html", "r.html"], tmp_path)
    assert code == 0 and files.split() == ["r.html", "r.md", "r.roofline.svg"]


def test_no_html(tmp_path: Path) -> None:
    code, out, files = _run(["analyze", DEMO, "--no-html"], tmp_path)
    assert code == 0 and files == "" and "wrote" not in out
    code, out, _ = _run(["analyze", DEMO, "--no-html", "--html", "x.html"], tmp_path)
    assert code == 2 and "contradict" in out
    code, out, _ = _run(["diff", DEMO, DEMO, "--no-html", "--open"], tmp_path)
    assert code == 2 and "--open" in out


def test_csv_kernels_and_findings(tmp_path: Path) -> None:
    code, out, files = _run(["analyze", DEMO, "--csv", "run.csv"], tmp_path)
    assert code == 0, out
    assert files.split() == ["run.findings.csv", "run.kernels.csv"]  # no HTML: an output was asked for
    assert "run.kernels.csv" in out and "run.findings.csv" in out
    code, out, files = _run(["analyze", DEMO, "--csv", "run.csv", "--json", "run.json"], tmp_path)
    assert code == 0, out
    base = next(p.parent for p in tmp_path.glob("*/run.json"))
    doc = json.loads((base / "run.json").read_text(encoding="utf-8"))
    with (base / "run.kernels.csv").open(encoding="utf-8", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == len(doc["kernels"]) == 5
    assert {"name", "label", "limiter", "duration_s", "dram_bytes", "sol_memory_pct",
            "dram_intensity_flop_per_byte", "achieved_flop_s", "evidence"} <= set(rows[0])
    assert [r["label"] for r in rows] == [k["label"] for k in doc["kernels"]]
    with (base / "run.findings.csv").open(encoding="utf-8", newline="") as fh:
        found = list(csv.DictReader(fh))
    assert [int(f["rank"]) for f in found] == [f["rank"] for f in doc["findings"]]
    assert {"est_saving_s", "time_share_fraction", "recommendation"} <= set(found[0])


def test_open_launches_the_written_report(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    opened: list[str] = []
    monkeypatch.setattr(click, "launch", lambda url, *a, **k: opened.append(url) or 0)
    code, out, files = _run(["analyze", DEMO, "--json", "r.json", "--open"], tmp_path)
    assert code == 0, out
    assert "rooftop-report.html" in files.split()  # --open asks for the HTML
    assert len(opened) == 1 and opened[0].endswith("rooftop-report.html") and Path(opened[0]).is_absolute()
