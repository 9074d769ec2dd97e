"""Citations resolve (issue 15 item 7): every ``docs/...#anchor`` a report, lint message or ``rooftop devices``
prints names a heading anchor of a document shipped in the repository, and no user-visible text cites the
research notes by section number (``§N``), which a ticket reader cannot open."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.cli.commands import main
from tests.conftest import FIXTURES, ROOT

CITE = re.compile(r"docs/([A-Za-z0-9_./-]+\.md)#([A-Za-z0-9_-]+)")
SECTION_CITE = re.compile(r"(?:research/)?[A-Za-z_]+\.md §\s?\d")


def _slug(heading: str) -> str:
    """GitHub's heading anchor: lower case, punctuation but ``-``/``_`` dropped, spaces to ``-``."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(doc: Path) -> set[str]:
    """Explicit ``<a id="...">`` anchors and GitHub heading slugs of a Markdown file."""
    text = doc.read_text(encoding="utf-8")
    found = set(re.findall(r'<a id="([^"]+)"', text))
    found |= {_slug(m) for m in re.findall(r"^#+\s+(.+)$", text, flags=re.MULTILINE)}
    return found


def unresolved(text: str) -> list[str]:
    """Citations in ``text`` whose file or anchor does not exist under ``docs/``."""
    bad = []
    for name, anchor in set(CITE.findall(text)):
        doc = ROOT / "docs" / name
        if not doc.is_file() or anchor not in anchors(doc):
            bad.append(f"docs/{name}#{anchor}")
    return sorted(bad)


def test_anchor_helper_finds_explicit_and_heading_anchors(tmp_path: Path) -> None:
    assert {"ceilings", "device-table", "profiling-conditions", "timelines"} <= anchors(ROOT / "docs" / "formulas.md")
    assert _slug("Timeline joined to ncu") == "timeline-joined-to-ncu"
    assert unresolved("see docs/formulas.md#ceilings and docs/formulas.md#no-such-rule") == [
        "docs/formulas.md#no-such-rule"]
    assert unresolved("docs/missing.md#x") == ["docs/missing.md#x"]


def _run(tmp_path: Path, *args: str) -> str:
    res = CliRunner().invoke(main, list(args))
    assert res.exit_code in (0, 1), res.output
    texts = [res.output]
    texts += [p.read_text(encoding="utf-8") for p in tmp_path.glob("r.*")]
    return "\n".join(texts)


REPORTS = [
    ("analyze", str(FIXTURES / "ncu" / "demo.raw.csv")),
    ("analyze", str(FIXTURES / "dcgm" / "dmon_v4_phases.txt")),
    ("analyze", str(FIXTURES / "dcgm" / "prom_scrapes_phases.prom")),
    ("analyze", str(FIXTURES / "trace" / "steps.json")),
    ("diff", str(FIXTURES / "diff" / "baseline.raw.csv"), str(FIXTURES / "diff" / "candidate.raw.csv")),
]


@pytest.mark.parametrize("args", REPORTS, ids=lambda a: Path(a[-1]).name)
def test_produced_reports_cite_resolvable_anchors(tmp_path: Path, args: tuple[str, ...]) -> None:
    outs = ["--html", str(tmp_path / "r.html"), "--md", str(tmp_path / "r.md"), "--json", str(tmp_path / "r.json")]
    text = _run(tmp_path, *args, *outs, *(["-q"] if args[0] == "analyze" else []))
    assert CITE.search(text), "the report cites no rule at all"
    assert unresolved(text) == []
    assert not SECTION_CITE.search(text), SECTION_CITE.search(text)


def test_devices_sources_cite_resolvable_anchors(tmp_path: Path) -> None:
    text = _run(tmp_path, "devices")
    assert "docs/formulas.md#device-table" in text
    assert unresolved(text) == [] and not SECTION_CITE.search(text)


def _user_strings(path: Path) -> list[tuple[int, str]]:
    """String constants of a module that are not docstrings (what the code may print)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                docs.add(id(first.value))
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs]


def test_no_message_in_the_code_cites_an_unresolvable_source() -> None:
    """Covers messages no fixture triggers (lint clock/cache control, FP16 counters): every cited anchor
    exists and no message cites a research section number."""
    bad = []
    for stage in ("analyzer", "parsers", "reports"):
        for path in sorted((ROOT / stage).rglob("*.py")):
            for line, text in _user_strings(path):
                if unresolved(text) or SECTION_CITE.search(text):
                    bad.append(f"{path.relative_to(ROOT)}:{line}: {text[:90]}")
    data = (ROOT / "analyzer" / "data" / "devices.json").read_text(encoding="utf-8")
    bad += [f"devices.json: {c}" for c in unresolved(data)]
    assert bad == []
