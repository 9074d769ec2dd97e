"""``rooftop trend``: each family's time across N runs, its between-run noise band, the run where a
change started (docs/formulas.md#trend; issue 28 item 7)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from rooftop.analyzer.diff.trend import detect, run_trend
from rooftop.analyzer.schema import validate_document
from rooftop.errors import InputError
from tests.conftest import FIXTURES, corpus_dir
from tests.test_diff import _analysis_doc, frame, kernel


def test_detect_hand_computed_step_outlier_and_noise() -> None:
    # 1.00, 1.02, 0.98, 1.01 -> centre 1.005, MAD 0.01 (x1.4826): band ±max(5 %, 3σ=4.4 %) = ±0.05025
    steady = [1.00, 1.02, 0.98, 1.01]
    d = detect([*steady, 1.30, 1.31, 1.29], min_effect=5)
    assert d["changes"] == [{"run": 4, "direction": "slower", "change": pytest.approx(1.30 / 1.005 - 1),
                             "confirmed": True}]
    band = d["bands"][4]
    assert band["centre"] == pytest.approx(1.005) and band["high"] == pytest.approx(1.005 + 0.05025)
    assert d["noise_pct"] == pytest.approx(100 * 1.4826 * 0.01 / 1.005, rel=1e-3)
    assert d["bands"][5]["centre"] == pytest.approx(1.30)  # the reference restarted at the change
    outlier = detect([*steady, 1.30, 1.00, 1.01], min_effect=5)
    assert outlier["changes"] == []  # one run out, the next back in: an outlier
    last = detect([*steady, 0.80], min_effect=5)
    assert last["changes"][0]["confirmed"] is False and last["changes"][0]["direction"] == "faster"
    gap = detect([1.0, np.nan, 1.0, 1.0], min_effect=5)  # a run without the family is skipped
    assert gap["bands"][1] is None and gap["changes"] == []


def _runs(tmp_path: Path, n: int = 8, seed: int = 3) -> list[str]:
    """``steady``: 2 % between-run noise; ``stepped``: +25 % from run 5 on; ``blip``: +40 % in run 3 only."""
    rng = np.random.default_rng(seed)
    paths = []
    for i in range(n):
        run_factor = rng.normal(1.0, 0.02)
        rows = []
        for _ in range(20):
            rows.append(kernel("steady", 1e-3 * run_factor * rng.lognormal(0, 0.002)))
            rows.append(kernel("stepped", 2e-4 * (1.25 if i >= 4 else 1.0) * rng.lognormal(0, 0.002), grid=64))
            rows.append(kernel("blip", 5e-5 * (1.4 if i == 2 else 1.0) * rng.lognormal(0, 0.002), grid=8))
        p = tmp_path / f"run{i}.json"
        p.write_text(json.dumps(_analysis_doc(frame(rows))), encoding="utf-8")
        paths.append(str(p))
    return paths


def test_trend_flags_the_run_where_a_change_started(tmp_path: Path) -> None:
    doc = run_trend(_runs(tmp_path), command="test")
    validate_document(doc)
    assert doc["kind"] == "trend"
    t = doc["trend"]
    fams = {f["key"].split(" ")[0]: f for f in t["families"]}
    assert [f["key"].split(" ")[0] for f in t["families"]] == ["steady", "stepped", "blip"]  # by total time
    assert [(c["run"], c["direction"], c["confirmed"]) for c in fams["stepped"]["changes"]] == [(4, "slower", True)]
    assert fams["stepped"]["changes"][0]["change"] == pytest.approx(0.25, abs=0.01)
    assert fams["blip"]["changes"] == [] and fams["steady"]["changes"] == []
    assert 0.5 < fams["steady"]["noise_pct"] < 5  # the 2 % between-run noise, measured
    assert all(r is not None and r["n"] == 20 for r in fams["steady"]["runs"])
    assert t["summary"].startswith("1 change(s) over 8 runs: stepped (grid 64, block 256) slower from run 5 (+25 %)")
    assert [c["key"].split(" ")[0] for c in t["changes"]] == ["stepped"]


def test_trend_of_ncu_exports_and_timelines() -> None:
    f = FIXTURES / "diff"
    doc = run_trend([str(f / "baseline.raw.csv")] * 3 + [str(f / "candidate.raw.csv")] * 2, command="test")
    (c,) = doc["trend"]["changes"]
    assert c["family"].startswith("stencil_2d") and c["run"] == 3 and c["confirmed"]
    tr = corpus_dir("trace")
    before = str(tr / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite")
    doc = run_trend([before, before.replace("before", "after")], command="test")
    labels = [x["label"] for x in doc["trend"]["families"]]
    assert labels[0].startswith("GPU ") and all(x["runs"][0] is not None for x in doc["trend"]["families"][:5])


def test_trend_needs_two_runs_and_readable_inputs(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="at least two runs"):
        run_trend([str(FIXTURES / "diff" / "baseline.raw.csv")])
    with pytest.raises(InputError, match="does not exist"):
        run_trend([str(tmp_path / "nope.json"), str(tmp_path / "nope2.json")])


def test_run_values_drop_launches_without_duration(tmp_path: Path) -> None:
    rows = [kernel("a", 1e-3), {**kernel("a", 1e-3), "duration_s": None}]
    paths = []
    for i in range(2):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(_analysis_doc(frame(rows))), encoding="utf-8")
        paths.append(str(p))
    (fam,) = run_trend(paths)["trend"]["families"]
    assert fam["runs"][0] == {"n": 1, "median_s": 1e-3, "total_s": 1e-3}


def test_trend_cli_writes_small_multiples_and_json(tmp_path: Path) -> None:
    import xml.etree.ElementTree as ET

    from click.testing import CliRunner

    from rooftop.cli.commands import main

    paths = _runs(tmp_path, n=6)
    out = {e: tmp_path / f"t.{e}" for e in ("html", "md", "json")}
    r = CliRunner().invoke(main, ["trend", *paths, "--html", str(out["html"]), "--md", str(out["md"]),
                                  "--json", str(out["json"])])
    assert r.exit_code == 0, r.output
    assert "1 change(s) over 6 runs: stepped" in r.output
    doc = json.loads(out["json"].read_text())
    assert doc["kind"] == "trend" and len(doc["trend"]["families"]) == 3
    page = out["html"].read_text()
    svgs = [m for m in page.split('<svg xmlns="http://www.w3.org/2000/svg"')[1:] if 'class="multiple"' in m[:200]]
    assert len(svgs) == 3  # one small multiple per family
    for s in svgs:
        ET.fromstring('<svg xmlns="http://www.w3.org/2000/svg"' + s.split("</svg>")[0] + "</svg>")  # well-formed
    stepped = next(s for s in svgs if "stepped" in s[:600])
    assert stepped.count('stroke="#c92a2a"') == 1  # the change ring, at run 5
    assert "run 5: slower +25" in stepped
    md = out["md"].read_text()
    assert "| stepped (grid 64, block 256) | 5 | slower |" in md
    assert CliRunner().invoke(main, ["trend", paths[0]]).exit_code == 2  # one run: a usage error


def test_trend_report_escapes_family_names(tmp_path: Path) -> None:
    from rooftop.reports.html import render_html

    evil = '<script>alert(1)</script>"&'
    rows = [kernel(evil, 1e-3) for _ in range(3)]
    paths = []
    for i in range(3):
        p = tmp_path / f"r{i}.json"
        p.write_text(json.dumps(_analysis_doc(frame(rows))), encoding="utf-8")
        paths.append(str(p))
    page = render_html(run_trend(paths))
    assert "<script>alert(1)" not in page and "&lt;script&gt;" in page
