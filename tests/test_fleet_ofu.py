"""The OFU efficiency estimate (issue 24, "Efficiency estimate per owner"; docs/formulas.md#ofu):
tensor pipe activity x SM clock / max SM clock per window, GPU-hour-weighted per owner, ``unknown``
(null, never 0) where a field it needs is absent. Hand-computed on fixtures/make_dcgm.py OFU_GPUS."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from fixtures.make_dcgm import prom_fleet_ofu
from rooftop.cli.commands import main


def _fleet(tmp_path: Path) -> tuple[dict[str, Any], str, str]:
    src = tmp_path / "ofu.prom"
    src.write_text(prom_fleet_ofu())
    ds = tmp_path / "ds"
    res = CliRunner().invoke(main, ["ingest", str(src), "--to", str(ds), "-q"])
    assert res.exit_code == 0, res.output
    out, html, md = tmp_path / "f.json", tmp_path / "f.html", tmp_path / "f.md"
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "--html", str(html), "--md", str(md),
                                    "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text()), html.read_text(), md.read_text()


def test_ofu_per_owner_is_gpu_hour_weighted_and_unknown_without_fields(tmp_path: Path) -> None:
    doc, page, md = _fleet(tmp_path)
    owners = {o["owner"]: o for o in doc["fleet"]["owners"]}
    # GPU 0: 0.6 x 1650/1980 = 0.5 for 1 h; GPU 4: 0.3 x 1980/1980 = 0.3 for 0.5 h
    assert abs(owners["train"]["ofu"] - (0.5 * 1.0 + 0.3 * 0.5) / 1.5) < 1e-9
    assert abs(owners["train"]["ofu_hours"] - 1.5) < 1e-9
    # HMMA 0.2 + IMMA 0.1 without field 1004, x 990 / the device table's H100 SXM boost 1980 MHz
    assert abs(owners["infer"]["ofu"] - 0.15) < 1e-9
    for o in ("noclock", "fp32"):  # no SM clock; no tensor field: unknown, never 0
        assert owners[o]["ofu"] is None and owners[o]["ofu_hours"] == 0.0
    assert "efficiency (OFU)" in page and "arXiv:2605.20799" in page and "unknown" in page
    assert "| OFU |" in md or "OFU" in md


def test_ofu_per_window_in_analyze(tmp_path: Path) -> None:
    src = tmp_path / "ofu.prom"
    src.write_text(prom_fleet_ofu())
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(src), "--window", "60", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    wins = json.loads(out.read_text())["windows"]
    by_gpu: dict[str, set[Any]] = {}
    for w in wins:
        by_gpu.setdefault(w["gpu"], set()).add(None if w["est_ofu"] is None else round(w["est_ofu"], 12))
    assert by_gpu == {"0": {0.5}, "4": {0.3}, "1": {0.15}, "2": {None}, "3": {None}}
    ev = next(w for w in wins if w["gpu"] == "0")["evidence"]
    assert any(e.startswith("est. OFU 0.50 (tensor pipe 0.60 x SM clock 1650 / max 1980 MHz") for e in ev)
