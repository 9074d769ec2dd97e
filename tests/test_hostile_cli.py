"""The command line under hostile and unusable input (click's CliRunner, in process).

* Hostile kernel names (HTML/script injection, Markdown pipes and links, template syntax, Python)
  go through ``rooftop analyze --html --md --json``: the HTML holds no live markup from data, the
  Markdown tables keep their shape and no link survives, the JSON returns every name exactly, and
  nothing is evaluated.
* Unusable input ends with exit 2 and one line on stderr naming the file, never a traceback and
  never the catch-all "internal error".
* A sample of mutated inputs through the whole command: exit 0 (with accounting) or 2 (one line).
"""

from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from rooftop.cli.commands import main
from tests.conftest import CORPUS, manifest
from tests.fuzzing import CHEAP, mutate_file, seed

from bench.gen_inputs import ncu_raw_header, ncu_raw_row, write_dmon, write_prom_text  # isort: skip

HOSTILE = [
    "<img src=x onerror=alert(1)>",
    "</script><script>alert(1)</script>",
    "a|b||c",
    "[x](javascript:alert(1))",
    "{{7*7}}",
    "${7*7}",
    "__import__('os').system('touch PWNED')",
    '"quoted" \\ back\\slash `tick` *star* _under_',
    "<!-- open comment",
    "line\u2028sep\u0085nel\ttab",
    "&lt;already&gt; &amp; escaped",
]


def run(args: list[str], cwd: Path | None = None) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=True)


def assert_one_line_exit2(res: Result, name: str) -> None:
    """Exit 2, one line on stderr that names ``name``; no traceback, not the catch-all."""
    out = res.output + (res.stderr if res.stderr_bytes is not None else "")
    assert res.exit_code == 2, f"exit {res.exit_code}: {out!r} {res.exception!r}"
    assert "Traceback" not in out, out
    assert "internal error" not in out, f"unusable input reached the catch-all: {out!r}"
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    assert name in lines[0], f"message does not name {name!r}: {lines[0]!r}"


@pytest.fixture
def hostile_csv(tmp_path: Path) -> Path:
    rng = random.Random(1)
    p = tmp_path / "evil.raw.csv"
    p.write_text(ncu_raw_header() + "".join(ncu_raw_row(i, n, rng) for i, n in enumerate(HOSTILE)),
                 encoding="utf-8")
    return p


def _analyze_hostile(tmp_path: Path, src: Path) -> tuple[str, str, dict[str, object]]:
    html, md, js = tmp_path / "r.html", tmp_path / "r.md", tmp_path / "r.json"
    res = run(["analyze", str(src), "--html", str(html), "--md", str(md), "--json", str(js), "-q"])
    assert res.exit_code == 0, res.output + repr(res.exception)
    return html.read_text(encoding="utf-8"), md.read_text(encoding="utf-8"), json.loads(js.read_text())


