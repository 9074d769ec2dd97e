"""``rooftop fleet --kernels`` and ``rooftop analyze`` (ncu + DCGM): the kernel ↔ DCGM join end to end."""

from __future__ import annotations

import json
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
from gen_fleet import REGIMES, write_fleet  # noqa: E402

DEMO = str(ROOT / "fixtures" / "ncu" / "demo.raw.csv")
PROM = str(ROOT / "fixtures" / "dcgm" / "prom_scrapes_phases.prom")
START = datetime(2026, 11, 20, tzinfo=timezone.utc)
# REGIMES columns: 1001 gr, 1002 sm, 1003 occupancy, 1004 tensor, 1005 dram, ...
TRAINING = dict(zip(("gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_active"),
                    REGIMES["training"], strict=False))


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    # one host, 2 GPUs, 600 s of the "training" regime; segment 1800 s -> one job per GPU:
    # label_code = segment * gpus + gpu -> gpu 0 runs "train-0000-job0", gpu 1 "train-0000-job1"
    root = tmp_path_factory.mktemp("joinds")
    write_fleet(root, hosts=1, gpus=2, seconds=600, start=START, prefix="train", regime="training")
    return root


def _run(args: list[str]):
    return CliRunner().invoke(main, args, catch_exceptions=False)


def _fleet(dataset: Path, tmp_path: Path, *extra: str):
    out = tmp_path / "f.json"
    res = _run(["fleet", str(dataset), "--json", str(out), "--md", str(tmp_path / "f.md"),
                "--html", str(tmp_path / "f.html"), "-q", *extra])
    return res, out


def test_fleet_kernels_job_gives_predicted_vs_observed(dataset, tmp_path):
    res, out = _fleet(dataset, tmp_path, "--kernels", DEMO, "--job", "train-0000-job0")
    assert res.exit_code == 0, res.output
    join = json.loads(out.read_text())["kernel_join"]
    sel = join["selection"]
    # 600 s of gpu 0 in 60 s windows -> 10 windows, 1 GPU
    assert sel["filter"] == "job = train-0000-job0" and sel["windows"] == 10 and sel["gpus"] == 1
    assert sel["profiles"] == [DEMO]
    rows = {r["metric"]: r for r in join["comparison"]}
    assert {"gr_active", "sm_active", "tensor_active", "dram_active"} <= set(rows)
    for metric in ("gr_active", "sm_active", "tensor_active", "dram_active"):
        # observed = the regime's mean (noise sd 0.03 over 600 samples -> about 0.001)
        assert rows[metric]["observed"] == pytest.approx(TRAINING[metric], abs=0.01)
    busy = rows["gr_active"]["observed"]
    for metric in ("sm_active", "tensor_active", "dram_active"):
        r = rows[metric]
        assert r["predicted_busy"] == join["predicted"]["busy"][metric]
        assert r["expected"] == pytest.approx(busy * r["predicted_busy"])
    # the demo profile's mix: tensor ~0.40, DRAM ~0.53 busy; production: tensor 0.62, DRAM 0.35
    assert rows["tensor_active"]["verdict"] == "higher"
    assert rows["dram_active"]["verdict"] == "lower" and "cache" in rows["dram_active"]["meaning"]
    md = (tmp_path / "f.md").read_text()
    assert "## Kernels vs DCGM" in md and "tensor\\_active" in md and "higher" in md
    assert "Kernels vs DCGM" in (tmp_path / "f.html").read_text()


def test_fleet_kernels_host_selects_every_gpu(dataset, tmp_path):
    res, out = _fleet(dataset, tmp_path, "--kernels", DEMO, "--kernels", DEMO, "--host", "train-0000")
    assert res.exit_code == 0, res.output
    join = json.loads(out.read_text())["kernel_join"]
    assert join["selection"]["windows"] == 20 and join["selection"]["gpus"] == 2
    assert join["predicted"]["kernels"] > 0


def test_fleet_without_kernels_has_no_join(dataset, tmp_path):
    res, out = _fleet(dataset, tmp_path)
    assert res.exit_code == 0, res.output
    assert "kernel_join" not in json.loads(out.read_text())


@pytest.mark.parametrize(("extra", "says"), [
    (["--kernels", DEMO, "--job", "no-such-job"],
     "--job: 'no-such-job' matches no DCGM window in the period (job values present: "
     "train-0000-job0, train-0000-job1)"),
    (["--kernels", DEMO, "--pod", "ghost"], "'ghost' matches no DCGM window"),
    (["--job", "train-0000-job0"], "selects windows for --kernels, which is missing"),
    (["--kernels", DEMO, "--job", "a", "--pod", "b"], "select the job's windows with one filter"),
    (["--kernels", PROM, "--job", "a"], "holds no kernel launches"),
])
def test_fleet_join_bad_selection_is_one_line(dataset, tmp_path, extra, says):
    res, out = _fleet(dataset, tmp_path, *extra)
    assert res.exit_code == 2
    assert says in res.output and "Traceback" not in res.output
    assert len(res.output.strip().splitlines()) == 1
    assert not out.exists()


def test_analyze_ncu_and_dcgm_has_kernel_join(tmp_path):
    out = tmp_path / "a.json"
    res = _run(["analyze", DEMO, PROM, "--json", str(out), "--html", str(tmp_path / "a.html"), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    join = doc["kernel_join"]
    rows = {r["metric"]: r for r in join["comparison"]}
    # observed gr_active = mean of the windows' means (compare_signature averages windows)
    grs = [w["metrics"]["gr_active"] for w in doc["windows"] if w["metrics"].get("gr_active") is not None]
    assert rows["gr_active"]["observed"] == pytest.approx(sum(grs) / len(grs))
    assert join["predicted"]["kernels"] == len(doc["kernels"])
    assert rows["tensor_active"]["expected"] == pytest.approx(
        rows["gr_active"]["observed"] * join["predicted"]["busy"]["tensor_active"])


def test_analyze_ncu_only_has_no_kernel_join(tmp_path):
    out = tmp_path / "a.json"
    res = _run(["analyze", DEMO, "--json", str(out), "--html", str(tmp_path / "a.html"), "-q"])
    assert res.exit_code == 0, res.output
    assert "kernel_join" not in json.loads(out.read_text())


def test_analyze_reports_show_the_kernel_join(tmp_path: Path) -> None:
    html, md = tmp_path / "r.html", tmp_path / "r.md"
    res = CliRunner().invoke(main, ["analyze", str(ROOT / "fixtures" / "ncu" / "demo.raw.csv"),
                                    str(ROOT / "fixtures" / "dcgm" / "prom_scrapes_phases.prom"),
                                    "--html", str(html), "--md", str(md), "-q"])
    assert res.exit_code == 0, res.output
    assert "Kernels vs DCGM" in html.read_text() and "## Kernels vs DCGM" in md.read_text()
