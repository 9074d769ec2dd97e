"""Imports run one way (docs/architecture.md#layers): the import graph of every rooftop module has no
cycle, and each layer imports only the layers below it.

Layers, bottom up: the bottom (``rooftop.errors``, ``rooftop.atomic``, ``rooftop.progress``,
``rooftop._version``: imports no stage) -> ``rooftop.parsers`` -> ``rooftop.analyzer`` ->
``rooftop.reports`` (from the analyzer only ``rooftop.analyzer.schema``, the document's type) ->
``rooftop.cli`` and the ``rooftop`` package itself (the composition root: may import everything).
"""

from __future__ import annotations

import ast
import importlib
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import ROOT

STAGES = ("parsers", "analyzer", "reports")
BOTTOM = ("rooftop.errors", "rooftop.atomic", "rooftop.progress", "rooftop._version")


def module_name(path: Path) -> str:
    """``parsers/ncu/csv.py`` -> ``rooftop.parsers.ncu.csv`` (the stage folders are installed under rooftop)."""
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[0] in STAGES:
        parts = ["rooftop", *parts]
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def rooftop_modules() -> dict[str, Path]:
    """Every rooftop module by name (the stage folders once, not again through rooftop/'s links)."""
    out: dict[str, Path] = {}
    for top in (*STAGES, "rooftop"):
        for path in sorted((ROOT / top).rglob("*.py")):
            rel = path.relative_to(ROOT).parts
            if rel[0] == "rooftop" and len(rel) > 1 and rel[1] in STAGES:
                continue
            out[module_name(path)] = path
    return out


def _type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _module_level(body: list[ast.stmt]) -> Iterator[ast.Import | ast.ImportFrom]:
    """Imports that run when the module is imported: at top level, in module-level ``if``/``try``/
    ``with`` blocks; not in functions or classes, not under ``if TYPE_CHECKING:``."""
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        elif isinstance(node, ast.If):
            if not _type_checking(node.test):
                yield from _module_level(node.body)
            yield from _module_level(node.orelse)
        elif isinstance(node, ast.Try):
            for block in (node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)):
                yield from _module_level(block)
        elif isinstance(node, ast.With):
            yield from _module_level(node.body)


