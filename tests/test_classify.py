"""Labels and limiters: one hand-computed case per label and limiter, NVIDIA's SOLBottleneck
replica (docs/research/formulas.md §3.1, §3.3, §5.3), and the demo fixtures classify as intended."""

from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.kernels.classify import classify, sol_verdict, tail_effect, tail_speedup
from tests.conftest import FIXTURES

NAN = np.nan


def _facts(**kw: object) -> pd.DataFrame:
    base: dict[str, object] = {"duration_s": 100e-6, "sol_compute_pct": NAN, "sol_memory_pct": NAN, "waves": 10.0,
                               "grid": 1000.0, "sm_count": 100.0, "compute_util": NAN}
    base.update(kw)
    return pd.DataFrame([base])


def _one(**kw: object) -> tuple[str, str, object]:
    r = classify(_facts(**kw)).iloc[0]
    return r["label"], r["limiter"], r["sol_verdict"]


@pytest.mark.parametrize(("sm", "mem", "waves", "expected"), [
    (85.0, 10.0, 5.0, "High Throughput"),  # either side >= 80
    (10.0, 80.0, 0.5, "High Throughput"),  # >= 80 wins over waves < 1
    (50.0, 59.9, 0.5, "Small Grid"),  # both < 60, waves < 1
    (50.0, 59.9, 1.0, "Latency Issue"),  # both < 60, waves >= 1
    (75.0, 60.0, 2.0, "High Compute Throughput"),  # 60-80, |diff| 15 >= 10, SM higher
    (61.0, 75.0, 2.0, "High Memory Throughput"),
    (70.0, 62.0, 2.0, "Balanced Throughput"),  # |diff| 8 < 10
    (NAN, 50.0, 2.0, None),  # one side missing: no verdict
])
def test_sol_verdict_thresholds(sm: float, mem: float, waves: float, expected: str | None) -> None:
    v = sol_verdict(pd.Series([sm]), pd.Series([mem]), pd.Series([waves]))[0]
    assert v == expected


def test_tail_effect_condition() -> None:
    # partial > 0, whole >= 1, 100 / (1 + whole) >= 20  ->  1 <= waves < 5 with a partial wave
    # and (1 - partial) / (1 + whole) >= 10 %: 4.5 waves -> 0.5 / 5 = 10 %
    t = tail_effect(pd.Series([1.3, 4.5, 5.5, 0.7, 2.0, 4.6]))
    assert t.tolist() == [True, True, False, False, False, False]


def test_compute_bound_tensor_from_sol() -> None:
    # SM 85 % >= 80, memory 30 %: High Throughput on the compute side; tensor at 85 % of its roof
    assert _one(sol_compute_pct=85.0, sol_memory_pct=30.0, util_tensor=0.85, util_fp32=0.01, compute_util=0.86) == \
        ("compute-bound", "tensor", "High Throughput")


def test_compute_bound_fp64_and_fp32_from_roofline_without_sol() -> None:
    # no SOL: compute side 70 % vs memory 20 % -> compute-bound; FP64 is the busiest class
    assert _one(compute_util=0.7, util_fp64=0.6, util_fp32=0.1, bw_util_dram=0.2)[:2] == ("compute-bound", "fp64")
    assert _one(compute_util=0.8, util_fp32=0.8, bw_util_dram=0.3, bw_util_l2=0.1)[:2] == ("compute-bound", "fp32")


def test_compute_bound_fp16_from_pipe_utilization() -> None:
    assert _one(sol_compute_pct=90.0, sol_memory_pct=20.0, pipe_fp16=88.0, pipe_fp32=10.0)[:2] == ("compute-bound", "fp16")


def test_memory_bound_dram_l2_l1() -> None:
    # SOL memory 90 %: memory side; DRAM utilization 0.9 beats L2 0.3 and L1 0.1
    assert _one(sol_compute_pct=20.0, sol_memory_pct=90.0, bw_util_dram=0.9, bw_util_l2=0.3, bw_util_l1=0.1)[:2] == \
        ("memory-bound", "dram")
    assert _one(sol_compute_pct=30.0, sol_memory_pct=82.0, bw_util_dram=0.04, bw_util_l2=0.82, bw_util_l1=0.25)[:2] == \
        ("memory-bound", "l2")
    # both sides >= 80 (ESMM-like shared-memory SGEMM): L1/TEX 98.3 % > ALU pipe 19.7 % -> memory, L1
    assert _one(sol_compute_pct=97.7, sol_memory_pct=97.7, unit_l1=98.3, unit_l2=19.7, unit_dram=50.8, pipe_alu=19.7,
                pipe_fp32=10.7)[:2] == ("memory-bound", "l1")


