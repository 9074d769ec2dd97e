"""Values are read in the unit the file says, or rejected with a word (issue 30 item 3): a unit a
value or column states is honoured (converted) or the value is rejected, never read as another
unit; an infinity is no sample (one Inf nulled a fleet roll-up); a negative byte count in an ncu
export is no value; a byte-order mark in the middle of a file (files joined with `cat`) does not
make a sample vanish. (A Prometheus metric name carrying a newline: tests/test_prom_hostile.py.)"""

from __future__ import annotations

import csv
import io
import json
import math
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.parsers import parse_path
from rooftop.parsers.source import ParseOptions
from tests.conftest import FIXTURES

OPTS = ParseOptions(interval_s=1, start=datetime(2026, 1, 1, tzinfo=timezone.utc))
BOM = "\ufeff"


def _values(path: Path) -> dict[str, list[float]]:
    r = parse_path(path, OPTS)
    out: dict[str, list[float]] = {}
    for f, v in zip(r.samples.column("field").to_pylist(), r.samples.column("value").to_pylist(), strict=True):
        out.setdefault(f, []).append(v)
    return out


# ---------------------------------------------------------------- nvidia-smi units


def test_nvidia_smi_units_are_converted_or_the_value_rejected(tmp_path: Path) -> None:
    p = tmp_path / "smi.csv"
    p.write_text("timestamp, index, memory.used [MiB], power.draw [W], clocks.sm [MHz]\n"
                 "2026/01/01 00:00:00.000, 0, 1000 MiB, 100 W, 1410 MHz\n"
                 "2026/01/01 00:00:01.000, 0, 2 GiB, 250000 mW, 1.5 GHz\n"
                 "2026/01/01 00:00:02.000, 0, 3000 MB, 100 kJ, 1410 MHz\n")
    r = parse_path(p, OPTS)
    vals = _values(p)
    assert vals["memory.used"] == [1000.0, 2048.0]  # GiB -> MiB; "MB" (1000 or 1024?) not guessed
    assert vals["power.draw"] == [100.0, 250.0] and vals["clocks.sm"] == [1410.0, 1500.0, 1410.0]
    reasons = [x.reason for x in r.rejected]
    assert any("memory.used: '3000 MB'" in x and "not MiB" in x for x in reasons)
    assert any("power.draw: '100 kJ'" in x for x in reasons)
    assert r.accounting.rejected == 2 and r.accounting.records == 7


def test_a_header_unit_is_honoured(tmp_path: Path) -> None:
    p = tmp_path / "smi.csv"
    p.write_text("timestamp, index, memory.used [GiB], memory.total [MB]\n"
                 "2026/01/01 00:00:00.000, 0, 3, 80000\n")
    r = parse_path(p, OPTS)
    assert _values(p) == {"memory.used": [3072.0]}
    assert [x.reason for x in r.rejected] == [
        "memory.total: '80000' its unit is not MiB or one that converts to it exactly (header unit 'MB')"]


# ---------------------------------------------------------------- ncu units and negative counts


def _raw_rows(path: Path) -> list[list[str]]:
    text = path.read_text()
    start = text.index('"ID"')
    return list(csv.reader(io.StringIO(text[start:])))


def _write_raw(path: Path, rows: list[list[str]]) -> None:
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerows(rows)
    path.write_text(buf.getvalue())


def test_an_ncu_column_in_an_ambiguous_unit_is_null_and_said(tmp_path: Path) -> None:
    rows = _raw_rows(FIXTURES / "ncu" / "demo.raw.csv")
    j = rows[0].index("dram__bytes.sum")
    assert rows[1][j] == "byte"
    rows[1][j] = "MB"  # 1000 or 1024 bytes? never read as bytes
    p = tmp_path / "mb.raw.csv"
    _write_raw(p, rows)
    r = parse_path(p)
    assert r.kernels["dram__bytes.sum"].isna().all()
    assert any("column dram__bytes.sum: unit 'MB' is ambiguous" in x.reason for x in r.rejected)
    assert r.meta["unknown_units"] == {"dram__bytes.sum": "MB"}


def test_an_ncu_details_row_in_an_ambiguous_unit_is_null_and_said(tmp_path: Path) -> None:
    text = (FIXTURES / "ncu" / "demo.details.csv").read_text()
    lines = text.splitlines(keepends=True)
    k = next(i for i, ln in enumerate(lines) if '"DRAM Throughput"' in ln or '"dram__bytes.sum"' in ln)
    row = next(csv.reader([lines[k]]))
    unit_col = next(csv.reader([next(ln for ln in lines if ln.startswith('"ID"'))])).index("Metric Unit")
    row[unit_col] = "GB"
    buf = io.StringIO()
    csv.writer(buf, quoting=csv.QUOTE_ALL, lineterminator="\n").writerow(row)
    lines[k] = buf.getvalue()
    p = tmp_path / "gb.details.csv"
    p.write_text("".join(lines))
    r = parse_path(p)
    assert any(f" {'GB'}'" in x.reason and "not a usable number" in x.reason for x in r.rejected), \
        [x.reason for x in r.rejected]


