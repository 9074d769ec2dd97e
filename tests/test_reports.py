"""Reports from the document dict: golden Markdown/JSON, HTML safety and self-containment, scale,
the section API for fleet/diff, output writing and the terminal summary."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

import pytest

from rooftop.analyzer.schema import validate_document
from rooftop.analyzer.view import document_view
from rooftop.reports.escape import esc, md, script_json
from rooftop.reports.html import SECTIONS_BY_KIND, render_html
from rooftop.reports.json_report import render_json
from rooftop.reports.markdown import MD_SECTIONS_BY_KIND, render_markdown
from rooftop.reports.md_widgets import MdSection, md_table
from rooftop.reports.outputs import print_summary, write_outputs
from rooftop.reports.widgets import Column, Section, table
from tests.regen_golden import GOLDEN, HOSTILE_NAMES, big_document, empty_document, sample_document

PLOTLY_MARK = "plotly.js v"  # the banner comment at the top of every plotly.js bundle


@pytest.fixture(scope="module")
def sample_html() -> str:
    return render_html(sample_document())


# ----------------------------------------------------------------------------- golden files

def test_markdown_matches_golden() -> None:
    """Regenerate with `python tests/regen_golden.py` after an intended change."""
    assert render_markdown(sample_document()) == (GOLDEN / "sample.md").read_text(encoding="utf-8")


def test_json_matches_golden_and_round_trips() -> None:
    doc = sample_document()
    text = render_json(doc)
    assert text == (GOLDEN / "sample.json").read_text(encoding="utf-8")
    assert json.loads(text) == doc


def test_json_is_strict_nan_becomes_null() -> None:
    doc = empty_document(x=float("nan"), y=[float("inf"), 1.5], z={"w": -math.inf})
    back = json.loads(render_json(doc))
    assert back == {**doc, "x": None, "y": [None, 1.5], "z": {"w": None}}
    assert "NaN" not in render_json(doc) and "Infinity" not in render_json(doc)


# ----------------------------------------------------------------------------- HTML

def test_html_self_contained(sample_html: str) -> None:
    import base64
    import hashlib

    # no plotly.js any more (it was 4.9 MB on every DCGM page): every chart is static SVG
    assert PLOTLY_MARK not in sample_html and "Plotly" not in sample_html
    assert len(sample_html.encode("utf-8")) < 400_000
    assert sample_html.count('http-equiv="Content-Security-Policy"') == 1
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]*)"', sample_html).group(1)  # type: ignore[union-attr]
    assert "unsafe-inline" not in policy.split("script-src", 1)[1].split(";", 1)[0]
    scripts = re.findall(r"<script>(.*?)</script>", sample_html, re.S)
    hashes = re.findall(r"'sha256-([^']+)'", policy)
    assert len(scripts) == 1 and sorted(hashes) == sorted(
        base64.b64encode(hashlib.sha256(s.encode("utf-8")).digest()).decode() for s in scripts)
    page = sample_html
    assert not re.search(r"<(script|img|link|iframe)[^>]*\s(src|href)\s*=", page, re.I)
    assert "cdn." not in page.lower()
    markup = re.sub(r"<script[^>]*>.*?</script>", "", page, flags=re.S)
    markup = re.sub(r'"[^"]*"', '""', markup)  # attribute values (escaped text) are not attributes
    assert not re.search(r"<[a-z][^>]*\son[a-z]+\s*=", markup, re.I), "no inline event handlers"


def test_dcgm_timelines_are_svg_one_chart_per_family() -> None:
    """The sample's two GPUs are series of one chart per metric family, not one plotly figure per GPU."""
    doc = sample_document()
    page = render_html(doc)
    section = page.split('<section id="timelines">', 1)[1].split("</section>", 1)[0]
    charts = re.findall(r'<svg xmlns="http://www.w3.org/2000/svg"[^>]*class="(timechart|spanrows)"', section)
    families = {m for v in doc["timelines"].values() for m, s in v.items()
                if m not in ("t", "label") and any(x is not None for x in s)}
    assert charts.count("spanrows") == 1 and charts.count("timechart") == len(families)
    for key in doc["timelines"]:  # every GPU is a series (legend) of every family chart
        # escaped in the legend (a series that shares steps with another says so after its name)
        assert section.count(f">GPU {esc(key)}<title>") + section.count(f">GPU {esc(key)} (overlaps ") >= len(families)
    assert "node-<01>" not in section
    assert "<title>" in section and "UTC" in section and "100%" in section


