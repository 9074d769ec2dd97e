"""Packaging (issue 27): the declared floors are the floors CI tests, the extras hold what their names
say, the sdist carries what a packager needs to run the tests, and the rules ship with the package."""

from __future__ import annotations

import re
import sys
import tarfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - the floor leg's interpreter
    tomllib = pytest.importorskip("tomli", reason="tomllib is Python 3.11+; tomli not installed")

PYPROJECT = ROOT / "pyproject.toml"
CONSTRAINTS = ROOT / "tests" / "constraints-floor.txt"
_REQ = re.compile(r"^\s*([A-Za-z0-9_.-]+)(?:\[[^\]]*\])?\s*(?:>=\s*([0-9][^,;\s]*))?")


def _project() -> dict[str, object]:
    if not PYPROJECT.is_file():
        pytest.skip("no pyproject.toml here (an installed package, not a source tree)")
    with PYPROJECT.open("rb") as fh:
        data: dict[str, object] = tomllib.load(fh)["project"]
    return data


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _floors(reqs: list[str]) -> dict[str, str]:
    out = {}
    for req in reqs:
        m = _REQ.match(req)
        assert m, req
        if m.group(2) and not m.group(1).startswith("rooftop"):
            out[_norm(m.group(1))] = m.group(2)
    return out


def _pins() -> dict[str, str]:
    pins = {}
    for line in CONSTRAINTS.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[_norm(name)] = version
    return pins


def _release(version: str) -> tuple[int, ...]:
    return tuple(int(x) for x in re.findall(r"\d+", version.split(".post")[0]))[:3]


def test_every_runtime_floor_is_pinned_in_the_floor_leg() -> None:
    """pyproject's floors (base and runtime extras) == tests/constraints-floor.txt's pins, so the
    floor leg of `make test` installs exactly the declared minimum of everything users install."""
    project = _project()
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    declared = _floors(project["dependencies"])  # type: ignore[arg-type]
    for extra in ("ncu-rep", "yaml", "fleet", "trace"):
        declared |= _floors(extras[extra])
    pins = _pins()
    for name, floor in declared.items():
        assert name in pins, f"{name}>={floor} is declared but the floor leg does not pin it"
        got, want = _release(pins[name]), _release(floor)
        assert got[:len(want)] == want and all(x == 0 for x in got[len(want):]), (
            f"{name}: declared >={floor}, floor leg pins {pins[name]}")


def test_extras() -> None:
    """`all` is every runtime feature and no tool; `dev` has the test tools; scipy is no runtime dependency."""
    project = _project()
    extras: dict[str, list[str]] = project["optional-dependencies"]  # type: ignore[assignment]
    assert extras["all"] == ["rooftop[ncu-rep,yaml,fleet,trace]"]
    base = set(_floors(project["dependencies"]))  # type: ignore[arg-type]
    assert "scipy" not in base and "scipy" in _floors(extras["dev"])
    assert {"pytest", "pytest-xdist", "hypothesis", "mypy", "ruff"} <= set(_floors(extras["dev"]))
    for extra in ("ncu-rep", "yaml", "fleet", "trace"):
        assert not {"pytest", "mypy", "ruff", "playwright", "polars", "duckdb"} & set(_floors(extras[extra]))
    classifiers: list[str] = project["classifiers"]  # type: ignore[assignment]
    lowest = project["requires-python"]
    assert lowest == ">=3.11" and "Programming Language :: Python :: 3.11" in classifiers


def test_manifest_carries_what_the_tests_read() -> None:
    text = (ROOT / "MANIFEST.in").read_text(encoding="utf-8") if (ROOT / "MANIFEST.in").is_file() else ""
    if not text:
        pytest.skip("no MANIFEST.in here")
    for folder in ("tests", "fixtures", "docs", "parsers", "analyzer", "reports"):
        assert re.search(rf"^graft {folder}$", text, flags=re.MULTILINE), folder


def test_sdist_contents(tmp_path: Path) -> None:
    """The sdist built from this tree holds the test suite, its golden files, fixtures and docs."""
    build = pytest.importorskip("build", reason="the dev extra's `build` makes the sdist")
    if not (ROOT / ".git").exists():
        pytest.skip("not a source checkout (this may be the unpacked sdist itself)")
    import subprocess

    res = subprocess.run([sys.executable, "-m", "build", "--sdist", "--no-isolation", "--skip-dependency-check",
                          "-o", str(tmp_path), str(ROOT)], capture_output=True, text=True, check=False,
                         timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    del build
    (sdist,) = tmp_path.glob("rooftop-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in ("tests/conftest.py", "tests/golden_outputs.py", "tests/constraints-floor.txt",
                   "fixtures/ncu/demo.raw.csv", "docs/formulas.md", "rooftop/docs/formulas.md",
                   "parsers/model.py", "rooftop/parsers/model.py", "Makefile"):
        assert needed in names, needed
    assert any(n.startswith("tests/golden/") for n in names)
    assert not any("__pycache__" in n or n.endswith(".pyc") for n in names)