def _every_import(tree: ast.Module) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import, function-level ones included, but not those under ``if TYPE_CHECKING:``."""
    hidden = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _type_checking(node.test)
              for stmt in node.body for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)) and id(node) not in hidden:
            yield node


def targets(node: ast.Import | ast.ImportFrom, known: dict[str, Path] | None = None) -> set[str]:
    """The modules an import statement names: ``from a import b`` is ``a.b`` when that is a module,
    else ``a``; ``import a.b`` is ``a.b``."""
    if isinstance(node, ast.Import):
        return {alias.name for alias in node.names}
    if node.level or not node.module:
        return set()
    out = set()
    for alias in node.names:
        sub = f"{node.module}.{alias.name}"
        out.add(sub if known is not None and sub in known else node.module)
    return out


def import_graph(module_level: bool = True) -> dict[str, set[str]]:
    """``{module: rooftop modules it imports}``: only module-level imports, or every import."""
    known = rooftop_modules()
    graph: dict[str, set[str]] = {}
    for name, path in known.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        nodes = _module_level(tree.body) if module_level else _every_import(tree)
        graph[name] = {t for node in nodes for t in targets(node, known) if t in known and t != name}
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as ``[a, b, ..., a]``, or None (depth-first search, sorted order)."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt):], nxt]
            if nxt not in state and (found := visit(nxt)) is not None:
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)) is not None:
            return found
    return None


def layer(module: str) -> str:
    """``bottom``, ``parsers``, ``analyzer``, ``reports`` or ``root`` (rooftop.cli and the package)."""
    if any(module == b or module.startswith(f"{b}.") for b in BOTTOM):
        return "bottom"
    for stage in STAGES:
        if module == f"rooftop.{stage}" or module.startswith(f"rooftop.{stage}."):
            return stage
    return "root"


MAY_IMPORT = {
    "bottom": {"bottom"},
    "parsers": {"bottom", "parsers"},
    "analyzer": {"bottom", "parsers", "analyzer"},
    "reports": {"bottom", "reports", "analyzer"},  # from the analyzer: only its schema (below)
    "root": {"bottom", "parsers", "analyzer", "reports", "root"},
}


def allowed(importer: str, imported: str) -> bool:
    """The stage rule (docs/architecture.md#layers)."""
    src, dst = layer(importer), layer(imported)
    if src == "reports" and dst == "analyzer":
        return imported == "rooftop.analyzer.schema" or imported.startswith("rooftop.analyzer.schema.")
    return dst in MAY_IMPORT[src]


def stage_violations() -> dict[str, set[str]]:
    """``{module: what it imports against the stage rule}``, function-level imports included."""
    bad: dict[str, set[str]] = {}
    for importer, imported in import_graph(module_level=False).items():
        wrong = {m for m in imported if not allowed(importer, m)}
        if wrong:
            bad[importer] = wrong
    return bad


# ----------------------------------------------------------------------------- the helpers themselves

def test_module_level_sees_blocks_but_not_functions_or_type_checking() -> None:
    src = ("import a.b\nfrom c import d\nif x:\n    import e\nelse:\n    import f\n"
           "try:\n    import g\nexcept ImportError:\n    import h\n"
           "if TYPE_CHECKING:\n    import i\ndef fn():\n    import j\n")
    tree = ast.parse(src)
    assert set().union(*(targets(n) for n in _module_level(tree.body))) == {"a.b", "c", "e", "f", "g", "h"}
    assert set().union(*(targets(n) for n in _every_import(tree))) == {"a.b", "c", "e", "f", "g", "h", "j"}


def test_find_cycle_names_the_cycle() -> None:
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None


def test_stage_rule_on_hand_made_cases() -> None:
    assert allowed("rooftop.analyzer.pipeline", "rooftop.parsers.model")
    assert allowed("rooftop.analyzer.pipeline", "rooftop.errors")
    assert not allowed("rooftop.analyzer.pipeline", "rooftop.reports.html")
    assert not allowed("rooftop.analyzer.document", "rooftop")
    assert allowed("rooftop.reports.html", "rooftop.analyzer.schema.parts")
    assert not allowed("rooftop.reports.html", "rooftop.analyzer.view")
    assert not allowed("rooftop.reports.html", "rooftop.parsers.model")
    assert not allowed("rooftop.parsers.model", "rooftop.analyzer.schema")
    assert allowed("rooftop.parsers.model", "rooftop.progress")
    assert not allowed("rooftop.errors", "rooftop.parsers.model")
    assert allowed("rooftop.atomic", "rooftop.errors")
    assert allowed("rooftop.cli.commands", "rooftop.reports.outputs")
    assert allowed("rooftop", "rooftop.analyzer.pipeline")


def test_the_graph_holds_every_stage() -> None:
    graph = import_graph()
    assert {"rooftop.parsers.model", "rooftop.analyzer.pipeline", "rooftop.reports.html", "rooftop.cli.commands",
            "rooftop.errors"} <= set(graph)
    assert "rooftop.parsers.model" in graph["rooftop.analyzer.pipeline"]


# ----------------------------------------------------------------------------- the rules

def test_no_import_cycle_at_module_level() -> None:
    cycle = find_cycle(import_graph(module_level=True))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_no_import_cycle_even_through_function_level_imports() -> None:
    """Lazy imports inside functions too (issue 23: the diff's sides and window sides imported each other)."""
    cycle = find_cycle(import_graph(module_level=False))
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_every_stage_imports_only_the_layers_below() -> None:
    assert stage_violations() == {}


# ----------------------------------------------------------------------------- no re-exports

# Designed entry points that name what other modules define: the package's API (rooftop.analyze,
# rooftop.InputError, rooftop.__version__) and the document's type, which the reports import whole.
FACADES = ("rooftop", "rooftop.analyzer.schema")


def defined_names(tree: ast.Module) -> set[str]:
    """Names a module binds itself at module level: functions, classes, assignments (in module-level
    ``if``/``try`` blocks too); not the names it imports."""
    out: set[str] = set()
    blocks: list[list[ast.stmt]] = [tree.body]
    while blocks:
        for node in blocks.pop():
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                out.update(n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, ast.If):
                blocks += [node.body, node.orelse]
            elif isinstance(node, ast.Try):
                blocks += [node.body, node.orelse, node.finalbody, *(h.body for h in node.handlers)]
    return out


def indirect_imports() -> list[str]:
    """``file:line: from M import N`` wherever N is not defined in M but only imported there (M a
    rooftop module other than the facades), in the package, the tests and bench."""
    known = rooftop_modules()
    defined = {name: defined_names(ast.parse(path.read_text(encoding="utf-8"))) for name, path in known.items()}
    files = [*known.values(), *sorted((ROOT / "tests").rglob("*.py")), *sorted((ROOT / "bench").rglob("*.py"))]
    out = []
    for path in files:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not (isinstance(node, ast.ImportFrom) and not node.level and node.module in known
                    and node.module not in FACADES):
                continue
            for alias in node.names:
                if f"{node.module}.{alias.name}" not in known and alias.name not in defined[node.module]:
                    out.append(f"{path.relative_to(ROOT)}:{node.lineno}: from {node.module} import {alias.name}")
    return out


def test_defined_names_leaves_imports_out() -> None:
    tree = ast.parse("import a\nfrom b import c\nX = 1\nif y:\n    Z: int = 2\ndef f():\n    W = 3\nclass K: ...\n")
    assert defined_names(tree) == {"X", "Z", "f", "K"}


def test_every_name_is_imported_from_where_it_is_defined() -> None:
    """No module re-exports another's names (docs/architecture.md#layers): import from the module
    that defines the name."""
    assert indirect_imports() == []


# ----------------------------------------------------------------------------- one name per module

@pytest.mark.parametrize("stage", STAGES)
def test_a_stage_folder_cannot_be_imported_under_its_bare_name(stage: str,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """From the repository root ``import parsers`` would load a second copy of every module (two
    InputError classes); it is refused, naming the import to use (docs/architecture.md#installing)."""
    monkeypatch.syspath_prepend(str(ROOT))
    monkeypatch.delitem(sys.modules, stage, raising=False)
    with pytest.raises(ImportError, match=f"import rooftop.{stage}, not {stage}"):
        importlib.import_module(stage)
    assert stage not in sys.modules
    assert importlib.import_module(f"rooftop.{stage}").__name__ == f"rooftop.{stage}"
