"""Two DCGM captures or two fleet periods diffed: GPU-hours, label shares, per-owner efficiency, the
same gate (docs/formulas.md#windows-diff; issue 28 item 6)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.analyzer.diff.sides import run_diff
from rooftop.cli.commands import main
from rooftop.errors import InputError
from tests.conftest import FIXTURES

START_MS = 1_735_689_600_000
WOBBLE = (0.0, 0.004, -0.002, 0.003, -0.004, 0.001)


def prom(path: Path, sm: dict[str, float], minutes: int = 20, step_s: int = 10) -> Path:
    """Prometheus text with timestamps: one GPU per namespace, GR/SM/tensor/DRAM activity every
    ``step_s``; SM activity of namespace ``ns`` is ``sm[ns]`` (+ a small fixed wobble)."""
    lines = []
    for k in range(minutes * 60 // step_s):
        ts = START_MS + k * step_s * 1000
        w = WOBBLE[k % len(WOBBLE)]
        for gpu, (ns, v) in enumerate(sorted(sm.items())):
            labels = f'gpu="{gpu}",Hostname="node-a",modelName="NVIDIA H100 80GB HBM3",namespace="{ns}",pod="{ns}-0"'
            vals = {"DCGM_FI_PROF_GR_ENGINE_ACTIVE": min(1.0, v + 0.05) if v else 0.0,
                    "DCGM_FI_PROF_SM_ACTIVE": v + w if v else 0.0,
                    "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE": 0.5 * v, "DCGM_FI_PROF_DRAM_ACTIVE": 0.2 * v}
            lines += [f"{name}{{{labels}}} {x:.6f} {ts}" for name, x in vals.items()]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_less_efficient_owner_fails_the_gate_and_is_named(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"ns-train": 0.80, "ns-serve": 0.40})
    cand = prom(tmp_path / "c.prom", {"ns-train": 0.60, "ns-serve": 0.40})
    doc = run_diff(str(base), str(cand), fail_on=5.0, device=None, command="test")
    v = doc["verdict"]
    assert v["fail"] and v["summary"] == "FAIL: 1 owner(s) less efficient beyond 5 %"
    (reg,) = v["regressions"]
    assert reg["owner"] == "ns-train" and reg["owner_kind"] == "namespace" and reg["metric"] == "sm_active"
    assert reg["decided_by"] == "effect+significance" and reg["change"] == pytest.approx(-0.25, abs=0.01)
    assert v["reason"].startswith("1 owner(s) less efficient beyond 5 %: namespace ns-train SM activity 0.80 → 0.60 "
                                  "(-25 %, p=")
    serve = next(r for r in doc["window_series"] if r["owner"] == "ns-serve")
    assert serve["status"] == "within threshold" and serve["change"] == 0.0
    gh = doc["windows_diff"]["gpu_hours"]
    assert gh["baseline"] == pytest.approx(gh["candidate"]) and gh["baseline"] > 0
    same = run_diff(str(base), str(base), fail_on=0.0, device=None, command="test")["verdict"]
    assert not same["fail"] and not same["regressions"] and not same["improvements"]


def test_label_shares_are_reported_not_gated(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"a": 0.9, "b": 0.9})
    cand = prom(tmp_path / "c.prom", {"a": 0.9, "b": 0.0})  # b goes idle: half the GPU time
    doc = run_diff(str(base), str(cand), fail_on=5.0, device=None, command="test")
    idle = doc["windows_diff"]["labels"]["idle"]["share"]
    assert idle["baseline"] == 0.0 and idle["candidate"] == pytest.approx(0.5) and idle["points"] == pytest.approx(50)
    assert "idle 0 % → 50 % (+50 points)" in doc["verdict"]["reason"]
    (reg,) = doc["verdict"]["regressions"]  # b's efficiency fell to 0: the gate sees it
    assert reg["owner"] == "b" and reg["change"] == -1.0


def test_saved_analyses_and_fleet_periods(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"ns-train": 0.80})
    cand = prom(tmp_path / "c.prom", {"ns-train": 0.50})
    runner = CliRunner()
    outs = {}
    for name, src in (("b", base), ("c", cand)):
        outs[name] = tmp_path / f"{name}.json"
        r = runner.invoke(main, ["analyze", str(src), "-q", "--json", str(outs[name]), "--html",
                                 str(tmp_path / f"{name}.html")])
        assert r.exit_code == 0, r.output
        ds = tmp_path / f"ds-{name}"
        r = runner.invoke(main, ["ingest", str(src), "--to", str(ds), "--finished", "-q"])
        assert r.exit_code == 0, r.output
        outs[f"fleet-{name}"] = tmp_path / f"fleet-{name}.json"
        r = runner.invoke(main, ["fleet", str(ds), "--since", "2025-01-01T00:00:00Z", "--until", "2025-01-02T00:00:00Z",
                                 "--by", "namespace", "-q", "--json", str(outs[f"fleet-{name}"]), "--html", str(tmp_path / "f.html")])
        assert r.exit_code == 0, r.output
    for b, c, source in (("b", "c", "analysis"), ("fleet-b", "fleet-c", "fleet")):
        out = tmp_path / "d.json"
        r = runner.invoke(main, ["diff", str(outs[b]), str(outs[c]), "--fail-on", "5", "-q", "--json", str(out),
                                 "--html", str(tmp_path / "d.html")])
        doc = json.loads(out.read_text())
        assert r.exit_code == 1, (source, doc["verdict"]["reason"])
        assert doc["sides"]["baseline"]["source"] == source
        assert [x["owner"] for x in doc["verdict"]["regressions"]] == ["ns-train"]


def test_fixture_self_diff_passes_with_any_fail_on() -> None:
    f = FIXTURES / "dcgm" / "prom_tsdb_mig.prom"
    v = run_diff(str(f), str(f), fail_on=0.0, device=None, command="test")["verdict"]
    assert not v["fail"] and v["decided_by"]["effect"] == 2  # ns1 and ns2 (MIG instances)


def test_windows_against_kernels_is_refused(tmp_path: Path) -> None:
    base = prom(tmp_path / "b.prom", {"a": 0.9})
    with pytest.raises(InputError, match="holds DCGM windows"):
        run_diff(str(base), str(FIXTURES / "ncu" / "demo.raw.csv"), fail_on=5.0, device=None, command="test")
