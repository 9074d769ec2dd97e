"""Many small inputs: written together per commit group (analyzer/store/batch.py), each stored once,
re-ingest with nothing new skips them all; docs/formulas.md#fleet-ingest."""

from __future__ import annotations

import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from rooftop.analyzer.fleet.pipeline import select_files
from rooftop.analyzer.store import ingest as ingest_mod
from rooftop.analyzer.store.manifest import Manifest
from rooftop.parsers import expand_inputs
from rooftop.parsers.source import ParseOptions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from ingest_many import write_files


def test_small_files_share_partition_files_and_are_stored_once(tmp_path: Path) -> None:
    write_files(tmp_path / "in", 150)  # 150 files x 4 samples, 64 hosts in runs of consecutive files
    paths = expand_inputs([str(tmp_path / "in")])
    root = tmp_path / "ds"
    s = ingest_mod.ingest_files(paths, root, ParseOptions())
    m = Manifest.load(root)
    assert len(m.entries) == 150 and all(e["files"] for e in m.entries)
    files = m.files()
    assert len(files) < 150 and len(set(files)) == len(files)
    assert len(list(root.rglob("*.parquet"))) == len(files)  # no orphan, no duplicate on disk
    t = pa.concat_tables([pq.read_table(root / f, partitioning=None) for f in files])
    assert t.num_rows == s.rows == 600
    # each input's rows are in the files its entry names, and the fleet reader lists each file once
    for e in m.entries[:5]:
        rows = pa.concat_tables([pq.read_table(root / f, partitioning=None) for f in e["files"]])
        assert e["records"] == 4 and rows.num_rows >= 4
    assert select_files(m, 0, 2**62) == files
    again = ingest_mod.ingest_files(paths, root, ParseOptions())
    assert again.ingested == [] and len(again.skipped) == 150


def test_a_big_input_is_not_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ingest_mod, "SMALL_BYTES", 100)  # every input "big": its own files
    write_files(tmp_path / "in", 3)
    s = ingest_mod.ingest_files(expand_inputs([str(tmp_path / "in")]), tmp_path / "ds", ParseOptions())
    assert len({f for e in s.ingested for f in e["files"]}) == 3
