"""Timeline benchmarks (issue 17, item 7), in one run:

1. a Kineto trace: rooftop (parse + per-device metrics, labels, steps) against HolisticTraceAnalysis
   loading the same file and computing its idle-time breakdown. Goal: rooftop >= 3x faster.
2. an nsys SQLite export: rooftop reading it (every table it reads, into the events table) and
   reading + analysing it, against a bare ``sqlite3`` query of the kernel table into a DataFrame
   (``pandas.read_sql_query``). Goal: rooftop <= 2x that time.
3. peak memory (max RSS of a fresh process) parsing and analysing a generated Kineto trace of
   ``--gen-mb`` MB (default 1024).

Imports are done before timing; each figure is the median of ``--repeat`` runs, wall time and CPU
time (user + system of this process and its waited-for children). Usage::

    .venv/bin/python bench/timeline_bench.py [--kineto F] [--sqlite F] [--gen-mb 1024] [--repeat 3]

HTA is optional (``pip install holistictraceanalysis``, extra ``bench``); without it part 1 is skipped.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus" / "trace"
KINETO = CORPUS / "facebookresearch__HolisticTraceAnalysis__tests__data__negative_queue_length_values_check__rank0.json.gz"
SQLITE = CORPUS / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"


def _cpu() -> float:
    own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def measure(fn: Callable[[], Any], repeat: int) -> tuple[float, float]:
    """Median wall and median CPU seconds of ``repeat`` calls."""
    wall, cpu = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), _cpu()
        fn()
        wall.append(time.perf_counter() - t)
        cpu.append(_cpu() - c)
    return statistics.median(wall), statistics.median(cpu)


def _pair(ours: tuple[float, float], base: tuple[float, float], key: str) -> dict[str, Any]:
    return {f"{key}_wall_s": round(ours[0], 4), f"{key}_cpu_s": round(ours[1], 4),
            f"{key}_ratio_wall": round(ours[0] / base[0], 2), f"{key}_ratio_cpu": round(ours[1] / base[1], 2)}


def rooftop_trace(path: Path) -> Any:
    from rooftop.analyzer.timeline import analyze_timelines
    from rooftop.parsers import parse_path

    return analyze_timelines([parse_path(path)])


def bench_hta(path: Path, repeat: int) -> dict[str, Any]:
    try:
        from hta.trace_analysis import TraceAnalysis
    except ImportError:
        return {"skipped": "holistictraceanalysis not installed"}
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(path, Path(tmp) / ("rank0.json.gz" if path.suffix == ".gz" else "rank0.json"))

        def hta() -> None:
            TraceAnalysis(trace_dir=tmp).get_idle_time_breakdown(visualize=False)

        t_hta = measure(hta, repeat)
    t_ours = measure(lambda: rooftop_trace(path), repeat)
    return {"file": path.name, "bytes": path.stat().st_size, "rooftop_wall_s": round(t_ours[0], 3),
            "rooftop_cpu_s": round(t_ours[1], 3), "hta_wall_s": round(t_hta[0], 3), "hta_cpu_s": round(t_hta[1], 3),
            "speedup_wall": round(t_hta[0] / t_ours[0], 2), "speedup_cpu": round(t_hta[1] / t_ours[1], 2),
            "goal": ">= 3x"}


def bench_sqlite(path: Path, repeat: int) -> dict[str, Any]:
    import pandas as pd

    from rooftop.parsers import parse_path

    def bare() -> None:
        con = sqlite3.connect(path)
        pd.read_sql_query("SELECT * FROM CUPTI_ACTIVITY_KIND_KERNEL", con)
        con.close()

    base = measure(bare, repeat)
    read = measure(lambda: parse_path(path), repeat)
    both = measure(lambda: rooftop_trace(path), repeat)
    return {"file": path.name, "bytes": path.stat().st_size, "sqlite3_pandas_wall_s": round(base[0], 4),
            "sqlite3_pandas_cpu_s": round(base[1], 4), **_pair(read, base, "read"),
            **_pair(both, base, "read_analyse"), "goal": "<= 2x"}


def generate_kineto(path: Path, mb: int) -> int:
    """A Kineto-shaped trace of about ``mb`` MB: per step 1 cpu_op, 1 python_function, 1 runtime
    call and 1 kernel (float µs with 3 decimals near 6.5e12, as recent files), ProfilerSteps."""
    target = mb << 20
    base = 6520618861901
    n = 0
    with path.open("w", encoding="utf-8") as fh:
        fh.write('{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "Synthetic GPU"}],\n"traceEvents": [\n')
        size, i = 0, 0
        while size < target:
            t = base + i * 10
            chunk = []
            for j in range(1000):
                u = t + j * 10
                chunk.append(
                    f'{{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 1, "ts": {u}.125, "dur": 4.250, '
                    f'"args": {{"External id": {i + j}, "Sequence number": {i + j}, "Fwd thread id": 0}}}},\n'
                    f'{{"ph": "X", "cat": "python_function", "name": "model.py(42): forward", "pid": 1, "tid": 1, '
                    f'"ts": {u}.100, "dur": 6.000, "args": {{"Python parent id": 3, "Python id": {i + j}}}}},\n'
                    f'{{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": {u}.500, '
                    f'"dur": 2.125, "args": {{"cbid": 211, "correlation": {i + j}, "External id": {i + j}}}}},\n'
                    f'{{"ph": "X", "cat": "kernel", "name": "void elementwise_kernel<128, 4>(int, float*)", "pid": 0, '
                    f'"tid": 7, "ts": {u + 3}.001, "dur": 3.333, "args": {{"device": 0, "stream": 7, "correlation": {i + j}, '
                    f'"grid": [80, 1, 1], "block": [128, 1, 1], "registers per thread": 32}}}},\n')
            if i % 100_000 == 0:
                chunk.append(f'{{"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#{i // 100_000}", "pid": 1, '
                             f'"tid": 1, "ts": {t}.000, "dur": 1000000.000}},\n')
            text = "".join(chunk)
            fh.write(text)
            size += len(text)
            n += 4000
            i += 1000
        fh.write('{"ph": "i", "name": "end", "pid": 1, "tid": 1, "ts": 1, "s": "g"}\n]}\n')
    return n


def bench_memory(mb: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "big.json"
        t = time.perf_counter()
        n = generate_kineto(path, mb)
        gen_s = time.perf_counter() - t
        code = ("import resource, time, sys; from rooftop.parsers import parse_path; "
                "from rooftop.analyzer.timeline import analyze_timelines; t = time.perf_counter(); "
                "r = parse_path(sys.argv[1]); a = analyze_timelines([r]); "
                "print(time.perf_counter() - t, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "
                "r.accounting.records, a.timeline[0]['kernels'])")
        out = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True, check=True,
                             cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)})
        secs, rss_kb, records, kernels = out.stdout.split()
        return {"generated_mb": round(path.stat().st_size / 2**20), "events": n, "generate_s": round(gen_s, 1),
                "rooftop_s": round(float(secs), 1), "peak_rss_mb": round(int(rss_kb) / 1024),
                "events_kept": int(records), "kernels": int(kernels)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kineto", type=Path, default=KINETO)
    ap.add_argument("--sqlite", type=Path, default=SQLITE)
    ap.add_argument("--gen-mb", type=int, default=1024, help="size of the generated Kineto trace (0: skip)")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    rooftop_trace(args.kineto)  # warm imports and caches
    out: dict[str, Any] = {"kineto_vs_hta": bench_hta(args.kineto, args.repeat),
                           "sqlite_vs_bare_query": bench_sqlite(args.sqlite, args.repeat)}
    if args.gen_mb:
        out["kineto_peak_memory"] = bench_memory(args.gen_mb)
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
