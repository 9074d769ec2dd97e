"""Real console logs and ``.ncu-rep`` files from ``../shared/corpus/ncu``: counts and hand-checked values.

Every expected number below was read off the file by eye (console) or off the report's own metric
value and unit (``ncu_report``), with the unit arithmetic written next to it.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.model import ParseResult, validate_kernels
from tests.conftest import corpus_dir, manifest

pytestmark = pytest.mark.corpus

MINE = ("console-log", "ncu-rep", "other (error-only")
ROWS = [r for r in manifest("ncu") if r["format"].startswith(MINE)]


@pytest.mark.parametrize("row", ROWS, ids=[r["file"][:60] for r in ROWS])
def test_manifest_kernel_count(row: dict[str, str]) -> None:
    path = corpus_dir("ncu") / row["file"]
    n = int(row["n_kernels"]) if row["n_kernels"].strip() else 0
    if n == 0:
        with pytest.raises(InputError) as err:
            parse_path(path)
        assert str(path) in str(err.value)
        return
    res = parse_path(path)
    kernels = validate_kernels(res.kernels)
    acc = res.accounting
    # records + missing count launches: a --print-summary row stands for its N invocations;
    # the manifest counts rows
    launches = int(pd.to_numeric(kernels["invocations"], errors="coerce").fillna(1).sum())
    assert acc.records + acc.missing == launches
    assert acc.total - launches + len(kernels) == n
    assert list(kernels["index"]) == sorted(kernels["index"])
    if row["format"].startswith("console"):
        assert kernels["line"].notna().all()


def _parse(name: str) -> ParseResult:
    return parse_path(corpus_dir("ncu") / name)


def test_console_new_layout_values() -> None:
    res = _parse("AveryClapp__ESMM-Research__profiles__profile_multi3.txt")
    row = res.kernels.iloc[0]
    assert row["line"] == 8
    assert (row["grid_dim"], row["block_dim"], row["grid"], row["block"]) == ("(32, 32, 1)", "(32, 1, 1)", 1024, 32)
    assert row["duration_s"] == pytest.approx(1.73e-3)  # "Duration  msecond  1.73" -> 1.73e-3 s
    assert row["gpc__cycles_elapsed.max"] == 2273471  # "Elapsed Cycles  cycle  2,273,471"
    assert row["sm__cycles_active.avg"] == pytest.approx(2047666.39)  # "2,047,666.39"
    assert row["dram__cycles_elapsed.avg.per_second"] == pytest.approx(6.21e9)  # "cycle/nsecond 6.21"
    assert row["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(80.78)
    assert row["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(80.78)
    assert row["gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(10.49)
    assert row["launch__shared_mem_per_block_dynamic"] == pytest.approx(8190)  # "Kbyte/block 8.19"
    assert list(res.rules["type"]) == ["INF", "WRN", "WRN"]


def test_console_dram_bytes_autoscaled_per_launch() -> None:
    k = _parse("ishana23g__heat_eq__optimized__profiler__ncu_fma_memory.txt").kernels
    assert len(k) == 141
    # launch 0 (line 150): "dram__bytes_read.sum  Mbyte  4.03" -> 4.03e6 bytes
    assert k.iloc[0]["dram__bytes_read.sum"] == pytest.approx(4.03e6)
    # launch 4 (line 198): "dram__bytes_read.sum  Kbyte  3.46" -> 3.46e3 bytes
    assert k.iloc[4]["dram__bytes_read.sum"] == pytest.approx(3.46e3)
    assert k.iloc[0]["sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 15956044


def test_console_2025_rules_with_speedups() -> None:
    res = _parse("AlpriElse__cs599k__silu__triton__silu-pytorch-ncu-report.txt")
    first = res.kernels.iloc[0]
    assert first["duration_s"] == pytest.approx(777.95e-6)  # "Duration  us  777.95"
    assert first["dram__cycles_elapsed.avg.per_second"] == pytest.approx(2.62e9)  # "Ghz 2.62"
    assert (first["grid"], first["block"], first["cc"]) == (1056, 256, "9.0")
    r0 = res.rules[res.rules["index"] == 0]
    launch = r0[r0["section"] == "Launch Statistics"].iloc[0]
    assert (launch["type"], launch["speedup_type"], launch["speedup_pct"]) == ("OPT", "global", 50.0)
    assert launch["description"].startswith("A wave of thread blocks")
    occ = r0[r0["section"] == "Occupancy"]
    assert list(occ["speedup_type"]) == ["local", "local"]
    assert list(occ["speedup_pct"]) == [pytest.approx(19.35), pytest.approx(37.5)]


def test_console_old_layout() -> None:
    res = _parse("liqiangxl__playground__ncu.log")
    k = res.kernels
    assert len(k) == 31 and res.meta["layout"] == "old"
    first = k.iloc[0]
    assert first["line"] == 36
    assert first["name"].startswith("void at::native::<unnamed>::distribution_elementwise_grid_stride_kernel<float")
    assert first["name"].endswith("(int, at::PhiloxCudaState, T3, T4)")  # timestamp/Context/Stream cut off
    assert first["duration_s"] == pytest.approx(29.38e-6)  # "usecond 29.38"
    assert first["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(11.62)
    assert first["sm__throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(64.22)
    assert (first["grid"], first["block"]) == (864, 256)
    assert pd.isna(first["grid_dim"])


def test_console_print_summary_invocations() -> None:
    k = _parse("ishana23g__heat_eq__optimized_3d__profiler__ncu_summary_3D.txt").kernels
    assert list(k["invocations"]) == [4, 10, 20]
    add = k.iloc[0]
    # "Duration  us  1.89  2.24  2.01" (Minimum Maximum Average)
    assert add["duration_s"] == pytest.approx(2.01e-6)
    assert add["gpu__time_duration.sum.min_over_invocations"] == pytest.approx(1.89e-6)
    assert add["gpu__time_duration.sum.max_over_invocations"] == pytest.approx(2.24e-6)
    assert add["gpc__cycles_elapsed.max"] == pytest.approx(4513)  # "4,513.00"
    k2 = _parse("AveryClapp__ESMM-Research__summary.txt").kernels  # capture starts mid-output
    assert list(k2["invocations"]) == [10, 10, 10]


def test_console_failed_profile() -> None:
    res = _parse("Fluuuegel__DD2360-Project__ncu_report.txt")
    acc = res.accounting
    assert (acc.records, acc.missing, acc.rejected) == (0, 1, 0)
    row = res.kernels.iloc[0]
    assert (row["grid_dim"], row["grid"]) == ("(0, 0, 0)", 0)
    assert pd.isna(row["duration_s"])
    assert "==ERROR== LaunchFailed" in res.meta["ncu_errors"]


def test_console_utf16_crlf_copy(tmp_path: Path) -> None:
    src = corpus_dir("ncu") / "AveryClapp__ESMM-Research__profiles__profile_multi3.txt"
    p = tmp_path / "ncu_log.txt"  # PowerShell ">" writes UTF-16LE with BOM and CRLF (C12)
    p.write_bytes(b"\xff\xfe" + src.read_text(encoding="utf-8").replace("\n", "\r\n").encode("utf-16-le"))
    a, b = parse_path(src).kernels, parse_path(p).kernels
    assert a.drop(columns="input").equals(b.drop(columns="input"))


NVTX = "NVIDIA__nsight-training__cuda__nsight_compute__sample_reports__manual_nvtx.ncu-rep"


def test_rep_nvtx_identity_and_values() -> None:
    pytest.importorskip("ncu_report")
    res = _parse(NVTX)
    k = res.kernels
    assert list(k["name"]) == ["init_data_kernel(int, double *)", "daxpy_kernel(int, double, double *, double *)",
                               "check_results_kernel(int, double, double *)"]
    assert list(k["nvtx"]) == [
        "run_test > init_data",
        "run_test > daxpy",
        "run_test > check_results",  # range names as stored; the default domain by bare name
    ]
    first = k.iloc[0]
    assert (first["device"], first["cc"], first["grid"], first["block"]) == ("NVIDIA GeForce RTX 3070", "8.6", 16384, 256)
    assert (first["grid_dim"], first["block_dim"]) == ("(16384, 1, 1)", "(256, 1, 1)")
    assert first["duration_s"] == pytest.approx(84480e-9)  # gpu__time_duration.sum 84480 "ns"
    assert first["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(88.196, abs=1e-3)
    assert first["dram__cycles_elapsed.avg.per_second"] == pytest.approx(6.684848e9, rel=1e-6)  # "hz"
    sol = res.rules[(res.rules["index"] == 0) & (res.rules["rule"] == "SOLBottleneck")].iloc[0]
    assert (sol["section"], sol["type"], sol["title"]) == ("SpeedOfLight", "INF", "High Throughput")
    assert res.meta["ncu_version"] == "2022.3.0.0"
    assert "--nvtx" in res.meta["command_line"]


def test_rep_dram_bytes_and_speedups() -> None:
    pytest.importorskip("ncu_report")
    res = _parse("LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep")
    first = res.kernels.iloc[0]
    assert first["dram__bytes_read.sum"] == 146188512  # 146188512 "byte"
    assert first["duration_s"] == pytest.approx(4.789792e-3)  # 4789792 "ns"
    cpi = res.rules[(res.rules["index"] == 0) & (res.rules["rule"] == "CPIStall")].iloc[0]
    assert (cpi["speedup_type"], cpi["title"]) == ("global", "Lg Throttle Stalls")
    assert cpi["speedup_pct"] == pytest.approx(16.861, abs=1e-3)
    res2 = _parse("amitadate__GPU_Power_Model__PS1_100_profile.ncu-rep")
    r = res2.rules[res2.rules["index"] == 0].set_index("rule")
    assert (r.loc["LaunchConfiguration", "speedup_type"], r.loc["LaunchConfiguration", "speedup_pct"]) == ("global", 96.875)
    assert (r.loc["TheoreticalOccupancy", "speedup_type"], r.loc["TheoreticalOccupancy", "speedup_pct"]) == ("local", 50.0)
    assert r.loc["SOLBottleneck", "title"] == "Latency Issue"


def test_rep_legacy_extension_and_headless_fragment() -> None:
    pytest.importorskip("ncu_report")
    legacy = _parse("romnn__microgpusim__profile__tests__nsight_vectoradd_102400_32_metrics_report.nsight-cuprof-report")
    assert legacy.accounting.format == "ncu-rep" and len(legacy.kernels) == 1
    assert legacy.kernels.iloc[0]["device"] == "NVIDIA GeForce GTX 1080"
    # The 2019 report stores gpu__time_duration = 7520.0 with no unit; the CSV exports of the same
    # tool print it in nsecond (sibling raw CSV units row): 7520 ns = 7.52e-6 s, not 7520 s.
    assert legacy.kernels.iloc[0]["duration_s"] == pytest.approx(7520e-9)
    with pytest.raises(InputError) as err:
        _parse("JakeFlasher__benchmark_flash_attention__ncu_reports__standard__window-512.ncu-rep")
    assert "no NVR magic" in str(err.value) and "headless" in str(err.value)
