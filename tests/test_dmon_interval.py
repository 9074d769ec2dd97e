"""The dmon tick interval: --interval, else the file's own `dcgmi dmon -d`, else 1 s
(parsers/dcgm/dmon/interval.py, docs/formulas.md#inputs). Hand-built files, the fixtures, a corpus file."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.dcgm.dmon.reader import parse, parse_batches
from rooftop.parsers.model import drain_batches
from rooftop.parsers.source import ParseOptions, Source
from tests.conftest import corpus_dir

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
ROWS = "#Entity   GRACT\nID\nGPU 0     0.100\nGPU 0     0.200\nGPU 0     0.300\n"


def _stamps(tmp_path: Path, text: str, opts: ParseOptions) -> tuple[list[float], str]:
    p = tmp_path / "dmon.txt"
    p.write_text(text, encoding="utf-8")
    r = parse(Source(p), opts)
    ts = r.samples.to_pandas()["timestamp"]
    return [(t - ts.iloc[0]).total_seconds() for t in ts], str(r.meta["interval_from"])


def test_the_files_own_delay_spaces_the_ticks(tmp_path: Path) -> None:
    got, source = _stamps(tmp_path, "$ dcgmi dmon -e 1001 -d 5000\n" + ROWS, ParseOptions(start=START))
    assert got == [0.0, 5.0, 10.0] and source == "the file's dcgmi dmon -d 5000 (line 1)"
    got, _ = _stamps(tmp_path, "root@h:~# dcgmi dmon --delay=250 -e 1001\n" + ROWS, ParseOptions(start=START))
    assert got == [0.0, 0.25, 0.5]


def test_no_delay_is_the_tool_default_and_interval_wins(tmp_path: Path) -> None:
    got, source = _stamps(tmp_path, ROWS, ParseOptions(start=START))
    assert got == [0.0, 1.0, 2.0] and "default" in source
    # the user's --interval is used; a disagreeing file -d is recorded (not when no pre-scan was needed)
    got, source = _stamps(tmp_path, "$ dcgmi dmon -e 1001 -d 5000\n" + ROWS, ParseOptions(interval_s=2.0))
    assert got == [0.0, 2.0, 4.0] and source == "--interval (the file says line 1: -d 5000)"


def test_runs_with_different_delays_are_refused_with_the_lines(tmp_path: Path) -> None:
    text = "$ dcgmi dmon -e 1001 -d 1000\n" + ROWS + "$ dcgmi dmon -e 1001 -d 5000\n" + ROWS
    p = tmp_path / "two.txt"
    p.write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"-d 1000 at line 1, -d 5000 at line 7.*--interval"):
        parse(Source(p), ParseOptions(start=START))
    # the user's interval settles it
    assert parse(Source(p), ParseOptions(start=START, interval_s=1.0)).accounting.records == 6


@pytest.mark.parametrize("delay", ["0", "86400001", "1" + "0" * 30])
def test_an_unusable_delay_is_refused_with_its_line(tmp_path: Path, delay: str) -> None:
    p = tmp_path / "bad.txt"
    p.write_text(f"$ dcgmi dmon -e 1001 -d {delay}\n" + ROWS, encoding="utf-8")
    with pytest.raises(InputError, match=r"bad.txt:1: dcgmi dmon -d \d+ is not a usable sampling interval"):
        parse(Source(p), ParseOptions())


@pytest.mark.parametrize("start", [START, None])
def test_streamed_batches_use_the_same_interval(tmp_path: Path, start: datetime | None) -> None:
    p = tmp_path / "d.txt"
    p.write_text("$ dcgmi dmon -e 1001 -d 5000\n" + ROWS, encoding="utf-8")
    r = drain_batches(parse_batches(Source(p), ParseOptions(start=start)))
    ts = r.samples.to_pandas()["timestamp"]
    assert [(t - ts.iloc[0]).total_seconds() for t in ts] == [0.0, 5.0, 10.0]
    assert r.meta["interval_s"] == 5.0


def test_fixture_command_line_sets_five_seconds() -> None:
    # fixtures/make_dcgm.py samples every 5 s and writes `dcgmi dmon ... -d 5000` first
    r = parse_path(FIX / "dmon_v4_phases.txt", ParseOptions(start=START))
    assert r.meta["interval_s"] == 5.0 and r.meta["ticks"] == 120
    ts = r.samples.to_pandas()["timestamp"]  # tick 0 is N/A: samples from tick 1 (5 s) to tick 119
    assert [(t - START).total_seconds() for t in (ts.min(), ts.max())] == [5.0, 119 * 5.0]


def test_corpus_dmon_without_delay_uses_one_second() -> None:
    # NVIDIA's own example (`dcgmi dmon -e 1001,1004,1005`, no -d): the tool default 1000 ms
    p = corpus_dir("dcgm") / "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt"
    if not p.exists():
        pytest.skip(f"{p} not in the corpus")
    r = parse_path(p, ParseOptions(start=START))
    assert r.meta["interval_s"] == 1.0 and "default" in r.meta["interval_from"]
