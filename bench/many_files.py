"""``rooftop analyze`` over a folder of many small files: the per-file cost (issue 30 item 15).

    python bench/many_files.py --sizes 1000,10000,100000 --format prom [--runs 1]

Writes N small files of one format into a temporary folder (``prom``: a dcgm-exporter scrape of 2
GPUs x 4 scrapes, 8 samples; ``smi``: an ``nvidia-smi --query-gpu`` CSV of 2 GPUs x 4 rows; ``ncu``:
a one-kernel ncu raw-page CSV), then runs the whole command in a fresh process (``--json`` only)
and prints wall and CPU seconds, and per file. It also times the parse alone in process
(``parse_path`` on the first 1,000 files), which is where the per-file cost lives.
"""

from __future__ import annotations

import argparse
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.gen_inputs import ncu_raw_header, ncu_raw_row

ROOT = Path(__file__).resolve().parent.parent


def write_files(folder: Path, n: int, fmt: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    rng = random.Random(1)
    t0 = 1_735_689_600_000
    for i in range(n):
        if fmt == "prom":
            text = "".join(f'DCGM_FI_PROF_SM_ACTIVE{{gpu="{g}",Hostname="h{i}"}} 0.{g + 1} {t0 + k * 15000}\n'
                           for k in range(4) for g in range(2))
            (folder / f"n{i:06d}.prom").write_text(text)
        elif fmt == "smi":
            text = "timestamp, index, utilization.gpu [%], memory.used [MiB]\n" + "".join(
                f"2026/01/01 00:00:0{t}.000, {g}, 50 %, 100 MiB\n" for t in range(4) for g in range(2))
            (folder / f"s{i:06d}.csv").write_text(text)
        else:
            (folder / f"k{i:06d}.csv").write_text(ncu_raw_header() + ncu_raw_row(0, f"kern{i}", rng))


def parse_only(folder: Path, limit: int = 1000) -> float:
    """Milliseconds per file of ``parse_path`` in this process (imports excluded)."""
    from rooftop.parsers import parse_path

    files = sorted(folder.iterdir())[:limit]
    parse_path(files[0])
    t = time.perf_counter()
    for f in files:
        parse_path(f)
    return 1000 * (time.perf_counter() - t) / len(files)


def whole_command(folder: Path, out: Path) -> tuple[float, float]:
    """(wall, CPU) seconds of ``rooftop analyze FOLDER --json OUT`` in a fresh process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run([sys.executable, "-m", "rooftop", "analyze", str(folder), "--json", str(out), "-q"],
                   cwd=ROOT, check=True, capture_output=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000")
    ap.add_argument("--format", choices=("prom", "smi", "ncu"), default="prom")
    ap.add_argument("--runs", type=int, default=1)
    args = ap.parse_args()
    for n in (int(x) for x in args.sizes.split(",")):
        with tempfile.TemporaryDirectory() as tmp:
            folder = Path(tmp) / "in"
            write_files(folder, n, args.format)
            per_parse = parse_only(folder)
            runs = [whole_command(folder, Path(tmp) / "out.json") for _ in range(args.runs)]
            wall, cpu = min(runs)
            print(f"{args.format} {n:>7,} files: analyze {wall:7.1f} s wall, {cpu:7.1f} s CPU = "
                  f"{1000 * wall / n:5.1f} ms/file wall, {1000 * cpu / n:5.1f} ms CPU; "
                  f"parse alone {per_parse:5.1f} ms/file", flush=True)


if __name__ == "__main__":
    main()
