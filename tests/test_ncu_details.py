"""Details-page CSV parser (``ncu --csv``, long format) on small hand-written exports.

Every expected number is the printed value times the unit factor, written out next to it.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.formats import detect_format
from rooftop.parsers.model import validate_kernels
from rooftop.parsers.source import Source

IDENT = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
         "Block Size", "Grid Size", "Device", "CC"]
OLD_IDENT = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"]
METRIC = ["Section Name", "Metric Name", "Metric Unit", "Metric Value"]
RULES = ["Rule Name", "Rule Type", "Rule Description", "Estimated Speedup Type", "Estimated Speedup"]
CMD = "Command line profiler metrics"


def q(*fields: str, sep: str = ",") -> str:
    return sep.join('"' + f.replace('"', '""') + '"' for f in fields) + "\n"


def write(tmp_path: Path, text: str, name: str = "d.csv") -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def ident(i: int, name: str = "gemm(float const*, float*, int)") -> list[str]:
    return [str(i), "7", "app", "h", name, "1", "7", "(32, 4, 1)", "(224, 1, 1)", "0", "12.0"]


def test_ragged_rows_rules_and_unit_scaling(tmp_path: Path) -> None:
    # Header with rule columns: metric rows stop after Metric Value plus one empty field (16 of 20).
    text = q(*IDENT, *METRIC, *RULES)
    text += q(*ident(0), CMD, "dram__bytes_read.sum", "Mbyte", "2.33", "")
    text += q(*ident(0), CMD, "gpu__time_duration.sum", "us", "6.75", "")
    text += q(*ident(0), CMD, "flop_count_sp.sum", "", "n/a", "")
    text += q(*ident(0), "GPU Speed Of Light Throughput", "Duration", "us", "7.00", "")  # lower priority
    text += q(*ident(0), "GPU Speed Of Light Throughput", "DRAM Frequency", "Ghz", "13.72", "")
    text += q(*ident(0), "GPU Speed Of Light Throughput", "Elapsed Cycles", "cycle", "13,485", "")
    text += q(*ident(0), "Memory Workload Analysis", "Memory Throughput", "Gbyte/s", "345.14", "")
    text += q(*ident(0), "Memory Workload Analysis", "Weird Label", "Kbyte", "2", "")
    text += q(*ident(0), "SchedulerStats", "", "", "", "IssueSlotUtilization", "OPT",
              "Every scheduler is capable of issuing one instruction per cycle, but ...", "local", "80.34")
    text += q(*ident(0), "SpeedOfLight", "", "", "", "SOLBottleneck", "WRN", "Grid too small.", "", "")
    text += q(*ident(1), CMD, "dram__bytes_read.sum", "Kbyte", "512", "")
    text += q(*ident(1), CMD, "gpu__time_duration.sum", "ms", "1.5", "")
    p = write(tmp_path, text)
    assert detect_format(Source(p)) == "ncu-details-csv"
    res = parse_path(p)
    k = validate_kernels(res.kernels)
    assert (res.accounting.records, res.accounting.missing, res.accounting.rejected) == (2, 0, 0)
    assert res.rejected == []
    assert k.loc[0, "dram__bytes_read.sum"] == pytest.approx(2.33e6)  # 2.33 Mbyte
    assert k.loc[1, "dram__bytes_read.sum"] == pytest.approx(512e3)  # 512 Kbyte: per-row auto scale
    assert k.loc[0, "duration_s"] == pytest.approx(6.75e-6)  # ID row 6.75 us beats "Duration" 7.00 us
    assert k.loc[1, "duration_s"] == pytest.approx(1.5e-3)  # 1.5 ms
    assert res.meta["conflicting_values"] == 1
    assert math.isnan(k.loc[0, "flop_count_sp.sum"])  # n/a
    assert k.loc[0, "dram__cycles_elapsed.avg.per_second"] == pytest.approx(13.72e9)  # 13.72 Ghz
    assert k.loc[0, "gpc__cycles_elapsed.max"] == 13485  # "13,485" cycle
    assert k.loc[0, "dram__bytes.sum.per_second"] == pytest.approx(345.14e9)  # 345.14 Gbyte/s
    assert k.loc[0, "Memory Workload Analysis: Weird Label"] == pytest.approx(2000)  # 2 Kbyte
    assert k.loc[0, "grid"] == 224 and k.loc[0, "block"] == 128 and k.loc[0, "cc"] == "12.0"
    r = res.rules
    assert list(r["rule"]) == ["IssueSlotUtilization", "SOLBottleneck"]
    assert list(r["section"]) == ["SchedulerStats", "SpeedOfLight"]
    assert list(r["type"]) == ["OPT", "WRN"]
    assert r.loc[0, "speedup_type"] == "local" and r.loc[0, "speedup_pct"] == pytest.approx(80.34)
    assert math.isnan(r.loc[1, "speedup_pct"]) and r["index"].tolist() == [0, 0]
    assert r.loc[0, "description"].startswith("Every scheduler")


def test_body_item_label_repeats(tmp_path: Path) -> None:
    sec = "GPU Speed Of Light Roofline Chart"
    text = q(*IDENT, "Section Name", "Body Item Label", "Metric Name", "Metric Unit", "Metric Value", *RULES)
    text += q(*ident(0), sec, "", "Theoretical Predicated-On FFMA Thread Instructions Executed", "inst/cycle", "21,760", "")
    text += q(*ident(0), sec, "Single Precision Roofline", "Unmapped Bytes Label", "byte/cycle", "128", "")
    text += q(*ident(0), sec, "Double Precision Roofline", "Unmapped Bytes Label", "byte/cycle", "64", "")
    text += q(*ident(0), sec, "Single Precision Roofline", "SM Frequency", "Ghz", "2.15", "")
    text += q(*ident(0), sec, "Double Precision Roofline", "SM Frequency", "Ghz", "2.15", "")
    text += q(*ident(0), "SpeedOfLight_RooflineChart", "", "", "", "", "SOLFPRoofline", "INF", "ratio 64:1", "", "")
    res = parse_path(write(tmp_path, text))
    k = res.kernels
    assert k.loc[0, f"{sec}: Single Precision Roofline / Unmapped Bytes Label"] == 128
    assert k.loc[0, f"{sec}: Double Precision Roofline / Unmapped Bytes Label"] == 64
    # the roofline section's own labels map to ncu metric IDs (docs/research/formulas.md §1.5)
    assert k.loc[0, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained"] == 21760
    assert k.loc[0, "sm__cycles_elapsed.avg.per_second"] == pytest.approx(2.15e9)  # mapped label
    assert res.meta["conflicting_values"] == 0
    assert list(res.rules["rule"]) == ["SOLFPRoofline"]


def test_old_header_failed_launch_and_text_metric(tmp_path: Path) -> None:
    text = q(*OLD_IDENT, *METRIC)
    t = "2022-Dec-08 12:02:16"
    text += q("0", "9", "p", "h", "ok(int)", t, "1", "7", CMD, "dram__bytes.sum", "byte", "1,024")
    text += q("0", "9", "p", "h", "ok(int)", t, "1", "7", "Launch Statistics", "Block Size", "", "256")
    text += q("0", "9", "p", "h", "ok(int)", t, "1", "7", "Launch Statistics", "Grid Size", "", "1,000")
    text += q("0", "9", "p", "h", "ok(int)", t, "1", "7", "Launch Statistics", "Function Cache Configuration", "", "CachePreferNone")
    text += q("1", "9", "p", "h", "bad(int)", t, "1", "7", CMD, "dram__bytes.sum", "byte", "(!) nan")
    text += q("1", "9", "p", "h", "bad(int)", t, "1", "7", "Launch Statistics", "Function Cache Configuration", "", "CachePreferNone")
    res = parse_path(write(tmp_path, text))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (1, 1, 0)
    k = res.kernels
    assert res.meta["header"] == "old" and res.rejected == []
    assert res.meta["text_metrics"] == ["Launch Statistics: Function Cache Configuration"]
    assert k.loc[0, "dram__bytes.sum"] == 1024 and math.isnan(k.loc[1, "dram__bytes.sum"])
    assert k.loc[0, "block"] == 256 and k.loc[0, "grid"] == 1000  # from the Launch Statistics labels
    assert k["grid_dim"].isna().all() and k["cc"].isna().all()


def test_bad_rows_accounting(tmp_path: Path) -> None:
    text = q(*IDENT, *METRIC, *RULES)
    text += q(*ident(0), CMD, "dram__bytes.sum", "byte", "10", "")
    text += q(*ident(0), CMD, "gpu__time_duration.sum", "ns", "5", "", "x")  # 17 fields: not a known shape
    text += q(*ident(1), CMD, "dram__bytes.sum", "byte", "oops", "")  # text in a numeric metric
    text += q(*ident(1), CMD, "gpu__time_duration.sum", "ns", "7", "")
    text += q(*ident(2), CMD, "dram__bytes.sum", "byte")  # too short: launch 2 known only from this row
    text += '"3","7","app","h","cut'  # cut mid-field
    res = parse_path(write(tmp_path, text))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (2, 0, 2)  # launches 2 and 3 are lost
    lines = {r.line: r.reason for r in res.rejected}
    assert set(lines) == {3, 4, 6, 7}
    assert "17 fields" in lines[3] and "14 fields" in lines[6] and "unterminated" in lines[7]
    assert "dram__bytes.sum" in lines[4] and "'oops'" in lines[4]
    k = res.kernels
    assert k.loc[0, "dram__bytes.sum"] == 10 and math.isnan(k.loc[0, "duration_s"])
    assert math.isnan(k.loc[1, "dram__bytes.sum"]) and k.loc[1, "duration_s"] == pytest.approx(7e-9)


def test_semicolon_decimal_comma_and_exact_name(tmp_path: Path) -> None:
    name = 'void k<a, b>(T<int> &, "q", x&&)'
    text = q(*IDENT, *METRIC, sep=";")
    row = [*ident(0, name=name)[:10], "8,6"]
    text += q(*row, CMD, "dram__bytes.sum", "Mbyte", "1.234,5", sep=";")
    text += q(*row, CMD, "gpu__time_duration.sum", "usecond", "12,5", sep=";")
    res = parse_path(write(tmp_path, text))
    k = res.kernels
    assert k.loc[0, "name"] == name
    assert k.loc[0, "dram__bytes.sum"] == pytest.approx(1234.5e6)  # "1.234,5" Mbyte
    assert k.loc[0, "duration_s"] == pytest.approx(12.5e-6)  # "12,5" usecond
    assert k.loc[0, "cc"] == "8.6"


def test_utf16_file(tmp_path: Path) -> None:
    text = "==PROF== Connected to process 7 (C:\\app.exe)\r\n" + (
        q(*IDENT, *METRIC) + q(*ident(0), CMD, "dram__bytes.sum", "Kbyte", "3")).replace("\n", "\r\n")
    p = tmp_path / "u16.csv"
    p.write_bytes("\ufeff".encode("utf-16-le") + text.encode("utf-16-le"))
    res = parse_path(p)
    assert res.kernels.loc[0, "dram__bytes.sum"] == pytest.approx(3000)  # 3 Kbyte
    assert res.kernels.loc[0, "line"] == 3


def test_header_only_is_input_error(tmp_path: Path) -> None:
    p = write(tmp_path, "==PROF== Connected to process 7 (/a)\n" + q(*IDENT, *METRIC) + "==PROF== Disconnected\n")
    with pytest.raises(InputError) as err:
        parse_path(p)
    assert "no data rows" in str(err.value) and str(p) in str(err.value)
