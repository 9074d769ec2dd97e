"""Outputs are written safely, inputs are streamed, resource failures end in one clear line.

* ``rooftop.atomic.write_atomic``: a failure mid-write (ENOSPC on write, on fsync, on rename)
  leaves the old file intact and no temporary file behind; a symlink at the target is replaced,
  never followed; the new file has the usual ``0666 & ~umask`` mode.
* ``rooftop analyze``: an unwritable output (read-only folder, missing folder, a folder as the
  target, a full disk) ends with exit 2 and one line; an output path that is one of the inputs is
  refused, the input left untouched; inputs are never modified.
* The DCGM text parsers stream their input (they never ask the Source for the whole file), and a
  ~200 MB Prometheus file parses under an address-space cap of about twice its size (``slow``).
"""

from __future__ import annotations

import errno
import hashlib
import os
import random
import stat
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

import rooftop.atomic as atomic
from rooftop.atomic import write_atomic
from rooftop.cli.commands import main
from rooftop.errors import OutputError
from rooftop.parsers import parse_path
from rooftop.parsers.source import Source
from tests.fuzzing import ROOT

from bench.gen_inputs import (  # isort: skip
    ncu_raw_header,
    ncu_raw_row,
    write_dmon,
    write_prom_text,
    write_prom_text_bytes,
)


def _enospc(*_a: Any, **_k: Any) -> Any:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


class _FullDisk:
    """A file object whose writes fail as on a full disk (after the first few bytes went out)."""

    def __init__(self, fh: Any) -> None:
        self._fh = fh

    def write(self, data: bytes) -> int:
        self._fh.write(data[:10])
        self._fh.flush()
        _enospc()
        return 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._fh, name)

    def __enter__(self) -> _FullDisk:
        return self

    def __exit__(self, *exc: object) -> None:
        self._fh.close()


def _full_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.fdopen
    monkeypatch.setattr(atomic.os, "fdopen", lambda fd, *a, **k: _FullDisk(real(fd, *a, **k)))


def _leftovers(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith(".tmp"))


# ----------------------------------------------------------------------------- write_atomic
@pytest.mark.parametrize("where", ["write", "fsync", "replace"])
def test_failure_mid_write_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, where: str) -> None:
    target = tmp_path / "report.html"
    target.write_text("OLD REPORT")
    if where == "write":
        _full_disk(monkeypatch)
    else:
        monkeypatch.setattr(atomic.os, where, _enospc)
    with pytest.raises(OutputError) as info:
        write_atomic(target, "NEW " * 100_000)
    assert target.read_text() == "OLD REPORT"
    assert _leftovers(tmp_path) == [], "temporary file left behind"
    msg = str(info.value)
    assert "\n" not in msg and "report.html" in msg and "No space left" in msg


def test_missing_folder_is_output_error(tmp_path: Path) -> None:
    with pytest.raises(OutputError, match="does not exist"):
        write_atomic(tmp_path / "no" / "such" / "r.html", "x")


def test_target_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "r.html").mkdir()
    with pytest.raises(OutputError):
        write_atomic(tmp_path / "r.html", "x")
    assert _leftovers(tmp_path) == []


def test_symlink_target_is_replaced_not_followed(tmp_path: Path) -> None:
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    link = tmp_path / "r.html"
    link.symlink_to(victim)
    write_atomic(link, "report")
    assert victim.read_text() == "precious"
    assert not link.is_symlink() and link.read_text() == "report"


def test_new_file_mode_follows_umask(tmp_path: Path) -> None:
    """Reports are meant to be shared: mkstemp's 0600 must not leak into the final file."""
    old = os.umask(0o022)
    try:
        p = write_atomic(tmp_path / "r.html", "x")
    finally:
        os.umask(old)
    assert stat.S_IMODE(p.stat().st_mode) == 0o644, oct(p.stat().st_mode)


# ----------------------------------------------------------------------------- the command
def _raw_input(tmp_path: Path) -> Path:
    rng = random.Random(2)
    p = tmp_path / "k.raw.csv"
    p.write_text(ncu_raw_header() + "".join(ncu_raw_row(i, f"kernel_{i % 3}", rng) for i in range(6)))
    return p


def _run(args: list[str]) -> Result:
    return CliRunner().invoke(main, args, catch_exceptions=True)


def _one_line_exit2(res: Result, needle: str) -> None:
    assert res.exit_code == 2, f"exit {res.exit_code}: {res.output!r} {res.exception!r}"
    assert "Traceback" not in res.output and "internal error" not in res.output, res.output
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and needle in lines[0], lines


