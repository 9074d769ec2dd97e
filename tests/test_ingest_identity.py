"""``rooftop ingest`` input identity (host + canonical path, then content), logrotate copies, files
truncated while read: nothing lost, nothing doubled (docs/formulas.md#fleet-ingest). Real files,
real symlinks, real truncation."""

from __future__ import annotations

import os
import shutil
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rooftop.analyzer.store import ingest as ingest_mod
from rooftop.analyzer.store.digest import file_sha256
from rooftop.analyzer.store.ingest_summary import IngestSummary
from rooftop.analyzer.store.manifest import Manifest, rotation_base
from rooftop.parsers import expand_inputs, parse_path
from rooftop.parsers.source import ParseOptions

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
HEADER = "#Entity   GRACT   SMACT\nID\n"


def _dmon(ticks: range, value: float = 0.0) -> str:
    """``dcgmi dmon`` text of 2 GPUs x 2 fields per tick (idle GPUs print identical lines)."""
    out = [HEADER]
    for t in ticks:
        out += [f"GPU {g}     {value + t / 1000:.3f}   0.125\n" for g in (1, 0)]
    return "".join(out)


def _opts(host: str | None = None) -> ParseOptions:
    return ParseOptions(start=START, host=host)


def _table(root: Path) -> pa.Table:
    files = [str(root / f) for f in Manifest.load(root).files()]
    return pa.concat_tables([pq.read_table(f, partitioning=None) for f in files])


def _rows(root: Path, host: str | None = None) -> int:
    t = _table(root)
    return sum(1 for h in t.column("host").to_pylist() if h == host)


def _ingest(paths: list[Path], root: Path, host: str | None = None) -> IngestSummary:
    return ingest_mod.ingest_files(paths, root, _opts(host))


def test_two_hosts_same_path_logs_that_begin_alike_are_two_inputs(tmp_path: Path) -> None:
    log = tmp_path / "dmon.log"
    log.write_text(_dmon(range(10)))  # host a: idle
    root = tmp_path / "ds"
    _ingest([log], root, "a")
    log.write_text(_dmon(range(25)))  # host b's log, copied to the same place: begins alike, longer
    s = _ingest([log], root, "b")
    (e,) = s.ingested
    assert e["kind"] == "file" and e["host"] == "b" and e["records"] == 25 * 4
    assert (_rows(root, "a"), _rows(root, "b")) == (40, 100)
    # a byte-identical log of a third host is stored for that host, not skipped as "same SHA-256"
    s = _ingest([log], root, "c")
    assert len(s.ingested) == 1 and _rows(root, "c") == 100
    # the same bytes for the same host again: skipped
    assert _ingest([log], root, "c").skipped == [str(log)]


