"""The diff gate needs an effect size on top of significance, says which decided, names every row
readably, and says what it could not compare (docs/formulas.md#diff, #timeline-diff; issue 28
items 1-5)."""

from __future__ import annotations

import re
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.diff.compare import compare
from rooftop.analyzer.diff.sides import run_diff
from rooftop.errors import InputError
from tests.conftest import FIXTURES, corpus_dir
from tests.test_diff import frame, kernel

MFU = "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_{}.sqlite"
HEAT = "ishana23g__heat_eq__optimized__profiler__ncu_fma_memory.txt"


def quiet_run(seed: int, shift: float = 1.0, launches: int = 200, families: int = 4) -> pd.DataFrame:
    """Launches with 0.2 % noise: a 1.5 % shift is highly significant, yet within run-to-run noise."""
    rng = np.random.default_rng(seed)
    return frame([kernel(f"fam{f}", 1e-4 * (f + 1) * shift * rng.lognormal(0, 0.002))
                  for _ in range(launches) for f in range(families)])


# ----------------------------------------------------------------------------- 1. effect size over noise


def test_significant_small_shift_does_not_fail_a_low_gate_and_says_the_effect_decided() -> None:
    r = compare(quiet_run(1), quiet_run(2, shift=1.015), fail_on=0)
    v = r.verdict
    assert not v["fail"], v["reason"]
    assert v["classify_pct"] == 5.0 and v["min_effect_pct"] == 5.0 and v["effect_from"] == "min-effect"
    assert v["decided_by"]["significant_within_effect"] == 4 and v["decided_by"]["effect"] == 4
    assert set(r.series["decided_by"]) == {"effect"} and r.series["significant"].all()
    assert "5 % is the --min-effect floor: --fail-on 0 asks for less than run-to-run noise" in v["reason"]
    assert "4 series changed significantly but by less than 5 %" in v["reason"]
    assert "decided by the effect size" in v["reason"]


def test_min_effect_is_configurable_and_the_test_still_decides_noise() -> None:
    b, c = quiet_run(1), quiet_run(2, shift=1.015)
    v = compare(b, c, fail_on=1, min_effect=0.5).verdict
    assert v["fail"] and v["effect_from"] == "fail-on" and len(v["regressions"]) == 4
    assert {x["decided_by"] for x in v["regressions"]} == {"effect+significance"}
    noise = compare(quiet_run(3), quiet_run(4), fail_on=0, min_effect=0).verdict  # no shift: the test says noise
    assert not noise["regressions"]
    with pytest.raises(InputError, match="--min-effect"):
        compare(b, c, fail_on=5, min_effect=-1)


def test_threshold_only_series_and_the_total_obey_the_floor() -> None:
    b = frame([kernel("a", 1.0), kernel("b", 1.0)])
    c = frame([kernel("a", 1.02), kernel("b", 1.02)])  # single launches, +2 %; total +2 %
    v = compare(b, c, fail_on=0).verdict
    assert not v["fail"] and not v["regressions"]
    assert compare(b, c, fail_on=0, min_effect=1).verdict["fail"]


@cache
def _trace_diff(before: str, after: str, fail_on: float | None) -> dict[str, Any]:
    d = corpus_dir("trace")
    return run_diff(str(d / MFU.format(before)), str(d / MFU.format(after)), fail_on=fail_on, device=None,
                    command="test")


@pytest.mark.parametrize("fail_on", [0.0, 5.0])
def test_corpus_trace_pair_one_to_two_percent_gemm_shifts_do_not_fail(fail_on: float) -> None:
    """Before → after: GEMMs at +1.0-1.8 % and the median idle gap failed a 0 % gate."""
    v = _trace_diff("before", "after", fail_on)["verdict"]
    assert not v["fail"], v["reason"]
    assert v["decided_by"]["significant_within_effect"] >= 1
    assert "(idle gaps)" not in v["reason"]


