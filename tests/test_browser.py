"""A real browser (Debian's chromium via playwright) uses the app as a person would.

Takes the same steps as tools/screenshots.py (which writes the README's screenshots to assets/
on request) and saves its own screenshots to a temporary folder. Skipped only where chromium is
absent and CI is not set; under CI a missing browser is a failure.
"""
from __future__ import annotations

import os
import time

import pytest

from tools.screenshots import CHROMIUM, FLAGS, VIEWPORT, open_other_views, translate_and_step


@pytest.fixture(scope="module")
def browser():
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI must run the browser test: apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield b
        b.close()


def test_translate_step_and_explore_in_a_browser(browser, app_url, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    assert "chat" in translate_and_step(page, app_url).lower()
    page.screenshot(path=str(tmp_path / "steps.png"), full_page=False)
    # Plotly's own toolbar offers a PNG download of every figure
    page.hover("#topk-plot .js-plotly-plot")
    assert page.locator("#topk-plot .modebar-btn[data-title*='png' i]").count() == 1
    open_other_views(page)
    assert page.locator("#grid-plot .js-plotly-plot .heatmaplayer, #grid-plot .js-plotly-plot image").count() > 0
    page.screenshot(path=str(tmp_path / "views.png"), full_page=False)
    assert (tmp_path / "steps.png").stat().st_size > 10_000 and (tmp_path / "views.png").stat().st_size > 10_000
    # the standalone HTML report
    page.get_by_text("Display: light/dark").click()
    page.click("#report-btn")
    page.wait_for_selector("#report-file a", timeout=60_000)
    href = page.locator("#report-file a").first.get_attribute("href")
    assert href and "transformer-trace.html" in href
    report = page.request.get(href if href.startswith("http") else app_url.rstrip("/") + "/" + href.lstrip("/")).text()
    assert report.startswith("<!DOCTYPE html>") and "Plotly" in report and "Le chat" in report
    assert not errors, errors
    page.close()


def test_markup_in_input_is_not_interpreted(browser, app_url):
    page = browser.new_page()
    page.goto(app_url)
    box = page.locator("#src-text textarea")
    box.wait_for(timeout=90_000)
    box.fill('<img src=x onerror="window.__pwned=1"> <b>bold</b> hello')
    page.click("#translate-btn")
    page.wait_for_selector("#pieces .piece", timeout=60_000)
    time.sleep(0.5)
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator("#pieces b:has-text('bold')").count() == 0
    page.close()


def test_why_this_word_views_in_a_browser(browser, app_url, tmp_path):
    """The KV-cache panel, the lines (hover isolates a piece's lines), the attribution (button) and the
    vectors each open and draw; a Code panel shows the project's own source."""
    from tools.screenshots import open_why_views
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    translate_and_step(page, app_url)
    shots = []
    open_why_views(page, lambda name: (page.screenshot(path=str(tmp_path / f"why-{name}.png")), shots.append(name)))
    assert shots == ["kv-cache", "lines", "attribution", "vectors", "code"]
    assert "saved" in page.locator("#kv-cache").inner_text()
    from tools.screenshots import open_tab
    open_tab(page, "Lines")
    page.locator("#lines-html svg text.tq").nth(1).hover()
    lines = page.locator("#lines-html svg line")
    shown = page.evaluate("() => [...document.querySelectorAll('#lines-html svg line')]"
                          ".filter(l => getComputedStyle(l).display !== 'none').length")
    assert 0 < shown < lines.count()          # hovering one query piece leaves only its lines
    assert "Integrated Gradients" in page.locator("#attr-gap").inner_text()
    assert "q · k" in page.locator("#vectors-text").inner_text()
    assert not errors, errors
    page.close()
