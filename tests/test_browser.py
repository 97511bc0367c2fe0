"""A real browser (Debian's chromium via playwright) uses the app as a person would.

Saves assets/screenshot.png for the README. Skipped only where chromium is absent and CI
is not set; under CI a missing browser is a failure.
"""
from __future__ import annotations

import os
import shutil
import time

import pytest

from conftest import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
         "--no-first-run", "--disable-component-update", "--disable-sync"]


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


def plots_in(page, elem_id):
    return page.locator(f"#{elem_id} .js-plotly-plot")


def test_translate_step_and_explore_in_a_browser(browser, app_url):
    page = browser.new_page(viewport={"width": 1440, "height": 1650})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.goto(app_url)
    box = page.locator("#src-text textarea")
    box.wait_for(timeout=90_000)
    box.fill("The cat is sleeping on the sofa.")
    box.press("Enter")
    page.wait_for_function("() => document.querySelector('#fr-text textarea') && "
                           "document.querySelector('#fr-text textarea').value.length > 0", timeout=60_000)
    french = page.locator("#fr-text textarea").input_value()
    assert "chat" in french.lower()
    plots_in(page, "topk-plot").wait_for(timeout=90_000)
    plots_in(page, "cross-step-plot").wait_for(timeout=90_000)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=90_000)
    # move the step slider with the Next button and the keyboard
    page.click("#next-step")
    page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=90_000)
    page.locator("body").press("ArrowRight")
    page.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=90_000)
    page.screenshot(path=str(ROOT / "assets" / "screenshot.png"), full_page=False)
    # Plotly's own toolbar offers a PNG download of every figure
    page.hover("#topk-plot .js-plotly-plot")
    assert page.locator("#topk-plot .modebar-btn[data-title*='png' i]").count() == 1
    # switch to the attention explorer: heatmaps render
    page.get_by_role("tab", name="Attention explorer").click()
    plots_in(page, "explorer-plot").wait_for(timeout=90_000)
    plots_in(page, "grid-plot").wait_for(timeout=90_000)
    assert page.locator("#grid-plot .js-plotly-plot .heatmaplayer, #grid-plot .js-plotly-plot image").count() > 0
    page.get_by_role("tab", name="Positional encoding").click()
    plots_in(page, "pe-heatmap").wait_for(timeout=90_000)
    page.get_by_role("tab", name="Inside one head").click()
    plots_in(page, "inside-plot").wait_for(timeout=90_000)
    page.screenshot(path=str(ROOT / "assets" / "screenshot-explorer.png"), full_page=False)
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