def test_no_plotly_anywhere() -> None:
    doc = sample_document()
    doc.update(windows=[], timelines={})
    doc.update(document_view(doc))
    page = render_html(doc)
    assert PLOTLY_MARK not in page and len(page.encode("utf-8")) < 300_000
    assert page.count("<script>") == 1 and "'sha256-" in page


def test_hostile_names_are_escaped_everywhere(sample_html: str) -> None:
    page = sample_html
    for raw in ("<img src=x onerror=alert(1)>", "</script><script>alert(1)</script>", "<b>bold</b>",
                "<script>alert(2)</script>"):
        assert raw not in page
    assert "&lt;img src=x onerror=alert(1)&gt;" in page  # shown as text in the kernel table
    # exactly one script element: the page script (no figure JSON, no plotly.js)
    assert page.count("<script") == 1 and page.count("</script>") == 1


def _roofline_svgs(page: str) -> list[str]:
    return re.findall(r'<svg xmlns="http://www.w3.org/2000/svg"[^>]*class="roofline".*?</svg>', page, re.S)


def test_roofline_svg_draws_the_view_and_escapes_names(sample_html: str) -> None:
    doc = sample_document()
    kernel_svg, window_svg = _roofline_svgs(sample_html)
    assert "&lt;img src=x onerror=alert(1)&gt;" in kernel_svg and "<img" not in kernel_svg
    # 5 placed families (the unknown one has no FLOPs) x 3 levels
    groups = {g.split('"', 1)[0]: g.split("</g>", 1)[0] for g in kernel_svg.split('<g class="lvl lvl-')[1:]}
    assert {k: v.count("<title>") for k, v in groups.items()} == {"dram": 5, "l2": 5, "l1": 5}
    drawn = [float(v) for v in re.findall(r'class="ceiling" data-kind="\w+" data-key="\w+" data-value="([^"]+)"', kernel_svg)]
    assert sorted(drawn) == sorted(c["value"] for c in doc["roofline"]["panels"][0]["ceilings"])
    assert "GFLOP/s" in kernel_svg and "TFLOP/s" in kernel_svg and "TB/s" in kernel_svg and "100B" not in kernel_svg
    assert kernel_svg.count('class="fl point-label"') == 5  # the top families are named on the chart
    assert window_svg.count("<path d=") == 4  # 2 GPUs x 2 windows with estimates (idle ones have none)


def test_roofline_aggregates_by_family_with_time_weighted_intensity(sample_html: str) -> None:
    doc = sample_document()
    fam = next(f for f in doc["families"] if f["family"].startswith("add_kernel"))
    # add_kernel: 2 launches, each 1e9 FLOP / 1.2e10 DRAM bytes / 4 ms
    assert fam["intensity_dram"] == pytest.approx(2e9 / 2.4e10) and fam["achieved_flops_s"] == pytest.approx(2.5e11)
    assert fam["kernels"] == [0, 1] and fam["panel"] == "p0"
    assert "DRAM: 0.0833 FLOP/byte · 250 GFLOP/s" in sample_html  # its marker's hover text


def test_sections_present(sample_html: str) -> None:
    for anchor in ("summary", "roofline", "findings", "kernels", "timelines", "shares", "wfindings",
                   "lint", "inputs", "provenance"):
        assert f'id="{anchor}"' in sample_html
    assert "0" * 64 in sample_html  # input checksum
    assert "rooftop analyze run.ncu.csv dmon.txt --md out.md" in sample_html


def test_no_kernels_no_windows_renders() -> None:
    doc = sample_document()
    doc.update(kernels=[], windows=[], findings=[], timelines={}, devices=[])
    doc.update(document_view(doc))
    page = render_html(doc)
    assert 'id="findings"' in page and 'id="roofline"' not in page


