"""GPU identity by PCI bus id (issue 24 defect 3; docs/formulas.md#windows "GPU identity"): UUID, else
the bus id on its host, else host + index. Generated files: fixtures/make_dcgm.py ``prom_pci``,
``smi_pci``; corpus: a dcgm-exporter scrape and an nvidia-smi CSV that carry the bus id."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner, Result

from fixtures.make_dcgm import START_MS, prom_pci, smi_pci
from rooftop.analyzer.pipeline import run_analysis
from rooftop.cli.commands import main
from rooftop.parsers.pci import normalise_bus_id
from tests.conftest import corpus_dir


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _fleet(tmp_path: Path, *inputs: Path, host: str | None = "n1", engine: str = "local") -> dict[str, Any]:
    ds = tmp_path / "ds"
    if not (ds / "_manifest.json").exists() and not any(ds.glob("*manifest*")):
        res = _run("ingest", *inputs, "--to", ds, "-q", "--finished", *(["--host", host] if host else []))
        assert res.exit_code == 0, res.output
    out = tmp_path / f"f-{engine}.json"
    res = _run("fleet", ds, "--since", "2024-01-01", "--until", "2027-01-01", "--json", out, "--no-html", "-q",
               "--engine", engine, *(["--workers", "2"] if engine == "dask" else []))
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


@pytest.mark.parametrize(("raw", "want"), [
    ("00000000:3B:00.0", "00000000:3B:00.0"),  # NVML / nvidia-smi / dcgm-exporter
    ("0000:3b:00.0", "00000000:3B:00.0"),  # sysfs, lspci -D
    ("3b:00.0", "00000000:3B:00.0"),  # lspci
    (" 0001:c1:00.1 ", "00000001:C1:00.1"),
    ("GPU-3b", None), ("", None), ("0000:3b:00", None), (None, None),
])
def test_bus_id_normalised_to_nvml_form(raw: str | None, want: str | None) -> None:
    assert normalise_bus_id(raw) == want


def test_containers_gpu_0_on_one_host_are_two_gpus(tmp_path: Path) -> None:
    # two containers on host n1 each see their GPU as index 0 with no UUID: the bus ids tell them
    # apart (the old key host/index made them one GPU with doubled samples)
    a = tmp_path / "a.prom"
    b = tmp_path / "b.prom"
    a.write_text(prom_pci("00000000:3B:00.0"))
    b.write_text(prom_pci("0000:86:00.0", value=0.0))
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 2
    assert {w["host"] for w in doc["windows"]} == {"n1"}  # --host names samples that name none
    buses = {w["pci_bus_id"] for w in doc["windows"]}
    assert buses == {"00000000:3B:00.0", "00000000:86:00.0"}
    # each GPU covers its own 8 x 15 s = 120 s: 2 x 120 s of GPU time
    assert doc["fleet"]["gpu_hours"] == pytest.approx(2 * 120 / 3600)


def test_same_bus_id_renumbered_across_files_is_one_gpu(tmp_path: Path) -> None:
    # one host, one GPU: index 0 in the first file, index 1 after a renumbering in the second (bus
    # id written by another tool in sysfs form): one GPU, not two
    a = tmp_path / "a.prom"
    b = tmp_path / "b.prom"
    a.write_text(prom_pci("00000000:3B:00.0", gpu="0"))
    b.write_text(prom_pci("0000:3b:00.0", gpu="1", t0_ms=START_MS + 120_000))
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 1
    assert doc["fleet"]["gpu_hours"] == pytest.approx(240 / 3600)


def test_analyze_inputs_without_host_or_uuid_distinct_by_bus_id(tmp_path: Path) -> None:
    # two nvidia-smi captures, no host, no UUID, both GPU 0: distinct bus ids are distinct GPUs,
    # each with its own windows (before: one merged window of both files' samples)
    a = tmp_path / "a.csv"
    b = tmp_path / "b.csv"
    a.write_text(smi_pci((("0", "00000000:3B:00.0"),)))
    b.write_text(smi_pci((("0", "0000:af:00.0"),)))
    doc = run_analysis([str(a), str(b)], window_s=60.0)
    wins = doc["windows"]
    assert {w["pci_bus_id"] for w in wins} == {"00000000:3B:00.0", "00000000:AF:00.0"}
    starts = pd.Series([w["start"] for w in wins])
    assert starts.value_counts().max() == 2  # one window per GPU per minute


def test_old_dataset_without_the_column_stays_readable(tmp_path: Path) -> None:
    # a dataset written before the column existed: its partitions lack pci_bus_id; fleet reads it
    # (the key is null) with the numbers it gave then, and pandas opens it
    a = tmp_path / "a.prom"
    a.write_text(prom_pci("00000000:3B:00.0"))
    new = _fleet(tmp_path, a)
    ds = tmp_path / "ds"
    for f in ds.rglob("*.parquet"):
        t = pq.read_table(f, partitioning=None)
        assert "pci_bus_id" in t.column_names
        pq.write_table(t.drop_columns(["pci_bus_id"]), f)
    old = _fleet(tmp_path, a)
    assert old["fleet"]["gpus"] == new["fleet"]["gpus"] == 1
    assert old["fleet"]["gpu_hours"] == new["fleet"]["gpu_hours"]
    assert {w["pci_bus_id"] for w in old["windows"]} == {None}
    assert len(pd.read_parquet(ds)) == 8


def test_corpus_exporter_and_smi_carry_the_bus_id() -> None:
    d = corpus_dir("dcgm")
    prom = d / "cncf__k8s-ai-conformance__v1.35__kops__tests__TestObservability_AcceleratorMetrics_ViaDCGM__output.md.metrics.prom"
    smi = d / "AkshayRoyal__gpu-usage__gpu_usage.csv"
    doc = run_analysis([str(prom)])
    assert doc["windows"] and {w["pci_bus_id"] for w in doc["windows"]} == {"00000000:31:00.0"}
    doc = run_analysis([str(smi)])
    assert doc["windows"] and {w["pci_bus_id"] for w in doc["windows"]} == {"00000000:01:00.0"}


def test_analyze_host_option_names_exporter_samples_without_one(tmp_path: Path) -> None:
    # --host reached only the dmon and nvidia-smi parsers: a dcgm-exporter scrape without Hostname
    # analysed with --host n7 had host null (and two such files' GPU 0 were one GPU)
    a = tmp_path / "a.prom"
    a.write_text(prom_pci("00000000:3B:00.0"))
    out = tmp_path / "a.json"
    res = _run("analyze", a, "--host", "n7", "--json", out, "--no-html", "-q")
    assert res.exit_code == 0, res.output
    wins = json.loads(out.read_text())["windows"]
    assert wins and {w["host"] for w in wins} == {"n7"}
