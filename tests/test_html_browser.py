"""The HTML report in a real browser (Debian chromium driven by Playwright's Python API).

Checks: the roofline draws the expected points (plotly's ``gd.data``), no console errors, no
network request of any kind, hostile kernel names are shown as text and never run, sortable
table works, and a 100k-kernel report stays under 10 MB and draws quickly.
Skips with the reason when ``/usr/bin/chromium`` or playwright is missing
(``tests/setup_browser.sh`` installs chromium in CI).
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rooftop.reports.html import render_html
from tests.regen_golden import HOSTILE_NAMES, big_document, sample_document

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
        "--disable-component-update", "--disable-sync", "--no-first-run"]


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.skip(f"{CHROMIUM} not found (run tests/setup_browser.sh or apt-get install chromium)")
    sync_api = pytest.importorskip("playwright.sync_api", reason="playwright is not installed (pip install playwright)")
    with sync_api.sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


class Loaded:
    """A page opened from a file, with everything it logged, requested or popped up."""

    def __init__(self, browser: Any, path: Path) -> None:
        self.console: list[tuple[str, str]] = []
        self.errors: list[str] = []
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.page = browser.new_page()
        self.page.on("console", lambda m: self.console.append((m.type, m.text)))
        self.page.on("pageerror", lambda e: self.errors.append(str(e)))
        self.page.on("dialog", self._dialog)
        self.page.route("**/*", self._route)
        t = time.perf_counter()
        self.page.goto(path.as_uri())
        self.page.wait_for_function("document.body.getAttribute('data-plots-ready') !== null", timeout=60_000)
        self.load_s = time.perf_counter() - t
        self.draw_ms = float(self.page.evaluate("document.body.getAttribute('data-draw-ms')"))

    def _dialog(self, d: Any) -> None:
        self.dialogs.append(d.message)
        d.dismiss()

    def _route(self, route: Any) -> None:
        url = route.request.url
        self.requests.append(url)
        if url.startswith(("file:", "data:")):
            route.continue_()
        else:
            route.abort()

    def external_requests(self) -> list[str]:
        return [u for u in self.requests if not u.startswith(("file:", "data:"))]

    def roofline_counts(self) -> dict[str, int]:
        js = """() => {
          const out = {};
          for (const el of document.querySelectorAll('.plot')) {
            for (const t of (el.data || [])) {
              const role = (t.meta && t.meta.role) || 'other';
              out[role] = (out[role] || 0) + (t.x ? t.x.length : 0);
            }
          }
          return out; }"""
        return dict(self.page.evaluate(js))


@pytest.fixture(scope="module")
def sample(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    path = tmp_path_factory.mktemp("html") / "sample.html"
    path.write_text(render_html(sample_document()), encoding="utf-8")
    return Loaded(browser, path)


def test_roofline_draws_expected_points(sample: Loaded) -> None:
    counts = sample.roofline_counts()
    # 5 classified families x 3 levels (the unknown-metrics family has no intensity)
    assert counts["points"] == 15
    assert counts["windows"] == 4      # 2 GPUs x 2 windows with estimates (idle ones have none)
    assert counts["ceiling"] == 6 * 2  # 3 compute + 3 bandwidth lines, 2 points each
    assert counts["ridge"] == 3 * 3
    drawn = sample.page.evaluate("document.querySelectorAll('#roofline .plot .scatterlayer .point').length")
    assert drawn >= 15 + 4


def test_no_console_errors_no_network_no_dialogs(sample: Loaded) -> None:
    assert sample.errors == []
    assert [m for m in sample.console if m[0] in ("error", "warning")] == []
    assert sample.external_requests() == []
    assert sample.dialogs == []


def test_hostile_names_shown_as_text(sample: Loaded) -> None:
    cells = sample.page.evaluate(
        "Array.from(document.querySelectorAll('table.kernels tbody tr td:nth-child(2)')).map(td => td.textContent)")
    for name in HOSTILE_NAMES:
        assert name in cells, name[:40]
    # nothing injected: no <img>, no extra <script>, no <b> from data
    assert sample.page.evaluate("document.querySelectorAll('img').length") == 0
    assert sample.page.evaluate("document.scripts.length") == 3
    assert sample.page.evaluate(
        "Array.from(document.querySelectorAll('b')).filter(b => b.textContent === 'bold').length") == 0
    titles = sample.page.evaluate("Array.from(document.querySelectorAll('.finding .t')).map(e => e.textContent)")
    assert any(HOSTILE_NAMES[0] in t for t in titles)
    assert sample.dialogs == []


def test_hover_shows_name_literally(sample: Loaded) -> None:
    js = """() => {
      const el = document.querySelector('#roofline .plot');
      const t = el.data.find(t => t.meta && t.meta.role === 'points' && t.hovertext.some(h => h.includes('onerror')));
      const i = t.hovertext.findIndex(h => h.includes('onerror'));
      Plotly.Fx.hover(el, [{curveNumber: el.data.indexOf(t), pointNumber: i}]);
      const label = el.querySelector('.hoverlayer');
      return label ? label.textContent : '';
    }"""
    text = sample.page.evaluate(js)
    assert "<img src=x onerror=alert(1)>" in text
    assert sample.page.evaluate("document.querySelectorAll('.hoverlayer img').length") == 0
    assert sample.dialogs == []


def test_table_sorts_on_click(sample: Loaded) -> None:
    page = sample.page
    header = page.locator("table.kernels thead th", has_text="duration")
    header.click()
    first = page.evaluate("document.querySelector('table.kernels tbody tr td:nth-child(6)').getAttribute('data-v')")
    header.click()
    first_desc = page.evaluate("document.querySelector('table.kernels tbody tr td:nth-child(6)').getAttribute('data-v')")
    assert float(first) < float(first_desc)
    assert float(first) == pytest.approx(1e-3) and float(first_desc) == pytest.approx(5e-3)


def test_100k_kernel_report_is_small_and_draws(browser: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.html"
    big.write_text(render_html(big_document(100_000)), encoding="utf-8")
    assert big.stat().st_size < 10 * 1024 * 1024
    loaded = Loaded(browser, big)
    assert loaded.errors == [] and loaded.external_requests() == []
    assert loaded.roofline_counts()["points"] == 2000 * 3
    assert loaded.draw_ms > 0  # it drew; how fast is measured by bench/run.py, not asserted here


def test_lazy_figures_draw_when_scrolled_into_view(sample: Loaded) -> None:
    page = sample.page
    total = int(page.evaluate("document.body.getAttribute('data-plots-total')"))
    assert total == page.evaluate("document.querySelectorAll('.plot').length") >= 4
    page.evaluate("document.querySelectorAll('.plot').forEach(el => el.scrollIntoView())")
    page.evaluate("window.scrollTo(0, document.body.scrollHeight)")
    page.wait_for_function(f"document.querySelectorAll('.plot[data-drawn]').length === {total}", timeout=30_000)
    assert sample.errors == [] and sample.external_requests() == []