def _kpis(page: str) -> dict[str, str]:
    summary = page.split('<section id="summary">', 1)[1].split("</section>", 1)[0]
    return {cap: val for val, cap in re.findall(r'<div class="kpi"><b>([^<]*)</b><span>([^<]*)</span>', summary)}


def test_summary_counts_what_the_inputs_hold() -> None:
    """A DCGM-only or trace-only page does not say "0 kernel launches" (ncu launches it never had);
    a trace page counts its traced kernels from the document's timeline entries."""
    doc = sample_document()
    doc.update(kernels=[], findings=[])
    doc.update(document_view(doc))
    assert "kernel launches" not in _kpis(render_html(doc)) and _kpis(render_html(doc))["DCGM windows"]
    entry = {"input": "t.sqlite", "gpu_name": None, "memcpy": None, "memset": None, "span_s": None,
             "kernel_sum_s": None, "kernel_busy_s": None, "gpu_busy_s": None, "idle_s": None, "idle_fraction": None,
             "gaps": None, "short_kernels": None, "top_kernels": [], "label": "unknown", "limiter": "unknown",
             "evidence": []}
    doc.update(windows=[], timelines={}, timeline=[{**entry, "device": "0", "kernels": 1993},
                                                   {**entry, "device": "1", "kernels": 2017}])
    validate_document(doc)
    assert _kpis(render_html(doc)).get("traced kernels") == "4010" and "kernel launches" not in _kpis(render_html(doc))
    doc.update(timeline=[])
    assert _kpis(render_html(doc))["kernel launches"] == "0"  # nothing else: the count says so


def test_partial_metrics_document_renders() -> None:
    doc = sample_document()
    for k in doc["kernels"]:
        k.update(flops=None, bytes={"l1": None, "l2": None, "dram": None},
                 intensity={"l1": None, "l2": None, "dram": None}, achieved_flops_s=None)
    doc.update(windows=[], timelines={})
    doc.update(document_view(doc))
    page = render_html(doc)
    assert "No roofline: a kernel is placed by its FLOP/s and FLOP/byte" in page and "ncu --set full" in page
    assert not _roofline_svgs(page)  # no empty chart


def test_100k_kernels_under_10_mb() -> None:
    page = render_html(big_document(100_000))
    assert len(page.encode("utf-8")) < 10 * 1024 * 1024
    assert "Top 500 of 100000 launches" in page


# ----------------------------------------------------------------------------- section API

