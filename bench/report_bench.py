"""HTML report size and draw time in headless Chromium, this tree against a previous revision.

    python bench/report_bench.py [--baseline REV] [FILE...]

For each input (default: the 10-launch sample document and the 100k-launch document of
tests/regen_golden.py, plus any export FILE given, analysed by this tree) the same document is
rendered by this tree and by ``REV`` (a ``git worktree`` in a temporary folder; default the commit
before analyzer/view.py landed), and each page is opened in /usr/bin/chromium: size in MB, and the
time until the page script reports it has drawn (``data-plots-ready``), the median of 3 loads.
Prints a table; nothing is asserted (tests never assert on time).
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
BASELINE = "1f6724b"  # reports split, before the SVG roofline (plotly.js always inlined)
RENDER = ("import json, sys; from rooftop.reports.html import render_html; "
          "open(sys.argv[2], 'w', encoding='utf-8').write(render_html(json.load(open(sys.argv[1]))))")


def documents(files: list[str]) -> dict[str, dict[str, Any]]:
    sys.path.insert(0, str(ROOT))
    from tests.regen_golden import big_document, sample_document

    docs = {"sample (7 launches + DCGM)": sample_document(), "100k launches": big_document(100_000)}
    if files:
        import rooftop

        for f in files:
            docs[Path(f).name[:40]] = rooftop.analyze([f])
    return docs


def render(tree: Path, doc_json: Path, out: Path) -> None:
    subprocess.run([sys.executable, "-c", RENDER, str(doc_json), str(out)], cwd=tree, check=True)


def draw_s(browser: Any, page_path: Path, loads: int = 3) -> float:
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
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default=BASELINE)
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
                for n, (name, doc) in enumerate(documents(args.files).items()):
                    dj = tmp / f"d{n}.json"
                    dj.write_text(json.dumps(doc), encoding="utf-8")
                    now, before = tmp / f"now{n}.html", tmp / f"prev{n}.html"
                    render(ROOT, dj, now)
                    render(prev, dj, before)
                    rows.append((name, now.stat().st_size / 1e6, draw_s(browser, now),
                                 before.stat().st_size / 1e6, draw_s(browser, before)))
                browser.close()
        finally:
            subprocess.run(["git", "worktree", "remove", "--force", str(prev)], cwd=ROOT, capture_output=True)
    print(f"| report | size now | drawn now | size {args.baseline} | drawn {args.baseline} |")
    print("|---|---|---|---|---|")
    for name, s1, d1, s0, d0 in rows:
        print(f"| {name} | {s1:.2f} MB | {d1:.2f} s | {s0:.2f} MB | {d0:.2f} s |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
