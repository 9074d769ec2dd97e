"""Issue 24 defect 1: Prometheus samples with no GPU identity (no gpu/UUID label, e.g. a bare
``DCGM_FI_PROF_SM_ACTIVE 0`` after real blocks) are rejected at parse time with file and line, counted
in the input's ``rejected``, never stored by ``ingest`` (docs/formulas.md#inputs, "GPU identity of a
sample"). Generated file: fixtures/make_dcgm.py ``prom_label_less``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from fixtures.make_dcgm import START_MS, UUIDS, prom_label_less
from rooftop.cli.commands import main


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def test_analyze_rejects_label_less_samples_with_their_lines(tmp_path: Path) -> None:
    src = tmp_path / "exporter.prom"
    src.write_text(prom_label_less(scrapes=8, tail=3))
    out = tmp_path / "a.json"
    res = _run("analyze", src, "--json", out, "--no-html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    [inp] = doc["inputs"]
    assert (inp["records"], inp["rejected"]) == (16, 3)
    assert [r["line"] for r in doc["rejected"]] == [17, 18, 19]
    assert all(r["path"] == str(src) and "no GPU identity" in r["reason"] and "gpu and UUID" in r["reason"]
               for r in doc["rejected"])
    assert {w["gpu"] for w in doc["windows"]} == {"0", "1"}
    assert "samples-without-gpu" not in {x["code"] for x in doc["lint"]}


def test_ingest_never_stores_them(tmp_path: Path) -> None:
    src = tmp_path / "exporter.prom"
    src.write_text(prom_label_less(scrapes=8, tail=3))
    ds = tmp_path / "ds"
    res = _run("ingest", src, "--to", ds, "-q")
    assert res.exit_code == 0, res.output
    import pandas as pd
    import pyarrow.dataset as pds
    rows = pds.dataset(ds, format="parquet", partitioning="hive", exclude_invalid_files=True).to_table(
        columns=["gpu", "uuid"]).to_pandas()
    assert len(rows) == 16 and pd.notna(rows["gpu"]).all()
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--json", out, "--no-html")
    assert res.exit_code == 0, res.output
    assert "samples-without-gpu" not in {x["code"] for x in json.loads(out.read_text())["lint"]}


def test_query_series_without_a_gpu_is_rejected(tmp_path: Path) -> None:
    series = [{"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "gpu": "0", "UUID": UUIDS["0"], "Hostname": "n1"},
               "values": [[START_MS / 1000 + 15 * k, "50"] for k in range(4)]},
              {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "n1"},
               "values": [[START_MS / 1000 + 15 * k, "0"] for k in range(4)]}]
    src = tmp_path / "q.json"
    src.write_text(json.dumps({"status": "success", "data": {"resultType": "matrix", "result": series}}))
    out = tmp_path / "q.out.json"
    res = _run("analyze", src, "--json", out, "--no-html", "-q")
    assert res.exit_code == 0, res.output
    doc = json.loads(out.read_text())
    [inp] = doc["inputs"]
    assert (inp["records"], inp["rejected"]) == (4, 4)
    assert all("series 1" in r["reason"] and "no GPU identity" in r["reason"] for r in doc["rejected"])
