"""The ingest lock (real processes, real ``kill -9``) and the manifest (umask, malformed JSON that
deletes nothing, ``--repair``, leftover temporary files): docs/formulas.md#fleet-ingest."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from rooftop.analyzer.store.ingest import ingest_files
from rooftop.analyzer.store.lock import LOCK
from rooftop.analyzer.store.manifest import MANIFEST, Manifest
from rooftop.cli.commands import main
from rooftop.errors import InputError
from rooftop.parsers.source import ParseOptions

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
OPTS = ParseOptions(start=START, host="n1")
ROOT = Path(__file__).resolve().parent.parent


def _dmon(path: Path, ticks: int, offset: int = 0) -> Path:
    rows = [f"GPU 0     {(offset + t) % 1000 / 1000:.3f}   0.125\n" for t in range(ticks)]
    path.write_text("#Entity   GRACT   SMACT\nID\n" + "".join(rows))
    return path


def _py(code: str) -> subprocess.Popen[bytes]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


HOLD = """
import sys, time
from pathlib import Path
from rooftop.analyzer.store.lock import ingest_lock
with ingest_lock(Path(sys.argv[1] if len(sys.argv) > 1 else {root!r})):
    print("locked", flush=True)
    time.sleep(600)
"""


def test_lock_of_a_killed_process_is_free_at_once(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    log = _dmon(tmp_path / "a.log", 5)
    holder = _py(HOLD.format(root=str(root)))
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == b"locked"
        with pytest.raises(InputError, match=r"another `rooftop ingest`.*host and process id"):
            ingest_files([log], root, OPTS)
        holder.send_signal(signal.SIGKILL)  # a real kill -9: the lock file stays, with its owner line
        holder.wait(10)
    finally:
        holder.kill()
        holder.communicate()  # closes its pipes (an unclosed one is a ResourceWarning: an error here)
    assert (root / LOCK).exists() and str(holder.pid) in (root / LOCK).read_text()
    assert len(ingest_files([log], root, OPTS).ingested) == 1  # no hand deletion needed


def test_empty_lock_file_does_not_block(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    (root / LOCK).write_text("")  # killed between creating the lock and writing its owner
    assert len(ingest_files([_dmon(tmp_path / "a.log", 5)], root, OPTS).ingested) == 1
    (root / LOCK).write_text("somehost 1\n")  # an owner line from another rooftop, nobody holds it
    assert len(ingest_files([_dmon(tmp_path / "b.log", 6)], root, OPTS).ingested) == 1


RACE = """
import sys
from datetime import datetime, timezone
from pathlib import Path
from rooftop.analyzer.store.ingest import ingest_files
from rooftop.errors import InputError
from rooftop.parsers.source import ParseOptions
opts = ParseOptions(start=datetime(2025, 1, 1, tzinfo=timezone.utc), host="n1")
try:
    s = ingest_files([Path(sys.argv[1])], Path(sys.argv[2]), opts)
except InputError as exc:
    print("refused", exc)
    sys.exit(3)
