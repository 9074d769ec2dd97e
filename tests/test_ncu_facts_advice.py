"""NCU's per-kernel launch facts beside the verdict, and advice that uses them (issue 29 item 6;
docs/formulas.md#kernel-labels, #findings): no "raise occupancy" at high achieved occupancy, register
spilling named as such, the block size named first. Hand-computed rows and corpus files."""

from __future__ import annotations

from functools import cache
from types import SimpleNamespace
from typing import Any

import pandas as pd

import rooftop
from rooftop.analyzer.findings import rank_findings
from rooftop.analyzer.kernels.analyze import analyze_kernels
from tests.conftest import corpus_dir

NO_WINDOWS = SimpleNamespace(findings=[])
LATENCY_SOL = {"sm__throughput.avg.pct_of_peak_sustained_elapsed": 30.0,
               "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed": 40.0,
               "launch__grid_size": 4096, "device__attribute_multiprocessor_count": 108,
               "launch__waves_per_multiprocessor": 9.5}


def _finding(**metrics: Any) -> tuple[pd.Series, dict[str, Any]]:
    k = pd.DataFrame([{"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3, **LATENCY_SOL, **metrics}])
    res = analyze_kernels(k, pd.DataFrame())
    [f] = rank_findings(res.results.assign(family="g"), NO_WINDOWS)
    return res.results.iloc[0], f


def test_no_raise_occupancy_at_high_achieved_occupancy_by_hand() -> None:
    row, f = _finding(**{"sm__warps_active.avg.pct_of_peak_sustained_active": 99.0,
                         "sm__maximum_warps_per_active_cycle_pct": 100.0, "launch__block_size": 256})
    assert (row["label"], row["limiter"]) == ("overhead-bound", "latency")
    assert "raise occupancy" not in f["recommendation"]
    assert "Occupancy is already 99 % of the maximum warps" in f["recommendation"]
    ev = " | ".join(row["evidence"])
    assert "NCU launch facts: occupancy 99.0 % achieved of 100.0 % theoretical" in ev
    assert "limited by" not in ev  # a full theoretical occupancy has no limiter


def test_occupancy_limiter_named_by_hand() -> None:
    # block limits: registers 2, shared memory 8, warps 8, blocks 32 -> registers (40 per thread) limit it
    row, f = _finding(**{"sm__warps_active.avg.pct_of_peak_sustained_active": 30.0,
                         "sm__maximum_warps_per_active_cycle_pct": 37.5, "launch__registers_per_thread": 128,
                         "launch__occupancy_limit_registers": 2, "launch__occupancy_limit_shared_mem": 8,
                         "launch__occupancy_limit_warps": 8, "launch__occupancy_limit_blocks": 32,
                         "launch__block_size": 256})
    assert row["occupancy_limiter"] == "registers"
    assert "theoretical 38 %, limited by registers (128 per thread); achieved 30 %" in f["recommendation"]


def test_register_spilling_named_first_by_hand() -> None:
    row, f = _finding(**{"launch__registers_per_thread": 255, "launch__block_size": 256,
                         "l1tex__t_requests_pipe_lsu_mem_local_op_ld.sum": 4.0e6,
                         "l1tex__t_requests_pipe_lsu_mem_local_op_st.sum": 1.0e6})
    assert row["local_memory_ops"] == 5.0e6
    assert f["recommendation"].startswith("Local memory traffic first: 5000000 local loads/stores with 255 registers")
    assert "register spills" in " | ".join(row["evidence"])


def test_block_size_not_a_multiple_of_32_by_hand() -> None:
    _, f = _finding(**{"launch__block_size": 1})
    assert f["recommendation"].startswith("Blocks of 1 thread leave 31 of the 32 lanes")


@cache
def _doc(name: str) -> dict[str, Any]:
    return rooftop.analyze([str(corpus_dir("ncu") / name)], top=50)


def test_scan_at_94_pct_occupancy_is_not_told_to_raise_it_thedavidchu() -> None:
    [f] = _doc("thedavidchu__speedy_scan__profile.ncu-rep")["findings"]
    assert "raise occupancy" not in f["recommendation"] and "Occupancy is already 94 %" in f["recommendation"]


def test_one_thread_blocks_named_amitadate() -> None:
    f = _doc("amitadate__GPU_Power_Model__PS1_100_profile.ncu-rep")["findings"][0]
    assert f["recommendation"].startswith("Blocks of 1 thread leave 31 of the 32 lanes")


def test_launch_facts_beside_the_verdict_alprielse() -> None:
    k = _doc("AlpriElse__cs599k__silu__triton__silu-pytorch-ncu-report.txt")["kernels"][0]
    assert "NCU launch facts: occupancy 50.4 % achieved of 62.5 % theoretical (limited by registers), " \
           "42 registers/thread, 0 B shared memory/block, 1.60 waves" in k["evidence"]
    x = k["extra"]
    assert (x["occupancy_achieved_pct"], x["occupancy_theoretical_pct"], x["registers_per_thread"]) == (50.4, 62.5, 42)
    assert x["top_unit_name"] == "SM (Compute (SM) Throughput)" and x["busiest_pct"] == 77.14


def test_small_grid_advice_before_spills_and_findings_show_launch_facts() -> None:
    """wtzhang23 ray tracer: one block (small grid) with 324 local loads/stores: the grid leads, the spill
    advice follows it; every finding carries its NCU launch facts sentence (docs/formulas.md#findings)."""
    from rooftop.analyzer.pipeline import run_analysis
    from tests.conftest import corpus_dir

    doc = run_analysis([str(corpus_dir("ncu") / "wtzhang23__gpu-ray-tracer__report.ncu-rep")])
    top = doc["findings"][0]
    assert top["limiter"] == "small-grid"
    rec = top["recommendation"]
    assert rec.startswith("The grid is too small") and "Then the local memory traffic: 324" in rec and rec.endswith(" next.")
    assert any(e.startswith("NCU launch facts: ") for e in top["evidence"])


def test_unused_shared_memory_is_no_occupancy_limiter() -> None:
    """A block with 0 B of shared memory: NCU's shared-memory block limit equals the blocks-per-SM limit
    (16 and 16 for amitadate's 1-thread blocks); only blocks per SM is named. With shared memory in use
    the tie stays."""
    from rooftop.analyzer.metrics.launch_facts import launch_facts

    df = pd.DataFrame({"launch__occupancy_limit_blocks": [16.0, 16.0], "launch__occupancy_limit_shared_mem": [16.0, 16.0],
                       "launch__occupancy_limit_registers": [48.0, 48.0], "launch__occupancy_limit_warps": [32.0, 32.0],
                       "launch__shared_mem_per_block_static": [0.0, 4096.0]})
    assert launch_facts(df)["occupancy_limiter"].tolist() == ["blocks per SM", "shared memory and blocks per SM"]


def test_amitadate_names_blocks_per_sm() -> None:
    from rooftop.analyzer.pipeline import run_analysis
    from tests.conftest import corpus_dir

    doc = run_analysis([str(corpus_dir("ncu") / "amitadate__GPU_Power_Model__PS1_100_profile.ncu-rep")])
    rec = doc["findings"][0]["recommendation"]
    assert "limited by blocks per SM;" in rec and "shared memory" not in rec
