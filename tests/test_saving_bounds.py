"""Savings within physics (docs/formulas.md#findings, issue 29): NVIDIA's rule estimates bounded by
what their fix can save. Hand-computed cases, the corpus randn kernel, and every corpus ncu file."""

from __future__ import annotations

from functools import cache
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pandas as pd
import pytest

import rooftop
from rooftop.analyzer.findings import rank_findings
from rooftop.analyzer.findings.bounds import PRESERVING, REMOVING, rule_fix
from rooftop.errors import InputError
from tests.conftest import corpus_dir

NO_WINDOWS = SimpleNamespace(findings=[])
TAIL_TEXT = ("A wave of thread blocks is defined as the maximum number of blocks that can be executed in parallel on "
             "the target GPU. This kernel launch results in 1 full waves and a partial wave of 397 thread blocks.")


def frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    base: dict[str, Any] = {"family": None, "label": "unknown", "limiter": "unknown", "duration_s": np.nan,
                            "achieved_flops_s": np.nan, "attainable_flops_s": np.nan, "evidence": [], "ncu_rules": []}
    return pd.DataFrame([{**base, **r} for r in rows])


def test_tail_effect_bounded_by_the_busiest_unit_by_hand() -> None:
    # 778 µs, Compute (SM) 77.1 %, NVIDIA's tail estimate 50 % = 389 µs: a tail fix keeps the work, so the SM
    # still needs 77.1 % of the time: at most 778 × (1 − 0.771) = 178.2 µs (the randn kernel)
    rule = {"rule": "", "title": "A wave of thread blocks is defined as the maximum number of blocks that can be "
            "executed in parallel on the target GPU", "speedup_pct": 50.0, "speedup_type": "global", "message": TAIL_TEXT}
    df = frame([{"family": "randn", "label": "compute-bound", "duration_s": 778e-6, "sol_compute_pct": 77.1,
                 "sol_memory_pct": 33.4, "ncu_rules": [rule]}])
    [f] = rank_findings(df, NO_WINDOWS)
    assert f["est_saving_s"] == pytest.approx(778e-6 * (1 - 0.771))
    assert f["saving_bound_s"] == pytest.approx(178.2e-6, rel=1e-3)
    assert f["saving_basis"] == "nvidia-preserving"
    ev = " | ".join(f["evidence"])
    assert "NVIDIA estimates 389 µs, counted 178 µs" in ev and "SM (Compute (SM) Throughput) at 77.1 %" in ev
    assert "tail effect" in ev


def test_work_removing_fix_on_the_busiest_unit_by_hand() -> None:
    # L1 busiest at 90 % (compute 30 %, L2 40 %); a 4-way bank conflict leaves 1/4 of the L1 wavefronts:
    # the L1 work needs 90 × 0.25 = 22.5 %, L2 still 40 %: at most 10 ms × (1 − 0.40) = 6 ms; NVIDIA says 70 %
    rule = {"rule": "", "title": "Shared Load Bank Conflicts", "speedup_pct": 70.0, "speedup_type": "global",
            "message": "The memory access pattern for shared loads might not be optimal and causes on average a "
                       "4.0-way bank conflict across all shared load requests."}
    df = frame([{"family": "A", "label": "memory-bound", "limiter": "l1", "duration_s": 10e-3, "sol_compute_pct": 30.0,
                 "sol_memory_pct": 90.0, "busiest_pct": 90.0, "top_unit_side": "memory", "top_unit_level": "l1",
                 "top_unit_name": "L1/TEX cache", "sol_l1_pct": 90.0, "sol_l2_pct": 40.0, "ncu_rules": [rule]}])
    [f] = rank_findings(df, NO_WINDOWS)
    assert f["est_saving_s"] == pytest.approx(6e-3)
    assert f["saving_basis"] == "nvidia-removing"
    assert any("removes work from L1/TEX cache" in e and "0.25" in e for e in f["evidence"])
    # NVIDIA at 20 %: within the bound, counted as given
    df.at[0, "ncu_rules"] = [{**rule, "speedup_pct": 20.0}]
    assert rank_findings(df, NO_WINDOWS)[0]["est_saving_s"] == pytest.approx(2e-3)


def test_fix_on_a_unit_that_does_not_bind_is_not_the_saving() -> None:
    # L1 data pipe busiest at 99.6 %; NVIDIA's L2-slice imbalance estimate of 40 % cannot speed up an
    # L1-bound kernel: shown as NVIDIA's estimate, not counted (issue 29: 12 ms claimed where 0.3 ms bounds)
    rule = {"rule": "WorkloadImbalance", "title": "L2 Slices Workload Imbalance", "speedup_pct": 40.0,
            "speedup_type": "global", "message": "One or more L2 Slices have a much higher number of active cycles "
                                                 "than the average number of active cycles."}
    df = frame([{"family": "A", "label": "memory-bound", "limiter": "l1", "duration_s": 30e-3, "sol_compute_pct": 50.0,
                 "sol_memory_pct": 99.6, "busiest_pct": 99.6, "top_unit_side": "memory", "top_unit_level": "l1",
                 "top_unit_name": "L1/TEX data pipe (LSU wavefronts)", "sol_l2_pct": 60.0, "ncu_rules": [rule]}])
    [f] = rank_findings(df, NO_WINDOWS)
    assert f["est_saving_s"] is None
    ev = " | ".join(f["evidence"])
    assert "not counted as the saving" in ev and "L1/TEX data pipe (LSU wavefronts) at 99.6 %" in ev
    assert "at most 120 µs" in ev  # 30 ms × (1 − 0.996)