print("ok", len(s.ingested))
"""


def test_concurrent_ingests_never_both_commit_over_each_other(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    root.mkdir()
    for trial in range(2):
        (root / LOCK).write_text("deadhost 999999\n")  # a stale lock, as the race started from
        logs = [_dmon(tmp_path / f"t{trial}-{i}.log", 3, offset=trial * 10 + i) for i in range(4)]
        procs = [subprocess.Popen([sys.executable, "-c", RACE, str(p), str(root)], cwd=ROOT,
                                  env=dict(os.environ, PYTHONPATH=str(ROOT)), stdout=subprocess.PIPE)
                 for p in logs]
        outs = []
        for p in procs:  # communicate() closes the pipe it reads
            out, _ = p.communicate(timeout=120)
            outs.append((p.returncode, (out or b"").decode()))
        ok = [logs[i] for i, (rc, _out) in enumerate(outs) if rc == 0]
        assert all(rc in (0, 3) for rc, _ in outs) and ok
        stored = {Path(e["path"]).name for e in Manifest.load(root).entries}
        assert {p.name for p in ok} <= stored  # every ingest that exited 0 has its commit in the manifest
    for f in Manifest.load(root).files():
        pq.read_metadata(root / f)


def test_commit_refused_when_the_lock_was_taken_away(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from rooftop.analyzer.store import ingest as ingest_mod

    root = tmp_path / "ds"
    real = ingest_mod._ingest_guarded

    def ingest_then_steal(*a: object, **k: object) -> object:
        out = real(*a, **k)  # type: ignore[arg-type]
        os.unlink(root / LOCK)  # deleted by hand while this ingest ran; another one took it
        (root / LOCK).write_text("other 1\n")
        return out

    monkeypatch.setattr(ingest_mod, "_ingest_guarded", ingest_then_steal)
    with pytest.raises(InputError, match="removed or replaced while this ingest held it"):
        ingest_files([_dmon(tmp_path / "a.log", 5)], root, OPTS)
    assert not (root / MANIFEST).exists()


KILL_DURING_SAVE = """
import os, sys
from pathlib import Path
from rooftop.analyzer.store import dataset
real = os.replace
def die(src, dst, *a, **k):
    if str(dst).endswith("_manifest.json"):
        os.kill(os.getpid(), 9)  # killed after the temporary manifest was written, before its rename
    return real(src, dst, *a, **k)
dataset.os.replace = die
from datetime import datetime, timezone
from rooftop.analyzer.store.ingest import ingest_files
from rooftop.parsers.source import ParseOptions
ingest_files([Path(sys.argv[1])], Path(sys.argv[2]),
             ParseOptions(start=datetime(2025, 1, 1, tzinfo=timezone.utc), host="n1"))