def test_cli_full_disk_exit2_and_old_report_kept(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    src = _raw_input(tmp_path)
    html = tmp_path / "r.html"
    html.write_text("OLD")
    _full_disk(monkeypatch)
    res = _run(["analyze", str(src), "--html", str(html), "-q"])
    _one_line_exit2(res, "r.html")
    assert "No space left" in res.stderr
    assert html.read_text() == "OLD" and _leftovers(tmp_path) == []


def test_cli_unwritable_folder_simulated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def denied(*_a: Any, **_k: Any) -> Any:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", denied)
    res = _run(["analyze", str(_raw_input(tmp_path)), "--html", str(tmp_path / "r.html"), "-q"])
    _one_line_exit2(res, "r.html")


@pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root ignores folder permissions")
def test_cli_read_only_folder(tmp_path: Path) -> None:
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        res = _run(["analyze", str(_raw_input(tmp_path)), "--html", str(ro / "r.html"), "-q"])
    finally:
        ro.chmod(0o755)
    _one_line_exit2(res, "r.html")


def test_cli_missing_output_folder(tmp_path: Path) -> None:
    res = _run(["analyze", str(_raw_input(tmp_path)), "--html", str(tmp_path / "nope" / "r.html"), "-q"])
    _one_line_exit2(res, "r.html")


def test_cli_output_is_a_directory(tmp_path: Path) -> None:
    (tmp_path / "out").mkdir()
    res = _run(["analyze", str(_raw_input(tmp_path)), "--json", str(tmp_path / "out"), "-q",
                "--html", str(tmp_path / "r.html")])
    assert res.exit_code == 2 and "Traceback" not in res.output and "internal error" not in res.output


def _digest(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def test_cli_never_modifies_inputs(tmp_path: Path) -> None:
    src = _raw_input(tmp_path)
    before = (_digest(src), src.stat().st_mtime_ns)
    res = _run(["analyze", str(src), "--html", str(tmp_path / "r.html"), "--json", str(tmp_path / "r.json"), "-q"])
    assert res.exit_code == 0, res.output
    assert (_digest(src), src.stat().st_mtime_ns) == before


def test_cli_refuses_to_overwrite_an_input(tmp_path: Path) -> None:
    """``rooftop analyze run.csv --html run.csv`` (a slip of the shell) must not destroy the export."""
    src = _raw_input(tmp_path)
    before = _digest(src)
    res = _run(["analyze", str(src), "--html", str(src), "-q"])
    assert _digest(src) == before, "the input export was overwritten by a report"
    _one_line_exit2(res, src.name)


# ----------------------------------------------------------------------------- streaming
@pytest.mark.parametrize("kind", ["prom", "dmon"])
def test_dcgm_text_parsers_stream(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    """The DCGM text parsers read line by line: asking for the whole file is a failure."""
    if kind == "prom":
        w = write_prom_text(tmp_path / "m.prom", hosts=1, gpus=2, scrapes=20)
    else:
        w = write_dmon(tmp_path / "d.txt", gpus=2, ticks=50)

    def whole(self: Source, *a: Any, **k: Any) -> Any:
        raise AssertionError(f"{kind} parser read the whole file ({self.path})")

    monkeypatch.setattr(Source, "text", whole)
    monkeypatch.setattr(Source, "read_bytes", whole)
    res = parse_path(w.path)
    assert res.accounting.total == w.total


_CAP_SCRIPT = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, sys.argv[3])
    import numpy, pandas, pyarrow  # noqa: F401  (their import cost is not the parser's)
    from rooftop.parsers import parse_path
    import rooftop.parsers.prometheus.text  # noqa: F401
    def vm():
        for line in open('/proc/self/status'):
            if line.startswith('VmSize'):
                return int(line.split()[1]) * 1024
    cap = vm() + int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_AS, (cap, resource.RLIM_INFINITY))
    try:
        r = parse_path(sys.argv[1])
    except MemoryError:
        print('MEMORY'); sys.exit(3)
    print(r.accounting.records, r.accounting.missing, r.accounting.rejected)
""")


@pytest.mark.slow
@pytest.mark.skipif(not Path("/proc/self/status").exists() or sys.platform != "linux", reason="Linux only")
def test_200mb_prometheus_under_memory_cap(tmp_path: Path) -> None:
    """~200 MB of scrapes under a cap of 2x the file size above the interpreter's own footprint.

    Reading the file whole (bytes + decoded text + list of lines + the table) needs about 3x; the
    streamed parser needs the output table plus one chunk (measured ~1.7x on this generator).
    """
    w = write_prom_text_bytes(tmp_path / "big.prom", 200_000_000)
    script = tmp_path / "cap.py"
    script.write_text(_CAP_SCRIPT)
    proc = subprocess.run([sys.executable, str(script), str(w.path), str(2 * w.bytes), str(ROOT)],
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"rc={proc.returncode} {proc.stdout[-500:]} {proc.stderr[-2000:]}"
    records, missing, rejected = map(int, proc.stdout.split())
    assert records + missing + rejected == w.total
