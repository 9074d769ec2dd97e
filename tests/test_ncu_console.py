"""Console-log parser on small hand-written logs (layouts, noise, failures, cuts, encodings)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd
import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.formats import detect_format
from rooftop.parsers.model import validate_kernels
from rooftop.parsers.source import Source

NEW = """\
==PROF== Connected to process 8821 (/home/u/a.out)
==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes
app says hello
==PROF== Disconnected from process 8821
[8821] a.out@127.0.0.1
  k(int, const float *) (32, 32, 1)x(32, 1, 1), Context 1, Stream 7, Device 0, CC 8.6
    Section: GPU Speed Of Light Throughput
    ----------------------- ------------- ------------
    Metric Name               Metric Unit Metric Value
    ----------------------- ------------- ------------
    DRAM Frequency          cycle/nsecond         6.21
    Elapsed Cycles                  cycle    2,273,471
    Memory Throughput                   %        80.78
    Duration                      msecond         1.73
    Compute (SM) Throughput             %        80.78
    ----------------------- ------------- ------------

    OPT   Est. Speedup: 12.5%
          Compute is more heavily utilized than Memory: look at the Compute Workload Analysis
          section.

    Section: Memory Workload Analysis
    ----------------- ------------ ------------
    Metric Name        Metric Unit Metric Value
    ----------------- ------------ ------------
    Memory Throughput Gbyte/second        12.50
    Mem Busy                     %        40.00
    ----------------- ------------ ------------

    Section: Launch Statistics
    -------------------------------- --------------- ---------------
    Metric Name                          Metric Unit    Metric Value
    -------------------------------- --------------- ---------------
    Block Size                                                    32
    Function Cache Configuration                     CachePreferNone
    Grid Size                                                  1,024
    Shared Memory Configuration Size           Kbyte          102.40
    -------------------------------- --------------- ---------------

"""


def write(tmp_path: Path, text: str, name: str = "log.txt", encoding: str = "utf-8", bom: bytes = b"") -> Path:
    p = tmp_path / name
    p.write_bytes(bom + text.encode(encoding))
    return p


def test_new_layout_values_units_and_identity(tmp_path: Path) -> None:
    res = parse_path(write(tmp_path, NEW))
    assert res.accounting.format == "ncu-console"
    k = validate_kernels(res.kernels)
    assert len(k) == 1 and res.accounting.records == 1
    row = k.iloc[0]
    assert row["name"] == "k(int, const float *)"
    assert row["line"] == 6 and row["index"] == 0
    assert (row["pid"], row["process"], row["host"]) == (8821, "a.out", "127.0.0.1")
    assert (row["context"], row["stream"], row["device_index"], row["cc"]) == (1, 7, 0, "8.6")
    assert row["grid_dim"] == "(32, 32, 1)" and row["block_dim"] == "(32, 1, 1)"
    assert row["grid"] == 32 * 32 and row["block"] == 32
    # "msecond 1.73" -> 1.73e-3 s; "cycle/nsecond 6.21" -> 6.21e9 Hz; "2,273,471" -> 2273471
    assert row["duration_s"] == pytest.approx(1.73e-3)
    assert row["dram__cycles_elapsed.avg.per_second"] == pytest.approx(6.21e9)
    assert row["gpc__cycles_elapsed.max"] == 2273471
    assert row["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(80.78)
    # "Kbyte 102.40" -> 102400 bytes (decimal prefixes, as ncu)
    assert row["launch__shared_mem_config_size"] == pytest.approx(102400)
    assert row["launch__grid_size"] == 1024
    # the string-valued row is not a metric
    assert not any("Function Cache" in c for c in k.columns)


def test_same_label_other_section_never_lands_in_the_percent_column(tmp_path: Path) -> None:
    row = parse_path(write(tmp_path, NEW)).kernels.iloc[0]
    # SOL "Memory Throughput %" stays 80.78; the MWA one is a bandwidth, 12.5 Gbyte/s = 12.5e9 byte/s
    assert row["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(80.78)
    bw = [c for c in row.index if c in ("dram__bytes.sum.per_second", "Memory Workload Analysis: Memory Throughput")]
    assert len(bw) == 1 and row[bw[0]] == pytest.approx(12.5e9)


def test_rule_paragraph_with_speedup(tmp_path: Path) -> None:
    rules = parse_path(write(tmp_path, NEW)).rules
    assert len(rules) == 1
    r = rules.iloc[0]
    assert (r["section"], r["type"], r["speedup_type"]) == ("GPU Speed Of Light Throughput", "OPT", "global")
    assert r["speedup_pct"] == pytest.approx(12.5)
    assert r["title"] == "Compute is more heavily utilized than Memory"
    assert r["description"].endswith("Compute Workload Analysis section.")
    assert r["index"] == 0


def test_local_speedup(tmp_path: Path) -> None:
    text = NEW.replace("OPT   Est. Speedup: 12.5%", "OPT   Est. Local Speedup: 19.35%")
    r = parse_path(write(tmp_path, text)).rules.iloc[0]
    assert (r["speedup_type"], r["speedup_pct"]) == ("local", pytest.approx(19.35))


OLD = """\
[395991] python3.8@127.0.0.1
  void f<(int)4>(int, T3), 2022-Dec-04 20:05:20, Context 1, Stream 7
    Section: GPU Speed Of Light Throughput
    ------------------------------ --------------- ---------
    DRAM Frequency                   cycle/nsecond      1.50
    Memory [%]                                   %     11.62
    Duration                               usecond     29.38
    Compute (SM) [%]                             %     64.22
    ------------------------------ --------------- ---------
    WRN   This kernel exhibits low compute throughput and memory bandwidth utilization relative to
          the peak performance of this device.

    Section: Launch Statistics
    ------------------------------ --------------- ---------
    Block Size                                           256
    Grid Size                                            864
    ------------------------------ --------------- ---------

  void g(int), 2022-Dec-04 20:05:21, Context 1, Stream 7
    Section: GPU Speed Of Light Throughput
    ------------------------------ --------------- ---------
    Duration                               usecond     23.68
    ------------------------------ --------------- ---------

