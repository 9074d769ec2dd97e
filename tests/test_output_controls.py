"""Control characters from the data or the command line in every output (issue 30 items 8, 18):
the SVG written next to the Markdown and the SVG inside the HTML are well-formed XML 1.0 (what XML
forbids becomes a visible stand-in), and an ESC sequence in a file name reaches no output raw --
the Markdown's reproduce-command fence included."""

from __future__ import annotations

import json
import random
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from rooftop.reports.escape import esc, md_fence, xml_text

from bench.gen_inputs import ncu_raw_header, ncu_raw_row, write_dmon  # isort: skip

XML_FORBIDDEN = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")
NAMES = ["gemm\x01\x02\x07kernel", "esc\x1b[31mred\x1b[0m", "bell\x07\x08\x0b\x0c", "unit\x1fsep\x7f", "fine"]


def _svgs(html: str) -> list[str]:
    return re.findall(r"<svg\b.*?</svg>", html, re.S)


def _check_outputs(folder: Path) -> None:
    for p in folder.iterdir():
        text = p.read_text(encoding="utf-8")
        if p.suffix in (".html", ".svg", ".md"):
            assert not XML_FORBIDDEN.search(text), f"{p.name} holds a character XML 1.0 forbids"
        if p.suffix == ".svg":
            ET.fromstring(text.encode("utf-8"))  # well-formed
        if p.suffix == ".html":
            for svg in _svgs(text):
                ET.fromstring(svg.replace("&nbsp;", "&#160;"))
        if p.suffix == ".json":
            json.loads(text)
        assert "\x1b" not in text, f"raw ESC in {p.name}"


def test_escaping_helpers() -> None:
    assert xml_text("a\x01b\x1fc\td\ne\rf\ufffe") == "a\u2401b\u241fc\td\ne\rf\ufffd"
    assert esc("<\x1b>") == "&lt;\u241b&gt;"
    assert md_fence("rooftop analyze a\x1b[2Jb.csv ``` x") == "````\nrooftop analyze a\\x1b[2Jb.csv ``` x\n````"


def test_kernel_names_with_controls_give_well_formed_svg_and_html(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(3)
    src = tmp_path / "in" / "k\x1b]0;title\x07.raw.csv"
    src.parent.mkdir()
    src.write_text(ncu_raw_header() + "".join(ncu_raw_row(i, n, rng) for i, n in enumerate(NAMES)), encoding="utf-8")
    out = tmp_path / "out"
    out.mkdir()
    args = ["analyze", str(src), "--html", str(out / "r.html"), "--md", str(out / "r.md"),
            "--json", str(out / "r.json"), "-q"]
    monkeypatch.setattr(sys, "argv", ["rooftop", *args])  # the command line the document records
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 0, res.output
    assert list(out.glob("*.svg")), "no roofline SVG next to the Markdown"
    _check_outputs(out)
    doc = json.loads((out / "r.json").read_text())
    assert sorted(k["name"] for k in doc["kernels"]) == sorted(NAMES)  # the JSON keeps every name exactly
    md = (out / "r.md").read_text()
    fence = md[md.index("## How to reproduce"):]
    assert "\\x1b]0;title\\x07" in fence  # the ESC sequence shown, not sent


@pytest.mark.parametrize("host", ["node\x01\x1b[2J", "n\x00x"])
def test_dcgm_host_with_controls_gives_well_formed_svg(tmp_path: Path, host: str) -> None:
    src = tmp_path / "dmon.txt"
    write_dmon(src, gpus=2, ticks=300)
    out = tmp_path / "out"
    out.mkdir()
    res = CliRunner().invoke(main, ["analyze", str(src), "--interval", "1", "--start", "2026-01-01T00:00:00Z",
                                    "--host", host, "--html", str(out / "r.html"), "--md", str(out / "r.md"),
                                    "--json", str(out / "r.json"), "-q"])
    assert res.exit_code == 0, res.output
    assert _svgs((out / "r.html").read_text())
    _check_outputs(out)
