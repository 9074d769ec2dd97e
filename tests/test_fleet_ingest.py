"""``rooftop ingest``: partitioned Parquet, idempotence, crash safety, hostile host names."""

from __future__ import annotations

import importlib.util
import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pyarrow.parquet as pq
import pytest

from rooftop.analyzer.store import dataset as dsmod
from rooftop.analyzer.store import ingest as ingmod
from rooftop.analyzer.store.dataset import PartitionWriter
from rooftop.analyzer.store.digest import file_sha256
from rooftop.analyzer.store.ingest import ingest_files
from rooftop.analyzer.store.layout import MAX_PARTITION_CHARS, NULL_PARTITION, partition_value
from rooftop.analyzer.store.lock import LOCK, ingest_lock
from rooftop.analyzer.store.manifest import Manifest
from rooftop.errors import InputError
from rooftop.parsers import SampleStream
from rooftop.parsers.model import SAMPLE_SCHEMA, InputAccounting, ParseResult
from rooftop.parsers.source import ParseOptions
from tests.conftest import FIXTURES

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_fleet import host_samples, prometheus_text

START = datetime(2026, 11, 20, 23, 59, 0, tzinfo=timezone.utc)  # crosses midnight after 60 s


def _fake_stream(path, fmt: str, result: ParseResult, batch_rows: int = 1 << 20) -> SampleStream:
    """A stream over ``result.samples`` in slices, ending with ``result`` (samples emptied)."""
    def gen():
        t = result.samples
        for start in range(0, t.num_rows, batch_rows):
            yield t.slice(start, batch_rows)
        return ParseResult(accounting=result.accounting, rejected=result.rejected, meta=result.meta)

    return SampleStream(str(path), fmt, gen())


def _fake_parser(tables: dict[str, pa.Table], monkeypatch: pytest.MonkeyPatch, fmt: str = "prometheus-text"):
    def stream(inp, options=None, limit=None):
        path = inp.path
        t = tables[str(path)]
        acc = InputAccounting(str(path), fmt, records=t.num_rows, missing=3, rejected=0)
        return _fake_stream(path, fmt, ParseResult(accounting=acc, samples=t))

    monkeypatch.setattr(ingmod, "stream_input", stream)


def _inputs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, hosts: list[str | None],
            seconds: int = 120) -> list[Path]:
    tables: dict[str, pa.Table] = {}
    paths = []
    for i, h in enumerate(hosts):
        t = host_samples(f"h{i}", gpus=2, seconds=seconds, start=START, fields=[1001, 1002])
        t = t.set_column(t.schema.get_field_index("host"), "host", pa.array([h] * t.num_rows, pa.string()))
        p = tmp_path / f"in{i}.prom"
        p.write_text(prometheus_text(t.slice(0, 5)) + f"# input {i}\n")  # distinct content, distinct sha
        tables[str(p)] = t
        paths.append(p)
    _fake_parser(tables, monkeypatch)
    return paths


def _read_committed(root: Path) -> pa.Table:
    files = [str(root / f) for f in Manifest.load(root, must_exist=True).files()]
    return pa.concat_tables([pq.read_table(f, partitioning=None) for f in files]) if files else \
        SAMPLE_SCHEMA.empty_table()


def _listing(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())


