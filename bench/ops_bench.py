"""Op analysis of a PyTorch trace (issue 26): rooftop against TraceLens's ``generate_perf_report_pytorch``
on the same file, side by side. Goal: rooftop >= 10x faster on the largest corpus trace.

rooftop: read the trace, attribute kernels to ops, apply the formula table, judge every op signature
(:func:`rooftop.analyzer.ops.analyze_ops`) and write the ``ops`` list as JSON. TraceLens: its whole
``generate_perf_report_pytorch`` (tree, perf models, CSVs) in a separate interpreter, the TraceLens venv
given by ``--tracelens-python`` (install TraceLens there from its source with ``pip install --no-deps``
plus pandas, tqdm, orjson, openpyxl, tabulate, PyYAML; never into rooftop's venv). Imports are done before
timing on both sides; each figure is the median of ``--repeat`` runs, wall and CPU seconds.

    .venv/bin/python bench/ops_bench.py --tracelens-python /tmp/tlvenv/bin/python [--trace F] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT.parent / "shared" / "corpus"
LARGEST = CORPUS / "trace" / "facebookresearch__HolisticTraceAnalysis__tests__data__negative_queue_length_values_check__rank0.json.gz"

# run in the TraceLens interpreter: time generate_perf_report_pytorch after its imports
_DRIVER = r"""
import json, resource, sys, tempfile, time, warnings
warnings.filterwarnings("ignore")
from TraceLens.Reporting.generate_perf_report_pytorch import generate_perf_report_pytorch
path, repeat = sys.argv[1], int(sys.argv[2])
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime
wall, cpus, ok = [], [], True
for _ in range(repeat):
    with tempfile.TemporaryDirectory() as out:
        t, c = time.perf_counter(), cpu()
        try:
            generate_perf_report_pytorch(path, output_csvs_dir=out)
        except Exception as exc:  # a trace it cannot read: reported, not timed
            ok = repr(exc)[:300]
        wall.append(time.perf_counter() - t)
        cpus.append(cpu() - c)
print(json.dumps({"wall": wall, "cpu": cpus, "ok": ok}))
"""


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def rooftop_times(path: Path, repeat: int) -> tuple[list[float], list[float], dict[str, Any]]:
    from rooftop.analyzer.ops.analysis import analyze_ops
    from rooftop.parsers import parse_path
    from rooftop.parsers.source import ParseOptions

    wall, cpu, facts = [], [], {}
    for _ in range(repeat):
        with tempfile.TemporaryDirectory() as out:
            t, c = time.perf_counter(), _cpu()
            r = parse_path(str(path), ParseOptions())
            oa = analyze_ops([r])
            (Path(out) / "ops.json").write_text(json.dumps({"ops": oa.ops, "ops_coverage": oa.coverage}))
            wall.append(time.perf_counter() - t)
            cpu.append(_cpu() - c)
        facts = {"signatures": len(oa.ops), "coverage": [{k: c[k] for k in ("device", "attributed", "modelled")}
                                                          for c in oa.coverage]}
    return wall, cpu, facts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--trace", type=Path, action="append", help="trace(s); default: the largest corpus trace")
    ap.add_argument("--tracelens-python", required=True, help="python of a venv with TraceLens installed")
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()
    for path in a.trace or [LARGEST]:
        ours_w, ours_c, facts = rooftop_times(path, a.repeat)
        run = subprocess.run([a.tracelens_python, "-c", _DRIVER, str(path), str(a.repeat)], capture_output=True,
                             text=True, check=False)
        lines = [ln for ln in run.stdout.splitlines() if ln.startswith("{")]
        if not lines:
            print(json.dumps({"trace": path.name, "tracelens_error": run.stderr[-800:]}))
            continue
        tl = json.loads(lines[-1])
        row = {"trace": path.name, "size_bytes": path.stat().st_size,
               "rooftop_wall_s": round(statistics.median(ours_w), 3), "rooftop_cpu_s": round(statistics.median(ours_c), 3),
               "tracelens_wall_s": round(statistics.median(tl["wall"]), 3),
               "tracelens_cpu_s": round(statistics.median(tl["cpu"]), 3), "tracelens_ok": tl["ok"],
               **facts}
        row["speedup_wall"] = round(row["tracelens_wall_s"] / row["rooftop_wall_s"], 1)
        row["speedup_cpu"] = round(row["tracelens_cpu_s"] / row["rooftop_cpu_s"], 1)
        print(json.dumps(row))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
