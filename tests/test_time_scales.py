"""Silently wrong scales (docs/formulas.md#fleet-ingest, "Time scales"): epoch s/ms/us/ns detected
where the bands of 1990..2200 decide, else rejected; ncu units outside Nsight's spelling never taken
as base units."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from rooftop.parsers import parse_path
from rooftop.parsers.source import ParseOptions
from rooftop.parsers.units import EPOCH_SCALES, epoch_ms_array, epoch_scale, si_factor


def test_epoch_bands_are_disjoint_and_hand_computed() -> None:
    # 1990-01-01 = 631152000 s; 2200-01-01 = 7258118400 s; each band is 11.5x wide, bands 1000x apart
    assert epoch_scale(631_152_000) == "s" and epoch_scale(631_151_999) is None
    assert epoch_scale(7_258_118_399) == "s" and epoch_scale(7_258_118_400) is None
    assert epoch_scale(631_152_000_000) == "ms" and epoch_scale(1_700_000_000_000_000) == "us"
    assert epoch_scale(1_700_000_000_000_000_000) == "ns"
    assert epoch_scale(253_402_300_799_000) is None  # the end of year 9999 in ms: no scale gives 1990..2200
    assert epoch_scale(0) is None and epoch_scale(-1) is None
    hits = [epoch_scale(10.0 ** k) for k in range(25)]
    assert hits.count("s") == 1 and all(hits.count(n) == 1 for n in EPOCH_SCALES)


def test_epoch_ms_array_integers_exact() -> None:
    ms, bad, counts = epoch_ms_array(np.array([1_700_000_000, 1_700_000_000_001, 1_700_000_000_001_999,
                                               1_700_000_000_001_999_999, 5], dtype="int64"), "ms")
    assert ms[:4].tolist() == [1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_001, 1_700_000_000_001]
    assert bad.tolist() == [False, False, False, False, True]
    assert counts == {"s": 1, "us": 1, "ns": 1}


def _query(tmp_path: Path, times: list[float]) -> Path:
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "Hostname": "n1"},
         "values": [[t, str(i)] for i, t in enumerate(times)]}]}}
    p = tmp_path / "q.json"
    p.write_text(json.dumps(doc))
    return p


def test_query_json_in_milliseconds_is_rescaled_not_year_57868(tmp_path: Path) -> None:
    # the query API's unit is seconds; a dump in ms would land in year 57868
    r = parse_path(_query(tmp_path, [1_700_000_000.5, 1_700_000_001_000, 1_700_000_002_000_000,
                                     253_402_300_799, 1e300]), ParseOptions())
    ts = r.samples.column("timestamp").cast(pa.int64()).to_pylist()
    assert ts == [1_700_000_000_500, 1_700_000_001_000, 1_700_000_002_000]
    assert r.meta["timestamps_rescaled_from"] == {"ms": 1, "us": 1}
    assert r.accounting.rejected == 2 and all("between 1990 and 2200" in x.reason for x in r.rejected)


def test_prometheus_text_in_seconds_is_not_1970(tmp_path: Path) -> None:
    p = tmp_path / "s.prom"
    p.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 5 1700000000\n'
                 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 6 1700000001\n')
    r = parse_path(p, ParseOptions())
    assert r.samples.column("timestamp").cast(pa.int64()).to_pylist() == [1_700_000_000_000, 1_700_000_001_000]
    assert r.meta["timestamps_rescaled_from"] == {"s": 2}


@pytest.mark.parametrize(("unit", "factor"), [
    ("KB", None), ("MB", None), ("GB/s", None), ("kB", None), ("TB", None),  # 1000 or 1024: not guessed
    ("MiB", 1048576.0), ("KiB/s", 1024.0), ("Gibyte", 2.0 ** 30),
    ("minute", 60.0), ("min", 60.0), ("hour", 3600.0),
    ("Kbyte", 1000.0), ("Gbyte/second", 1e9), ("nsecond", 1e-9), ("msecond", 1e-3), ("byte", 1.0), ("%", 1.0),
])
def test_ncu_units_outside_nsight_spelling(unit: str, factor: float | None) -> None:
    assert si_factor(unit) == factor


def test_ingest_of_a_file_with_impossible_times_rejects_those_samples(tmp_path: Path) -> None:
    from rooftop.analyzer.store.ingest import ingest_files

    p = tmp_path / "x.prom"
    p.write_text('DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 5 1700000000000\n'
                 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 6 57868000000000000000\n'  # past int64
                 'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="n1"} 7 253402300799000\n')  # end of year 9999
    (e,) = ingest_files([p], tmp_path / "ds", ParseOptions()).ingested
    assert (e["records"], e["rejected"]) == (1, 2) and e["start"] == e["end"] == "2023-11-14T22:13:20.000Z"
