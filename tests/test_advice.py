"""Recommendations from the evidence (analyzer/kernels/advice.py, docs/formulas.md#findings): hand cases."""

from __future__ import annotations

import math

from rooftop.analyzer.findings.recommendations import recommendation
from rooftop.analyzer.kernels.advice import advise, motivation


def _rec(label: str, limiter: str, row: dict, pct: float) -> str:
    return advise(label, limiter, recommendation(label, limiter), row, pct)


def test_streaming_dram_kernel_is_told_only_fewer_bytes_help() -> None:
    # elementwise add: 1 FLOP per 12 bytes; at 60 % of the DRAM roof
    rec = _rec("memory-bound", "dram", {"intensity_dram": 1 / 12}, 60.0)
    assert rec.startswith("Why: DRAM bandwidth binds at 60 % of its roof, at 0.0833 FLOP/byte")
    assert "blocking cannot help" in rec and "tile" not in rec


def test_reusing_dram_kernel_keeps_the_tiling_advice() -> None:
    rec = _rec("memory-bound", "dram", {"intensity_dram": 8.0}, 40.0)
    assert "8 FLOP/byte" in rec and recommendation("memory-bound", "dram") in rec


def test_near_the_roof_only_fewer_bytes_or_less_work() -> None:
    rec = _rec("memory-bound", "l1", {"intensity_l1": 0.25}, 83.0)
    assert "fewer L1 bytes per FLOP" in rec and "tiling" in rec
    rec = _rec("compute-bound", "tensor", {"achieved_flops_s": 9.1e14}, 86.0)
    assert "the tensor-core pipe binds at 86 %" in rec and "910 TFLOP/s" in rec and "less work" in rec


def test_launch_bound_motivation_states_the_mean_launch_time() -> None:
    assert motivation("overhead-bound", "launch", {"time_s": 6e-6, "launches": 3}, math.nan) == \
        "Why: 3 launch(es) averaging 2 µs each, the order of a launch's own cost."


def test_without_the_numbers_the_general_advice_and_no_why() -> None:
    assert _rec("memory-bound", "dram", {}, math.nan) == recommendation("memory-bound", "dram")
    assert _rec("overhead-bound", "tail", {"time_s": 1.0, "launches": 1}, 20.0) == \
        recommendation("overhead-bound", "tail")
