"""Issue 24 defect 7: labels the values contradict (docs/formulas.md#windows). A window with the
busiest pipe and DRAM both near peak is balanced (label ``mixed``), never ``memory-bound``; GR low
while NVML GPU_UTIL is high is named as conflicting signals (``unknown``), not "host-side wait".
Generated case: fixtures/make_dcgm.py ``prom_balanced_mig``; corpus: the ericsson-ccd exporter scrape."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from fixtures.make_dcgm import prom_balanced_mig, prom_vgpu
from rooftop.cli.commands import main
from tests.conftest import corpus_dir

ERICSSON = "cncf__k8s-ai-conformance__v1.35__ericsson-ccd__accelerator_metrics.md.metrics.prom"


def _analyze(src: Path, tmp: Path) -> dict[str, Any]:
    out = tmp / "a.json"
    res: Result = CliRunner().invoke(main, ["analyze", str(src), "--json", str(out), "--no-html", "-q"])
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def test_tensor_and_dram_both_near_peak_is_balanced_not_memory_bound(tmp_path: Path) -> None:
    src = tmp_path / "mig.prom"
    src.write_text(prom_balanced_mig())
    doc = _analyze(src, tmp_path)
    by_host = {w["host"]: w for w in doc["windows"]}
    mig = by_host["n1"]
    assert (mig["label"], mig["limiter"]) == ("mixed", "dram")  # the busier normalised side: 0.80 / 0.8 > 0.93
    assert any(e.startswith("balanced: tensor pipe 0.93 and DRAM 100% of its practical peak") for e in mig["evidence"])
    h100 = by_host["n2"]
    assert (h100["label"], h100["limiter"]) == ("compute-bound", "tensor")


def test_conflicting_busy_signals_are_named_not_explained(tmp_path: Path) -> None:
    src = corpus_dir("dcgm") / ERICSSON
    doc = _analyze(src, tmp_path)
    [w] = doc["windows"]
    assert (w["label"], w["limiter"]) == ("unknown", "unknown")
    assert not any("host-side wait" in e for e in w["evidence"])
    assert any(e.startswith("conflicting signals: GR active 0.16 (engine mostly idle) but NVML GPU_UTIL 0.91 "
                            "and memory copy util 0.73") for e in w["evidence"])


def test_a_vgpu_profile_matched_to_one_board_is_linted_device_assumed(tmp_path: Path) -> None:
    src = tmp_path / "vgpu.prom"
    src.write_text(prom_vgpu("GRID A100-40C"))
    doc = _analyze(src, tmp_path)
    [lint] = [x for x in doc["lint"] if x["code"] == "device-assumed"]
    assert "'GRID A100-40C'" in lint["message"] and "NVIDIA A100-SXM4-40GB" in lint["message"]
    exact = tmp_path / "exact.prom"
    exact.write_text(prom_vgpu("NVIDIA A100-SXM4-40GB"))
    assert "device-assumed" not in {x["code"] for x in _analyze(exact, tmp_path)["lint"]}
    ds = tmp_path / "ds"
    res = CliRunner().invoke(main, ["ingest", str(src), "--to", str(ds), "-q"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "--no-html"])
    assert res.exit_code == 0, res.output
    assert "device-assumed" in {x["code"] for x in json.loads(out.read_text())["lint"]}
