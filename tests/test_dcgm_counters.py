"""DCGM 4.6 cumulative counters (fields 1084-1096) as exact window averages by differencing
(issue 24, "DCGM 4.6+ names"; docs/formulas.md#counters): sum of increases over sum of elapsed
cycles per window, a counter drop rejected and counted. Hand-computed on fixtures/make_dcgm.py
prom_counters (unequal intervals, so a mean of per-interval ratios would differ)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from click.testing import CliRunner

from fixtures.make_dcgm import prom_counters
from rooftop.analyzer.windows.counters import difference
from rooftop.cli.commands import main


def _src(tmp_path: Path) -> Path:
    src = tmp_path / "counters.prom"
    src.write_text(prom_counters())
    return src


def _windows(doc: dict[str, Any]) -> list[dict[str, Any]]:
    return sorted(doc["windows"], key=lambda w: w["start"])


def test_analyze_exact_window_ratios_and_reset_lint(tmp_path: Path) -> None:
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(_src(tmp_path)), "--window", "60", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    wins = _windows(doc)
    assert len(wins) == 2
    for w in wins:
        assert w["metrics"]["sm_active"] == pytest.approx(0.75)
        assert w["metrics"]["tensor_active"] == pytest.approx(0.4)
    [lint] = [x for x in doc["lint"] if x["code"] == "dcgm-counter-reset"]
    assert lint["message"].startswith("1 interval(s) rejected") and "10 read" in lint["message"]


def test_fleet_reads_the_counters_too(tmp_path: Path) -> None:
    ds, out = tmp_path / "ds", tmp_path / "f.json"
    assert CliRunner().invoke(main, ["ingest", str(_src(tmp_path)), "--to", str(ds), "-q"]).exit_code == 0
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    for w in _windows(json.loads(out.read_text())):
        assert w["metrics"]["sm_active"] == pytest.approx(0.75)


def test_difference_rejects_drops_and_skips_gaps() -> None:
    t = pd.to_datetime([0, 10, 20, 30], unit="s", utc=True)
    df = pd.DataFrame({"timestamp": list(t) * 2, "host": "h", "gpu": "0", "uuid": None, "mig": None,
                       "field_id": [1084] * 4 + [1085] * 4,
                       "value": [100.0, 200.0, 50.0, 150.0, 10.0, 60.0, 5.0, 55.0]})
    d = difference(df)
    assert (d.intervals, d.resets) == (2, 1)
    got = d.samples.sort_values(["timestamp", "field_id"])
    assert got["value"].tolist() == [100.0, 50.0, 100.0, 50.0]  # increases at 10 s and 30 s; 20 s dropped


def test_pcie_byte_totals_become_rates_in_the_links_table(tmp_path: Path) -> None:
    """1091/1092: the increase over the interval's length; 8e9 bytes in 10 s then 2e9 in 5 s."""
    t0 = 1_735_689_600_000
    src = tmp_path / "pcie.prom"
    lines = [f'DCGM_FI_PROF_PCIE_TX_BYTES_TOTAL{{gpu="0",Hostname="n1"}} {v:.0f} {t0 + ms}'
             for v, ms in ((1e12, 0), (1e12 + 8e9, 10_000), (1e12 + 10e9, 15_000))]
    src.write_text("\n".join(lines) + "\n")
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(src), "--window", "60", "--json", str(out), "-q"])
    assert res.exit_code == 0, res.output
    [row] = json.loads(out.read_text())["links"]
    assert (row["link"], row["direction"]) == ("PCIe", "tx")
    assert row["mean_bytes_s"] == pytest.approx((8e8 + 4e8) / 2) and row["max_bytes_s"] == pytest.approx(6e8)
    assert "1091" in row["field"]