def test_section_api_for_fleet_and_diff(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []

    def sections(doc: dict[str, Any]) -> list[Section]:
        calls.append("html")
        return [Section("Fleet groups", table([{"g": "<pod>"}], [("g", "group")]))]

    def markdown_sections(doc: dict[str, Any]) -> list[MdSection]:
        calls.append("md")
        return [MdSection("Fleet groups", md_table([{"g": "a|b"}], [("g", "group")]))]

    from rooftop.reports import fleet_sections

    # the fleet page lists its sections module's builders directly (no lazy import strings)
    html_fleet = [sections if b is fleet_sections.sections else b for b in SECTIONS_BY_KIND["fleet"]]
    md_fleet = [markdown_sections if b is fleet_sections.markdown_sections else b for b in MD_SECTIONS_BY_KIND["fleet"]]
    assert html_fleet != SECTIONS_BY_KIND["fleet"] and md_fleet != MD_SECTIONS_BY_KIND["fleet"]
    monkeypatch.setitem(SECTIONS_BY_KIND, "fleet", html_fleet)
    monkeypatch.setitem(MD_SECTIONS_BY_KIND, "fleet", md_fleet)
    doc = sample_document()
    doc["kind"] = "fleet"
    page = render_html(doc)
    text = render_markdown(doc)
    assert calls == ["html", "md"]
    assert "Fleet groups" in page and "&lt;pod&gt;" in page and "rooftop fleet report" in page
    assert "| a\\|b |" in text
    assert "fleet" in SECTIONS_BY_KIND and "diff" in MD_SECTIONS_BY_KIND


def test_table_escapes_and_sorts_numbers() -> None:
    html = table([{"a": "<x>", "b": 2.5}], [Column("a", "A&B"), Column("b", "n", lambda v: f"{v} s", numeric=True)])
    assert "&lt;x&gt;" in html and "A&amp;B" in html and 'data-v="2.5"' in html and "2.5 s" in html


# ----------------------------------------------------------------------------- escaping

def test_escape_helpers() -> None:
    assert esc('<a href="x">&') == "&lt;a href=&quot;x&quot;&gt;&amp;"
    s = script_json({"n": "</script><!-- \u2028 & >"})
    assert "<" not in s and ">" not in s and "&" not in s and "\u2028" not in s
    assert json.loads(s) == {"n": "</script><!-- \u2028 & >"}


@pytest.mark.parametrize("name", [*HOSTILE_NAMES, "a|b", "x\r\ny", "![img](http://e/x.png)", "`code`"])
def test_markdown_cell_cannot_break_table(name: str) -> None:
    out = md_table([{"n": name, "m": "ok"}], [("n", "name"), ("m", "other")])
    row = out.splitlines()[2]
    assert len(out.splitlines()) == 3
    assert len(re.findall(r"(?<!\\)\|", row)) == 3  # only the 3 table pipes are unescaped
    assert "<" not in row and "`" not in row and "](" not in row.replace("\\](", "")
    assert md(name).count("\n") == 0


# ----------------------------------------------------------------------------- outputs

def test_write_outputs_and_summary(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = sample_document()
    doc["kernels"][2]["name"] = "evil\x1b[2J\x1b]0;title\x07"
    doc["findings"][0]["title"] = doc["findings"][0]["family"] = "bad\x1b[31mred\nline"
    paths = [tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"]
    write_outputs(doc, html=str(paths[0]), md=str(paths[1]), json_path=str(paths[2]))
    assert all(p.stat().st_size > 0 for p in paths)
    assert json.loads(paths[2].read_text(encoding="utf-8"))["kind"] == "analyze"
    assert not list(tmp_path.glob(".*.tmp"))
    print_summary(doc, top=2, outputs=[str(p) for p in paths])
    out = capsys.readouterr().out
    assert "\x1b" not in out and "badred line" not in out and "bad\\x1b[31mred\\nline" in out
    assert "1. [high]" in out and "\n  3. " not in out
    assert str(paths[0]) in out and "memory-bound" in out


def test_write_outputs_missing_folder_raises_output_error(tmp_path: Path) -> None:
    from rooftop.errors import OutputError

    with pytest.raises(OutputError):
        write_outputs(sample_document(), html=None, md=str(tmp_path / "nope" / "r.md"), json_path=None)


def test_ceilings_of_takes_each_kind_from_the_vocabulary() -> None:
    """A ceiling is a peak or a bandwidth by the vocabulary its key belongs to (analyzer/schema/vocab.py),
    not by how the key is spelled: every compute key is FLOP/s, every bandwidth key B/s."""
    from rooftop.analyzer import schema
    from rooftop.reports.roofline import ceilings_of, roofs_of

    dev = {"name": "X", "source": "builtin",
           "ceilings": {"fp64": 1e13, "fp32": 2e13, "tensor_fp16acc": 4e14, "int8": 8e14, "dram": 2e12,
                        "l2": 5e12, "l1": 1e13},
           "sources": {"fp32": "datasheet", "dram": "HBM3 spec"}, "sm_count": 132, "cc": "9.0"}
    schema.validate_document(empty_document(devices=[dev]))
    compute, bandwidth = ceilings_of(dev)
    assert [c.name for c in compute] == ["int8", "tensor_fp16acc", "fp32", "fp64"]
    assert [(b.name, b.value) for b in bandwidth] == [("DRAM", 2e12), ("L2", 5e12), ("L1", 1e13)]
    assert compute[2].source == "datasheet" and bandwidth[0].source == "HBM3 spec"
    roofs = roofs_of(dev)
    assert {(r["key"], r["kind"], r["unit"]) for r in roofs} >= {("int8", "compute", "FLOP/s"),
                                                                   ("l1", "bandwidth", "B/s")}
    every = dict.fromkeys(schema.CEILING_KEYS, 1e12)
    c_all, b_all = ceilings_of({"name": "Y", "source": "user", "ceilings": every})
    assert {c.key for c in c_all} == set(schema.COMPUTE_CEILINGS)
    assert [b.key for b in b_all] == list(schema.BANDWIDTH_CEILINGS)
    assert ceilings_of({"name": "Z", "source": "user", "ceilings": {"fp32": None, "dram": -1.0}}) == ([], [])
    with pytest.raises(schema.SchemaError, match=r"\$\.devices\[0\]\.ceilings\.dram_bytes_s: unknown key"):
        schema.validate_document(empty_document(devices=[{"name": "W", "source": "user",
                                                          "ceilings": {"dram_bytes_s": 1e12}}]))


def test_many_dcgm_windows_stay_small() -> None:
    doc = sample_document()
    base = doc["windows"][0]
    windows = []
    for g in range(16):
        for m in range(1200):
            windows.append({**base, "host": f"h{g // 8}", "gpu": str(g % 8),
                            "start": f"2026-11-20T{m // 60:02d}:{m % 60:02d}:00Z",
                            "end": f"2026-11-20T{m // 60:02d}:{m % 60:02d}:59Z",
                            "label": ("compute-bound", "memory-bound", "idle")[(m // 30) % 3]})
            if windows[-1]["label"] == "idle":
                windows[-1].update(est_flops_s=None, est_dram_bytes_s=None)
    doc.update(windows=windows, timelines={})
    doc.update(document_view(doc))
    page = render_html(doc)
    assert len(page.encode("utf-8")) < 10 * 1024 * 1024
    # 19,200 windows > MAX_WINDOW_POINTS -> one point per GPU and label (idle ones have no estimate)
    assert len(doc["roofline"]["windows"][0]["windows"]) == 16 * 2
    assert _roofline_svgs(page)[1].count("<path d=") == 16 * 2
    assert "aggregated to one point per GPU and label" in page


def test_a_failing_section_does_not_cost_the_report(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(doc: dict[str, Any]) -> list[Section]:
        raise KeyError("<boom>")

    from rooftop.reports import diff_sections

    monkeypatch.setitem(SECTIONS_BY_KIND, "diff",
                        [broken if b is diff_sections.sections else b for b in SECTIONS_BY_KIND["diff"]])
    monkeypatch.delenv("ROOFTOP_DEBUG", raising=False)
    doc = sample_document()
    doc["kind"] = "diff"
    page = render_html(doc)
    assert "This section failed" in page and "&lt;boom&gt;" in page and 'id="provenance"' in page
    monkeypatch.setenv("ROOFTOP_DEBUG", "1")
    with pytest.raises(KeyError):
        render_html(doc)


def test_large_documents_are_compact_but_equal() -> None:
    from rooftop.reports.json_report import COMPACT_ABOVE

    kernels = [{"index": i, "name": f"k{i}", "duration_s": 1e-6} for i in range(COMPACT_ABOVE + 1)]
    big = empty_document(kernels=kernels)
    text = render_json(big)
    assert "\n " not in text  # no indentation
    assert json.loads(text) == big
    small = empty_document(kernels=kernels[:2])
    assert "\n " in render_json(small)


def test_markdown_cells_neutralise_autolinks_bidi_and_c1() -> None:
    """Issue 19 item 15: GitHub autolinks bare URLs, www. hosts and e-mails even in table cells."""
    text = md("k<http://evil.example/x> www.evil.example a.b@evil.example mailto:x@y.z \u202eexe.txt \x85\x9b2J")
    for live in ("http://", "www.evil", "b@evil", "mailto:"):
        assert live not in text
    assert "\u2060" in text and "\u202e" not in text and "U+202E" in text
    assert not any(0x80 <= ord(c) < 0xA0 or c < " " for c in text)
    assert md("plain name::f<int>") == "plain name::f&lt;int&gt;"  # nothing else changes


def test_md_writes_the_svg_roofline_next_to_it_and_links_it(tmp_path: Path) -> None:
    doc = sample_document()
    md_path = tmp_path / "ticket.md"
    write_outputs(doc, html=None, md=str(md_path), json_path=None)
    text = md_path.read_text(encoding="utf-8")
    svg = (tmp_path / "ticket.roofline.svg").read_text(encoding="utf-8")
    assert "](ticket.roofline.svg)" in text and "](ticket.roofline-2.svg)" in text  # kernels + DCGM windows
    assert svg.startswith("<?xml") and 'xmlns="http://www.w3.org/2000/svg"' in svg and "<script" not in svg
    assert "href" not in svg  # self-contained: nothing external
    assert text.rstrip().split("## ")[-1].startswith("How to reproduce")


def test_md_names_kernels_distinctly_and_says_each_recommendation_once() -> None:
    from rooftop.reports.analyze_sections import distinct_names

    cutlass = ["void cutlass::Kernel<cutlass::gemm::kernel::Gemm<" + "X" * 120 + f"Tile{i}>>(Params)" for i in range(3)]
    short = distinct_names(cutlass, limit=100)
    assert len(set(short)) == 3 and all(len(s) <= 100 for s in short)  # the differing tails are kept
    assert distinct_names(["k" * 200, "k" * 200]) == [distinct_names(["k" * 200])[0] + " #1",
                                                     distinct_names(["k" * 200])[0] + " #2"]
    doc = sample_document()
    doc["findings"][2]["recommendation"] = doc["findings"][0]["recommendation"]
    text = render_markdown(doc)
    assert text.count("Cut DRAM traffic: fuse.") == 1
    assert "(findings \\#1, \\#3)" in text


def test_header_names_a_gpu_once_when_it_has_export_and_builtin_entries() -> None:
    doc = sample_document()
    first = dict(doc["devices"][0])
    doc["devices"] = [first, {**first, "source": "builtin"}]
    page = render_html(doc)
    sub = re.search(r'<div class="sub">([^<]*)</div>', page)
    assert sub is not None
    assert sub.group(1).count(esc(str(first["name"]))) == 1


def test_markdown_and_terminal_name_a_gpu_once_with_both_ceiling_entries(
        capsys: pytest.CaptureFixture[str]) -> None:
    doc = sample_document()
    first = dict(doc["devices"][0])
    doc["devices"] = [{**first, "source": "export"}, {**first, "source": "builtin"}]
    md_text = render_markdown(doc)
    assert md_text.count("- Device:") == 1 and "(ceilings: export, builtin)" in md_text
    print_summary(doc, 5, [])
    out = capsys.readouterr()
    text = out.out + out.err
    assert text.count("device: ") == 1 and "(ceilings: export, builtin)" in text


def test_terminal_finding_line_keeps_label_and_numbers_and_shortens_the_name(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from rooftop.reports.terminal import shorten_name, summary_text

    monkeypatch.setenv("COLUMNS", "80")
    doc = sample_document()
    f = doc["findings"][0]
    f["family"] = "cutlass::gemm::kernel::GemmUniversal<" + "cutlass::half_t, " * 12 + "> (grid 4096, block 384)"
    f["label"], f["limiter"], f["est_saving_s"], f["time_share"] = "compute-bound", "tensor", 1.69e-4, 0.434
    lines = summary_text(doc, top=1).splitlines()
    i = next(i for i, x in enumerate(lines) if x.startswith("  1. "))
    assert lines[i] == "  1. [high] compute-bound (tensor) · 43.4% of time · est. saving 169 µs"
    assert lines[i + 1] == "     cutlass::gemm::kernel::GemmUniversal<cutlass::hal…> (grid 4096, block 384)"
    assert shorten_name("abcdefghijklmnopqrstuvwxyz (grid 1, block 2)", 30) == "abcdefghijkl… (grid 1, block 2)"
    assert shorten_name("short (grid 1, block 2)", 30) == "short (grid 1, block 2)"
    assert shorten_name("window finding title that is long", 20) == "window finding titl…"


def test_terminal_names_unusable_inputs_with_their_reason() -> None:
    from rooftop.reports.terminal import summary_text

    doc = sample_document()
    doc["inputs"] = [*doc["inputs"], {"path": "dir/bad.txt", "format": "unusable", "records": 0,
                                       "missing": 0, "rejected": 0}]
    doc["rejected"] = [*doc["rejected"], {"path": "dir/bad.txt", "line": None,
                                           "reason": "is not a format rooftop reads"}]
    assert "  unusable: dir/bad.txt: is not a format rooftop reads" in summary_text(doc).splitlines()
