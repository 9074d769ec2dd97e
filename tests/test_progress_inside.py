"""Progress inside one large input (issue 27: a 20,000-kernel CSV ran 9.8 s with no output): the
bytes of one large file as it is read, then the analysis stages by name; nothing for small inputs,
and nothing at all without a callback (the command line gives none with -q or when stderr is not a
terminal)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import pytest

from rooftop import progress
from rooftop.analyzer.pipeline import STAGES, run_analysis
from rooftop.cli.output import progress_bar, show_progress
from rooftop.progress import position_report
from tests.conftest import FIXTURES

DEMO = FIXTURES / "ncu" / "demo.raw.csv"
TRACE = FIXTURES / "trace" / "steps.json"


class Recorder:
    """A progress callback that records what it was asked to show."""

    def __init__(self) -> None:
        self.bars: list[tuple[str, list[Any]]] = []
        self.positions: dict[str, list[int]] = {}

    def __call__(self, items: Sequence[Any], label: str) -> Any:
        seen: list[Any] = []
        self.bars.append((label, seen))

        @contextmanager
        def cm() -> Iterator[Iterable[Any]]:
            def it() -> Iterator[Any]:
                for x in items:
                    seen.append(x)
                    yield x
            yield it()
        return cm()

    @contextmanager
    def bytes(self, label: str, total: int) -> Iterator[Callable[[int], None]]:
        got = self.positions.setdefault(label, [total])
        yield got.append


@pytest.mark.parametrize("path", [DEMO, TRACE], ids=["ncu-csv", "kineto"])
def test_a_large_input_shows_its_bytes_then_the_stages(path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "BAR_MIN_BYTES", 1)  # the fixtures stand for a large file
    rec = Recorder()
    doc = run_analysis([str(path)], progress=rec)
    [(label, (total, *positions))] = rec.positions.items()
    assert label == f"reading {path.name}" and total == path.stat().st_size
    assert positions and positions == sorted(positions) and positions[-1] == total  # read to its end, forwards
    assert rec.bars == [("analysing", list(STAGES))]  # every stage, in order
    again = run_analysis([str(path)])
    assert {k: v for k, v in doc.items() if k != "run"} == {k: v for k, v in again.items() if k != "run"}
    assert position_report() is None  # reset after the run


def test_small_inputs_show_no_bar() -> None:
    rec = Recorder()
    run_analysis([str(DEMO)], progress=rec)
    assert rec.bars == [] and rec.positions == {}


def test_several_files_count_files_not_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(progress, "BAR_MIN_BYTES", 1)
    rec = Recorder()
    run_analysis([str(DEMO), str(TRACE)], progress=rec)
    assert rec.positions == {} and rec.bars[0][0] == "parsing" and list(map(str, rec.bars[0][1])) == [str(DEMO), str(TRACE)]
    assert rec.bars[1] == ("analysing", list(STAGES))


def test_the_command_line_bar(capsys: pytest.CaptureFixture[str]) -> None:
    with progress_bar.bytes("reading x", 100) as advance:
        for pos in (10, 5, 60, 100, 140):  # never backwards, never past the end
            advance(pos)
    with progress_bar(["kernels", "windows"], "analysing") as it:
        assert list(it) == ["kernels", "windows"]
    assert "reading x" in capsys.readouterr().err
    assert show_progress(quiet=True) is False


def test_ingest_of_one_large_input_shows_its_bytes(tmp_path: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    from datetime import datetime, timezone

    from rooftop.analyzer.store.ingest import ingest_files
    from rooftop.parsers.source import ParseOptions

    monkeypatch.setattr(progress, "BAR_MIN_BYTES", 1)
    dmon = FIXTURES / "dcgm" / "dmon_v4_phases.txt"
    rec = Recorder()
    opts = ParseOptions(host="n1", start=datetime(2025, 1, 1, tzinfo=timezone.utc))
    summary = ingest_files([dmon], tmp_path / "ds", options=opts, progress=rec)
    assert summary.rows > 0
    [(label, (total, *positions))] = rec.positions.items()
    assert label == f"ingesting {dmon.name}" and positions[-1] == total == dmon.stat().st_size
