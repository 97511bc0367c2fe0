"""In Chromium, the views added for "why this word and not that one" and the paper's design choices: the
contrastive attribution, the lens through the decoder's layers, inside one layer, the three ways to compute
attention; and an empty Translate that leaves the page as it was."""
from __future__ import annotations

from harness.browser import WAIT_MS, open_link, open_tab, plots_in, show_tab


def test_contrast_lens_layer_and_forms_in_a_browser(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    open_link(page, app_url, text="The cat is sleeping on the sofa.", tab="why")
    open_tab(page, "Attribution")
    page.locator("#contrast-btn").click()
    page.wait_for_selector("#contrast-caption:has-text('chose')", timeout=WAIT_MS)
    plots_in(page, "contrast-plot").wait_for(timeout=WAIT_MS)
    title = page.locator("#contrast-plot .gtitle").first.text_content()
    assert "rather than" in title and "Step 1" in title
    open_tab(page, "Layer by layer")
    plots_in(page, "lens-plot").wait_for(timeout=WAIT_MS)
    assert page.locator("#lens-html tr").count() >= 3 and \
        "top piece" in page.locator("#lens-html").inner_text()
    show_tab(page, "inside")
    page.get_by_text("Inside one layer: residual stream").click()
    plots_in(page, "layer-plot").wait_for(timeout=WAIT_MS)
    assert "units fire" in page.locator("#layer-plot .gtitle").first.text_content()
    page.get_by_text("Three ways to compute attention").click()
    page.wait_for_selector("#forms-result:has-text('largest difference')", timeout=WAIT_MS)
    assert page.locator("#forms-result td").count() >= 12 and \
        "e-0" in page.locator("#forms-result").inner_text()
    # an empty Translate keeps what is on screen
    french = page.locator("#fr-text textarea").input_value()
    page.locator("#src-text textarea").fill("")
    page.click("#translate-btn")
    page.wait_for_selector(".toast-body:has-text('Type an English sentence first')", timeout=WAIT_MS)
    assert page.locator("#fr-text textarea").input_value() == french
    assert not errors, errors
    page.close()
