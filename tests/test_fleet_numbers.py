"""Fleet numbers an operator acts on (issue 24, "Numbers that are wrong today"): no GPU-hours
invented across gaps, one identity per physical GPU, MIG counted once, one GPU count everywhere
(docs/formulas.md#windows "Covered time", docs/formulas.md#fleet "GPU identity", "MIG")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from tests.conftest import corpus_dir

T0 = 1_735_689_600_000  # 2025-01-01T00:00:00Z
DAY = 86_400_000


def _run(*args: Any) -> Result:
    return CliRunner().invoke(main, [str(a) for a in args])


def _fleet(tmp_path: Path, *inputs: Path, ingest: tuple[Any, ...] = (), fleet: tuple[Any, ...] = ()) -> dict[str, Any]:
    ds = tmp_path / "ds"
    res = _run("ingest", *inputs, "--to", ds, "-q", "--finished", *ingest)
    assert res.exit_code == 0, res.output
    out = tmp_path / "f.json"
    res = _run("fleet", ds, "--since", "2024-01-01", "--until", "2027-01-01", "--json", out, "--no-html", "-q",
               *fleet)
    assert res.exit_code == 0, res.output
    doc: dict[str, Any] = json.loads(out.read_text())
    return doc


def _prom(path: Path, rows: list[tuple[int, str, float]], host: str | None = "n1", uuid: str | None = None) -> Path:
    """Prometheus text lines ``DCGM_FI_PROF_GR_ENGINE_ACTIVE{gpu, Hostname} value t_ms``."""
    lines = []
    for t, gpu, v in rows:
        labels = [f'gpu="{gpu}"'] + ([f'Hostname="{host}"'] if host else []) + ([f'UUID="{uuid}"'] if uuid else [])
        lines.append(f"DCGM_FI_PROF_GR_ENGINE_ACTIVE{{{','.join(labels)}}} {v} {t}")
    path.write_text("\n".join(lines) + "\n")
    return path


# ---- defect 2: a gap is missing data, not a sampling interval --------------------------------

def test_two_instant_scrapes_months_apart_cover_nothing(tmp_path: Path) -> None:
    # the corpus case (vks / vsphere): two instant scrapes of one GPU 257 days apart were read as a
    # 257-day sampling interval, each instant a full 60 s window of "idle" GPU-time
    p = _prom(tmp_path / "two.prom", [(T0, "0", 0.0), (T0 + 257 * DAY, "0", 0.0)])
    doc = _fleet(tmp_path, p)
    assert doc["fleet"]["gpu_hours"] == 0.0
    assert not [f for f in doc["findings"] if f["rule"] == "fleet-idle"]
    assert any(x["code"] == "dcgm-single-sample-window" for x in doc["lint"])


def test_steady_scrapes_still_cover_their_time(tmp_path: Path) -> None:
    # 30 s scrapes for 10 minutes (20 samples) -> 600 s; 5-minute scrapes for an hour (13 samples)
    # in 60 s windows: each sample covers its 60 s window (the step is within 5 windows)
    p = _prom(tmp_path / "steady.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(20)]
              + [(T0 + DAY + k * 300_000, "1", 0.5) for k in range(13)])
    doc = _fleet(tmp_path, p, fleet=("--by", "gpu"))
    hours = {g["key"]["gpu"]: g["gpu_hours"] for g in doc["groups"]}
    assert abs(hours["0"] * 3600 - 600.0) < 1e-6
    assert abs(hours["1"] * 3600 - 13 * 60.0) < 1e-6


# ---- defect 3: one identity per physical GPU -------------------------------------------------

def test_inputs_without_host_are_never_one_gpu(tmp_path: Path) -> None:
    # two machines' exports, neither names a host nor a UUID, both have GPU 0: two GPUs, not one
    a = _prom(tmp_path / "a.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(10)], host=None)
    (tmp_path / "b").mkdir()
    b = _prom(tmp_path / "b" / "a.prom", [(T0 + k * 30_000, "0", 0.0) for k in range(10)], host=None)
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 2
    assert sum(g["gpus"] for g in doc["groups"]) == 2 and len(doc["groups"]) == 2
    assert abs(doc["fleet"]["gpu_hours"] * 3600 - 2 * 300.0) < 1e-6
    [lint] = [x for x in doc["lint"] if x["code"] == "inputs-without-host"]
    assert "2 input(s)" in lint["message"]


def test_a_uuid_is_one_gpu_across_inputs(tmp_path: Path) -> None:
    # one GPU seen by two inputs that name no host (a rotated log): its UUID makes it one GPU
    u = "GPU-603a8873-0edd-c157-ce48-2078e8b1a935"
    a = _prom(tmp_path / "x.prom", [(T0 + k * 30_000, "0", 0.5) for k in range(10)], host=None, uuid=u)
    b = _prom(tmp_path / "y.prom", [(T0 + 300_000 + k * 30_000, "0", 0.5) for k in range(10)], host=None, uuid=u)
    doc = _fleet(tmp_path, a, b)
    assert doc["fleet"]["gpus"] == 1


# ---- defects 4 and 8: a MIG GPU counted once, one GPU count everywhere -----------------------

def _dmon_mig(path: Path, ticks: int) -> Path:
    head = ["# Entity  GRACT  SMACT  TENSO  DRAMA", "      Id"]
    rows = []
    for _ in range(ticks):
        rows += ["   GPU 0  0.429  0.429  0.011  0.400", "   GPU-I 0  0.000  0.000  0.000  0.000",
                 "   GPU-I 1  0.750  0.750  0.020  0.800"]
    path.write_text("\n".join(head + rows) + "\n")
    return path


def test_mig_gpu_counted_once(tmp_path: Path) -> None:
    # the corpus's zhihu MIG dmon shape (parent GPU 0 beside GPU-I 0 and 1), 60 ticks of 1 s: one
    # GPU, 60 GPU-seconds (was 3 GPUs and 180 s); the parent is not labelled
    p = _dmon_mig(tmp_path / "mig.txt", 60)
    doc = _fleet(tmp_path, p, ingest=("--host", "m1", "--start", "2025-01-01T00:00:00Z"), fleet=("--by", "gpu"))
    assert doc["fleet"]["gpus"] == 1
    assert abs(doc["fleet"]["gpu_hours"] * 3600 - 60.0) < 1e-6
    parent = [w for w in doc["windows"] if not w.get("mig")]
    assert parent and all(w["label"] == "unknown" for w in parent)
    assert any("MIG: 2 instance(s)" in e for e in parent[0]["evidence"])
    # one GPU count: the header's, and each group's (a MIG instance's group counts its physical GPU)
    assert {g["gpus"] for g in doc["groups"]} == {1}


def test_mig_corpus_file_is_one_gpu(tmp_path: Path) -> None:
    d = corpus_dir("dcgm")
    doc = _fleet(tmp_path, d / "unattributed__zhihu-MIG-article-mirror__dmon_mig_5fields.txt",
                 ingest=("--host", "z", "--start", "2025-01-01T00:00:00Z"))
    assert doc["fleet"]["gpus"] == 1 and doc["groups"][0]["gpus"] == 1


def test_mig_memory_share_is_memory_slices() -> None:
    from rooftop.analyzer.windows.identity import memory_share

    assert memory_share("1g.5gb", "NVIDIA A100-SXM4-40GB") == 1 / 8
    assert memory_share("3g.20gb", "NVIDIA A100-SXM4-40GB") == 4 / 8
    assert memory_share("1g.10gb", "NVIDIA H100 80GB HBM3") == 1 / 8
    assert memory_share("2g.12gb", "NVIDIA A30") == 1 / 2
    assert memory_share(None, "NVIDIA A30") is None
