"""The thin command line (rooftop/cli/: commands, options, output, boundary): options validated by click
types (usage errors name the option, exit 2), ``-`` for stdout, one error boundary (OSError:
which file and what to do), escaped terminal output, no click below the CLI."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rooftop.cli.boundary import describe_os_error
from rooftop.cli.commands import main
from rooftop.reports.terminal import escape_terminal
from tests.conftest import FIXTURES, ROOT

DEMO = str(FIXTURES / "ncu" / "demo.raw.csv")
DMON = str(FIXTURES / "dcgm" / "dmon_v4_phases.txt")


def _package_only() -> Path:
    import tempfile

    where = Path(tempfile.gettempdir()) / f"rooftop-pkg-{os.getpid()}"
    if not (where / "rooftop").exists():
        where.mkdir(exist_ok=True)
        (where / "rooftop").symlink_to(ROOT / "rooftop", target_is_directory=True)
    return where


def _run(*args: str, cwd: Path = ROOT, **kw: object) -> subprocess.CompletedProcess[bytes]:
    """``python -m rooftop ARGS`` as a user runs it: this tree's ``rooftop`` package alone on the
    path (not the repository root, where bare ``reports`` would resolve), from ``cwd``."""
    env = {**os.environ, "PYTHONWARNINGS": "default", "PYTHONPATH": str(_package_only())}
    return subprocess.run([sys.executable, "-m", "rooftop", *args], capture_output=True, cwd=cwd,
                          env=env, timeout=300, check=False, **kw)  # type: ignore[call-overload]


@pytest.mark.parametrize("command", sorted(main.commands))
def test_every_command_has_help(command: str) -> None:
    res = CliRunner().invoke(main, [command, "--help"])
    assert res.exit_code == 0, res.output
    assert f"Usage: main {command}" in res.output or f"Usage: rooftop {command}" in res.output
    assert (main.commands[command].help or "").strip()


@pytest.mark.parametrize(("args", "option"), [
    (["analyze", DEMO, "--window", "0"], "--window"),
    (["analyze", DEMO, "--window", "-5"], "--window"),
    (["analyze", DEMO, "--window", "nan"], "--window"),
    (["analyze", DEMO, "--window", "inf"], "--window"),
    (["analyze", DEMO, "--window", "1e308"], "--window"),
    (["analyze", DEMO, "--interval", "0"], "--interval"),
    (["analyze", DEMO, "--interval", "-1"], "--interval"),
    (["analyze", DEMO, "--top", "-1"], "--top"),
    (["analyze", DEMO, "--start", "yesterday"], "--start"),
    (["ingest", DMON, "--to", "ds", "--interval", "nan"], "--interval"),
    (["fleet", "ds", "--scheduler", "10.0.0.5"], "--scheduler"),
    (["fleet", "ds", "--scheduler", "tcp://host:99999"], "--scheduler"),
    (["fleet", "ds", "--workers", "0"], "--workers"),
    (["fleet", "ds", "--window", "-1"], "--window"),
    (["fleet", "ds", "--since", "2026-13-45"], "--since"),
    (["diff", DEMO, DEMO, "--fail-on", "nan"], "--fail-on"),
    (["analyze", DEMO, "--html", "-"], "--html"),
    (["analyze", DEMO, "--json", "-", "--md", "-"], "--md"),
])
def test_bad_option_values_are_usage_errors_naming_the_option(tmp_path: Path, args: list[str],
                                                             option: str) -> None:
    res = CliRunner().invoke(main, args)
    assert res.exit_code == 2, res.output
    assert option in res.output and "internal error" not in res.output and "Traceback" not in res.output


def test_json_dash_is_stdout_and_the_summary_goes_to_stderr(tmp_path: Path) -> None:
    res = _run("analyze", DEMO, "--json", "-", "--html", str(tmp_path / "r.html"), cwd=tmp_path)
    assert res.returncode == 0, res.stderr  # from another folder: package data found as rooftop.reports
    doc = json.loads(res.stdout)
    assert doc["kind"] == "analyze" and doc["kernels"]
    assert b"rooftop analyze:" in res.stderr and not (tmp_path / "-").exists()


def test_md_dash_is_stdout(tmp_path: Path) -> None:
    res = _run("analyze", DEMO, "--md", "-", "-q", "--html", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith(b"#") and res.stderr == b""


def test_a_scheduler_address_with_its_port_is_accepted() -> None:
    from rooftop.cli.options import SchedulerAddress

    t = SchedulerAddress()
    assert t.convert("10.0.0.5:8786", None, None) == "tcp://10.0.0.5:8786"
    assert t.convert("tls://[::1]:8786", None, None) == "tls://[::1]:8786"


@pytest.mark.parametrize(("code", "words"), [
    (errno.ENOSPC, "no space left"), (errno.EFBIG, "file-size limit"), (errno.EROFS, "read-only"),
])
def test_os_errors_say_which_file_and_what_to_do(code: int, words: str) -> None:
    with_name = describe_os_error(OSError(code, os.strerror(code), "/data/ds/part-0.parquet"))
    assert with_name.startswith("/data/ds/part-0.parquet: ") and words in with_name and "(" in with_name
    without = describe_os_error(OSError(code, os.strerror(code)), ["/data/ds"])
    assert "while writing /data/ds" in without and words in without


def test_pyarrow_style_os_error_without_errno() -> None:
    msg = describe_os_error(OSError("IOError: No space left on device. Detail: [errno 28]"), ["ds"])
    assert "no space left" in msg and "ds" in msg


def _limited_fsize() -> None:
    import resource

    resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, 20_000))


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics")
def test_file_size_limit_names_the_file_and_the_fix(tmp_path: Path) -> None:
    out = tmp_path / "report.html"
    res = _run("analyze", DEMO, "--html", str(out), preexec_fn=_limited_fsize)
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert "report.html" in err and "internal error" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.skipif(sys.platform != "linux", reason="RLIMIT_FSIZE semantics")
def test_file_size_limit_while_ingesting_names_the_dataset(tmp_path: Path) -> None:
    def tiny_limit() -> None:
        import resource

        resource.setrlimit(resource.RLIMIT_FSIZE, (3_000, 3_000))  # smaller than one partition

    res = _run("ingest", str(FIXTURES / "dcgm"), "--to", str(tmp_path / "ds"), preexec_fn=tiny_limit)
    err = res.stderr.decode()
    assert res.returncode == 2, err
    assert str(tmp_path / "ds") in err and "file-size limit" in err and "ulimit -f" in err, err
    assert "internal error" not in err and len(err.strip().splitlines()) == 1


HOSTILE = "run\x1b]52;c;ZXZpbA==\x07\u202eevil\nname"


def test_escape_terminal() -> None:
    s = escape_terminal(HOSTILE)
    assert "\x1b" not in s and "\u202e" not in s and "\n" not in s and "\x07" not in s
    assert s == "run\\x1b]52;c;ZXZpbA==\\x07\\u202eevil\\nname"
    assert escape_terminal("plain kernel<float>(int)\ttab") == "plain kernel<float>(int)\ttab"
    for c in "\u202a\u202b\u202c\u202d\u2066\u2067\u2068\u2069\x85\x9b\x7f\r\u2028":
        assert c not in escape_terminal(f"a{c}b")


def _no_raw_controls(data: bytes) -> None:
    text = data.decode("utf-8")
    assert "\x1b" not in text and "\u202e" not in text and "\x07" not in text, text


def test_hostile_file_name_in_an_error_is_escaped_on_one_line(tmp_path: Path) -> None:
    bad = tmp_path / HOSTILE
    bad.write_text("not a profile\n", encoding="utf-8")
    res = _run("analyze", str(bad), "--html", str(tmp_path / "r.html"))
    assert res.returncode == 2
    _no_raw_controls(res.stderr)
    assert len(res.stderr.decode().strip().splitlines()) == 1


def test_hostile_names_in_summaries_are_escaped(tmp_path: Path) -> None:
    src = tmp_path / (HOSTILE + ".txt")
    src.write_bytes(Path(DMON).read_bytes())
    res = _run("analyze", str(src), "--html", str(tmp_path / (HOSTILE + ".html")))
    assert res.returncode == 0, res.stderr
    _no_raw_controls(res.stdout)
    _no_raw_controls(res.stderr)
    res = _run("ingest", str(src), "--to", str(tmp_path / "ds"))
    assert res.returncode == 0, res.stderr
    _no_raw_controls(res.stdout)
    _no_raw_controls(res.stderr)


def test_a_newline_in_a_file_name_stays_in_its_ingest_summary_line(tmp_path: Path) -> None:
    good = tmp_path / "good.txt"
    good.write_bytes(Path(DMON).read_bytes())
    bad = tmp_path / (HOSTILE + ".txt")
    bad.write_text("not a dcgm capture\n", encoding="utf-8")
    res = _run("ingest", str(good), str(bad), "--to", str(tmp_path / "ds"))
    assert res.returncode == 0, res.stderr
    out = res.stdout.decode()
    _no_raw_controls(res.stdout)
    unusable = [line for line in out.splitlines() if line.startswith("unusable:")]
    entry = out[out.index("unusable:"):]  # the entry and its continuation lines (laid out for 80 columns)
    assert len(unusable) == 1 and "evil\\nname" in "".join(ln.strip() for ln in entry.splitlines()), out
    assert not any(line.startswith("name") for line in out.splitlines()), out


def test_library_does_not_import_click() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import rooftop.analyzer, rooftop.parsers\n"
        "for pkg in (rooftop.parsers, rooftop.analyzer):\n"
        "    for m in pkgutil.walk_packages(pkg.__path__, pkg.__name__ + '.'):\n"
        "        if m.name.split('.')[-1].startswith('cli'):\n"
        "            continue\n"
        "        try:\n"
        "            importlib.import_module(m.name)\n"
        "        except ImportError as exc:\n"
        "            if 'rooftop' in str(exc): raise\n"
        "print('click' in sys.modules)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT,
                         timeout=300, check=True)
    assert res.stdout.strip().splitlines()[-1] == "False", res.stdout


def test_numpy_warnings_on_nan_inf_samples_stay_off_the_terminal(tmp_path: Path) -> None:
    lines = Path(DMON).read_text(encoding="utf-8").splitlines()
    bad = ["inf", "nan", "1e308", "-inf"]
    for i, line in enumerate(lines):
        if line.startswith("GPU") and i % 2 == 0:
            p = line.split()
            lines[i] = "    ".join(p[:2] + [bad[(i + j) % 4] for j in range(2, len(p))])
    src = tmp_path / "nan.dmon"
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    res = _run("analyze", str(src), "--html", str(tmp_path / "r.html"))
    assert res.returncode == 0, res.stderr
    assert b"Warning" not in res.stderr and b"Warning" not in res.stdout


def test_the_command_line_imports_no_heavy_module() -> None:
    """``rooftop --help`` must not pay for pandas, pyarrow or plotly (issue 18: bench/cli_startup.py)."""
    code = ("import sys, rooftop.cli.commands\n"
            "print(sorted(m for m in ('pandas', 'pyarrow', 'plotly', 'numpy', 'scipy', 'dask') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(_package_only())}, cwd=_package_only())
    assert res.stdout.strip() == "[]", res.stdout


def test_an_ncu_analysis_imports_no_http_client() -> None:
    """Reading a file pays for no HTTP stack: ``urllib.request`` (http.client, ssl, email) is
    imported only to read a Prometheus server (issue 18 item 6)."""
    code = ("import sys\nfrom rooftop.analyzer.pipeline import run_analysis\n"
            f"run_analysis([{DEMO!r}])\n"
            "print(sorted(m for m in ('urllib.request', 'http.client', 'ssl', 'plotly') if m in sys.modules))")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(_package_only())}, cwd=_package_only())
    assert res.stdout.strip().splitlines()[-1] == "[]", res.stdout


def test_frozen_imports_freezes_only_the_first_import_of_pandas() -> None:
    """rooftop/cli/lazy.frozen_imports: GC paused inside and restored after; gc.freeze() only
    in the call that imported pandas (a process running many commands freezes once)."""
    code = ("import gc\nfrom rooftop.cli.lazy import frozen_imports\n"
            "with frozen_imports():\n    inside = gc.isenabled()\n    import pandas\n"
            "first = gc.get_freeze_count()\ngc.unfreeze()\n"
            "with frozen_imports():\n    import pandas\n"
            "print(inside, first > 1000, gc.get_freeze_count(), gc.isenabled())")
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True,
                         env={**os.environ, "PYTHONPATH": str(_package_only())}, cwd=_package_only())
    assert res.stdout.strip() == "False True 0 True", res.stdout
