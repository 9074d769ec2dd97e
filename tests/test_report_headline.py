"""Report headlines that follow the data (issue 29 item 6, docs/formulas.md#families): a
``--print-summary`` row stands for its invocations in the launch count, the GPU time and the label
shares, as it does in the findings; no duration is "unknown", never 0; the Markdown top kernels
name each row's grid and block."""

from __future__ import annotations

from typing import Any

import pytest

from rooftop.analyzer.pipeline import run_analysis
from rooftop.reports.analyze_sections import summary_section, top_kernels_md_section
from rooftop.reports.formatting import kernel_headline, kernel_label_shares
from rooftop.reports.terminal import summary_text
from tests.conftest import corpus_dir

SUMMARY_3D = "ishana23g__heat_eq__optimized_3d__profiler__ncu_summary_3D.txt"
RATES_ONLY = ("CodeGandee__llm-perf-opt__reports__20251107-dsocr__ncu-v2__kernel_0001_67bdb7e29d1bb4e0ca0aec954ef18af3"
              "__ncu.section_SpeedOfLight_RooflineChart.csv")


def _k(name: str, d: float | None, label: str, inv: int = 1, grid: int = 8, block: int = 256) -> dict[str, Any]:
    return {"name": name, "label": label, "limiter": "dram", "duration_s": d, "grid": grid, "block": block,
            "family": name, "achieved_flops_s": None, "intensity": {"l1": None, "l2": None, "dram": None},
            "extra": {"invocations": inv}}


def test_summary_rows_count_their_invocations() -> None:
    """Hand-computed: 10 µs x 100 launches (memory) + 1 ms x 1 (compute) = 2 ms, memory 50 %."""
    ks: Any = [_k("a", 10e-6, "memory-bound", inv=100), _k("b", 1e-3, "compute-bound")]
    shares, total = kernel_label_shares(ks)
    assert total == pytest.approx(2e-3) and shares["memory-bound"] == pytest.approx(0.5)
    assert kernel_headline(ks) == "101 launches (2 summary rows), 2 ms GPU time"
    assert kernel_headline([_k("c", None, "unknown")]) == "1 launch, GPU time unknown (no duration in the export)"


def test_print_summary_headline_on_the_corpus() -> None:
    """ncu_summary_3D.txt: 3 summary rows standing for 4 + 10 + 20 launches; the findings already
    weight them (68.1 % + 31.9 %), the headline said "3 launches, 6.27 ms"."""
    doc = run_analysis([str(corpus_dir("ncu") / SUMMARY_3D)])
    text = summary_text(doc)
    assert "kernels: 34 launches (3 summary rows), 95.1 ms GPU time" in text
    html = summary_section(doc).html_body
    assert ">34<" in html
    md = top_kernels_md_section(doc)
    assert md is not None
    assert "| 3969 × 256 |" in md.body and "68.1%" in md.body  # 20 x 3.24 ms of 95.1 ms


def test_no_duration_is_unknown_on_the_corpus() -> None:
    doc = run_analysis([str(corpus_dir("ncu") / RATES_ONLY)])
    text = summary_text(doc)
    assert "GPU time unknown" in text and "0 µs" not in text
    assert "[low] unknown (unknown) · duration unknown" in text
    html = summary_section(doc).html_body
    assert "unknown" in html and "Share of kernel time by label" not in html
