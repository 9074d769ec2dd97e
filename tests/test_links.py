"""NVLink / PCIe throughput read, charted and summarised per GPU (issue 24, "NVLink / PCIe";
docs/formulas.md#links): bytes/s with units, no % of a peak the device table does not hold."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from fixtures.make_dcgm import prom_links
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
    assert tx["covered_s"] == 90 and tx["share_of_peak"] is None
    assert rows[("PCIe", "rx")]["mean_bytes_s"] == 5e8
    assert "NVLink transmit (DCGM NVLINK_TX_BYTES)" in page and 'id="links"' in page
    assert "1.67 GB/s" in page and "1.67 GB/s" in md
    assert doc["timelines"]["n1/0"]["nvlink_tx_bytes"] == [1e9, 3e9]


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
    assert all(r["share_of_peak"] is None for r in rows)  # no link bandwidth in the device table
    for chart in ("NVLink transmit", "NVLink receive", "PCIe transmit", "PCIe receive"):
        assert chart in page
    section = page.split('id="links"')[1].split("</table>")[0]
    assert "No % of the link" in section and "%</td>" not in section


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
