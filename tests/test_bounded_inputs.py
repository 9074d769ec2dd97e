"""Hostile inputs end in bounded time and memory, with one typed error naming the file (issue 30
items 12, 13 and 17's corrupt SQLite): a raw CSV header a million columns wide, format detection
over blank lines, JSON nested thousands deep (Kineto, query JSON, device files), YAML aliases,
an endless SQLite view, a corrupt SQLite page that would read short, and Prometheus query JSON
streamed in a small multiple of its size.

Where the old code ran for minutes or exhausted memory, the run is a subprocess under an
address-space cap and a generous wall-clock bound (a bound on runaway work, not a timing check)."""

from __future__ import annotations

import contextlib
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest

from rooftop.errors import InputError
from rooftop.parsers import parse_path
from rooftop.parsers.json_depth import MAX_DEPTH, DepthCheck, check_json_depth
from tests.conftest import CORPUS
from tests.fuzzing import ROOT

LINUX = pytest.mark.skipif(not Path("/proc/self/status").exists() or sys.platform != "linux", reason="Linux only")

_CAPPED = textwrap.dedent("""
    import resource, sys
    sys.path.insert(0, sys.argv[1])
    import numpy, pandas, pyarrow  # noqa: F401  (their import cost is not the parser's)
    import rooftop.parsers, rooftop.parsers.prometheus.json, rooftop.parsers.kineto.reader  # noqa: F401
    from rooftop.errors import InputError
    def vm():
        for line in open('/proc/self/status'):
            if line.startswith('VmSize'):
                return int(line.split()[1]) * 1024
    resource.setrlimit(resource.RLIMIT_AS, (vm() + int(sys.argv[3]), resource.RLIM_INFINITY))
    try:
        if sys.argv[4] == "stream":
            from rooftop.parsers import stream_path
            s = stream_path(sys.argv[2])
            rows = sum(b.num_rows for b in s)
            print("ROWS", rows, s.result.accounting.records)
        else:
            r = rooftop.parsers.parse_path(sys.argv[2])
            print("PARSED", r.accounting)
    except InputError as exc:
        print("INPUTERROR", exc)
    except MemoryError:
        print("MEMORY")
""")


def capped(tmp: Path, path: Path, extra_bytes: int, mode: str = "parse", timeout: int = 120) -> str:
    """Parse ``path`` in a subprocess allowed ``extra_bytes`` of address space above its imports."""
    script = tmp / "capped.py"
    script.write_text(_CAPPED)
    proc = subprocess.run([sys.executable, str(script), str(ROOT), str(path), str(extra_bytes), mode],
                          capture_output=True, text=True, timeout=timeout)
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc.stdout.strip()


# ------------------------------------------------------------------ item 12: a million columns


@LINUX
def test_a_header_wider_than_any_export_is_refused_quickly_and_small(tmp_path: Path) -> None:
    wide = tmp_path / "wide.raw.csv"
    n = 1_000_000
    ident = '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size",' \
            '"Grid Size","Device","CC"'
    with wide.open("w") as fh:
        fh.write(ident + "".join(f',"m{i}__x.sum"' for i in range(n)) + "\n")
        fh.write(",,,,,,,,,," + ',"byte"' * n + "\n")
        fh.write('"0","1","p","h","k","1","7","(1, 1, 1)","(1, 1, 1)","0","9.0"' + ',"1"' * n + "\n")
    out = capped(tmp_path, wide, 1 << 30)
    assert out.startswith("INPUTERROR"), out
    assert str(wide) in out and "1,000,011 columns" in out and "20,000 at most" in out


# ------------------------------------------------------------------ item 13: detection, depth, YAML


def test_detection_over_blank_lines_is_linear(tmp_path: Path) -> None:
    blank = tmp_path / "blank.txt"
    blank.write_text("\n" * 65_536 + " \n\t\n" * 8_192)  # quadratic scans took ~1 min per 16 KB
    proc = subprocess.run([sys.executable, "-m", "rooftop", "analyze", str(blank), "--json", str(tmp_path / "o.json")],
                          capture_output=True, text=True, timeout=60, cwd=ROOT)
    assert proc.returncode == 2 and "is not a format rooftop reads" in proc.stderr


