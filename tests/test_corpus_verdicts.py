"""Issue 14 on real ncu exports: verdicts an expert would sign (docs/formulas.md#kernel-labels,
#findings, #families). Each test names its corpus file and asserts the corrected behaviour and
what the evidence text claims."""

from __future__ import annotations

from functools import cache
from typing import Any

import pytest

import rooftop
from tests.conftest import corpus_dir


@cache
def _doc(name: str, device: str | None = None) -> dict[str, Any]:
    path = corpus_dir("ncu") / name
    return rooftop.analyze([str(path)], device=device, top=50)


def test_families_keep_cutlass_instantiations_apart_wangzy() -> None:
    doc = _doc("wangzy0327__cuda-roofline__src__output.csv", "Tesla V100-PCIE")
    ks = doc["kernels"]
    [tensorop] = [k for k in ks if "cutlass_70_tensorop" in k["name"]]
    assert tensorop["achieved_flops_s"] > 90e12
    mates = [k for k in ks if k["family"] == tensorop["family"]]
    assert mates == [tensorop]  # the 94.7 TFLOP/s launch is a family of its own
    assert "cutlass_70_tensorop_s884gemm_f16_128x128_nn_align8" in tensorop["family"]
    # it is not hidden: it has its own finding, whose kernels are exactly that launch
    pos = ks.index(tensorop)
    assert any(f.get("kernels") == [pos] for f in doc["findings"])
    # every family is homogeneous in label and limiter
    by_family: dict[str, set[tuple[str, str]]] = {}
    for k in ks:
        by_family.setdefault(k["family"], set()).add((k["label"], k["limiter"]))
    assert all(len(v) == 1 for v in by_family.values())


def test_no_sol_low_utilisation_is_not_compute_bound_averyclapp() -> None:
    # item 1: naive SGEMM at 0.6 % of FP32 and 0.5 % of DRAM, no SOL %, no L1/L2 bytes
    doc = _doc("AveryClapp__ESMM-Research__metrics.csv", "NVIDIA A10G")
    k = doc["kernels"][0]
    assert k["name"].startswith("basic(")
    assert (k["label"], k["limiter"]) == ("unknown", "unknown")
    ev = " | ".join(k["evidence"])
    assert "no side reaches 60 %" in ev and "L1 (no bytes in the export), L2 (no bytes in the export)" in ev
    assert "docs/formulas.md#kernel-labels" in ev
    [f] = [f for f in doc["findings"] if f.get("kernels") == [0]]
    assert f["severity"] != "high" and "compute-bound" not in f["title"]
    # every launch's label in this file comes from a named rule, never from "the larger side wins"
    for k in doc["kernels"]:
        assert k["label"] != "compute-bound" or any("60 %" in e for e in k["evidence"])


def test_latency_issue_without_ncu_tail_rule_is_latency_liqiangxl() -> None:
    # item 2: NCU says Latency Issue and raised Tail Effect only where the last wave is mostly empty
    doc = _doc("liqiangxl__playground__ncu.log")
    by_tail_rule = {True: set(), False: set()}
    for k in doc["kernels"]:
        if k["extra"].get("sol_verdict") != "Latency Issue":
            continue
        raised = any("A wave of thread blocks" in r["title"] for r in k["ncu_rules"])
        by_tail_rule[raised].add(k["limiter"])
        ev = " | ".join(k["evidence"])
        if raised:
            assert "NCU raised Tail Effect" in ev
        else:
            assert "NCU raised no Tail Effect" in ev
    assert by_tail_rule[True] == {"tail"}
    assert by_tail_rule[False] == {"latency"}  # 3.16 waves, no NCU tail rule: not tail


def test_small_grid_only_when_sms_idle_meinie() -> None:
    # item 3: 1024 blocks on 148 SMs at 0.77 waves, no throughput metrics: not small grid
    doc = _doc("meinie0826__Roofline-Analysis__decodebench__results__ncu__flashinfer_paged_decode__gqa_bf16_b128_ctx2k_p64"
               ".ncu.csv")
    ks = doc["kernels"]
    assert len(ks) == 64
    assert all(k["limiter"] != "small-grid" for k in ks)
    assert all(k["label"] == "unknown" for k in ks)
    assert all(not any("SMs sit idle" in e or "get no block" in e for e in k["evidence"]) for k in ks)


def test_saving_capped_and_not_high_at_88_pct_of_roof_armleth() -> None:
    # item 4: a kernel at 88 % of DRAM: saving <= roofline gap, severity not high, local estimates not counted
    doc = _doc("armleth__cuda-mlp-inference__report.ncu-rep")
    k = doc["kernels"][0]
    assert k["extra"]["pct_of_roof"] >= 80
    gap = k["duration_s"] * (1 - k["achieved_flops_s"] / k["attainable_flops_s"])
    [f] = [f for f in doc["findings"] if 0 in f["kernels"]]
    assert f["est_saving_s"] <= gap * 1.0001
    assert f["est_saving_s"] < 0.5 * k["duration_s"]  # not "47.2 µs of 52.6 µs"
    assert f["severity"] != "high"
    ev = " | ".join(f["evidence"])
    assert "local estimates" in ev and "not whole-kernel savings" in ev
    assert "% of its roof" in ev and "docs/formulas.md#findings" in ev
    assert any(r["speedup_type"] == "local" for r in k["ncu_rules"])


def test_absent_flop_class_is_unknown_codegandee() -> None:
    # item 9: FP32/FP64/FP16 counters n/a, tensor 0: work is unknown, never "0 FLOP"
    doc = _doc("CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3"
               "__ncu.details.csv")
    k = doc["kernels"][0]
    assert k["flops"] is None and k["achieved_flops_s"] is None
    assert all(v is None for v in k["intensity"].values())
    ev = " | ".join(k["evidence"])
    assert "0 FLOP" not in ev and "FLOP counters" in ev


def test_failed_profile_is_lint_not_advice_fluuuegel() -> None:
    # item 10: ==ERROR== LaunchFailed and rule exceptions
    doc = _doc("Fluuuegel__DD2360-Project__ncu_report.txt")
    [item] = [x for x in doc["lint"] if x["code"] == "failed-profile"]
    assert item["kernels"] == [0] and "LaunchFailed" in item["message"]
    k = doc["kernels"][0]
    assert (k["label"], k["limiter"]) == ("unknown", "unknown")
    assert k["evidence"] and k["evidence"][0].startswith("Profile failed")
    titles = [r["title"] for r in k["ncu_rules"]]
    assert not any("returned an error" in t or "exception set" in t or ".py:" in t for t in titles)
    assert not [f for f in doc["findings"] if 0 in f["kernels"]]


def test_print_summary_rows_weighted_by_invocations_ishana() -> None:
    # item 12: rows stand for 4, 10 and 20 invocations
    doc = _doc("ishana23g__heat_eq__optimized_3d__profiler__ncu_summary_3D.txt")
    ks = doc["kernels"]
    inv = [k["extra"]["invocations"] for k in ks]
    assert sorted(inv) == [4, 10, 20]
    # the input accounting counts launches: 3 rows stand for 4 + 10 + 20 = 34
    [acc] = doc["inputs"]
    assert (acc["records"], acc["missing"], acc["rejected"]) == (34, 0, 0)
    total = sum(k["duration_s"] * k["extra"]["invocations"] for k in ks)
    for f in doc["findings"]:
        [p] = f["kernels"]
        k = ks[p]
        assert f["time_share"] == pytest.approx(k["duration_s"] * k["extra"]["invocations"] / total)
        assert f"in {k['extra']['invocations']} launch(es)" in f["title"]
