"""``.ncu-rep`` parser: container walk on synthetic bytes, missing module, unusable files."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.ncu import rep as ncu_rep
from rooftop.parsers.ncu.rep_container import read_container, walk_blocks
from tests.conftest import CORPUS


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _block(results: int, payload: bytes) -> bytes:
    # block header protobuf: field 1 (sources) = 0, field 2 (results), field 5 (payload size)
    header = b"\x08\x00" + b"\x10" + _varint(results) + b"\x28" + _varint(len(payload))
    return len(header).to_bytes(4, "little") + header + payload


def _report(*blocks: bytes) -> bytes:
    version = b"\x08\x07"
    file_header = b"\x0a\x05Linux"
    return (b"NVR\x00" + len(version).to_bytes(4, "little") + version
            + len(file_header).to_bytes(4, "little") + file_header + b"".join(blocks))


def test_walk_blocks_sums_declared_results() -> None:
    data = _report(_block(2, b"x" * 300), _block(3, b"y" * 10))
    assert walk_blocks(data) == (5, 5, None)


def test_walk_blocks_reports_truncation() -> None:
    data = _report(_block(2, b"x" * 300), _block(3, b"y" * 10))
    cut = data[:-5]
    declared, complete, truncated_at = walk_blocks(cut)
    assert declared == 5  # the last block's header is whole, its payload is not
    assert complete == 2
    assert truncated_at == len(_report(_block(2, b"x" * 300)))


def test_walk_blocks_headless_fragment() -> None:
    # B6-style: no magic, no file header, one block
    assert walk_blocks(_block(1, b"z" * 50)) == (1, 1, None)


def test_version_and_command_line_found_by_pattern(tmp_path: Path) -> None:
    cmd = b"/opt/nvidia/nsight-compute/2024.1.1/target/linux-desktop-glibc_2_11_3-x64/ncu --set full -o r ./a.out "
    payload = (b"\x12,2024.1.1.0 (build 33998838) (public-release)\"\x00"
               + b"\x1a" + _varint(len(cmd) + 2) + b"Z" + _varint(len(cmd)) + cmd)
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(_report(_block(1, payload)))
    info = read_container(p)
    assert info.has_magic and info.declared_results == 1
    assert info.ncu_version == "2024.1.1.0"
    assert info.command_line == cmd.decode().strip()


def test_missing_ncu_report_module_is_an_input_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(_report(_block(1, b"x")))
    monkeypatch.setitem(sys.modules, "ncu_report", None)  # "import ncu_report" now fails
    with pytest.raises(InputError) as err:
        parse_path(p)
    assert str(err.value).startswith(f"{p}: is an Nsight Compute report, and reading it needs NVIDIA's ncu_report")
    assert "pip install 'rooftop[ncu-rep]'" in str(err.value)


def test_reader_crash_is_an_input_error_not_a_dead_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(_report(_block(1, b"x")))
    crasher = tmp_path / "worker.py"
    crasher.write_text("import os, signal\nos.kill(os.getpid(), signal.SIGABRT)\n")
    monkeypatch.setattr(ncu_rep, "WORKER", crasher)
    monkeypatch.setattr(ncu_rep, "_module_available", lambda: True)
    with pytest.raises(InputError) as err:
        parse_path(p)
    assert "crashed reading it (signal SIGABRT)" in str(err.value)


def test_reader_crash_part_way_keeps_earlier_results(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(_report(_block(2, b"x")))
    result = {"kind": "result", "range": 0, "action": 0, "name": "k(int)", "nvtx": None, "strings": {},
              "metrics": {"gpu__time_duration.sum": [1500.0, "ns"], "dram__bytes_read.sum": [2.5, "Kbyte"]},
              "rules": [{"rule_identifier": "SOLBottleneck", "name": "Bottleneck", "section_identifier":
                         "SpeedOfLight", "title": "Latency Issue", "message": "m", "type": 2,
                         "speedup_type": 1, "speedup": 12.5}]}
    worker = tmp_path / "worker.py"
    worker.write_text(
        "import json, os, signal, sys\n"
        "print(json.dumps({'kind': 'start', 'ranges': 1, 'library_version': 'x'}), flush=True)\n"
        f"print(json.dumps({result!r}), flush=True)\n"
        "os.kill(os.getpid(), signal.SIGSEGV)\n"
    )
    monkeypatch.setattr(ncu_rep, "WORKER", worker)
    monkeypatch.setattr(ncu_rep, "_module_available", lambda: True)
    res = parse_path(p)
    acc = res.accounting
    assert (acc.records, acc.rejected) == (1, 1)
    row = res.kernels.iloc[0]
    assert row["duration_s"] == pytest.approx(1.5e-6)  # 1500 "ns"
    assert row["dram__bytes_read.sum"] == pytest.approx(2500)  # 2.5 "Kbyte"
    rule = res.rules.iloc[0]
    assert (rule["rule"], rule["type"], rule["speedup_type"], rule["speedup_pct"]) == ("SOLBottleneck", "OPT", "local", 12.5)
    assert "SIGSEGV" in res.rejected[0].reason and "results from 1 on are lost" in res.rejected[0].reason


def test_reader_timeout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    p = tmp_path / "r.ncu-rep"
    p.write_bytes(_report(_block(1, b"x")))
    sleeper = tmp_path / "worker.py"
    sleeper.write_text("import time\ntime.sleep(30)\n")
    monkeypatch.setattr(ncu_rep, "WORKER", sleeper)
    monkeypatch.setattr(ncu_rep, "_module_available", lambda: True)
    monkeypatch.setenv(ncu_rep.TIMEOUT_ENV, "1")
    with pytest.raises(InputError) as err:
        parse_path(p)
    assert "did not finish reading it within 1 s" in str(err.value)


def test_garbage_after_magic_is_an_input_error(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    p = tmp_path / "junk.ncu-rep"
    p.write_bytes(b"NVR\x00" + bytes(range(256)) * 4)
    with pytest.raises(InputError) as err:
        parse_path(p)
    assert str(p) in str(err.value)


NVTX = "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx.ncu-rep"


def test_truncated_report_keeps_whole_results_and_rejects_the_rest(tmp_path: Path) -> None:
    pytest.importorskip("ncu_report")
    src = CORPUS / "ncu" / NVTX
    if not src.is_file():
        pytest.skip("corpus absent")
    p = tmp_path / "cut.ncu-rep"
    # Blocks of the whole file: results at bytes 12026, 77545 and 119733 (one each). Cut at 80000,
    # the second result's block is partial (ncu_report returns it without name or metrics) and
    # the third is gone.
    p.write_bytes(src.read_bytes()[:80000])
    res = parse_path(p)
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (1, 0, 1)
    assert list(res.kernels["index"]) == [0]
    assert res.kernels.iloc[0]["name"] == "init_data_kernel(int, double *)"
    (rej,) = res.rejected
    assert rej.reason.startswith("result 1 ") and "cut off at byte 77545" in rej.reason
    assert res.meta["truncated_at_byte"] == 77545
