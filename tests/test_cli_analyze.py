"""`rooftop analyze` end to end: the README demo, DCGM streams, mixed folders, accounting."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from click.testing import CliRunner

from rooftop.cli.commands import main
from tests.conftest import FIXTURES


def _analyze(tmp_path: Path, *inputs: str) -> tuple[int, str, dict]:
    out = tmp_path / "out.json"
    res = CliRunner().invoke(main, ["analyze", *inputs, "--html", str(tmp_path / "r.html"),
                                    "--md", str(tmp_path / "r.md"), "--json", str(out), "-q"])
    doc = json.loads(out.read_text()) if out.exists() else {}
    return res.exit_code, res.output, doc


def test_readme_demo_labels_every_kernel_as_intended(tmp_path: Path) -> None:
    code, output, doc = _analyze(tmp_path, str(FIXTURES / "ncu" / "demo.raw.csv"))
    assert code == 0, output
    got = [(k["label"], k["limiter"]) for k in doc["kernels"]]
    # fixtures/README.md: GEMM, GEMV, elementwise, tiny fill, L2-resident loop.
    assert got == [("compute-bound", "tensor"), ("memory-bound", "dram"), ("memory-bound", "dram"),
                   ("overhead-bound", "launch"), ("memory-bound", "l2")]
    assert doc["inputs"] == [{"path": str(FIXTURES / "ncu" / "demo.raw.csv"), "format": "ncu-raw-csv",
                              "records": 5, "missing": 0, "rejected": 0}]
    assert doc["findings"] and doc["findings"][0]["rank"] == 1
    page = (tmp_path / "r.html").read_text(encoding="utf-8")
    assert "<svg" in page and len(page) < 300_000  # static SVG roofline; no plotly.js without plotly figures
    assert [c["value"] for c in doc["roofline"]["panels"][0]["ceilings"]]  # the ceilings used, handed to the report
    assert "| " in (tmp_path / "r.md").read_text()


def test_raw_and_details_pages_of_the_same_run_agree(tmp_path: Path) -> None:
    _, _, raw = _analyze(tmp_path, str(FIXTURES / "ncu" / "demo.raw.csv"))
    _, _, det = _analyze(tmp_path, str(FIXTURES / "ncu" / "demo.details.csv"))
    assert [k["label"] for k in raw["kernels"]] == [k["label"] for k in det["kernels"]]
    assert [k["bytes"]["dram"] for k in raw["kernels"]] == [k["bytes"]["dram"] for k in det["kernels"]]


def test_dcgm_stream_gives_windows(tmp_path: Path) -> None:
    code, output, doc = _analyze(tmp_path, str(FIXTURES / "dcgm" / "prom_scrapes_phases.prom"))
    assert code == 0, output
    assert doc["windows"] and not doc["kernels"]
    assert {w["label"] for w in doc["windows"]} <= {"idle", "compute-bound", "memory-bound",
                                                    "overhead-bound", "mixed"}
    acc = doc["inputs"][0]
    assert acc["format"] == "prometheus-text" and acc["records"] > 0


def test_dmon_times_without_start_are_said_to_be_assumed(tmp_path: Path) -> None:
    dmon = str(FIXTURES / "dcgm" / "dmon_v3_phases.txt")
    _, _, doc = _analyze(tmp_path, dmon)
    lint = [x for x in doc["lint"] if x["code"] == "dmon-time-assumed"]
    assert len(lint) == 1 and "--start" in lint[0]["message"] and "modification time" in lint[0]["message"]
    # the fixture names its own `dcgmi dmon -d 5000`: only --start is asked for
    assert "5.0 s apart (the file's dcgmi dmon -d 5000 (line 1))" in lint[0]["message"]
    assert "--interval" not in lint[0]["message"]
    _, _, given = _analyze(tmp_path, dmon, "--start", "2026-11-21T22:00:00Z", "--interval", "1")
    assert not [x for x in given["lint"] if x["code"] == "dmon-time-assumed"]
    assert given["windows"][0]["start"].startswith("2026-11-21T22:0")


def test_folder_with_one_unusable_file_keeps_going_and_lists_it(tmp_path: Path) -> None:
    folder = tmp_path / "in"
    folder.mkdir()
    shutil.copy(FIXTURES / "ncu" / "demo.raw.csv", folder / "a.csv")
    (folder / "b.csv").write_text("==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM\n")
    code, output, doc = _analyze(tmp_path, str(folder))
    assert code == 0, output
    formats = {Path(i["path"]).name: i["format"] for i in doc["inputs"]}
    assert formats == {"a.csv": "ncu-raw-csv", "b.csv": "unusable"}
    assert any(r["path"].endswith("b.csv") and "ERR_NVGPUCTRPERM" in r["reason"] for r in doc["rejected"])
    assert len(doc["kernels"]) == 5


def test_all_inputs_unusable_is_exit_2_with_one_line(tmp_path: Path) -> None:
    bad = tmp_path / "x.csv"
    bad.write_text("==PROF== Connected to process 7\n==ERROR== ERR_NVGPUCTRPERM\n")
    code, output, _ = _analyze(tmp_path, str(bad))
    assert code == 2
    assert len(output.strip().splitlines()) == 1 and str(bad) in output and "Traceback" not in output