def test_ingest_writes_hive_partitions_by_date_and_host(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a", "node-b"])
    root = tmp_path / "ds"
    s = ingest_files(paths, root, ParseOptions())
    # 2 hosts x 2 GPUs x 120 s x 2 fields = 960 samples; 60 s before midnight, 60 s after
    assert s.rows == 960
    assert s.files == 4
    parts = sorted({str(Path(f).parent) for f in Manifest.load(root).files()})
    assert parts == ["date=2026-11-20/host_key=node-a", "date=2026-11-20/host_key=node-b",
                     "date=2026-11-21/host_key=node-a", "date=2026-11-21/host_key=node-b"]
    back = _read_committed(root)
    assert back.num_rows == 960 and back.schema.equals(SAMPLE_SCHEMA, check_metadata=False)
    day1 = pq.read_table(root / "date=2026-11-20/host_key=node-a", partitioning=None)
    assert day1.num_rows == 2 * 60 * 2
    assert pq.ParquetFile(next((root / "date=2026-11-20/host_key=node-a").glob("*.parquet"))) \
        .metadata.row_group(0).column(0).compression == "ZSTD"
    entry = Manifest.load(root).entries[0]
    assert entry["sha256"] == file_sha256(paths[0]) and entry["size"] == paths[0].stat().st_size
    assert (entry["records"], entry["missing"], entry["rejected"]) == (480, 3, 0)
    assert entry["start"] == "2026-11-20T23:59:00.000Z" and entry["end"] == "2026-11-21T00:00:59.000Z"
    assert "1 input" not in s.describe() and "960 samples" in s.describe()


def test_reingest_adds_nothing_and_keeps_manifest(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a", "node-b"])
    root = tmp_path / "ds"
    ingest_files(paths, root, ParseOptions())
    before = (root / "_manifest.json").read_bytes()
    listing = _listing(root)
    again = ingest_files(paths, root, ParseOptions())
    assert again.ingested == [] and len(again.skipped) == 2
    assert (root / "_manifest.json").read_bytes() == before
    assert _listing(root) == listing
    # a copy of the same bytes under another name is the same input
    copy = tmp_path / "copy.prom"
    copy.write_bytes(paths[0].read_bytes())
    assert ingest_files([copy], root, ParseOptions()).skipped == [str(copy)]
    assert _read_committed(root).num_rows == 960


def test_incremental_ingest_adds_only_new_file(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a", "node-b", "node-c"])
    root = tmp_path / "ds"
    ingest_files(paths[:2], root, ParseOptions())
    s = ingest_files(paths, root, ParseOptions())
    assert [e["path"] for e in s.ingested] == [str(paths[2])] and len(s.skipped) == 2
    assert _read_committed(root).num_rows == 3 * 480


def test_crash_after_temp_files_leaves_readable_dataset(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a", "node-b"])
    root = tmp_path / "ds"
    ingest_files(paths[:1], root, ParseOptions())
    manifest_before = (root / "_manifest.json").read_bytes()

    real_replace = dsmod.os.replace
    calls = {"n": 0}

    def crash_on_second_partition(src, dst):
        calls["n"] += 1
        if str(src).endswith(".parquet.tmp") and calls["n"] >= 2:
            raise OSError(28, "No space left on device")  # after one partition was renamed
        return real_replace(src, dst)

    monkeypatch.setattr(dsmod.os, "replace", crash_on_second_partition)
    with pytest.raises(OSError):
        ingest_files(paths, root, ParseOptions())
    monkeypatch.setattr(dsmod.os, "replace", real_replace)

    # the manifest is the previous commit; readers see exactly input 0; no temp file anywhere
    assert (root / "_manifest.json").read_bytes() == manifest_before
    assert _read_committed(root).num_rows == 480
    assert not [p for p in root.rglob("*.tmp")]
    assert not (root / LOCK).exists()
    # every .parquet on disk is complete (the one renamed before the crash is an orphan, not half)
    for f in root.rglob("*.parquet"):
        pq.read_metadata(f)
    # a generic reader that ignores the manifest still opens the folder
    ds.dataset(root, format="parquet", partitioning=None).to_table()

    # the next ingest cleans the orphan and ingests input 1 once
    s = ingest_files(paths, root, ParseOptions())
    assert s.orphans_removed == 1 and len(s.ingested) == 1
    back = _read_committed(root)
    assert back.num_rows == 960
    on_disk = pa.concat_tables(pq.read_table(f, partitioning=None) for f in root.rglob("*.parquet"))
    assert on_disk.num_rows == 960  # no duplicate left behind


def test_hard_kill_leaves_only_hidden_temp_files(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a"])
    root = tmp_path / "ds"
    ingest_files(paths, root, ParseOptions())
    # a process killed mid-write: a writer that never committed nor aborted
    w = PartitionWriter(root, "deadbeefdeadbeef")
    w.write(host_samples("node-z", gpus=1, seconds=10, start=START))
    tmp = list(root.rglob("*.tmp"))
    assert tmp and all(p.name.startswith(".") for p in tmp)
    assert ds.dataset(root, format="parquet", partitioning=None).to_table().num_rows == 480
    assert _read_committed(root).num_rows == 480
    s = ingest_files(paths, root, ParseOptions())
    assert s.orphans_removed == len(tmp) and not list(root.rglob("*.tmp"))


def test_hostile_host_names_stay_inside_the_dataset(tmp_path, monkeypatch):
    hostile = ["../../etc", "a/b", "..", ".", "", None, "x" * 500, "ñ/é\\c", "_hidden", ".hidden",
               "a%2Fb", "C:\\win", "~root"]
    paths = _inputs(tmp_path, monkeypatch, hostile, seconds=2)
    root = tmp_path / "ds"
    ingest_files(paths, root, ParseOptions())
    resolved = root.resolve()
    dirs = set()
    for f in Manifest.load(root).files():
        p = (root / f).resolve()
        assert resolved in p.parents
        _date, host_dir, _name = Path(f).parts
        assert host_dir.startswith("host_key=") and len(host_dir) <= 9 + MAX_PARTITION_CHARS
        seg = host_dir[9:]
        assert seg not in ("", ".", "..") and "/" not in seg
        assert seg == NULL_PARTITION or not seg.startswith((".", "_"))
        assert "\\" not in seg
        dirs.add(host_dir)
    assert len(dirs) == len(hostile)  # "" is the null partition; None (no host) takes its input's key
    back = _read_committed(root).column("host").to_pylist()
    # the true host values survive in the files; the input without one is keyed by the input
    assert {h for h in back if not h.startswith("input:")} == set(hostile) - {None}
    assert len([h for h in back if h.startswith("input:")]) > 0
    assert not [p for p in tmp_path.rglob("*.parquet") if resolved not in p.resolve().parents]


def test_partition_value_is_injective_enough_and_safe():
    assert partition_value("node-07") == "node-07"
    assert partition_value("..") == "%2E%2E"
    assert partition_value("a/b") != partition_value("a%2Fb")
    long1, long2 = partition_value("y" * 300 + "1"), partition_value("y" * 300 + "2")
    assert long1 != long2 and len(long1) <= MAX_PARTITION_CHARS


def test_ncu_input_is_unusable_and_all_unusable_raises(tmp_path, monkeypatch):
    p = tmp_path / "k.csv"
    p.write_text('"ID","Process ID","Kernel Name"\n')
    monkeypatch.setattr(ingmod, "stream_input", lambda inp, options=None, limit=None: _fake_stream(
        inp.path, "ncu-raw-csv", ParseResult(accounting=InputAccounting(inp.path, "ncu-raw-csv", records=1))))
    with pytest.raises(InputError, match="not a DCGM metric stream"):
        ingest_files([p], tmp_path / "ds", ParseOptions())
    missing = tmp_path / "nope.prom"
    with pytest.raises(InputError, match="cannot be read"):
        ingest_files([missing], tmp_path / "ds", ParseOptions())


def test_a_trace_given_to_ingest_is_sent_to_analyze_by_its_own_format(tmp_path):
    # the fix named "ncu exports" for every input that is not a DCGM stream, a Kineto trace too
    trace = FIXTURES / "trace" / "ops_pair.json"
    with pytest.raises(InputError) as e:
        ingest_files([trace], tmp_path / "ds", ParseOptions())
    assert "kineto-json export" in str(e.value) and "ncu" not in str(e.value)


def test_second_ingest_while_locked_is_refused(tmp_path, monkeypatch):
    paths = _inputs(tmp_path, monkeypatch, ["node-a"])
    root = tmp_path / "ds"
    root.mkdir()
    with ingest_lock(root), pytest.raises(InputError, match="another `rooftop ingest`"):
        ingest_files(paths, root, ParseOptions())  # the lock is held (flock): refused
    # a lock file nobody holds (empty, or naming a live pid on this host) is not a lock
    (root / LOCK).write_text("")
    assert len(ingest_files(paths, root, ParseOptions()).ingested) == 1
    assert not (root / LOCK).exists()


def test_corrupt_manifest_is_an_input_error(tmp_path):
    root = tmp_path / "ds"
    root.mkdir()
    (root / "_manifest.json").write_text("{not json")
    with pytest.raises(InputError, match="not a readable manifest"):
        Manifest.load(root)
    (root / "_manifest.json").write_text(json.dumps({"inputs": 3}))
    with pytest.raises(InputError):
        Manifest.load(root)


@pytest.mark.skipif(importlib.util.find_spec("rooftop.parsers.prometheus.text") is None,
                    reason="Prometheus text parser not in the tree yet")
def test_real_prometheus_parser_round_trip(tmp_path):
    t = host_samples("node-p", gpus=2, seconds=30, start=START, fields=[1001, 1002, 1004, 1005])
    p = tmp_path / "scrape.prom"
    p.write_text(prometheus_text(t))
    root = tmp_path / "ds"
    s = ingest_files([p], root, ParseOptions())
    entry = s.ingested[0]
    assert entry["records"] + entry["missing"] + entry["rejected"] == t.num_rows
    back = _read_committed(root)
    assert back.num_rows == entry["records"]
    assert set(back.column("host").to_pylist()) == {"node-p"}
