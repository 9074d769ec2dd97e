"""Kernels with bytes but no FLOPs get a place on a bandwidth chart (issue 29, "Kernels with no FLOPs
still get a bound"; docs/formulas.md#report-view): per level achieved B/s and % of the ceiling, and the
time the bytes need at least at the ceilings."""

from __future__ import annotations

import pandas as pd
import pytest

from rooftop.analyzer.pipeline import run_analysis
from rooftop.analyzer.view import bandwidth_rows
from rooftop.reports.html import render_html
from tests.conftest import corpus_dir


def test_bandwidth_rows_hand_computed() -> None:
    """2 GB of DRAM and 1 GB of L2 in 2 ms under 2 TB/s DRAM and 5 TB/s L2: 1 TB/s = 50 %, 0.5 TB/s =
    10 %; the bytes need at least max(2e9 / 2e12, 1e9 / 5e12) = 1 ms. A placed family is not listed."""
    fam = pd.DataFrame({"time_s": [2e-3, 1e-3], "bytes_dram": [2e9, 1e9], "bytes_l2": [1e9, None],
                        "bytes_l1": [None, None]})
    ceilings: list = [{"kind": "bandwidth", "level": "dram", "value": 2e12},
                      {"kind": "bandwidth", "level": "l2", "value": 5e12}]
    rows = bandwidth_rows(fam, [0], ceilings)
    assert len(rows) == 1 and rows[0]["family"] == 0
    lv = {x["level"]: x for x in rows[0]["levels"]}
    assert lv["dram"]["bytes_s"] == pytest.approx(1e12) and lv["dram"]["pct"] == pytest.approx(50.0)
    assert lv["l2"]["pct"] == pytest.approx(10.0) and "l1" not in lv
    assert rows[0]["bound_s"] == pytest.approx(1e-3)
    no_ceiling = bandwidth_rows(fam, [0], [])
    assert no_ceiling[0]["levels"][0]["pct"] is None and no_ceiling[0]["bound_s"] is None


def test_transpose_on_the_corpus_has_a_bandwidth_row() -> None:
    """transpose_tiled.csv (RTX 5070, no FLOP counters): was 'no roofline, collect --set full' only."""
    doc = run_analysis([str(corpus_dir("ncu") / "Olajide-Badejo__GPU-Roofline-Profiler__results__sample_run__ncu__"
                                          "transpose_tiled.csv")])
    view = doc["roofline"]
    assert view is not None
    bw = view["panels"][0].get("bandwidth")
    assert bw and bw[0]["levels"][0]["level"] == "dram"
    assert bw[0]["levels"][0]["pct"] == pytest.approx(52.1, abs=0.1)
    assert bw[0]["bound_s"] == pytest.approx(44.7e-6, rel=1e-2)
    html = render_html(doc)
    assert "kernels without FLOPs measured: achieved bandwidth" in html and "DRAM 350 GB/s = 52.1%" in html
