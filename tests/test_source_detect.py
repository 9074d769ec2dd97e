"""Encodings, line streaming and format detection from content (never from the file name)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.formats import detect_format
from rooftop.parsers.source import Source

RAW_HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream"\n'
DETAILS_HEAD = '"ID","Process ID","Process Name","Host Name","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'


def _write(tmp_path: Path, name: str, data: bytes) -> Source:
    p = tmp_path / name
    p.write_bytes(data)
    return Source(p)


def test_utf8_bom_crlf_lines(tmp_path: Path) -> None:
    src = _write(tmp_path, "a.txt", b"\xef\xbb\xbfone\r\ntwo\r\nthree")
    assert src.encoding == "utf-8" and src.bom_len == 3
    assert list(src.lines()) == [(1, "one"), (2, "two"), (3, "three")]
    assert src.text() == "one\ntwo\nthree"


def test_utf16_with_and_without_bom(tmp_path: Path) -> None:
    text = "==PROF== Connected\r\n  Section: GPU Speed Of Light Throughput\r\n"
    with_bom = _write(tmp_path, "b.log", "\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    assert with_bom.encoding == "utf-16-le"
    assert [t for _, t in with_bom.lines()][1].strip() == "Section: GPU Speed Of Light Throughput"
    no_bom = _write(tmp_path, "c.log", text.encode("utf-16-le"))
    assert no_bom.encoding == "utf-16-le" and not no_bom.is_binary


def test_binary_garbage_is_binary(tmp_path: Path) -> None:
    src = _write(tmp_path, "x.csv", bytes(range(256)) * 4)
    assert src.is_binary


@pytest.mark.parametrize(
    ("name", "content", "fmt"),
    [
        ("report.txt", b"NVR\x00\x02\x00\x00\x00", "ncu-rep"),
        ("weird.bin", ("==PROF== Connected\n" + RAW_HEAD).encode(), "ncu-raw-csv"),
        ("x.log", ("app says hi\n" + DETAILS_HEAD).encode(), "ncu-details-csv"),
        ("a.csv", b"#Entity   GRACT        SMACT\nID\nGPU 0     0.000        0.000\n", "dcgm-dmon"),
        ("b.csv", b"# Entity  GRACT  TENSO\n      Id\n    GPU 0  0.973  0.931\n", "dcgm-dmon"),
        ("m.txt", b'# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization.\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 3\n', "prometheus-text"),
        ("q.txt", b'{"status":"success","data":{"resultType":"vector","result":[]}}', "prometheus-json"),
        ("s.txt", b"# gpu    pwr  gtemp  mtemp     sm    mem\n# Idx      W      C      C      %      %\n    0     43     32      -      0      0\n", "nvidia-smi-dmon"),
        ("t.txt", b"timestamp, name, utilization.gpu [%], memory.used [MiB]\n2024/01/01 00:00:00.000, NVIDIA A100, 3 %, 10 MiB\n", "nvidia-smi-csv"),
        ("c.csv", b"==PROF== Connected to process 1\n==ERROR== ERR_NVGPUCTRPERM\n", "ncu-console"),
    ],
)
def test_detect_from_content(tmp_path: Path, name: str, content: bytes, fmt: str) -> None:
    assert detect_format(_write(tmp_path, name, content)) == fmt


def test_unknown_format_is_input_error(tmp_path: Path) -> None:
    p = tmp_path / "notes.csv"
    p.write_text("a,b,c\n1,2,3\n")
    with pytest.raises(InputError, match="not a format rooftop reads"):
        parse_path(p)


def test_empty_and_missing_files(tmp_path: Path) -> None:
    p = tmp_path / "empty.csv"
    p.write_bytes(b"")
    with pytest.raises(InputError, match="is empty"):
        parse_path(p)
    with pytest.raises(InputError, match="no such file"):
        parse_path(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="is a directory"):
        parse_path(tmp_path)


def test_limit_caps_every_read_path(tmp_path: Path) -> None:
    data = b"\xef\xbb\xbfone\r\ntwo\r\nthr"  # BOM (3) + "one\r\n" (5) + "two\r\n" (5) + "thr" (3) = 16 bytes
    whole = _write(tmp_path, "a.txt", data)
    cut = Source(whole.path, limit=13)  # up to the second CRLF
    assert (whole.size, cut.size, Source(whole.path, limit=99).size) == (16, 13, 16)
    assert cut.read_bytes() == data[:13] and whole.read_bytes() == data
    assert cut.text() == "one\ntwo\n" and whole.text() == "one\ntwo\nthr"
    assert list(cut.lines()) == [(1, "one"), (2, "two")]
    assert list(whole.lines())[-1] == (3, "thr")
    assert cut.head_bytes == data and cut.encoding == "utf-8" and cut.bom_len == 3  # detection: the head
    with cut.open_bytes() as fh:
        assert fh.read(2) == data[:2] and fh.read() == data[2:13] and fh.read() == b""
        assert fh.seek(3) == 3 and fh.read(100) == data[3:13]
        assert fh.seek(-4, 2) == 9 and fh.read() == data[9:13] and fh.tell() == 13
        buf = bytearray(8)
        fh.seek(10)
        assert fh.readinto(buf) == 3 and bytes(buf[:3]) == data[10:13]
    with Source(whole.path, limit=0).open_bytes() as fh:
        assert fh.read() == b""
    with whole.open_bytes() as fh:  # no limit: the file itself
        assert fh.read() == data


def test_limit_on_utf16_lines(tmp_path: Path) -> None:
    text = "a 1\nb 2\nc 3\n"
    data = "\ufeff".encode("utf-16-le") + text.encode("utf-16-le")
    src = Source(_write(tmp_path, "u.txt", data).path, limit=2 + 2 * len("a 1\nb 2\n"))
    assert src.encoding == "utf-16-le" and list(src.lines()) == [(1, "a 1"), (2, "b 2")]
    assert src.text() == "a 1\nb 2\n"


def test_limit_on_large_reads_crosses_buffer_sizes(tmp_path: Path) -> None:
    data = bytes(range(256)) * 4096  # 1 MiB: reads larger than the BufferedReader's buffer
    p = tmp_path / "big.bin"
    p.write_bytes(data)
    limit = len(data) - 12345
    with Source(p, limit=limit).open_bytes() as fh:
        got = b"".join(iter(lambda: fh.read(300_001), b""))
    assert got == data[:limit]
