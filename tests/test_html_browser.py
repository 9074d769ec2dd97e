"""The HTML report in a real browser (Debian chromium driven by Playwright's Python API).

Checks: the roofline draws the expected points, the DCGM / nvidia-smi / timeline charts are static
SVG (one chart per metric family, devices as series; no plotly.js bundle), no console errors, no
network request of any kind, hostile names are shown as text and never run, sortable table works,
and a 100k-kernel report stays under 10 MB and draws.
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

    def svg_counts(self) -> dict[str, int]:
        """Markers drawn per level group of the roofline SVGs."""
        js = """() => {
          const out = {};
          for (const g of document.querySelectorAll('#roofline svg g.lvl')) {
            const k = g.getAttribute('class').split(' ')[1];
            out[k] = (out[k] || 0) + g.children.length;
          }
          return out; }"""
        return dict(self.page.evaluate(js))

    def svg_charts(self, section: str) -> list[dict[str, Any]]:
        """The SVG charts of a section: class, drawn size, series paths and <title> hover texts."""
        js = f"""() => Array.from(document.querySelectorAll('#{section} svg')).map(s => ({{
            cls: s.getAttribute('class'), w: s.getBoundingClientRect().width, h: s.getBoundingClientRect().height,
            paths: s.querySelectorAll('path, polyline, polygon, rect').length,
            titles: Array.from(s.querySelectorAll('title')).map(t => t.textContent)}}))"""
        return list(self.page.evaluate(js))


@pytest.fixture(scope="module")
def sample(browser: Any, tmp_path_factory: pytest.TempPathFactory) -> Loaded:
    path = tmp_path_factory.mktemp("html") / "sample.html"
    path.write_text(render_html(sample_document()), encoding="utf-8")
    return Loaded(browser, path)


def test_roofline_draws_expected_points(sample: Loaded) -> None:
    counts = sample.svg_counts()
    # 5 placed families x 3 levels (the unknown-metrics family has no intensity)
    assert counts["lvl-dram"] == counts["lvl-l2"] == counts["lvl-l1"] == 5
    assert counts["lvl-windows"] == 4      # 2 GPUs x 2 windows with estimates (idle ones have none)


def test_drawn_ceilings_are_the_ceilings_used(sample: Loaded) -> None:
    doc = sample_document()
    drawn = sample.page.evaluate("""() => Array.from(document.querySelectorAll('#roofline svg.roofline')).map(svg =>
        Array.from(svg.querySelectorAll('g.ceiling')).map(g => [g.dataset.key, parseFloat(g.dataset.value),
                                                              g.querySelector('text').textContent]))""")
    panels = doc["roofline"]["panels"] + doc["roofline"]["windows"]
    assert len(drawn) == len(panels)
    for got, panel in zip(drawn, panels, strict=True):
        assert sorted((k, v) for k, v, _ in got) == sorted((c["key"], c["value"]) for c in panel["ceilings"])
        for _, _, text in got:  # labelled at the line with an SI unit and the source
            assert ("FLOP/s" in text or "B/s" in text) and "builtin" in text


def test_top_families_are_labelled_on_the_chart(sample: Loaded) -> None:
    doc = sample_document()
    labels = sample.page.evaluate("Array.from(document.querySelectorAll('#roofline .point-label')).map(e => e.textContent)")
    expected = [doc["families"][i]["family"] for i in doc["roofline"]["panels"][0]["labelled"]]
    assert len(labels) == len(expected) == 5
    for n, (text, fam) in enumerate(zip(labels, expected, strict=True), 1):
        # a family's name, or its number alone where every place by its marker is taken (the key names it)
        assert text == str(n) or (text.startswith(f"{n} ") and fam[:20] in text)
    assert sum(text != str(n) for n, text in enumerate(labels, 1)) >= 3
    boxes = sample.page.evaluate("Array.from(document.querySelectorAll('#roofline .point-label')).map(e => {"
                                 "const r = e.getBoundingClientRect(); return [r.left, r.top, r.right, r.bottom]; })")
    assert all(b[2] - b[0] > 5 for b in boxes)  # rendered, not collapsed
    for i, a in enumerate(boxes):  # as the browser draws them, no label over another
        for b in boxes[i + 1:]:
            assert not (a[0] < b[2] - 1 and b[0] < a[2] - 1 and a[1] < b[3] - 1 and b[1] < a[3] - 1), (a, b)


def test_level_toggle_hides_a_level(sample: Loaded) -> None:
    page = sample.page
    visible = "() => Array.from(document.querySelectorAll('#roofline .lvl-l2')).filter(g => getComputedStyle(g).display !== 'none').length"
    assert page.evaluate(visible) == 1
    page.locator("#roofline input.t-l2").first.uncheck()
    assert page.evaluate(visible) == 0
    page.locator("#roofline input.t-l2").first.check()
    assert page.evaluate(visible) == 1


def test_kernel_table_fits_1400_px(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "wide.html"
    path.write_text(render_html(sample_document()), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(path.as_uri())
    over = page.evaluate("""() => { const w = document.querySelector('#kernels .tablewrap');
        return [w.scrollWidth, w.clientWidth, document.documentElement.scrollWidth, window.innerWidth]; }""")
    assert over[0] <= over[1] and over[2] <= over[3], over
    page.fill("#kernels input.tsearch", "add_kernel")
    shown = page.evaluate("Array.from(document.querySelectorAll('table.kernels tbody tr')).filter(r => r.style.display !== 'none').length")
    assert shown == 2
    page.close()


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
    assert sample.page.evaluate("document.scripts.length") == 1  # the page script only: no plotly.js
    assert sample.page.evaluate(
        "Array.from(document.querySelectorAll('b')).filter(b => b.textContent === 'bold').length") == 0
    titles = sample.page.evaluate("Array.from(document.querySelectorAll('.finding .t')).map(e => e.textContent)")
    assert any(HOSTILE_NAMES[0] in t for t in titles)
    assert sample.dialogs == []


def test_hover_shows_name_literally(sample: Loaded) -> None:
    titles = sample.page.evaluate("Array.from(document.querySelectorAll('#roofline svg g.lvl title')).map(t => t.textContent)")
    assert any("<img src=x onerror=alert(1)>" in t for t in titles)
    assert sample.page.evaluate("document.querySelectorAll('svg img, svg script').length") == 0
    assert sample.dialogs == []


def test_table_sorts_on_click(sample: Loaded) -> None:
    page = sample.page
    header = page.locator("table.kernels thead th", has_text="duration")
    header.click()
    col = 1 + int(page.evaluate("Array.from(document.querySelectorAll('table.kernels thead th')).findIndex(th => th.textContent.startsWith('duration'))"))
    first = page.evaluate(f"document.querySelector('table.kernels tbody tr td:nth-child({col})').getAttribute('data-v')")
    header.click()
    first_desc = page.evaluate(f"document.querySelector('table.kernels tbody tr td:nth-child({col})').getAttribute('data-v')")
    assert float(first) < float(first_desc)
    assert float(first) == pytest.approx(1e-3) and float(first_desc) == pytest.approx(5e-3)


def test_100k_kernel_report_is_small_and_draws(browser: Any, tmp_path: Path) -> None:
    big = tmp_path / "big.html"
    big.write_text(render_html(big_document(100_000)), encoding="utf-8")
    assert big.stat().st_size < 10 * 1024 * 1024
    loaded = Loaded(browser, big)
    assert loaded.errors == [] and loaded.external_requests() == []
    assert loaded.svg_counts()["lvl-dram"] == 2000
    assert loaded.draw_ms > 0  # it drew; how fast is measured by bench/run.py, not asserted here


def test_dcgm_timelines_are_static_svg_with_escaped_hover(sample: Loaded) -> None:
    """One chart per metric family with both GPUs as series, drawn at once (no plotly.js: the old
    page inlined the 4.9 MB bundle and drew a plotly figure per GPU); hover is SVG <title> text."""
    assert sample.page.evaluate("typeof Plotly") == "undefined"
    assert sample.page.evaluate("document.documentElement.outerHTML.length") < 400_000
    charts = sample.svg_charts("timelines")
    kinds = [c["cls"] for c in charts]
    assert kinds[0] == "spanrows" and kinds[1:] == ["timechart"] * 4  # GR, SM, tensor, DRAM active
    assert all(c["w"] > 500 and c["h"] > 100 and c["paths"] > 2 for c in charts)
    hover = "\n".join(t for c in charts for t in c["titles"])
    assert "GPU node-<01>:0" in hover  # the hostile host name, shown as text
    assert "UTC" in hover and "%" in hover
    assert sample.page.evaluate("document.querySelectorAll('svg script, svg foreignObject, img').length") == 0
    assert sample.errors == [] and sample.external_requests() == []


def test_timeline_report_draws_every_chart_without_errors(browser: Any, tmp_path: Path) -> None:
    """A trace of several devices: the busy strip (one heatmap row per device) and the gap
    histogram draw, with no script error (several per-device heatmap traces on one category axis
    made plotly.js throw and leave the section blank)."""
    import rooftop
    from tests.test_timeline import _make_trace

    trace = _make_trace().write_nsys(tmp_path / "trace.sqlite")
    doc = rooftop.analyze([trace])
    assert len(doc["timeline"]) >= 2
    path = tmp_path / "trace.html"
    path.write_text(render_html(doc), encoding="utf-8")
    loaded = Loaded(browser, path)
    assert loaded.errors == []
    charts = loaded.svg_charts("timelines")
    assert [c["cls"] for c in charts] == ["spanrows", "vbars"]  # busy strip (a row per device), gap histogram
    assert all(c["w"] > 500 and c["paths"] >= len(doc["timeline"]) for c in charts), [(c["w"], c["paths"]) for c in charts]
    assert any("busy" in t for t in charts[0]["titles"])
    assert loaded.page.evaluate("typeof Plotly") == "undefined"
    loaded.page.close()


def test_dcgm_corpus_page_is_light_and_draws(browser: Any, tmp_path: Path) -> None:
    """A real dcgmi dmon capture: every family chart drawn as SVG, no console message, far under 1.5 MB."""
    import rooftop
    from tests.conftest import corpus_dir

    path = corpus_dir("dcgm") / "docs.nvidia.com__datacenter__dcgm__latest__user-guide__feature-overview.html.dmon_A100_grTensorDram.txt"
    page = tmp_path / "dmon.html"
    page.write_text(render_html(rooftop.analyze([str(path)])), encoding="utf-8")
    assert page.stat().st_size < 1_500_000
    loaded = Loaded(browser, page)
    assert loaded.errors == [] and [m for m in loaded.console if m[0] in ("error", "warning")] == []
    charts = loaded.svg_charts("timelines")
    assert [c["cls"] for c in charts] == ["spanrows", "timechart", "timechart", "timechart"]
    assert all(c["h"] > 80 for c in charts)
    loaded.page.close()


@pytest.mark.corpus
def test_a_trace_page_with_a_long_input_name_fits_1400_px(browser: Any, tmp_path: Path) -> None:
    # the corpus TraceLens Falconsai trace: its 90-character input name, one unbreakable token in the
    # 'input · device' cells of the timelines and op-coverage tables, made the page 1569 px wide
    from rooftop.analyzer.pipeline import run_analysis
    from tests.conftest import corpus_dir

    name = "AMD-AGI__TraceLens__tests__traces__h100__Falconsai_nsfw_image_detection__1016002.json.gz"
    path = tmp_path / "trace.html"
    path.write_text(render_html(run_analysis([str(corpus_dir("ops") / name)])), encoding="utf-8")
    page = browser.new_page(viewport={"width": 1400, "height": 900})
    page.goto(path.as_uri())
    width = page.evaluate("() => [document.documentElement.scrollWidth, window.innerWidth]")
    page.close()
    assert width[0] <= width[1], width
