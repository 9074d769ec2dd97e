"""The document type (analyzer/schema.py): hand-made errors name the bad key; the fast column-wise
check agrees with the reference walk; every fixture and corpus run produces a valid document."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rooftop.analyzer import schema
from rooftop.analyzer.schema import Document, validate_document
from rooftop.errors import SchemaError
from tests.conftest import FIXTURES, ROOT, corpus_dir

SAMPLE = json.loads((ROOT / "tests" / "golden" / "sample.json").read_text(encoding="utf-8"))


def _error(doc: Any) -> str:
    with pytest.raises(SchemaError) as info:
        validate_document(doc)
    return str(info.value)


def test_sample_is_valid() -> None:
    validate_document(SAMPLE)


@pytest.mark.parametrize(("mutate", "where", "what"), [
    (lambda d: d["kernels"][1].update(label="slow"), "$.kernels[1].label", "one of 'compute-bound'"),
    (lambda d: d.update(surprise=1), "$.surprise", "unknown key"),
    (lambda d: d["kernels"][0].pop("name"), "$.kernels[0]", "missing key 'name'"),
    (lambda d: d["kernels"][0]["bytes"].update(dram=float("nan")), "$.kernels[0].bytes.dram", "finite number"),
    (lambda d: d["inputs"][0].update(records=True), "$.inputs[0].records", "an integer"),
    (lambda d: d["windows"][0].update(label="busy"), "$.windows[0].label", "'mixed', 'unknown'"),
    (lambda d: d.update(kind="report"), "$.kind", "'analyze', 'fleet', 'diff'"),
    (lambda d: d["run"]["input_sha256"].update(x=3), "$.run.input_sha256.x", "a string or null"),
    (lambda d: d["findings"][0].update(severity="urgent"), "$.findings[0].severity", "'high'"),
])
def test_errors_name_the_key_and_what_was_expected(mutate: Any, where: str, what: str) -> None:
    doc = copy.deepcopy(SAMPLE)
    mutate(doc)
    msg = _error(doc)
    assert f"analysis document {where}:" in msg
    assert what in msg


def test_optional_keys_of_other_stages_are_declared() -> None:
    doc = copy.deepcopy(SAMPLE)
    doc.update(timeline=[], steps=[], waterfall=[], families=[],  # timeline/steps/roofline/families: typed
               roofline={"panels": [], "windows": [], "why_empty": "no FLOPs"})
    validate_document(doc)
    for key in ("timeline", "steps", "waterfall", "families", "roofline"):
        assert key in Document.__optional_keys__


def test_vocabularies_are_the_literals() -> None:
    assert "unknown" in schema.KERNEL_LABELS and "unknown" in schema.WINDOW_LABELS
    assert schema.TIMELINE_LABELS == ("overhead-bound", "transfer-bound", "kernel-bound", "idle", "unknown")
    assert {"launch", "sync", "host", "transfer"} <= set(schema.TIMELINE_LIMITERS)
    assert sorted(schema.WINDOW_LABELS_SHOWN) == sorted(schema.WINDOW_LABELS)
    assert set(schema.BOUND_LABELS) < set(schema.KERNEL_LABELS) and set(schema.BOUND_LABELS) < set(schema.WINDOW_LABELS)
    assert set(schema.MEMORY_LEVELS) == set(schema.BANDWIDTH_CEILINGS)
    assert set(schema.FLOP_CLASSES) < set(schema.COMPUTE_CEILINGS)
    assert set(schema.CEILING_KEYS) == set(schema.COMPUTE_CEILINGS) | set(schema.BANDWIDTH_CEILINGS)
    assert {schema.ceiling_kind(k) for k in schema.COMPUTE_CEILINGS} == {"compute"}
    assert {schema.ceiling_kind(k) for k in schema.BANDWIDTH_CEILINGS} == {"bandwidth"}


def test_vocabularies_are_defined_once() -> None:
    """No module of the analyzer or the reports spells a whole vocabulary as its own constant: they
    import it from analyzer/schema/vocab.py (a second spelling drifts when a word is added)."""
    import ast

    from rooftop.analyzer.schema import vocab

    words = {n: set(v) for n, v in vars(vocab).items() if n.isupper() and isinstance(v, tuple) and len(v) > 1}
    found = []
    for stage in ("analyzer", "reports"):
        for path in sorted((ROOT / stage).rglob("*.py")):
            if path == ROOT / "analyzer" / "schema" / "vocab.py":
                continue
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                value = node.value if isinstance(node, (ast.Assign, ast.AnnAssign)) else None
                if not isinstance(value, (ast.Tuple, ast.List, ast.Set)) or not value.elts:
                    continue
                if not all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in value.elts):
                    continue
                spelled = {e.value for e in value.elts if isinstance(e, ast.Constant)}
                found += [f"{path.relative_to(ROOT)}:{node.lineno} spells {name}"
                          for name, vocab_words in words.items() if spelled == vocab_words]
    assert not found, found


# The fast check and the reference walk agree on mutated documents.
_PATHS: list[tuple[Any, ...]] = []


def _collect(v: Any, path: tuple[Any, ...]) -> None:
    _PATHS.append(path)
    if isinstance(v, dict):
        for k, x in v.items():
            _collect(x, (*path, k))
    elif isinstance(v, list):
        for i, x in enumerate(v[:3]):
            _collect(x, (*path, i))


_collect(SAMPLE, ())
_VALUES = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=3),
                    st.sampled_from(["unknown", "memory-bound", "dram", "high", "analyze"]),
                    st.just([]), st.just({}), st.just(["x"]), st.just({"a": 1.0}))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(_PATHS[1:]), _VALUES), min_size=1, max_size=3))
def test_fast_check_agrees_with_reference(edits: list[tuple[tuple[Any, ...], Any]]) -> None:
    doc = copy.deepcopy(SAMPLE)
    for path, value in edits:
        target = doc
        try:
            for step in path[:-1]:
                target = target[step]
            target[path[-1]] = value
        except (KeyError, IndexError, TypeError):
            continue
    try:
        schema.check_value(Document, doc, "$")
        reference = True
    except SchemaError:
        reference = False
    assert schema._ok(Document, [doc]) is reference


# Every document the fixtures and the corpus produce is valid.

def _analyze(paths: list[str], **kw: Any) -> dict[str, Any]:
    from rooftop.analyzer.pipeline import run_analysis

    return run_analysis(paths, command="rooftop analyze", **kw)


@pytest.mark.parametrize("path", sorted(p.name for p in (FIXTURES / "ncu").iterdir())
                         + sorted(p.name for p in (FIXTURES / "dcgm").iterdir()))
def test_fixture_documents_are_valid(path: str) -> None:
    full = next(p for p in (FIXTURES / "ncu", FIXTURES / "dcgm") if (p / path).exists()) / path
    validate_document(_analyze([str(full)]))


def test_mixed_diff_and_fleet_documents_are_valid(tmp_path: Path) -> None:
    from rooftop.analyzer.diff.sides import run_diff
    from rooftop.analyzer.fleet.pipeline import run_fleet
    from rooftop.analyzer.store.ingest import ingest_files
    from rooftop.parsers.source import ParseOptions

    validate_document(_analyze([str(FIXTURES / "ncu"), str(FIXTURES / "dcgm")]))
    validate_document(run_diff(str(FIXTURES / "diff" / "baseline.raw.csv"),
                               str(FIXTURES / "diff" / "candidate.raw.csv"),
                               fail_on=5.0, device=None, command="rooftop diff"))
    ingest_files(sorted((FIXTURES / "dcgm").iterdir()), tmp_path / "ds", options=ParseOptions())
    validate_document(run_fleet(tmp_path / "ds", since=None, until=None, by=["host", "gpu"],
                                engine="local", scheduler=None, workers=1, window_s=60.0,
                                device=None, top=10, command="rooftop fleet"))


@pytest.mark.corpus
@pytest.mark.parametrize("kind", ["ncu", "dcgm"])
def test_corpus_documents_are_valid(kind: str) -> None:
    """The whole folder in one run (what it cannot read is rejected and listed, not raised)."""
    doc = _analyze([str(corpus_dir(kind))])
    assert doc["kernels"] or doc["windows"]
    validate_document(doc)
