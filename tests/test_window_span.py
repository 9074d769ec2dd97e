"""Window length, covered time, unknown activity, coarse timelines and one GPU key
(docs/formulas.md#windows): constructed cases for each rule and the corpus files that motivated them."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.fleet.rollup import fleet_findings, group_records, rollup
from rooftop.analyzer.pipeline import run_analysis
from rooftop.analyzer.windows.analysis import analyze_windows
from rooftop.analyzer.windows.findings import severity_by_hours
from rooftop.analyzer.windows.span import add_coverage, choose_window
from rooftop.reports.timelines import timeline_charts
from tests.conftest import corpus_dir
from tests.test_windows import FIX, T0, as_table, samples

DMON_A100 = "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt"
NVSMI_CSV = "xypp3__gpu_glasses__nvidia_smi.csv"
NVSMI_DMON = "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt"
ONE_SCRAPE = "NVIDIA__DCGM__issues__191.metrics_excerpt.prom"


def _ticks(n: int, step_s: float, gpu: str = "0") -> pd.DataFrame:
    return samples([(i * step_s, gpu, 1001, 0.5) for i in range(n)])


@pytest.mark.parametrize(("n", "step", "want"), [
    (15, 1.0, 1.0),        # 14 s span: span/60 < interval -> the interval
    (601, 1.0, 10.0),      # 600 s / 60 = 10 s
    (3601, 1.0, 60.0),     # an hour: 60 s (the cap)
    (241, 30.0, 60.0),     # dcgm-exporter's 30 s over 2 h: 120 s wanted, capped at 60
    (289, 300.0, 300.0),   # 5-minute scrapes over a day: the interval wins over the cap
    (31, 0.1, 0.1),        # dmon -d 100 over 3 s
    (41, 1.5, 2.0),        # 1.5 s interval -> the next nice length
    (1, 1.0, 60.0),        # one instant: no interval, the long-standing 60 s
])
def test_default_window_rule(n: int, step: float, want: float) -> None:
    window, reason = choose_window(_ticks(n, step))
    assert window == want
    assert f"{want:g} s, chosen from the capture" in reason


def test_covered_time_by_hand() -> None:
    # GPU 0: samples at 0..4 s in one 60 s window -> interval (4 - 0) / (5 - 1) = 1 s; covered
    # 0..5 s (last + one interval) = 5 s; GPU 1: one instant sample -> covered 0, interval unknown
    s = samples([*[(t, "0", 1001, 0.2) for t in range(5)], (5, "1", 1001, 0.9)])
    wa = analyze_windows(as_table(s), window_s=60.0)
    w = wa.windows.set_index("gpu")
    assert w.loc["0", "interval_s"] == 1.0 and w.loc["0", "covered_s"] == 5.0
    assert (w.loc["0", "end"] - w.loc["0", "start"]).total_seconds() == 5.0
    assert pd.isna(w.loc["1", "interval_s"]) and w.loc["1", "covered_s"] == 0.0
    assert [lt["code"] for lt in wa.lint if lt["code"] == "dcgm-single-sample-window"] == [
        "dcgm-single-sample-window"]
    recs = {r["gpu"]: r for r in wa.records()}
    assert recs["0"]["covered_s"] == 5.0 and recs["1"]["covered_s"] == 0.0


def test_interval_from_steps_across_windows() -> None:
    # one sample per 10 s window, 10 s apart: no step inside a window, the step across windows
    # (next first - previous last) measures 10 s; every window covers its 10 s
    s = samples([(10 * i, "0", 1001, 0.5) for i in range(4)])
    w = analyze_windows(as_table(s), window_s=10.0).windows
    assert set(w["interval_s"]) == {10.0} and w["covered_s"].tolist() == [10.0] * 4


def test_covered_time_capped_at_window_and_across_windows() -> None:
    # 30 s sampling in 60 s windows: two samples per window cover 30 + 30 = 60 s, never more
    s = samples([(30 * i, "0", 1001, 0.5) for i in range(6)])
    w = analyze_windows(as_table(s), window_s=60.0).windows
    assert w["covered_s"].tolist() == [60.0, 60.0, 60.0] and set(w["interval_s"]) == {30.0}
    # 10 s windows, 30 s sampling: each window holds one sample, covers at most its 10 s
    w = analyze_windows(as_table(s), window_s=10.0).windows
    assert w["covered_s"].tolist() == [10.0] * 6


def test_add_coverage_without_sample_times_is_a_no_op() -> None:
    wide = pd.DataFrame({"host": ["h"], "gpu": ["0"], "window_start": [0], "window_s": [60.0]})
    assert add_coverage(wide) is wide


@pytest.mark.parametrize(("hours", "share", "want"), [
    (8.0, 0.25, "high"), (100.0, 0.2, "medium"), (7.9, 0.9, "medium"), (1.0, 0.05, "medium"),
    (0.99, 1.0, "low"), (50.0, 0.04, "low"), (0.0, 1.0, "low"),
])
def test_severity_by_gpu_hours(hours: float, share: float, want: str) -> None:
    assert severity_by_hours(hours, share) == want


def _classified(rows: list[tuple[Any, ...]], window_s: float = 60.0, **labels: Any) -> pd.DataFrame:
    return analyze_windows(as_table(samples(rows, **labels)), window_s=window_s).windows


def test_fleet_hours_from_covered_time_and_severity() -> None:
    # one instant scrape per GPU (the "[high] idle 100 % of 0.0 GPU-hours"): 0 GPU-hours,
    # no finding; an hour of 1 s samples idle on a workload: 1 GPU-hour idle -> medium, not high
    one = _classified([(0, "0", 1001, 0.0), (0, "1", 1001, 0.0)], namespace="ns")
    roll = rollup(one, ["host"], 60.0)
    assert roll["gpu_hours"].tolist() == [0.0]
    assert fleet_findings(group_records(roll, ["host"]), 10) == []
    hour = _classified([(t, "0", 1001, 0.0) for t in range(3600)], namespace="ns")
    roll = rollup(hour, ["host"], 60.0)
    assert roll["gpu_hours"].iat[0] == pytest.approx(1.0)
    f = fleet_findings(group_records(roll, ["host"]), 10)
    assert [(x["rule"], x["severity"]) for x in f] == [("fleet-idle", "medium")]
    assert "1.00 GPU-hours" in f[0]["title"]


def test_unknown_label_rolls_up_as_unknown_not_mixed() -> None:
    w = _classified([(t, "0", 155, 70.0) for t in range(120)])  # power only
    assert set(w["label"]) == {"unknown"}
    roll = rollup(w, ["host"], 60.0)
    assert roll["share_unknown"].iat[0] == 1.0 and roll["share_mixed"].iat[0] == 0.0


# ----------------------------------------------------------------------------------------- corpus
def test_short_dmon_capture_shows_its_phases() -> None:
    path = corpus_dir("dcgm") / DMON_A100
    doc = run_analysis([str(path)])
    assert doc["window"]["seconds"] == 1.0 and doc["window"]["source"] == "default"
    labels = [w["label"] for w in doc["windows"]]
    assert labels == ["idle"] * 3 + ["compute-bound"] * 12  # the capture's 3 idle + 12 busy rows
    assert sum(w["covered_s"] for w in doc["windows"]) == 15.0
    charts, note = timeline_charts(doc)
    assert "chosen from the capture" in note
    assert charts[0].key == "labels" and charts[0].spans == {"0": 2}  # idle span, compute-bound span
    # one chart per metric family the capture has (GRACT, TENSO, DRAMA), the GPU as its series
    assert [(c.key, c.series) for c in charts[1:]] == [("gr_active", ["GPU 0"]), ("tensor_active", ["GPU 0"]),
                                                      ("dram_active", ["GPU 0"])]
    assert "<svg" in charts[1].html and "100%" in charts[1].html and "UTC" in charts[1].html
    over = run_analysis([str(path)], window_s=60.0)
    assert over["window"] == {"seconds": 60.0, "source": "option", "reason": "60 s, set by --window"}
    assert len(over["windows"]) <= 2


def test_nvidia_smi_csv_without_activity_is_idle_with_reason_not_mixed() -> None:
    doc = run_analysis([str(corpus_dir("dcgm") / NVSMI_CSV)])
    assert {w["label"] for w in doc["windows"]} == {"idle"}  # memory.used 4 MiB on every GPU
    assert all(any("no CUDA context" in e for e in w["evidence"]) for w in doc["windows"])
    series = next(iter(doc["timelines"].values()))
    assert "power_w" in series and "gpu_util" not in series
    charts, note = timeline_charts(doc)
    assert "gpu_util" not in {c.key for c in charts} and "gr_active" not in {c.key for c in charts}
    power = next(c for c in charts if c.key == "power_w")
    assert "NVML" in power.title and " W<" in power.html  # SI ticks in watts
    assert "No activity field" not in note  # power is drawn


def test_nvidia_smi_dmon_timeline_draws_coarse_signals() -> None:
    doc = run_analysis([str(corpus_dir("dcgm") / NVSMI_DMON)])
    series = doc["timelines"]["0"]
    assert {"gpu_util", "mem_copy_util", "power_w", "sm_clock_mhz", "mem_clock_mhz"} <= set(series)
    charts, _note = timeline_charts(doc)
    keys = {c.key for c in charts}
    assert {"gpu_util", "mem_copy_util", "power_w", "sm_clock_mhz", "mem_clock_mhz"} <= keys
    assert all("coarse" in c.html for c in charts if c.key == "gpu_util")
    assert "gr_active" not in keys  # no DCGM profiling field: no empty DCGM chart
    clocks = next(c for c in charts if c.key == "sm_clock_mhz")
    assert "2 GHz<" in clocks.html  # MHz in the document, drawn in SI hertz (ticks 500 MHz ... 2 GHz)
    assert {w["label"] for w in doc["windows"]} <= {"unknown", "idle"}


def test_single_instant_scrape_is_linted_not_extrapolated() -> None:
    doc = run_analysis([str(corpus_dir("dcgm") / ONE_SCRAPE)])
    assert all(w["covered_s"] == 0.0 for w in doc["windows"])
    assert "dcgm-single-sample-window" in {lt["code"] for lt in doc["lint"]}
    assert not [f for f in doc["findings"] if "GPU-" in f["title"]]


def test_mig_timelines_keep_their_label_bands() -> None:
    doc = run_analysis([str(FIX / "prom_tsdb_mig.prom")])
    keys = {w["gpu_key"] for w in doc["windows"]}
    assert keys == set(doc["timelines"]) == {"mig-node/0/mig 1", "mig-node/0/mig 2"}
    charts, _note = timeline_charts(doc)
    assert charts[0].spans == {"mig-node/0/mig 1": 3, "mig-node/0/mig 2": 3}  # compute, memory, idle / idle, overhead, compute
    assert all(c.series == ["GPU mig-node/0/mig 1", "GPU mig-node/0/mig 2"] for c in charts[1:])


def test_window_starts_grid_unchanged_by_coverage() -> None:
    s = samples([(t, "0", 1001, 0.5) for t in range(5, 125)])
    w = analyze_windows(as_table(s), window_s=60.0).windows
    assert [(x - T0.value // 10**6) / 1000 for x in w["window_start"]] == [0.0, 60.0, 120.0]
    assert w["covered_s"].tolist() == [55.0, 60.0, 5.0]


def test_fleet_group_table_fits_the_page() -> None:
    from rooftop.reports.fleet_sections import _group_columns

    rows = [{"group": "host=a", "idle": 0.5, "unknown": 0.5, "mixed": 0.0, "compute-bound": None}]
    keys = [c.key for c in _group_columns(rows)]
    assert "idle" in keys and "unknown" in keys
    assert "mixed" not in keys and "compute-bound" not in keys and "moved" not in keys
