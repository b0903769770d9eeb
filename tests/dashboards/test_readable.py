"""Every report kind and every dashboard view, drawn in headless Chromium from generated runs (the
hard ones among them: 100-character specs, 32 states in two modes, an 8 x 8 matrix, runs whose
server was down): no text box overlaps another or is clipped, and the page logs no error.

Reports are opened from disk with every network request refused: a report must draw offline.
Screenshots go to ``$COLLAPSE_PROBE_ARTIFACTS`` (CI keeps them), else to the test's temporary directory.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402  (tests/dashboards/fixtures.py)
import layout  # noqa: E402
from test_browser import CHROMIUM, _artifacts, launch_chromium, serve_dashboard  # noqa: E402

pytestmark = pytest.mark.browser

REPORTS = (
    "audit_32_states",
    "audit_all_failed",
    "audit_on_policy_vs",
    "crossplay_8x8",
    "crossplay_all_failed",
    "crossplay_2x2",
    "play",
    "play_all_failed",
    "train",
    "monitor",
    "lab",
    "lab_compare",
    "lab_sweep",
)
VIEWS = (
    ("Runs", None, None),
    ("Simulator", "audit-long-specs-32-states", None),
    ("Simulator", "audit-server-down", None),
    ("Simulator", "audit-on-policy-vs", None),
    ("Cross-play", "crossplay-8x8-long-specs", None),
    ("Cross-play", "crossplay-server-down", None),
    ("Training", None, None),
    ("Monitor", "monitor-collapsing", None),
    ("Compare", "audit-long-specs-32-states", "audit-on-policy-vs"),
    ("Compare", "audit-on-policy-vs", "audit-server-down"),
)


def _chromium() -> None:
    pytest.importorskip("playwright.sync_api")
    if not Path(CHROMIUM).exists():
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> tuple[Path, dict[str, Path]]:
    """A runs root with a report of every kind, made by the pipelines and the project's own writers."""
    _chromium()
    root = tmp_path_factory.mktemp("runs")
    return root, fixtures.write_report_runs(root)


@pytest.fixture(scope="module")
def browser():
    _chromium()
    yield from launch_chromium()


def _drawn(page) -> None:
    """Wait until every plotly figure of the page has drawn its SVG."""
    page.wait_for_function(
        "() => Array.from(document.querySelectorAll('.plotly-graph-div, [data-testid=\"stPlotlyChart\"]'))"
        ".every(d => d.querySelector('.main-svg text'))",
        timeout=60_000,
    )
    page.wait_for_timeout(300)


@pytest.mark.parametrize("kind", REPORTS)
def test_report_is_readable_offline(runs, browser, tmp_path, kind):
    _, reports = runs
    path = reports[kind]
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    asked: list[str] = []

    def offline(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            asked.append(route.request.url)
            route.abort()

    context.route("**/*", offline)
    page = context.new_page()
    errors = layout.collect_console_errors(page)
    page.goto(path.resolve().as_uri(), wait_until="load")
    _drawn(page)
    figures = page.locator(".plotly-graph-div").count()
    found = layout.measure_text(page)
    shot = _artifacts(tmp_path) / f"report_{kind}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}; {found['n_boxes']} text boxes measured")
    context.close()
    assert figures >= 1
    assert not asked, f"{kind}: the report asked the network for {asked}"
    assert not errors, errors
    problems = layout.text_problems_of(found)
    assert not problems, layout.report_lines(kind, problems)


def test_reports_are_small(runs):
    """Every report embeds the cartesian bundle (1.5 MB), not the full plotly.js (4.8 MB)."""
    _, reports = runs
    sizes = {k: p.stat().st_size for k, p in reports.items()}
    assert all(s < 2_000_000 for s in sizes.values()), sizes
    assert all('data-plotlyjs="cartesian"' in p.read_text(encoding="utf-8") for p in reports.values())


@pytest.fixture(scope="module")
def served(runs, tmp_path_factory):
    pytest.importorskip("streamlit")
    root, _ = runs
    yield from serve_dashboard(root, tmp_path_factory.mktemp("log") / "dashboard.log")


@pytest.mark.parametrize(("view", "run", "run_b"), VIEWS, ids=[f"{v}-{r or 'all'}" for v, r, _ in VIEWS])
def test_dashboard_view_is_readable(served, browser, tmp_path, view, run, run_b):
    query = f"?view={view}" + (f"&run={run}" if run else "") + (f"&run_b={run_b}" if run_b else "")
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors = layout.collect_console_errors(page)
    page.goto(served + "/" + query, wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector("[data-testid='stSidebar']", timeout=60_000)
    page.wait_for_timeout(1500)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)
    layout.show_whole_app(page)
    _drawn(page)
    found = layout.measure_text(page)
    failed = ("cannot draw ", "This view cannot show")  # the app's own words when a figure or view fails
    alerts = [a for a in page.locator("[data-testid='stAlert']").all_inner_texts() if any(f in a for f in failed)]
    shot = _artifacts(tmp_path) / f"dashboard_{view.lower()}_{run or 'all'}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}; {found['n_boxes']} text boxes measured")
    chosen = page.evaluate("() => Array.from(document.querySelectorAll('[data-testid=\"stSelectbox\"] input'))"
                           ".map(e => e.value + ' ' + (e.getAttribute('aria-label') || '')).join(' ') + ' '"
                           " + Array.from(document.querySelectorAll('[data-testid=\"stSelectbox\"]')).map(e => e.innerText).join(' ')")  # fmt: skip
    print(chosen)
    page.close()
    assert run is None or run in chosen  # the deep link chose the run
    assert not alerts, alerts  # no figure or view failed to draw
    assert not errors, errors
    problems = layout.text_problems_of(found)
    assert not problems, layout.report_lines(f"{view} {run}", problems)