def test_json_round_trips_every_name(tmp_path: Path, hostile_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    _, _, doc = _analyze_hostile(tmp_path, hostile_csv)
    names = [k["name"] for k in doc["kernels"]]  # type: ignore[index]
    assert sorted(names) == sorted(HOSTILE)
    assert not (tmp_path / "PWNED").exists(), "a kernel name was evaluated"


def test_html_has_no_live_markup_from_data(tmp_path: Path, hostile_csv: Path) -> None:
    html, _, _ = _analyze_hostile(tmp_path, hostile_csv)
    assert "<img src=x" not in html.lower()
    assert "</script><script>alert(1)" not in html.lower()
    assert "onerror=alert(1)>" not in html
    assert not re.search(r"""href\s*=\s*["']?\s*javascript:""", html, re.I), "javascript: link in HTML"
    assert "<!-- open comment" not in html
    # the names are shown (escaped), not dropped: the text survives HTML escaping
    assert "&lt;img src=x onerror=alert(1)&gt;" in html or "\\u003cimg src=x" in html
    assert "{{7*7}}" in html or "&#123;&#123;7*7&#125;&#125;" in html, "template syntax evaluated or lost"
    # every <script> block closes once: data cannot end a script element early
    assert html.lower().count("<script") == html.lower().count("</script>")


def _md_cells(line: str) -> list[str]:
    """Cells of a Markdown table row: split on pipes not escaped with a backslash."""
    body = line.strip()
    assert body.startswith("|") and body.endswith("|"), line
    return re.split(r"(?<!\\)\|", body[1:-1])


def test_markdown_tables_keep_shape_and_links_are_neutral(tmp_path: Path, hostile_csv: Path) -> None:
    _, md, _ = _analyze_hostile(tmp_path, hostile_csv)
    table: list[str] = []
    for line in [*md.split("\n"), ""]:  # CommonMark ends lines only at LF/CR, not U+2028
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            widths = {len(_md_cells(r)) for r in table}
            assert len(widths) == 1, f"a table row has a different number of cells: {table}"
            table = []
    assert not re.search(r"(?<!\\)\[[^\]\n]*(?<!\\)\]\(\s*javascript:", md, re.I), "live javascript: link"
    assert "<img" not in md and "<script" not in md.lower()
    assert "a\\|b\\|\\|c" in md or "a&#124;b" in md, "pipe in a name not escaped"


def test_nothing_evaluated_in_any_output(tmp_path: Path, hostile_csv: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    html, md, doc = _analyze_hostile(tmp_path, hostile_csv)
    for text in (html, md, json.dumps(doc)):
        assert "49" not in re.findall(r"\{\{?\s*(\d+)\s*\}?\}", text), "{{7*7}} was rendered"
    assert not (tmp_path / "PWNED").exists()


# ---------------------------------------------------------------------------- exit codes, one line
def test_missing_file(tmp_path: Path) -> None:
    assert_one_line_exit2(run(["analyze", str(tmp_path / "nope.csv"), "-q"]), "nope.csv")


def test_empty_file(tmp_path: Path) -> None:
    p = tmp_path / "empty.csv"
    p.write_bytes(b"")
    assert_one_line_exit2(run(["analyze", str(p), "-q", "--html", str(tmp_path / "r.html")]), "empty.csv")


def test_unknown_format(tmp_path: Path) -> None:
    p = tmp_path / "notes.csv"
    p.write_text("name,value\nfoo,1\nbar,2\n")
    assert_one_line_exit2(run(["analyze", str(p), "-q", "--html", str(tmp_path / "r.html")]), "notes.csv")


def test_binary_garbage_named_csv(tmp_path: Path) -> None:
    p = tmp_path / "garbage.csv"
    p.write_bytes(bytes(random.Random(3).randrange(256) for _ in range(4096)))
    assert_one_line_exit2(run(["analyze", str(p), "-q", "--html", str(tmp_path / "r.html")]), "garbage.csv")


def test_directory_with_nothing_usable(tmp_path: Path) -> None:
    d = tmp_path / "runs"
    d.mkdir()
    (d / "README.txt").write_text("nothing to see\n")
    (d / "empty.csv").write_bytes(b"")
    res = run(["analyze", str(d), "-q", "--html", str(tmp_path / "r.html")])
    out = res.output
    assert res.exit_code == 2 and "Traceback" not in out and "internal error" not in out, out
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and ("runs" in lines[0] or "README.txt" in lines[0] or "empty.csv" in lines[0])


def test_empty_directory(tmp_path: Path) -> None:
    d = tmp_path / "nothing"
    d.mkdir()
    assert_one_line_exit2(run(["analyze", str(d), "-q", "--html", str(tmp_path / "r.html")]), "nothing")


def _error_only_files() -> list[Path]:
    rows = [r for r in manifest("ncu") if "error-only" in r.get("format", "")]
    return [CORPUS / "ncu" / r["file"] for r in rows if (CORPUS / "ncu" / r["file"]).is_file()]


@pytest.mark.corpus
@pytest.mark.parametrize("path", _error_only_files() or [pytest.param(None, marks=pytest.mark.skip(
    reason="error-only corpus files (X1-X3) not found"))], ids=lambda p: p.name[:50] if p else "absent")
def test_error_only_ncu_logs(path: Path, tmp_path: Path) -> None:
    res = run(["analyze", str(path), "-q", "--html", str(tmp_path / "r.html")])
    assert_one_line_exit2(res, path.name)
    assert not (tmp_path / "r.html").exists(), "a report was written for an unusable input"


def test_error_only_synthetic(tmp_path: Path) -> None:
    """X1's shape (no permission) made up here, so the check runs without the corpus."""
    p = tmp_path / "profile.csv"
    p.write_text("==PROF== Connected to process 30026 (/home/u/gemm)\n"
                 "==ERROR== Error: ERR_NVGPUCTRPERM - The user does not have permission to access "
                 "NVIDIA GPU Performance Counters on the target device 0.\n"
                 "0.42  0.42\n==PROF== Disconnected from process 30026\n"
                 "==WARNING== No kernels were profiled.\n")
    assert_one_line_exit2(run(["analyze", str(p), "-q", "--html", str(tmp_path / "r.html")]), "profile.csv")


def test_bad_option_values_are_usage_errors(tmp_path: Path) -> None:
    p = tmp_path / "m.prom"
    write_prom_text(p, hosts=1, gpus=1, scrapes=2)
    res = run(["analyze", str(p), "-q", "--start", "yesterday-ish", "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "Traceback" not in res.output


# ---------------------------------------------------------------------------- mutated, whole command
def _cli_inputs(tmp_path: Path) -> list[Path]:
    rng = random.Random(5)
    raw = tmp_path / "k.csv"
    raw.write_text(ncu_raw_header() + "".join(ncu_raw_row(i, HOSTILE[i % len(HOSTILE)], rng) for i in range(8)))
    return [raw, write_prom_text(tmp_path / "m.prom", hosts=1, gpus=2, scrapes=3).path,
            write_dmon(tmp_path / "d.txt", gpus=2, ticks=6).path]


@pytest.mark.parametrize("k", range(4))
def test_mutated_inputs_through_the_command(tmp_path: Path, k: int) -> None:
    rng = random.Random(seed() + k)
    srcs = _cli_inputs(tmp_path)
    out_dir = tmp_path / "mut"
    out_dir.mkdir()
    for src in srcs:
        name = rng.choice(CHEAP)
        m = mutate_file(src, out_dir, name, random.Random(rng.randrange(2**31)), suffix=f".{src.name}")
        js = tmp_path / f"{m.name}.json"
        res = run(["analyze", str(m), "-q", "--json", str(js), "--html", str(tmp_path / "r.html")])
        ctx = f"{name} on {src.name}"
        if res.exit_code == 2:
            assert_one_line_exit2(res, m.name)
            continue
        assert res.exit_code == 0, f"{ctx}: exit {res.exit_code} {res.output!r} {res.exception!r}"
        doc = json.loads(js.read_text())
        for inp in doc["inputs"]:
            assert min(inp["records"], inp["missing"], inp["rejected"]) >= 0, (ctx, inp)
        kernels_by_input = sum(1 for _ in doc["kernels"])
        ncu = [i for i in doc["inputs"] if i["format"].startswith("ncu")]
        if ncu:
            assert kernels_by_input == sum(i["records"] + i["missing"] for i in ncu), ctx