@pytest.mark.parametrize("side", ["before", "after"])
def test_corpus_self_diffs_exit_0_with_any_fail_on(side: str) -> None:
    v = _trace_diff(side, side, 0.0)["verdict"]
    assert not v["fail"] and not v["regressions"] and not v["improvements"]


# ----------------------------------------------------------------------------- 2. timelines by what changed


def test_corpus_trace_pair_leads_with_the_idle_that_changed_and_says_throughput_is_unknown() -> None:
    doc = _trace_diff("before", "after", 5.0)
    top = [c["text"] for c in doc["timeline_changes"][:2]]
    assert top == ["GPU 0 idle by cause host (other gaps ≥ 10 µs): 22.1 ms → 53.0 ms (+140 %)",
                   "GPU 0 idle in gaps 10–100 µs: 6.40 ms → 29.3 ms (+358 %; 176 → 779 gaps)"]
    deltas = [abs(c["delta"] or 0.0) for c in doc["timeline_changes"]]
    assert deltas == sorted(deltas, reverse=True)
    v = doc["verdict"]
    assert v["reason"].startswith("Largest changes: " + "; ".join(top))
    assert "GPU 0: idle 26.0 ms → 59.1 ms (+127 %)" in v["reason"]
    assert v["throughput_by"] is None
    assert "no step markers (ProfilerStep#N) and hold different kernel launches, so throughput cannot be compared" \
        in v["reason"]
    row = next(r for r in doc["timeline_diff"] if r["device"] == "0")
    assert row["gap_count"]["10_to_100us"]["baseline"] == 176 and row["gap_count"]["10_to_100us"]["candidate"] == 779
    causes = row["idle_by_cause_s"]
    assert sum(c["candidate"] for c in causes.values()) == pytest.approx(row["idle_s"]["candidate"], abs=1e-6)
    kinds = {c["what"] for c in doc["timeline_changes"]}
    assert {"idle-gaps", "idle-cause", "host-activity", "kernel"} <= kinds


def _kineto(path: Path, step_us: list[int]) -> Path:
    """One kernel per ProfilerStep; the step's wall time as given."""
    import json

    ev, t = [], 0
    for i, dur in enumerate(step_us):
        ev.append({"ph": "X", "cat": "user_annotation", "name": f"ProfilerStep#{i}", "pid": 1, "tid": 1,
                   "ts": t, "dur": dur})
        ev.append({"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": t + 1,
                   "dur": 2, "args": {"correlation": i + 1}})
        ev.append({"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": t + 5, "dur": 50,
                   "args": {"device": 0, "stream": 7, "correlation": i + 1}})
        t += dur
    path.write_text(json.dumps({"traceEvents": ev}))
    return path


