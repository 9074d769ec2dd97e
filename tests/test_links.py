"""NVLink / PCIe throughput read, charted and summarised per GPU (issue 24, "NVLink / PCIe";
docs/formulas.md#links): bytes/s with units, and as a share of the link's sourced peak per direction
(PCIe generation x width, NVLink by model), 'unknown' where no peak can be sourced."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from fixtures.make_dcgm import MODEL, START_MS, prom_links
from rooftop.cli.commands import main
from tests.conftest import corpus_dir

REPO = Path(__file__).resolve().parents[1]
NVLINK_PCIE = "liguodongiot__llm-action__docs__llm-base__dcgmi.md.dmon_nvlink_pcie.txt"


def _analyze(tmp_path: Path, src: Path, *extra: str) -> tuple[dict[str, Any], str, str]:
    out, html, md = tmp_path / "a.json", tmp_path / "a.html", tmp_path / "a.md"
    res = CliRunner().invoke(main, ["analyze", str(src), *extra, "--json", str(out), "--html", str(html),
                                    "--md", str(md), "-q"])
    assert res.exit_code == 0, res.output
    return json.loads(out.read_text()), html.read_text(), md.read_text()


def test_link_means_are_time_weighted_hand_computed(tmp_path: Path) -> None:
    src = tmp_path / "links.prom"
    src.write_text(prom_links())
    doc, page, md = _analyze(tmp_path, src, "--window", "60")
    rows = {(r["link"], r["direction"]): r for r in doc["links"]}
    tx = rows[("NVLink", "tx")]
    assert abs(tx["mean_bytes_s"] - (1e9 * 60 + 3e9 * 30) / 90) < 1 and tx["max_bytes_s"] == 3e9
    assert tx["covered_s"] == 90
    # an H100 SXM (the fixture's "NVIDIA H100 80GB HBM3"): NVLink 900 GB/s total = 450e9 B/s per direction
    assert tx["peak_bytes_s"] == 450e9
    assert tx["share_of_peak"] == pytest.approx(((1e9 * 60 + 3e9 * 30) / 90) / 450e9)
    assert tx["max_share_of_peak"] == pytest.approx(3e9 / 450e9)
    rx = rows[("PCIe", "rx")]
    assert rx["mean_bytes_s"] == 5e8
    # no link fields in the input: the model's PCIe Gen5 x16, 32 GT/s x 128/130 / 8 x 16 lanes, assumed
    assert rx["peak_bytes_s"] == pytest.approx(32e9 * 128 / 130 / 8 * 16)
    assert rx["share_of_peak"] == pytest.approx(5e8 / (32e9 * 128 / 130 / 8 * 16))
    assert "assumed" in rx["peak_basis"]
    assert "% of peak" in page and "0.4%" in page and "% of peak" in md
    assert "NVLink transmit (DCGM NVLINK_TX_BYTES)" in page and 'id="links"' in page
    assert "1.67 GB/s" in page and "1.67 GB/s" in md
    assert doc["timelines"]["n1/0"]["nvlink_tx_bytes"] == [1e9, 3e9]


def test_pcie_share_of_the_current_link_hand_computed(tmp_path: Path) -> None:
    # the input says the link runs at Gen4 x8 (fields 237/238): 8 x 16 GT/s x 128/130 / 8 = 15.75 GB/s
    # per direction; PCIe RX 0.5 GB/s is 3.17 % of it. An L4 has no NVLink: n/a, not unknown
    src = tmp_path / "gen.prom"
    lines = []
    for k in range(4):
        ts = START_MS + k * 15_000
        for model, gpu in ((MODEL, "0"), ("NVIDIA L4", "1")):
            lab = f'gpu="{gpu}",modelName="{model}",Hostname="n1"'
            lines += [f"DCGM_FI_PROF_PCIE_RX_BYTES{{{lab}}} 500000000 {ts}",
                      f"DCGM_FI_PROF_NVLINK_TX_BYTES{{{lab}}} 0 {ts}",
                      f"DCGM_FI_DEV_PCIE_LINK_GEN{{{lab}}} 4 {ts}", f"DCGM_FI_DEV_PCIE_LINK_WIDTH{{{lab}}} 8 {ts}"]
    src.write_text("\n".join(lines) + "\n")
    doc, page, md = _analyze(tmp_path, src, "--window", "60")
    rows = {(r["gpu_key"], r["link"]): r for r in doc["links"]}
    peak = 8 * 16e9 * 128 / 130 / 8
    for gpu in ("n1/0", "n1/1"):
        rx = rows[(gpu, "PCIe")]
        assert rx["peak_bytes_s"] == pytest.approx(peak) and rx["share_of_peak"] == pytest.approx(5e8 / peak)
        assert "Gen4 x8" in rx["peak_basis"] and "current" in rx["peak_basis"] and "assumed" not in rx["peak_basis"]
    assert rows[("n1/0", "NVLink")]["share_of_peak"] == 0.0
    l4 = rows[("n1/1", "NVLink")]
    assert l4["share_of_peak"] is None and l4["peak_basis"].startswith("n/a")
    assert "3.2%" in page and "n/a" in page and "3.2%" in md


def test_nvidia_smi_pcie_columns_in_bytes(tmp_path: Path) -> None:
    """nvidia-smi dmon rxpci/txpci (MB/s) as bytes/s: with 1 s windows the mean is the column's."""
    src = REPO / "fixtures/capture/h100/nvsmi_dmon.txt"
    doc, _page, _md = _analyze(tmp_path, src, "--window", "1")
    head = next(ln.split() for ln in src.read_text().splitlines() if ln.startswith("#Date"))
    rx = head.index("rxpci")  # "#Date" is the date column's header
    vals = [float(ln.split()[rx]) for ln in src.read_text().splitlines() if ln.strip() and not ln.startswith("#")]
    rows = {(r["link"], r["direction"]): r for r in doc["links"]}
    assert abs(rows[("PCIe", "rx")]["mean_bytes_s"] - 1e6 * sum(vals) / len(vals)) < 1e-6 * max(vals) * 1e6


