"""DCGM 4.6 cumulative counters in ``fleet`` (issue 24; docs/formulas.md#counters): the reset lint
reaches the fleet report counted per host, and an interval between two files of one GPU is read
when the gap rule allows it (else missing data), as ``analyze`` reads it over the same files.
Generated: fixtures/make_dcgm.py ``prom_counters`` (hand-computed there), split in two files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fixtures.make_dcgm import prom_counters
from rooftop.cli.commands import main

PER_T = 3  # lines per sample time in prom_counters (three counters)


def _split(tmp_path: Path, at: int, shift_ms: int = 0) -> tuple[Path, Path]:
    """prom_counters' 12 sample times as two files: times 0..at-1 and at..11 (shifted)."""
    lines = prom_counters().splitlines()
    a, b = tmp_path / "a.prom", tmp_path / "b.prom"
    a.write_text("\n".join(lines[:PER_T * at]) + "\n")
    tail = []
    for ln in lines[PER_T * at:]:
        head, v, ts = ln.rsplit(" ", 2)
        tail.append(f"{head} {v} {int(ts) + shift_ms}")
    b.write_text("\n".join(tail) + "\n")
    return a, b


def _fleet(tmp_path: Path, *inputs: Path, engine: str = "local") -> dict[str, Any]:
    ds = tmp_path / "ds"
    if not ds.exists():
        assert CliRunner().invoke(main, ["ingest", *map(str, inputs), "--to", str(ds), "-q"]).exit_code == 0
    out = tmp_path / f"f-{engine}.json"
    res = CliRunner().invoke(main, ["fleet", str(ds), "--since", "2024-01-01", "--until", "2027-01-01",
                                    "--window", "60", "--json", str(out), "--no-html", "-q", "--engine", engine,
                                    *(["--workers", "2"] if engine == "dask" else [])])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _analyze(tmp_path: Path, *inputs: Path) -> dict[str, Any]:
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", *map(str, inputs), "--window", "60", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _sm(doc: dict[str, Any]) -> list[float]:
    return [w["metrics"].get("sm_active") for w in sorted(doc["windows"], key=lambda w: w["start"])]


def _reset(doc: dict[str, Any]) -> list[str]:
    return [x["message"] for x in doc["lint"] if x["code"] == "dcgm-counter-reset"]


def test_fleet_reports_the_reset_per_host(tmp_path: Path) -> None:
    src = tmp_path / "c.prom"
    src.write_text(prom_counters())
    doc = _fleet(tmp_path, src)
    [msg] = _reset(doc)  # was: no lint in fleet (only analyze had it)
    assert msg.startswith("1 interval(s) rejected") and "10 read" in msg and "by host: n1 1" in msg
    assert _sm(doc) == pytest.approx([0.75, 0.75])


def test_interval_across_two_files_is_read(tmp_path: Path) -> None:
    # the interval ending at 60 s (samples at 50 s in a.prom and 60 s in b.prom) spans the files:
    # read, the second window is 6e12 / 8e12 = 0.75 as in one file (without it 5.7e12 / 7e12 = 0.814)
    a, b = _split(tmp_path, 6)
    fleet = _fleet(tmp_path, a, b)
    assert _sm(fleet) == pytest.approx([0.75, 0.75])
    assert _sm(_analyze(tmp_path, a, b)) == pytest.approx(_sm(fleet))
    [msg] = _reset(fleet)
    assert "10 read" in msg and "by host: n1 1" in msg


def test_reset_between_two_files_is_counted(tmp_path: Path) -> None:
    # the counters restart between the files (b.prom begins below a.prom's last values): a reset of n1
    a, b = _split(tmp_path, 8)
    fleet = _fleet(tmp_path, a, b)
    [msg] = _reset(fleet)
    assert msg.startswith("1 interval(s) rejected") and "by host: n1 1" in msg
    assert _reset(_analyze(tmp_path, a, b)) == [msg]
    assert _sm(fleet) == pytest.approx([0.75, 0.75])


def test_files_a_gap_apart_are_missing_data(tmp_path: Path) -> None:
    # b.prom begins a day after a.prom ends: the step is far beyond 5 x max(10 s, 60 s), so it is no
    # interval (before, analyze read one day of counter increase as one interval)
    a, b = _split(tmp_path, 6, shift_ms=86_400_000)
    fleet = _fleet(tmp_path, a, b)
    analyze = _analyze(tmp_path, a, b)
    assert _sm(fleet) == pytest.approx(_sm(analyze))
    # b.prom alone: intervals ending 70, 90, 100, 110 s (+1 day); 80 s is the reset
    assert _sm(fleet)[-1] == pytest.approx((0.9 * 2 + 0.9 * 2 + 0.3 * 1 + 0.9 * 2) / (2 + 2 + 1 + 2))
