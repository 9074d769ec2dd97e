"""A single-scrape DCGM input (every window an instant, ``covered_s`` 0) is drawn as one table of what
each GPU read, its label and the evidence, not as charts of one dot each (issue 24, 'Single-scrape pages';
reports/timelines.instant_html)."""

from __future__ import annotations

from pathlib import Path

from rooftop.analyzer.pipeline import run_analysis
from rooftop.reports.html import render_html
from rooftop.reports.markdown import render_markdown
from tests.conftest import FIXTURES, corpus_dir

SCRAPE = """# TYPE DCGM_FI_PROF_GR_ENGINE_ACTIVE gauge
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.95
DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.02
# TYPE DCGM_FI_PROF_DRAM_ACTIVE gauge
DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.85
DCGM_FI_PROF_DRAM_ACTIVE{gpu="1",UUID="GPU-b",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"} 0.01
"""


def test_one_scrape_is_a_table_of_instants(tmp_path: Path) -> None:
    f = tmp_path / "scrape.prom"
    f.write_text(SCRAPE)
    doc = run_analysis([str(f)])
    assert all(w["covered_s"] == 0 for w in doc["windows"])
    page = render_html(doc)
    assert "Instant samples: no time covered" in page
    timelines = page.split('id="timelines"', 1)[1].split("</section>", 1)[0]
    assert "<svg" not in timelines  # no chart of one dot per GPU
    assert timelines.count("<tr") == 1 + 2  # header and one row per GPU
    assert "n1/0" in timelines and "95.0%" in timelines and "85.0%" in timelines  # values at the instant
    assert "GPU label shares" not in page  # shares of no time say nothing


def test_windows_that_cover_time_keep_their_charts() -> None:
    doc = run_analysis([str(FIXTURES / "dcgm" / "prom_scrapes_phases.prom")])
    assert any((w["covered_s"] or 0) > 0 for w in doc["windows"])
    page = render_html(doc)
    assert "Instant samples" not in page and "GPU label shares" in page
    assert "<svg" in page.split('id="timelines"', 1)[1].split("</section>", 1)[0]


def test_corpus_single_scrape_shows_why_it_is_unknown() -> None:
    d = corpus_dir("dcgm")
    doc = run_analysis([str(d / "cncf__k8s-ai-conformance__v1.35__ericsson-ccd__accelerator_metrics.md.metrics.prom")])
    page = render_html(doc)
    timelines = page.split('id="timelines"', 1)[1].split("</section>", 1)[0]
    assert "conflicting signals" in timelines and "91.0%" in timelines  # NVML GPU util beside GR 15.6 %


def test_markdown_names_each_gpus_label(tmp_path: Path) -> None:
    # the Markdown had no word on the GPU windows' labels: 'No findings' and nothing else for a ticket
    f = tmp_path / "scrape.prom"
    f.write_text(SCRAPE)
    md = render_markdown(run_analysis([str(f)]))
    part = md.split("## GPU labels", 1)[1].split("\n## ", 1)[0]
    assert "Instant samples: no time covered" in part and "| n1/0 | memory-bound | dram |" in part
    md = render_markdown(run_analysis([str(FIXTURES / "dcgm" / "prom_scrapes_phases.prom")]))
    part = md.split("## GPU labels", 1)[1].split("\n## ", 1)[0]
    assert "| node-a/0 | 20.0% | 20.0% | 40.0% | 20.0% | 0.167 |" in part


def test_markdown_keeps_a_lints_whole_message(tmp_path: Path) -> None:
    # the dmon 'times assumed' lint was cut at 300 characters in a deep folder, before its fix
    # ("Pass --start T and --interval S ..."): a ticket lost what to do
    deep = tmp_path / ("d" * 120) / ("e" * 120)
    deep.mkdir(parents=True)
    f = deep / "dmon.txt"
    f.write_text("# Entity  GRACT  DRAMA\n      Id\n    GPU 0  0.900  0.100\n    GPU 0  0.910  0.100\n")
    md = render_markdown(run_analysis([str(f)]))
    part = md.split("## Data quality", 1)[1].split("\n## ", 1)[0]
    assert "dmon-time-assumed" in part and "Pass --start T and --interval S" in part and "…" not in part


def test_samples_with_no_window_field_say_why_there_is_no_label(tmp_path: Path) -> None:
    # decoder/encoder/framebuffer-free fields only: no window can be built; the page said "no findings"
    # and nothing else
    f = tmp_path / "enc.prom"
    f.write_text('DCGM_FI_DEV_ENC_UTIL{gpu="0",UUID="GPU-a",Hostname="n1"} 9\n'
                 'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-a",Hostname="n1"} 11275\n')
    doc = run_analysis([str(f)])
    assert doc["windows"] == []
    (lint,) = [x for x in doc["lint"] if x["code"] == "dcgm-no-window-fields"]
    assert "2 sample(s) of 1 GPU(s)" in lint["message"] and "DCGM_FI_DEV_ENC_UTIL" in lint["message"]
    assert "DCGM_FI_DEV_GPU_UTIL (203)" in lint["message"]
    from rooftop.reports.terminal import summary_text
    assert "DCGM windows: none: 2 sample(s)" in summary_text(doc, width=200)
    # a scrape with an activity field makes windows and no such lint
    f.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="n1"} 9\n')
    assert not [x for x in run_analysis([str(f)])["lint"] if x["code"] == "dcgm-no-window-fields"]


def test_corpus_scrape_without_activity_fields_says_so() -> None:
    d = corpus_dir("dcgm")
    doc = run_analysis([str(d / "NVIDIA__dcgm-exporter__pull__736.metrics_excerpt.prom")])
    (lint,) = [x for x in doc["lint"] if x["code"] == "dcgm-no-window-fields"]
    assert "DCGM_FI_DEV_DEC_UTIL" in lint["message"] and "DCGM_FI_DEV_FB_FREE" in lint["message"]