def test_a_negative_byte_count_in_an_ncu_export_is_null_and_said(tmp_path: Path) -> None:
    rows = _raw_rows(FIXTURES / "ncu" / "demo.raw.csv")
    j = rows[0].index("dram__bytes.sum")
    rows[2][j] = "-4096"
    p = tmp_path / "neg.raw.csv"
    _write_raw(p, rows)
    r = parse_path(p)
    assert math.isnan(r.kernels["dram__bytes.sum"].iloc[0])
    assert any("'-4096' in column dram__bytes.sum" in x.reason for x in r.rejected)


# ---------------------------------------------------------------- infinities


def test_infinities_are_rejected_by_the_sample_parsers(tmp_path: Path) -> None:
    dmon = tmp_path / "dmon.txt"
    dmon.write_text("#Entity   SMACT        SMOCC\nID\nGPU 0     inf          0.1\nGPU 0     0.5          1e999\n")
    smi = tmp_path / "smi.csv"
    smi.write_text("timestamp, index, utilization.gpu [%], power.draw [W]\n"
                   "2026/01/01 00:00:00.000, 0, 50 %, inf W\n2026/01/01 00:00:01.000, 0, -inf %, 1e400 W\n")
    smid = tmp_path / "smid.txt"
    smid.write_text("# gpu    pwr  gtemp\n# Idx      W      C\n    0    inf     30\n")
    for p, rejected in ((dmon, 2), (smi, 3), (smid, 1)):
        r = parse_path(p, OPTS)
        vals = r.samples.column("value").to_pylist()
        assert all(math.isfinite(v) for v in vals), (p.name, vals)
        assert r.accounting.rejected == rejected and all("finite" in x.reason for x in r.rejected), (p.name, r.rejected)


def test_one_infinite_sample_does_not_null_a_fleet_rollup(tmp_path: Path) -> None:
    dmon = tmp_path / "dmon.txt"
    rows = "".join(f"GPU 0     {'inf' if i == 5 else '0.5'}          0.4\n" for i in range(600))
    dmon.write_text("#Entity   SMACT        SMOCC\nID\n" + rows)
    ds = tmp_path / "ds"
    res = CliRunner().invoke(main, ["ingest", str(dmon), "--to", str(ds), "--interval", "1", "--start",
                                    "2026-01-01T00:00:00Z", "--host", "n1", "-q"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "--html", str(tmp_path / "f.html"), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    sm = [w["metrics"].get("sm_active") for w in doc["windows"]]
    assert sm and all(v is not None and math.isfinite(v) for v in sm)


# ---------------------------------------------------------------- a BOM mid-file


@pytest.mark.parametrize(("name", "text", "records"), [
    ("a.prom", 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 50 1735689600000\n' + BOM
     + 'DCGM_FI_DEV_GPU_UTIL{gpu="0"} 60 1735689615000\nDCGM_FI_DEV_GPU_UTIL{gpu="0"} 70 1735689630000\n', 3),
    ("d.txt", "#Entity   SMACT        SMOCC\nID\nGPU 0     0.5          0.1\n" + BOM + "GPU 0     0.6          0.2\n", 4),
    ("s.csv", "timestamp, index, utilization.gpu [%]\n2026/01/01 00:00:00.000, 0, 50 %\n" + BOM
     + "2026/01/01 00:00:01.000, 0, 60 %\n", 2),
])
def test_a_byte_order_mark_mid_file_loses_no_sample(tmp_path: Path, name: str, text: str, records: int) -> None:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    r = parse_path(p, OPTS)
    assert (r.accounting.records, r.accounting.rejected) == (records, 0), [x.reason for x in r.rejected]


def test_small_and_large_columns_read_units_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    import pandas as pd

    from rooftop.parsers.nvsmi import samples

    cells = pd.Series(["1000 MiB", "2 GiB", "3000 MB", "[N/A]", "inf", "-inf MiB", "7", " 8 KiB ", "x MiB",
                       "1e3", "", None, "+", "5 %", "nan"], dtype="object")
    for header in (None, "MiB", "GiB", "MB"):
        small = samples.parse_unit_cells(cells, "MiB", header)
        monkeypatch.setattr(samples, "SMALL_COLUMN", -1)
        large = samples.parse_unit_cells(cells, "MiB", header)
        monkeypatch.undo()
        for a, b in zip(small, large, strict=True):
            assert np.array_equal(a, b, equal_nan=True), (header, a, b)
