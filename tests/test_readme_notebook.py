"""The README's notebook section runs as written (issue 27), and a user's script that reads the
document from rooftop.analyze is type-checked against the typed document (mypy --strict)."""

from __future__ import annotations

import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _notebook_block() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## In a notebook"):]
    m = re.search(r"```python\n(.*?)```", section, flags=re.DOTALL)
    assert m, "the README's notebook section has a python block"
    return m.group(1)


def test_readme_notebook_block_runs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    scope: dict[str, object] = {}
    with contextlib.redirect_stdout(out):
        exec(compile(_notebook_block(), "README.md#in-a-notebook", "exec"), scope)
    text = out.getvalue()
    doc = scope["doc"]
    assert hasattr(doc, "_repr_html_") and "top findings" in doc._repr_html_()  # type: ignore[attr-defined]
    assert "memory-bound" in text and "est_saving_s" in text
    assert "README.md: is not a format rooftop reads" in text  # the InputError's one line
    assert re.search(r"^(True|False) ", text, flags=re.MULTILINE)  # the diff verdict


def test_repr_html_escapes_names() -> None:
    from rooftop.notebook import Shown

    doc = Shown({"kind": "analyze", "inputs": [], "rejected": [], "devices": [], "kernels": [], "windows": [],
                 "findings": [{"rank": 1, "severity": "high", "title": "<script>x</script>", "kernels": [],
                               "time_share": 0.5, "est_saving_s": 1.0, "rule": "r", "recommendation": ""}]})
    html = doc._repr_html_()
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_mypy_sees_the_typed_document(tmp_path: Path) -> None:
    """A user's script: reading a key the document has passes mypy --strict, a misspelt key or a
    wrong type fails (so the return type is the TypedDict, not dict[str, Any])."""
    pytest.importorskip("mypy", reason="mypy (the dev extra) checks the user script")
    good = tmp_path / "good.py"
    good.write_text(
        "import rooftop\n"
        "doc = rooftop.analyze('run.csv')\n"
        "label: str = doc['kernels'][0]['label']\n"
        "saving: float | None = doc['findings'][0]['est_saving_s']\n"
        "frame = rooftop.kernels(doc)\n"
        "cols: list[str] = list(frame.columns)\n", encoding="utf-8")
    bad = tmp_path / "bad.py"
    bad.write_text("import rooftop\ndoc = rooftop.analyze('run.csv')\nx: int = doc['kernelz']\n", encoding="utf-8")
    cfg = tmp_path / "mypy.ini"
    cfg.write_text("[mypy]\n", encoding="utf-8")
    env = {**os.environ, "MYPYPATH": "", "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    def mypy(path: Path) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                               "--cache-dir", str(tmp_path / ".mypy"), "--config-file", str(cfg), str(path)],
                              capture_output=True, text=True, cwd=tmp_path, env=env, timeout=600, check=False)
    ok = mypy(good)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    wrong = mypy(bad)
    assert wrong.returncode == 1 and "kernelz" in wrong.stdout, wrong.stdout
