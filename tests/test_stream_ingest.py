"""Streaming parse (``parsers.stream_path``) and streaming, append-aware ``rooftop ingest``."""

from __future__ import annotations

import hashlib
import json
import os
import sys
import tempfile
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest

import rooftop.parsers.nvsmi.reader as nvsmi
import rooftop.parsers.prometheus.text as pt
from rooftop import parsers
from rooftop.analyzer.store import dataset as dsmod
from rooftop.analyzer.store import ingest as ingest_mod
from rooftop.analyzer.store.digest import Digest
from rooftop.analyzer.store.ingest import ingest_files
from rooftop.analyzer.store.ingest_summary import IngestSummary
from rooftop.analyzer.store.manifest import Manifest
from rooftop.errors import InputError
from rooftop.parsers import parse_path, stream_path
from rooftop.parsers.formats import FORMATS
from rooftop.parsers.model import SAMPLE_SCHEMA, ParseResult
from rooftop.parsers.source import ParseOptions

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_inputs import write_dmon, write_prom_text

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _drain(path: Path, opts: ParseOptions) -> tuple[list[pa.Table], ParseResult]:
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


def _write_smi(path: Path, kind: str, ticks: int = 30) -> Path:
    """An nvidia-smi log of 2 GPUs: ``smi-csv`` (``--query-gpu ... -l 1``: timestamps, repeated
    headers, a [N/A], a short row) or ``smi-dmon`` (no timestamps: ticked; '-' missing, a PCIe glitch)."""
    out = []
    if kind == "smi-csv":
        head = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
        for t in range(ticks):
            if t % 10 == 0:
                out.append(head)
            for g in range(2):
                power = "[N/A]" if (t + g) % 7 == 0 else f"{100 + t}.5 W"
                out.append(f"2023/06/22 18:{t // 60:02d}:{t % 60:02d}.250, {g}, NVIDIA H100, {t % 100} %, "
                           f"{800 + t} MiB, {power}\n")
            if t % 9 == 4:
                out.append(f"2023/06/22 18:00:00.000, 0, broken row {t}\n")
    else:
        for t in range(ticks):
            if t % 10 == 0:
                out.append("# gpu   pwr gtemp    sm   mem rxpci\n# Idx     W     C     %     %  MB/s\n")
            for g in range(2):
                mem = "-" if (t + g) % 5 == 0 else str(t % 50)
                pci = "2016001" if t == 7 and g == 1 else str(1000 + t)
                out.append(f"    {g}   {200 + t}    40   {t % 100}   {mem}   {pci}\n")
    path.write_text("".join(out))
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
    # a parser without <function>_batches (nvidia-smi's parse_csv under another name): parsed whole,
    # handed on in zero-copy slices
    monkeypatch.setattr(nvsmi, "parse_whole", nvsmi.parse_csv, raising=False)
    monkeypatch.setitem(FORMATS, "nvidia-smi-csv", replace(
        FORMATS["nvidia-smi-csv"], parser="rooftop.parsers.nvsmi.reader:parse_whole", streamable=False))
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
    t = pa.concat_tables([pq.read_table(f, partitioning=None) for f in files]).cast(SAMPLE_SCHEMA)
    # samples that name no host are stored under their input's key (docs/formulas.md#fleet,
    # "GPU identity"); compared with what the parser read, that key is the parser's missing host
    host = t.column("host")
    own = pc.starts_with(pc.fill_null(host, ""), "input:")
    return t.set_column(t.schema.get_field_index("host"), "host", pc.if_else(own, pa.scalar(None, pa.string()), host))


def _sorted(t: pa.Table) -> pa.Table:
    keys = [("timestamp", "ascending"), ("host", "ascending"), ("gpu", "ascending"), ("field_id", "ascending")]
    return t.take(pc.sort_indices(t, sort_keys=keys)).combine_chunks()


def _entries(root: Path, path: Path) -> list[dict]:
    return [e for e in Manifest.load(root).entries if e["path"] == str(path)]


