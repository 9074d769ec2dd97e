"""``rooftop diff`` end to end through click: exit codes, outputs, saved analyses, real exports."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from tests.conftest import FIXTURES, corpus_dir, manifest

DIFF = FIXTURES / "diff"
BASE = DIFF / "baseline.raw.csv"
CAND = DIFF / "candidate.raw.csv"


def rooftop(*args: str | Path) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_identical_inputs_exit_0(tmp_path: Path) -> None:
    out = tmp_path / "d.json"
    res = rooftop("diff", BASE, BASE, "--fail-on", "1", "--json", out, "--html", tmp_path / "d.html")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["kind"] == "diff" and doc["verdict"]["fail"] is False
    assert len(doc["pairs"]) == 36 and not doc["unmatched"]["new"] and not doc["unmatched"]["vanished"]
    assert all(p["change"]["duration"] == 0 for p in doc["pairs"])


def test_regressed_candidate_exits_1_and_names_the_family(tmp_path: Path) -> None:
    out, md, html = tmp_path / "d.json", tmp_path / "d.md", tmp_path / "d.html"
    res = rooftop("diff", BASE, CAND, "--fail-on", "10", "--json", out, "--md", md, "--html", html)
    assert res.exit_code == 1, res.output
    assert "stencil_2d" in res.output and "FAIL" in res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    [reg] = doc["verdict"]["regressions"]
    assert reg["family"].startswith("stencil_2d") and reg["method"] == "mann-whitney"
    assert 0.25 < reg["change"] < 0.35 and reg["p_adjusted"] < 0.05
    assert "DRAM bytes +38 %" in reg["explanation"] and "moved left on the roofline" in reg["explanation"]
    fam = {f["family"].split(" ")[0]: f for f in doc["families"]}
    assert fam["stencil_2d"]["change"]["bytes"]["dram"] == pytest.approx(0.38)
    assert {f["status"] for k, f in fam.items() if k != "stencil_2d"} <= {"within threshold", "not significant"}
    assert "stencil\\_2d" in md.read_text(encoding="utf-8")
    page = html.read_text(encoding="utf-8")
    assert "Roofline: baseline → candidate" in page and '<g class="arrow"' in page  # static SVG arrows


def test_threshold_above_the_change_exits_0() -> None:
    res = rooftop("diff", BASE, CAND, "--fail-on", "50", "--html", "", "-q")
    assert res.exit_code == 0, res.output


def test_without_fail_on_never_fails(tmp_path: Path) -> None:
    res = rooftop("diff", BASE, CAND, "--html", tmp_path / "d.html")
    assert res.exit_code == 0, res.output
    assert "report only" in res.output


@pytest.mark.parametrize("make", ["missing", "garbage", "dcgm-only", "negative"])
def test_unusable_input_exits_2_with_one_line(tmp_path: Path, make: str) -> None:
    args: list[str | Path]
    if make == "missing":
        args = [tmp_path / "nope.csv", BASE]
    elif make == "garbage":
        bad = tmp_path / "bad.csv"
        bad.write_bytes(b"\x00\x01 not a profile \xff\n")
        args = [BASE, bad]
    elif make == "dcgm-only":
        dcgm = sorted((FIXTURES / "dcgm").glob("dmon*.txt"))
        if not dcgm:
            pytest.skip("no DCGM fixture")
        args = [dcgm[0], BASE]
    else:
        args = [BASE, BASE, "--fail-on", "-5"]
    res = rooftop("diff", *args, "--html", tmp_path / "d.html")
    assert res.exit_code == 2, res.output
    assert "Traceback" not in res.output
    assert len([ln for ln in res.output.splitlines() if ln.strip()]) == 1


def test_saved_analyses_and_folders(tmp_path: Path) -> None:
    a_json = tmp_path / "base.json"
    res = rooftop("analyze", BASE, "--json", a_json, "--html", tmp_path / "a.html", "-q")
    assert res.exit_code == 0, res.output
    # saved analysis vs itself, and vs the regressed export
    assert rooftop("diff", a_json, a_json, "--fail-on", "1", "--html", "", "-q").exit_code == 0
    res = rooftop("diff", a_json, CAND, "--fail-on", "10", "--html", "", "-q")
    assert res.exit_code == 1, res.output
    # a folder per side
    for side, src in (("b", BASE), ("c", CAND)):
        (tmp_path / side).mkdir()
        shutil.copy(src, tmp_path / side / "run.csv")
    assert rooftop("diff", tmp_path / "b", tmp_path / "b", "--fail-on", "1", "--html", "", "-q").exit_code == 0
    assert rooftop("diff", tmp_path / "b", tmp_path / "c", "--fail-on", "10", "--html", "", "-q").exit_code == 1


def _corpus_files(formats: tuple[str, ...]) -> list[str]:
    """The first small export of each format in the manifest (one per format keeps this quick)."""
    picked: dict[str, str] = {}
    for r in manifest("ncu"):
        fmt = r.get("format", "")
        if fmt in formats and fmt not in picked and r.get("n_kernels", "").isdigit() \
                and 1 < int(r["n_kernels"]) <= 100 and int(r.get("size_bytes") or 0) < 400_000:
            picked[fmt] = r["file"]
    return list(picked.values())


@pytest.mark.corpus
@pytest.mark.parametrize("name", _corpus_files(("raw-csv", "details-csv", "ncu-rep", "console-log")) or ["-"])
def test_real_export_against_itself_exits_0(tmp_path: Path, name: str) -> None:
    path = corpus_dir("ncu") / name
    if not path.is_file():
        pytest.skip("corpus file absent")
    out = tmp_path / "d.json"
    res = rooftop("diff", path, path, "--fail-on", "0", "--json", out, "--html", "", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert not doc["unmatched"]["new"] and not doc["unmatched"]["vanished"]
    assert doc["pairs"] and all(p["change"]["duration"] in (0, None) for p in doc["pairs"])


@pytest.mark.corpus
@pytest.mark.parametrize("kind,launches", [("time-dram", 8), ("time-flops", 4)])
def test_sibling_exports_of_one_run_match(tmp_path: Path, kind: str, launches: int) -> None:
    """A details CSV exported from a report (no Block/Grid, no NVTX) against that .ncu-rep."""
    d = corpus_dir("ncu")
    csvs = sorted(d.glob(f"wdmapp__*{kind}*.csv"))
    reps = sorted(d.glob(f"wdmapp__*{kind}*.ncu-rep"))
    if not csvs or not reps:
        pytest.skip("sibling pair absent")
    out = tmp_path / "d.json"
    res = rooftop("diff", csvs[0], reps[0], "--fail-on", "1", "--json", out, "--html", "", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert len(doc["pairs"]) == launches
    assert not doc["unmatched"]["new"] and not doc["unmatched"]["vanished"]
    assert all(abs(p["change"]["duration"]) < 1e-6 for p in doc["pairs"])
