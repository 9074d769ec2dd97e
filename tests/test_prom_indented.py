"""Prometheus text indented as a docs page prints it (every line behind spaces) is read, not refused."""

from __future__ import annotations

from pathlib import Path

from rooftop.parsers import parse_path

BODY = (
    "# HELP DCGM_FI_DEV_GPU_UTIL GPU utilization (in %).\n"
    "# TYPE DCGM_FI_DEV_GPU_UTIL gauge\n"
    'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-a",modelName="NVIDIA A100-SXM4-40GB",Hostname="h1"} 42\n'
    'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-b",modelName="NVIDIA A100-SXM4-40GB",Hostname="h1"} 17\n'
    'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-a",modelName="NVIDIA A100-SXM4-40GB",Hostname="h1"} 1024\n'
)


def _write(tmp_path: Path, indent: str) -> Path:
    p = tmp_path / "metrics.prom"
    p.write_text("".join(indent + line + "\n" for line in BODY.splitlines()))
    return p


def test_indented_text_gives_the_same_samples(tmp_path: Path) -> None:
    (tmp_path / "plain").mkdir()
    plain = parse_path(_write(tmp_path / "plain", ""))
    for indent in ("    ", "\t", "  \t "):
        r = parse_path(_write(tmp_path, indent))
        assert r.accounting.format == "prometheus-text"
        assert r.accounting.records == plain.accounting.records == 3
        assert r.accounting.rejected == 0
        assert r.samples.column("value").to_pylist() == plain.samples.column("value").to_pylist()
