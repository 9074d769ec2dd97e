"""Shared test fixtures: where the real corpus and our own fixtures live."""

from __future__ import annotations

import csv
import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "fixtures"
SHARED = Path(os.environ.get("ROOFTOP_SHARED", ROOT.parent / "shared"))
CORPUS = SHARED / "corpus"


@pytest.fixture(autouse=True)
def _no_terminal_width(monkeypatch: pytest.MonkeyPatch) -> None:
    """Output as a pipe gets it (lines whole), whatever terminal runs the tests: pytest-xdist sets
    ``COLUMNS`` in its workers. A test that wants a width sets ``COLUMNS`` or passes ``width``."""
    monkeypatch.delenv("COLUMNS", raising=False)


def corpus_dir(kind: str) -> Path:
    """``../shared/corpus/<kind>``; skips the calling test cleanly when it is absent."""
    d = CORPUS / kind
    if not d.is_dir():
        pytest.skip(f"real corpus not found at {d} (clone with ../shared beside the repo)")
    return d


def manifest(kind: str) -> list[dict[str, str]]:
    """Rows of ``../shared/corpus/<kind>/MANIFEST.tsv`` (empty when the corpus is absent)."""
    path = CORPUS / kind / "MANIFEST.tsv"
    if not path.is_file():
        return []
    with path.open(encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh, delimiter="\t"))


@pytest.fixture
def ncu_corpus() -> Path:
    return corpus_dir("ncu")


@pytest.fixture
def dcgm_corpus() -> Path:
    return corpus_dir("dcgm")


# The quick tier (`make test-quick`, issue 23): everyday checks on 2 cores. These modules run whole CLI
# batteries, build packages, fuzz, start servers or browsers; they are marked `slow` and run in `make test`.
SLOW_MODULES = frozenset({
    "test_golden_outputs", "test_fuzz_parsers", "test_packaging", "test_readme_notebook", "test_fleet_dask",
    "test_html_browser", "test_prom_http", "test_ingest_many", "test_hostile_cli", "test_outputs_safety",
    "test_bounded_inputs", "test_cli_outputs",
})


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    slow = pytest.mark.slow
    for item in items:
        if item.module is not None and item.module.__name__.rsplit(".", 1)[-1] in SLOW_MODULES:
            item.add_marker(slow)