TABLES_TOO_WIDE = """() => Array.from(document.querySelectorAll('.scroll')).map(d => [
  d.closest('section').querySelector('h2').innerText, d.scrollWidth, d.clientWidth,
  Array.from(d.querySelectorAll('td.num')).filter(c => c.getClientRects().length > 1 ||
    c.getBoundingClientRect().height > 1.6 * parseFloat(getComputedStyle(c).lineHeight || 20)).length,
]).filter(([, sw, cw, wrapped]) => sw > cw + 1 || wrapped > 0)"""


@pytest.mark.parametrize("kind", REPORTS)
def test_report_tables_fit_their_box(runs, browser, kind):
    """At 1400 px every table of a report fits the page's column (the States table was 78 px wider,
    its last column cut) and no value cell wraps (``0.569 ± 0.254`` over three lines)."""
    _, reports = runs
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(reports[kind].resolve().as_uri(), wait_until="load")
    too_wide = page.evaluate(TABLES_TOO_WIDE)
    page.close()
    assert not too_wide, f"{kind}: [section, scrollWidth, clientWidth, value cells wrapped]: {too_wide}"


def _served_page(served, browser, query: str):
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    page.goto(served + "/" + query, wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector("[data-testid='stSidebar']", timeout=60_000)
    page.wait_for_timeout(1500)
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=120_000)
    layout.show_whole_app(page)
    return page


def test_runs_table_shows_every_run_and_a_verdict(runs, served, browser, tmp_path):
    """Every run in view (no run below the table's edge: about 10 were) and a verdict column."""
    from collapse_probe.report.runs import discover_runs

    n = len(discover_runs(runs[0]))
    page = _served_page(served, browser, "?view=Runs")
    page.wait_for_selector("[data-testid='stDataFrame']", timeout=60_000)
    box = page.locator("[data-testid='stDataFrame']").first.bounding_box()
    headers = page.evaluate("() => Array.from(document.querySelectorAll('[data-testid=\"stDataFrame\"] [role=\"columnheader\"]')).map(h => h.innerText.trim())")  # fmt: skip
    main = page.inner_text("[data-testid='stMain']").strip()
    page.screenshot(path=str(_artifacts(tmp_path) / "dashboard_runs_table.png"), full_page=True)
    page.close()
    assert main.startswith("Run directories"), main[:300]  # nothing above the view's heading
    assert box is not None and box["height"] >= 35 * (n + 1), (box, n)
    assert "verdict" in headers, headers


POINT_XS = """() => {
  const plots = Array.from(document.querySelectorAll('.js-plotly-plot'));
  const gd = plots[plots.length - 1];  // the comparison of the two audits, last on the page
  return Array.from(gd.querySelectorAll('.scatterlayer .trace')).map(t =>
    Array.from(t.querySelectorAll('.points path.point')).map(p => {
      const m = /translate\\(([-\\d.]+),/.exec(p.getAttribute('transform') || ''); return m ? parseFloat(m[1]) : null;
    }).filter(x => x !== null));
}"""


@pytest.fixture(scope="module")
def served_pair(tmp_path_factory):
    """The dashboard over two audits of the same probe states (two simulators, one seed)."""
    pytest.importorskip("streamlit")
    _chromium()
    root = tmp_path_factory.mktemp("pair")
    fixtures.write_audit_run(root, "audit-div", "sim_div", samples=12, states=2)
    fixtures.write_audit_run(root, "audit-mode", "sim_mode", samples=12, states=2)
    yield from serve_dashboard(root, tmp_path_factory.mktemp("log") / "dashboard.log")


def test_compare_draws_two_audits_apart(served_pair, browser, tmp_path):
    """Two audits of the same states: each state's two error bars at two x positions, not one."""
    page = _served_page(served_pair, browser, "?view=Compare&run=audit-div&run_b=audit-mode")
    _drawn(page)
    traces = [xs for xs in page.evaluate(POINT_XS) if xs]
    page.screenshot(path=str(_artifacts(tmp_path) / "dashboard_compare_pair.png"), full_page=True)
    page.close()
    assert len(traces) >= 2, traces
    a, b = traces[:2]
    assert len(a) == len(b) >= 2 and all(abs(xa - xb) >= 3 for xa in a for xb in b), (a, b)


def test_training_view_says_so_instead_of_an_empty_chart(served, browser):
    page = _served_page(served, browser, "?view=Training")
    _drawn(page)
    alerts = page.locator("[data-testid='stAlert']").all_inner_texts()
    titles = page.evaluate(
        "() => Array.from(document.querySelectorAll('.js-plotly-plot .gtitle')).map(t => t.textContent)"
    )
    page.close()
    assert any("zero reward variance" in a for a in alerts), alerts
    assert not any("zero reward variance" in t for t in titles), titles
