"""Real ncu CSV exports from ``../shared/corpus/ncu``: kernel counts and hand-checked values.

Each expected value was read off the file (printed value and unit on the quoted line), with the
unit arithmetic written next to it. Aliases (R1, D2, ...) follow the corpus FORMATS.md.
"""

from __future__ import annotations

import math

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.model import ParseResult, validate_kernels
from tests.conftest import FIXTURES, corpus_dir, manifest

pytestmark = pytest.mark.corpus

ROWS = [r for r in manifest("ncu") if r["format"] in ("raw-csv", "details-csv") or r["format"].startswith("other")]


def _one(prefix: str) -> ParseResult:
    [path] = [p for p in corpus_dir("ncu").iterdir() if p.name.startswith(prefix) and p.suffix == ".csv"]
    return parse_path(path)


@pytest.mark.parametrize("row", ROWS, ids=[r["file"][:70] for r in ROWS])
def test_manifest_kernel_count(row: dict[str, str]) -> None:
    path = corpus_dir("ncu") / row["file"]
    n = int(row["n_kernels"] or 0)
    if n == 0:  # X1-X3: only ==PROF==/==ERROR== noise and application output
        with pytest.raises(InputError) as err:
            parse_path(path)
        assert str(path) in str(err.value) and "==ERROR==" in str(err.value)
        return
    res = parse_path(path)
    k = validate_kernels(res.kernels)
    acc = res.accounting
    assert acc.format == ("ncu-raw-csv" if row["format"] == "raw-csv" else "ncu-details-csv")
    assert (acc.records, acc.missing, acc.rejected) == (n, 0, 0)
    assert len(k) == n and res.rejected == []
    assert k["name"].notna().all() and k["line"].notna().all() and k["pid"].notna().all()
    assert list(k["index"]) == list(range(n))


def test_raw_new_header_b200_r2() -> None:
    res = _one("meinie0826__Roofline-Analysis__decodebench__results__ncu__flashinfer_paged_decode__gqa_bf16_b1_ctx32k")
    k = res.kernels
    assert res.meta["header"] == "new" and res.meta["units_row"] is True
    row = k.iloc[0]  # line 5: "0","250569",...,"(16, 8, 1)","(148, 1, 1)","0","10.0",...
    assert row["line"] == 5 and row["pid"] == 250569
    assert row["duration_s"] == pytest.approx(12928e-9)  # gpu__time_duration.sum "12928" ns
    # R1-R4 hold no dram__bytes*: a byte-unit column instead, launch__shared_mem_config_size "135168" byte
    assert row["launch__shared_mem_config_size"] == 135168
    assert "dram__bytes.sum" not in k.columns
    assert row["block"] == 128 and row["grid"] == 148  # (16, 8, 1) -> 16*8*1
    assert row["launch__block_size"] == 128  # agrees with the dims
    assert row["device"] == "NVIDIA B200" and row["cc"] == "10.0" and row["device_index"] == 0
    assert "launch__func_cache_config" in res.meta["text_columns"]  # "CachePreferNone": text


def test_raw_legacy_2019_r5() -> None:
    res = _one("romnn__microgpusim")
    k = res.kernels
    assert res.meta["header"] == "old"
    row = k.iloc[0]
    assert row["dram__read_bytes"] == 7552  # "7,552.00" byte (thousands separator, 2 decimals)
    assert row["gpu__time_duration"] == pytest.approx(2.72e-6)  # "2,720.00" nsecond, legacy name kept
    assert row["device__attribute_clock_rate"] == 1_759_000  # "1,759,000.00"
    assert row["sm__sol_pct"] == pytest.approx(0.09)
    assert row["memory_access_type"] == pytest.approx(8 / 3)  # "2.00; 2.00; 4.00" -> mean (no rollup)
    assert row["device"] == "NVIDIA GeForce GTX 1080" and row["cc"] == "6.1"
    assert row["block"] == 1024  # launch__block_size "1,024.00"; the 2019 header has no dims


def test_details_thousands_separators_d1() -> None:
    k = _one("AveryClapp__ESMM-Research__metrics").kernels
    assert k.loc[0, "dram__bytes.sum"] == 32_746_880  # "32,746,880" byte
    assert k.loc[0, "duration_s"] == pytest.approx(0.010776576)  # "10,776,576" nsecond * 1e-9
    assert k.loc[0, "sm__sass_thread_inst_executed_op_ffma_pred_on.sum"] == 1_073_741_824
    assert k["name"].nunique() == 8 and len(k) == 9  # one name repeats under two IDs


