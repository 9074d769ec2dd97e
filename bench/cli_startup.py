"""Command-line start-up as a user meets it: ``rooftop --help`` and the analysis of a one-kernel
file (JSON only, and JSON + HTML), each a whole ``python -m rooftop`` process, timed
hyperfine-style (warm-up runs, then ``--runs`` timed runs; min / median / max wall and the median
CPU time, user + system, of the child), for this tree and for another revision (default
``HEAD~1``) exported with ``git archive``, side by side, their runs interleaved; and the floors nothing in rooftop can go
below: the bare interpreter and ``python -c "import pandas"`` (the analysis needs pandas).

    .venv/bin/python bench/cli_startup.py                  # this tree vs HEAD~1
    .venv/bin/python bench/cli_startup.py --against main --runs 20

Goals (issue 18 item 6): ``--help`` < 0.3 s, one-kernel analysis < 1 s. Prints a table; no
assertion on time. Each revision runs from its own folder (``python -m rooftop`` there imports that
folder's ``rooftop/``), so the installed package does not matter. Byte-code is cached (in a
temporary ``PYTHONPYCACHEPREFIX``; the warm-up runs fill it) as in an installed package, even where
``PYTHONDONTWRITEBYTECODE`` is set: compiling rooftop's own modules on every run would add ~0.2 s.
On a shared machine wall time follows the load; the CPU column is the comparable number.
"""

from __future__ import annotations

import argparse
import atexit
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
KERNEL = "fixtures/ncu/demo.raw.csv"
GOALS = {"--help": 0.3, "analyze 1 kernel, JSON only": 1.0, "analyze 1 kernel, JSON + HTML": 1.0}
FLOORS = {"python -c pass": ["-c", "pass"], 'python -c "import pandas"': ["-c", "import pandas"]}
_PYCACHE = Path(tempfile.gettempdir()) / f"rooftop-cli-startup-pycache-{os.getpid()}"
atexit.register(shutil.rmtree, _PYCACHE, True)  # also when bench/run.py calls measure()


def one_kernel(tmp: Path) -> Path:
    """The fixture's header and its first launch only: a one-kernel ncu raw page."""
    lines = (ROOT / KERNEL).read_text(encoding="utf-8").splitlines(keepends=True)
    first = next(i for i, line in enumerate(lines) if line[:2] == '"0')
    out = tmp / "one-kernel.raw.csv"
    out.write_text("".join(lines[: first + 1]), encoding="utf-8")
    return out


def cases(tmp: Path) -> dict[str, list[str]]:
    """``rooftop`` arguments per case (``--html ''``: no HTML report)."""
    kernel = str(one_kernel(tmp))
    return {"--help": ["--help"],
            "analyze 1 kernel, JSON only": ["analyze", kernel, "-q", "--json", str(tmp / "r.json"), "--html", ""],
            "analyze 1 kernel, JSON + HTML": ["analyze", kernel, "-q", "--json", str(tmp / "r.json"),
                                              "--html", str(tmp / "r.html")]}


def _child_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONDONTWRITEBYTECODE")}
    env["PYTHONPYCACHEPREFIX"] = str(_PYCACHE)
    return env


def _once(tree: Path, args: list[str], module: bool) -> tuple[float, float]:
    """One run of ``python -m rooftop ARGS`` (``module=False``: ``python ARGS``) from ``tree``:
    (wall, CPU user + system)."""
    cmd = [sys.executable, *(["-m", "rooftop"] if module else []), *args]
    c0, t0 = _child_cpu(), time.perf_counter()
    subprocess.run(cmd, cwd=tree, env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    return time.perf_counter() - t0, _child_cpu() - c0


def _stats(walls: list[float], cpus: list[float]) -> dict[str, float]:
    return {"min": min(walls), "median": statistics.median(walls), "max": max(walls),
            "cpu": statistics.median(cpus), "cpu_min": min(cpus)}


def measure(tree: Path, args: list[str], runs: int, warmup: int, *, module: bool = True) -> dict[str, float]:
    """Wall and CPU of ``python -m rooftop ARGS`` (``module=False``: ``python ARGS``) run from
    ``tree``: min/median/max wall, median and min CPU (user + system)."""
    return measure_interleaved([tree], args, runs, warmup, module=module)[0]


def measure_interleaved(trees: list[Path], args: list[str], runs: int, warmup: int, *, module: bool = True
                        ) -> list[dict[str, float]]:
    """:func:`measure` for several trees, their runs interleaved (A B A B …) so that a burst of
    load on this shared machine falls on all of them alike."""
    walls: list[list[float]] = [[] for _ in trees]
    cpus: list[list[float]] = [[] for _ in trees]
    for i in range(warmup + runs):
        for j, tree in enumerate(trees):
            wall, cpu = _once(tree, args, module)
            if i >= warmup:
                walls[j].append(wall)
                cpus[j].append(cpu)
    return [_stats(w, c) for w, c in zip(walls, cpus, strict=True)]


def export(rev: str, into: Path) -> Path:
    """``git archive REV`` unpacked into ``into`` (the stage links in rooftop/ included)."""
    into.mkdir(parents=True, exist_ok=True)
    tar = into / "rev.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(tar), rev], check=True)
    with tarfile.open(tar) as t:
        t.extractall(into / "tree", filter="tar")
    return into / "tree"


def _row(case: str, label: str, m: dict[str, float], goal: str) -> str:
    return (f"| {case} | {label} | {m['min']:.3f} | {m['median']:.3f} | {m['max']:.3f} "
            f"| {m['cpu']:.3f} | {m['cpu_min']:.3f} | {goal} |")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--against", default="HEAD~1", help="git revision to compare with (default HEAD~1)")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        trees = {"this tree": ROOT, a.against: export(a.against, tmp)}
        print(f"load average {os.getloadavg()[0]:.1f}; {a.runs} runs after {a.warmup} warm-up; seconds; "
              "CPU = user + system of the child")
        print("| case | tree | wall min | wall median | wall max | CPU median | CPU min | goal |\n"
              "|---|---|---|---|---|---|---|---|")
        for name, args in FLOORS.items():
            print(_row(name, "floor", measure(ROOT, args, a.runs, a.warmup, module=False), ""), flush=True)
        for name, args in cases(tmp).items():
            results = measure_interleaved(list(trees.values()), args, a.runs, a.warmup)
            for label, m in zip(trees, results, strict=True):
                print(_row(name, label, m, f"< {GOALS[name]}"), flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
