"""Per-kernel roofs resolved from the document: kind, class/level, value and provenance (docs/formulas.md#ceilings)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from rooftop.analyzer.ceilings.roofs import kernel_roofs
from rooftop.analyzer.document import kernel_records
from rooftop.analyzer.kernels.analyze import analyze_kernels


def test_roofs_carry_kind_level_and_true_source(tmp_path: Path) -> None:
    """A user file with a base: FP32 from the file (user), DRAM/L2/L1 from the base (builtin, A100 40GB)."""
    f = tmp_path / "mygpu.json"
    f.write_text(json.dumps({"name": "My A100", "base": "NVIDIA A100-SXM4-40GB", "peaks": {"fp32": 18e12}}))
    row = {"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3,
           "sm__sass_thread_inst_executed_op_ffma_pred_on.sum": 1e9, "dram__bytes.sum": 1e9}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame(), device=str(f))
    [doc] = kernel_records(ka.results)
    roofs = {(r["kind"], r.get("class") or r.get("level")): r for r in kernel_roofs(doc, ka.devices)}
    assert set(roofs) == {("compute", "fp32"), ("bandwidth", "dram"), ("bandwidth", "l2"), ("bandwidth", "l1")}
    assert (roofs["compute", "fp32"]["value"], roofs["compute", "fp32"]["source"]) == (18e12, "user")
    dram = roofs["bandwidth", "dram"]
    assert (dram["value"], dram["source"], dram["device"]) == (1555e9, "builtin", "NVIDIA A100-SXM4-40GB")
    assert "datasheet" in dram["detail"]


def test_roofs_of_an_export_kernel_follow_its_flop_classes() -> None:
    row = {"input": "a.csv", "index": 0, "name": "k", "duration_s": 1e-3, "cc": "9.0",
           "sm__cycles_elapsed.avg.per_second": 1.5e9, "dram__cycles_elapsed.avg.per_second": 2.6e9,
           "sm__sass_thread_inst_executed_op_dfma_pred_on.sum": 1e6,
           "sm__sass_thread_inst_executed_op_dfma_pred_on.sum.peak_sustained": 8448.0,
           "dram__bytes.sum": 1e6, "dram__bytes.sum.peak_sustained": 1280.0}
    ka = analyze_kernels(pd.DataFrame([row]), pd.DataFrame())
    [doc] = kernel_records(ka.results)
    roofs = kernel_roofs(doc, ka.devices)
    fp64 = [r for r in roofs if r.get("class") == "fp64"]
    assert len(fp64) == 1 and fp64[0]["value"] == pytest.approx(8448 * 2 * 1.5e9) and fp64[0]["source"] == "export"
    assert not [r for r in roofs if r.get("class") == "fp32"]  # no FP32 work: no FP32 roof drawn for it
    dram = [r for r in roofs if r.get("level") == "dram"]
    assert dram[0]["value"] == pytest.approx(1280 * 2.6e9) and dram[0]["source"] == "export"
