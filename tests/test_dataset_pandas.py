"""Issue 24: the dataset opens with ``pandas.read_parquet(DATASET)`` (docs/formulas.md#fleet-ingest,
"Layout"). The host folder key is ``host_key`` (the files hold the true ``host``); a dataset written
before with ``host=`` folders keeps that key on later ingests and is still read by ``fleet``."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pandas as pd
from click.testing import CliRunner, Result

from rooftop.analyzer.store.manifest import Manifest
from rooftop.cli.commands import main

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
LONG = "node-" + "x" * 200  # longer than a partition folder name may be: shortened there, never in the data


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _scrapes(path: Path, host: str, scrapes: int = 12) -> Path:
    path.write_text("".join(f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{g}",Hostname="{host}"}} 0.5 {T0 + k * 15_000}\n'
                            for k in range(scrapes) for g in range(2)))
    return path


def test_pandas_reads_the_dataset_with_true_hosts(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    for i, host in enumerate(("n1.example.org", LONG)):
        res = _run("ingest", _scrapes(tmp_path / f"{i}.prom", host), "--to", ds, "-q")
        assert res.exit_code == 0, res.output
    df = pd.read_parquet(ds)
    assert len(df) == 48
    assert sorted(df["host"].astype(str).unique()) == sorted(["n1.example.org", LONG])
    assert set(df["date"].astype(str)) == {"2025-01-01"}
    assert all(Path(f).parts[1].startswith("host_key=") for f in Manifest.load(ds).files())


def test_a_dataset_written_before_keeps_its_layout_and_is_read(tmp_path: Path) -> None:
    ds = tmp_path / "ds"
    res = _run("ingest", _scrapes(tmp_path / "a.prom", "n1"), "--to", ds, "-q")
    assert res.exit_code == 0, res.output
    # the layout of an older rooftop: host= folders, the manifest naming them
    manifest = Manifest.load(ds)
    for date in ds.glob("date=*"):
        for folder in date.glob("host_key=*"):
            shutil.move(str(folder), str(date / ("host=" + folder.name.split("=", 1)[1])))
    for e in manifest.entries:
        e["files"] = [f.replace("/host_key=", "/host=") for f in e["files"]]
    manifest.save()
    res = _run("ingest", _scrapes(tmp_path / "b.prom", "n2"), "--to", ds, "-q")
    assert res.exit_code == 0, res.output
    assert all(Path(f).parts[1].startswith("host=") for f in Manifest.load(ds).files())  # never mixed
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--json", out, "--no-html", "--by", "host")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    assert doc["fleet"]["gpus"] == 4 and {w["host"] for w in doc["windows"]} == {"n1", "n2"}
    assert len(pd.read_parquet(ds, partitioning=None)) == 48  # how an older dataset opens in pandas
