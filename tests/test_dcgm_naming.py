"""Names read by DCGM's field-naming standard (issue 24, "DCGM 4.6+ names"; NVIDIA/DCGM
dcgmlib/dcgm_field_naming.py; docs/formulas.md#inputs): a name rooftop does not list is read by its
unit suffix when its stem is a known field's, so dcgm-exporter 4.9-style names land in the stored
unit. One test per unit suffix, each on a name that is in no list (prometheus text and query JSON)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rooftop.parsers import parse_path
from rooftop.parsers.dcgm import fields as F
from rooftop.parsers.source import ParseOptions

T = 1_735_689_600_000
LABELS = 'gpu="0",UUID="GPU-11111111-2222-3333-4444-555555555550",Hostname="n1"'

# (grammar name, value as printed, field ID, value in rooftop's stored unit)
CASES = {
    "RATIO": ("DCGM_FI_DEV_MEM_COPY_UTIL_RATIO", 0.25, 204, 0.25),  # stored as a ratio: x 1
    "BYTES": ("DCGM_FI_DEV_FB_USED_BYTES", 2.0 * 2**30, 252, 2048.0),  # bytes -> MiB
    "HERTZ": ("DCGM_FI_DEV_MAX_SM_CLOCK_HERTZ", 1.98e9, 113, 1980.0),  # Hz -> MHz
    "JOULES_TOTAL": ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION_JOULES_TOTAL", 1234.5, 156, 1234500.0),  # J -> mJ
    "WATTS": ("DCGM_FI_DEV_POWER_USAGE_WATTS", 312.5, 155, 312.5),
    "CELSIUS": ("DCGM_FI_DEV_MEM_MAX_OP_TEMP_CELSIUS", 95.0, 151, 95.0),
}


def _samples(path: Path) -> dict[int, float]:
    r = parse_path(path, ParseOptions())
    t = r.samples.to_pydict()
    return dict(zip(t["field_id"], t["value"], strict=True))


@pytest.mark.parametrize("suffix", list(CASES))
def test_unit_suffix_read_by_the_grammar(suffix: str, tmp_path: Path) -> None:
    name, printed, fid, stored = CASES[suffix]
    assert name not in F.BY_NAME  # read by the grammar, not a list
    assert name.endswith("_" + suffix)
    src = tmp_path / "m.prom"
    src.write_text(f"{name}{{{LABELS}}} {printed!r} {T}\n")
    assert _samples(src) == {fid: pytest.approx(stored)}
    answer = {"status": "success", "data": {"resultType": "vector", "result": [
        {"metric": {"__name__": name, "gpu": "0", "Hostname": "n1"}, "value": [T / 1000, repr(printed)]}]}}
    qj = tmp_path / "q.json"
    qj.write_text(json.dumps(answer))
    assert _samples(qj) == {fid: pytest.approx(stored)}


def test_grammar_never_guesses() -> None:
    assert F.by_grammar("DCGM_FI_DEV_FB_CAPACITY_BYTES") is None  # stem names no known field
    assert F.by_grammar("DCGM_FI_DEV_GPU_TEMP_WATTS") is None  # a unit the field is not in
    assert F.by_grammar("DCGM_FI_PROF_NVLINK_TX_BYTES_TOTAL") is None  # a byte count is not a rate
    assert F.by_grammar("DCGM_FI_DEV_SM_CLOCK") is None  # no unit: a listed name or nothing
    assert F.split_name("DCGM_FI_DEV_GPU_ENERGY_JOULES_TOTAL") == ("DCGM_FI_DEV_GPU_ENERGY", "JOULES", "TOTAL")
