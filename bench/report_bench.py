"""HTML report size and draw time in headless Chromium, this tree against a previous revision.

    python bench/report_bench.py [--baseline REV] [--loads N] [FILE...]

One run measures every kind of page: the 10-launch sample document and the 100k-launch document of
tests/regen_golden.py, a synthetic 16-GPU x 1,440-window DCGM day (the envelope path), and, when
``../shared/corpus`` is there, a dcgmi dmon capture, a dcgm-exporter scrape, two nvidia-smi files,
an nsys trace, a ``rooftop diff`` of two ncu exports and a ``rooftop fleet`` report of a DCGM
dataset (plus any export FILE given). Each document is made once by this tree (``--json``) and
rendered by this tree and by ``REV`` (a ``git worktree`` in a temporary folder; default: the last
commit whose DCGM / timeline pages inline plotly.js), then opened in /usr/bin/chromium: size in MB
and the time until the page script reports it has drawn (``data-plots-ready``), the median of
``--loads`` loads. Prints a table; nothing is asserted (tests never assert on time). The baseline
render needs ``plotly`` (the ``bench`` extra).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpus"
BASELINE = "43380e5"  # main before the SVG timelines: DCGM / nvidia-smi / timeline / diff pages inline plotly.js
RENDER = ("import json, sys; from rooftop.reports.html import render_html; "
          "open(sys.argv[2], 'w', encoding='utf-8').write(render_html(json.load(open(sys.argv[1]))))")
CORPUS = {  # page name: (command, inputs under shared/corpus)
    "dcgmi dmon (A100, corpus)": ("analyze", ["dcgm/docs.nvidia.com__datacenter__dcgm__latest__user-guide__"
                                              "feature-overview.html.dmon_A100_grTensorDram.txt"]),
    "dcgm-exporter scrape (corpus)": ("analyze", ["dcgm/NVIDIA__dcgm-exporter__issues__512.metrics_excerpt.prom"]),
    "nvidia-smi CSV (corpus)": ("analyze", ["dcgm/xypp3__gpu_glasses__nvidia_smi.csv"]),
    "nvidia-smi dmon 8 GPUs (corpus)": ("analyze", ["dcgm/liguodongiot__llm-action__docs__llm-base__"
                                                    "nvidia-smi-dmon.md.nvsmi_dmon.txt"]),
    "nsys 2 GPUs (corpus)": ("analyze", ["trace/GindaChen__nsys-ai__tests__fixtures__h100_2gpu_1s.sqlite"]),
}
FIXTURES = {
    "dcgm-exporter scrapes (fixture)": ("analyze", ["fixtures/dcgm/prom_scrapes_phases.prom"]),
    "rooftop diff, 2 ncu exports": ("diff", ["fixtures/diff/baseline.raw.csv", "fixtures/diff/candidate.raw.csv"]),
}


def _cli(args: list[str], tmp: Path) -> dict[str, Any]:
    out = tmp / "doc.json"
    subprocess.run([sys.executable, "-m", "rooftop", *args, "--json", str(out), "--html", str(tmp / "x.html")],
                   cwd=ROOT, check=False, capture_output=True)
    return dict(json.loads(out.read_text(encoding="utf-8")))


def _fleet(tmp: Path) -> dict[str, Any]:
    ds = tmp / "dataset"
    subprocess.run([sys.executable, "-m", "rooftop", "ingest", "fixtures/dcgm/prom_scrapes_phases.prom",
                    "fixtures/dcgm/prom_tsdb_mig.prom", "--to", str(ds), "--finished"], cwd=ROOT, check=True,
                   capture_output=True)
    return _cli(["fleet", str(ds)], tmp)


def dcgm_day(gpus: int = 16, windows: int = 1440) -> dict[str, Any]:
    """The sample document with a synthetic day of 60 s windows on ``gpus`` GPUs (timelines only)."""
    from tests.regen_golden import sample_document

    doc = sample_document()
    t = [f"2026-11-20T{m // 60:02d}:{m % 60:02d}:00Z" for m in range(windows)]
    doc["timelines"] = {f"node{g // 8}/{g % 8}": {
        "t": t, "gr_active": [0.5 + 0.4 * ((m * (g + 3)) % 17) / 17 for m in range(windows)],
        "sm_active": [0.4 + 0.5 * ((m * (g + 5)) % 13) / 13 for m in range(windows)],
        "tensor_active": [0.3 * ((m + g) % 7) / 7 for m in range(windows)],
        "dram_active": [0.2 + 0.3 * ((m * 7 + g) % 11) / 11 for m in range(windows)],
        "label": ["compute-bound"] * windows} for g in range(gpus)}
    doc["window"] = {"seconds": 60.0, "source": "option", "reason": "60 s, set by --window"}
    return doc


def documents(files: list[str], tmp: Path) -> dict[str, dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.regen_golden import big_document, sample_document

    docs: dict[str, Callable[[], dict[str, Any]]] = {
        "sample (7 launches + DCGM)": sample_document, "100k launches": lambda: big_document(100_000),
        "DCGM 16 GPUs x 1440 windows (synthetic)": dcgm_day}
    for name, (cmd, inputs) in FIXTURES.items():
        docs[name] = partial(_cli, [cmd, *inputs], tmp)
    docs["rooftop fleet, 2 DCGM fixtures"] = partial(_fleet, tmp)
    if SHARED.is_dir():
        for name, (cmd, inputs) in CORPUS.items():
            docs[name] = partial(_cli, [cmd, *(str(SHARED / i) for i in inputs)], tmp)
    for f in files:
        docs[Path(f).name[:40]] = partial(_cli, ["analyze", f], tmp)
    return {name: make() for name, make in docs.items()}


def render(tree: Path, doc_json: Path, out: Path) -> bool:
    return subprocess.run([sys.executable, "-c", RENDER, str(doc_json), str(out)], cwd=tree,
                          capture_output=True).returncode == 0


def draw_s(browser: Any, page_path: Path, loads: int) -> float:
    times = []
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 1400, "height": 900})
        t = time.perf_counter()
        page.goto(page_path.as_uri())
        page.wait_for_function("document.body.getAttribute('data-plots-ready') !== null", timeout=120_000)
        times.append(time.perf_counter() - t)
        page.close()
    return statistics.median(times)


def main() -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE)
    ap.add_argument("--loads", type=int, default=3)
    ap.add_argument("files", nargs="*")
    args = ap.parse_args()
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as tmp_s:
        tmp = Path(tmp_s)
        prev = tmp / "prev"
        subprocess.run(["git", "worktree", "add", "--detach", str(prev), args.baseline], cwd=ROOT, check=True,
                       capture_output=True)
        try:
            rows = []
            with sync_playwright() as p:
                browser = p.chromium.launch(executable_path="/usr/bin/chromium",
                                            args=["--headless", "--no-sandbox", "--disable-gpu"])
                for n, (name, doc) in enumerate(documents(args.files, tmp).items()):
                    dj = tmp / f"d{n}.json"
                    dj.write_text(json.dumps(doc), encoding="utf-8")
                    now, before = tmp / f"now{n}.html", tmp / f"prev{n}.html"
                    render(ROOT, dj, now)
                    ok = render(prev, dj, before)
                    rows.append((name, now.stat().st_size / 1e6, draw_s(browser, now, args.loads),
                                 before.stat().st_size / 1e6 if ok else None,
                                 draw_s(browser, before, args.loads) if ok else None))
                browser.close()
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(prev)], cwd=ROOT, capture_output=True)
    print(f"| page | size now | drawn now | size {args.baseline} | drawn {args.baseline} |")
    print("|---|---|---|---|---|")
    for name, s1, d1, s0, d0 in rows:
        old = f"{s0:.2f} MB | {d0:.2f} s" if s0 is not None and d0 is not None else "not rendered | –"
        print(f"| {name} | {s1:.2f} MB | {d1:.2f} s | {old} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
