"""How the reports draw timelines (issue 25 items 1 and 9): the terminal's per-device line with its
top finding, a steps table that names its input once, a busy strip where little work still shows."""

from __future__ import annotations

import re

from rooftop.analyzer.pipeline import run_analysis
from rooftop.reports.html import render_html
from rooftop.reports.markdown import render_markdown
from rooftop.reports.terminal import summary_text
from rooftop.reports.timeline_sections import _busy_color
from tests.conftest import FIXTURES

STEPS = str(FIXTURES / "trace" / "steps.json")


def test_terminal_prints_each_device_label_idle_and_top_finding() -> None:
    text = summary_text(run_analysis([STEPS]), width=200)
    assert ("  timeline steps.json GPU 0: overhead-bound (launch), idle 56.9%\n    top: GPU idle 395.9 µs "
            "(56.9 % of the span) in 99 gaps < 10 µs between launches") in text
    assert "no findings" not in text


def test_steps_table_names_its_input_once() -> None:
    doc = run_analysis([STEPS])
    page = render_html(doc)
    steps = page[page.index('id="steps"'):]
    steps = steps[: steps.index("</section>")]
    assert steps.count("steps.json") == 1 and "input: steps.json" in steps
    assert len(re.findall(r"<td[^>]*>GPU 0</td>", steps)) == 2
    md = render_markdown(doc)
    section = md[md.index("## Steps"):]
    section = section[: section.index("\n## ", 3)]
    assert section.count("steps.json") == 1 and "| ProfilerStep\\#0 | 350 µs | GPU 0 |" in section


def test_busy_strip_shows_a_little_work() -> None:
    """Square-root scale: 1 % busy is a tenth of the way from idle grey to busy blue (was 1 %)."""
    assert _busy_color(0.0) == "#f1f3f5" and _busy_color(1.0) == "#1971c2"
    assert _busy_color(0.01) == "#dbe6f0"
