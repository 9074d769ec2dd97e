"""``ingest`` on a folder says what it could not ingest in a few lines (issue 27: 24 lines of 380-500
characters, each listing all 11 formats, again on every idempotent re-run): the inputs in no format
ingest reads are one line naming the formats it does read (metric streams, not ncu or traces); the
others one line per reason, its hint said once, its first five inputs named; ``-v`` lists every one."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.analyzer.store.ingest_summary import IngestSummary
from rooftop.cli.commands import main
from rooftop.errors import InputError
from tests.conftest import FIXTURES, corpus_dir

READS = ("unusable: 13 input(s) in no format ingest reads (it reads Prometheus query JSON, dcgmi dmon, "
         "nvidia-smi CSV/dmon, Prometheus text; `rooftop analyze` reads profiles and traces): ")
NO_HEADER = ("dcgmi dmon rows without the '#Entity' header line: field IDs unknown (keep the two header lines "
             "dcgmi dmon prints (or the 'dcgmi dmon -e ...' command))")


def _folder(tmp_path: Path) -> Path:
    folder = tmp_path / "night"
    folder.mkdir()
    (folder / "good.txt").write_bytes((FIXTURES / "dcgm" / "dmon_v4_phases.txt").read_bytes())
    shutil.copy(FIXTURES / "ncu" / "demo.raw.csv", folder / "kernels.csv")  # ncu: analyze reads it, ingest not
    for i in range(12):
        (folder / f"notes{i:02}.md").write_text("# not a capture\n")
    for i in range(7):  # dmon rows without their header: unusable, all for one reason
        (folder / f"rows{i}.txt").write_text("GPU 0     0.5   0.125\n" * 3)
    return folder


def _ingest(*args: str) -> list[str]:
    res = CliRunner().invoke(main, ["ingest", *args, "--host", "n1", "--start", "2025-01-01T00:00:00Z"],
                             env={"COLUMNS": "80"})
    assert res.exit_code == 0, res.output
    return res.output.splitlines()


def test_unusable_inputs_are_one_line_per_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path)
    for run in range(2):  # the idempotent re-run says the same few lines
        lines = _ingest("night", "--to", "ds")
        assert max(map(len, lines)) <= 80
        said = " ".join(ln.strip() for ln in lines)
        assert (READS + "night/kernels.csv, night/notes00.md, night/notes01.md, night/notes02.md, "
                "night/notes03.md ...") in said
        assert "Nsight Compute report" not in said and "expected one of" not in said
        assert (f"unusable: 7 input(s): {NO_HEADER}: night/rows0.txt, night/rows1.txt, night/rows2.txt, "
                "night/rows3.txt, night/rows4.txt ...") in said
        assert said.endswith("unusable: -v lists every input")
        assert ("ingested 1 input(s)" if run == 0 else "skipped 1 input(s) already in the dataset") in said
    every = " ".join(ln.strip() for ln in _ingest("night", "--to", "ds", "-v"))
    assert "night/rows6.txt" in every and "night/notes11.md" in every and "-v lists" not in every


def test_quiet_still_says_the_unusable_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _folder(tmp_path)
    lines = _ingest("night", "--to", "ds", "-q")
    assert lines[0].startswith("unusable: 13 input(s)") and lines[-1] == "unusable: -v lists every input"
    assert not any(ln.startswith("ingested") for ln in lines)


def test_reasons_beyond_five_are_counted() -> None:
    s = IngestSummary(Path("ds"))
    s.unusable = [InputError(f"f{i}.txt", f"reason {i % 8}", "hint") for i in range(20)]
    lines = s.unusable_lines()
    assert lines[0] == "unusable: 3 input(s): reason 0 (hint): f0.txt, f8.txt, f16.txt"
    assert lines[5:] == ["unusable: ... and 6 more input(s) for 3 other reason(s) (-v lists them)"]
    assert len(s.unusable_lines(verbose=True)) == 8


def test_corpus_folder_summary_is_short() -> None:
    folder = corpus_dir("dcgm")
    if not folder.is_dir():
        pytest.skip("no DCGM corpus")
    with tempfile.TemporaryDirectory() as tmp:
        lines = _ingest(str(folder), "--to", str(Path(tmp) / "ds"))
    assert len([ln for ln in lines if ln.startswith("unusable:")]) <= 6 and max(map(len, lines)) <= 80
