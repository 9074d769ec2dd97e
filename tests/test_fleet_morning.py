"""The fleet report's first screen (issue 24, "The morning report"): GPU-hours by owner split busy /
idle / unknown against the previous period, GPUs a workload holds while idle, data gaps per host
(docs/formulas.md#fleet "Owners"), hand-computed on a generated two-day dataset."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from rooftop.cli.commands import main

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
DAY = 86_400_000
STEP = 60_000  # one scrape a minute


def write_fleet(path: Path) -> Path:
    """Two days of two hosts: n1 GPU 0 busy for job 'train' (hpc_job label), n1 GPU 1 held by
    pod ml/serve but idle, n2 GPU 0 with no workload label and no activity field (power only),
    sampled for the second half of day 2 only."""
    lines = []
    for day in (0, 1):
        for k in range(120):  # two hours a day
            t = T0 + day * DAY + k * STEP
            lines.append(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="0",Hostname="n1",hpc_job="train"}} 0.9 {t}')
            lines.append(f'DCGM_FI_PROF_SM_ACTIVE{{gpu="0",Hostname="n1",hpc_job="train"}} 0.8 {t}')
            lines.append(f'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{{gpu="0",Hostname="n1",hpc_job="train"}} 0.7 {t}')
            lines.append(f'DCGM_FI_PROF_GR_ENGINE_ACTIVE{{gpu="1",Hostname="n1",namespace="ml",pod="serve"}} 0.0 {t}')
            if day == 1 and k >= 60:
                lines.append(f'DCGM_FI_DEV_POWER_USAGE{{gpu="0",Hostname="n2"}} 70 {t}')
    path.write_text("\n".join(lines) + "\n")
    return path


def morning(tmp_path: Path) -> tuple[dict[str, Any], Path]:
    ds = tmp_path / "ds"
    res = CliRunner().invoke(main, ["ingest", str(write_fleet(tmp_path / "f.prom")), "--to", str(ds), "-q"])
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    html = tmp_path / "f.html"
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "--html", str(html), "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text()), html


def test_gpu_hours_by_owner_with_the_previous_period(tmp_path: Path) -> None:
    doc, _ = morning(tmp_path)
    owners = {(o["kind"], o["owner"]): o for o in doc["fleet"]["owners"]}
    train = owners[("job", "train")]
    assert abs(train["gpu_hours"] - 2.0) < 1e-9 and abs(train["busy_hours"] - 2.0) < 1e-9
    assert abs(train["previous_gpu_hours"] - 2.0) < 1e-9  # the day before: the same two hours
    serve = owners[("pod", "ml/serve")]
    assert abs(serve["idle_hours"] - 2.0) < 1e-9 and serve["busy_hours"] == 0.0
    n2 = owners[("host", "n2")]  # no workload label: the host; power only: unknown
    assert abs(n2["unknown_hours"] - 1.0) < 1e-9 and n2["previous_gpu_hours"] is None


def test_allocated_but_idle_and_data_gaps(tmp_path: Path) -> None:
    doc, html = morning(tmp_path)
    [held] = doc["fleet"]["allocated_idle"]
    assert held["owner"] == "ml/serve" and held["host"] == "n1" and abs(held["idle_hours"] - 2.0) < 1e-9
    cover = {c["host"]: c for c in doc["fleet"]["coverage"]}
    # the period is the 24 h ending at the newest sample: n2's GPU has data for 1 h of it
    assert abs(cover["n2"]["coverage"] - 1.0 / 24.0) < 1e-6
    page = html.read_text()
    assert "Devices and ceilings" not in page or page.index("Who used the GPUs") < page.index("Devices and ceilings")
    assert page.index('id="owners"') < page.index('id="groups"') < page.index('id="findings"')