def test_relative_absolute_and_symlinked_paths_are_one_input(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "dmon.log"
    log.write_text(_dmon(range(10)))
    root = tmp_path / "ds"
    monkeypatch.chdir(folder)
    _ingest([Path("dmon.log")], root, "a")  # relative
    with log.open("a") as fh:
        fh.write(_dmon(range(10, 20))[len(HEADER):])
    link = tmp_path / "current.log"
    link.symlink_to(log)
    monkeypatch.chdir(tmp_path)
    s = _ingest([link], root, "a")  # a symlink, from another working directory, after it grew
    (e,) = s.ingested
    assert e["kind"] == "append" and e["records"] == 40 and e["path"] == str(log.resolve())
    with log.open("a") as fh:
        fh.write(_dmon(range(20, 25))[len(HEADER):])
    s = _ingest([folder / ".." / "logs" / "dmon.log"], root, "a")  # absolute, with ".."
    assert s.ingested[0]["kind"] == "append" and s.ingested[0]["records"] == 20
    assert _rows(root, "a") == 25 * 4


def test_logrotate_copytruncate_stores_every_sample_once(tmp_path: Path) -> None:
    folder = tmp_path / "logs"
    folder.mkdir()
    log = folder / "dmon.log"
    log.write_text(_dmon(range(30)))
    root = tmp_path / "ds"
    _ingest(expand_inputs([str(folder)]), root, "n1")
    with log.open("a") as fh:  # the writer goes on after the nightly ingest
        fh.write(_dmon(range(30, 40))[len(HEADER):])
    # logrotate copytruncate: copy to dmon.log.1, truncate dmon.log in place; the writer restarts
    shutil.copyfile(log, folder / "dmon.log.1")
    with log.open("r+") as fh:
        fh.truncate(0)
    log.write_text(_dmon(range(100, 105), value=0.5))
    s = _ingest(expand_inputs([str(folder)]), root, "n1")
    kinds = {Path(e["path"]).name: (e["kind"], e["records"]) for e in s.ingested}
    assert kinds == {"dmon.log.1": ("append", 10 * 4), "dmon.log": ("file", 5 * 4)}
    assert len(s.rotated) == 1 and "rotated" in s.describe()
    assert _rows(root, "n1") == (40 + 5) * 4
    # the next rotation: dmon.log.1 -> dmon.log.2 (renamed: same bytes, skipped), dmon.log copied
    os.replace(folder / "dmon.log.1", folder / "dmon.log.2")
    with log.open("a") as fh:
        fh.write(_dmon(range(105, 108), value=0.5)[len(HEADER):])
    shutil.copyfile(log, folder / "dmon.log.1")
    log.write_text(HEADER)
    s = _ingest(expand_inputs([str(folder)]), root, "n1")
    got = {Path(e["path"]).name: (e["kind"], e["records"]) for e in s.ingested}
    assert got == {"dmon.log.1": ("append", 12), "dmon.log": ("file", 0)}  # dmon.log: a header only
    assert _rows(root, "n1") == (40 + 8) * 4
    # every stored sample once: the dataset equals the samples of the three versions, each once
    values = sorted(_table(root).column("value").to_pylist())
    expect = sorted(parse_path(folder / "dmon.log.2", _opts("n1")).samples.column("value").to_pylist()
                    + parse_path(folder / "dmon.log.1", _opts("n1")).samples.column("value").to_pylist())
    assert values == expect


def test_logs_of_two_hosts_in_one_folder_are_not_rotations_of_each_other(tmp_path: Path) -> None:
    a, b = tmp_path / "node-01.log", tmp_path / "node-01.log.gz.txt"
    a.write_text(_dmon(range(10)))
    root = tmp_path / "ds"
    _ingest([a], root)
    b.write_text(_dmon(range(20)))  # begins with a's bytes, but is not a logrotate name of it
    s = _ingest([b], root)
    assert s.ingested[0]["kind"] == "file" and s.ingested[0]["records"] == 80 and s.rotated == []


def test_rotation_base_names() -> None:
    assert rotation_base("/l/dmon.log.1") == ("/l", "dmon.log")
    assert rotation_base("/l/dmon.log.12.gz") == ("/l", "dmon.log")
    assert rotation_base("/l/dmon.log-20261123") == ("/l", "dmon.log")
    assert rotation_base("/l/node-07") == ("/l", "node-07")
    assert rotation_base("/l/dmon.log") == ("/l", "dmon.log")


def test_file_truncated_while_read_records_exactly_the_bytes_read(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "dmon.log"
    full = _dmon(range(50))
    log.write_text(full)
    half = _dmon(range(20))
    real = ingest_mod.stream_input
    calls = {"n": 0}

    def truncate_once(inp: Any, *a: Any, **kw: Any) -> Any:
        stream = real(inp, *a, **kw)
        calls["n"] += 1
        if calls["n"] == 1:
            with open(inp.path, "r+") as fh:  # a real truncation, after the digest, during the read
                fh.truncate(len(half))
        return stream

    monkeypatch.setattr(ingest_mod, "stream_input", truncate_once)
    root = tmp_path / "ds"
    s = _ingest([log], root, "a")
    (e,) = s.ingested
    assert (e["size"], e["sha256"], e["records"]) == (len(half), file_sha256(log), 20 * 4)
    # the original comes back: the rest is appended, nothing lost
    log.write_text(full)
    s = _ingest([log], root, "a")
    assert s.ingested[0]["kind"] == "append" and s.ingested[0]["records"] == 30 * 4
    assert _rows(root, "a") == 50 * 4


def test_file_that_never_stops_changing_is_unusable_not_half_stored(tmp_path: Path,
                                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    log, other = tmp_path / "dmon.log", tmp_path / "other.log"
    log.write_text(_dmon(range(50)))
    other.write_text(_dmon(range(5)))
    real = ingest_mod.stream_input

    def always_truncate(inp: Any, *a: Any, **kw: Any) -> Any:
        stream = real(inp, *a, **kw)
        if Path(inp.path) == log:
            data = log.read_bytes()
            log.write_bytes(data[: data.rfind(b"\n", 0, len(data) - 1) + 1])  # one line shorter each time
        return stream

    monkeypatch.setattr(ingest_mod, "stream_input", always_truncate)
    root = tmp_path / "ds"
    s = ingest_mod.ingest_files([log, other], root, _opts("a"))
    assert [Path(e["path"]).name for e in s.ingested] == ["other.log"]
    assert len(s.unusable) == 1 and "changed while it was read" in str(s.unusable[0])
    assert _rows(root, "a") == 20 and not list(root.rglob("*.tmp"))
