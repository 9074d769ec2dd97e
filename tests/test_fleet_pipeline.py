"""``rooftop fleet``: roll-ups, night-over-night trend, findings, tree reduction, end to end."""

from __future__ import annotations

import importlib
import sys
import types
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from rooftop.analyzer.fleet.engines import TreeReducer
from rooftop.analyzer.fleet.rollup import (
    fleet_findings,
    group_columns,
    group_records,
    rollup,
    trend,
)
from rooftop.errors import InputError

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_fleet import write_fleet

START = datetime(2026, 11, 20, 0, 0, tzinfo=timezone.utc)

# ---------------------------------------------------------------------------------------------
# stand-in for analyzer.windows, used only while the real module is absent from the tree

STANDIN_METRICS = {1001: "gr_active", 1002: "sm_active", 1004: "tensor_active", 1005: "dram_active"}


def _standin() -> types.ModuleType:
    mod = types.ModuleType("rooftop.analyzer.windows")
    keys = ("host", "gpu", "model", "mig")

    def window_partials(df: pd.DataFrame, window_s: float) -> pd.DataFrame:
        ms = df["timestamp"].astype("int64") // 1_000_000 if df["timestamp"].dtype.kind == "M" else \
            df["timestamp"].astype("int64")
        d = df.assign(window=(ms // int(window_s * 1000)).astype("int64"))
        return (d.groupby([*keys, "window", "field_id"], dropna=False)["value"]
                .agg(sum="sum", count="count").reset_index())

    def combine_partials(parts: list[pd.DataFrame]) -> pd.DataFrame:
        return (pd.concat(parts).groupby([*keys, "window", "field_id"], dropna=False)[["sum", "count"]]
                .sum().reset_index())

    def finish_windows(p: pd.DataFrame) -> pd.DataFrame:
        p = p[p["field_id"].isin(list(STANDIN_METRICS))].assign(mean=p["sum"] / p["count"])
        wide = p.pivot_table(index=[*keys, "window"], columns="field_id", values="mean",
                             dropna=False, observed=True).reset_index()
        wide = wide.rename(columns=STANDIN_METRICS)
        wide.columns = [str(c) for c in wide.columns]
        return wide

    def classify_windows(wide: pd.DataFrame, device: str | None) -> pd.DataFrame:
        w = wide.copy()
        w["label"] = np.select(
            [w["gr_active"] < 0.05, w["sm_active"] < 0.5, w["tensor_active"] >= 0.3,
             w["dram_active"] >= 0.5], ["idle", "overhead-bound", "compute-bound", "memory-bound"],
            "mixed")
        w["limiter"] = "unknown"
        w["est_flops_s"] = w["tensor_active"] * 1e15
        w["est_dram_bytes_s"] = w["dram_active"] * 2e12
        w["start"] = pd.to_datetime(w["window"] * 60, unit="s", utc=True)
        return w

    mod.KEY_COLUMNS = keys  # type: ignore[attr-defined]
    mod.PROFILE_METRICS = tuple(STANDIN_METRICS.values())  # type: ignore[attr-defined]
    mod.window_partials = window_partials  # type: ignore[attr-defined]
    mod.combine_partials = combine_partials  # type: ignore[attr-defined]
    mod.finish_windows = finish_windows  # type: ignore[attr-defined]
    mod.classify_windows = classify_windows  # type: ignore[attr-defined]
    return mod


@pytest.fixture
def windows_module(monkeypatch):
    try:
        return importlib.import_module("rooftop.analyzer.windows")
    except ImportError:
        mod = _standin()
        monkeypatch.setitem(sys.modules, "rooftop.analyzer.windows", mod)
        return mod


# ---------------------------------------------------------------------------------------------
# pure roll-ups on constructed windows


def _windows(rows: list[tuple[str, str, str, float, float, str]]) -> pd.DataFrame:
    """rows: (host, gpu, label, sm_active, est_flops_s, namespace)."""
    return pd.DataFrame(rows, columns=["host", "gpu", "label", "sm_active", "est_flops_s", "namespace"]) \
        .assign(model="H100", mig=None, dram_active=0.2, est_dram_bytes_s=4e11)


def test_rollup_gpu_hours_shares_and_means():
    # host a: gpu 0 -> 3 windows (2 compute, 1 idle); gpu 1 -> 1 memory-bound. window 600 s = 1/6 h
    w = _windows([("a", "0", "compute-bound", 0.9, 6e14, "ns1"), ("a", "0", "compute-bound", 0.8, 4e14, "ns1"),
                  ("a", "0", "idle", 0.0, 0.0, None), ("a", "1", "memory-bound", 0.7, 1e14, "ns2"),
                  ("b", "0", "idle", 0.0, 0.0, None)])
    r = rollup(w, ["host"], window_s=600).set_index("host")
    assert r.loc["a", "gpus"] == 2 and r.loc["a", "windows"] == 4
    assert r.loc["a", "gpu_hours"] == pytest.approx(4 / 6)
    assert r.loc["a", "share_compute-bound"] == pytest.approx(0.5)
    assert r.loc["a", "share_idle"] == pytest.approx(0.25)
    assert r.loc["a", "sm_active"] == pytest.approx((0.9 + 0.8 + 0.0 + 0.7) / 4)
    assert r.loc["a", "est_flops_s"] == pytest.approx((6e14 + 4e14 + 0 + 1e14) / 4)
    assert r.loc["a", "est_flop"] == pytest.approx((6e14 + 4e14 + 1e14) * 600)
    assert r.loc["b", "share_idle"] == 1.0
    assert list(r.index) == ["a", "b"]  # most GPU-hours first
    by_ns = rollup(w, ["namespace"], window_s=600).set_index("namespace")
    assert by_ns.loc["(none)", "windows"] == 2 and by_ns.loc["ns1", "gpus"] == 1
    by_gpu = rollup(w, ["gpu"], window_s=600)
    assert len(by_gpu) == 3  # (a,0), (a,1), (b,0): a GPU index is per host
    assert group_columns(["gpu"]) == ["host", "gpu", "mig"]
    with pytest.raises(ValueError):
        group_columns(["../etc"])


def test_trend_flags_what_moved_and_findings_rank():
    prev = _windows([("a", "0", "compute-bound", 0.9, 6e14, "x")] * 6 + [("b", "0", "compute-bound", 0.9, 6e14, "x")] * 6)
    # host a: same hours, half the windows now overhead-bound, sm 0.9 -> (3*0.9+3*0.3)/6 = 0.6
    cur = _windows([("a", "0", "compute-bound", 0.9, 6e14, "x")] * 3 + [("a", "0", "overhead-bound", 0.3, 1e14, "x")] * 3
                   + [("b", "0", "compute-bound", 0.9, 6e14, "x")] * 6 + [("c", "0", "idle", 0.0, 0.0, None)] * 4)
    t = trend(rollup(cur, ["host"], 600), rollup(prev, ["host"], 600), ["host"]).set_index("host")
    assert t.loc["a", "d_sm_active"] == pytest.approx(0.6 - 0.9)
    assert t.loc["a", "d_share_overhead-bound"] == pytest.approx(0.5)
    moved_a = t.loc["a", "moved"]
    assert "overhead-bound share 0% → 50%" in moved_a and "sm_active 0.90 → 0.60" in moved_a
    assert any(m.startswith("est. FLOP/s") for m in moved_a)  # 6e14 -> 3.5e14: -42 %
    assert t.loc["b", "moved"] == []  # nothing changed
    assert t.loc["c", "moved"] == ["new this period"]
    groups = group_records(t.reset_index(), ["host"])
    assert groups[0]["previous"]["gpu_hours"] == pytest.approx(1.0)
    f = fleet_findings(groups, top=10)
    rules = [(x["rule"], x["group"]["host"]) for x in f]
    # high severity first: c is 100 % idle (4 of 16 windows = 0.25 of fleet time), a overhead 50 %
    assert rules[0] == ("fleet-idle", "c") and f[0]["time_share"] == pytest.approx(4 / 16)
    assert f[0]["est_saving_s"] == pytest.approx(4 * 600)
    assert ("fleet-overhead-bound", "a") in rules and ("fleet-moved", "a") in rules
    assert ("fleet-moved", "b") not in rules
    assert [x["rank"] for x in f] == list(range(1, len(f) + 1))
    assert len(fleet_findings(groups, top=1)) == 1


def test_tree_reducer_shape_is_fixed():
    seen: list[list[str]] = []

    def combine(items: list[str]) -> str:
        seen.append(items)
        return "(" + "+".join(items) + ")"

    r = TreeReducer(combine, fanin=3)
    for i in range(7):
        r.add(str(i))
    assert r.result() == "((0+1+2)+(3+4+5)+6)"  # as level-by-level chunking would do
    assert TreeReducer(combine, fanin=3).result() is None
    one = TreeReducer(combine, fanin=3)
    one.add("x")
    assert one.result() == "x"


# ---------------------------------------------------------------------------------------------
# end to end on a generated dataset


@pytest.fixture
def two_nights(tmp_path) -> Path:
    root = tmp_path / "ds"
    # night 1 and night 2 for 2 hosts x 2 GPUs, 20 minutes each at 1 Hz
    write_fleet(root, hosts=2, gpus=2, seconds=1200, start=START, seed=1, segment_s=600)
    write_fleet(root, hosts=2, gpus=2, seconds=1200, start=START + timedelta(days=1), seed=2,
                segment_s=600)
    return root


def test_run_fleet_end_to_end(two_nights, windows_module):
    from rooftop.analyzer.fleet.pipeline import run_fleet

    doc = run_fleet(two_nights, since=None, until=None, by=["host"], engine="local", scheduler=None,
                    workers=1, window_s=60, device=None, top=5, command="rooftop fleet")
    assert doc["kind"] == "fleet" and doc["schema_version"] == 1
    fl = doc["fleet"]
    assert fl["period"]["until"] == "2026-11-21T00:19:59.001Z"  # newest sample + 1 ms
    assert fl["period"]["since"] == "2026-11-20T00:19:59.001Z"
    groups = doc["groups"]
    assert [g["key"]["host"] for g in groups] == ["node-0000", "node-0001"]
    # night 2: 2 GPUs x 20 windows per host, but the first partial window is cut by since
    # night 2 only (night 1 ends at 00:19:59.000 < since): 20 windows x 4 GPUs
    assert sum(g["windows"] for g in groups) == 80
    assert sum(g["gpu_hours"] for g in groups) == pytest.approx(80 / 60)
    assert all(g["previous"] is not None for g in groups)  # night 1 is the previous period
    assert sum(i["records"] for i in doc["inputs"]) == 4 * 2 * 1200 * 10
    assert len(doc["windows"]) == fl["windows_total"]
    assert doc["findings"] and doc["findings"][0]["rank"] == 1


def test_run_fleet_since_until_and_errors(two_nights, windows_module, tmp_path):
    from rooftop.analyzer.fleet.pipeline import run_fleet

    kw = dict(by=["host", "model"], engine="local", scheduler=None, workers=1, window_s=60, device=None,
              top=5, command="")
    doc = run_fleet(two_nights, since=START, until=START + timedelta(minutes=10), **kw)
    assert sum(g["windows"] for g in doc["groups"]) == 2 * 2 * 10
    assert doc["groups"][0]["previous"] is None
    assert any(x["code"] == "fleet-no-previous-period" for x in doc["lint"])
    with pytest.raises(InputError, match="not a rooftop dataset"):
        run_fleet(tmp_path / "nothing", since=None, until=None, **kw)
    with pytest.raises(InputError, match="period is empty"):
        run_fleet(two_nights, since=START, until=START, **kw)
    with pytest.raises(InputError, match="cannot group by"):
        run_fleet(two_nights, since=None, until=None, **{**kw, "by": ["rack"]})


def test_night_over_night_regression_is_flagged(tmp_path, windows_module):
    from rooftop.analyzer.fleet.pipeline import run_fleet

    root = tmp_path / "ds"
    night2 = START + timedelta(days=1)
    write_fleet(root, hosts=1, gpus=2, seconds=600, start=START, prefix="steady", regime="training")
    write_fleet(root, hosts=1, gpus=2, seconds=600, start=night2, prefix="steady", regime="training")
    write_fleet(root, hosts=1, gpus=2, seconds=600, start=START, prefix="slow", regime="training")
    write_fleet(root, hosts=1, gpus=2, seconds=600, start=night2, prefix="slow", regime="dataload")
    doc = run_fleet(root, since=night2, until=night2 + timedelta(days=1), by=["host"], engine="local",
                    scheduler=None, workers=1, window_s=60, device=None, top=10, command="")
    g = {x["key"]["host"]: x for x in doc["groups"]}
    assert g["steady-0000"]["moved"] == []
    assert g["steady-0000"]["labels"]["compute-bound"]["share"] == 1.0  # tensor 0.62 >= 0.5
    slow = g["slow-0000"]
    # training (GR 0.97, SM 0.92, tensor 0.62) -> data-loading stalls (GR 0.35, SM 0.20)
    assert slow["previous"]["labels"]["compute-bound"]["share"] == 1.0
    assert slow["labels"]["overhead-bound"]["share"] == 1.0
    assert slow["metrics"]["sm_active"] == pytest.approx(0.20, abs=0.01)
    assert "overhead-bound share 0% → 100%" in slow["moved"]
    assert any(m.startswith("sm_active 0.92 → 0.20") for m in slow["moved"])
    rules = {(f["rule"], f["group"]["host"]) for f in doc["findings"]}
    assert ("fleet-overhead-bound", "slow-0000") in rules and ("fleet-moved", "slow-0000") in rules
    assert not any(h == "steady-0000" for _r, h in rules)
    # both GPUs x 10 windows per host, 1/6 GPU-hour each way; est. FLOP/s from the H100/A100 peaks
    assert slow["gpu_hours"] == pytest.approx(20 / 60) and slow["previous"]["gpu_hours"] == pytest.approx(20 / 60)
    assert doc["devices"]


def test_cli_ingest_and_fleet_with_hostile_names(tmp_path, windows_module):
    import json

    from click.testing import CliRunner
    from gen_fleet import host_samples, prometheus_text

    from rooftop.cli.commands import main

    pytest.importorskip("rooftop.parsers.prometheus.text")
    t = host_samples('<script>alert(1)</script>"|`x`', gpus=1, seconds=180, start=START,
                     fields=[1001, 1002, 1004, 1005])
    src = tmp_path / "scrape.prom"
    src.write_text(prometheus_text(t))
    ds = tmp_path / "ds"
    runner = CliRunner()
    r = runner.invoke(main, ["ingest", str(src), "--to", str(ds)])
    assert r.exit_code == 0, r.output
    assert "ingested 1 input(s)" in r.output
    r = runner.invoke(main, ["ingest", str(src), "--to", str(ds)])
    assert "skipped 1 input(s)" in r.output
    html, md, js = tmp_path / "f.html", tmp_path / "f.md", tmp_path / "f.json"
    r = runner.invoke(main, ["fleet", str(ds), "--by", "host,pod", "--html", str(html), "--md", str(md),
                             "--json", str(js), "-q"])
    assert r.exit_code == 0, r.output
    doc = json.loads(js.read_text())
    assert doc["kind"] == "fleet" and doc["groups"][0]["key"]["host"].startswith("<script>")
    assert doc["groups"][0]["windows"] == 3  # 180 s at 60 s windows
    page = html.read_text()
    assert "<script>alert(1)" not in page and "&lt;script&gt;alert(1)" in page
    assert "<script>alert" not in md.read_text()
    r = runner.invoke(main, ["fleet", str(tmp_path / "missing")])
    assert r.exit_code == 2 and "not a rooftop dataset" in r.output


def test_local_threads_give_identical_partials(tmp_path: Path) -> None:
    from rooftop.analyzer.fleet import engines
    from rooftop.analyzer.windows.fields import KEY_COLUMNS

    write_fleet(tmp_path, hosts=3, gpus=2, seconds=300, start=START, seed=1)
    files = sorted(str(p) for p in tmp_path.rglob("*.parquet"))
    t0 = int(START.timestamp() * 1000)
    spec = engines.ScanSpec(columns=engines.scan_columns(list(KEY_COLUMNS), ["host", "mig_profile"]),
                            slices=((t0, t0 + 150_000), (t0 + 150_000, t0 + 300_000)), window_s=60.0,
                            batch_rows=1000)  # several batches per file -> combine inside a fragment
    one, two = engines.run_local(files, spec, threads=1), engines.run_local(files, spec, threads=2)
    assert one is not None and two is not None
    for a, b in zip(one.parts, two.parts, strict=True):
        assert a is not None and b is not None
        pd.testing.assert_frame_equal(a.to_frame(), b.to_frame())  # bit-identical: same additions, same order
    assert one.parts[0] is not None
    assert int(one.parts[0].counts.sum()) == 3 * 2 * 150 * 10  # hosts x GPUs x 150 s x 10 fields
