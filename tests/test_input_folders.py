"""Input folders (issue 30 items 9, 17): every entry a folder holds that is not read is named in
the summary and the JSON's inputs -- a symlinked subfolder (not followed: no loop, no way out), a
symlink loop, a dangling symlink, a FIFO; a subfolder that cannot be listed stops the run unless
--skip-unreadable. And a report's temporary file a killed run left is removed by the next write."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from tests.conftest import FIXTURES

PROM = FIXTURES / "dcgm" / "prom_scrapes_phases.prom"


def _folder(tmp: Path) -> Path:
    d = tmp / "in"
    (d / "sub").mkdir(parents=True)
    (d / "sub" / "a.prom").write_bytes(PROM.read_bytes())
    elsewhere = tmp / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "b.prom").write_bytes(PROM.read_bytes())
    (d / "linked").symlink_to(elsewhere, target_is_directory=True)  # a symlinked subfolder
    (d / "sub" / "loop").symlink_to(d, target_is_directory=True)  # a loop back to the top
    (d / "gone.prom").symlink_to(tmp / "missing.prom")  # dangling
    (d / "self").symlink_to(d / "self")  # a symlink to itself: ELOOP
    os.mkfifo(d / "pipe")
    return d


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_analyze_names_every_entry_it_does_not_read(tmp_path: Path) -> None:
    d = _folder(tmp_path)
    out = tmp_path / "a.json"
    res = _run("analyze", d, "--json", out, "--html", tmp_path / "a.html")
    assert res.exit_code == 0, res.output
    assert "internal error" not in res.output
    doc = json.loads(out.read_text())
    by_path = {i["path"]: i["format"] for i in doc["inputs"]}
    assert by_path[str(d / "sub" / "a.prom")] == "prometheus-text"
    assert str(tmp_path / "elsewhere" / "b.prom") not in by_path  # the link was not followed
    skipped = {p for p, f in by_path.items() if f == "unusable"}
    assert skipped == {str(d / n) for n in ("linked", "sub/loop", "gone.prom", "self", "pipe")}
    reasons = {r["path"]: r["reason"] for r in doc["rejected"]}
    assert "symlink to a folder: not followed" in reasons[str(d / "linked")]
    assert "dangling symlink" in reasons[str(d / "gone.prom")]
    assert "cannot be followed" in reasons[str(d / "self")]
    assert "not a regular file" in reasons[str(d / "pipe")]
    assert f"unusable: {d / 'linked'}" in res.output  # the terminal summary names them too


def test_a_symlinked_folder_named_on_the_command_line_is_read(tmp_path: Path) -> None:
    d = _folder(tmp_path)
    out = tmp_path / "a.json"
    res = _run("analyze", d / "linked", "--json", out, "--html", tmp_path / "a.html", "-q")
    assert res.exit_code == 0, res.output
    assert [i["path"] for i in json.loads(out.read_text())["inputs"]] == [str(d / "linked" / "b.prom")]


def test_ingest_names_every_entry_it_does_not_read(tmp_path: Path) -> None:
    d = _folder(tmp_path)
    res = _run("ingest", d, "--to", tmp_path / "ds")
    assert res.exit_code == 0, res.output
    said = [ln for ln in res.output.splitlines() if ln.startswith("unusable: ")]  # one line per reason
    for name in ("linked", "sub/loop", "gone.prom", "self", "pipe"):
        assert any(str(d / name) in ln for ln in said), name
    assert "ingested 1 input(s)" in res.output


@pytest.fixture
def unreadable(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    """A subfolder listing it is refused (as for a folder without read permission; the tests run
    as root, which no permission bit stops)."""
    d = tmp_path / "in"
    (d / "locked").mkdir(parents=True)
    (d / "locked" / "x.prom").write_bytes(PROM.read_bytes())
    (d / "ok.prom").write_bytes(PROM.read_bytes())
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if not isinstance(path, int) and Path(path) == d / "locked":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)
    return d


def test_an_unreadable_subfolder_is_an_error(unreadable: Path, tmp_path: Path) -> None:
    res = _run("analyze", unreadable, "--json", tmp_path / "a.json", "--html", tmp_path / "a.html")
    assert res.exit_code == 2, res.output
    assert str(unreadable / "locked") in res.output and "--skip-unreadable" in res.output
    res = _run("ingest", unreadable, "--to", tmp_path / "ds")
    assert res.exit_code == 2 and "--skip-unreadable" in res.output


def test_an_unreadable_subfolder_is_listed_when_asked_to_skip(unreadable: Path, tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    res = _run("analyze", unreadable, "--skip-unreadable", "--json", out, "--html", tmp_path / "a.html", "-q")
    assert res.exit_code == 0, res.output
    inputs = {i["path"]: i["format"] for i in json.loads(out.read_text())["inputs"]}
    assert inputs == {str(unreadable / "locked"): "unusable", str(unreadable / "ok.prom"): "prometheus-text"}
    res = _run("ingest", unreadable, "--skip-unreadable", "--to", tmp_path / "ds")
    assert res.exit_code == 0, res.output
    assert f"unusable: {unreadable / 'locked'}" in res.output


def test_a_killed_writers_temporary_is_removed_by_the_next_write(tmp_path: Path) -> None:
    out = tmp_path / "r.html"
    dead = tmp_path / ".r.html.999999999-abcd.tmp"  # no such process: kill -9 left it
    dead.write_text("half a report")
    live = tmp_path / f".r.html.{os.getppid()}-efgh.tmp"  # a running writer's: kept
    live.write_text("being written")
    res = _run("analyze", PROM, "--html", out, "-q")
    assert res.exit_code == 0, res.output
    assert out.is_file() and not dead.exists() and live.exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".r.html.") and p != live]
