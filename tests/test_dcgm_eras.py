"""Every value lands in canonical units whichever DCGM/exporter era named it (docs/formulas.md#inputs):
classic names, the DCGM 4.6 renames, the DCGM 4.6.1 SI-unit fields (fixtures/make_dcgm.py ERA_FIELDS)."""

from __future__ import annotations

import json
import math
from datetime import datetime, timezone
from pathlib import Path

import pytest

from fixtures.make_dcgm import ERA_FIELDS, ERAS
from rooftop.parsers import parse_path
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.source import ParseOptions
from tests.conftest import FIXTURES

ERA_FILES = {era: FIXTURES / "dcgm" / f"prom_era_{era.replace('.', '_')}.prom" for era in ERAS}


def _canonical(path: Path) -> dict[tuple[int, int], float]:
    r = parse_path(path, ParseOptions())
    assert r.accounting.rejected == 0 and r.accounting.missing == 0
    t = r.samples.to_pydict()
    return {(int(ts.timestamp()), f): v for ts, f, v in zip(t["timestamp"], t["field_id"], t["value"], strict=True)}


def test_the_three_eras_give_the_same_canonical_samples() -> None:
    got = {era: _canonical(p) for era, p in ERA_FILES.items()}
    base = got["classic"]
    assert len(base) == 4 * len(ERA_FIELDS)
    for era in ERAS[1:]:
        assert got[era].keys() == base.keys(), era
        for k, v in base.items():
            assert math.isclose(got[era][k], v, rel_tol=1e-9, abs_tol=1e-12), (era, k, got[era][k], v)


def test_hand_computed_canonical_values() -> None:
    v = _canonical(ERA_FILES["dcgm-4.6.1"])
    t0 = min(ts for ts, _ in v)
    assert v[(t0, 100)] == pytest.approx(1980.0)  # 1.98e9 Hz -> 1980 MHz
    assert v[(t0, 156)] == pytest.approx(123456789.0)  # 123456.789 J -> mJ
    assert v[(t0, 191)] == pytest.approx(45.0)  # 0.45 ratio -> 45 %
    assert v[(t0, 92)] == pytest.approx(16.0)  # 16 MiB in bytes -> MiB
    assert v[(t0, 203)] == pytest.approx(0.87)  # GPU_UTIL_RATIO still NVML percent (87) -> 0.87
    assert v[(t0, 254)] == pytest.approx(0.25)  # FB_USED_RATIO / FB_USED_PERCENT: a ratio under both names


def test_names_ids_and_factors() -> None:
    for s in F.SI_SUCCESSORS:
        assert F.field_id(s.name) == s.replaces == F.field_id(str(s.id)) == F.field_id(f"DCGM_FI_{s.id}")
        assert F.canonical_factor(s.name) == F.canonical_factor(str(s.id)) == s.factor * F.TO_CANONICAL.get(
            s.replaces, 1.0)
    assert F.canonical_factor("DCGM_FI_DEV_GPU_UTIL") == F.canonical_factor("DCGM_FI_DEV_GPU_UTIL_RATIO") == 0.01
    assert F.field_id("DCGM_FI_DEV_BOARD_POWER_RAW_WATTS") == 157 and F.field_id("B1USE") == 92
    assert F.canonical_factor("NOT_A_FIELD") == 1.0


def test_query_json_and_dmon_convert_too(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_SM_CLOCK_HERTZ", "gpu": "0", "hostname": "h"},
         "value": [1735689600, "1410000000"]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    r = parse_path(p)
    assert r.samples.column("field_id").to_pylist() == [100] and r.samples.column("value").to_pylist() == [1410.0]
    # dcgmi dmon -e 1603 (numeric column header): stored as SM clock in MHz
    d = tmp_path / "dmon.txt"
    d.write_text("#Entity   1603          SMCLK\nID\nGPU 0     1410000000    1410\n")
    r = parse_path(d, ParseOptions(interval_s=1.0))
    vals = dict(zip(r.samples.column("field").to_pylist(), r.samples.column("value").to_pylist(), strict=True))
    assert r.samples.column("field_id").to_pylist() == [100, 100] and vals == {"1603": 1410.0, "SMCLK": 1410.0}


def test_a_dcgm_exporter_4_9_name_rooftop_cannot_confirm_is_rejected_not_guessed(tmp_path: Path) -> None:
    """dcgm-exporter 4.9.0 (release text) collects DCGM_FI_DEV_FB_CAPACITY_BYTES by default and labels
    every metric DCGM_FI_SYSTEM_DRIVER_VERSION; no source maps that field to an ID or unit rooftop
    stores, so its line is rejected with the reason, the known field beside it parsed as before."""
    lab = 'gpu="0",UUID="GPU-1",DCGM_FI_SYSTEM_DRIVER_VERSION="590.48.01",hostname="h"'
    p = tmp_path / "exporter49.prom"
    p.write_text(f"DCGM_FI_DEV_FB_CAPACITY_BYTES{{{lab}}} 85899345920 1735689600000\n"
                 f"DCGM_FI_DEV_GPU_TEMP_CELSIUS{{{lab}}} 41 1735689600000\n")
    r = parse_path(p, ParseOptions())
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (1, 0, 1)
    assert r.rejected[0].line == 1
    assert r.rejected[0].reason == "unknown DCGM field 'DCGM_FI_DEV_FB_CAPACITY_BYTES'"
    assert r.samples.column("field_id").to_pylist() == [150] and r.samples.column("value").to_pylist() == [41.0]
    assert r.samples.column("host").to_pylist() == ["h"]


def test_gpu_util_ratio_unit_is_told_by_the_value(tmp_path: Path) -> None:
    """DCGM 4.6.0 stores NVML's integer percent under DCGM_FI_DEV_GPU_UTIL_RATIO; exporter 4.9 may
    write a 0..1 ratio. A non-integer below 1 is a ratio, exactly 1 is unknown (missing), the rest
    percent (docs/formulas.md#inputs, dcgm_fields.percent_or_ratio)."""
    lines = [f'DCGM_FI_DEV_GPU_UTIL_RATIO{{gpu="{g}"}} {v}' for g, v in enumerate(["45", "0.45", "1", "0", "100"])]
    lines.append('DCGM_FI_DEV_GPU_UTIL{gpu="5"} 1')  # the classic name: NVML's integer percent, 1 % by source
    p = tmp_path / "u.prom"
    p.write_text("\n".join(lines) + "\n", encoding="utf-8")
    r = parse_path(p, ParseOptions(start=datetime(2025, 1, 1, tzinfo=timezone.utc)))
    got = dict(zip(r.samples.column("gpu").to_pylist(), r.samples.column("value").to_pylist(), strict=True))
    assert got == pytest.approx({"0": 0.45, "1": 0.45, "3": 0.0, "4": 1.0, "5": 0.01})
    assert (r.accounting.records, r.accounting.missing, r.meta["unit_ambiguous"]) == (5, 1, 1)


def test_gpu_util_ratio_in_a_prometheus_json_answer(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL_RATIO", "gpu": "0"},
         "values": [[1735689600, "0.5"], [1735689601, "50"], [1735689602, "1"]]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc), encoding="utf-8")
    r = parse_path(p, ParseOptions())
    assert r.samples.column("value").to_pylist() == pytest.approx([0.5, 0.5])
    assert (r.accounting.records, r.accounting.missing) == (2, 1)
