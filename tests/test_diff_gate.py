"""diff says only what both inputs carry, and gates total GPU time (docs/formulas.md#diff)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.analyzer.diff.compare import compare
from rooftop.cli.commands import main
from rooftop.errors import InputError
from tests.conftest import corpus_dir
from tests.test_diff import frame, kernel

AVERY = ("AveryClapp__ESMM-Research__profile_output.ncu-rep", "AveryClapp__ESMM-Research__metrics.csv")
MEINIE = ("meinie0826__Roofline-Analysis__decodebench__results__ncu__flashinfer_paged_decode__gqa_bf16_b128_ctx2k"
          "_p64.ncu.csv",
          "meinie0826__Roofline-Analysis__decodebench__results__ncu__flashinfer_paged_decode__gqa_bf16_b1_ctx32k"
          "_p64.ncu.csv")


def _bare(family: str, duration: float, **kw: object) -> dict[str, object]:
    """A launch with no FLOP or byte metrics (a plain duration export)."""
    k = kernel(family, duration, **kw)  # type: ignore[arg-type]
    for c in ("flops", "bytes_l1", "bytes_l2", "bytes_dram", "intensity_l1", "intensity_l2",
              "intensity_dram", "achieved_flops_s"):
        k[c] = None
    return k


# ------------------------------------------------------------------------------- the total gate
def test_new_kernels_trip_the_total_gate_and_are_named() -> None:
    # matched gemm unchanged (1 ms); the candidate adds "extra" 3 ms: total 1 -> 4 ms = +300 %
    b = frame([kernel("gemm", 1e-3)])
    c = frame([kernel("gemm", 1e-3), kernel("extra", 3e-3)])
    r = compare(b, c, fail_on=5)
    v = r.verdict
    assert v["fail"] and v["gate"] == "total"
    assert v["summary"] == "FAIL: total kernel time +300 % beyond 5 %"
    assert "new kernels: extra 3 ms" in v["reason"] and "a sum, not a test" in v["reason"]
    matched = compare(b, c, fail_on=5, gate="matched").verdict
    assert not matched["fail"] and "matched kernels only" in matched["reason"]


def test_total_within_threshold_passes_and_says_the_total() -> None:
    b = frame([kernel("gemm", 1e-3), kernel("old", 1e-4)])
    c = frame([kernel("gemm", 1e-3), kernel("new", 1.4e-4)])  # total 1.1 -> 1.14 ms = +3.6 %
    v = compare(b, c, fail_on=5).verdict
    assert not v["fail"] and "Total kernel time +3.6 %" in v["reason"]


def test_vanished_kernels_lower_the_total_and_never_fail() -> None:
    b = frame([kernel("gemm", 1e-3), kernel("gone", 5e-3)])
    c = frame([kernel("gemm", 1e-3)])
    assert not compare(b, c, fail_on=5).verdict["fail"]


def test_unknown_gate_is_an_input_error() -> None:
    b = frame([kernel("gemm", 1e-3)])
    with pytest.raises(InputError):
        compare(b, b.copy(), fail_on=5, gate="everything")


# ------------------------------------------------------------------- explanations and test line
def test_no_flops_or_bytes_on_either_side_never_says_same_work() -> None:
    b = frame([_bare("k", 1e-3)])
    c = frame([_bare("k", 2e-3)])
    line = compare(b, c, fail_on=None).pairs["explanation"].iat[0]
    assert "same FLOPs" not in line and "same bytes" not in line
    assert line.startswith("duration +100 %: neither FLOPs nor bytes are in both inputs")


def test_flops_on_one_side_only_is_not_a_shared_fact() -> None:
    b = frame([kernel("k", 1e-3)])
    c = frame([_bare("k", 2e-3)])
    line = compare(b, c, fail_on=None).pairs["explanation"].iat[0]
    assert "neither FLOPs nor bytes are in both inputs" in line


def test_same_flops_and_bytes_when_both_carry_them() -> None:
    line = compare(frame([kernel("k", 1e-3)]), frame([kernel("k", 2e-3)]), fail_on=None).pairs["explanation"].iat[0]
    assert "same FLOPs and bytes, so slower per unit of work" in line


def test_device_lost_between_formats_is_said_not_a_behaviour_change() -> None:
    b = frame([kernel("k", 1e-3, label="memory-bound", limiter="dram")])
    cand = kernel("k", 1e-3, label="unknown", limiter="unknown")
    cand["device"] = None
    line = compare(b, frame([cand]), fail_on=None).pairs["explanation"].iat[0]
    assert "device known in the baseline (NVIDIA A100-SXM4-80GB) but not in the candidate" in line
    assert "now unknown" not in line and "was memory-bound" not in line


def test_test_line_matches_the_tests_run() -> None:
    one = compare(frame([kernel("k", 1e-3)]), frame([kernel("k", 1e-3)]), fail_on=5).verdict
    assert one["test"].startswith("none run")
    assert "all by threshold only" in one["reason"] and "Mann" not in one["reason"]
    many = compare(frame([kernel("k", 1e-3)] * 8), frame([kernel("k", 1e-3)] * 8), fail_on=5).verdict
    assert "on all 1 series" in many["test"]


# ----------------------------------------------------------------------------------- corpus
def _diff(tmp_path: Path, names: tuple[str, str], *args: str) -> tuple[int, dict[str, object]]:
    d = corpus_dir("ncu")
    paths = [d / n for n in names]
    if not all(p.exists() for p in paths):
        pytest.skip("corpus pair absent")
    out = tmp_path / "d.json"
    res = CliRunner().invoke(main, ["diff", *map(str, paths), "--json", str(out), "--html",
                                    str(tmp_path / "d.html"), "-q", *args])
    return res.exit_code, json.loads(out.read_text())


def test_avery_new_kernels_fail_the_gate(tmp_path: Path) -> None:
    rc, doc = _diff(tmp_path, AVERY, "--fail-on", "5")
    v = doc["verdict"]
    assert rc == 1 and v["fail"]  # type: ignore[index]
    assert "new kernels: basic" in v["reason"]  # type: ignore[index]
    rc, doc = _diff(tmp_path, AVERY, "--fail-on", "5", "--gate", "matched")
    assert rc == 0
    lines = {p["explanation"] for p in doc["pairs"]}  # type: ignore[attr-defined]
    assert all("not in the candidate: labels not comparable" in x for x in lines)


def test_meinie_explanations_name_only_shared_facts(tmp_path: Path) -> None:
    _rc, doc = _diff(tmp_path, MEINIE)
    lines = [p["explanation"] for p in doc["pairs"]]  # type: ignore[attr-defined]
    assert lines and not any("same FLOPs" in x for x in lines)
