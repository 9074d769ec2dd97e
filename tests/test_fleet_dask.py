"""Local and Dask engines give identical fleet results (a real 2-worker, process-based LocalCluster)."""

from __future__ import annotations

import sys
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

pytest.importorskip("distributed")
pytest.importorskip("rooftop.analyzer.windows")

from rooftop.analyzer.fleet import engines
from rooftop.analyzer.fleet.pipeline import run_fleet

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "bench"))
from gen_fleet import write_fleet

from tests.test_idle_hysteresis import write_hovering

START = datetime(2026, 11, 20, 0, 0, tzinfo=timezone.utc)


@pytest.mark.slow
def test_local_and_dask_give_identical_groups(tmp_path, monkeypatch):
    root = tmp_path / "ds"
    # 5 hosts x 2 GPUs x 900 s; 2 partitions per host (chunk crosses no day) -> 5 files;
    # fan-in 2 so the reduction tree has several levels on both engines
    write_fleet(root, hosts=5, gpus=2, seconds=900, start=START, seed=3, segment_s=300)
    # and a GPU hovering at the idle cut across midnight, its windows in two inputs and date partitions:
    # both engines hold it idle (hysteresis, docs/formulas.md#windows; tests/test_idle_hysteresis.py)
    write_hovering(tmp_path, root)
    monkeypatch.setattr(engines, "FANIN", 2)
    kw = dict(since=START - timedelta(hours=12), until=START + timedelta(hours=36), by=["host", "namespace"],
              workers=2, window_s=60, device=None, top=10, command="")
    local = run_fleet(root, engine="local", scheduler=None, **kw)
    dask = run_fleet(root, engine="dask", scheduler=None, **kw)
    assert local["groups"] and local["groups"] == dask["groups"]  # exact, not approximately
    assert local["windows"] == dask["windows"]
    assert local["findings"] == dask["findings"]
    assert local["fleet"]["files_scanned"] == dask["fleet"]["files_scanned"] == 5 + 2
    assert dask["fleet"]["engine"] == "dask"
    held = [w["label"] for w in dask["windows"] if w["host"] == "node-h"]
    assert held == ["idle"] * 13  # the old rule: every other window not idle


@pytest.mark.slow
def test_dask_on_an_existing_scheduler(tmp_path):
    from distributed import LocalCluster

    root = tmp_path / "ds"
    write_fleet(root, hosts=2, gpus=1, seconds=300, start=START, seed=4)
    kw = dict(since=None, until=None, by=["host"], workers=1, window_s=60, device=None, top=5, command="")
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        remote = run_fleet(root, engine="dask", scheduler=cluster.scheduler_address, **kw)
    local = run_fleet(root, engine="local", scheduler=None, **kw)
    assert remote["groups"] == local["groups"]


@pytest.mark.slow
def test_dask_agrees_on_bus_id_identity_and_counter_boundaries(tmp_path):
    # issue 24: GPUs told apart by PCI bus id (tests/test_pci_bus_id.py) and DCGM 4.6 counter
    # intervals across two files with the reset lint (tests/test_counters_fleet.py), on one cluster
    from distributed import LocalCluster

    from fixtures.make_dcgm import prom_counters, prom_pci
    from rooftop.analyzer.store.ingest import ingest_files
    from rooftop.parsers.source import ParseOptions

    lines = prom_counters().splitlines()
    inputs = {"pci": [("a.prom", prom_pci("00000000:3B:00.0")), ("b.prom", prom_pci("0000:86:00.0", value=0.0))],
              "counters": [("a.prom", "\n".join(lines[:18]) + "\n"), ("b.prom", "\n".join(lines[18:]) + "\n")]}
    kw = dict(since=datetime(2024, 1, 1, tzinfo=timezone.utc), until=datetime(2027, 1, 1, tzinfo=timezone.utc),
              by=["host"], workers=1, window_s=60, device=None, top=5, command="")
    roots = {}
    for name, files in inputs.items():
        paths = []
        for fname, text in files:
            (tmp_path / name).mkdir(exist_ok=True)
            (tmp_path / name / fname).write_text(text)
            paths.append(tmp_path / name / fname)
        roots[name] = tmp_path / name / "ds"
        ingest_files(paths, roots[name], ParseOptions(host="n1"), finished=True)
    with LocalCluster(n_workers=1, threads_per_worker=1, processes=True, dashboard_address=":0") as cluster:
        remote = {k: run_fleet(r, engine="dask", scheduler=cluster.scheduler_address, **kw) for k, r in roots.items()}
    for k, r in roots.items():
        local = run_fleet(r, engine="local", scheduler=None, **kw)
        assert remote[k]["windows"] == local["windows"] and remote[k]["lint"] == local["lint"]
        assert remote[k]["groups"] == local["groups"]
    assert remote["pci"]["fleet"]["gpus"] == 2
    assert any(x["code"] == "dcgm-counter-reset" and "by host: n1 1" in x["message"] for x in remote["counters"]["lint"])


def test_unreachable_scheduler_is_an_input_error(tmp_path, monkeypatch):
    from rooftop.errors import InputError

    monkeypatch.setattr(engines, "CONNECT_TIMEOUT", "1s")
    root = tmp_path / "ds"
    write_fleet(root, hosts=1, gpus=1, seconds=60, start=START)
    with pytest.raises(InputError, match="no Dask scheduler"):
        run_fleet(root, engine="dask", scheduler="tcp://127.0.0.1:9", since=None, until=None,
                  by=["host"], workers=1, window_s=60, device=None, top=5, command="")
