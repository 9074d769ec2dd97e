"""Issue 14 on real ncu exports: verdicts an expert would sign (docs/formulas.md#kernel-labels,
#findings, #families). Each test names its corpus file and asserts the corrected behaviour and
what the evidence text claims."""

from __future__ import annotations

from functools import cache
from typing import Any

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