def _depth(v: object) -> int:
    if isinstance(v, list):
        return 1 + max([_depth(x) for x in v], default=0)
    if isinstance(v, dict):
        return 1 + max([_depth(x) for x in v.values()], default=0)
    return 0


def _value(rng: random.Random, d: int) -> object:
    if d <= 0 or rng.random() < 0.2:
        return rng.choice(['a"b', "x\\", '\\"[{', "[[[", "}}", 1, 2.5, None, "\\\\"])
    if rng.random() < 0.5:
        return [_value(rng, d - 1) for _ in range(rng.randint(0, 3))]
    return {rng.choice(['k"', "k[", "k\\"]) + str(i): _value(rng, d - 1) for i in range(rng.randint(0, 3))}


def test_depth_check_agrees_with_a_parser_in_any_chunking() -> None:
    rng = random.Random(7)
    for _ in range(1500):
        v = _value(rng, rng.randint(1, 12))
        raw = json.dumps(v).encode()
        true = _depth(v)
        for limit in ((true, true - 1) if true else (0,)):
            check = DepthCheck("x", limit)
            cuts = sorted(rng.sample(range(len(raw) + 1), min(3, len(raw) + 1)))
            try:
                prev = 0
                for cut in [*cuts, len(raw)]:
                    check.feed(raw[prev:cut])
                    prev = cut
                ok = True
            except InputError:
                ok = False
            assert ok == (limit >= true), (raw[:200], limit, true)


@LINUX
@pytest.mark.parametrize("args", ["[", '{"a":'])
def test_a_deeply_nested_kineto_trace_is_refused_small(tmp_path: Path, args: str) -> None:
    d = 40_000  # 80 KB: the streaming parser needed 4 GB for it
    close = "]" if args == "[" else "}"
    body = args * d + "1" + close * d
    trace = tmp_path / "deep.json"
    trace.write_text('{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","ts":1,"dur":2,"pid":0,"tid":7,'
                     f'"args":{{"x":{body}}}}}]}}')
    out = capped(tmp_path, trace, 1 << 30)
    assert out.startswith("INPUTERROR") and f"more than {MAX_DEPTH} levels" in out, out


def test_a_deeply_nested_query_json_is_refused(tmp_path: Path) -> None:
    q = tmp_path / "q.json"
    q.write_text('{"status":"success","data":{"resultType":"matrix","result":[' + "[" * 100_000 + "]" * 100_000
                 + "]}}")
    with pytest.raises(InputError, match="nested too deeply"):
        parse_path(q)


def test_json_depth_within_the_limit_is_read() -> None:
    check_json_depth("[" * MAX_DEPTH + "]" * MAX_DEPTH, "x")
    with pytest.raises(InputError, match="at byte 512"):
        check_json_depth("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "x")


LAUGHS = textwrap.dedent("""\
    name: laughs
    a: &a ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]
    b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]
    c: &c [*b, *b, *b, *b, *b, *b, *b, *b, *b]
    d: &d [*c, *c, *c, *c, *c, *c, *c, *c, *c]
    e: &e [*d, *d, *d, *d, *d, *d, *d, *d, *d]
    f: &f [*e, *e, *e, *e, *e, *e, *e, *e, *e]
    g: &g [*f, *f, *f, *f, *f, *f, *f, *f, *f]
    peaks: {fp32: 1.0e13}
    bandwidth: {dram: 1.0e12}
    sources: {fp32: *g}
    """)


def test_yaml_aliases_in_a_device_file_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    from rooftop.analyzer.ceilings.devices import load_device_option

    dev = tmp_path / "dev.yaml"
    dev.write_text(LAUGHS)
    with pytest.raises(InputError, match=r"YAML alias \(\*a\)"):
        load_device_option(str(dev))


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_a_device_file_that_is_not_a_regular_file_is_refused(tmp_path: Path, kind: str) -> None:
    import os

    from rooftop.analyzer.ceilings.devices import load_device_option

    path = tmp_path / "dev.json"
    if kind == "fifo":
        os.mkfifo(path)

        def writer() -> None:  # so that a reader that opens it does not block forever
            with contextlib.suppress(OSError), open(path, "w") as fh:
                fh.write("{}")

        threading.Thread(target=writer, daemon=True).start()
    else:
        path.symlink_to("/dev/zero")  # endless: reading it whole never ends
    with pytest.raises(InputError, match="not a regular file"):
        load_device_option(str(path))
    if kind == "fifo":  # release a writer still waiting
        with contextlib.suppress(OSError):
            os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))


