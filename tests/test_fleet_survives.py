"""`fleet` over a dataset as it is (issue 30 items 4, 10): samples stored without a GPU (an exporter
block without labels, ingested by an older rooftop) are set aside with a lint, not an internal
error; one host whose clock is ahead does not choose the fleet's default day."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from click.testing import CliRunner, Result

from rooftop.analyzer.store.dataset import PartitionWriter
from rooftop.analyzer.store.manifest import Manifest
from rooftop.cli.commands import main
from rooftop.parsers.model import SAMPLE_SCHEMA

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
DAY = 86_400_000


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _scrapes(path: Path, host: str, t0: int, scrapes: int = 240) -> Path:
    lines = [f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{g}",Hostname="{host}"}} 0.5 {t0 + k * 15_000}'
             for k in range(scrapes) for g in range(2)]
    path.write_text("\n".join(lines) + "\n")
    return path


def _label_less(n: int) -> pa.Table:
    cols: dict[str, Any] = {c: pa.nulls(n, SAMPLE_SCHEMA.field(c).type) for c in SAMPLE_SCHEMA.names}
    cols["timestamp"] = pa.array([T0 + k * 15_000 for k in range(n)], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    cols["field_id"] = pa.array([1002] * n, pa.int32())
    cols["field"] = pa.array(["DCGM_FI_PROF_SM_ACTIVE"] * n, pa.string())
    cols["value"] = pa.array([0.7] * n, pa.float64())
    return pa.table(cols).cast(SAMPLE_SCHEMA)


def test_fleet_survives_a_dataset_holding_samples_without_a_gpu(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    res = _run("ingest", _scrapes(tmp_path / "n1.prom", "n1", T0), "--to", ds, "-q")
    assert res.exit_code == 0, res.output
    # what an older ingest stored from `DCGM_FI_PROF_SM_ACTIVE 0.7` lines (no label set at all)
    writer = PartitionWriter(ds, "legacy0000000000")
    writer.write(_label_less(120))
    files = writer.commit()
    manifest = Manifest.load(ds)
    manifest.entries.append({"path": str(tmp_path / "old.prom"), "sha256": "0" * 64, "size": 1, "records": 120,
                             "missing": 0, "rejected": 0, "files": files, "format": "prometheus-text",
                             "start": "2025-01-01T00:00:00+00:00", "end": "2025-01-01T00:29:45+00:00"})
    manifest.save()
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--json", out, "--html", tmp_path / "f.html")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    [lint] = [x for x in doc["lint"] if x["code"] == "samples-without-gpu"]
    assert lint["message"].startswith("120 sample(s) name no GPU")
    assert doc["windows"] and all(w["gpu"] in ("0", "1") and w["host"] == "n1" for w in doc["windows"])


def test_analyze_sets_aside_samples_without_a_gpu(tmp_path: Path) -> None:
    p = _scrapes(tmp_path / "a.prom", "n1", T0)
    with p.open("a") as fh:  # a label-less block (the parser may also reject it: either way no crash)
        fh.writelines(f"DCGM_FI_PROF_SM_ACTIVE 0.7 {T0 + k * 15_000}\n" for k in range(40))
    out = tmp_path / "a.json"
    res = _run("analyze", p, "--json", out, "--html", tmp_path / "a.html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["windows"] and all(w["gpu"] in ("0", "1") for w in doc["windows"])


def test_a_host_with_its_clock_ahead_does_not_choose_the_period(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    for host in ("n1", "n2", "n3"):
        res = _run("ingest", _scrapes(tmp_path / f"{host}.prom", host, T0), "--to", ds, "-q")
        assert res.exit_code == 0, res.output
    skewed = _scrapes(tmp_path / "n4.prom", "n4", T0 + 2 * DAY)  # n4's clock is two days ahead
    res = _run("ingest", skewed, "--to", ds, "-q")
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--json", out, "--html", tmp_path / "f.html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["fleet"]["period"]["until"].startswith("2025-01-01T00:59:45")
    assert {w["host"] for w in doc["windows"]} == {"n1", "n2", "n3"}  # the fleet's day, analysed
    [lint] = [x for x in doc["lint"] if x["code"] == "fleet-clock-ahead"]
    assert "n4 (to 2025-01-03" in lint["message"] and "--until" in lint["message"]
