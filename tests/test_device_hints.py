"""The device from the export's own hints (issue 14 item 6), legacy DRAM peak (item 11), ceiling labels.

Rules: docs/formulas.md#ceilings. Corpus files by name; hand-computed cases beside them.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from rooftop.analyzer.ceilings.device_match import common_spec, match_device, match_name
from rooftop.analyzer.ceilings.devices import lookup
from rooftop.analyzer.kernels.analyze import analyze_kernels
from rooftop.analyzer.pipeline import analyze_inputs
from rooftop.parsers.ncu.hints import parse_line
from tests.conftest import corpus_dir


def _file(prefix: str) -> str:
    [p] = [p for p in corpus_dir("ncu").iterdir() if p.name.startswith(prefix)]
    return str(p)


def _lint(lint: list[dict[str, Any]], code: str) -> list[dict[str, Any]]:
    return [item for item in lint if item["code"] == code]


# -- hand cases --------------------------------------------------------------------------------

def test_application_lines_that_name_a_gpu() -> None:
    h = parse_line("Detected GPU: Tesla V100-PCIE-32GB (SM 7.0)")
    assert h is not None and (h["name"], h["cc"], h["sm_count"]) == ("Tesla V100-PCIE-32GB", "7.0", None)
    h = parse_line("device: NVIDIA GeForce RTX 5070 (sm_120), 48 SMs, 2.625 GHz")
    assert h is not None and (h["name"], h["cc"], h["sm_count"]) == ("NVIDIA GeForce RTX 5070", "12.0", 48)
    h = parse_line("GPU 0: NVIDIA A100-SXM4-80GB (UUID: GPU-123)")
    assert h is not None and h["name"] == "NVIDIA A100-SXM4-80GB"
    # not GPU names: a device string, a result line, a CSV row
    assert parse_line("Using device: cuda") is None
    assert parse_line("Mismatch at position 0: GPU = 55.022079, CPU = -257.470520") is None
    assert parse_line('"1","123","app","host","k","(1, 1, 1)","(1, 1, 1)","0","8.6"') is None


def test_exact_nearest_and_vgpu_names() -> None:
    spec, exact = match_name("Tesla V100-SXM2-16GB")  # memory size aside, the entry's own name
    assert spec is not None and spec.name == "Tesla V100-SXM2" and exact
    spec, exact = match_name("NVIDIA H100 80GB HBM3")  # nvidia-smi's H100 SXM name: an alias
    assert spec is not None and spec.name == "NVIDIA H100 SXM5 80GB" and exact
    spec, exact = match_name("Tesla V100S-PCIE-32GB")  # now its own entry, not the V100 PCIe
    assert spec is not None and spec.name == "Tesla V100S-PCIE" and exact
    spec, exact = match_name("NVIDIA GH200 120GB")  # nearest: the 480GB entry, stated
    assert spec is not None and spec.name == "NVIDIA GH200 480GB" and not exact
    spec, exact = match_name("NVIDIA A10-24Q")  # a vGPU profile of the A10
    assert spec is not None and spec.name == "NVIDIA A10" and not exact
    m = match_device("NVIDIA A10-24Q", "device name in the export", "8.6", None)
    assert m.how == "nearest-name"


def test_cc_and_sm_count() -> None:
    # a name the table lacks is no table device, even with another GPU's CC and SM count (A10G: 8.6, 80)
    m = match_device("NVIDIA GeForce RTX 3080 Ti", "device name in the export", "8.6", 80)
    assert m.how == "none" and m.spec is None
    assert match_device(None, "", "8.6", 80).spec is not None  # unnamed: the A10G, stated as assumed
    m = match_device(None, "", "8.9", 34)  # the only CC 8.9 device with 34 SMs in the table
    assert m.how == "cc+sms" and m.spec is not None and m.spec.name == "NVIDIA GeForce RTX 4060 Ti"
    # three CC 9.0 / 132-SM devices: only what they share (same FP32 peak and boost clock, not DRAM)
    m = match_device(None, "", "9.0", 132)
    assert m.how == "common" and m.spec is not None
    assert m.spec.peaks["fp32"] == pytest.approx(67e12) and "dram" not in m.spec.bandwidth
    assert set(m.candidates) == {"NVIDIA H100 SXM5 80GB", "NVIDIA H200", "NVIDIA GH200 480GB"}
    # V100 SXM2 and PCIe: different boost clocks and peaks, so nothing compute-side is shared
    v = [s for s in (lookup("Tesla V100-SXM2"), lookup("Tesla V100-PCIE")) if s is not None]
    common = common_spec(v, "CC 7.0")
    assert common is not None and "fp32" not in common.peaks and common.bandwidth["dram"] == 900e9


def test_user_file_fallbacks_keep_their_true_source(tmp_path: Path) -> None:
    f = tmp_path / "mygpu.json"
    f.write_text(json.dumps({"name": "My A100", "base": "NVIDIA A100-SXM4-40GB", "peaks": {"fp32": 18e12}}))
    row = {"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3,
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9, "dram__bytes.sum": 1e9}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame(), device=str(f))
    assert ka.ceilings is not None
    c = ka.ceilings.iloc[0]
    assert (c["peak_fp32"], c["src_peak_fp32"]) == (18e12, "user")
    assert (c["bw_dram"], c["src_bw_dram"]) == (1555e9, "builtin")  # from the base, labelled builtin
    assert "NVIDIA A100-SXM4-40GB|builtin" in ka.results["ceilings"].iloc[0]
    names = {(d["name"], d["source"]) for d in ka.devices}
    assert {("My A100", "user"), ("NVIDIA A100-SXM4-40GB", "builtin")} <= names


def test_device_option_contradicting_the_export_warns() -> None:
    row = {"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3, "cc": "8.6",
           "device__attribute_multiprocessor_count": 80.0}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame(), device="NVIDIA H100 SXM5 80GB")
    [item] = _lint(ka.lint, "device-contradiction")
    assert "CC 8.6 in the export, 9.0" in item["message"] and "80 SMs in the export, 132" in item["message"]
    assert any("contradicts the export" in e for e in ka.results["evidence"].iloc[0])


# -- corpus ------------------------------------------------------------------------------------

@pytest.mark.corpus
def test_detected_gpu_line_names_the_v100_pcie() -> None:
    ai = analyze_inputs([_file("wangzy0327__cuda-roofline__src__output.csv")])
    assert set(ai.results["device"]) == {"Tesla V100-PCIE"}
    [item] = _lint(ai.lint, "device-assumed")
    assert 'Detected GPU: Tesla V100-PCIE-32GB (SM 7.0)' in item["message"]
    assert any("taken from application line" in e for e in ai.results["evidence"].iloc[0])
    assert ai.results["ceilings"].str.contains("Tesla V100-PCIE|builtin", regex=False).all()


@pytest.mark.corpus
def test_device_option_contradicting_wangzy_warns() -> None:
    ai = analyze_inputs([_file("wangzy0327__cuda-roofline__src__output.csv")], device="NVIDIA A10G")
    [item] = _lint(ai.lint, "device-contradiction")
    assert "CC 7.0 in the export, 8.6 for NVIDIA A10G" in item["message"]


@pytest.mark.corpus
def test_rtx5070_from_the_application_line() -> None:
    ai = analyze_inputs([_file("Olajide-Badejo__GPU-Roofline-Profiler__results__sample_run__ncu__gemm_naive.csv")])
    assert set(ai.results["device"]) == {"NVIDIA GeForce RTX 5070"}
    assert ai.results["ceilings"].str.startswith("NVIDIA GeForce RTX 5070|builtin").all()


@pytest.mark.corpus
def test_cc_and_sm_count_from_a_console_summary() -> None:
    ai = analyze_inputs([_file("ishana23g__heat_eq__optimized_3d__profiler__ncu_summary_3D.txt")])
    assert set(ai.results["device"]) == {"NVIDIA GeForce RTX 4060 Ti"}
    [item] = _lint(ai.lint, "device-assumed")
    assert "CC 8.9 and 34 SMs" in item["message"] and "pass --device NAME" in item["message"]


@pytest.mark.corpus
def test_ambiguous_hopper_uses_only_shared_ceilings() -> None:
    ai = analyze_inputs([_file("AlpriElse__cs599k__silu__triton__silu-pytorch-ncu-report.txt")])
    [item] = _lint(ai.lint, "device-ambiguous")
    assert "CC 9.0 and 132 SMs fits 3 devices" in item["message"] and "`--device NAME`" in item["message"]
    assert ai.results["ceilings"].str.contains("dram=none").all()


@pytest.mark.corpus
def test_cc_alone_places_points_without_ceilings() -> None:
    ai = analyze_inputs([_file("AveryClapp__ESMM-Research__metrics.csv")])
    [item] = _lint(ai.lint, "device-ambiguous")
    assert "CC 8.6 fits" in item["message"] and "NVIDIA A10G" in item["message"]
    r = ai.results
    assert r["intensity_dram"].notna().all() and r["achieved_flops_s"].notna().all()  # the points


@pytest.mark.corpus
def test_legacy_dram_peak_matches_ncu_sol() -> None:
    """GTX 1080, ncu 2019: fbpa__sol_pct 61.15 % = (820,928 + 331,264 B) / 7.52 µs / (256 bit / 8 x 7.83 GHz)."""
    ai = analyze_inputs([_file("romnn__microgpusim__profile__tests__nsight_vectoradd_102400_32_metrics_report")])
    r = ai.results.iloc[0]
    assert 100 * r["bw_util_dram"] == pytest.approx(61.15, abs=0.05)
    [exp] = [d for d in ai.devices if d["source"] == "export"]
    assert math.isclose(exp["ceilings"]["dram"], 32 * 7829787234.04, rel_tol=1e-6)
    assert any("61.2% of 251 GB/s (export)" in e for e in r["evidence"])


@pytest.mark.corpus
def test_summary_device_group_header_gives_the_cc() -> None:
    """--print-summary per-kernel: '  Device 0, CC 8.6' heads the rows that follow it (C4)."""
    from rooftop.parsers import parse_path

    k = parse_path(_file("AveryClapp__ESMM-Research__profiles__summary1024.txt")).kernels
    assert k["cc"].tolist() == ["8.6"] * 3 and k["device_index"].tolist() == [0, 0, 0]
    ai = analyze_inputs([_file("AveryClapp__ESMM-Research__profiles__summary1024.txt")])
    [item] = _lint(ai.lint, "device-ambiguous")
    assert "CC 8.6 fits" in item["message"]


def test_nearest_name_is_stated_in_lint_and_evidence() -> None:
    row = {"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3, "device": "NVIDIA GH200 120GB",
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9, "dram__bytes.sum": 1e9}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame())
    [item] = _lint(ka.lint, "device-assumed")
    assert 'Device "NVIDIA GH200 120GB" is not in rooftop\'s table by its exact name' in item["message"]
    assert "nearest name NVIDIA GH200 480GB" in item["message"]
    assert any("nearest name NVIDIA GH200 480GB" in e for e in ka.results["evidence"].iloc[0])
    # an exact name is not linted
    ka = analyze_kernels(pd.DataFrame([{**row, "device": "NVIDIA GH200 480GB"}]), pd.DataFrame())
    assert not _lint(ka.lint, "device-assumed")