def _complete(path: Path, opts: ParseOptions) -> ParseResult:
    """``path`` parsed up to its last newline (its complete extent), by ``parse_path`` on a copy."""
    data = path.read_bytes()
    copy = path.with_name(path.name + ".complete")
    end = data.rfind(b"\n") + 1
    if data.startswith(b"\xff\xfe"):  # UTF-16-LE: the newline code unit is "\n\x00"
        end = data.rfind(b"\n\x00") + 2
    copy.write_bytes(data[:end])
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


def _ingest_first_half(tmp_path: Path, name: str, head: bytes, mtime: float | None = 1_800_000_000
                       ) -> tuple[Path, Path, IngestSummary]:
    """``head`` written as ``name`` (with ``mtime``: the tick origin without --start), then ingested
    into ``tmp_path / "ds"``."""
    live = tmp_path / name
    live.write_bytes(head)
    if mtime is not None:
        os.utime(live, (mtime, mtime))
    root = tmp_path / "ds"
    return live, root, ingest_files([live], root, ParseOptions())


def _split(data: bytes, frac: float) -> int:
    """Byte offset just after the line break nearest ``frac`` of the file."""
    return data.index(b"\n", int(len(data) * frac)) + 1


@pytest.mark.parametrize("kind", ["prom", "prom-scrapes", "dmon", "smi-csv", "smi-dmon"])
def test_append_once_twice_and_rerun(tmp_path: Path, kind: str) -> None:
    src = tmp_path / "full"
    if kind.startswith("smi"):
        _write_smi(src, kind, ticks=60)
        opts = ParseOptions(start=START)
    elif kind == "dmon":
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
    live, root, first = _ingest_first_half(tmp_path, "live.prom", data[:a])
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
    live, root, _ = _ingest_first_half(tmp_path, "live.prom", data[: _split(data, 0.5)], mtime=None)
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


@pytest.mark.parametrize("kind", ["prom", "dmon", "smi-csv", "smi-dmon"])
def test_parse_is_prefix_stable(tmp_path: Path, kind: str) -> None:
    """At every line boundary (and at cuts inside a line whose partial text is rejected), the first
    samples of the whole file are the prefix's samples, in order; counts never run ahead."""
    src = tmp_path / "full"
    if kind.startswith("smi"):
        _write_smi(src, kind)
    elif kind == "dmon":
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
    live, root, _ = _ingest_first_half(tmp_path, "live.prom", data[: _split(data, 0.5)], mtime=None)
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
    live, root, _ = _ingest_first_half(tmp_path, "live.prom", data[: _split(data, 0.5)], mtime=None)
    doc = json.loads((root / "_manifest.json").read_text())
    doc["inputs"][0]["records"] = 10**9
    (root / "_manifest.json").write_text(json.dumps(doc))
    live.write_bytes(data)
    s = ingest_files([live], root, ParseOptions())
    (e,) = s.ingested
    assert e["kind"] == "file" and s.rewritten == [str(live)]
    assert e["records"] == e["rows"] == parse_path(live).accounting.records
    assert not list(root.rglob("*.tmp"))


