"""NVIDIA's rule results read for the verdicts: errors, Tail Effect / Small Grid, failed profiles
(docs/formulas.md#kernel-labels)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from rooftop.analyzer.kernels.ncu_rules import failed_profiles, launch_signals, rule_errors


def _rules(rows: list[tuple[int, str, str, str]]) -> pd.DataFrame:
    return pd.DataFrame([{"input": "x", "index": i, "rule": r, "type": t, "title": ti, "description": ""}
                         for i, r, t, ti in rows])


def test_rule_errors_are_ncu_failures_not_findings() -> None:
    r = _rules([(0, "SOLBottleneck", "ERR", "Bottleneck"),
                (0, "", "WRN", "float division by zero /x/Sections/SpeedOfLight_Roofline.py:64"),
                (0, "Occupancy", "WRN", "Rule Occupancy returned an error"),
                (0, "SOLBottleneck", "OPT", "Latency Issue")])
    assert rule_errors(r).tolist() == [True, True, True, False]


def test_launch_signals_ncu_decides_only_when_it_evaluated() -> None:
    kernels = pd.DataFrame({"input": "x", "index": [0, 1, 2, 3], "launch__waves_per_multiprocessor": [1.5, 3.2, 3.2, np.nan]})
    r = _rules([(0, "LaunchConfiguration", "OPT", "Tail Effect"),
                (1, "SOLBottleneck", "OPT", "Latency Issue"),        # evaluated, no tail raised
                (2, "LaunchConfiguration", "ERR", "Launch Configuration"),  # the launch rule failed
                (2, "SOLBottleneck", "OPT", "Latency Issue"),
                (3, "SOLBottleneck", "OPT", "Latency Issue")])       # waves not collected
    s = launch_signals(kernels, r)
    assert s["ncu_tail"].tolist() == [True, False, None, None]
    assert s["ncu_small_grid"].tolist() == [False, False, None, None]


def test_failed_profiles_need_no_duration_and_a_failure() -> None:
    kernels = pd.DataFrame({"input": ["a", "a", "b"], "index": [0, 1, 0]})
    dur = pd.Series([np.nan, 1e-3, np.nan])
    meta = {"a": {"ncu_errors": ["==ERROR== LaunchFailed"]}}
    assert failed_profiles(kernels, pd.DataFrame(), meta, dur).tolist() == [True, False, False]
    only_errors = pd.DataFrame([{"input": "b", "index": 0, "rule": "X", "type": "ERR", "title": "Rule X returned an error",
                                 "description": ""}])
    assert failed_profiles(kernels, only_errors, {}, dur).tolist() == [False, False, True]
