"""Raw-page CSV parser (``ncu --page raw --csv``) on small hand-written exports.

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
from rooftop.parsers.ncu.raw import parse
from rooftop.parsers.source import ParseOptions, Source

NEW_ID = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
          "Block Size", "Grid Size", "Device", "CC"]
OLD_ID = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Kernel Time", "Context", "Stream"]


def q(*fields: str, sep: str = ",") -> str:
    """One CSV line with every field quoted, as ncu writes it."""
    return sep.join('"' + f.replace('"', '""') + '"' for f in fields) + "\n"


def write(tmp_path: Path, text: str, name: str = "x.csv", encoding: str = "utf-8") -> Path:
    p = tmp_path / name
    p.write_bytes(text.encode(encoding))
    return p


METRICS = ["device__attribute_display_name", "dram__bytes.sum", "gpu__time_duration.sum",
           "sm__throughput.avg.pct_of_peak_sustained_elapsed"]
UNITS = ["", "Mbyte", "usecond", "%"]


def new_page(rows: list[list[str]], metrics: list[str] = METRICS, units: list[str] = UNITS) -> str:
    text = "==PROF== Connected to process 42 (/usr/bin/app)\n"
    text += q(*NEW_ID, *metrics) + q(*[""] * len(NEW_ID), *units)
    for r in rows:
        text += q(*r)
    return text + "==PROF== Disconnected from process 42\n"


def ident(i: int, name: str = "k(int, float)", block: str = "(256, 1, 1)", grid: str = "(80, 2, 1)") -> list[str]:
    return [str(i), "42", "app", "host1", name, "1", "7", block, grid, "0", "9.0"]


def test_units_row_scales_to_si_and_fills_identity(tmp_path: Path) -> None:
    text = new_page([
        [*ident(0), "NVIDIA H100 80GB HBM3", "1.5", "2.25", "37.5"],
        [*ident(1), "NVIDIA H100 80GB HBM3", "0.004", "1,250.5", "1"],
    ])
    res = parse_path(write(tmp_path, text))
    k = validate_kernels(res.kernels)
    assert res.accounting.format == "ncu-raw-csv"
    assert (res.accounting.records, res.accounting.missing, res.accounting.rejected) == (2, 0, 0)
    assert len(k) == 2  # the units row is not a kernel
    assert k.loc[0, "dram__bytes.sum"] == pytest.approx(1.5e6)  # 1.5 Mbyte = 1.5 * 1e6 byte
    assert k.loc[1, "dram__bytes.sum"] == pytest.approx(4e3)  # 0.004 Mbyte = 4,000 byte
    assert k.loc[0, "duration_s"] == pytest.approx(2.25e-6)  # 2.25 usecond
    assert k.loc[1, "gpu__time_duration.sum"] == pytest.approx(1250.5e-6)  # "1,250.5" usecond
    assert k.loc[0, "sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 37.5  # % stays percent
    assert k.loc[0, "device"] == "NVIDIA H100 80GB HBM3"
    assert "device__attribute_display_name" not in k.columns
    assert k.loc[0, "grid"] == 160 and k.loc[0, "block"] == 256  # (80, 2, 1) -> 80*2*1
    assert k.loc[0, "grid_dim"] == "(80, 2, 1)"
    assert k.loc[0, "cc"] == "9.0" and k.loc[0, "device_index"] == 0 and k.loc[0, "pid"] == 42
    assert list(k["line"]) == [4, 5]  # line 1 ==PROF==, 2 header, 3 units
    assert res.meta["header"] == "new" and res.meta["units_row"] is True


def test_legacy_2019_header_thousands_and_instances(tmp_path: Path) -> None:
    metrics = ["device__attribute_compute_capability_major", "device__attribute_compute_capability_minor",
               "dram__read_bytes", "gpu__time_duration", "inst_executed", "l1tex__t_sectors.sum",
               "sm__warps_active.max", "sm__warps_active.min", "launch__grid_size", "launch__block_size"]
    units = ["", "", "Kbyte", "nsecond", "inst", "sector", "warp", "warp", "", ""]
    row = ["0", "99", "vectoradd", "127.0.0.1", "vecAdd", "2023-Oct-01 02:39:05", "1", "7",
           "6.00", "1.00", "7,552.00", "2,720.00", "32.00; 4.00; 0.00", "1,024.00; 1,000.00",
           "3.00; 9.00; 5.00", "3.00; 9.00; 5.00", "100.00", "1,024.00"]
    text = q(*OLD_ID, *metrics) + q(*[""] * len(OLD_ID), *units) + q(*row)
    res = parse_path(write(tmp_path, text))
    k = validate_kernels(res.kernels)
    assert res.meta["header"] == "old"
    assert k.loc[0, "dram__read_bytes"] == pytest.approx(7_552_000)  # "7,552.00" Kbyte * 1e3
    assert k.loc[0, "gpu__time_duration"] == pytest.approx(2.72e-6)  # legacy name kept as is
    assert k.loc[0, "duration_s"] == pytest.approx(2.72e-6)  # "2,720.00" nsecond
    assert k.loc[0, "inst_executed"] == pytest.approx(12.0)  # no rollup -> mean (32+4+0)/3
    assert k.loc[0, "l1tex__t_sectors.sum"] == pytest.approx(2024.0)  # .sum -> 1024+1000
    assert k.loc[0, "sm__warps_active.max"] == 9.0 and k.loc[0, "sm__warps_active.min"] == 3.0
    assert k.loc[0, "cc"] == "6.1"  # from the compute_capability attributes
    assert k.loc[0, "grid"] == 100 and k.loc[0, "block"] == 1024  # launch__* fallback
    assert k.loc[0, "name"] == "vecAdd" and k.loc[0, "context"] == 1


def test_missing_tokens_make_a_missing_launch(tmp_path: Path) -> None:
    text = new_page([
        [*ident(0), "NVIDIA B200", "1", "2", "3"],
        [*ident(1, block="(0, 0, 0)", grid="(0, 0, 0)"), "NVIDIA B200", "(!) nan", "n/a", "no data"],
        [*ident(2), "NVIDIA B200", "nan", "", "4"],
    ])
    res = parse_path(write(tmp_path, text))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (2, 1, 0)
    k = res.kernels
    assert len(k) == 3 and math.isnan(k.loc[1, "duration_s"]) and k.loc[1, "grid"] == 0
    assert math.isnan(k.loc[2, "dram__bytes.sum"]) and k.loc[2, "sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 4
    assert res.rejected == []


def test_truncated_last_line_rejected_earlier_rows_kept(tmp_path: Path) -> None:
    text = new_page([[*ident(0), "G", "1", "2", "3"], [*ident(1), "G", "1", "2", "3"]])
    text = text.replace("==PROF== Disconnected from process 42\n", "")
    text += '"2","42","app","host1","k(int, fl'  # cut mid-field, no newline
    res = parse_path(write(tmp_path, text))
    assert (res.accounting.records, res.accounting.rejected) == (2, 1)
    assert len(res.kernels) == 2
    [rej] = res.rejected
    assert rej.line == 6 and "unterminated" in rej.reason


def test_short_and_long_rows_and_bad_id_rejected(tmp_path: Path) -> None:
    good = [*ident(0), "G", "1", "2", "3"]
    text = new_page([good, [*ident(1), "G", "1"], [*ident(2), "G", "1", "2", "3", "extra"],
                     ["x1", "42", *good[2:]], [*ident(3), "G", "5", "6", "7"]])
    res = parse_path(write(tmp_path, text))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (2, 0, 3)
    assert list(res.kernels["id"]) == ["0", "3"]
    by_line = {r.line: r.reason for r in res.rejected}
    assert "13 fields" in by_line[5] and "16 fields" in by_line[6] and "not an integer" in by_line[7]


def test_text_cell_in_numeric_column_is_null_and_listed_once_per_launch(tmp_path: Path) -> None:
    text = new_page([[*ident(0), "G", "abc", "xyz", "3"], [*ident(1), "G", "1", "2", "3"]])
    res = parse_path(write(tmp_path, text))
    assert (res.accounting.records, res.accounting.rejected) == (2, 0)  # the launch is kept
    assert math.isnan(res.kernels.loc[0, "dram__bytes.sum"]) and res.kernels.loc[0, "sm__throughput.avg.pct_of_peak_sustained_elapsed"] == 3
    [rej] = res.rejected
    assert rej.line == 4 and "dram__bytes.sum" in rej.reason and "1 more" in rej.reason


def test_kernel_name_with_markup_quotes_and_commas_kept_exactly(tmp_path: Path) -> None:
    name = 'void k<float, 4>(A<B> &, const char *"x, y", T&&) [with T = <int>]'
    res = parse_path(write(tmp_path, new_page([[*ident(0, name=name), "G", "1", "2", "3"]])))
    assert res.kernels.loc[0, "name"] == name


def test_noise_between_blocks_and_repeated_header(tmp_path: Path) -> None:
    head = q(*NEW_ID, *METRICS) + q(*[""] * len(NEW_ID), *UNITS)
    text = ("app stdout line 1\n2 2 2\n==PROF== Connected to process 42 (/x)\n" + head
            + q(*ident(0), "G", "1", "2", "3")
            + "==WARNING== something\nresult: ok, 3 items\n"
            + head + q(*ident(1), "G", "4", "5", "6") + "==PROF== Report: done\ntrailing app text\n")
    res = parse_path(write(tmp_path, text))
    assert res.accounting.records == 2 and res.rejected == []
    assert list(res.kernels["dram__bytes.sum"]) == pytest.approx([1e6, 4e6])


def test_semicolon_separator_with_decimal_comma(tmp_path: Path) -> None:
    text = (q(*NEW_ID, "dram__bytes.sum", "gpu__time_duration.sum", sep=";")
            + q(*[""] * len(NEW_ID), "Kbyte", "msecond", sep=";")
            + q("0", "42", "app", "h", "k(int, float)", "1", "7", "(2, 1, 1)", "(3, 1, 1)", "0", "8,6",
                "1.234,5", "0,25", sep=";"))
    p = write(tmp_path, text)
    assert detect_format(Source(p)) == "ncu-raw-csv"
    res = parse_path(p)
    k = res.kernels
    assert res.meta["decimal_comma"] is True and res.meta["separator"] == ";"
    assert k.loc[0, "dram__bytes.sum"] == pytest.approx(1_234_500)  # "1.234,5" Kbyte = 1234.5 * 1e3
    assert k.loc[0, "duration_s"] == pytest.approx(0.25e-3)  # "0,25" msecond
    assert k.loc[0, "cc"] == "8.6" and k.loc[0, "name"] == "k(int, float)" and k.loc[0, "grid"] == 3


def test_utf16_and_bom_crlf_files(tmp_path: Path) -> None:
    text = new_page([[*ident(0), "G", "2", "3", "4"]])
    u16 = tmp_path / "u16.csv"
    u16.write_bytes("\ufeff".encode("utf-16-le") + text.replace("\n", "\r\n").encode("utf-16-le"))
    bom = tmp_path / "bom.csv"
    bom.write_bytes(b"\xef\xbb\xbf" + text.replace("\n", "\r\n").encode())
    for p in (u16, bom):
        res = parse_path(p)
        assert res.accounting.records == 1
        assert res.kernels.loc[0, "dram__bytes.sum"] == pytest.approx(2e6)
        assert res.kernels.loc[0, "line"] == 4


def test_header_without_rows_and_noise_only_are_input_errors(tmp_path: Path) -> None:
    only_head = write(tmp_path, new_page([]), "h.csv")
    with pytest.raises(InputError) as err:
        parse_path(only_head)
    assert "no data rows" in str(err.value) and str(only_head) in str(err.value)
    noise = write(tmp_path, "==PROF== Connected to process 1 (/a)\n==ERROR== The application returned an error code (1).\n", "n.csv")
    with pytest.raises(InputError) as err:
        parse(Source(noise), ParseOptions())
    assert "==ERROR== The application returned an error code (1)." in str(err.value)


def test_duplicate_launch_listed_and_counted(tmp_path: Path) -> None:
    # issue 19 item 16: 3 rows, one launch repeated twice: records + missing + rejected = 3
    text = new_page([[*ident(0), "G", "1", "2", "3"], [*ident(0), "G", "9", "9", "9"],
                     [*ident(0), "G", "8", "8", "8"]])
    res = parse_path(write(tmp_path, text))
    a = res.accounting
    assert (a.records, a.missing, a.rejected) == (1, 0, 2) and a.records + a.missing + a.rejected == 3
    assert res.kernels.loc[0, "dram__bytes.sum"] == pytest.approx(1e6)
    assert [r.line for r in res.rejected] == [5, 6] and all("repeats launch" in r.reason for r in res.rejected)