def test_corpus_nvlink_pcie_dmon_page_is_not_empty(tmp_path: Path) -> None:
    corpus = corpus_dir("dcgm")
    doc, page, _md = _analyze(tmp_path, corpus / NVLINK_PCIE)
    rows = doc["links"]
    assert {r["gpu_key"] for r in rows} == {str(g) for g in range(8)}
    nv = [r for r in rows if r["link"] == "NVLink"]
    assert len(nv) == 16 and all(1e9 < r["max_bytes_s"] < 1e11 for r in nv)  # ~1e10-3.7e10 B/s per H800
    # the file names no model: no peak can be sourced, every share unknown (and says what decides it)
    assert all(r["share_of_peak"] is None and "--device" in r["peak_basis"] for r in rows)
    for chart in ("NVLink transmit", "NVLink receive", "PCIe transmit", "PCIe receive"):
        assert chart in page
    section = page.split('id="links"')[1].split("</table>")[0]
    assert "unknown" in section and "%</td>" not in section
    # given the model (an H100 SXM by --device): NVLink mean / 450e9, PCIe mean / the model's Gen5 x16
    doc, page, _md = _analyze(tmp_path, corpus / NVLINK_PCIE, "--device", "NVIDIA H100 SXM5 80GB")
    for r in doc["links"]:
        peak = 450e9 if r["link"] == "NVLink" else 32e9 * 128 / 130 / 8 * 16
        assert r["peak_bytes_s"] == pytest.approx(peak)
        assert r["share_of_peak"] == pytest.approx(r["mean_bytes_s"] / peak)
        assert r["max_share_of_peak"] == pytest.approx(r["max_bytes_s"] / peak)
    assert all(r["share_of_peak"] < 0.2 for r in doc["links"])


def test_fleet_links_section(tmp_path: Path) -> None:
    src = tmp_path / "links.prom"
    src.write_text(prom_links())
    ds, out, html = tmp_path / "ds", tmp_path / "f.json", tmp_path / "f.html"
    assert CliRunner().invoke(main, ["ingest", str(src), "--to", str(ds), "-q"]).exit_code == 0
    res = CliRunner().invoke(main, ["fleet", str(ds), "--json", str(out), "--html", str(html), "-q"])
    assert res.exit_code == 0, res.output
    links = json.loads(out.read_text())["fleet"]["links"]
    assert links[0]["link"] == "NVLink" and abs(links[0]["mean_bytes_s"] - 5e9 / 3) < 1  # busiest first
    assert 'id="links"' in html.read_text()