def test_grown_file_of_a_format_without_line_order_says_so(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # a format not in APPENDABLE (nvidia-smi CSV taken out of it here): a grown log cannot skip its stored samples
    monkeypatch.setattr(ingest_mod, "APPENDABLE", ingest_mod.APPENDABLE - {"nvidia-smi-csv"})
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


# --------------------------------------------------------------------------------------------------
# the unterminated last line: held back until its newline arrives (or --finished)

PROM_HEAD = b'# TYPE DCGM_FI_PROF_SM_ACTIVE gauge\nDCGM_FI_PROF_SM_ACTIVE{gpu="0",Hostname="n1"} 0.25\n'
PROM_CUT = b'DCGM_FI_PROF_SM_ACTIVE{gpu="1",Hostname="n1"} 0.5'  # "0.53" cut after "0.5"
DMON_HEAD = b"#Entity   GRACT   SMACT\nID\nGPU 0     0.250   0.125\n"
DMON_CUT = b"GPU 1     0.750   0.5"
CUT_INPUTS = {"prom": (PROM_HEAD, PROM_CUT), "dmon": (DMON_HEAD, DMON_CUT)}
OPTS = ParseOptions(start=START)


def _gpu_values(root: Path, gpu: str) -> list[float]:
    t = _dataset(root)
    return [v for g, v in zip(t.column("gpu").to_pylist(), t.column("value").to_pylist(), strict=True) if g == gpu]


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_value_cut_mid_number_is_held_back_then_stored_once(tmp_path: Path, kind: str) -> None:
    head, cut = CUT_INPUTS[kind]
    live = tmp_path / f"live.{kind}"
    live.write_bytes(head + cut)
    root = tmp_path / "ds"
    s = ingest_files([live], root, OPTS)
    (e,) = s.ingested
    # prom: one sample (gpu 0 = 0.25); dmon: two (gpu 0: GRACT 0.25, SMACT 0.125); the cut line none
    n_head = {"prom": 1, "dmon": 2}[kind]
    assert (e["records"], e["missing"], e["rejected"], e["rows"]) == (n_head, 0, 0, n_head)
    assert (e["size"], e["held_back_bytes"], e["kind"]) == (len(head), len(cut), "file")
    assert e["sha256"] == hashlib.sha256(head).hexdigest() and "finished" not in e
    assert _gpu_values(root, "1") == []  # "0.5" is not stored
    text = s.describe()
    assert s.held_back == [str(live)] and "held back the unterminated last line of 1 input(s)" in text
    assert "pass --finished if the files are complete" in text and str(live) in text

    before = (root / "_manifest.json").read_bytes()
    again = ingest_files([live], root, OPTS)  # nothing complete is new: no entry
    assert again.ingested == [] and again.skipped == again.waiting == again.held_back == [str(live)]
    assert "no complete new lines" in again.describe() and "already in the dataset" not in again.describe()
    assert (root / "_manifest.json").read_bytes() == before

    _grow(live, b"3\n")  # the line completes: 0.53
    s2 = ingest_files([live], root, OPTS)
    (e2,) = s2.ingested
    n_tail = {"prom": 1, "dmon": 2}[kind]  # prom: gpu 1 = 0.53; dmon: gpu 1 GRACT 0.75, SMACT 0.53
    assert e2["kind"] == "append" and (e2["records"], e2["missing"], e2["rejected"]) == (n_tail, 0, 0)
    assert e2["held_back_bytes"] == 0 and s2.held_back == [] and "held back" not in s2.describe()
    assert sorted(_gpu_values(root, "1")) == ([0.53] if kind == "prom" else [0.53, 0.75])
    _exact(root, live, OPTS)


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_line_cut_before_its_value_counts_exactly_once_complete(tmp_path: Path, kind: str) -> None:
    head, cut = CUT_INPUTS[kind]
    stub = cut[: cut.index(b"0.")]  # name/entity only: would have been rejected
    live = tmp_path / f"live.{kind}"
    live.write_bytes(head + stub)
    root = tmp_path / "ds"
    first = ingest_files([live], root, OPTS).ingested[0]
    assert first["rejected"] == 0 and first["held_back_bytes"] == len(stub)
    _grow(live, cut[len(stub):])  # still unterminated: nothing new
    assert ingest_files([live], root, OPTS).waiting == [str(live)]
    _grow(live, b"3\n" + head.splitlines(keepends=True)[-1])  # completed, and one more line
    e = ingest_files([live], root, OPTS).ingested[0]
    assert e["kind"] == "append" and min(e["records"], e["missing"], e["rejected"]) >= 0
    assert e["records"] == 2 * {"prom": 1, "dmon": 2}[kind] and e["rejected"] == 0
    _exact(root, live, OPTS)


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_finished_ingests_the_last_line(tmp_path: Path, kind: str) -> None:
    head, cut = CUT_INPUTS[kind]
    live = tmp_path / f"live.{kind}"
    live.write_bytes(head + cut + b"3")  # complete, just without a final newline
    root = tmp_path / "ds"
    s = ingest_files([live], root, OPTS, finished=True)
    (e,) = s.ingested
    assert e["finished"] is True and e["held_back_bytes"] == 0 and e["size"] == len(head + cut) + 1
    assert e["records"] == parse_path(live, OPTS).accounting.records and s.held_back == []
    assert sorted(_gpu_values(root, "1")) == ([0.53] if kind == "prom" else [0.53, 0.75])
    # later runs without --finished: the stored bytes are all there, nothing is added
    before = (root / "_manifest.json").read_bytes()
    again = ingest_files([live], root, OPTS)
    assert again.ingested == [] and again.skipped == [str(live)] and again.waiting == again.held_back == []
    assert (root / "_manifest.json").read_bytes() == before


def test_finished_then_grown_after_a_cut_line_is_not_an_append(tmp_path: Path) -> None:
    # --finished stored "0.5" as it was; the file then grew ("3\n"): appending after it would keep
    # 0.5 and skip 0.53, so the file is ingested as a rewritten one and the summary says so
    live = tmp_path / "live.prom"
    live.write_bytes(PROM_HEAD + PROM_CUT)
    root = tmp_path / "ds"
    ingest_files([live], root, OPTS, finished=True)
    assert sorted(_gpu_values(root, "1")) == [0.5]
    _grow(live, b"3\n")
    s = ingest_files([live], root, OPTS)
    (e,) = s.ingested
    assert e["kind"] == "file" and s.recut == [str(live)] and s.rewritten == []
    assert "stored their unterminated last line" in s.describe() and str(live) in s.describe()
    assert e["records"] == 2 and sorted(_gpu_values(root, "1")) == [0.5, 0.53]  # earlier samples kept
    # a --finished entry whose last byte was a newline appends as usual
    live2 = tmp_path / "live2.prom"
    live2.write_bytes(PROM_HEAD)
    root2 = tmp_path / "ds2"  # (in `root`, live2's grown bytes are already known: same SHA-256 as live's)
    ingest_files([live2], root2, OPTS, finished=True)
    _grow(live2, PROM_CUT + b"3\n")
    s2 = ingest_files([live2], root2, OPTS)
    assert s2.ingested[0]["kind"] == "append" and s2.recut == [] and s2.ingested[0]["records"] == 1


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_file_without_any_newline(tmp_path: Path, kind: str) -> None:
    one = CUT_INPUTS[kind][0].splitlines()[0]  # the first line, not yet complete
    live = tmp_path / f"live.{kind}"
    live.write_bytes(one)  # a first line still being written: nothing complete
    root = tmp_path / "ds"
    s = ingest_files([live], root, OPTS)
    assert s.ingested == [] and s.waiting == s.held_back == [str(live)] and s.unusable == []
    assert "held back" in s.describe() and Manifest.load(root).entries == []
    assert not list(root.rglob("*.parquet"))
    # one sample line and no newline at all: held back; --finished ingests it
    full = tmp_path / "full.prom"
    full.write_bytes(PROM_CUT + b"3")
    held = ingest_files([full], root, OPTS)
    assert held.ingested == [] and held.held_back == [str(full)]
    fin = ingest_files([full], root, OPTS, finished=True)
    assert fin.ingested[0]["records"] == 1 and _gpu_values(root, "1") == [0.53]


@pytest.mark.parametrize("kind", ["prom", "dmon", "smi-csv", "smi-dmon"])
def test_ingest_at_arbitrary_byte_cuts_stores_the_file_once(tmp_path: Path, kind: str) -> None:
    """A growing file ingested after each of a few random flushes (mid-line, mid-number) holds, at
    the end, exactly the whole file's samples, with exact non-negative counts after every step."""
    src = tmp_path / "full"
    if kind.startswith("smi"):
        _write_smi(src, kind, ticks=20)
    elif kind == "dmon":
        write_dmon(src, gpus=2, ticks=20)
    else:
        _scrapes(src, 4)
    data = src.read_bytes()
    rng = np.random.default_rng(11)
    for trial in range(3):
        live = tmp_path / f"live{trial}"
        root = tmp_path / f"ds{trial}"
        cuts = sorted(set(rng.integers(len(data) // 10, len(data), 4).tolist()))
        done = 0
        for cut in [*cuts, len(data)]:
            _grow(live, data[done:cut])
            done = cut
            ingest_files([live], root, OPTS)
            if _complete(live, OPTS).accounting.total:
                _exact(root, live, OPTS)
        assert _sorted(_dataset(root)).equals(_sorted(parse_path(src, OPTS).samples))
        assert all(e["kind"] == "append" for e in Manifest.load(root).entries[1:])


def test_cr_only_file_ends_its_extent_at_the_last_cr(tmp_path: Path) -> None:
    head, cut = CUT_INPUTS["dmon"]
    live = tmp_path / "live.dmon"
    live.write_bytes(head.replace(b"\n", b"\r") + cut)  # classic-Mac line ends, no "\n" at all
    root = tmp_path / "ds"
    e = ingest_files([live], root, OPTS).ingested[0]
    assert (e["size"], e["held_back_bytes"], e["records"]) == (len(head), len(cut), 2)
    _grow(live, b"3\r")
    e2 = ingest_files([live], root, OPTS).ingested[0]
    assert e2["kind"] == "append" and e2["records"] == 2 and e2["held_back_bytes"] == 0
    assert sorted(_gpu_values(root, "1")) == [0.53, 0.75]


@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_crlf_file_cut_between_cr_and_lf(tmp_path: Path, kind: str) -> None:
    head, cut = CUT_INPUTS[kind]
    crlf_head, line = head.replace(b"\n", b"\r\n"), cut + b"3\r"
    live = tmp_path / f"live.{kind}"
    live.write_bytes(crlf_head + line)  # the writer flushed between "\r" and "\n"
    root = tmp_path / "ds"
    e = ingest_files([live], root, OPTS).ingested[0]
    assert (e["size"], e["held_back_bytes"]) == (len(crlf_head), len(line))
    assert _gpu_values(root, "1") == []
    _grow(live, b"\n")
    e2 = ingest_files([live], root, OPTS).ingested[0]
    assert e2["kind"] == "append" and e2["rejected"] == 0 and e2["records"] == {"prom": 1, "dmon": 2}[kind]
    assert 0.53 in _gpu_values(root, "1")
    _exact(root, live, OPTS)


@pytest.mark.parametrize(("kind", "enc", "bom"), [("prom", "utf-16-le", "\ufeff"), ("dmon", "utf-16-le", "\ufeff"),
                                                 ("dmon", "utf-16-be", "\ufeff")])
def test_utf16_growing_log_is_held_back_and_appended(tmp_path: Path, kind: str, enc: str, bom: str) -> None:
    # PowerShell `>` writes UTF-16 with a BOM, flushed mid-line: the unterminated line is held back
    # (terminators are UTF-16 code units), so each growth is an append, never the whole file again
    head, cut = CUT_INPUTS[kind]
    live = tmp_path / f"live.{kind}"
    data = (bom + (head + cut).decode()).encode(enc)
    live.write_bytes(data)
    root = tmp_path / "ds"
    s = ingest_files([live], root, OPTS)
    (e,) = s.ingested
    held = len(cut.decode().encode(enc))
    assert (e["size"], e["held_back_bytes"]) == (len(data) - held, held) and s.held_back == [str(live)]
    assert 0.53 not in _gpu_values(root, "1")
    _grow(live, ("3\n" + head.decode().splitlines(keepends=True)[-1]).encode(enc))
    s2 = ingest_files([live], root, OPTS)
    (e2,) = s2.ingested
    assert s2.recut == [] and e2["kind"] == "append" and e2["records"] == {"prom": 2, "dmon": 4}[kind]
    assert _gpu_values(root, "1").count(0.53) == 1
    assert s2.held_back == [] and ingest_files([live], root, OPTS).ingested == []
    _exact(root, live, OPTS)


def test_file_growing_while_ingested_stores_only_the_hashed_bytes(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # the writer appends between hashing and parsing: the entry covers the hashed extent only, and
    # the next ingest appends the rest (nothing stored twice, nothing lost)
    from rooftop.analyzer.store import ingest as ingmod

    live = tmp_path / "live.prom"
    live.write_bytes(PROM_HEAD)
    real = ingmod.file_digest

    def digest_then_grow(path: Path, prefix_size: int | None = None, **kw: Any) -> Digest:
        d = real(path, prefix_size, **kw)
        _grow(path, PROM_CUT + b"3\n")
        return d

    monkeypatch.setattr(ingmod, "file_digest", digest_then_grow)
    root = tmp_path / "ds"
    e = ingest_files([live], root, OPTS).ingested[0]
    assert (e["size"], e["records"]) == (len(PROM_HEAD), 1) and _gpu_values(root, "1") == []
    monkeypatch.setattr(ingmod, "file_digest", real)
    e2 = ingest_files([live], root, OPTS).ingested[0]
    assert e2["kind"] == "append" and e2["records"] == 1 and _gpu_values(root, "1") == [0.53]
    _exact(root, live, OPTS)


def test_stream_path_limit(tmp_path: Path) -> None:
    live = tmp_path / "live.prom"
    live.write_bytes(PROM_HEAD + PROM_CUT + b"3\n")
    batches, result = _drain_limited(live, len(PROM_HEAD))
    assert result.accounting.records == 1 and pa.concat_tables(batches).column("value").to_pylist() == [0.25]
    assert parse_path(live, OPTS).accounting.records == 2  # parse_path reads the whole file


def _drain_limited(path: Path, limit: int) -> tuple[list[pa.Table], ParseResult]:
    stream = stream_path(path, OPTS, limit=limit)
    batches = list(stream)
    assert stream.result is not None
    return batches, stream.result


def test_cli_ingest_finished(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rooftop.cli.commands import main

    live = tmp_path / "live.prom"
    live.write_bytes(PROM_HEAD + PROM_CUT)
    root = tmp_path / "ds"
    args = ["ingest", str(live), "--to", str(root), "--start", "2025-01-01T00:00:00Z"]
    r = CliRunner().invoke(main, args)
    assert r.exit_code == 0, r.output
    assert "held back the unterminated last line of 1 input(s)" in r.output
    r = CliRunner().invoke(main, [*args, "--finished"])
    assert r.exit_code == 0, r.output
    assert "held back" not in r.output and Manifest.load(root).entries[-1]["finished"] is True
    assert sorted(_gpu_values(root, "1")) == [0.5]


def test_query_json_without_final_newline_is_read_whole(tmp_path: Path) -> None:
    # a Prometheus query JSON is one document (curl writes no final newline): nothing is held back
    doc = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "gpu": "1", "Hostname": "n1"},
         "value": [1735689600, "0.53"]}]}}
    q = tmp_path / "q.json"
    q.write_text(json.dumps(doc, indent=1))  # pretty-printed, last line "}" unterminated
    root = tmp_path / "ds"
    s = ingest_files([q], root, OPTS)
    (e,) = s.ingested
    assert (e["format"], e["records"], e["held_back_bytes"], e["size"]) == ("prometheus-json", 1, 0, q.stat().st_size)
    assert s.held_back == [] and _gpu_values(root, "1") == [0.53]


# --------------------------------------------------------------------------------------------------
# nvidia-smi streams: segments in row-major order, appendable


def test_nvsmi_csv_streams_bounded_row_major_batches(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nvsmi, "SEGMENT_LINES", 3)
    path = tmp_path / "smi.csv"
    path.write_text("timestamp, index, utilization.gpu [%], power.draw [W]\n" + "".join(
        f"2023/06/22 18:56:{s:02d}.000, {g}, {s} %, {100 + s} W\n" for s in range(5) for g in range(2)))
    batches, result = _drain(path, ParseOptions())
    # 10 rows in segments of 3 rows: 3 + 3 + 3 + 1 rows, 2 cells each
    assert [b.num_rows for b in batches] == [6, 6, 6, 2]
    t = pa.concat_tables(batches)
    assert t.column("field").to_pylist() == ["utilization.gpu", "power.draw"] * 10  # row by row
    assert t.column("gpu").to_pylist() == [g for s in range(5) for g in ("0", "0", "1", "1")]
    assert t.column("value").to_pylist()[:4] == [0.0, 100.0, 0.0, 100.0]
    whole = parse_path(path)
    assert result.accounting.as_dict() == whole.accounting.as_dict() and whole.accounting.records == 20
    assert t.equals(whole.samples)


def test_grown_nvsmi_csv_log_is_appended(tmp_path: Path) -> None:
    head = "timestamp, index, utilization.gpu [%], power.draw [W]\n"
    rows = [f"2023/06/22 18:56:{s:02d}.000, {g}, {s} %, {100 + s} W\n" for s in range(3) for g in range(2)]
    live = tmp_path / "smi.csv"
    live.write_text(head + "".join(rows))
    root = tmp_path / "ds"
    first = ingest_files([live], root, ParseOptions())
    assert (first.ingested[0]["records"], first.rows) == (12, 12)  # 6 rows x 2 cells
    more = [f"2023/06/22 18:56:{s:02d}.000, {g}, {s} %, {100 + s} W\n" for s in (3, 4) for g in range(2)]
    more[3] = more[3].replace("104 W", "[N/A]")
    _grow(live, ("".join(more) + "2023/06/22 18:56:05.000, 0, cut\n").encode())
    s = ingest_files([live], root, ParseOptions())
    (e,) = s.ingested
    # 4 new rows x 2 cells, one [N/A]: 7 records, 1 missing; the short row: its 2 cells rejected
    assert e["kind"] == "append" and (e["records"], e["missing"], e["rejected"]) == (7, 1, 2)
    assert e["rows"] == 7 and s.regrown == [] and s.rewritten == []
    assert [r["line"] for r in e["rejected_examples"]] == [12]
    _exact(root, live, ParseOptions())
    assert _dataset(root).num_rows == 19


def test_ticked_nvsmi_dmon_tail_continues_the_stored_ticks(tmp_path: Path) -> None:
    # nvidia-smi dmon has no timestamps: the append reuses the first ingest's time origin
    src = _write_smi(tmp_path / "full", "smi-dmon", ticks=30)
    data = src.read_bytes()
    a = _split(data, 0.5)
    live, root, first = _ingest_first_half(tmp_path, "live.txt", data[:a])
    origin = first.ingested[0]["time_origin"]
    n_first = parse_path(live).meta["ticks"]
    assert datetime.fromisoformat(origin).timestamp() == 1_800_000_000 - n_first  # 1 s per tick
    _grow(live, data[a:])
    os.utime(live, (1_800_000_999, 1_800_000_999))
    s = ingest_files([live], root, ParseOptions())
    assert s.ingested[0]["kind"] == "append"
    stored = _dataset(root)
    assert _sorted(stored).equals(_sorted(parse_path(live, ParseOptions(start=datetime.fromisoformat(origin))).samples))
    ticks = np.unique(stored.column("timestamp").cast(pa.int64()).to_numpy())
    assert len(ticks) == 30 and set(np.diff(ticks).tolist()) == {1000}
