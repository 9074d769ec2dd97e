"""CPU time of each stage of the timeline analysis of one trace (bench/NOTES.md, "Timelines, 2026-11-27").

Each listed function of ``analyzer/timeline/__init__`` is timed where it is the outermost timed call (a
``label_device`` inside ``_steps`` counts as ``_steps``); "rest" is the analysis total minus their sum. Usage::

    PYTHONPATH=$PWD .venv/bin/python bench/timeline_stages.py [TRACE] [--repeat 30]
"""

from __future__ import annotations

import argparse
import collections
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SQLITE = ROOT.parent / "shared" / "corpus" / "trace" / "GindaChen__nsys-ai__tests__fixtures__mfu_2gpu_before.sqlite"
STAGES = ("host_activity", "_steps", "blocking_rows", "collectives", "copy_table", "call_keys", "communication",
          "device_metrics", "label_device", "_graph_share", "graph_gaps", "sync_exempt")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("trace", nargs="?", type=Path, default=SQLITE)
    ap.add_argument("--repeat", type=int, default=30)
    args = ap.parse_args()
    import rooftop.analyzer.timeline as tl
    from rooftop.parsers import parse_path

    r = parse_path(args.trace)
    acc: collections.Counter[str] = collections.Counter()
    depth = [0]

    def wrap(name: str) -> None:
        f = getattr(tl, name)

        def timed(*a: Any, **k: Any) -> Any:
            if depth[0]:
                return f(*a, **k)
            depth[0] += 1
            t = time.process_time()
            try:
                return f(*a, **k)
            finally:
                acc[name] += time.process_time() - t
                depth[0] -= 1

        setattr(tl, name, timed)

    for name in STAGES:
        if hasattr(tl, name):
            wrap(name)
    tl.analyze_timelines([r])
    acc.clear()
    t = time.process_time()
    for _ in range(args.repeat):
        tl.analyze_timelines([r])
    total = (time.process_time() - t) / args.repeat
    print(f"analysis total {total * 1e3:6.1f} ms")
    for name, sec in acc.most_common():
        print(f"{name:15s} {sec / args.repeat * 1e3:6.1f} ms")
    print(f"{'rest':15s} {(total - sum(acc.values()) / args.repeat) * 1e3:6.1f} ms")


if __name__ == "__main__":
    main()