# ------------------------------------------------------------------ SQLite: endless view, corrupt page


def _nsys_like(path: Path, kernel_sql: str) -> None:
    con = sqlite3.connect(path)
    con.executescript("CREATE TABLE StringIds (id INTEGER PRIMARY KEY, value TEXT);"
                      "INSERT INTO StringIds VALUES (1, 'k');" + kernel_sql)
    con.commit()
    con.close()


@LINUX
def test_an_endless_sqlite_view_is_refused(tmp_path: Path) -> None:
    db = tmp_path / "view.sqlite"
    _nsys_like(db, "CREATE VIEW CUPTI_ACTIVITY_KIND_KERNEL AS WITH RECURSIVE r(x) AS (SELECT 1 UNION ALL "
                   "SELECT x + 1 FROM r) SELECT x AS start, x + 1 AS end, 0 AS deviceId, 7 AS streamId, "
                   "1 AS shortName, 1 AS correlationId FROM r;")
    out = capped(tmp_path, db, 1 << 30, timeout=60)
    assert out.startswith("INPUTERROR") and "is a view, not a table" in out, out


def test_a_corrupt_sqlite_page_is_not_read_silently(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A few bit flips in one page that SQLite reads without an error (rows lost or changed) are
    found by ``PRAGMA quick_check`` and refused, never read as a shorter or different timeline."""
    from rooftop.parsers.nsys import sqlite as nsys_sqlite

    src = CORPUS / "trace" / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
    if not src.is_file():
        pytest.skip("corpus trace absent")
    data = src.read_bytes()
    page_size = int.from_bytes(data[16:18], "big")
    rng = random.Random(1)
    bad = tmp_path / "bad.sqlite"
    full = parse_path(src)
    for _ in range(300):
        d = bytearray(data)
        page = rng.randrange(1, len(data) // page_size)
        for _ in range(8):
            i = page * page_size + rng.randrange(page_size)
            d[i] ^= 1 << rng.randrange(8)
        bad.write_bytes(bytes(d))
        con = sqlite3.connect(f"file:{bad}?mode=ro&immutable=1", uri=True)
        verdict = con.execute("PRAGMA quick_check(1)").fetchone()[0]
        con.close()
        if verdict == "ok":
            continue
        with monkeypatch.context() as m:  # what the reader gives without the check
            m.setattr(nsys_sqlite.Db, "check", lambda self: None)
            try:
                got = parse_path(bad)
            except InputError:
                continue
        if got.events.equals(full.events) and got.accounting == full.accounting:
            continue
        break  # damage SQLite itself does not report: read short or different
    else:
        pytest.skip("no silent corruption found in 300 tries")
    with pytest.raises(InputError, match="damaged"):
        parse_path(bad)


# ------------------------------------------------------------------ Prometheus query JSON memory


@pytest.mark.slow
@LINUX
def test_query_json_streams_in_a_small_multiple_of_its_size(tmp_path: Path) -> None:
    """~40 MB of query_range JSON (2 M samples) ingested (streamed) under 4x its size; the parser
    that built the whole answer as Python objects needed ~25x."""
    q = tmp_path / "q.json"
    with q.open("w") as fh:
        fh.write('{"status":"success","data":{"resultType":"matrix","result":[')
        for i in range(200):
            metric = {"__name__": "DCGM_FI_PROF_SM_ACTIVE", "gpu": str(i % 8), "UUID": f"GPU-{i:032d}",
                      "Hostname": f"node-{i // 8}", "modelName": "NVIDIA H100 80GB HBM3"}
            values = ",".join(f'[{1735689600 + 15 * k},"0.{k % 97}"]' for k in range(10_000))
            fh.write(("," if i else "") + f'{{"metric":{json.dumps(metric)},"values":[{values}]}}')
        fh.write("]}}")
    size = q.stat().st_size
    out = capped(tmp_path, q, 4 * size, mode="stream", timeout=600)
    assert out == "ROWS 2000000 2000000", out

