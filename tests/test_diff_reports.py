"""The diff reports draw what the diff compared (issue 28): a timeline diff leads with what changed
and prints p-values to 2 significant digits; a diff of two DCGM captures draws owners, GPU-hours
and label shares (not empty kernel cards); a long verdict reason is cut at a sentence or item
boundary and says how much was left out (docs/formulas.md#diff, #timeline-diff, #windows-diff)."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from rooftop.analyzer.diff.sides import run_diff
from rooftop.reports.ci import step_summary
from rooftop.reports.html import render_html
from rooftop.reports.markdown import render_markdown
from rooftop.reports.reason import clip
from tests.conftest import FIXTURES, corpus_dir
from tests.test_diff_effect import MFU, _kineto
from tests.test_diff_windows import prom


def _sections(md: str) -> list[str]:
    return re.findall(r"^## (.+)$", md, flags=re.M)


def _long_decimals(text: str) -> list[str]:
    """Numbers printed with 6 or more significant digits (a p-value at full precision)."""
    return [m for m in re.findall(r"(?<![\w.])\d+\.\d+", text) if len(m.replace(".", "").lstrip("0")) >= 6]


def _visible(html: str) -> str:
    """The page without its script and the raw numbers its tables (sorting) and bars (widths) carry."""
    html = re.sub(r"<script.*?</script>", "", html, flags=re.S)
    return re.sub(r' (?:data-[a-z]+|style)="[^"]*"', "", html)


# ----------------------------------------------------------------------------- timelines


@pytest.fixture(scope="module")
def mfu_doc() -> dict[str, Any]:
    d = corpus_dir("trace")
    doc: dict[str, Any] = run_diff(str(d / MFU.format("before")), str(d / MFU.format("after")), fail_on=5.0,
                                   device=None, command="test")
    return doc


def test_corpus_timeline_diff_markdown_leads_with_what_changed(mfu_doc: dict[str, Any]) -> None:
    md = render_markdown(mfu_doc)  # type: ignore[arg-type]
    heads = _sections(md)
    assert heads[heads.index("Verdict") + 1] == "What changed (largest first)"
    assert "Changes beyond noise (kernels and idle gaps)" not in md
    table = md.split("## What changed (largest first)")[1].split("\n## ")[0]
    rows = [r for r in table.splitlines() if r.startswith("| 0") or r.startswith("| 1")]
    assert rows[0].startswith("| 0 | idle, by cause | host (other gaps ≥ 10 µs) | 22.1 ms | 53 ms | +139.7 %")
    assert rows[1].startswith("| 0 | idle, by gap size | gaps 10–100 µs | 6.4 ms | 29.3 ms | +358.1 % | 176 → 779 gaps")
    assert not _long_decimals(md), _long_decimals(md)
    series = md.split("## Series the test calls significant")[1]
    assert "| 1 | nvjet\\_tst\\_192x192\\_64x4\\_2x1\\_v\\_bz\\_coopB\\_bias\\_TNN (grid (2, 66, 1), block (384, 1, 1)) | " \
           "119 → 106 | +1.0 % | 0.0034 | within threshold | effect |" in series
    assert "GPU 1: " not in series.split("\n\n")[1]  # the GPU column names the device once


def test_corpus_timeline_diff_html_p_values_and_order(mfu_doc: dict[str, Any]) -> None:
    page = render_html(mfu_doc)  # type: ignore[arg-type]
    text = _visible(page)
    assert not _long_decimals(text), _long_decimals(text)
    order = [text.index(f">{h}<") for h in ("Verdict", "What changed (largest first)", "Regressions",
                                           "Improvements", "Per GPU: before → after",
                                           "Series the test calls significant")]
    assert order == sorted(order)
    assert "Changes beyond noise" not in text and "Roofline: baseline → candidate" not in text
    assert "535 ms → 489 ms" in text and "— → —" not in text


def test_timeline_diff_with_steps_and_a_new_kernel_family(tmp_path: Path) -> None:
    import json

    base = _kineto(tmp_path / "b.json", [1000 + (i % 3) for i in range(30)])
    slow = _kineto(tmp_path / "c.json", [1300 + (i % 3) for i in range(30)])
    doc = json.loads(slow.read_text())
    doc["traceEvents"].append({"ph": "X", "cat": "kernel", "name": "fresh_kernel", "pid": 0, "tid": 7, "ts": 10,
                               "dur": 400, "args": {"device": 0, "stream": 7, "correlation": 999}})
    slow.write_text(json.dumps(doc))
    d = run_diff(str(base), str(slow), fail_on=5.0, device=None, command="test")
    md = render_markdown(d)
    changes = md.split("## What changed (largest first)")[1].split("\n## ")[0]
    rows = [r for r in changes.splitlines() if r.startswith("| 0 ")]
    assert rows[0].startswith("| 0 | idle, by gap size | gaps &gt; 100 µs | 27.6 ms | 35.9 ms | +30.3 % | 29 → 29 gaps")
    assert "| 0 | step time (median) | step time (ProfilerStep\\#N) | 1 ms | 1.3 ms | +30.0 % | 30 → 30 steps |" \
        in rows
    regs = md.split("## Regressions")[1].split("\n## ")[0]
    assert "| 0 | step time (ProfilerStep\\#N) | +30.0 %" in regs
    assert "## Kernel families on one side only" in md and "fresh\\_kernel (new, 400 µs)" in md
    page = _visible(render_html(d))
    assert ">Kernel families on one side only<" in page and "fresh_kernel" in page


# ----------------------------------------------------------------------------- DCGM windows


def test_dcgm_windows_diff_draws_owners_and_label_shares_not_kernel_cards(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"ns-train": 0.80, "ns-serve": 0.40, "ns-batch": 0.70})
    cand = prom(tmp_path / "c.prom", {"ns-train": 0.60, "ns-serve": 0.40, "ns-batch": 0.0})
    doc = run_diff(str(base), str(cand), fail_on=5.0, device=None, command="test")
    train = next(s for s in doc["window_series"] if s["owner"] == "ns-train")
    batch = next(s for s in doc["window_series"] if s["owner"] == "ns-batch")
    assert train["idle_share_base"] == 0.0 and train["idle_share_cand"] == 0.0
    assert batch["idle_share_base"] == 0.0 and batch["idle_share_cand"] == 1.0
    for text in (render_markdown(doc), _visible(render_html(doc))):
        assert "— → —" not in text and "matched launches" not in text.lower() and "kernel time" not in text
        assert "Owners: efficiency before → after" in text and "GPU time by label" in text
        assert not _long_decimals(text)
    md = render_markdown(doc)
    owners = md.split("## Owners: efficiency before → after")[1].split("\n## ")[0]
    lines = [r for r in owners.splitlines() if r.startswith("| namespace")]
    assert lines[0].startswith("| namespace ns-batch | 0.70 → 0.00 | SM activity | -100.0 % |")  # largest drop first
    assert "| regressed | effect+significance | 40 → 40 | 0.0% → 100.0% |" in lines[0]
    assert lines[1].startswith("| namespace ns-train | 0.80 → 0.60 | SM activity | -25.0 % |")
    assert lines[2].startswith("| namespace ns-serve | 0.40 → 0.40 | SM activity | +0.0 % | 1 | within threshold | "
                               "effect |")
    assert "- GPU time covered: 1 GPU-h → 1 GPU-h; idle 0.0% → 33.3% (reported, not gated)" in md
    assert "| idle | 0.0% | 33.3% | +33.3 points |" in md
    page = _visible(render_html(doc))
    assert "1 GPU-h → 1 GPU-h" in page and "less efficient beyond 5 %" in page


def test_dcgm_fixture_self_diff_page() -> None:
    f = FIXTURES / "dcgm" / "prom_tsdb_mig.prom"
    doc = run_diff(str(f), str(f), fail_on=0.0, device=None, command="test")
    md = render_markdown(doc)
    assert "**PASS**" in md and "— → —" not in md
    assert md.count("| within threshold | effect |") == 2  # ns1 and ns2 (MIG instances)


# ----------------------------------------------------------------------------- long reasons


def _long_reason(items: int = 60) -> str:
    named = "; ".join(f"GPU {i % 8}: kernel_family_{i}<float, (int){i}> (grid ({i}, 1, 1), block (128, 1, 1)) "
                      f"+{10 + i} % (p=1.2e-05 Holm-adjusted)" for i in range(items))
    return f"{items} regression(s) beyond 5 %: {named}. 96 series compared: 96 with Mann–Whitney U."


def test_clip_cuts_at_an_item_boundary_and_counts_what_it_left_out() -> None:
    text = _long_reason()
    assert len(text) > 6000
    out = clip(text, 2000)
    assert len(out) <= 2000
    head, note = out.split(" … (")
    assert text.startswith(head) and re.search(r"\(p=1\.2e-05 Holm-adjusted\)$", head)
    kept = head.count("; ") + 1
    total = len(re.split(r"(?<=[.;])\s+(?=\S)", text))
    assert note.startswith(f"{total - kept} more sentence(s) or item(s), {len(text) - len(head)} characters, left out")
    assert clip("short. text", 2000) == "short. text"
    one = "x" * 50 + " " + "y" * 3000
    assert clip(one, 500).startswith("x" * 50 + " … (3001 characters left out")


def test_markdown_and_job_summary_reasons_are_cut_at_a_boundary() -> None:
    f = FIXTURES / "diff" / "baseline.raw.csv"
    doc = run_diff(str(f), str(FIXTURES / "diff" / "candidate.raw.csv"), fail_on=5.0, device=None, command="test")
    doc["verdict"]["reason"] = _long_reason()
    md = render_markdown(doc)
    line = next(ln for ln in md.splitlines() if ln.startswith("**FAIL**: "))
    assert "Holm-adjusted) … (" in line and "left out: the JSON output has the whole reason)" in line
    assert len(line) < 2300
    summary = next(ln for ln in step_summary(doc).splitlines() if ln.startswith("60 regression"))
    assert "Holm-adjusted) … (" in summary and len(summary) < 3300


def test_a_dcgm_capture_without_windows_is_nothing_to_gate_not_an_error(tmp_path: Path) -> None:
    """A dcgm-exporter scrape of memory and codec fields only (corpus pull 736): rooftop reads it, no
    window can be built; the self-diff exits 0 with the reason (was exit 2, 'has no DCGM windows')."""
    from click.testing import CliRunner

    from rooftop.cli.commands import main

    f = tmp_path / "fb.prom"
    f.write_text('DCGM_FI_DEV_FB_FREE{gpu="0",modelName="NVIDIA A30"} 2207\n'
                 'DCGM_FI_DEV_DEC_UTIL{gpu="0",modelName="NVIDIA A30"} 46\n')
    out = tmp_path / "d.md"
    r = CliRunner().invoke(main, ["diff", str(f), str(f), "--fail-on", "0", "-q", "--md", str(out), "--no-html"])
    assert r.exit_code == 0, r.output
    md = out.read_text()
    assert md.count("**NO VERDICT**: Nothing to gate: ") == 1 and "holds no DCGM window" in md
    assert "- Test: none run: no owners on both sides" in md and "No window on either side." in md
    b = prom(tmp_path / "b.prom", {"ns-train": 0.80})
    v = run_diff(str(f), str(b), fail_on=5.0, device=None, command="test")["verdict"]
    assert not v["fail"] and v["summary"] == "no efficiency on both sides: no verdict"
    assert v["reason"].startswith(f"Nothing to gate: {f} holds no DCGM window")


def _smi(path: Path, util: int, n: int = 120) -> Path:
    """nvidia-smi --query-gpu CSV, one GPU sampled every 10 s at ``util`` % (+ a small wobble)."""
    rows = ["timestamp, index, name, utilization.gpu [%], memory.used [MiB]"]
    for k in range(n):
        rows.append(f"2025/01/01 00:{k * 10 // 60:02d}:{k * 10 % 60:02d}.000, 0, NVIDIA H100 80GB HBM3, "
                    f"{util + (k % 3) - 1} %, 1000 MiB")
    path.write_text("\n".join(rows) + "\n")
    return path


def test_gpu_utilisation_is_the_efficiency_where_no_activity_field_is_collected(tmp_path: Path) -> None:
    doc = run_diff(str(_smi(tmp_path / "b.csv", 80)), str(_smi(tmp_path / "c.csv", 40)), fail_on=5.0, device=None,
                   command="test")
    (reg,) = doc["verdict"]["regressions"]
    assert reg["metric"] == "gpu_util" and reg["owner"] == "GPU 0" and reg["change"] == pytest.approx(-0.5, abs=0.02)
    assert "GPU 0 GPU utilisation 0.80 → 0.40 (-50 %, p=" in doc["verdict"]["reason"]
    assert "| GPU 0 | 0.80 → 0.40 | GPU utilisation | -50.0 % |" in render_markdown(doc)


def test_an_owner_measured_by_different_metrics_is_not_compared_and_linted(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"ns-a": 0.80})
    cand = tmp_path / "c.prom"
    cand.write_text("\n".join(
        f'DCGM_FI_DEV_GPU_UTIL{{gpu="0",Hostname="node-a",modelName="NVIDIA H100 80GB HBM3",namespace="ns-a",'
        f'pod="ns-a-0"}} 40 {1_735_689_600_000 + k * 10_000}' for k in range(120)) + "\n")
    doc = run_diff(str(base), str(cand), fail_on=5.0, device=None, command="test")
    assert not doc["window_series"] and not doc["verdict"]["fail"]
    (lint,) = [x for x in doc["lint"] if x["code"] == "diff-owner-metric-differs"]
    assert lint["message"].endswith("none in common (SM activity, GR-engine activity, GPU utilisation): namespace ns-a")


def test_the_dcgm_demo_pair_fails_on_the_owners_that_lost_efficiency() -> None:
    d = FIXTURES / "diff"
    doc = run_diff(str(d / "dcgm_baseline.prom"), str(d / "dcgm_candidate.prom"), fail_on=5.0, device=None,
                   command="test")
    v = doc["verdict"]
    assert v["fail"] and [r["owner"] for r in v["regressions"]] == ["batch", "train"]
    serve = next(s for s in doc["window_series"] if s["owner"] == "serve")
    assert serve["status"] == "within threshold" and abs(serve["change"]) < 0.01
    batch = v["regressions"][0]
    assert batch["idle_share_base"] == 0.0 and batch["idle_share_cand"] == pytest.approx(0.5)
    for f in ("dcgm_baseline.prom", "dcgm_candidate.prom"):
        assert not run_diff(str(d / f), str(d / f), fail_on=0.0, device=None, command="test")["verdict"]["fail"]


@pytest.mark.parametrize("other", ["kern_sum.csv", "stats_console.txt", "steps.json"])
def test_an_nsys_stats_summary_is_nothing_to_gate(other: str) -> None:
    """Self-diff of a summary-only input was an internal error (its timeline entry has no gaps)."""
    f = FIXTURES / "trace" / "kern_sum.csv"
    doc = run_diff(str(f), str(FIXTURES / "trace" / other), fail_on=0.0, device=None, command="test")
    v = doc["verdict"]
    assert not v["fail"] and v["summary"] == "summary-only input: no verdict" and not v["regressions"]
    assert v["reason"].startswith(f"Nothing to gate: {f}")
    assert "nsys export --type sqlite" in v["reason"]
    assert "**NO VERDICT**: Nothing to gate" in render_markdown(doc)
