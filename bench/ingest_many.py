"""Ingest a folder of many small DCGM files, then re-ingest it with nothing new (issue 19 item 12).

    python bench/ingest_many.py --files 10000 [--keep DIR]

Writes N small Prometheus text scrapes (4 samples each, distinct hosts and times) into a temporary
folder and prints the seconds of ``ingest_files`` on it, and of a second run that finds nothing new.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from rooftop.analyzer.store.ingest import ingest_files
from rooftop.parsers import expand_inputs
from rooftop.parsers.source import ParseOptions


def write_files(folder: Path, n: int) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    t0 = 1_700_000_000_000
    for i in range(n):
        host = f"node-{i * 64 // n:02d}"  # 64 hosts, each a run of consecutive files
        ts = t0 + i * 60_000
        lines = [f'DCGM_FI_DEV_GPU_UTIL{{gpu="{g}",Hostname="{host}"}} {(i + g) % 100} {ts}\n' for g in range(2)]
        lines += [f'DCGM_FI_DEV_POWER_USAGE{{gpu="{g}",Hostname="{host}"}} {100 + i % 50}.5 {ts}\n' for g in range(2)]
        (folder / f"scrape-{i:06d}.prom").write_text("".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=10_000)
    ap.add_argument("--keep", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        folder, root = base / "in", base / "ds"
        write_files(folder, args.files)
        paths = expand_inputs([str(folder)])
        t = time.perf_counter()
        s = ingest_files(paths, root, ParseOptions())
        first = time.perf_counter() - t
        t = time.perf_counter()
        again = ingest_files(paths, root, ParseOptions())
        second = time.perf_counter() - t
        print(f"files={args.files} ingest={first:.1f}s ({len(s.ingested)} inputs, {s.files} partition files, "
              f"{s.rows} samples) re-ingest={second:.1f}s ({len(again.skipped)} skipped)")


if __name__ == "__main__":
    main()
