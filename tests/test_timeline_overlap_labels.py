"""DCGM timeline drawing (issue 24, "Single-scrape pages": series that overlap exactly are still
distinguishable; row labels not cut at the start). reports/svg_charts: steps several series draw
alike are striped, each series its own dash offset, the legend says "overlaps"; row names get the
left margin they need (up to ML_MAX, then shortened in the middle with the full name as <title>)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.reports.svg_axes import TimeAxis
from rooftop.reports.svg_charts import ML, ML_MAX, Line, Span, span_rows, text_px, time_chart

T = np.arange(6, dtype=float) * 10.0
AX = TimeAxis(0.0, 60.0, epoch=False)


def _series(svg: str) -> list[str]:
    return re.findall(r'<g class="series">(.*?)<title>', svg)


def _overlap_styles(svg: str) -> list[tuple[str, str, str]]:
    """(colour, dash array, dash offset) of every striped stroke."""
    return re.findall(r'<path d="[^"]*" fill="none" stroke="([^"]+)" stroke-width="1.4" class="overlap" '
                      r'stroke-dasharray="([^"]+)" stroke-dashoffset="([^"]+)"/>', svg)


def test_identical_series_are_striped_each_in_turn() -> None:
    y = np.array([0.2, 0.4, 0.4, 0.9, 0.9, 0.1])
    lines = [Line("GPU 0", T, y, "#111111"), Line("GPU 1", T, y.copy(), "#222222"), Line("GPU 2", T, y.copy(), "#333333")]
    svg, _ = time_chart("SM active", lines, AX, unit="ratio", y_title="share", y_range=(0.0, 1.0))
    styles = _overlap_styles(svg)
    assert {c for c, _, _ in styles} == {"#111111", "#222222", "#333333"}  # old: GPU 2 hid GPU 0 and 1
    assert {d for _, d, _ in styles} == {"6 12"}  # each draws 6 px of every 18
    assert sorted({(c, o) for c, _, o in styles}) == [("#111111", "0"), ("#222222", "12"), ("#333333", "6")]
    assert "GPU 0 (overlaps GPU 1 +1)" in svg and "GPU 2 (overlaps GPU 0 +1)" in svg


def test_only_the_shared_steps_are_striped() -> None:
    a = np.array([0.5, 0.5, 0.5, np.nan, np.nan, np.nan])  # GPU 0 ends where GPU 1 goes on
    b = np.array([0.5, 0.5, 0.5, 0.7, 0.8, 0.9])
    lines = [Line("GPU 0", T, a, "#111111"), Line("GPU 1", T, b, "#222222"), Line("GPU 2", T, b * 0.1, "#333333")]
    svg, _ = time_chart("SM active", lines, AX, unit="ratio", y_title="share", y_range=(0.0, 1.0))
    g0, g1, g2 = _series(svg)
    assert 'class="overlap"' in g0 and 'class="overlap"' in g1 and 'class="overlap"' not in g2
    main1 = re.search(r'<path d="([^"]*)" fill="none" stroke="#222222" stroke-width="1.4"/>', g1)
    assert main1 is not None and main1.group(1).count("H") == 3  # its own three steps stay solid
    assert "GPU 1 (overlaps GPU 0)" in svg and ">GPU 2<title>" in svg  # no note on GPU 2


def test_series_that_do_not_overlap_are_drawn_as_before() -> None:
    lines = [Line("GPU 0", T, np.linspace(0, 0.5, 6), "#111111"), Line("GPU 1", T, np.linspace(0.5, 1, 6), "#222222")]
    svg, _ = time_chart("SM active", lines, AX, unit="ratio", y_title="share", y_range=(0.0, 1.0))
    assert "overlap" not in svg and 'x="96" y="14" class="ti"' in svg  # default margin unchanged


def _labels(svg: str) -> list[tuple[float, str, str]]:
    """(x, shown text, <title>) of every row name (right-aligned)."""
    return [(float(x), text, title) for x, text, title in re.findall(
        r'<text x="([\d.]+)" y="[\d.]+" text-anchor="end" class="tk">([^<]*)<title>([^<]*)</title></text>', svg)]


def test_row_names_are_whole_and_inside_the_chart() -> None:
    names = ["gpu-node-a100-rack12-07.cluster.local/0", "gpu-node-a100-rack12-08.cluster.local/0"]
    rows = [(n, [Span(0.0, 60.0, "#999", "idle")]) for n in names]
    svg = span_rows("Window label per GPU", rows, AX, [("idle", "#999")])
    got = _labels(svg)
    assert [t for _, t, _ in got] == names  # old: both read "…uster.local/0"
    assert all(x - text_px(t) >= 0 for x, t, _ in got)  # right-aligned at x: starts at x - width
    plot_x = float(re.search(r'<rect x="([\d.]+)"', svg).group(1))  # type: ignore[union-attr]
    assert ML < plot_x <= ML_MAX and all(x < plot_x for x, _, _ in got)


def test_a_name_too_long_for_any_margin_is_shortened_in_the_middle() -> None:
    name = "a-very-long-hostname-" + "x" * 60 + "-rack-07.example.org/3/mig 2"
    svg = span_rows("Window label per GPU", [(name, [Span(0.0, 60.0, "#999", "idle")])], AX, [("idle", "#999")])
    [(x, text, title)] = _labels(svg)
    assert title == name and "…" in text and text.startswith("a-very-long") and text.endswith("/3/mig 2")
    assert x - text_px(text) >= 0 and x == ML_MAX - 6


def test_corpus_dmon_page_stripes_the_clocks_and_aligns_rows(dcgm_corpus: Path, tmp_path: Path) -> None:
    # nvidia-smi dmon of 8 GPUs: their SM and memory clocks read the same 1980 / 2619 MHz, one line hid seven
    src = dcgm_corpus / "liguodongiot__llm-action__docs__llm-base__nvidia-smi-dmon.md.nvsmi_dmon.txt"
    if not src.exists():
        pytest.skip("corpus file absent")
    out = tmp_path / "p.html"
    res = CliRunner().invoke(main, ["analyze", str(src), "--start", "2026-11-20T00:00:00Z", "--html", str(out), "-q"])
    assert res.exit_code == 0, res.output
    page = out.read_text()
    clock = next(s for s in re.findall(r"<svg .*?</svg>", page, re.S) if 'aria-label="SM clock (NVML)"' in s)
    styles = _overlap_styles(clock)
    assert len({c for c, _, _ in styles}) == 8 and len({(c, o) for c, _, o in styles}) >= 8
    assert "(overlaps GPU" in clock