"""


def test_old_layout(tmp_path: Path) -> None:
    res = parse_path(write(tmp_path, OLD))
    k = validate_kernels(res.kernels)
    assert list(k["name"]) == ["void f<(int)4>(int, T3)", "void g(int)"]
    assert list(k["line"]) == [2, 19]
    a = k.iloc[0]
    assert a["duration_s"] == pytest.approx(29.38e-6)  # "usecond 29.38"
    assert a["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(11.62)
    assert a["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(64.22)
    assert (a["grid"], a["block"]) == (864, 256)  # no dims in the old header: from Launch Statistics
    assert pd.isna(a["grid_dim"]) and pd.isna(a["cc"])
    assert res.rules.iloc[0]["type"] == "WRN"
    assert res.meta["layout"] == "old"


SUMMARY = """\
  heat(float *) (2, 2, 2)x(8, 8, 8), Device 0, CC 8.9, Invocations 4
    Section: GPU Speed Of Light Throughput
    ----------------------- ----------- -------- -------- --------
    Metric Name             Metric Unit  Minimum  Maximum  Average
    ----------------------- ----------- -------- -------- --------
    Elapsed Cycles                cycle 4,271.00 5,066.00 4,513.00
    Duration                         us     1.89     2.24     2.01
    ----------------------- ----------- -------- -------- --------

"""


def test_print_summary_uses_average_and_keeps_min_max(tmp_path: Path) -> None:
    res = parse_path(write(tmp_path, "  Max Time Steps: 10\n" + SUMMARY))
    k = res.kernels
    assert len(k) == 1 and res.meta["summary"] is True
    row = k.iloc[0]
    assert row["invocations"] == 4
    assert pd.isna(row["context"]) and pd.isna(row["stream"])  # C7 headers have no Context/Stream
    assert (row["device_index"], row["cc"], row["grid"], row["block"]) == (0, "8.9", 8, 512)
    assert row["duration_s"] == pytest.approx(2.01e-6)  # Average column, "us"
    assert row["gpu__time_duration.sum.min_over_invocations"] == pytest.approx(1.89e-6)
    assert row["gpu__time_duration.sum.max_over_invocations"] == pytest.approx(2.24e-6)
    assert row["gpc__cycles_elapsed.max"] == pytest.approx(4513)
    assert row["gpc__cycles_elapsed.max.min_over_invocations"] == pytest.approx(4271)
    # records count launches: the one row stands for 4 (records + missing + rejected = launches)
    assert (res.accounting.records, res.accounting.missing, res.accounting.rejected) == (4, 0, 0)


FAILED = """\
==PROF== Profiling "render": 0%
==WARNING== Launching the workload is taking more time than expected.
....50%....100% - 2 passes
==ERROR== LaunchFailed
[5043] cudart@127.0.0.1
  render(vec3 *, int) (0, 0, 0)x(0, 0, 0), Context 1, Stream 7, Device 0, CC 8.9
    Section: GPU Speed Of Light Throughput
    ----------------------- ------------ ------------
    Metric Name              Metric Unit Metric Value
    ----------------------- ------------ ------------
    Duration                     nsecond      (!) nan
    Memory Throughput                  %      (!) nan
    ----------------------- ------------ ------------

    ERR   Rule Bottleneck returned an error: Metric launch__waves_per_multiprocessor not found
    ----- --------------------------------------------------------------------------------------
    ERR   <built-in function IAction_metric_by_name> returned a result with an exception set