@pytest.mark.parametrize(("item", "kind", "targets", "remaining"), [
    ({"rule": "LaunchConfiguration", "title": "Tail Effect"}, PRESERVING, (), None),
    ({"rule": "", "title": "x", "message": TAIL_TEXT}, PRESERVING, (), None),
    ({"rule": "AchievedOccupancy", "title": "Achieved Occupancy",
      "message": "... can be the result of warp scheduling overheads or workload imbalances"}, PRESERVING, (), None),
    ({"rule": "WorkloadImbalance", "title": "x", "message": "One or more DRAM Slices have a much lower number"},
     PRESERVING, ("dram",), None),
    ({"rule": "CPIStall", "title": "Lg Throttle Stalls"}, PRESERVING, (), None),
    ({"rule": "UncoalescedGlobalAccess", "title": "Uncoalesced Global Accesses",
      "message": "Uncoalesced global access, expected 189316 sectors, got 207086 (1.09x)"}, REMOVING, ("l1", "l2"),
     189316 / 207086),
    ({"rule": "MemoryCacheAccessPattern", "title": "L1TEX Global Load Access Pattern",
      "message": "On average, only 26.4 of the 32 bytes transmitted per sector are utilized by each thread."},
     REMOVING, ("l1", "l2"), 26.4 / 32),
    ({"rule": "FPInstructions", "title": "FP32 Non-Fused Instructions"}, REMOVING, ("compute",), None),
])
def test_rule_kinds(item: dict[str, Any], kind: str, targets: tuple[str, ...], remaining: float | None) -> None:
    fix = rule_fix(item)
    assert (fix.kind, fix.targets) == (kind, targets)
    assert fix.remaining == (pytest.approx(remaining) if remaining is not None else None)


@cache
def _doc(path: str) -> dict[str, Any]:
    return rooftop.analyze([path], top=1000)


def test_randn_kernel_saving_within_physics_alprielse() -> None:
    path = corpus_dir("ncu") / "AlpriElse__cs599k__silu__triton__silu-pytorch-ncu-report.txt"
    doc = _doc(str(path))
    [f] = [f for f in doc["findings"] if "distribution_elementwise_grid_stride_kernel" in f["family"]]
    # 777.95 µs × (1 − 0.7714) = 177.8 µs, not NVIDIA's 389 µs
    assert f["est_saving_s"] == pytest.approx(777.95e-6 * (1 - 0.7714), rel=1e-6)
    assert f["saving_bound_s"] == pytest.approx(f["est_saving_s"])
    assert any("SM (Compute (SM) Throughput) at 77.1 %" in e for e in f["evidence"])
    # the quoted rule text is the tail rule's own, not the SOLBottleneck paragraph printed above it
    assert "partial wave of 397 thread blocks" in f["recommendation"]
    assert "Compute is more heavily utilized" not in f["recommendation"]


def _corpus_files() -> list[Path]:
    try:
        d = corpus_dir("ncu")
    except pytest.skip.Exception:
        return []
    return sorted(p for p in d.iterdir() if p.is_file() and p.suffix not in (".md", ".tsv"))


@pytest.mark.corpus
@pytest.mark.parametrize("path", _corpus_files(), ids=lambda p: p.name[:60])
def test_no_saving_exceeds_its_physical_bound(path: Path) -> None:
    """On every corpus ncu file: each claimed saving <= its stated bound; a saving not declared
    work-removing <= Σ duration × (1 − max(NCU's SM %, memory %)) over its launches with SOL %."""
    try:
        doc = _doc(str(path))
    except InputError:
        pytest.skip("not a usable export")
    ks = doc["kernels"]
    for f in doc["findings"]:
        est = f.get("est_saving_s")
        if est is None or f.get("source") != "ncu":
            continue
        times = [(ks[i]["duration_s"] or 0.0) * ((ks[i].get("extra") or {}).get("invocations") or 1)
                 for i in f["kernels"]]
        assert est <= sum(times) * (1 + 1e-9)
        if f.get("saving_bound_s") is not None:
            assert est <= f["saving_bound_s"] * (1 + 1e-9), f["title"]
        # only a saving declared work-removing may exceed the same-work bound
        if f.get("saving_basis") not in ("nvidia-removing", "nvidia-mixed"):
            cap = 0.0
            for i, t in zip(f["kernels"], times, strict=True):
                sol = ks[i].get("sol") or {}
                vals = [v for v in (sol.get("compute_pct"), sol.get("memory_pct")) if v is not None]
                cap += t * (1 - max(vals) / 100) if vals else t
            assert est <= cap * (1 + 1e-9), f["title"]
