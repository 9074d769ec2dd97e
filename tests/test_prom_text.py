"""Prometheus exposition text (dcgm-exporter scrapes): lines, labels, scrapes, accounting, chunks."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pytest

import rooftop.parsers.prometheus.text as pt
from rooftop.parsers import parse_path
from rooftop.parsers.model import ParseResult
from rooftop.parsers.source import ParseOptions, Source

FIX = Path(__file__).resolve().parent.parent / "fixtures" / "dcgm"
START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _parse(tmp_path: Path, text: str, opts: ParseOptions | None = None) -> ParseResult:
    p = tmp_path / "m.prom"
    p.write_text(text, encoding="utf-8")
    r = pt.parse(Source(p), opts or ParseOptions(start=START))
    assert r.accounting.records == r.samples.num_rows
    assert r.accounting.rejected == len(r.rejected)
    return r


def test_out_of_range_timestamp_is_rejected(tmp_path: Path) -> None:
    # 2**64 ms does not fit int64: that line alone is rejected; the other two keep their times
    text = ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 5 1700000000000\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="1"} 6 18446744073709551616\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="2"} 7 -9223372036854775808\n'  # int64 min = NaT: rejected
            'DCGM_FI_DEV_GPU_UTIL{gpu="3"} 8 -9223372036854775807\n')
    r = _parse(tmp_path, text)
    a = r.accounting
    # -9223372036854775807 fits int64 but is no epoch time between 1990 and 2200 in any scale
    assert (a.records, a.missing, a.rejected) == (1, 0, 3)
    assert [x.line for x in r.rejected] == [2, 3, 4] and all("timestamp" in x.reason for x in r.rejected)
    assert "between 1990 and 2200" in r.rejected[2].reason
    assert sorted(r.samples.column("gpu").to_pylist()) == ["0"]


def test_timestamp_scale_detected_where_unambiguous(tmp_path: Path) -> None:
    # docs/formulas.md#fleet-ingest "Time scales": s/ms/us/ns bands of 1990..2200 are disjoint
    text = ('DCGM_FI_DEV_GPU_UTIL{gpu="0"} 1 1700000000000\n'  # ms (the format's unit)
            'DCGM_FI_DEV_GPU_UTIL{gpu="1"} 2 1700000000\n'  # seconds: 1970 if taken as ms
            'DCGM_FI_DEV_GPU_UTIL{gpu="2"} 3 1700000000123456\n'  # microseconds: year 55841 as ms
            'DCGM_FI_DEV_GPU_UTIL{gpu="3"} 4 1700000000123456789\n'  # nanoseconds
            'DCGM_FI_DEV_GPU_UTIL{gpu="4"} 5 253402300799000\n'  # the end of year 9999 in ms: no time
            'DCGM_FI_DEV_GPU_UTIL{gpu="5"} 6 1000\n')  # 1970 in ms (or 1970 in s): no DCGM sample time
    r = _parse(tmp_path, text)
    assert (r.accounting.records, r.accounting.rejected) == (4, 2)
    got = dict(zip(r.samples.column("gpu").to_pylist(),
                   r.samples.column("timestamp").cast(pa.int64()).to_pylist(), strict=True))
    assert got == {"0": 1_700_000_000_000, "1": 1_700_000_000_000, "2": 1_700_000_000_123, "3": 1_700_000_000_123}
    assert r.meta["timestamps_rescaled_from"] == {"ns": 1, "s": 1, "us": 1}
    assert [x.line for x in r.rejected] == [5, 6]


def test_scrapes_fixture() -> None:
    r = parse_path(FIX / "prom_scrapes_phases.prom", ParseOptions(start=START))
    a = r.accounting
    # 20 scrapes x 5 fields x 2 GPUs = 200 values, plus one leaked INT64 sentinel (missing)
    assert (a.records, a.missing, a.rejected) == (200, 1, 0)
    assert r.meta["scrapes"] == 20 and r.meta["interval_assumed"] is True
    assert r.meta["other_metric_lines"] == 20  # go_goroutines, one per scrape, not samples
    df = r.samples.to_pandas()
    # scrape k at START + 30 k s
    t = sorted(df["timestamp"].unique())
    assert len(t) == 20 and (t[1] - t[0]).total_seconds() == 30 and t[0] == pd.Timestamp(START)
    # Hostname (first half) and hostname (second half) both give the host
    assert set(df["host"]) == {"node-a"}
    gpu1 = df[df.gpu == "1"]
    assert gpu1["pod"].isna().all() and gpu1["namespace"].isna().all()  # empty labels -> null
    assert set(df[df.gpu == "0"]["pod"]) == {"trainer-0"}
    assert set(df["model"]) == {"NVIDIA H100 80GB HBM3"}


def test_explicit_timestamps_and_exported_labels() -> None:
    r = parse_path(FIX / "prom_tsdb_mig.prom")
    df = r.samples.to_pandas()
    assert r.meta["explicit_timestamps"] is True and r.meta["interval_assumed"] is False
    assert df["timestamp"].min() == pd.Timestamp(START)
    # exported_namespace/exported_pod win over the exporter's own namespace/pod
    assert set(df["namespace"]) == {"ns1", "ns2"} and set(df["pod"]) == {"pod-1", "pod-2"}
    assert set(zip(df["mig"], df["mig_profile"], strict=True)) == {("1", "3g.20gb"), ("2", "4g.20gb")}


def test_line_kinds_and_rejections(tmp_path: Path) -> None:
    text = "\n".join([
        "$ curl -s localhost:9400/metrics",  # noise: not a sample
        "Handling connection for 9400",
        "```",
        "# HELP DCGM_FI_PROF_PIPE_TENSOR_ACTIVE Ratio of cycles the tensor (HMMA) pipe is active (in %).",
        "# TYPE DCGM_FI_PROF_PIPE_TENSOR_ACTIVE gauge",
        'DCGM_FI_PROF_PIPE_TENSOR_ACTIVE{gpu="0",UUID="GPU-a",Hostname="h"} 0.250000',  # ratio kept
        '> DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",UUID="GPU-a",Hostname="h"} 0.500000',  # quoted in an issue
        'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",Hostname="h"} 91',  # percent -> ratio 0.91
        'DCGM_FI_PROF_TENSOR_UTIL_RATIO{gpu="1",UUID="GPU-b",Hostname="h"} 0.1',  # DCGM 4.6 name
        'DCGM_FI_DEV_POWER_USAGE{gpu="0",UUID="GPU-a",Hostname="h"} NaN',  # missing
        'DCGM_FI_DEV_MEMORY_TEMP{gpu="0",UUID="GPU-a",Hostname="h"} 9223372036854775794',  # sentinel
        'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",Hostname="h"} 140737488355328',  # FP64 blank
        'DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION{gpu="0",UUID="GPU-a",Hostname="h"} 129931554972',  # > 2**31: real
        'DCGM_FI_DEV_SM_CLOCK{gpu="0",UUID="GPU-a",**GPU_I_PROFILE="<<<NULL>>>"**,Hostname="h"}',  # no value
        'DCGM_FI_DEV_MEM_CLOCK{gpu="0",UUID="GPU-a",Hostname="h"} fast',  # not a number
        'DCGM_FI_MADE_UP_FIELD{gpu="0"} 1',  # unknown field
        'go_goroutines 42',
        'process_resident_memory_bytes 1.2e+07',
        'DCGM_EXP_XID_ERRORS_COUNT{gpu="0"} 0',
        "> **Note:** DCGM_FI_DEV_GPU_UTIL is available.",  # prose mentioning a metric
        "```",
    ]) + "\n"
    r = _parse(tmp_path, text)
    a = r.accounting
    assert (a.records, a.missing, a.rejected) == (5, 3, 3)
    assert [x.line for x in r.rejected] == [14, 15, 16]
    assert "unknown DCGM field" in r.rejected[2].reason and "not a number" in r.rejected[1].reason
    assert r.meta["other_metric_lines"] == 3
    vals = {(f, g): v for f, g, v in zip(r.samples.column("field_id").to_pylist(),
                                         r.samples.column("gpu").to_pylist(),
                                         r.samples.column("value").to_pylist(), strict=True)}
    assert vals == {(1004, "0"): 0.25, (1005, "0"): 0.5, (203, "0"): 0.91, (1004, "1"): 0.1,
                    (156, "0"): 129931554972.0}
    assert r.meta["sentinels"] == 2


def test_label_drift_and_edge_values(tmp_path: Path) -> None:
    text = "\n".join([
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="0",uuid="GPU-a",hostname="h2",model_name="A B",'
        'exported_namespace="",exported_pod="p",namespace="gpu-operator",pod="exporter"} 0.5',
        'DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu="1",UUID="GPU-b",modelName="say \\"hi\\"",'
        'GPU_I_PROFILE="<<<NULL>>>",GPU_I_ID="3"} 0.25 1700000000000',
        "DCGM_FI_PROF_GR_ENGINE_ACTIVE 0.75",  # no labels at all
    ]) + "\n"
    r = _parse(tmp_path, text)
    df = r.samples.to_pandas()
    assert df["uuid"].tolist()[:2] == ["GPU-a", "GPU-b"]
    assert df["host"].tolist()[0] == "h2" and pd.isna(df["host"].tolist()[1])
    assert df["model"].tolist()[:2] == ["A B", 'say "hi"']
    # exported_* present: the exporter's own namespace/pod are not used; empty exported value -> null
    assert pd.isna(df["namespace"].iat[0]) and df["pod"].iat[0] == "p"
    assert pd.isna(df["mig_profile"].iat[1]) and df["mig"].iat[1] == "3"
    assert r.meta["label_sentinels"] == 1
    assert df["timestamp"].iat[1] == pd.Timestamp(1_700_000_000_000, unit="ms", tz="UTC")
    # no labels at all: no GPU identity, rejected with its line (issue 24 defect 1), never a row
    assert len(df) == 2 and [x.line for x in r.rejected] == [3] and "no GPU identity" in r.rejected[0].reason


def test_scrape_boundary_by_repetition(tmp_path: Path) -> None:
    # A,B | A(new scrape),B | B(new scrape): scrape = running max of per-series occurrences
    lines = ['DCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.1', 'DCGM_FI_PROF_SM_ACTIVE{gpu="1"} 0.2',
             'DCGM_FI_PROF_SM_ACTIVE{gpu="0"} 0.3', 'DCGM_FI_PROF_SM_ACTIVE{gpu="1"} 0.4',
             'DCGM_FI_PROF_SM_ACTIVE{gpu="1"} 0.5']
    r = _parse(tmp_path, "\n".join(lines) + "\n", ParseOptions(start=START, interval_s=15.0))
    secs = [(t - pd.Timestamp(START)).total_seconds() for t in r.samples.to_pandas()["timestamp"]]
    assert secs == [0, 0, 15, 15, 30]  # interval_s given -> used instead of the 30 s default
    assert r.meta["interval_assumed"] is False


def test_chunked_reading_matches_whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    whole = parse_path(FIX / "prom_scrapes_phases.prom", ParseOptions(start=START))
    monkeypatch.setattr(pt, "CHUNK_BYTES", 997)  # many chunks, boundaries inside lines
    chunked = parse_path(FIX / "prom_scrapes_phases.prom", ParseOptions(start=START))
    assert chunked.accounting.as_dict() == whole.accounting.as_dict()
    assert chunked.samples.equals(whole.samples)
    assert chunked.meta["scrapes"] == whole.meta["scrapes"] == 20


def test_crlf_and_bom(tmp_path: Path) -> None:
    p = tmp_path / "w.prom"
    p.write_bytes(b'\xef\xbb\xbfDCGM_FI_PROF_DRAM_ACTIVE{gpu="0"} 0.5\r\nDCGM_FI_PROF_DRAM_ACTIVE{gpu="1"} 0.25\r\n')
    r = pt.parse(Source(p), ParseOptions(start=START))
    assert r.samples.column("value").to_pylist() == [0.5, 0.25] and r.accounting.rejected == 0


def test_invalid_utf8_is_replaced_not_fatal(tmp_path: Path) -> None:
    p = tmp_path / "bad.prom"
    p.write_bytes(b'DCGM_FI_PROF_DRAM_ACTIVE{gpu="0",Hostname="h\xff"} 0.5\n')
    r = pt.parse(Source(p), ParseOptions(start=START))
    assert r.samples.column("host").to_pylist() == ["h\ufffd"] and r.accounting.records == 1


def test_small_label_blocks_read_as_the_arrow_path_reads_them(monkeypatch: pytest.MonkeyPatch) -> None:
    """Few distinct label blocks are read with ``re`` (a small file's fixed cost, issue 30 item 15):
    the same values, nulls and label names seen as the Arrow path."""
    import random

    from rooftop.parsers.prometheus import heads

    rng = random.Random(5)
    parts = ['gpu="0"', 'gpu="1"', 'Hostname="h"', 'hostname="x\\"y"', 'UUID="<<<NULL>>>"', 'pod=""',
             'exported_pod="p\\\\q"', ' modelName="A100"', '*gpu="7"', 'xgpu="9"', 'namespace="n,s"']
    blocks = [",".join(rng.sample(parts, rng.randint(0, 4))) for _ in range(40)] + [None]
    arr = pa.array(blocks, pa.string())
    for col, names in heads.LABELS.items():
        seen_small: set[str] = set()
        seen_arrow: set[str] = set()
        small = heads.label_values(arr, names, seen_small)
        monkeypatch.setattr(heads, "SMALL_BLOCKS", -1)
        arrow = heads.label_values(arr, names, seen_arrow)
        monkeypatch.undo()
        assert small.to_pylist() == arrow.to_pylist(), col
        assert seen_small == seen_arrow, col
