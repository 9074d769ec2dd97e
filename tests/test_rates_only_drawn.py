"""A rates-only export (no duration; ncu's per-cycle and per-second rates) is drawn where its JSON
places it (issue 29 item 6, docs/formulas.md#families): the family carries the launches' own achieved
FLOP/s and intensity and is a point on the roofline, not "no roofline, collect this section"."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.kernels.families import family_table
from rooftop.analyzer.pipeline import run_analysis
from tests.conftest import corpus_dir

RATES_ONLY = ("CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3"
              "__ncu.section_SpeedOfLight_RooflineChart.csv")


def test_rates_only_family_takes_its_launches_rates() -> None:
    """Hand-computed: two launches without durations, 1 and 3 TFLOP/s at 2 and 4 FLOP/B DRAM, the
    second standing for 3 invocations: (1 + 3 x 3) / 4 = 2.5 TFLOP/s, (2 + 3 x 4) / 4 = 3.5 FLOP/B."""
    res = pd.DataFrame({"name": ["k", "k"], "family": ["k", "k"], "duration_s": [np.nan, np.nan],
                        "flops": [np.nan, np.nan], "achieved_flops_s": [1e12, 3e12],
                        "attainable_flops_s": [4e12, 4e12], "intensity_dram": [2.0, 4.0],
                        "invocations": [1, 3], "label": ["unknown", "unknown"], "limiter": ["unknown"] * 2})
    fam = family_table(res).iloc[0]
    assert fam["achieved_flops_s"] == pytest.approx(2.5e12)
    assert fam["intensity_dram"] == pytest.approx(3.5)
    assert fam["attainable_flops_s"] == pytest.approx(4e12)
    assert pd.isna(fam["time_s"]) and pd.isna(fam["intensity_l2"])


def test_timed_family_keeps_its_sums() -> None:
    res = pd.DataFrame({"name": ["k", "k"], "family": ["k", "k"], "duration_s": [1e-3, np.nan],
                        "flops": [1e9, np.nan], "achieved_flops_s": [1e12, 9e12], "intensity_dram": [2.0, 9.0],
                        "bytes_dram": [5e8, np.nan]})
    fam = family_table(res).iloc[0]
    assert fam["achieved_flops_s"] == pytest.approx(1e12) and fam["intensity_dram"] == pytest.approx(2.0)


def test_rates_only_corpus_file_is_placed() -> None:
    doc = run_analysis([str(corpus_dir("ncu") / RATES_ONLY)])
    view = doc["roofline"]
    assert view is not None and view["why_empty"] is None
    assert view["panels"][0]["placed"] == [0]
    fam = doc["families"][0]
    k = doc["kernels"][0]
    assert fam["achieved_flops_s"] == pytest.approx(k["achieved_flops_s"])  # 344 GFLOP/s
    assert fam["intensity_dram"] == pytest.approx(k["intensity"]["dram"])  # 0.997 FLOP/B
