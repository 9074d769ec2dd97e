"""Prometheus query JSON (vector/matrix) and nvidia-smi CSV/dmon parsers."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import pandas as pd
import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.model import ParseResult, drain_batches
from rooftop.parsers.nvsmi.reader import parse_csv_batches, parse_dmon_batches
from rooftop.parsers.source import ParseOptions, Source

START = datetime(2025, 1, 1, tzinfo=timezone.utc)


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def _check(r: ParseResult) -> None:
    assert r.accounting.records == r.samples.num_rows
    assert (r.accounting.rejected == 0) == (not r.rejected)  # a rejected line may hold several samples


def test_matrix_with_noise_and_labels(tmp_path: Path) -> None:
    doc = {"status": "success", "data": {"resultType": "matrix", "result": [
        {"metric": {"__name__": "DCGM_FI_PROF_DRAM_ACTIVE", "gpu": "0", "UUID": "GPU-a", "kubernetes_node": "n1",
                    "modelName": "NVIDIA A100-SXM4-80GB", "namespace": "gpu-operator",
                    "pod": "nvidia-dcgm-exporter-x", "container": "nvidia-dcgm-exporter"},
         "values": [[1700000000, "0.5"], [1700000030.5, "NaN"], [1700000060, "oops"]]},
        {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "1", "Hostname": "n2",
                    "exported_namespace": "team", "exported_pod": "job-1", "namespace": "monitoring"},
         "values": [[1700000000, "87"]]},
        {"metric": {"__name__": "up", "job": "x"}, "values": [[1700000000, "1"]]},
    ]}}
    p = _write(tmp_path, "q.json", "$ curl -s 'http://prom/api/v1/query_range?...' | jq .\n" + json.dumps(doc, indent=2))
    r = parse_path(p)
    _check(r)
    assert r.accounting.format == "prometheus-json"
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (2, 1, 1)
    df = r.samples.to_pandas()
    row0 = df[df.field_id == 1005].iloc[0]
    assert row0["host"] == "n1" and row0["value"] == 0.5
    assert row0["timestamp"] == pd.Timestamp(1_700_000_000_000, unit="ms", tz="UTC")
    assert pd.isna(row0["pod"])  # the exporter's own pod is not a workload
    row1 = df[df.field_id == 203].iloc[0]
    assert row1["value"] == pytest.approx(0.87) and row1["namespace"] == "team" and row1["pod"] == "job-1"
    assert r.meta["other_series"] == 1


def test_vector_minified_victoriametrics(tmp_path: Path) -> None:
    text = ('kubectl logs job.batch/check\n{"status":"success","isPartial":false,"data":{"resultType":"vector",'
            '"result":[{"metric":{"__name__":"DCGM_FI_DEV_GPU_TEMP","gpu":"0","Hostname":"h"},'
            '"value":[1775721747,"32"]}]},"stats":{"seriesFetched":"1"}}\n')
    r = parse_path(_write(tmp_path, "v.json", text))
    _check(r)
    assert r.samples.column("value").to_pylist() == [32.0]
    assert r.samples.column("timestamp").to_pylist()[0].timestamp() == 1775721747


def test_json_without_result_is_unusable(tmp_path: Path) -> None:
    p = _write(tmp_path, "e.json", '{"status":"error","errorType":"bad_data","error":"parse error",'
                                   '"data":{"resultType":"scalar","result":[1,"2"]}}')
    with pytest.raises(InputError):
        parse_path(p)


def test_nvsmi_csv_units_repeated_header(tmp_path: Path) -> None:
    hdr = "timestamp, index, name, utilization.gpu [%], memory.used [MiB], power.draw [W]\n"
    text = (hdr + "2023/06/22 18:56:56.252, 0, NVIDIA GeForce RTX 2070, 22 %, 841 MiB, [N/A]\n"
            + hdr + "2023/06/22 18:56:57.274, 0, NVIDIA GeForce RTX 2070, 24 %, 869 MiB, 22.89 W\n"
            + "2023/06/22 18:56:58.274, 0, broken row\n")
    r = parse_path(_write(tmp_path, "smi.csv", text))
    _check(r)
    assert r.accounting.format == "nvidia-smi-csv"
    # 2 rows x 3 mapped columns = 6 cells: one [N/A]; the short row is rejected (its 3 cells)
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (5, 1, 3)
    df = r.samples.to_pandas()
    util = df[df.field_id == 203]["value"].tolist()
    assert util == [pytest.approx(0.22), pytest.approx(0.24)]
    assert df["timestamp"].min() == pd.Timestamp("2023-06-22 18:56:56.252", tz="UTC")
    assert set(df["model"]) == {"NVIDIA GeForce RTX 2070"}


def test_nvsmi_dmon_mapping_and_glitch(tmp_path: Path) -> None:
    text = ("> nvidia-smi dmon -i 3 -d 1 -s put\n"
            "# gpu   pwr gtemp mtemp    sm   mem   enc   dec rxpci txpci\n"
            "# Idx     W     C     C     %     %     %     %  MB/s  MB/s\n"
            "    3    224     43     -     91     46      0      0   1968   1621\n"
            "    3    273     40     45    100      5      0      0 2016001 1765799\n"
            "```\n")
    r = parse_path(_write(tmp_path, "d.txt", text), ParseOptions(start=START, interval_s=1.0))
    _check(r)
    assert r.accounting.format == "nvidia-smi-dmon"
    # 2 rows x 9 mapped columns = 18 cells: mtemp '-' missing; 2 implausible PCIe values rejected
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (15, 1, 2)
    df = r.samples.to_pandas()
    sm = df[df.field_id == 203]
    assert sm["value"].tolist() == [pytest.approx(0.91), pytest.approx(1.0)]
    assert [(t - pd.Timestamp(START)).total_seconds() for t in sm["timestamp"]] == [0.0, 1.0]
    assert df[df.field_id == 201]["value"].tolist() == [1968 * 1000.0]  # MB/s -> DCGM KB/s


def test_nvsmi_dmon_date_time_columns(tmp_path: Path) -> None:
    text = ("#Date       Time        gpu   pwr    sm\n"
            "#YYYYMMDD   HH:MM:SS    Idx     W     %\n"
            " 20240501   12:00:00      0    100    50\n"
            " 20240501   12:00:05      0    110    60\n")
    r = parse_path(_write(tmp_path, "dt.txt", text))
    ts = sorted({t.isoformat() for t in r.samples.to_pandas()["timestamp"]})
    assert ts == ["2024-05-01T12:00:00+00:00", "2024-05-01T12:00:05+00:00"]


DMON_TWO_HEADERS = ("# gpu   pwr    sm\n# Idx     W     %\n"
                    "    0    100    50\n    1    110     -\n"
                    "# gpu    sm   mem\n# Idx     %     %\n"
                    "    0     60    70\n    1     x     80\n"
                    "    0      5\n")


def test_nvsmi_dmon_samples_row_major_across_headers(tmp_path: Path) -> None:
    p = _write(tmp_path, "d.txt", DMON_TWO_HEADERS)
    r = parse_path(p, ParseOptions(start=START, interval_s=1.0))
    # rows: (0: pwr sm) (1: pwr, sm '-') | new header (0: sm mem) (1: sm 'x', mem) | short row
    assert list(zip(r.samples.column("gpu").to_pylist(), r.samples.column("field").to_pylist(), strict=True)) == [
        ("0", "pwr"), ("0", "sm"), ("1", "pwr"), ("0", "sm"), ("0", "mem"), ("1", "mem")]
    assert r.samples.column("value").to_pylist() == pytest.approx([100.0, 0.5, 110.0, 0.6, 0.7, 0.8])
    # 4 rows x 2 cells = 8: '-' missing, 'x' rejected, 6 records; the short row rejected (counts 1)
    assert (r.accounting.records, r.accounting.missing, r.accounting.rejected) == (6, 1, 2)
    assert [x.line for x in r.rejected] == [8, 9]
    # ticks: the header re-print starts tick 1; 1 s apart from START
    secs = [(t - START).total_seconds() for t in r.samples.column("timestamp").to_pylist()]
    assert secs == [0.0, 0.0, 0.0, 1.0, 1.0, 1.0]
    assert r.meta["ticks"] == 2 and r.meta["start"] == START.isoformat()


@pytest.mark.parametrize("segment", [1, 2, 7])
@pytest.mark.parametrize("start", [None, START])
def test_nvsmi_segments_give_the_whole_file(tmp_path: Path, segment: int, start: datetime | None) -> None:
    csv = _write(tmp_path, "s.csv", "index, utilization.gpu [%], memory.used [MiB]\n" + "".join(
        f"{g}, {t} %, {'[N/A]' if t % 3 == 0 else t} MiB\n" for t in range(6) for g in range(2)) + "0, 1\n")
    dmon = _write(tmp_path, "d.txt", DMON_TWO_HEADERS * 3)
    opts = ParseOptions(start=start)
    for path, batches in ((csv, parse_csv_batches), (dmon, parse_dmon_batches)):
        whole = parse_path(path, opts)
        for hold in (False, True):
            got = drain_batches(batches(Source(path), opts, hold=hold, segment_lines=segment))
            assert got.samples.equals(whole.samples)
            assert got.accounting.as_dict() == whole.accounting.as_dict()
            assert got.rejected == whole.rejected and got.meta == whole.meta


@pytest.mark.parametrize("ts", ["1e300", "-1e300", '"NaN"', '"Inf"'])
def test_json_unusable_timestamp_rejects_that_sample(tmp_path: Path, ts: str) -> None:
    body = ('{"status":"success","data":{"resultType":"matrix","result":[{"metric":'
            '{"__name__":"DCGM_FI_DEV_GPU_UTIL","gpu":"0"},"values":[[1700000000,"5"],[' + ts + ',"6"]]}]}}')
    r = parse_path(_write(tmp_path, "q.json", body))
    _check(r)
    a = r.accounting
    assert (a.records, a.missing, a.rejected) == (1, 0, 1)
    assert "timestamp" in r.rejected[0].reason
