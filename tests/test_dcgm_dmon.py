"""dcgmi dmon parser: layouts, entities, ticks, missing/rejected accounting, sentinels."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from parsers import InputError, ParseOptions, parse_path
from parsers.dcgm_dmon import parse
from parsers.source import Source

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)
OPTS = ParseOptions(start=START, interval_s=5.0, host="node-a")


def _parse_text(tmp_path: Path, text: str, opts: ParseOptions = OPTS):  # type: ignore[no-untyped-def]
    p = tmp_path / "dmon.txt"
    p.write_text(text, encoding="utf-8")
    return parse(Source(p), opts)


def _invariant(r) -> None:  # type: ignore[no-untyped-def]
    a = r.accounting
    assert a.records == r.samples.num_rows
    assert (a.rejected == 0) == (not r.rejected)  # a rejected row is one listing for k samples
    assert a.rejected >= len(r.rejected)


@pytest.mark.parametrize("name", ["dmon_v2_phases.txt", "dmon_v3_phases.txt", "dmon_v4_phases.txt"])
def test_fixture_layouts_accounting(name: str) -> None:
    r = parse_path(FIX / name, OPTS)
    _invariant(r)
    # 600 s / 5 s = 120 ticks x 2 GPUs x 5 fields = 1200 cells; the first tick's 10 cells are N/A
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (1190, 10, 0)
    assert r.meta["ticks"] == 120
    assert r.accounting.format == "dcgm-dmon"


def test_three_layouts_give_the_same_samples() -> None:
    tables = []
    for v in ("2", "3", "4"):
        t = parse_path(FIX / f"dmon_v{v}_phases.txt", OPTS).samples.to_pandas()
        tables.append(t.sort_values(["timestamp", "gpu", "field_id"]).reset_index(drop=True)
                      [["timestamp", "gpu", "field_id", "value", "host"]])
    assert tables[0].equals(tables[1]) and tables[1].equals(tables[2])


def test_ticks_are_start_plus_k_interval(tmp_path: Path) -> None:
    text = ("#Entity   GRACT        DRAMA\nID\n"
            "GPU 1     0.100        0.200\nGPU 0     0.300        0.400\n"
            "GPU 1     0.500        0.600\nGPU 0     0.700        0.800\n")
    r = _parse_text(tmp_path, text, ParseOptions(start=START, interval_s=2.0, host="h"))
    df = r.samples.to_pandas()
    # rows 1-2 are tick 0 (GPU 1 then GPU 0), rows 3-4 tick 1 (GPU 1 repeats)
    t0 = df[(df.gpu == "0") & (df.field_id == 1001)]["timestamp"].tolist()
    assert [t.isoformat() for t in t0] == ["2025-01-01T00:00:00+00:00", "2025-01-01T00:00:02+00:00"]
    assert df[(df.gpu == "0") & (df.field_id == 1005)]["value"].tolist() == [0.4, 0.8]
    assert set(df["host"]) == {"h"}


def test_default_start_is_mtime_minus_duration(tmp_path: Path) -> None:
    import os

    p = tmp_path / "d.txt"
    p.write_text("# Entity  GRACT\n      Id\n    GPU 0  0.500\n    GPU 0  0.600\n", encoding="utf-8")
    os.utime(p, (1_700_000_100, 1_700_000_100))
    r = parse(Source(p), ParseOptions(interval_s=10.0))
    ts = r.samples.to_pandas()["timestamp"].tolist()
    # 2 ticks x 10 s: start = mtime - 20 s = 1_700_000_080
    assert [int(t.timestamp()) for t in ts] == [1_700_000_080, 1_700_000_090]


def test_multi_token_entities_and_values_from_the_right(tmp_path: Path) -> None:
    text = ("#Entity           GRACT        SMACT        \nID\n"
            "GPU 0             0.845        0.800        \n"
            "GPU-I 1           0.986        0.950        \n"
            "GPU-CI 2          0.500        0.400        \n"
            "GPU 0 LINK 3      0.100        0.200        \n"
            "CPU Core 5        0.010        0.020        \n"
            "Switch 1          0.030        0.040        \n")
    r = _parse_text(tmp_path, text)
    _invariant(r)
    df = r.samples.to_pandas()
    gr = df[df.field_id == 1001].reset_index(drop=True)
    assert gr["value"].tolist() == [0.845, 0.986, 0.5, 0.1, 0.01, 0.03]
    assert gr["gpu"].tolist() == ["0", "0", "0", "0", "CPU Core 5", "Switch 1"]
    assert gr["mig"].isna().tolist()[:3] == [True, False, False]
    assert gr["mig"].tolist()[1:3] == ["1", "ci2"]
    assert gr["field"].tolist()[3] == "GRACT[link 3]"


def test_missing_rejected_and_sentinels(tmp_path: Path) -> None:
    text = ("$ dcgmi dmon -e 1009,1010,150\n"
            "#Entity   PCITX                       PCIRX                       TMPTR\n"
            "ID                                                                 C\n"
            "GPU 0     N/A                         N/W                         2147483632\n"
            "GPU 0     38735656050(36.07GB/s)      2147483648                  45\n"
            "GPU 0     9223372036854775794         4294967296                  2147483635\n"
            "...\n"
            "dmon was stopped due to receiving a signal\n")
    r = _parse_text(tmp_path, text)
    _invariant(r)
    a = r.accounting
    # 9 cells: N/A, N/W, INT32_BLANK, INT64_NOT_SUPPORTED, INT32_NOT_PERMISSIONED are missing (5);
    # the annotated value is rejected (1); 2**31, 45 and 2**32 are real values (3)
    assert (a.records, a.missing, a.rejected) == (3, 5, 1)
    assert r.rejected[0].line == 5 and "not a number" in r.rejected[0].reason
    assert sorted(r.samples.to_pandas()["value"].tolist()) == [45.0, 2147483648.0, 4294967296.0]


def test_rows_without_header_use_the_command_line(tmp_path: Path) -> None:
    text = ("> dcgmi dmon  -e 1011,1012\n"
            "GPU 1     19694075554                 19687914629\n"
            "GPU 0     20779220484                 21900091841\n")
    r = _parse_text(tmp_path, text)
    assert r.accounting.records == 4
    assert set(r.samples.column("field_id").to_pylist()) == {1011, 1012}


def test_headerless_rows_alone_are_unusable(tmp_path: Path) -> None:
    p = tmp_path / "row.txt"
    p.write_text("GPU 3     100               0.966        0.941\n", encoding="utf-8")
    with pytest.raises(InputError, match="header"):
        parse_path(p)


def test_error_only_capture_is_unusable(tmp_path: Path) -> None:
    p = tmp_path / "err.txt"
    p.write_text("# Entity  TENSO\n      Id\nError setting watches. Result: The third-party Profiling "
                 "module returned an unrecoverable error\n", encoding="utf-8")
    with pytest.raises(InputError, match="Error setting watches"):
        parse_path(p)


def test_wall_clock_prefix_is_the_timestamp(tmp_path: Path) -> None:
    text = ("#Entity   GRACT\nID\n"
            "2024-05-01 12:00:00 GPU 0     0.500\n"
            "2024-05-01 12:00:07 GPU 0     0.600\n")
    r = _parse_text(tmp_path, text)
    ts = [t.isoformat() for t in r.samples.to_pandas()["timestamp"]]
    assert ts == ["2024-05-01T12:00:00+00:00", "2024-05-01T12:00:07+00:00"]


def test_units_are_canonical(tmp_path: Path) -> None:
    # GPUTL (203) is NVML percent 0-100: stored as a ratio
    r = _parse_text(tmp_path, "#Entity   GPUTL             GRACT\nID\nGPU 3     100               0.966\n")
    vals = dict(zip(r.samples.column("field_id").to_pylist(), r.samples.column("value").to_pylist(), strict=True))
    assert vals == {203: 1.0, 1001: 0.966}


def test_field_names_and_sentinels_table() -> None:
    import numpy as np

    from parsers import dcgm_fields as F

    for name in ("GRACT", "gract", "DCGM_FI_PROF_GR_ENGINE_ACTIVE", "DCGM_FI_PROF_GR_ENGINE_UTIL_RATIO", "1001"):
        assert F.field_id(name) == 1001
    assert F.field_id("DCGM_FI_DEV_GPU_UTIL_RATIO") == F.field_id("GPUTL") == 203
    assert F.field_id("FP64A") == 1006 and F.field_id("NVL17R") == 1075 and F.field_id("nope") is None
    assert F.field_name(1004) == "DCGM_FI_PROF_PIPE_TENSOR_ACTIVE"
    vals = np.array([0x7FFFFFF0, 0x7FFFFFF3, 0x7FFFFFF4, 2.0**31, 9223372036854775794, 140737488355331.0,
                     140737488355332.0, 1e15])
    assert F.sentinel_mask(vals).tolist() == [True, True, False, False, True, True, False, False]


def test_rejected_row_counts_every_header_field(tmp_path: Path) -> None:
    # header has 3 fields; row 2 is short (entity + 2 values), row 3 carries an extra annotation token:
    # each rejected row owes 3 samples, so the total stays 3 rows x 3 fields = 9
    text = ("#Entity   GRACT   SMACT   DRAMA\nID\n"
            "GPU 0     0.5     0.4     0.3\n"
            "GPU 1     0.5     0.4\n"
            "GPU 0     0.5     0.4     0.3   (12GB/s)\n")
    r = _parse_text(tmp_path, text)
    _invariant(r)
    a = r.accounting
    assert (a.records, a.missing, a.rejected) == (3, 0, 6)
    assert [x.line for x in r.rejected] == [4, 5]
    assert all("3 samples" in x.reason for x in r.rejected)
