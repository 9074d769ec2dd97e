"""Every GPU-hours number of the fleet report is in GPU-hours (issue 24: the "idle GPU-hours" card
read "15 s"): small values keep two significant digits, the card adds the GPU-seconds as a hint."""

from __future__ import annotations

import re
from pathlib import Path

from click.testing import CliRunner

from rooftop.cli.commands import main

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z


def test_fmt_gpu_hours_by_hand() -> None:
    from rooftop.reports.formatting import fmt_gpu_hours, gpu_seconds_hint

    assert fmt_gpu_hours(15 / 3600) == "0.0042"  # 15 GPU-seconds
    assert fmt_gpu_hours(1 / 3600) == "0.00028"
    assert fmt_gpu_hours(0.05) == "0.050"
    assert fmt_gpu_hours(0.1) == "0.10" and fmt_gpu_hours(2.0) == "2.00" and fmt_gpu_hours(0.0) == "0.00"
    assert fmt_gpu_hours(None) == "—" and fmt_gpu_hours(float("nan")) == "—"
    assert gpu_seconds_hint(15 / 3600) == " (15 GPU-s)" and gpu_seconds_hint(2.0) == "" and gpu_seconds_hint(0.0) == ""


def test_fleet_cards_and_tables_say_gpu_hours(tmp_path: Path) -> None:
    # GPU 0 idle for three 5 s scrapes (15 s covered), GPU 1 busy for the same 15 s (pod ml/train)
    lines = []
    for k in range(3):
        t = T0 + k * 5000
        lines.append(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",Hostname="n1"}} 0.0 {t}')
        lines.append(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="1",Hostname="n1",namespace="ml",pod="train"}} 0.9 {t}')
    src = tmp_path / "f.prom"
    src.write_text("\n".join(lines) + "\n")
    ds, html, md = tmp_path / "ds", tmp_path / "f.html", tmp_path / "f.md"
    res = CliRunner().invoke(main, ["ingest", str(src), "--to", str(ds), "-q"])
    assert res.exit_code == 0, res.output
    res = CliRunner().invoke(main, ["fleet", str(ds), "--html", str(html), "--md", str(md), "-q"])
    assert res.exit_code == 0, res.output
    page = html.read_text()
    card = re.search(r'<div class="kpi"><b>([^<]*)</b><span>idle GPU-hours([^<]*)</span>', page)
    assert card is not None and card.group(1) == "0.0042" and card.group(2) == " (15 GPU-s)"  # was "15 s"
    total = re.search(r'<div class="kpi"><b>([^<]*)</b><span>GPU-hours([^<]*)</span>', page)
    assert total is not None and total.group(1) == "0.0083" and total.group(2) == " (30 GPU-s)"
    # no GPU-hours cell or card anywhere shows seconds alone
    assert not re.search(r">\d+ s<", page)
    text = md.read_text()
    assert "0.0083 GPU-hours (30 GPU-s)" in text
    hours = text[:text.index("## Top findings")]  # the GPU-h tables (a finding's est. saving is a time)
    assert "| 0.0042 |" in hours and not re.search(r"\| \d+ s \|", hours)


def test_a_window_findings_saving_is_gpu_time_not_wall_time() -> None:
    # a DCGM window finding's saving is GPU time summed over GPUs: it read "108 s" beside a title in
    # GPU-seconds; a kernel finding's saving stays a time
    from datetime import datetime, timezone

    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.parsers.source import ParseOptions
    from rooftop.reports.formatting import fmt_saving
    from rooftop.reports.markdown import render_markdown
    from tests.conftest import FIXTURES

    assert fmt_saving({"est_saving_s": 108.0, "gpu_hours": 0.067}) == "0.030 GPU-h (108 GPU-s)"
    assert fmt_saving({"est_saving_s": 1800.0, "gpu_hours": 2.0}) == "0.50 GPU-h"
    assert fmt_saving({"est_saving_s": 1.5e-6}) == "1.5 µs" and fmt_saving({"est_saving_s": None}) == "—"
    # a dmon file has no timestamps: a fixed start, as the goldens pass, not the checkout's mtime
    opts = ParseOptions(start=datetime(2026, 11, 20, tzinfo=timezone.utc))
    md = render_markdown(run_analysis([str(FIXTURES / "dcgm" / "dmon_v2_phases.txt")], options=opts))
    row = next(line for line in md.splitlines() if "dcgm-overhead-bound" in line)
    assert "| 0.030 GPU-h (108 GPU-s) |" in row and "| 108 s |" not in row
