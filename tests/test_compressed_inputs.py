"""Compressed inputs (gzip, zstd, bzip2, xz; told by magic bytes) and ``.ncu-repz`` (issue 18 items 1-2).

Every compressed file here is generated in ``tmp_path`` from a fixture or corpus file."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import subprocess
import sys
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path

import pytest
import zstandard
from click.testing import CliRunner

from rooftop.analyzer.store.ingest import ingest_files
from rooftop.cli.commands import main
from rooftop.errors import InputError
from rooftop.parsers import open_input, parse_path, stream_path
from rooftop.parsers.source import ParseOptions
from tests.conftest import FIXTURES, corpus_dir

COMPRESS: dict[str, Callable[[bytes], bytes]] = {
    "gzip": gzip.compress,
    "zstd": lambda b: zstandard.ZstdCompressor().compress(b),
    "bzip2": bz2.compress,
    "xz": lzma.compress,
}
TEXT_FIXTURES = [
    FIXTURES / "dcgm" / "prom_scrapes_phases.prom",
    FIXTURES / "dcgm" / "dmon_v4_phases.txt",
    FIXTURES / "ncu" / "demo.raw.csv",
    FIXTURES / "ncu" / "demo.details.csv",
]


@pytest.mark.parametrize("kind", sorted(COMPRESS))
@pytest.mark.parametrize("plain", TEXT_FIXTURES, ids=lambda p: p.name)
def test_every_text_format_reads_the_same_compressed(tmp_path: Path, kind: str, plain: Path) -> None:
    packed = tmp_path / "capture.dat"  # a name that says nothing: detection is by magic bytes
    packed.write_bytes(COMPRESS[kind](plain.read_bytes()))
    inp = open_input(packed)
    assert inp.source.compression == kind and inp.format == open_input(plain).format
    opts = ParseOptions(start=datetime(2026, 1, 1, tzinfo=timezone.utc))  # not the files' mtimes
    want, got = parse_path(plain, opts), parse_path(packed, opts)
    assert got.accounting.records == want.accounting.records > 0
    assert (got.accounting.missing, got.accounting.rejected) == (want.accounting.missing, want.accounting.rejected)
    if want.samples.num_rows:
        assert got.samples.equals(want.samples)
    else:
        cols = [c for c in want.kernels.columns if c != "input"]
        assert got.kernels[cols].equals(want.kernels[cols])


def test_prometheus_json_and_smi_compressed(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "h"},
         "values": [[1700000000 + i, str(i)] for i in range(50)]}]}}
    p = tmp_path / "q.json.gz"
    p.write_bytes(gzip.compress(json.dumps(doc).encode()))
    assert parse_path(p).accounting.records == 50
    smi = ("timestamp, index, utilization.gpu [%], power.draw [W]\n" + "".join(
        f"2023/06/22 18:56:{s:02d}.000, 0, {s} %, {100 + s} W\n" for s in range(30)))
    q = tmp_path / "smi.csv.xz"
    q.write_bytes(lzma.compress(smi.encode()))
    assert parse_path(q).accounting.records == 60


def test_concatenated_gzip_members_and_zstd_frames_are_read_whole(tmp_path: Path) -> None:
    text = (FIXTURES / "dcgm" / "prom_scrapes_phases.prom").read_bytes()
    half = text.rfind(b"\n", 0, len(text) // 2) + 1
    want = parse_path(FIXTURES / "dcgm" / "prom_scrapes_phases.prom").accounting.records
    for name, pack in (("g.gz", gzip.compress), ("z.zst", COMPRESS["zstd"])):
        p = tmp_path / name
        p.write_bytes(pack(text[:half]) + pack(text[half:]))  # `cat a.gz b.gz > c.gz`, zstd the same
        assert parse_path(p).accounting.records == want


@pytest.mark.parametrize("kind", sorted(COMPRESS))
def test_cut_short_or_corrupt_compressed_file_is_a_clear_error(tmp_path: Path, kind: str) -> None:
    data = COMPRESS[kind]((FIXTURES / "dcgm" / "prom_scrapes_phases.prom").read_bytes() * 20)
    p = tmp_path / "cut.bin"
    p.write_bytes(data[: len(data) * 2 // 3])
    with pytest.raises(InputError, match=rf"cannot be decompressed \({kind}: .*corrupt or cut short"):
        parse_path(p)


def test_compressed_input_streams_in_bounded_memory(tmp_path: Path) -> None:
    # ~120 MB of Prometheus text as a ~1 MB zstd file, streamed in a fresh process
    line = 'DCGM_FI_DEV_GPU_UTIL{gpu="%d",Hostname="h",pod="p"} 3 %d\n'
    block = "".join(line % (g, 1700000000000 + t * 1000) for t in range(1000) for g in range(8)).encode()
    p = tmp_path / "big.prom.zst"
    with p.open("wb") as fh, zstandard.ZstdCompressor().stream_writer(fh) as w:
        w.write(b"# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n")
        for _ in range(200):
            w.write(block)
    code = ("import resource,sys; from rooftop.parsers import stream_path; s=stream_path(sys.argv[1]); "
            "n=sum(b.num_rows for b in s); print(n, sum(s.result.meta['time_order'].values()), "
            "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss//1024)")
    out = subprocess.run([sys.executable, "-c", code, str(p)], capture_output=True, text=True, check=True)
    rows, repeated, rss_mb = map(int, out.stdout.split())
    # the 199 repeats of the block go back to its times: rejected by the time-order rule
    assert (rows, repeated) == (len(block.splitlines()), 199 * len(block.splitlines()))
    assert rss_mb < 600, rss_mb  # the decompressed text is ~5x this; batches and one chunk are held


def test_ingest_compressed_then_grown_is_ingested_whole_and_said(tmp_path: Path) -> None:
    text = (FIXTURES / "dcgm" / "prom_scrapes_phases.prom").read_bytes()
    half = text.rfind(b"\n", 0, len(text) // 2) + 1
    p = tmp_path / "night.prom.gz"
    p.write_bytes(gzip.compress(text[:half], mtime=0))
    ds = tmp_path / "ds"
    first = ingest_files([p], ds, ParseOptions())
    assert len(first.ingested) == 1 and first.ingested[0]["kind"] == "file"
    again = ingest_files([p], ds, ParseOptions())
    assert not again.ingested and again.skipped == [str(p)]  # idempotent
    with p.open("ab") as fh:  # grown: one more gzip member (the earlier bytes unchanged)
        fh.write(gzip.compress(text[half:], mtime=0))
    grown = ingest_files([p], ds, ParseOptions())
    assert grown.recompressed == [str(p)] and grown.ingested[0]["kind"] == "file"
    assert grown.ingested[0]["records"] == parse_path(FIXTURES / "dcgm" / "prom_scrapes_phases.prom").accounting.records
    assert "compressed input(s) grew since their last ingest" in grown.describe()


def _corpus_report() -> Path:
    d = corpus_dir("ncu")
    p = d / "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__sample_report.ncu-rep"
    if not p.is_file():
        pytest.skip("sample_report.ncu-rep not in the corpus")
    return p


def _needs_ncu_report() -> None:
    pytest.importorskip("ncu_report")


@pytest.mark.corpus
def test_ncu_repz_reads_like_the_report(tmp_path: Path) -> None:
    _needs_ncu_report()
    rep = _corpus_report()
    repz = tmp_path / "run.ncu-repz"
    repz.write_bytes(COMPRESS["zstd"](rep.read_bytes()))
    odd = tmp_path / "renamed.bin"  # by content, not name
    odd.write_bytes(repz.read_bytes())
    want = parse_path(rep)
    for p in (repz, odd):
        got = parse_path(p)
        assert got.accounting.path == str(p) and got.accounting.records == want.accounting.records > 0
        cols = [c for c in want.kernels.columns if c != "input"]
        assert got.kernels[cols].equals(want.kernels[cols])
        assert set(got.kernels["input"]) == {str(p)}
    assert not [f for f in os.listdir(tmp_path) if f.startswith("rooftop-")]


@pytest.mark.corpus
def test_ncu_repz_in_analyze_folders_and_diff(tmp_path: Path) -> None:
    _needs_ncu_report()
    rep = _corpus_report()
    folder = tmp_path / "runs"
    folder.mkdir()
    (folder / "a.ncu-repz").write_bytes(COMPRESS["zstd"](rep.read_bytes()))
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(folder), "--json", str(out)])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert [i["format"] for i in doc["inputs"]] == ["ncu-rep"] and doc["kernels"]
    res = CliRunner().invoke(main, ["diff", str(rep), str(folder / "a.ncu-repz"), "--json", str(tmp_path / "d.json"),
                                    "--html", str(tmp_path / "d.html")])
    assert res.exit_code == 0, res.output
    d = json.loads((tmp_path / "d.json").read_text())
    assert d["pairs"] and all(p["change"]["duration"] == 0 for p in d["pairs"])


def test_stream_path_reads_compressed_with_limit_of_the_file(tmp_path: Path) -> None:
    text = (FIXTURES / "dcgm" / "prom_scrapes_phases.prom").read_bytes()
    p = tmp_path / "s.gz"
    p.write_bytes(gzip.compress(text))
    s = stream_path(p, ParseOptions(), limit=p.stat().st_size)
    assert sum(b.num_rows for b in s) == parse_path(p).accounting.records
