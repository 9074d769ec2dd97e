"""The Prometheus text fast path's micro-optimisations, each against its obvious alternative.

    .venv/bin/python bench/prom_fastpath.py                 # 36.8 MB input (4 hosts x 240 scrapes), 3 rounds
    .venv/bin/python bench/prom_fastpath.py --scrapes 20    # a quick check of the harness

One process, one generated input (``bench/gen_inputs.py write_prom_text``, in a temporary folder).
Each round parses the file once per variant, in turn (``rooftop.parsers.prometheus.text.parse``; best of
``--repeat`` per variant and round); a variant swaps one piece of the fast path for its plain
alternative. Printed per variant: median wall and CPU over the rounds, and the median of the
per-round ratios alternative / current (> 1: the current code is faster; for the DROPPED row
the alternative is the removed optimisation, kept here to re-measure it). Every variant's samples,
rejections and meta must equal the current parser's (checked each round), so no ratio is bought
by dropping data. Numbers and decisions: bench/NOTES.md ("Prometheus text, fast path re-measured").
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import rooftop.parsers.prometheus.heads as ph  # noqa: E402
import rooftop.parsers.prometheus.records as pr  # noqa: E402
import rooftop.parsers.prometheus.scan as ps  # noqa: E402
import rooftop.parsers.prometheus.text as pt  # noqa: E402
from bench.gen_inputs import write_prom_text  # noqa: E402
from rooftop.parsers.source import ParseOptions, Source  # noqa: E402

START = datetime(2025, 1, 1, tzinfo=timezone.utc)
_PLAIN_HEADS = ps.encode_heads


def _general_only(data: bytes | memoryview) -> tuple[pa.Array, np.ndarray, None]:
    """No byte scanner: every line through the Arrow/regex line grammar (prom_grammar)."""
    text = bytes(data).decode("utf-8", "replace").split("\n")
    return pa.array(text, pa.string()), np.arange(len(text)), None


def _view_heads(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.DictionaryArray:
    """Dropped optimisation: heads as zero-copy ``string_view``s over the chunk (length, 4-byte
    prefix, buffer 0, offset; heads > 12 bytes are stored out of line), dictionary-encoded, cast."""
    n = len(start)
    if not n or int((end - start).min()) <= 12:  # inline views would need their bytes copied
        return _PLAIN_HEADS(buf, start, end)
    b = np.frombuffer(buf, dtype=np.uint8)
    v = np.zeros((n, 4), dtype="<i4")
    v[:, 0] = end - start
    v[:, 1] = b[start[:, None] + np.arange(4)].view("<i4")[:, 0]
    v[:, 3] = start
    views = pa.Array.from_buffers(pa.string_view(), n, [None, pa.py_buffer(v), buf])
    enc = pc.dictionary_encode(views)
    return pa.DictionaryArray.from_arrays(enc.indices, enc.dictionary.cast(pa.string()))


def _gathered_slices(buf: pa.Buffer, start: np.ndarray, end: np.ndarray) -> pa.Array:
    """Byte ranges gathered with numpy (repeat/arange fancy index) instead of an Arrow ``take``."""
    lens = (end - start).astype(np.int64)
    off = np.zeros(len(start) + 1, dtype=np.int32)
    np.cumsum(lens, out=off[1:])
    b = np.frombuffer(buf, dtype=np.uint8)
    idx = np.repeat(start - off[:-1], lens) + np.arange(int(off[-1]))
    return pa.Array.from_buffers(pa.string(), len(start), [None, pa.py_buffer(off), pa.py_buffer(b[idx])])


def _uncached(self: ph.HeadCache, heads: pa.Array) -> ph.Heads:
    """Every chunk's distinct heads parsed again (no cache across chunks)."""
    return ph.parse_heads(heads, self.seen)


def _scrapes_by_rows(h: ph.Heads, hidx: np.ndarray, state: pr.State) -> np.ndarray:
    """Scrape numbers with ``np.unique`` over every row's series key (no per-head series code, no
    int16 radix sort)."""
    if not len(hidx):
        return np.zeros(0, "int64")
    head_ident, idents = pr.series_idents(h)
    m = max(1, len(idents))
    uniq, inv = np.unique(h.fid.astype("int64")[hidx] * m + head_ident[hidx], return_inverse=True)
    return pr.number_scrapes(inv.reshape(-1), uniq, idents, state)