def test_step_time_is_compared_and_gated_when_steps_exist(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    base = _kineto(tmp_path / "b.json", [int(1000 * rng.uniform(0.99, 1.01)) for _ in range(30)])
    slow = _kineto(tmp_path / "c.json", [int(1300 * rng.uniform(0.99, 1.01)) for _ in range(30)])
    doc = run_diff(str(base), str(slow), fail_on=5.0, device=None, command="test")
    v = doc["verdict"]
    assert v["throughput_by"] == "step" and v["fail"]
    (reg,) = v["regressions"]
    assert reg["kind"] == "step" and reg["series"] == "GPU 0: step time (ProfilerStep#N)"
    assert reg["decided_by"] == "effect+significance" and 0.25 < reg["change"] < 0.35
    assert not run_diff(str(base), str(base), fail_on=0.0, device=None, command="test")["verdict"]["fail"]


# ----------------------------------------------------------------------------- 3. rows name kernel and device


def test_corpus_trace_rows_name_their_kernel_and_device() -> None:
    doc = _trace_diff("before", "after", None)
    rows = doc["timeline_series"] + doc["verdict"]["improvements"] + doc["verdict"]["regressions"]
    assert rows
    for r in rows:
        assert r["device"] in ("0", "1") and r["family"] and r["grid"] and r["block"]
        assert r["series"].startswith(f"GPU {r['device']}: ")
    t = doc["totals"]
    assert t["baseline"]["duration_s"] == pytest.approx(0.270875926 + 0.264324724)
    assert t["matched"]["launches"] > 0 and t["matched"]["families"] == 96
    assert t["matched"]["change"] == pytest.approx(t["matched"]["candidate_s"] / t["matched"]["baseline_s"] - 1)


# ----------------------------------------------------------------------------- 4. matched, but nothing measured


def test_corpus_self_diff_without_durations_says_launches_matched_but_no_metric_on_both() -> None:
    """The heat-equation export has FLOPs and bytes for 141 launches but no durations."""
    path = corpus_dir("ncu") / HEAT
    v = run_diff(str(path), str(path), fail_on=0.0, device=None, command="test")["verdict"]
    assert not v["fail"]
    assert "no kernel launch matched" not in v["reason"]
    assert v["reason"].startswith("nothing to gate: 141 kernel launch(es) matched, but no duration is on both sides "
                                  "(baseline: FLOPs, bytes; candidate: FLOPs, bytes)")
    assert v["summary"] == "matched launches have no duration on both sides: no verdict"


def test_durations_on_one_side_flops_on_the_other() -> None:
    b = frame([{**kernel("k", 1e-3), "duration_s": None} for _ in range(3)])
    c = frame([{**kernel("k", 1e-3), "flops": None, "bytes_l1": None, "bytes_l2": None, "bytes_dram": None}
               for _ in range(3)])
    v = compare(b, c, fail_on=5).verdict
    assert "3 kernel launch(es) matched, but no duration is on both sides (baseline: FLOPs, bytes; " \
           "candidate: duration)" in v["reason"]


# ----------------------------------------------------------------------------- 5. readable reasons


def test_long_template_names_are_shortened_with_their_grid_and_p_has_two_digits() -> None:
    name = "cutlass::Kernel2<" + ", ".join(f"cutlass::gemm::GemmShape<{i}, 128, 32>" for i in range(300)) + ">"
    b = pd.concat([quiet_run(1, families=1), frame([kernel(name, 1e-3, grid=77) for _ in range(20)])])
    c = pd.concat([quiet_run(2, families=1), frame([kernel(name, 1.3e-3 * (1 + i / 1e4), grid=77)
                                                     for i in range(20)])])
    v = compare(b, c, fail_on=5).verdict
    assert v["fail"] and len(name) > 10_000
    assert len(v["reason"]) < 600, v["reason"]
    assert "cutlass::Kernel2<cutlass::gemm::GemmShape<0, 128, 32>" in v["reason"] and "(grid 77, block 256)" \
        in v["reason"]
    p = re.search(r"p=([0-9.e+-]+) Holm", v["reason"])
    assert p and len(p.group(1).replace(".", "").split("e")[0]) <= 2
    assert v["regressions"][0]["family"] == name  # the record keeps the whole name


def test_cli_min_effect_option(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from rooftop.cli.commands import main

    b, c = str(FIXTURES / "diff" / "baseline.raw.csv"), str(FIXTURES / "diff" / "candidate.raw.csv")  # +30 %
    out = tmp_path / "d.json"
    ok = CliRunner().invoke(main, ["diff", b, c, "--fail-on", "0", "--min-effect", "40", "--gate", "matched",
                                   "-q", "--json", str(out), "--html", str(tmp_path / "d.html")])
    assert ok.exit_code == 0, ok.output
    assert '"min_effect_pct": 40.0' in out.read_text()
    bad = CliRunner().invoke(main, ["diff", b, c, "--min-effect", "-1", "-q", "--json", str(out), "--html",
                                    str(tmp_path / "d.html")])
    assert bad.exit_code == 2 and "--min-effect" in bad.output
