"""The ops in the reports (reports/ops_sections.py, reports/svg_ops.py): the HTML op roofline and the sortable
op table with its category filter, the Markdown top ops, the terminal line; names escaped everywhere."""

from __future__ import annotations

import copy

import pytest

from rooftop.analyzer.pipeline import run_analysis
from rooftop.analyzer.schema import Document, validate_document
from rooftop.reports.html import render_html
from rooftop.reports.markdown import render_markdown
from rooftop.reports.terminal import summary_text
from tests.conftest import FIXTURES


@pytest.fixture(scope="module")
def doc() -> Document:
    d: Document = run_analysis([str(FIXTURES / "trace" / "ops_pair.json")])  # type: ignore[assignment]
    return d


def test_html_draws_the_op_roofline_and_a_filterable_op_table(doc: Document) -> None:
    page = render_html(doc)
    assert 'id="ops"' in page and 'id="op-table"' in page
    assert page.count("<circle") >= 3  # the three ops with FLOPs; the fill has none and is not placed
    assert 'data-col="category"' in page and '<option value="gemm">gemm</option>' in page
    assert "FP16 tensor" in page and "DRAM 3.35 TB/s" in page


def test_markdown_lists_the_top_ops_and_the_terminal_their_coverage(doc: Document) -> None:
    md = render_markdown(doc)
    assert "## Op coverage" in md and "## Top ops" in md and "aten::mm M×N×K 8192×8192×8192 Half" in md
    text = summary_text(doc, width=200)
    assert "ops ops_pair.json GPU 0: 100.0% of GPU time attributed, 100.0% of it modelled" in text
    # the top op line carries the verdict (it was cut at the first ': ', which left the name alone, or
    # "...; largest" for an undecided group) and not the input and device the line above names
    top = next(line for line in text.splitlines() if "top op:" in line)
    assert "top op: aten::add [268435456] fp32: memory-bound at 88 % of DRAM" in top
    assert "ops_pair.json" not in top


def test_the_terminal_leads_with_the_share_of_all_gpu_time(doc: Document) -> None:
    # corpus h100_2gpu_1s: every launch the trace holds is attributed, but 43.8 % of the GPU time (copies
    # launched before the capture) is not; "100.0% of launched GPU time attributed" read as all of it
    part = copy.deepcopy(doc)
    part["ops_coverage"][0]["attributed_of_all"] = 0.562493
    text = summary_text(part, width=200)
    assert "GPU 0: 56.2% of GPU time attributed (100.0% of what the trace launched)" in text


def test_op_names_are_escaped(doc: Document) -> None:
    bad = copy.deepcopy(doc)
    bad["ops"][0]["name"] = '<script>alert(1)</script>|x'
    validate_document(bad)
    page, md = render_html(bad), render_markdown(bad)
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
    assert "<script>alert(1)</script>|x" not in md