# name -> (what the current code does, its alternative, patches: (module, attribute, replacement))
VARIANTS: dict[str, tuple[str, str, list[tuple[Any, str, Any]]]] = {
    "byte scanner": ("plain lines found by numpy byte offsets (prom_scan)",
                     "every line through the Arrow/regex grammar", [(pr, "scan_chunk", _general_only)]),
    "string_view heads": ("heads copied by slices(), then dictionary_encode",
                          "DROPPED: zero-copy string_view heads", [(ps, "encode_heads", _view_heads)]),
    "slices by take": ("byte ranges copied by one Arrow take of a (range, gap) array",
                       "numpy repeat/arange gather", [(ps, "slices", _gathered_slices)]),
    "head cache": ("each distinct head parsed once per file (HeadCache)",
                   "distinct heads parsed per chunk", [(ph.HeadCache, "lookup", _uncached)]),
    "scrape codes": ("series code per distinct head, int16 radix sort of rows",
                     "np.unique over every row's series key", [(pr, "_scrapes", _scrapes_by_rows)]),
    "memoryview chunks": ("chunks scanned in place (memoryview)", "chunk copied to bytes first",
                          [(pr, "scan_chunk", lambda d, _s=ps.scan_chunk: _s(bytes(d)))]),
}


@contextmanager
def patched(patches: list[tuple[Any, str, Any]]) -> Iterator[None]:
    old = [(obj, name, getattr(obj, name)) for obj, name, _ in patches]
    try:
        for obj, name, new in patches:
            setattr(obj, name, new)
        yield
    finally:
        for obj, name, was in old:
            setattr(obj, name, was)


def _parse(path: Path) -> Any:
    return pt.parse(Source(str(path)), ParseOptions(start=START))


def _timed(fn: Callable[[], Any], repeat: int) -> tuple[float, float, Any]:
    """(best wall, CPU of that run, result) of ``repeat`` runs."""
    best: tuple[float, float, Any] | None = None
    for _ in range(repeat):
        w0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        w, c = time.perf_counter() - w0, time.process_time() - c0
        if best is None or w < best[0]:
            best = (w, c, out)
    assert best is not None
    return best


def _same(a: Any, b: Any) -> bool:
    return bool(a.samples.equals(b.samples) and a.rejected == b.rejected and a.meta == b.meta)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--hosts", type=int, default=4)
    ap.add_argument("--scrapes", type=int, default=240)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--repeat", type=int, default=2, help="best of N per variant and round")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "dcgm.prom"
        w = write_prom_text(path, hosts=a.hosts, scrapes=a.scrapes)
        print(f"input: {w.bytes / 1e6:.1f} MB, {w.total:,} samples; {a.rounds} rounds, best of {a.repeat}")
        _parse(path)  # warm up imports and caches
        wall: dict[str, list[float]] = {"current": []}
        cpu: dict[str, list[float]] = {"current": []}
        for r in range(a.rounds):
            cw, cc, ref = _timed(lambda: _parse(path), a.repeat)
            wall["current"].append(cw)
            cpu["current"].append(cc)
            for name, (_now, _alt, patches) in VARIANTS.items():
                with patched(patches):
                    vw, vc, got = _timed(lambda: _parse(path), a.repeat)
                assert _same(ref, got), f"{name}: result differs"
                wall.setdefault(name, []).append(vw)
                cpu.setdefault(name, []).append(vc)
            print(f"round {r + 1}: current {cw * 1e3:.0f} ms", flush=True)
    med = statistics.median
    print(f"\ncurrent parser: {med(wall['current']) * 1e3:.0f} ms wall, {med(cpu['current']) * 1e3:.0f} ms CPU (medians)")
    print(f"{'optimisation':<20} {'alternative: wall / CPU ms':>27} {'ratio alt/current wall (CPU)':>30}")
    for name, (now, alt, _p) in VARIANTS.items():
        rw = med([v / c for v, c in zip(wall[name], wall["current"], strict=True)])
        rc = med([v / c for v, c in zip(cpu[name], cpu["current"], strict=True)])
        print(f"{name:<20} {med(wall[name]) * 1e3:>14.0f} / {med(cpu[name]) * 1e3:<10.0f} {rw:>17.2f}x ({rc:.2f}x)")
        print(f"{'':<20}   now: {now}; alternative: {alt}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