"""


def test_killed_manifest_save_leaves_no_temporary_for_good(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    log = _dmon(tmp_path / "a.log", 5)
    p = subprocess.run([sys.executable, "-c", KILL_DURING_SAVE, str(log), str(root)], cwd=ROOT,
                       env=dict(os.environ, PYTHONPATH=str(ROOT)), check=False)
    assert p.returncode == -signal.SIGKILL
    assert list(root.glob(f".{MANIFEST}.*.tmp")) and not (root / MANIFEST).exists()
    s = ingest_files([log], root, OPTS)
    assert len(s.ingested) == 1 and not list(root.glob(".*.tmp")) and s.orphans_removed >= 1


def test_manifest_mode_follows_the_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        root = tmp_path / "ds"
        ingest_files([_dmon(tmp_path / "a.log", 5)], root, OPTS)
        assert (root / MANIFEST).stat().st_mode & 0o777 == 0o644
        (root / MANIFEST).chmod(0o640)  # the operator's choice is kept on the next commit
        ingest_files([_dmon(tmp_path / "b.log", 6)], root, OPTS)
        assert (root / MANIFEST).stat().st_mode & 0o777 == 0o640
    finally:
        os.umask(old)


@pytest.mark.parametrize(("edit", "where"), [
    (lambda m: m["inputs"][0].__setitem__("files", "x"), "inputs[0].files"),
    (lambda m: m["inputs"][0].__setitem__("files", ["/etc/passwd"]), "inputs[0].files"),
    (lambda m: m["inputs"][0].__setitem__("records", "12"), "inputs[0].records"),
    (lambda m: m["inputs"][0].__setitem__("size", -1), "inputs[0].size"),
    (lambda m: m["inputs"][0].pop("sha256"), "inputs[0] has no `sha256`"),
    (lambda m: m.__setitem__("inputs", {"a": 1}), "top level"),
    (lambda m: m["inputs"].append("x"), "inputs[1] is not an object"),
])
def test_malformed_manifest_is_a_clear_error_that_deletes_nothing(tmp_path: Path, edit: object, where: str) -> None:
    root = tmp_path / "ds"
    ingest_files([_dmon(tmp_path / "a.log", 5)], root, OPTS)
    data = json.loads((root / MANIFEST).read_text())
    edit(data)  # type: ignore[operator]
    (root / MANIFEST).write_text(json.dumps(data))
    before = sorted(p for p in root.rglob("*") if p.is_file())
    with pytest.raises(InputError, match="not a valid manifest") as err:
        ingest_files([_dmon(tmp_path / "b.log", 6)], root, OPTS)
    assert where in str(err.value) and "nothing was changed or deleted" in str(err.value)
    assert sorted(p for p in root.rglob("*") if p.is_file() and p.name != LOCK) == \
        [p for p in before if p.name != LOCK]


def test_repair_reingests_inputs_whose_partitions_are_gone(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    a, b, c = _dmon(tmp_path / "a.log", 5), _dmon(tmp_path / "b.log", 6, 100), _dmon(tmp_path / "c.log", 7, 200)
    ingest_files([a], root, OPTS)
    ingest_files([b], root, OPTS)  # separate runs: small inputs of one run share partition files
    ingest_files([c], root, ParseOptions(start=START, host="n2"))
    with a.open("a") as fh:
        fh.write("GPU 0     0.999   0.125\n")
    ingest_files([a], root, OPTS)  # a: a file entry and an append
    m = Manifest.load(root)
    a_files = [f for e in m.entries if Path(e["path"]).name == "a.log" for f in e["files"]]
    (root / a_files[0]).unlink()  # a partition lost
    c_file = next(f for e in m.entries if Path(e["path"]).name == "c.log" for f in e["files"])
    (root / c_file).write_bytes(b"not parquet")  # a partition corrupted
    b.unlink()  # and an input gone... but its partitions are fine: kept
    # the fleet reader names the repair command
    res = CliRunner().invoke(main, ["fleet", str(root)])
    assert res.exit_code == 2 and f"rooftop ingest --repair --to {root}" in res.output
    res = CliRunner().invoke(main, ["ingest", "--repair", "--to", str(root)])
    assert res.exit_code == 0, res.output
    assert "repair: dropped 2" in res.output
    m = Manifest.load(root)
    got = {(Path(e["path"]).name, e["host"]): e["records"] for e in m.entries}
    assert got == {("b.log", "n1"): 12, ("a.log", "n1"): 12, ("c.log", "n2"): 14}
    for f in m.files():
        pq.read_metadata(root / f)
    assert not (root / c_file).exists() or c_file in m.files()
    # an input that is gone too is listed as lost
    (root / m.entries[0]["files"][0]).unlink()
    res = CliRunner().invoke(main, ["ingest", "--repair", "--to", str(root)])
    assert res.exit_code == 0 and "1 input(s) are gone too" in res.output
    assert {Path(e["path"]).name for e in Manifest.load(root).entries} == {"a.log", "c.log"}


def test_one_bad_file_does_not_sink_the_night(tmp_path: Path) -> None:
    folder = tmp_path / "night"
    folder.mkdir()
    _dmon(folder / "a.log", 5)
    (folder / "b.json").write_text("[" * 100_000 + "]" * 100_000)  # deeply nested JSON
    (folder / "c.prom").write_bytes(b"\x00\x01garbage\xff" * 10)
    _dmon(folder / "d.log", 6, 50)
    res = CliRunner().invoke(main, ["ingest", str(folder), "--to", str(tmp_path / "ds"), "--host", "n1",
                                    "--start", "2025-01-01T00:00:00Z"])
    assert res.exit_code == 0, res.output
    assert "ingested 2 input(s)" in res.output
    # one line for both: in no format ingest reads (issue 27: one line per reason)
    assert res.output.count("unusable: ") == 1 and "unusable: 2 input(s)" in res.output
    assert "b.json" in res.output and "c.prom" in res.output
    assert "internal error" not in res.output
    quiet = CliRunner().invoke(main, ["ingest", str(folder), "--to", str(tmp_path / "ds2"), "-q", "--host", "n1"])
    assert quiet.exit_code == 0 and quiet.output.count("unusable: 2 input(s)") == 1  # said even with -q (stderr)


def test_lock_is_not_left_behind_after_a_clean_run(tmp_path: Path) -> None:
    root = tmp_path / "ds"
    ingest_files([_dmon(tmp_path / "a.log", 5)], root, OPTS)
    assert not (root / LOCK).exists()
    time.sleep(0)  # (no timing asserted)
