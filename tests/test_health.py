"""GPU health from the fields already in the inputs (issue 24 "Health"; docs/formulas.md#health):
one test per rule on the generated exporter file (fixtures/make_dcgm.py ``prom_health``), the
report sections and their escaping, the fleet's first screen on both engines, and real corpus files."""

from __future__ import annotations

import json
import sys
from datetime import timedelta
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pytest

from rooftop.analyzer.health import analyze_health
from rooftop.analyzer.health.gpus import health_first
from rooftop.analyzer.health.partials import combine_health, health_partial
from rooftop.parsers import parse_path
from tests.conftest import corpus_dir

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "fixtures"))
import make_dcgm  # noqa: E402

FIXTURE = ROOT / "fixtures" / "dcgm" / "prom_health.prom"
T0 = make_dcgm.START


def _at(s: int) -> str:
    return (T0 + timedelta(seconds=s)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def health() -> dict[str, dict[str, Any]]:
    recs = analyze_health(parse_path(FIXTURE).samples)
    return {r["gpu"]: r for r in recs}


def _events(rec: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    return [e for e in rec["events"] if e["kind"] == kind]


def test_fixture_is_what_the_generator_writes() -> None:
    assert FIXTURE.read_text(encoding="utf-8") == make_dcgm.prom_health()


def test_xid_named_with_its_span(health: dict[str, dict[str, Any]]) -> None:
    (x,) = _events(health["0"], "xid")
    assert (x["code"], x["severity"], x["samples"]) == (79, "high", 4)  # scrapes at 240, 255, 270, 285 s
    assert (x["first"], x["last"]) == (_at(240), _at(285))
    assert x["title"] == "XID 79 (GPU has fallen off the bus)"
    assert not _events(health["1"], "xid") and "XID errors" in health["1"]["checked"]  # 0 is no XID


def test_ecc_double_bit_volatile_and_aggregate_rise(health: dict[str, dict[str, Any]]) -> None:
    (vol,) = _events(health["0"], "ecc-dbe")
    assert vol["severity"] == "high" and vol["first"] == _at(300) and vol["samples"] == 20
    (new,) = _events(health["0"], "ecc-dbe-new")
    assert new["title"].startswith("2 new uncorrectable")  # 5 -> 7
    assert (new["first"], new["last"]) == (_at(285), _at(300))  # last at 5, first at 7
    assert "ECC" in health["1"]["checked"]  # aggregate 5 throughout: no rise, no event


def test_clock_event_bits(health: dict[str, dict[str, Any]]) -> None:
    assert [e["code"] for e in _events(health["0"], "clocks")] == [0x4]  # 0x1 (idle) is no event
    (cap,) = _events(health["0"], "clocks")
    assert (cap["first"], cap["last"], cap["severity"]) == (_at(120), _at(345), "low")
    assert [(e["code"], e["severity"]) for e in _events(health["1"], "clocks")] == [(0x20, "medium"), (0x40, "medium")]


def test_temperature_against_the_slowdown_temperature(health: dict[str, dict[str, Any]]) -> None:
    (hot,) = _events(health["1"], "temperature")
    assert (hot["first"], hot["last"], hot["samples"]) == (_at(420), _at(465), 4)
    assert not _events(health["0"], "temperature") and "temperature" in health["0"]["checked"]
    assert health["0"]["max_temp_c"] == 69 and health["0"]["slowdown_temp_c"] == 87


def test_power_at_the_enforced_limit(health: dict[str, dict[str, Any]]) -> None:
    (p,) = _events(health["0"], "power")
    assert (p["first"], p["last"], p["samples"]) == (_at(120), _at(345), 16)  # 695 W of 700 W = 99.3 %
    assert "enforced" in p["evidence"]
    assert not _events(health["1"], "power") and "power" in health["1"]["checked"]  # 500 W = 71 %


def test_power_advice_does_not_claim_capped_clocks() -> None:
    # power at the limit alone does not show the clocks were lowered (the real H100 capture: 1 sample at
    # 99 %, 1965 of 1980 MHz); the SW power cap clock-event reason does, and the advice names it
    from rooftop.analyzer.health.gpus import RECOMMENDATION
    assert "capped by power" not in RECOMMENDATION["power"] and "SW power cap" in RECOMMENDATION["power"]


def test_row_remap_pending(health: dict[str, dict[str, Any]]) -> None:
    (r,) = _events(health["1"], "remap-pending")
    assert (r["first"], r["samples"], r["severity"]) == (_at(540), 4, "medium")
    assert "row remapping" in health["0"]["checked"]  # failure and uncorrectable rows 0


def _prom(lines: list[str], path: Path) -> Path:
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


LAB = 'gpu="0",UUID="GPU-x",modelName="NVIDIA H100 80GB HBM3",Hostname="n1"'


def test_no_threshold_is_invented_and_absent_fields_are_not_healthy(tmp_path: Path) -> None:
    lines = [f"DCGM_FI_DEV_GPU_TEMP{{{LAB}}} 99 {1735689600000 + k * 15000}" for k in range(4)]
    lines += [f"DCGM_FI_DEV_POWER_USAGE{{{LAB}}} 700 {1735689600000 + k * 15000}" for k in range(4)]
    (rec,) = analyze_health(parse_path(_prom(lines, tmp_path / "t.prom")).samples)
    assert rec["events"] == [] and rec["severity"] is None  # 99 C, 700 W: no slowdown temp, no limit
    assert rec["no_threshold"] == ["temperature", "power"] and rec["max_temp_c"] == 99
    assert rec["checked"] == []
    assert rec["not_collected"] == ["XID errors", "ECC", "row remapping", "clock-event reasons"]


def test_power_limit_falls_back_to_the_management_limit(tmp_path: Path) -> None:
    ts = 1735689600000
    lines = [f"DCGM_FI_DEV_POWER_USAGE{{{LAB}}} 390 {ts}", f"DCGM_FI_DEV_POWER_MGMT_LIMIT{{{LAB}}} 400 {ts}",
             f"DCGM_FI_DEV_POWER_USAGE{{{LAB}}} 300 {ts + 15000}", f"DCGM_FI_DEV_POWER_MGMT_LIMIT{{{LAB}}} 400 {ts + 15000}"]
    (rec,) = analyze_health(parse_path(_prom(lines, tmp_path / "p.prom")).samples)
    assert rec["events"] == [] and rec["checked"][-1] == "power"  # 390 / 400 = 97.5 % < 98 %
    lines[0] = f"DCGM_FI_DEV_POWER_USAGE{{{LAB}}} 395 {ts}"  # 98.75 %
    (rec,) = analyze_health(parse_path(_prom(lines, tmp_path / "p2.prom")).samples)
    (p,) = rec["events"]
    assert p["kind"] == "power" and p["samples"] == 1 and "management" in p["evidence"]


def test_the_dcgm_3_throttle_name_is_field_112(tmp_path: Path) -> None:
    """dcgm-exporter on DCGM 3.x names field 112 DCGM_FI_DEV_CLOCK_THROTTLE_REASONS (fieldtable v3.3.9)."""
    ts = 1735689600000
    lines = [f"DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{{{LAB}}} 136 {ts}"]  # 0x88: HW slowdown + HW power brake
    res = parse_path(_prom(lines, tmp_path / "c.prom"))
    assert res.samples.column("field_id").to_pylist() == [112]
    (rec,) = analyze_health(res.samples)
    assert [(e["code"], e["severity"]) for e in rec["events"]] == [(0x8, "medium"), (0x80, "medium")]


def test_partials_combine_in_any_order() -> None:
    """The fleet engines' reduce: any split and order of the samples gives the same table."""
    t = parse_path(FIXTURE).samples
    whole = health_partial(t)
    n = t.num_rows
    pieces = [health_partial(t.slice(a, b - a)) for a, b in ((0, n // 3), (n // 3, n // 2), (n // 2, n))]
    for parts in (pieces, pieces[::-1], [pieces[1], pieces[0], pieces[2]]):
        pd.testing.assert_frame_equal(combine_health(parts), whole)
    pd.testing.assert_frame_equal(combine_health([combine_health(pieces[:2]), pieces[2]]), whole)


def test_span_keeps_the_period_only() -> None:
    t = parse_path(FIXTURE).samples
    lo = int(T0.timestamp() * 1000) + 300_000
    part = health_partial(t, span=(lo, lo + 300_000))  # 300..600 s: after the XID
    assert "xid" not in set(part["obs"]) and "nonzero" in set(part["obs"])


def test_health_findings_come_first() -> None:
    eff = [{"rank": 1, "severity": "high", "title": "idle"}]
    hl = [{"rank": 0, "severity": "low", "title": "power"}]
    assert [(f["rank"], f["title"]) for f in health_first(hl, eff)] == [(1, "power"), (2, "idle")]


@pytest.fixture(scope="module")
def analyzed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from rooftop.analyzer.pipeline import run_analysis

    return dict(run_analysis([str(FIXTURE)]))


def test_analyze_document_names_health_before_efficiency(analyzed: dict[str, Any]) -> None:
    f = analyzed["findings"]
    assert [x["rule"] for x in f[:2]] == ["health-xid", "health-remap-pending"]
    assert [x["severity"] for x in f[:2]] == ["high", "medium"]
    assert all(x.get("label") != "health" for x in f[2:]) and len(f) > 2  # the idle finding follows
    h = analyzed["health"]
    assert (h["gpus_total"], h["gpus_with_fields"], h["gpus_with_events"]) == (2, 2, 2)
    assert h["not_collected"] == []


def test_reports_draw_health(analyzed: dict[str, Any]) -> None:
    from rooftop.reports.html import render_html
    from rooftop.reports.markdown import render_markdown
    from rooftop.reports.terminal import summary_text

    html = render_html(analyzed)  # type: ignore[arg-type]
    assert 'id="health"' in html and "XID 79 (GPU has fallen off the bus)" in html
    assert "GPUs with health events first (docs/formulas.md#health); the rest ranked by" in html
    md = render_markdown(analyzed)  # type: ignore[arg-type]
    assert "## Health" in md and "row remap pending" in md
    lines = [x for x in summary_text(analyzed, width=0).splitlines() if x.startswith("  health: ")]  # type: ignore[arg-type]
    assert len(lines) == 2 and lines[0].startswith("  health: GPU node-h/0 (GPU-")
    assert json.loads(json.dumps(analyzed["health"]))["gpus"][0]["events"][0]["code"] == 79


def test_every_string_is_escaped(tmp_path: Path) -> None:
    from rooftop.analyzer.pipeline import run_analysis
    from rooftop.reports.html import render_html
    from rooftop.reports.markdown import render_markdown
    from rooftop.reports.terminal import summary_text

    host = "<img src=x onerror=alert(1)>|*x*\u202e"
    lab = f'gpu="0",UUID="GPU-<b>",modelName="NVIDIA H100 80GB HBM3",Hostname="{host}"'
    ts = 1735689600000
    lines = [f"DCGM_FI_DEV_XID_ERRORS{{{lab}}} 13 {ts + k * 15000}" for k in range(3)]
    lines += [f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{lab}}} 0.5 {ts + k * 15000}" for k in range(3)]
    doc = run_analysis([str(_prom(lines, tmp_path / "e.prom"))])
    assert doc["findings"][0]["rule"] == "health-xid"
    html = render_html(doc)
    assert "<img src=x" not in html and "GPU-<b>" not in html and "&lt;img src=x" in html
    md = render_markdown(doc)
    assert "<img" not in md and "GPU-<b>" not in md
    term = summary_text(doc, width=0)
    assert "\u202e" not in term and "health: GPU " in term


def _fleet(tmp_path: Path, files: list[Path], engine: str = "local") -> dict[str, Any]:
    from rooftop.analyzer.fleet.pipeline import run_fleet
    from rooftop.analyzer.store.ingest import ingest_files
    from rooftop.parsers.source import ParseOptions

    ds = tmp_path / "ds"
    if not ds.exists():
        ingest_files(files, ds, ParseOptions())
    return dict(run_fleet(ds, since=None, until=None, by=["host"], engine=engine, scheduler=None, workers=1,
                          window_s=60.0, device=None, top=10, command=""))


def test_fleet_first_screen_lists_health_events(tmp_path: Path) -> None:
    from rooftop.reports.html import render_html

    doc = _fleet(tmp_path, [FIXTURE])
    h = doc["fleet"]["health"]
    assert [r["gpu_key"] for r in h["gpus"]] == ["node-h/0", "node-h/1"]
    assert h["gpus"][0]["uuid"] == make_dcgm.UUIDS["0"] and h["gpus"][0]["severity"] == "high"
    assert (h["gpus_total"], h["gpus_with_events"]) == (2, 2)
    assert [f["rule"] for f in doc["findings"][:2]] == ["health-xid", "health-remap-pending"]
    html = render_html(doc)  # type: ignore[arg-type]
    owners = html.index("GPU-hours by owner")
    assert owners < html.index("<h3>Health events</h3>") < html.index('id="groups"')  # on the first screen
    assert "2 (1 high)" in html


def test_fleet_without_health_fields_says_so(tmp_path: Path) -> None:
    from rooftop.reports.html import render_html

    doc = _fleet(tmp_path, [ROOT / "fixtures" / "dcgm" / "prom_tsdb_mig.prom"])  # activity fields only
    assert doc["fleet"]["health"]["gpus_with_fields"] == 0 and doc["fleet"]["health"]["gpus"] == []
    assert "No health fields collected in this period" in render_html(doc)  # type: ignore[arg-type]


@pytest.mark.slow
def test_fleet_health_identical_on_both_engines(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    local = _fleet(tmp_path, [FIXTURE])
    dask = _fleet(tmp_path, [FIXTURE], engine="dask")
    assert local["fleet"]["health"] == dask["fleet"]["health"] and local["findings"] == dask["findings"]


def test_corpus_exporter_scrapes() -> None:
    """Real dcgm-exporter scrapes: XID 0 is checked (no event), temperature and power without a limit
    are reported as maxima with no event, and fields the scrape lacks are not collected."""
    d = corpus_dir("dcgm")
    (linode,) = analyze_health(parse_path(d / "linode__lke-ai-conformance__README.md.metrics.prom").samples)
    assert linode["events"] == [] and linode["checked"] == ["XID errors", "row remapping"]
    assert linode["no_threshold"] == ["temperature", "power"] and linode["max_temp_c"] == 48
    assert linode["not_collected"] == ["ECC", "clock-event reasons"]
    (vs,) = analyze_health(parse_path(
        d / "vsphere-tmm__Supervisor-Services__vks-ai-conformance__v1.34__accelerator_metrics.md.metrics.prom").samples)
    assert vs["checked"] == ["XID errors"] and "temperature" in vs["not_collected"]  # a vGPU scrape: no GPU_TEMP
    (kops,) = analyze_health(parse_path(
        d / "cncf__k8s-ai-conformance__v1.35__kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.md"
            ".metrics.prom").samples)
    assert kops["checked"] == ["row remapping"] and "XID errors" in kops["not_collected"]
    assert kops["max_temp_c"] == 31 and kops["model"] == "NVIDIA L4"


def test_corpus_field_tables_name_the_health_fields() -> None:
    """The ids and names rooftop reads are DCGM's own (fieldtable v3.3.9 / v4.6.0)."""
    from rooftop.analyzer.health.rules import HEALTH_IDS
    from rooftop.parsers.dcgm.fields import BY_NAME

    d = corpus_dir("dcgm")
    for version in ("v3.3.9", "v4.6.0"):
        rows = (d / f"NVIDIA__DCGM__dcgmlib__src__dcgm_fields.cpp.fieldtable.{version}.tsv").read_text().splitlines()
        table = {int(c[0]): c[1] for c in (r.split("\t") for r in rows) if c[0].isdigit()}
        for fid in HEALTH_IDS:
            assert BY_NAME.get(table[fid]) == fid, (version, fid, table[fid])


def test_empty_samples_have_no_health() -> None:
    from rooftop.parsers.model import SAMPLE_SCHEMA

    assert analyze_health(SAMPLE_SCHEMA.empty_table()) == []
    assert analyze_health(pa.table({c: [] for c in SAMPLE_SCHEMA.names}).cast(SAMPLE_SCHEMA)) == []


def test_fleet_without_events_names_what_was_checked(tmp_path: Path) -> None:
    """Temperature without the slowdown temperature is not 'checked': the sentence says so."""
    from rooftop.reports.html import render_html

    doc = _fleet(tmp_path, [ROOT / "fixtures" / "dcgm" / "prom_era_classic.prom"])
    h = doc["fleet"]["health"]
    assert (h["gpus_with_fields"], h["gpus_with_events"], h["no_threshold"]) == (1, 0, ["temperature"])
    assert ("No health events on the 1 GPU(s) with health fields (checked: power; no threshold in the input: "
            "temperature; not collected: XID errors, ECC, row remapping, clock-event reasons).") in render_html(doc)  # type: ignore[arg-type]


def test_nvidia_smi_query_reads_the_clock_event_mask_and_ecc(tmp_path: Path) -> None:
    """nvidia-smi prints clocks_event_reasons.active as hex (0x0000000000000004); ECC counts as numbers."""
    csv = tmp_path / "q.csv"
    csv.write_text("timestamp, index, uuid, clocks_throttle_reasons.active, ecc.errors.uncorrected.volatile.total\n"
                   "2025/01/01 00:00:00.000, 0, GPU-q, 0x0000000000000001, 0\n"
                   "2025/01/01 00:00:15.000, 0, GPU-q, 0x00000000000000C0, 3\n"
                   "2025/01/01 00:00:30.000, 0, GPU-q, [N/A], [N/A]\n", encoding="utf-8")
    res = parse_path(csv)
    assert res.accounting.rejected == 0 and res.accounting.missing == 2
    (rec,) = analyze_health(res.samples)
    assert [(e["kind"], e["code"]) for e in rec["events"]] == [("ecc-dbe", None), ("clocks", 0x40), ("clocks", 0x80)]
    assert rec["events"][1]["first"] == "2025-01-01T00:00:15Z"


def test_real_h100_nvidia_smi_capture() -> None:
    """fixtures/capture/h100/nvsmi_query.csv (a real H100 under ncu replays and matrix products): NVML
    reported SW power cap (0x4) in 4 of 216 samples, one of them at 691.44 W of the 700 W limit."""
    (rec,) = analyze_health(parse_path(ROOT / "fixtures" / "capture" / "h100" / "nvsmi_query.csv").samples)
    cap, power = rec["events"]
    assert (cap["kind"], cap["code"], cap["samples"]) == ("clocks", 0x4, 4)
    assert (power["kind"], power["samples"], power["first"]) == ("power", 1, "2026-11-26T17:45:06.656Z")
    assert rec["power_limit_w"] == 700 and rec["max_power_w"] == 691.44
    assert rec["no_threshold"] == ["temperature"] and "ECC" in rec["not_collected"]
