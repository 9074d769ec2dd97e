"""Stages import one way (docs/architecture.md): parsers import neither analyzer nor reports, and
reports take from analyzer only the document's type and its check (``rooftop.analyzer.schema``)."""

from __future__ import annotations

import ast

from tests.conftest import ROOT


def imported_modules(source: str) -> set[str]:
    """Every absolute module name ``source`` imports, at top level or inside a function."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


BOTTOM = ("rooftop.errors", "rooftop.atomic", "rooftop.progress")


def is_bottom(mod: str) -> bool:
    """The bottom layer every stage may import (it imports no stage)."""
    return any(mod == b or mod.startswith(f"{b}.") for b in BOTTOM)


def stage_imports(stage: str) -> dict[str, set[str]]:
    """``{file: rooftop modules of other stages it imports}`` for every module of ``stage``."""
    out: dict[str, set[str]] = {}
    for path in sorted((ROOT / stage).rglob("*.py")):
        mods = {m for m in imported_modules(path.read_text(encoding="utf-8"))
                if m.startswith("rooftop.") and not m.startswith(f"rooftop.{stage}") and not is_bottom(m)}
        if mods:
            out[str(path.relative_to(ROOT))] = mods
    return out


def test_imported_modules_sees_function_level_and_from_imports() -> None:
    src = "import a.b\nfrom c import d\ndef f():\n    from rooftop.analyzer.kernels.analyze import x\n"
    assert imported_modules(src) == {"a.b", "c", "c.d", "rooftop.analyzer.kernels.analyze",
                                     "rooftop.analyzer.kernels.analyze.x"}


def test_parsers_import_no_later_stage() -> None:
    assert stage_imports("parsers") == {}


def test_reports_import_only_the_document_schema_from_analyzer() -> None:
    def allowed(mod: str) -> bool:
        return mod == "rooftop.analyzer.schema" or mod.startswith("rooftop.analyzer.schema.")

    bad = {f: {m for m in mods if not allowed(m)} for f, mods in stage_imports("reports").items()}
    assert {f: mods for f, mods in bad.items() if mods} == {}
