"""Roofline chart text never overlaps or runs off the chart (reports/svg_roofline.py).

The corpus ESMM profile (4 GEMM variants at 16-36 FLOP/B, 5-10 TFLOP/s on an A10G) drew three family
names over one another, and the 'Tensor FP16/BF16 108 TFLOP/s (±1 %) · builtin' ceiling label was cut at
the chart's right edge."""

from __future__ import annotations

import re
from typing import Any, cast

from rooftop.analyzer.schema import FamilyRow, RooflineCeiling
from rooftop.reports import svg_roofline as rf

_TEXT = re.compile(r'<text x="([\d.]+)" y="([\d.]+)"( text-anchor="end")? class="fl point-label" [^>]*>([^<]*)</text>')


def _boxes(svg: str) -> list[tuple[float, float, float, float]]:
    out = []
    for x, y, end, text in _TEXT.findall(svg):
        w = rf.FL_CHAR_PX * len(text)
        x0 = float(x) - w if end else float(x)
        out.append((x0, float(y) - 11, x0 + w, float(y) + 3))
    return out


def test_family_labels_near_one_another_do_not_overlap() -> None:
    ax = rf._Axes((-2, 3), (11, 15))
    names = ["one_blocktiling<(int)64, (int)64, (int)8, (int)8>", "two_blocktiling<(int)128, (int)128>",
             "vectorized_blocktiling<(int)128, (int)128>", "warptiling<(int)128, (int)128, (int)16>"]
    fams = cast(list[FamilyRow], [{"family": n} for n in names])
    # the ESMM L1 points: 15.8, 31.8, 31.3, 32 FLOP/B at 4.98, 7.24, 8.24, 9.65 TFLOP/s
    pts = [(0, "l1", 15.8, 4.98e12), (1, "l1", 31.8, 7.24e12), (2, "l1", 31.3, 8.24e12), (3, "l1", 32.0, 9.65e12)]
    svg = "".join(rf._point_labels_svg(ax, pts, [0, 1, 2, 3], fams))
    boxes = _boxes(svg)
    assert len(boxes) == 4  # every labelled family is numbered on the chart
    for i, a in enumerate(boxes):
        assert a[0] >= rf.ML and a[2] <= rf.ML + ax.pw  # inside the plot
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]), (a, b)
    # the largest family keeps its name; a crowded one may keep only its number (the key names it)
    assert "1 one_blocktiling" in svg


def _ceiling(name: str, value: float, source: str) -> RooflineCeiling:
    return cast(RooflineCeiling, {"key": "tensor", "name": name, "kind": "compute", "precision": "tensor",
                                  "level": None, "value": value, "min": value * 0.99, "max": value * 1.01,
                                  "unit": "FLOP/s", "source": source, "entry": "x", "provenance": None,
                                  "kernels": 1, "binding_kernels": 0})


def test_a_long_ceiling_label_wraps_inside_the_chart() -> None:
    ax = rf._Axes((-2, 3), (11, 15))
    long = _ceiling("Tensor FP16/BF16", 108e12, "builtin")
    short: dict[str, Any] = {**_ceiling("FP32", 26.9e12, "export"), "key": "fp32"}
    svg = "".join(rf._ceilings_svg(ax, [long, cast(RooflineCeiling, short)]))
    tensor = svg.split('data-key="tensor"', 1)[1].split("</g>", 1)[0]
    head, tail = re.search(r'class="cl">([^<]*)<tspan[^>]*>([^<]*)</tspan>', tensor).groups()  # type: ignore[union-attr]
    assert (head, tail) == ("Tensor FP16/BF16 108 TFLOP/s", "(±1 %) · builtin")
    x = float(re.search(r'<text x="([\d.]+)"', tensor).group(1))  # type: ignore[union-attr]
    assert x + rf.CL_CHAR_PX * max(len(head), len(tail)) <= rf.W
    fp32 = svg.split('data-key="fp32"', 1)[1].split("</g>", 1)[0]
    assert "<tspan" not in fp32 and "FP32 26.9 TFLOP/s (±1 %) · export" in fp32
