"""dcgmi dmon parser: layouts, entities, ticks, missing/rejected accounting, sentinels."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.dcgm.dmon.reader import parse
from rooftop.parsers.source import ParseOptions, Source

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

    from rooftop.parsers.dcgm import fields as F

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


# ----------------------------------------------------------------------------- blocks and batches
MIXED = ("$ dcgmi dmon -e 1001,1005\r\n"
         "#Entity   GRACT        DRAMA\r\nID\r\n"
         "GPU 1     0.100        0.200\r\n"
         "GPU 0     0.300        N/A\r\n"
         "GPU-I 2   0.050        0.060\r\n"
         "GPU 1\t0.500\t0.600\r\n"                      # tabs: read the per-line way
         "GPU 0     0.700        12(3GB/s)\r\n"         # annotated value: rejected
         "GPU 0     0.1\r\n"                            # short row: 2 samples rejected
         "stray text \xe9\r\n"
         "2024-05-01 12:00:00 GPU 0  0.900   1e3\r\n"   # wall-clock prefix; exponent value
         "#Entity   GRACT\r\nID\r\n"
         "GPU 05    0.250\r"                            # lone CR ends a line; id keeps its zero
         "GPU 1234567 0.125\r\n")                       # 7-digit id: read the per-line way


def _drain(src: Source, opts: ParseOptions, **kw: object):
    from rooftop.parsers.dcgm.dmon.reader import parse_batches

    gen = parse_batches(src, opts, **kw)  # type: ignore[arg-type]
    batches = []
    while True:
        try:
            batches.append(next(gen))
        except StopIteration as stop:
            return batches, stop.value


def test_mixed_file_by_hand(tmp_path: Path) -> None:
    p = tmp_path / "m.txt"
    p.write_bytes(MIXED.encode("utf-8"))
    r = parse(Source(p), OPTS)
    _invariant(r)
    # 7 rows under the 2-column header (14 cells) + 2 rows under the 1-column one (2 cells) = 16:
    # N/A missing (1); the short row owes 2 samples and '12(3GB/s)' 1 (rejected: 3);
    # records 14 - 1 - 3 + 2 = 12
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (12, 1, 3)
    assert [x.line for x in r.rejected] == [8, 9]
    df = r.samples.to_pandas()
    assert df[df.field_id == 1005]["value"].tolist() == [0.2, 0.06, 0.6, 1000.0]
    # the GPU-I row takes the gpu of the GPU row before it in its tick (GPU 0)
    assert df[df.mig == "2"]["gpu"].tolist() == ["0", "0"]
    assert df[df.field_id == 1001]["gpu"].tolist()[-2:] == ["05", "1234567"]
    stamped = df[df.value == 0.9]["timestamp"].iloc[0]
    assert stamped.isoformat() == "2024-05-01T12:00:00+00:00"
    # ticks: (GPU 1, GPU 0, GPU-I 2) (GPU 1, GPU 0) (GPU 0 stamped) | header (GPU 05, GPU 1234567)
    assert r.meta["ticks"] == 4 and r.meta["rows"] == 8 and r.meta["headers"] == 2


@pytest.mark.parametrize("block", [1, 7, 64, 1 << 22])
def test_block_size_changes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block: int) -> None:
    import rooftop.parsers.dcgm.dmon.reader as dm
    from bench.gen_inputs import write_dmon

    gen = write_dmon(tmp_path / "g.txt", gpus=3, ticks=30)
    for path, data in ((tmp_path / "m.txt", MIXED.encode("utf-8")),
                       (tmp_path / "bad.txt", MIXED.encode("utf-8").replace(b"\xc3\xa9", b"\xff") + b"GPU 0  0.5\r"),
                       (tmp_path / "u16.txt", MIXED.encode("utf-16")),
                       (gen.path, None)):
        if data is not None:
            path.write_bytes(data)
        want = parse(Source(path), OPTS)
        monkeypatch.setattr(dm, "BLOCK_BYTES", block)
        got = parse(Source(path), OPTS)
        monkeypatch.setattr(dm, "BLOCK_BYTES", 1 << 22)
        assert got.samples.equals(want.samples), path.name
        assert (got.rejected, got.meta, got.accounting) == (want.rejected, want.meta, want.accounting)


@pytest.mark.parametrize("start", [START, None])
def test_batches_join_to_parse_and_are_bounded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                               start: datetime | None) -> None:
    import pyarrow as pa

    import rooftop.parsers.dcgm.dmon.reader as dm
    from bench.gen_inputs import write_dmon
    from rooftop.parsers.model import SAMPLE_SCHEMA

    w = write_dmon(tmp_path / "g.txt", gpus=4, ticks=200)
    opts = ParseOptions(start=start, interval_s=2.0, host="n1")
    whole = parse(Source(w.path), opts)
    monkeypatch.setattr(dm, "BLOCK_BYTES", 8192)
    batches, res = _drain(Source(w.path), opts)
    assert len(batches) >= w.bytes // 8192  # one table per block
    # a sample needs at least two bytes of the block (a digit and a separator)
    assert max(b.num_rows for b in batches) <= 8192 // 2
    assert all(b.schema.equals(SAMPLE_SCHEMA) for b in batches)
    assert pa.concat_tables(batches).equals(whole.samples)
    assert res.samples.num_rows == 0 and res.samples.schema.equals(SAMPLE_SCHEMA)
    assert (res.accounting, res.rejected, res.meta) == (whole.accounting, whole.rejected, whole.meta)
    assert res.accounting.total == w.total and res.accounting.missing == w.missing


def test_batches_stream_without_holding_the_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The first batch is handed out after one block (opts.start and interval given) or after one
    pass over the file plus one block: samples are never gathered for the whole file."""
    import rooftop.parsers.dcgm.dmon.reader as dm
    from bench.gen_inputs import write_dmon

    w = write_dmon(tmp_path / "g.txt", gpus=2, ticks=100)
    monkeypatch.setattr(dm, "BLOCK_BYTES", 4096)
    n_blocks = sum(1 for _ in dm._blocks(Source(w.path)))
    assert n_blocks > 4
    read = []
    real = dm._blocks

    def counting(src: Source):
        for data in real(src):
            read.append(len(data))
            yield data

    monkeypatch.setattr(dm, "_blocks", counting)
    # start and interval given: at once; no interval: after the byte scan for `dcgmi dmon -d`;
    # no start: after the rows-only count of ticks (which finds the -d too)
    for start, interval, before_first in ((START, 1.0, 1), (START, None, n_blocks + 1), (None, None, n_blocks + 1)):
        read.clear()
        gen = dm.parse_batches(Source(w.path), ParseOptions(start=start, interval_s=interval))
        next(gen)
        assert len(read) == before_first
        gen.close()


def test_batches_raise_for_unusable_input(tmp_path: Path) -> None:
    p = tmp_path / "err.txt"
    p.write_text("# Entity  TENSO\n      Id\nError setting watches. Result: busy\n", encoding="utf-8")
    with pytest.raises(InputError, match="Error setting watches"):
        _drain(Source(p), ParseOptions())


def test_field_id_beyond_int32_is_an_unknown_column(tmp_path: Path) -> None:
    # no DCGM field ID exceeds int32: the column's cells are rejected, the other column is read
    r = _parse_text(tmp_path, "$ dcgmi dmon -e 1001,18446744073709551616\nGPU 0   0.25   7\n")
    _invariant(r)
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (1, 0, 1)
    assert r.rejected[0].line == 2 and "unknown dmon column '18446744073709551616'" in r.rejected[0].reason
    assert r.samples.column("value").to_pylist() == [0.25]