def test_details_ragged_rules_and_na_d2() -> None:
    res = _one("CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3__ncu.details")
    k = res.kernels
    assert k.loc[0, "dram__bytes_read.sum"] == pytest.approx(2.33e6)  # line 2: "2.33" Mbyte
    assert k.loc[0, "duration_s"] == pytest.approx(6.75e-6)  # line 7: "6.75" us
    assert math.isnan(k.loc[0, "flop_count_sp.sum"])  # line 6: "n/a"
    assert k.loc[0, "dram__bytes.sum.per_second"] == pytest.approx(345.14e9)  # line 23: 345.14 Gbyte/s
    assert k.loc[0, "dram__cycles_elapsed.avg.per_second"] == pytest.approx(13.72e9)  # line 11: 13.72 Ghz
    assert k.loc[0, "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] == pytest.approx(19.66)
    r = res.rules.set_index("rule")
    assert list(res.rules["rule"]) == ["SOLBottleneck", "SOLFPRoofline", "IssueSlotUtilization", "TheoreticalOccupancy"]
    assert r.loc["IssueSlotUtilization", "speedup_type"] == "local"
    assert r.loc["IssueSlotUtilization", "speedup_pct"] == pytest.approx(80.34)
    assert r.loc["TheoreticalOccupancy", "speedup_type"] == "global"
    assert r.loc["TheoreticalOccupancy", "section"] == "Occupancy" and r.loc["SOLBottleneck", "type"] == "OPT"
    assert math.isnan(r.loc["SOLBottleneck", "speedup_pct"])


def test_details_body_item_label_d4() -> None:
    res = _one("CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3__ncu.section_SpeedOfLight")
    k = res.kernels
    sec = "GPU Speed Of Light Roofline Chart"
    # the section's labels map to the metric IDs of SpeedOfLight_RooflineChart.section (formulas.md §1.5)
    assert k.loc[0, "derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"] == 43520  # "43,520", Single Precision Roofline
    assert k.loc[0, "derived__sm__sass_thread_inst_executed_op_dfma_pred_on_x2"] == 680  # Double Precision Roofline
    assert k.loc[0, "dram__bytes.sum.peak_sustained"] == 128  # "Theoretical DRAM Bytes Accessible", 2 body items agree
    assert res.meta["conflicting_values"] == 0
    assert not any(c.startswith(sec) for c in k.columns)  # every label of the section is known
    assert k.loc[0, "sm__cycles_elapsed.avg.per_second"] == pytest.approx(2.15e9)  # 2.15 Ghz, 3 body items agree
    assert list(res.rules["rule"]) == ["SOLFPRoofline"]


def test_details_bom_crlf_and_stdout_preamble_d7() -> None:
    res = _one("Olajide-Badejo__GPU-Roofline-Profiler__results__sample_run__ncu__gemm_naive")
    k = res.kernels
    assert k.loc[0, "line"] == 10  # 8 lines of ==PROF== and app stdout, header on line 9
    assert k.loc[0, "dram__bytes_op_read.sum"] == 54_207_744  # "54,207,744" byte
    assert k.loc[0, "duration_s"] == pytest.approx(9_589_248e-9)  # "9,589,248" ns
    assert k.loc[0, "name"].startswith("unnamed>::gemm_naive_kernel(")
    assert k.loc[0, "cc"] == "12.0" and k.loc[0, "grid"] == 64 * 64 and k.loc[0, "block"] == 32 * 32


def test_details_print_fp_d5() -> None:
    k = _one("Gardenia-Tian__LearningNote4Dev__CUDA__gemm__output__gemm").kernels
    assert k.loc[0, "dram__bytes.sum"] == 5_318_969_728  # "5,318,969,728.00" byte
    assert k.loc[0, "lts__t_bytes.sum"] == 693_423_599_808  # "693,423,599,808.00" byte
    assert k.loc[0, "smsp__cycles_elapsed.avg.per_second"] == pytest.approx(764_999_989.86)  # cycle/second


def test_details_old_header_ragged_d9() -> None:
    res = _one("leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__attention")
    k = res.kernels
    assert res.meta["header"] == "old" and k["grid_dim"].isna().all()
    assert k.loc[0, "dram__bytes.sum"] == 128 and k.loc[0, "lts__t_bytes.sum"] == 666_976
    assert k.loc[0, "block"] == 256 and k.loc[0, "grid"] == 256  # Launch Statistics labels
    assert k.loc[0, "launch__shared_mem_config_size"] == 32_768  # "32,768" byte
    assert res.meta["text_metrics"] == ["Launch Statistics: Function Cache Configuration"]
    assert (res.rules["type"] == "WRN").any() and res.rules["index"].max() <= 25


def test_details_stdout_and_prof_lines_d10_d12() -> None:
    k = _one("leleucas__Actual-Parameter-Collection-for-Machine-Learning-Operators__interpolate").kernels
    assert k.loc[0, "duration_s"] == pytest.approx(7.488e-6)  # "7,488" nsecond
    assert k.loc[1, "dram__bytes.sum"] == 256
    k = _one("wangzy0327__cuda-roofline__src__output").kernels
    assert k.loc[0, "dram__bytes.sum"] == 837_859_712  # "837,859,712" byte


def test_details_units_base_d14() -> None:
    k = _one("wdmapp__gene-paper-artifacts-pop2020__roofline__time-dram").kernels
    assert k.loc[0, "dram__bytes.sum"] == 690_974_304  # "690,974,304" byte
    assert k.loc[0, "sm__cycles_elapsed.avg"] == pytest.approx(1_209_826.20)  # "1,209,826.20" cycle
    assert k["pid"].unique().tolist() == [85800]


DEMO_RAW = FIXTURES / "ncu" / "demo.raw.csv"
DEMO_DETAILS = FIXTURES / "ncu" / "demo.details.csv"


def test_demo_fixture_raw_and_details_agree() -> None:
    if not (DEMO_RAW.is_file() and DEMO_DETAILS.is_file()):
        pytest.skip("fixtures/ncu/demo.{raw,details}.csv not generated yet (fixtures/make_ncu.py)")
    raw, det = parse_path(DEMO_RAW), parse_path(DEMO_DETAILS)
    assert raw.accounting.format == "ncu-raw-csv" and det.accounting.format == "ncu-details-csv"
    assert len(raw.kernels) == len(det.kernels) == 5
    assert raw.kernels["dram__bytes.sum"].tolist() == pytest.approx(det.kernels["dram__bytes.sum"].tolist(), rel=1e-3)
    assert raw.kernels["name"].tolist() == det.kernels["name"].tolist()