def test_overhead_launch_small_grid_tail_latency() -> None:
    # 2 µs < 5 µs, SOL both < 60: launch (docs/research/formulas.md §5.2)
    assert _one(duration_s=2e-6, sol_compute_pct=1.0, sol_memory_pct=2.0, waves=0.01, grid=16.0) == \
        ("overhead-bound", "launch", "Small Grid")
    # 300 µs, 64 blocks on 80 SMs, 0.8 waves: ncu Small Grid
    assert _one(duration_s=300e-6, sol_compute_pct=33.3, sol_memory_pct=44.4, waves=0.8, grid=64.0, sm_count=80.0) == \
        ("overhead-bound", "small-grid", "Small Grid")
    # 1.3 waves: the partial wave may cost 100 / (1 + 1) = 50 % >= 20 %: tail
    assert _one(sol_compute_pct=40.0, sol_memory_pct=50.0, waves=1.3)[:2] == ("overhead-bound", "tail")
    # 141 waves, SOL 49 / 53: Latency Issue (speedy_scan in the corpus)
    assert _one(sol_compute_pct=49.0, sol_memory_pct=53.4, waves=141.5) == ("overhead-bound", "latency", "Latency Issue")


def test_overhead_without_sol() -> None:
    # a side >= 60 % is named before any overhead reason (SOLBottleneck order): 3 µs at 90 % of DRAM
    assert _one(duration_s=3e-6, bw_util_dram=0.9)[:2] == ("memory-bound", "dram")
    # no side measured: a 3 µs kernel is launch overhead, 40 blocks on 132 SMs is a small grid
    assert _one(duration_s=3e-6)[:2] == ("overhead-bound", "launch")
    assert _one(grid=40.0, sm_count=132.0, waves=NAN)[:2] == ("overhead-bound", "small-grid")
    assert _one(grid=40.0, sm_count=132.0, waves=NAN, bw_util_dram=0.3)[:2] == ("overhead-bound", "small-grid")


def test_no_sol_replica_of_solbottleneck_on_rooftop_utilisations() -> None:
    # every level and the compute side measured, both < 60 %: latency (ncu's "Latency Issue")
    full = {"bw_util_l1": 0.20, "bw_util_l2": 0.10, "bw_util_dram": 0.005, "compute_util": 0.006, "util_fp32": 0.006}
    r = classify(_facts(**full)).iloc[0]
    assert (r["label"], r["limiter"], r["basis"]) == ("overhead-bound", "latency", "roofline-sol")
    # only DRAM measured (L1/L2 not in the export): too thin to call latency -> unknown (AveryClapp case)
    thin = {"bw_util_dram": 0.005, "compute_util": 0.006, "util_fp32": 0.006}
    r = classify(_facts(**thin)).iloc[0]
    assert (r["label"], r["limiter"], r["basis"]) == ("unknown", "unknown", "thin")
    # 60-80 %: the side that clears 60 % is named; 59 % vs 40 % names nothing
    assert _one(compute_util=0.65, util_fp32=0.65, bw_util_dram=0.5, bw_util_l1=0.1, bw_util_l2=0.1)[:2] == \
        ("compute-bound", "fp32")
    assert _one(compute_util=0.59, util_fp32=0.59, bw_util_dram=0.4)[:2] == ("unknown", "unknown")
    # waves < 1 with more blocks than SMs is not a small grid: every SM has work
    r = classify(_facts(waves=0.77, grid=1024.0, sm_count=148.0, **full)).iloc[0]
    assert (r["label"], r["limiter"]) == ("overhead-bound", "latency")
    assert not bool(r["small_grid"])
    # nothing measured at all, waves < 1 with 1024 blocks on 148 SMs: unknown, not small grid (meinie case)
    assert _one(waves=0.77, grid=1024.0, sm_count=148.0, duration_s=628e-6)[:2] == ("unknown", "unknown")


def test_tail_needs_a_mostly_empty_last_wave() -> None:
    # 3.9 waves: ncu's potential 1/(1+3) = 25 % >= 20 %, but the last wave is 90 % full:
    # (1 - 0.9) / 4 = 2.5 % < 10 % -> not a tail problem
    assert tail_effect(pd.Series([3.9])).tolist() == [False]
    assert tail_speedup(pd.Series([3.9])).iloc[0] == pytest.approx(2.5)
    # 1.3 waves: (1 - 0.3) / 2 = 35 % -> tail
    assert tail_speedup(pd.Series([1.3])).iloc[0] == pytest.approx(35.0)
    lat = {"sol_compute_pct": 40.0, "sol_memory_pct": 50.0}
    assert _one(waves=3.9, **lat)[:2] == ("overhead-bound", "latency")
    # NCU evaluated its launch rules and raised no Tail Effect: its answer wins over the replica
    assert _one(waves=1.3, ncu_tail=False, **lat)[:2] == ("overhead-bound", "latency")
    assert _one(waves=2.95, ncu_tail=True, **lat)[:2] == ("overhead-bound", "tail")


def test_partial_evidence_and_unknown() -> None:
    # bytes and time only: DRAM at 85 % of its roof decides; at 30 % nothing does
    assert _one(bw_util_dram=0.85)[:2] == ("memory-bound", "dram")
    assert _one(bw_util_dram=0.30)[:2] == ("unknown", "unknown")
    assert _one()[:2] == ("unknown", "unknown")
    # SOL only, no breakdown: the side is known, the level is not
    assert _one(sol_compute_pct=20.0, sol_memory_pct=85.0)[:2] == ("memory-bound", "unknown")


