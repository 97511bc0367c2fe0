"""The guided tour in Chromium: every stop opens its tab, outlines its part of the page on screen beside the
card, and the tour can be walked back and closed; on a phone the card leaves the part it
talks about visible."""
from __future__ import annotations

import json

import pytest

from harness.browser import WAIT_MS, open_link, plots_in
from transformer.config import ModelConfig
from ui.tour import TOUR, tour_json


def test_every_stop_names_a_tab_and_a_part_of_the_page():
    from ui.tabs import TABS
    titles = {t for t, _, _ in TABS}
    assert 8 <= len(TOUR) <= 12 + 1
    assert all(s.tab is None or s.tab in titles for s in TOUR)
    cfg = ModelConfig(d_model=64, n_heads=2, n_encoder_layers=3)
    stops = json.loads(tour_json(cfg))
    assert "{" not in json.dumps([s["text"] for s in stops])          # every size filled in
    assert any("64 numbers" in s["text"] for s in stops) and any("2 heads" in s["text"] for s in stops)


IN_VIEWPORT = """(sel) => { const el = document.querySelector(sel); if (!el) return false;
    const r = el.getBoundingClientRect();
    return r.bottom > 0 && r.top < innerHeight && r.height > 0; }"""


def scrolled_into_view(page, selector: str) -> None:
    """Until the element is on screen (the tour scrolls smoothly, and the stop's tab draws meanwhile)."""
    try:
        page.wait_for_function(IN_VIEWPORT, arg=selector, timeout=WAIT_MS)
    except Exception as e:  # noqa: BLE001  playwright's timeout: say which
        raise AssertionError(f"{selector} never came on screen") from e


@pytest.mark.parametrize("viewport", [{"width": 1280, "height": 800}, {"width": 390, "height": 844}])
def test_the_tour_walks_through_the_page(browser, app_url, viewport):
    context = browser.new_context(viewport=viewport, has_touch=viewport["width"] < 500)
    page = context.new_page()
    open_link(page, app_url, text="The cat is sleeping on the sofa.")
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.click("#tour-btn")
    card = page.locator("#tour-card")
    card.wait_for(timeout=WAIT_MS)
    for i, stop in enumerate(TOUR):
        assert card.locator(".tour-title").inner_text() == stop.title
        assert card.locator(".tour-count").inner_text() == f"{i + 1} / {len(TOUR)}"
        page.wait_for_function("(sel) => { const el = document.querySelector(sel); "
                               "return el && el.classList.contains('tour-target'); }", arg=stop.target,
                               timeout=WAIT_MS)
        assert page.locator(".tour-target").count() == 1
        if stop.tab:
            assert page.get_by_role("tab", name=stop.tab).first.get_attribute("aria-selected") == "true"
        scrolled_into_view(page, stop.target)
        if stop.press == "next-step":
            page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
        if i == 2:                                                        # Back goes one stop back
            card.locator(".tour-back").click()
            assert card.locator(".tour-title").inner_text() == TOUR[1].title
            card.locator(".tour-next").click()
        card.locator(".tour-next").click()
    assert card.count() == 0 and page.locator(".tour-target").count() == 0   # Done closes it
    page.click("#tour-btn")
    card.wait_for(timeout=WAIT_MS)
    page.keyboard.press("Escape")
    assert card.count() == 0
    context.close()
