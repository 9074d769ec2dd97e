"""Streaming parse (``parsers.stream_path``) and streaming, append-aware ``rooftop ingest``."""

from __future__ import annotations

import json
import os
import sys
import tempfile
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import parsers
import parsers.prom_text as pt
from analyzer.fleet import dataset as dsmod
from analyzer.fleet.dataset import Manifest
from analyzer.fleet.ingest import ingest_files
from parsers import InputError, ParseOptions, parse_path, stream_path
from parsers.model import SAMPLE_SCHEMA

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_inputs import write_dmon, write_prom_text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _drain(path: Path, opts: ParseOptions) -> tuple[list[pa.Table], parsers.ParseResult]:
    stream = stream_path(path, opts)
    batches = list(stream)
    assert stream.result is not None and stream.result.samples.num_rows == 0
    return batches, stream.result


def _strip_ts(text: str) -> str:
    """The same scrapes without the trailing millisecond timestamps (scrape-stamped)."""
    return "\n".join(ln.rsplit(" ", 1)[0] if ln.startswith("DCGM_FI_") else ln for ln in text.splitlines()) + "\n"


def _scrapes(path: Path, scrapes: int, *, stamps: bool = True) -> Path:
    write_prom_text(path, hosts=2, gpus=2, scrapes=scrapes)
    if not stamps:
        path.write_text(_strip_ts(path.read_text()))
    return path


# --------------------------------------------------------------------------------------------------
# stream_path


