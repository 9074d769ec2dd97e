"""Headline numbers that follow the data (issue 29 item 5; docs/formulas.md#findings, #profiling-conditions,
#inputs): unknown durations, metrics ncu printed n/a for, one clock-control item, cache-control only with
DRAM bytes, an `ncu -o` log, the 5 µs cut taken per launch configuration."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import rooftop
from rooftop.analyzer.findings import rank_findings
from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.errors import InputError
from rooftop.parsers import parse_path
from tests.conftest import corpus_dir

NO_WINDOWS = SimpleNamespace(findings=[])


def test_unknown_duration_is_unknown_not_zero_percent() -> None:
    k = pd.DataFrame([{"input": "a", "index": 0, "name": "timed", "duration_s": 1e-3},
                      {"input": "a", "index": 1, "name": "untimed", "duration_s": float("nan"),
                       "dram__bytes.sum": 1e6}])
    res = analyze_kernels(k, pd.DataFrame()).results
    out = {f["family"].split(" ")[0]: f for f in rank_findings(res.assign(family=res["name"]), NO_WINDOWS)}
    assert out["untimed"]["time_share"] is None and "duration unknown" in out["untimed"]["title"]
    assert "0.0% of kernel time" not in out["untimed"]["title"]
    assert out["timed"]["time_share"] == pytest.approx(1.0)


RAW = ('"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size",'
       '"Device","CC","gpu__time_duration.sum","flop_count_sp.sum","dram__bytes.sum"\n'
       '"","","","","","","","","","","","nsecond","","byte"\n'
       '"0","1","app","h","k(float*)","1","7","(256, 1, 1)","(4096, 1, 1)","0","8.0","10000","n/a","1000000"\n'
       '"1","1","app","h","k(float*)","1","7","(256, 1, 1)","(4096, 1, 1)","0","8.0","10200","n/a","1000000"\n')


def test_misspelled_metric_named_as_the_cause_by_hand(tmp_path: Path) -> None:
    p = tmp_path / "run.raw.csv"
    p.write_text(RAW)
    assert parse_path(str(p)).meta["metrics_na"] == ["flop_count_sp.sum"]
    doc = rooftop.analyze([str(p)])
    [item] = [i for i in doc["lint"] if i["code"] == "metrics-not-collected"]
    assert "flop_count_sp.sum" in item["message"] and "--query-metrics" in item["message"]
    assert item["kernels"] == [0, 1]
    assert any("ncu printed n/a on every launch for flop_count_sp.sum" in e for e in doc["kernels"][0]["evidence"])


def test_na_metrics_named_codegandee() -> None:
    path = next(corpus_dir("ncu").glob("CodeGandee__*ncu.details.csv"))
    doc = rooftop.analyze([str(path)])
    [item] = [i for i in doc["lint"] if i["code"] == "metrics-not-collected"]
    assert "flop_count_sp.sum" in item["message"] and "sm__ops_path_tensor_src_bf16_dst_bf16.sum" in item["message"]


def test_one_clock_control_item_and_cache_control_only_with_dram_bytes() -> None:
    k = pd.DataFrame([{"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3, "dram__bytes.sum": 1e6,
                       "sm__cycles_elapsed.avg.per_second": 1.0e9, "device__attribute_clock_rate": 1.41e6},
                      {"input": "a.csv", "index": 1, "name": "j", "duration_s": 1e-3,
                       "sm__cycles_elapsed.avg.per_second": 1.0e9, "device__attribute_clock_rate": 1.41e6}])
    meta = {"a.csv": {"command": "ncu --set full -o x ./app"}}
    lint = analyze_kernels(k, pd.DataFrame(), meta=meta).lint
    clock = [i for i in lint if i["code"] == "clock-control"]
    assert len(clock) == 1 and clock[0]["kernels"] == [0, 1]
    assert "--clock-control base" in clock[0]["message"] and "71% of the device's max clock" in clock[0]["message"]
    [cache] = [i for i in lint if i["code"] == "cache-control"]
    assert cache["kernels"] == [0]  # kernel 1 has no DRAM bytes


def test_ncu_o_log_says_analyze_the_report(tmp_path: Path) -> None:
    p = tmp_path / "run.log"
    p.write_text("==PROF== Connected to process 1 (/bin/app)\n==PROF== Profiling \"k\" - 0: 0%....100% - 10 passes\n"
                 "==PROF== Disconnected from process 1\n==PROF== Report: /data/run.ncu-rep\n")
    with pytest.raises(InputError) as err:
        parse_path(str(p))
    assert "ncu wrote its results to /data/run.ncu-rep" in str(err.value)
    assert "rooftop analyze /data/run.ncu-rep" in str(err.value)


def test_launch_cut_on_the_median_keeps_one_family() -> None:
    # three launches of one kernel and configuration at 4.8, 4.9 and 5.2 µs: one family (median 4.9 µs, launch)
    k = pd.DataFrame([{"input": "a", "index": i, "name": "k(float*)", "duration_s": d, "grid": 16, "block": 256}
                      for i, d in enumerate((4.8e-6, 4.9e-6, 5.2e-6))])
    res = analyze_kernels(k, pd.DataFrame()).results
    assert set(res["limiter"]) == {"launch"}
    fams = rank_findings(res, NO_WINDOWS)
    assert len(fams) == 1 and fams[0]["kernels"] == [0, 1, 2]


def test_clock_span_that_rounds_to_one_percentage_is_one() -> None:
    """LakshyaSingh354 naive.ncu-rep: both launches at 85 % of the max clock (0.85x, unequal in the 4th digit)
    read "85%", not "85%-85%"."""
    doc = rooftop.analyze([str(corpus_dir("ncu") / "LakshyaSingh354__CudaCode__gemm__reps__naive.ncu-rep")])
    msg = next(x["message"] for x in doc["lint"] if x["code"] == "clock-control")
    assert "ran at 85% of the device's max clock" in msg and "85%-85%" not in msg
