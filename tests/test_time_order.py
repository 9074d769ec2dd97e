"""Conflicting timestamps (issue 30 item 2): per series, a sample at or before an earlier sample's
time is rejected by one documented rule (parsers/time_order.py), counted by kind and linted,
never averaged into the windows: a repeated DST hour, a clock stepping back, two values of one
GPU and field at one time."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.parsers import parse_path, stream_path, time_order
from rooftop.parsers.model import SAMPLE_SCHEMA
from rooftop.parsers.time_order import TimeOrder


def _table(rows: list[tuple[str, str, int, int, float]]) -> pa.Table:
    """(host, gpu, field_id, ms, value) rows as a SAMPLE_SCHEMA table."""
    n = len(rows)
    cols = {c: pa.nulls(n, SAMPLE_SCHEMA.field(c).type) for c in SAMPLE_SCHEMA.names}
    cols["host"] = pa.array([r[0] for r in rows], pa.string())
    cols["gpu"] = pa.array([r[1] for r in rows], pa.string())
    cols["field_id"] = pa.array([r[2] for r in rows], pa.int32())
    cols["field"] = pa.array([f"f{r[2]}" for r in rows], pa.string())
    cols["timestamp"] = pa.array([r[3] for r in rows], pa.int64()).cast(pa.timestamp("ms", tz="UTC"))
    cols["value"] = pa.array([r[4] for r in rows], pa.float64())
    return pa.table(cols).cast(SAMPLE_SCHEMA)


def _reference(rows: list[tuple[str, str, int, int, float]]) -> tuple[list[int], dict[str, int]]:
    """The rule as a plain loop: kept row indices and counts."""
    latest: dict[tuple[str, str, int], tuple[int, float]] = {}
    kept, counts = [], {"duplicate": 0, "conflict": 0, "stepped_back": 0}
    for i, (h, g, f, t, v) in enumerate(rows):
        prev = latest.get((h, g, f))
        if prev is None or t > prev[0]:
            latest[(h, g, f)] = (t, v)
            kept.append(i)
        elif t == prev[0]:
            counts["duplicate" if v == prev[1] else "conflict"] += 1
        else:
            counts["stepped_back"] += 1
    return kept, counts


@pytest.mark.parametrize("small_rows", [0, 512])  # the vectorised path, and the row-by-row one
def test_the_rule_equals_its_plain_loop_in_any_batching(monkeypatch: pytest.MonkeyPatch, small_rows: int) -> None:
    monkeypatch.setattr(time_order, "SMALL_ROWS", small_rows)
    rng = random.Random(4)
    for _ in range(300):
        n = rng.randint(1, 60)
        t = 1_735_689_600_000
        rows = []
        for _ in range(n):
            t += rng.choice([-2000, -1000, 0, 0, 1000, 1000, 1000, 5000])
            rows.append((rng.choice("ab"), rng.choice("01"), rng.choice([1002, 1005]), t, float(rng.choice([1, 2]))))
        kept, counts = _reference(rows)
        order = TimeOrder("x")
        got = []
        cuts = sorted(rng.sample(range(n + 1), min(3, n + 1)))
        prev = 0
        for cut in [*cuts, n]:
            part = _table(rows[prev:cut]) if cut > prev else SAMPLE_SCHEMA.empty_table()
            got.append(order.keep(part))
            prev = cut
        table = pa.concat_tables(got)
        want = _table([rows[i] for i in kept]) if kept else SAMPLE_SCHEMA.empty_table()
        assert table.equals(want), rows
        assert order.counts == counts


DST = """timestamp, index, utilization.gpu [%]
2026/11/01 00:59:00.000, 0, 10 %
2026/11/01 01:00:00.000, 0, 10 %
2026/11/01 01:00:30.000, 0, 10 %
2026/11/01 01:59:30.000, 0, 10 %
2026/11/01 01:00:00.000, 0, 90 %
2026/11/01 01:00:30.000, 0, 90 %
2026/11/01 01:59:30.000, 0, 90 %
2026/11/01 02:00:00.000, 0, 20 %
"""


def test_a_repeated_dst_hour_is_rejected_counted_and_linted(tmp_path: Path) -> None:
    p = tmp_path / "smi.csv"
    p.write_text(DST)
    r = parse_path(p)
    assert r.meta["time_order"] == {"conflict": 1, "stepped_back": 2}  # 01:59:30 again: another value
    assert (r.accounting.records, r.accounting.rejected) == (5, 3)
    assert [v for v in r.samples.column("value").to_pylist()] == [0.1, 0.1, 0.1, 0.1, 0.2]  # 90 % never mixed in
    out = tmp_path / "a.json"
    res = CliRunner().invoke(main, ["analyze", str(p), "--json", str(out), "--html", str(tmp_path / "a.html"), "-q"])
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    [lint] = [x for x in doc["lint"] if x["code"] == "samples-out-of-time-order"]
    assert "1 conflict, 2 stepped back" in lint["message"]
    [inp] = doc["inputs"]
    assert (inp["records"], inp["rejected"]) == (5, 3)
    assert any("DST hour" in x["reason"] for x in doc["rejected"])
    assert all(abs(w["metrics"]["gpu_util"] - 0.9) > 1e-9 for w in doc["windows"])


@pytest.mark.parametrize(("lines", "kind"), [
    (['DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 50 1735689600000',
      'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 70 1735689600000'], "conflict"),
    (['DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 50 1735689600000',
      'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 50 1735689600000'], "duplicate"),
    (['DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 50 1735689660000',
      'DCGM_FI_DEV_GPU_UTIL{gpu="0",Hostname="h"} 70 1735689600000'], "stepped_back"),
])
def test_one_gpu_field_time_holds_one_value(tmp_path: Path, lines: list[str], kind: str) -> None:
    p = tmp_path / "s.prom"
    p.write_text("\n".join([*lines, 'DCGM_FI_DEV_GPU_UTIL{gpu="1",Hostname="h"} 30 1735689600000']) + "\n")
    for result in (parse_path(p), _streamed(p)):
        assert result.meta["time_order"] == {kind: 1}
        assert (result.accounting.records, result.accounting.rejected) == (2, 1)
    assert parse_path(p).samples.column("value").to_pylist() == [0.5, 0.3]  # the earlier kept


def _streamed(p: Path) -> object:
    s = stream_path(p)
    for _ in s:
        pass
    return s.result


def test_ingest_keeps_the_rule_and_counts(tmp_path: Path) -> None:
    p = tmp_path / "smi.csv"
    p.write_text(DST)
    ds = tmp_path / "ds"
    res = CliRunner().invoke(main, ["ingest", str(p), "--to", str(ds), "--host", "n1"])
    assert res.exit_code == 0, res.output
    assert "5 samples (0 missing, 3 rejected)" in res.output
    [entry] = json.loads((ds / "_manifest.json").read_text())["inputs"]
    assert (entry["records"], entry["rejected"]) == (5, 3)