"""


def test_failed_profile_is_missing_not_dropped(tmp_path: Path) -> None:
    res = parse_path(write(tmp_path, FAILED))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (0, 1, 0)
    k = validate_kernels(res.kernels)
    assert len(k) == 1 and k.iloc[0]["grid"] == 0
    assert math.isnan(k.iloc[0]["duration_s"])
    assert "Bottleneck" in set(res.rules["rule"].dropna())
    assert len(res.rules) == 2  # the "----- ---" line separates rule paragraphs, it is no table
    assert res.meta["ncu_errors"] == ["==ERROR== LaunchFailed"]


def test_truncated_log_keeps_earlier_launches_and_reports_the_cut(tmp_path: Path) -> None:
    two = NEW + NEW.split("[8821] a.out@127.0.0.1\n")[1]
    lines = two.splitlines()
    second_header = [i for i, s in enumerate(lines) if s.startswith("  k(")][1]
    cut = "\n".join(lines[: second_header + 8])  # inside the second launch's first table
    res = parse_path(write(tmp_path, cut))
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (1, 0, 1)
    assert len(res.kernels) == 1 and res.kernels.iloc[0]["duration_s"] == pytest.approx(1.73e-3)
    (rej,) = res.rejected
    assert rej.line == second_header + 1 and "cut off" in rej.reason
    assert res.meta["truncated_at_line"] == second_header + 8


def test_kernel_name_special_characters_preserved(tmp_path: Path) -> None:
    name = 'void ns::k<"a&b", (int)3, <unnamed>::T>(const char *, int &)'
    text = NEW.replace("k(int, const float *)", name)
    assert parse_path(write(tmp_path, text)).kernels.iloc[0]["name"] == name


def test_utf16_bom_crlf(tmp_path: Path) -> None:
    p = write(tmp_path, NEW.replace("\n", "\r\n"), encoding="utf-16-le", bom=b"\xff\xfe")
    assert detect_format(Source(p)) == "ncu-console"
    row = parse_path(p).kernels.iloc[0]
    assert row["duration_s"] == pytest.approx(1.73e-3) and row["line"] == 6
    assert row["name"] == "k(int, const float *)"


def test_metrics_section_uses_ids_and_progress_counter(tmp_path: Path) -> None:
    text = """\
==PROF== Profiling "k" - 0 (1/2): 0%....50%....100% - 3 passes
  k() (1, 10, 1)x(256, 1, 1), Context 1, Stream 7, Device 0, CC 8.6
    Section: Command line profiler metrics
    ------------------------------------------------- ----------- ------------
    Metric Name                                       Metric Unit Metric Value
    ------------------------------------------------- ----------- ------------
    dram__bytes_read.sum                                    Kbyte         3.46
    sm__sass_thread_inst_executed_op_ffma_pred_on.sum        inst   15,956,044
    ------------------------------------------------- ----------- ------------

"""
    row = parse_path(write(tmp_path, text)).kernels.iloc[0]
    assert row["dram__bytes_read.sum"] == pytest.approx(3460)  # "Kbyte 3.46" -> 3460 bytes
    assert row["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 15956044
    assert (row["grid"], row["block"]) == (10, 256)


def test_rows_that_do_not_fit_the_rule_are_split_on_two_spaces(tmp_path: Path) -> None:
    # the value sits one column right of the rule (hand-edited or re-wrapped log)
    text = NEW.replace("    Duration                      msecond         1.73",
                       "    Duration                      msecond          1.73")
    row = parse_path(write(tmp_path, text)).kernels.iloc[0]
    assert row["duration_s"] == pytest.approx(1.73e-3)


@pytest.mark.parametrize(
    ("body", "quoted", "hint"),
    [
        ("==PROF== Connected to process 1 (/a)\n==ERROR== Error: ERR_NVGPUCTRPERM - The user does not "
         "have permission\n0.42  0.42\n", "ERR_NVGPUCTRPERM", "NVreg_RestrictProfilingToAdminUsers=0"),
        ("==PROF== Connected to process 2 (/b)\n==PROF== Disconnected from process 2\n"
         "==ERROR== The application returned an error code (1).\n", "error code (1)", "application failed"),
        ("==PROF== Connected to process 3 (/c)\nhello\n==WARNING== No kernels were profiled.\n",
         "No kernels were profiled", "--target-processes all"),
    ],
)
def test_log_without_kernels_is_an_input_error(tmp_path: Path, body: str, quoted: str, hint: str) -> None:
    p = write(tmp_path, body, name="profile.csv")
    with pytest.raises(InputError) as err:
        parse_path(p)
    msg = str(err.value)
    assert msg.startswith(str(p)) and quoted in msg and hint in msg


def test_app_output_that_looks_indented_is_not_a_kernel(tmp_path: Path) -> None:
    text = "  Heat Chance: 60%\n  Boundary (1, 2): x\n" + NEW
    res = parse_path(write(tmp_path, text))
    assert len(res.kernels) == 1