@pytest.mark.parametrize("name", ["prom_scrapes_phases.prom", "prom_tsdb_mig.prom"])
@pytest.mark.parametrize("start", [None, START])
def test_prom_batches_concatenate_to_parse(name: str, start: datetime | None, tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    opts = ParseOptions(start=start)
    whole = parse_path(FIX / name, opts)
    monkeypatch.setattr(pt, "CHUNK_BYTES", 700)  # many chunks, cut inside lines
    monkeypatch.setattr(pt, "BATCH_ROWS", 16)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # where held parts are spilled
    batches, result = _drain(FIX / name, opts)
    assert len(batches) > 3 and all(b.num_rows <= 16 + 40 for b in batches)  # joined chunks: >= 16, one chunk more
    assert pa.concat_tables(batches).equals(whole.samples)
    assert result.accounting.as_dict() == whole.accounting.as_dict()
    assert result.rejected == whole.rejected and result.meta == whole.meta
    assert not list(tmp_path.glob("rooftop-prom-*"))  # the spill is gone


def test_scrape_stamped_stream_is_spilled_not_held(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # without --start the times need the scrape count: nothing can go out before the end, and the
    # held parts live in a temporary Arrow stream, not in memory
    p = _scrapes(tmp_path / "s.prom", 12, stamps=False)
    monkeypatch.setattr(pt, "CHUNK_BYTES", 2000)
    monkeypatch.setattr(pt, "BATCH_ROWS", 50)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    spilled: list[int] = []
    real_add = pt._Held.add

    def add(self: pt._Held, part: pa.Table) -> None:
        real_add(self, part)
        spilled.append(len(self._tables))  # parts kept in memory: none when spilling

    monkeypatch.setattr(pt._Held, "add", add)
    stream = stream_path(p, ParseOptions())
    it = iter(stream)
    first = next(it)
    assert list(tmp_path.glob("rooftop-prom-*/held.arrows"))  # spilled while batches go out
    rest = list(it)
    assert spilled and set(spilled) == {0}
    whole = parse_path(p, ParseOptions())
    assert pa.concat_tables([first, *rest]).equals(whole.samples)
    # 12 scrapes x 16 fields x 4 GPUs; scrape k at start + 30 k s
    assert whole.accounting.records == 12 * 16 * 4 and whole.meta["scrapes"] == 12
    assert stream.result is not None and stream.result.meta["start"] == whole.meta["start"]
    assert not list(tmp_path.glob("rooftop-prom-*"))


def test_abandoned_stream_removes_its_spill(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _scrapes(tmp_path / "s.prom", 6, stamps=False)
    monkeypatch.setattr(pt, "CHUNK_BYTES", 1000)
    monkeypatch.setattr(pt, "BATCH_ROWS", 10)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stream = stream_path(p, ParseOptions())
    it = iter(stream)
    next(it)
    stream.close()
    assert not list(tmp_path.glob("rooftop-prom-*"))


def test_fallback_for_parsers_without_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # nvidia-smi has no parse_batches: parse() whole, handed on in zero-copy slices
    monkeypatch.setattr(parsers, "STREAM_BATCH_ROWS", 7)
    path = tmp_path / "smi.csv"
    path.write_text("timestamp, index, utilization.gpu [%], power.draw [W]\n" + "".join(
        f"2023/06/22 18:56:{s:02d}.000, {g}, {s + g} %, {100 + s} W\n" for s in range(20) for g in range(2)))
    opts = ParseOptions()
    whole = parse_path(path, opts)
    batches, result = _drain(path, opts)
    assert len(batches) == -(-whole.samples.num_rows // 7) and max(b.num_rows for b in batches) == 7
    assert pa.concat_tables(batches).equals(whole.samples) and whole.accounting.records == 80
    assert result.accounting.as_dict() == whole.accounting.as_dict()


def test_stream_path_detection_errors_match_parse_path(tmp_path: Path) -> None:
    (tmp_path / "empty.prom").write_bytes(b"")
    (tmp_path / "junk.txt").write_text("hello\n")
    for name in ("nope.prom", "empty.prom", "junk.txt"):
        with pytest.raises(InputError) as a:
            parse_path(tmp_path / name)
        with pytest.raises(InputError) as b:
            stream_path(tmp_path / name)
        assert str(a.value) == str(b.value)
    s = stream_path(ROOT / "fixtures" / "ncu" / "demo.raw.csv")
    assert (s.kind, s.format) == ("ncu", "ncu-raw-csv")
    s.close()


# --------------------------------------------------------------------------------------------------
# ingest: bounded batches


def test_ingest_streams_batches_never_the_whole_table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = _scrapes(tmp_path / "big.prom", 30)
    whole = parse_path(p, ParseOptions())
    monkeypatch.setattr(pt, "CHUNK_BYTES", 8192)
    monkeypatch.setattr(pt, "BATCH_ROWS", 100)
    monkeypatch.setattr(dsmod, "ROW_GROUP_ROWS", 256)
    monkeypatch.setattr(dsmod, "MAX_BUFFERED_BYTES", 60_000)
    sizes: list[int] = []
    real_write = dsmod.PartitionWriter.write

    def write(self: dsmod.PartitionWriter, table: pa.Table) -> None:
        sizes.append(table.num_rows)
        assert sum(self._bytes.values()) <= 60_000  # the writer's buffer stays bounded too
        real_write(self, table)

    monkeypatch.setattr(dsmod.PartitionWriter, "write", write)
    s = ingest_files([p], tmp_path / "ds", ParseOptions())
    n = whole.samples.num_rows  # 30 scrapes x 16 fields x 4 GPUs = 1920
    assert n == 1920 and s.rows == n and sum(sizes) == n
    assert len(sizes) >= 10 and max(sizes) < 200  # ~100-row batches (one 8 kB chunk more at most)
    back = _dataset(tmp_path / "ds")
    assert _sorted(back).equals(_sorted(whole.samples))
    f = next((tmp_path / "ds").rglob("*.parquet"))
    md = pq.ParquetFile(f).metadata
    # 960 rows per host, arriving ~50 per batch: buffered into row groups of <= 256 rows, written when
    # a partition holds 256 or the buffers exceed 60 kB, not one small row group per batch
    groups = [md.row_group(i).num_rows for i in range(md.num_row_groups)]
    assert md.num_rows == 960 and max(groups) <= 256 and len(groups) * 3 < len(sizes)


# --------------------------------------------------------------------------------------------------
# growing files


def _dataset(root: Path) -> pa.Table:
    files = [str(root / f) for f in Manifest.load(root, must_exist=True).files()]
    if not files:
        return SAMPLE_SCHEMA.empty_table()
    return pa.concat_tables([pq.read_table(f, partitioning=None) for f in files]).cast(SAMPLE_SCHEMA)


def _sorted(t: pa.Table) -> pa.Table:
    keys = [("timestamp", "ascending"), ("host", "ascending"), ("gpu", "ascending"), ("field_id", "ascending")]
    return t.take(pc.sort_indices(t, sort_keys=keys)).combine_chunks()


def _entries(root: Path, path: Path) -> list[dict]:
    return [e for e in Manifest.load(root).entries if e["path"] == str(path)]


def _complete(path: Path, opts: ParseOptions) -> parsers.ParseResult:
    """``path`` parsed up to its last newline (its complete extent), by ``parse_path`` on a copy."""
    data = path.read_bytes()
    copy = path.with_name(path.name + ".complete")
    copy.write_bytes(data[: data.rfind(b"\n") + 1])
    st = path.stat()
    os.utime(copy, ns=(st.st_atime_ns, st.st_mtime_ns))  # same mtime: same default time origin
    try:
        return parse_path(copy, opts)
    finally:
        copy.unlink()


def _exact(root: Path, path: Path, opts: ParseOptions) -> None:
    """Accounting over the path's entries equals the complete extent's of the current file; the
    stored samples are its samples; no count is negative."""
    now = _complete(path, opts)
    es = _entries(root, path)
    assert sum(e["records"] + e["missing"] + e["rejected"] for e in es) == now.accounting.total
    assert all(min(e["records"], e["missing"], e["rejected"]) >= 0 for e in es)
    assert sum(e["records"] for e in es) == now.accounting.records
    assert sum(e["rows"] for e in es) == now.samples.num_rows
    assert _sorted(_dataset(root)).equals(_sorted(now.samples))


def _grow(path: Path, extra: bytes) -> None:
    with path.open("ab") as fh:
        fh.write(extra)


def _split(data: bytes, frac: float) -> int:
    """Byte offset just after the line break nearest ``frac`` of the file."""
    return data.index(b"\n", int(len(data) * frac)) + 1


@pytest.mark.parametrize("kind", ["prom", "prom-scrapes", "dmon"])
def test_append_once_twice_and_rerun(tmp_path: Path, kind: str) -> None:
    src = tmp_path / "full"
    if kind == "dmon":
        write_dmon(src, gpus=2, ticks=60)
        opts = ParseOptions(start=START)
    else:
        _scrapes(src, 20, stamps=kind == "prom")
        opts = ParseOptions(start=START)
    data = src.read_bytes()
    a, b = _split(data, 0.4), _split(data, 0.7)
    live = tmp_path / "live.log"
    live.write_bytes(data[:a])
    root = tmp_path / "ds"
    first = ingest_files([live], root, opts)
    assert first.ingested[0]["kind"] == "file"
    _exact(root, live, opts)

    _grow(live, data[a:b])  # append once
    s = ingest_files([live], root, opts)
    (e,) = s.ingested
    assert e["kind"] == "append" and e["prefix_size"] == a and e["prefix_sha256"] == first.ingested[0]["sha256"]
    assert e["size"] == b and e["records"] == parse_path(live, opts).accounting.records - first.rows > 0
    assert "grew since their last ingest" in s.describe()
    _exact(root, live, opts)

    _grow(live, data[b:])  # append twice
    s2 = ingest_files([live], root, opts)
    assert s2.ingested[0]["kind"] == "append" and s2.ingested[0]["prefix_sha256"] == e["sha256"]
    _exact(root, live, opts)
    assert _sorted(_dataset(root)).equals(_sorted(parse_path(src, opts).samples))  # the whole file, once

    before = (root / "_manifest.json").read_bytes()
    again = ingest_files([live], root, opts)  # re-run: nothing
    assert again.ingested == [] and again.skipped == [str(live)]
    assert (root / "_manifest.json").read_bytes() == before


def test_scrape_stamped_tail_continues_the_stored_ticks(tmp_path: Path) -> None:
    # no --start: the first ingest stamps scrapes back from the mtime; the appended tail reuses that
    # origin, so the dataset is the whole file stamped once (no overlap, no gap at the join)
    src = _scrapes(tmp_path / "full", 20, stamps=False)
    data = src.read_bytes()
    a = _split(data, 0.5)
    live = tmp_path / "live.prom"
    live.write_bytes(data[:a])
    os.utime(live, (1_800_000_000, 1_800_000_000))
    root = tmp_path / "ds"
    first = ingest_files([live], root, ParseOptions())
    origin = first.ingested[0]["time_origin"]
    _grow(live, data[a:])
    os.utime(live, (1_800_000_777, 1_800_000_777))  # written later than 30 s per scrape would say
    ingest_files([live], root, ParseOptions())
    stored = _dataset(root)
    expect = parse_path(live, ParseOptions(start=datetime.fromisoformat(origin)))
    assert _sorted(stored).equals(_sorted(expect.samples))
    ticks = np.unique(stored.column("timestamp").cast(pa.int64()).to_numpy())
    assert len(ticks) == 20 and set(np.diff(ticks).tolist()) == {30_000}
    # the first ingest's origin: its mtime minus 30 s per scrape it held
    half = tmp_path / "half.prom"
    half.write_bytes(data[:a])
    n_first = parse_path(half).meta["scrapes"]
    assert 5 <= n_first <= 15
    assert datetime.fromisoformat(origin).timestamp() == 1_800_000_000 - 30 * n_first


def test_rewritten_prefix_is_a_new_file(tmp_path: Path) -> None:
    src = _scrapes(tmp_path / "full", 10)
    data = src.read_bytes()
    live = tmp_path / "live.prom"
    live.write_bytes(data[: _split(data, 0.5)])
    root = tmp_path / "ds"
    ingest_files([live], root, ParseOptions())
    changed = bytearray(data)
    i = changed.index(b"DCGM_FI_DEV_SM_CLOCK{")
    j = changed.index(b" ", changed.index(b"}", i)) + 1
    changed[j] = ord("9") if changed[j] != ord("9") else ord("8")  # one value in the first scrape
    live.write_bytes(bytes(changed))
    s = ingest_files([live], root, ParseOptions())
    assert s.ingested[0]["kind"] == "file" and s.rewritten == [str(live)]
    assert "rotated or rewritten" in s.describe()
    assert s.ingested[0]["records"] == parse_path(live).accounting.records  # whole file again
    # smaller than before (rotated): a new file as well
    live.write_bytes(data[:1000] + b"\n")
    s = ingest_files([live], root, ParseOptions())
    assert s.rewritten == [str(live)] and s.ingested[0]["kind"] == "file"


@pytest.mark.parametrize("cut", [b'{gpu="0",UUID="GPU-0000', b"DCGM_FI_DEV_SM_CL"])
def test_truncated_last_line_completed_later(tmp_path: Path, cut: bytes) -> None:
    """A writer flushed mid-line: the cut line is held back (neither stored nor rejected), then
    complete: appended, counts exact and never negative, stored exactly once."""
    src = _scrapes(tmp_path / "full", 6)
    data = src.read_bytes()
    a = data.index(b"\nDCGM_FI_DEV_SM_CLOCK", len(data) // 2) + 1  # a sample line mid-file
    cut_at = a + len(cut) if cut.startswith(b"DCGM") else data.index(b"{", a) + len(cut)
    assert cut_at < data.index(b"\n", a)
    live = tmp_path / "live.prom"
    live.write_bytes(data[:cut_at])
    root = tmp_path / "ds"
    s1 = ingest_files([live], root, ParseOptions())
    first = s1.ingested[0]
    short = _complete(live, ParseOptions())  # = the file up to byte a
    assert (first["size"], first["held_back_bytes"]) == (a, cut_at - a)
    assert first["rejected"] == 0 and first["rejected_examples"] == []
    assert first["records"] == short.accounting.records > 0 and s1.held_back == [str(live)]
    _grow(live, data[cut_at:])
    longer = parse_path(live)
    # prefix-stable: the longer file's first `rows` samples are exactly the earlier ones
    assert longer.samples.slice(0, short.samples.num_rows).equals(short.samples)
    s = ingest_files([live], root, ParseOptions())
    e = s.ingested[0]
    assert e["kind"] == "append" and e["prefix_size"] == a and e["held_back_bytes"] == 0
    assert e["rejected"] == 0 and e["rejected_examples"] == []
    assert e["records"] == longer.accounting.records - short.accounting.records > 0
    assert "are complete now" not in s.describe() and "held back" not in s.describe()
    _exact(root, live, ParseOptions())


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_parse_is_prefix_stable(tmp_path: Path, kind: str) -> None:
    """At every line boundary (and at cuts inside a line whose partial text is rejected), the first
    samples of the whole file are the prefix's samples, in order; counts never run ahead."""
    src = tmp_path / "full"
    if kind == "dmon":
        write_dmon(src, gpus=3, ticks=30)
    else:
        _scrapes(src, 6, stamps=False)
    opts = ParseOptions(start=START)
    data = src.read_bytes()
    whole = parse_path(src, opts)
    part = tmp_path / "part"
    rng = np.random.default_rng(3)
    checked = 0
    for cut in sorted(set(rng.integers(1, len(data), 40).tolist())):
        part.write_bytes(data[:cut])
        try:
            pre = parse_path(part, opts)
        except InputError:
            continue  # too short to detect
        r = pre.samples.num_rows
        assert r <= whole.samples.num_rows
        at_boundary = data[cut - 1 : cut] == b"\n"
        last_rejected = bool(pre.rejected) and pre.rejected[-1].line == data[:cut].count(b"\n") + 1
        if at_boundary or last_rejected:
            assert whole.samples.slice(0, r).equals(pre.samples), cut
            checked += 1
    assert checked >= 5


def test_manifest_json_stays_valid_with_appends(tmp_path: Path) -> None:
    src = _scrapes(tmp_path / "full", 8)
    data = src.read_bytes()
    live = tmp_path / "live.prom"
    live.write_bytes(data[: _split(data, 0.5)])
    root = tmp_path / "ds"
    ingest_files([live], root, ParseOptions())
    live.write_bytes(data)
    ingest_files([live], root, ParseOptions())
    doc = json.loads((root / "_manifest.json").read_text())
    kinds = [e["kind"] for e in doc["inputs"]]
    assert kinds == ["file", "append"]
    m = Manifest.load(root)
    assert [e["sha256"] for e in m.chain(m.entries[1])] == [e["sha256"] for e in doc["inputs"]]


def test_grown_file_with_fewer_samples_than_stored_is_ingested_whole(tmp_path: Path) -> None:
    # a parse that is not prefix-stable (simulated: the manifest says more was stored than the
    # longer file holds) must not skip blindly: the file is ingested whole, as a new file
    src = _scrapes(tmp_path / "full", 8)
    data = src.read_bytes()
    live = tmp_path / "live.prom"
    live.write_bytes(data[: _split(data, 0.5)])
    root = tmp_path / "ds"
    ingest_files([live], root, ParseOptions())
    doc = json.loads((root / "_manifest.json").read_text())
    doc["inputs"][0]["records"] = 10**9
    (root / "_manifest.json").write_text(json.dumps(doc))
    live.write_bytes(data)
    s = ingest_files([live], root, ParseOptions())
    (e,) = s.ingested
    assert e["kind"] == "file" and s.rewritten == [str(live)]
    assert e["records"] == e["rows"] == parse_path(live).accounting.records
    assert not list(root.rglob("*.tmp"))


def test_grown_file_of_a_format_without_line_order_says_so(tmp_path: Path) -> None:
    # nvidia-smi CSV comes out column by column: a grown log cannot skip its stored samples
    live = tmp_path / "smi.csv"
    head = "timestamp, index, utilization.gpu [%], power.draw [W]\n"
    rows = [f"2023/06/22 18:56:{s:02d}.000, 0, {s} %, {100 + s} W\n" for s in range(20)]
    live.write_text(head + "".join(rows[:10]))
    root = tmp_path / "ds"
    ingest_files([live], root, ParseOptions())
    live.write_text(head + "".join(rows))
    s = ingest_files([live], root, ParseOptions())
    assert s.regrown == [str(live)] and s.rewritten == [] and s.ingested[0]["kind"] == "file"
    assert "stored twice" in s.describe()