def test_balanced_is_decided_by_the_roofline() -> None:
    assert _one(sol_compute_pct=70.0, sol_memory_pct=65.0, bw_util_dram=0.72, compute_util=0.3, util_fp32=0.3)[:2] == \
        ("memory-bound", "dram")


def test_stored_ncu_verdict_wins_over_the_replica() -> None:
    # waves not exported: the replica says Latency Issue, NCU stored Small Grid
    assert _one(sol_compute_pct=9.2, sol_memory_pct=19.7, waves=NAN, grid=224.0, sm_count=NAN,
                ncu_stored_verdict="Small Grid") == ("overhead-bound", "small-grid", "Small Grid")


def test_evidence_is_in_words_with_numbers() -> None:
    k = pd.DataFrame([{"input": "x", "index": 3, "name": "k", "duration_s": 2e-6,
                       "sm__throughput.avg.pct_of_peak_sustained_elapsed": 1.0,
                       "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 2.0,
                       "launch__waves_per_multiprocessor": 0.01, "launch__grid_size": 16.0}])
    res = analyze_kernels(k, pd.DataFrame()).results.iloc[0]
    ev = " | ".join(res["evidence"])
    assert res["label"] == "overhead-bound" and res["limiter"] == "launch"
    assert "SOLBottleneck \"Small Grid\"" in ev and "Duration 2 µs < 5 µs" in ev
    assert "Not in the export, so not evaluated: L1 bytes, L2 bytes, DRAM bytes, FLOP counters" in ev


# -- the demo fixtures -------------------------------------------------------------------------

def _demo_module():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("make_ncu", FIXTURES / "make_ncu.py")
    assert spec and spec.loader
    mod = importlib.util.module_from_spec(spec)
    sys.modules["make_ncu"] = mod
    spec.loader.exec_module(mod)
    return mod


def _demo_in_memory() -> pd.DataFrame:
    mk = _demo_module()
    rows = []
    for i, k in enumerate(mk.kernels()):
        row = {"input": "demo", "index": i, "name": k["name"], "device": mk.DEVICE_NAME, "cc": "9.0"}
        row.update({m: (v * 1e-9 if m == "gpu__time_duration.sum" else float(v)) for m, v in k["metrics"].items()})
        row["duration_s"] = row["gpu__time_duration.sum"]
        rows.append(row)
    return pd.DataFrame(rows)


def test_demo_fixture_data_classifies_as_intended() -> None:
    mk = _demo_module()
    res = analyze_kernels(_demo_in_memory(), pd.DataFrame()).results
    assert list(zip(res["label"], res["limiter"], strict=True)) == mk.INTENDED
    # GEMM: 2 x 8192^3 tensor ops at 85 % of 540,672 x 1.98e9 ops/s
    assert res.at[0, "flops_tensor"] == 2 * 8192**3
    assert res.at[0, "achieved_flops_s"] == pytest.approx(0.85 * 540672 * 1.98e9, rel=1e-3)  # duration rounded to ns
    # GEMV: AI at DRAM = 2 x 16384^2 / (16384^2 x 4 + 2 x 16384 x 4) ~ 0.5 FLOP/B
    assert res.at[1, "intensity_dram"] == pytest.approx(2 * 16384**2 / (16384**2 * 4 + 2 * 16384 * 4))
    assert res.at[4, "binding_level"] == "l2"


@pytest.mark.parametrize("name", ["demo.raw.csv", "demo.details.csv"])
def test_demo_exports_parse_and_classify_as_intended(name: str) -> None:
    if importlib.util.find_spec("rooftop.parsers.ncu.raw") is None:
        pytest.skip("ncu CSV parsers not present yet")
    from rooftop.parsers import parse_path

    mk = _demo_module()
    r = parse_path(FIXTURES / "ncu" / name)
    res = analyze_kernels(r.kernels, r.rules).results
    assert list(zip(res["label"], res["limiter"], strict=True)) == mk.INTENDED
    assert '<' in res.at[2, "name"] and '&' in res.at[2, "name"] and '"' in res.at[2, "name"]
    if name == "demo.details.csv":
        assert all(any(x["rule"] == "SOLBottleneck" for x in rules) for rules in res["ncu_rules"])


def test_generator_is_deterministic() -> None:
    mk = _demo_module()
    assert mk.raw_csv() == mk.raw_csv() and mk.details_csv() == mk.details_csv()
    committed = (FIXTURES / "ncu" / "demo.raw.csv").read_text(encoding="utf-8")
    assert committed == mk.raw_csv(), "fixtures/ncu/demo.raw.csv is stale: run .venv/bin/python fixtures/make_ncu.py"
    assert (FIXTURES / "ncu" / "demo.details.csv").read_text(encoding="utf-8") == mk.details_csv()
