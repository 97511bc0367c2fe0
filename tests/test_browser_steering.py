"""A real browser drives the three steering views: a what-if branch and back, your French read
with teacher forcing, and a beam search with its tree (same Chromium setup as test_browser.py)."""
from __future__ import annotations

import os


from harness.browser import VIEWPORT, WAIT_MS, plots_in, translate_and_step


def textarea_value(page, elem_id):
    return page.locator(f"#{elem_id} textarea").input_value()


def wait_value(page, elem_id, predicate_js):
    page.wait_for_function(f"() => {{ const t = document.querySelector('#{elem_id} textarea'); "
                           f"return t && ({predicate_js})(t.value); }}", timeout=WAIT_MS)


def what_if_and_back(page, greedy: str) -> str:
    page.get_by_text("What if? Take another piece").click()
    page.locator("#whatif-piece textarea").fill("▁chien")
    page.click("#whatif-btn")
    page.wait_for_selector("#viewing:has-text('This branch')", timeout=WAIT_MS)
    wait_value(page, "fr-text", f"v => v !== {greedy!r}")
    branch = textarea_value(page, "fr-text")
    assert "chien" in branch
    page.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)
    assert page.locator("#viewing-row").is_visible()                  # a banner above the tabs says so
    page.get_by_role("tab", name="Attention explorer").click()
    assert page.locator("#viewing-row").is_visible()                  # ...on every tab
    page.click("#viewing-back")                                       # and takes you back
    wait_value(page, "fr-text", f"v => v === {greedy!r}")
    page.locator("#viewing-row").wait_for(state="hidden", timeout=WAIT_MS)
    page.get_by_role("tab", name="Step by step").click()
    page.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)   # at the step it left
    page.wait_for_function("() => document.querySelector('#step-slider input[type=number]').value === '3'",
                           timeout=WAIT_MS)
    return branch


def your_french(page, greedy: str) -> None:
    page.get_by_role("tab", name="Your French & beams").click()
    page.click("#forced-copy")
    wait_value(page, "forced-text", f"v => v === {greedy!r}")
    page.locator("#forced-text textarea").fill(greedy.replace("chat", "chien"))
    page.click("#forced-btn")
    page.wait_for_selector("#forced-info:has-text('part ways')", timeout=WAIT_MS)
    plots_in(page, "forced-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#viewing-forced", state="attached", timeout=WAIT_MS)
    assert page.locator("#viewing-row").is_visible()


def beam(page) -> str:
    page.click("#beam-btn")
    wait_value(page, "beam-text", "v => v.length > 0")
    page.wait_for_selector("#beam-info-box:has-text('length penalty')", timeout=WAIT_MS)
    plots_in(page, "beam-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#beam-plot .scatterlayer", timeout=WAIT_MS)
    return textarea_value(page, "beam-text")


def test_steering_views_in_a_browser(browser, app_url, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    greedy = translate_and_step(page, app_url)
    branch = what_if_and_back(page, greedy)
    assert branch != greedy
    your_french(page, greedy)
    assert "chat" in beam(page).lower()
    out = os.environ.get("STEER_SHOTS") or str(tmp_path)
    page.screenshot(path=os.path.join(out, "steer.png"), full_page=True)
    assert not errors, errors
    page.close()
