"""The dashboard served by ``collapse-probe dashboard`` in headless Chromium: it renders, without errors.

Needs the Debian ``chromium`` package and Playwright for Python (``pip install playwright``; the
system browser is used, so ``playwright install`` is not needed). Screenshots go to
``$COLLAPSE_PROBE_ARTIFACTS`` when set, else to the test's temporary directory; their paths are printed.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import fixtures  # noqa: E402  (tests/dashboards/fixtures.py)

pytestmark = pytest.mark.browser

CHROMIUM = os.environ.get("COLLAPSE_PROBE_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"dashboard exited early with code {proc.returncode}")
        try:
            with urllib.request.urlopen(url + "/_stcore/health", timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"dashboard did not answer at {url} within {timeout:.0f}s")


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    """The dashboard over fixture runs of every kind, started through the CLI on a free port."""
    pytest.importorskip("streamlit")
    pytest.importorskip("playwright.sync_api")
    if not (Path(CHROMIUM).exists() or shutil.which(CHROMIUM)):
        pytest.skip(f"chromium not found at {CHROMIUM} (apt-get install chromium)")
    root = tmp_path_factory.mktemp("runs")
    cp = fixtures.write_crossplay_run(root)
    fixtures.write_gate_verdict(cp, root / "gate" / "verdict.json")
    # the audit shown first: on-policy states, --compare-vs, and --human where the official P4G data is present
    human = fixtures.official_p4g_dir()
    fixtures.write_audit_run(root, "audit_mode", "sim_audit", compare_vs=True, policy="pol_a", max_turns=3, human=human)
    fixtures.write_audit_run(root, "audit_probe", "sim_div", samples=30, states=3)
    fixtures.write_train_run(root, "train_single", "single")
    fixtures.write_train_run(root, "train_vs", "vs")
    fixtures.write_half_written_runs(root / "live")
    yield from serve_dashboard(root, tmp_path_factory.mktemp("log") / "dashboard.log")


def serve_dashboard(root: Path, log: Path) -> Iterator[str]:
    """``collapse-probe dashboard ROOT`` on a free port, its output in ``log``: yields its URL, then stops it."""
    port = _free_port()
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "collapse_probe.cli", "dashboard", str(root), "--port", str(port)],
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url, proc)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        print(f"dashboard log: {log}")


def launch_chromium() -> Iterator[Any]:
    """Headless system Chromium through Playwright: yields the browser, then closes it."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as pw:
        b = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture(scope="module")
def browser():
    yield from launch_chromium()


def _artifacts(tmp_path: Path) -> Path:
    d = Path(os.environ.get("COLLAPSE_PROBE_ARTIFACTS") or tmp_path)
    d.mkdir(parents=True, exist_ok=True)
    return d


def _open(browser, url: str, view: str, wait_for: str, height: int = 1000):
    page = browser.new_page(viewport={"width": 1400, "height": height})
    page.goto(f"{url}/?view={view}", wait_until="domcontentloaded", timeout=60_000)
    page.wait_for_selector(wait_for, timeout=60_000)
    # Streamlit shows a running indicator while the script runs; wait until it is gone and plots drew
    page.wait_for_function("() => !document.querySelector('[data-testid=\"stStatusWidget\"]')", timeout=60_000)
    page.wait_for_timeout(800)
    return page


def test_crossplay_heatmap_renders_without_error(served, browser, tmp_path):
    page = _open(browser, served, "Cross-play", ".js-plotly-plot .heatmaplayer")
    shot = _artifacts(tmp_path) / "dashboard_crossplay.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert page.locator("[data-testid='stPlotlyChart']").count() >= 2  # heatmap + transfer bars
    assert page.locator(".js-plotly-plot .heatmaplayer").count() == 1
    assert page.locator("[data-testid='stException']").count() == 0
    body = page.inner_text("body")
    assert "Gate verdicts" in body and "pass" in body
    page.close()


@pytest.mark.parametrize(
    ("view", "wait_for", "min_charts"),
    [
        ("Simulator", ".js-plotly-plot", 2),
        ("Training", ".js-plotly-plot", 3),  # zero-variance groups: a sentence (no group had any)
        ("Compare", ".js-plotly-plot", 3),
        ("Runs", "[data-testid='stDataFrame']", 0),
    ],
)
def test_other_views_render_without_error(served, browser, tmp_path, view, wait_for, min_charts):
    page = _open(browser, served, view, wait_for, height=3400 if view == "Simulator" else 1000)  # the whole audit
    shot = _artifacts(tmp_path) / f"dashboard_{view.lower()}.png"
    page.screenshot(path=str(shot), full_page=True)
    print(f"screenshot: {shot}")
    assert page.locator("[data-testid='stPlotlyChart']").count() >= min_charts
    assert page.locator("[data-testid='stException']").count() == 0
    page.close()
