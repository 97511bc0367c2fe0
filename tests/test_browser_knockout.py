"""Knock it out (issue 40) in Chromium, as a lecturer uses it in front of a class: the projector at 1920×1080
in presenter mode, then a phone. What the page shows is checked against the model's own numbers (the
Translator in this process, the same checkpoint as the app)."""
from __future__ import annotations

import numpy as np
import pytest

from harness.browser import WAIT_MS, open_link, plots_in, settle
from transformer.viz.causal import KIND_ROWS
from test_browser_phone import LABELS, PHONE, overprinted, small_targets, too_wide
from test_browser_projector import SMALLEST_TEXT, presenter_page

CAT = "The cat is sleeping on the sofa."
WIDE = "The animal didn't cross the street because it was too wide."
TIRED = "The animal didn't cross the street because it was too tired."


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu")


# a trace's values as plotly.js holds them after decoding the typed arrays the figure JSON sends
VALUES = """([id, i, key]) => { const v = document.querySelector(`#${id} .js-plotly-plot`)._fullData[i][key];
    const plain = (x) => (Array.isArray(x) || ArrayBuffer.isView(x)) ? Array.from(x, plain) : x;
    return plain(v); }"""


def open_knockout(page) -> None:
    page.locator("[role=tab][data-tab-id='knockout']").click()
    page.wait_for_selector("#ko-btn", state="visible", timeout=WAIT_MS)


def knock_out(page, parts: str) -> str:
    before = page.locator("#ko-result").inner_text()
    page.locator("#ko-parts textarea, #ko-parts input").first.fill(parts)
    page.click("#ko-btn")
    page.wait_for_function("(before) => { const r = document.querySelector('#ko-result .knockout-result');"
                           " return r && r.innerText !== before; }", arg=before, timeout=WAIT_MS)
    plots_in(page, "ko-plot").wait_for(timeout=WAIT_MS)
    return page.locator("#ko-result").inner_text()


def test_a_lecturer_knocks_out_heads_ranks_them_and_patches_the_classic_pair(browser, app_url, translator):
    from transformer.causal import parse_parts
    page = presenter_page(browser, app_url, text=CAT)
    open_knockout(page)
    # the picker writes the part into the box
    page.locator("#ko-add").click()
    page.wait_for_function("() => /cross L1 H1/.test(document.querySelector('#ko-parts textarea, #ko-parts "
                           "input').value)",
                           timeout=WAIT_MS)
    shown = knock_out(page, "cross L1, cross L2, cross L3")
    expected = translator.knock_out(CAT, parse_parts("cross L1, cross L2, cross L3"))
    assert expected.changed and expected.text in shown and expected.original_text in shown, shown
    assert "changed from step 1" in shown
    bars = page.evaluate(VALUES, ["ko-plot", 1, "y"])
    assert bars == pytest.approx([float(p) for p in expected.p_knocked], abs=1e-4)
    # one head that does not matter: the page says the translation stands
    assert "did not change" in knock_out(page, "enc L1 H1")

    page.click("#ko-rank-btn")
    page.wait_for_selector("#ko-rank-text:has-text('heads knocked out alone')", timeout=WAIT_MS)
    plots_in(page, "ko-rank-plot").wait_for(timeout=WAIT_MS)
    plots_in(page, "ko-scatter").wait_for(timeout=WAIT_MS)
    best = translator.head_importance(CAT).ranked()[0]
    page.locator("#ko-table").scroll_into_view_if_needed()
    page.wait_for_function("() => /\\n1\\n/.test(document.querySelector('#ko-table').innerText)",
                           timeout=WAIT_MS)
    table = page.locator("#ko-table").inner_text()                # the cells one a line, row after row
    assert f"\n1\n{KIND_ROWS[best[0]]}\n{best[1]}\n{best[2]}\n{round(best[3], 3):g}\n" in table, table[:300]
    # the projector: every figure's text at 28 px or more, at most two figures side by side
    settle(page)
    sizes = {f["id"]: f["px"] for f in page.evaluate(SMALLEST_TEXT)}
    assert {"ko-plot", "ko-rank-plot", "ko-scatter"} <= set(sizes) and min(sizes.values()) >= 28, sizes

    # the classic pair: A in the sentence box, translated; B below
    page.click("#ko-classic")
    page.wait_for_function("() => /trop large/.test(document.querySelector('#fr-text textarea').value)",
                           timeout=WAIT_MS)
    assert page.locator("#ko-other textarea, #ko-other input").first.input_value() == TIRED
    settle(page)
    page.click("#ko-patch-btn")
    page.wait_for_selector("#ko-patch-result .patch-result", timeout=WAIT_MS)
    for fig in ("ko-patch-plot", "ko-patch-parts", "ko-patch-heads"):
        plots_in(page, fig).wait_for(timeout=WAIT_MS)
    pm = translator.patching(WIDE, TIRED)
    text = page.locator("#ko-patch-result").inner_text()
    assert f"{pm.p_a:.1%}" in text and f"{pm.p_b:.1%}" in text and f"p({pm.piece})" in text, text
    z = page.evaluate(VALUES, ["ko-patch-plot", 0, "z"])
    np.testing.assert_allclose(np.array(z, dtype=float), pm.restored(pm.layer_positions_p), atol=1e-3)
    page.close()


def test_knock_it_out_on_a_phone(browser, app_url):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    open_link(page, app_url, text=WIDE)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    open_knockout(page)
    shown = knock_out(page, "cross L2 H1-8, positions source")
    assert "cross L2 H8 and the source positional encoding, zeroed" in shown, shown
    page.click("#ko-rank-btn")
    plots_in(page, "ko-rank-plot").wait_for(timeout=WAIT_MS)
    page.locator("#ko-other textarea, #ko-other input").first.fill(TIRED)
    page.click("#ko-patch-btn")
    plots_in(page, "ko-patch-plot").wait_for(timeout=WAIT_MS)
    settle(page)
    assert too_wide(page) == []
    table = page.evaluate("() => { const t = document.querySelector('.knockout-result table')"
                          ".getBoundingClientRect();"
                          " return [t.right, document.documentElement.clientWidth]; }")
    assert table[0] <= table[1] + 1, table                 # the two translations wrap within the screen
    for fig in ("ko-plot", "ko-rank-plot", "ko-patch-plot", "ko-patch-parts", "ko-patch-heads"):
        labels = page.evaluate(LABELS, fig)
        assert overprinted(labels) == [], (fig, overprinted(labels)[:5])
    assert small_targets(page) == []
    context.close()


def test_the_room_sees_the_presenters_knock_out(browser, app_url):
    """In a live lecture the presenter's knock-out and ranking reach a follower's phone: what is switched off,
    the new translation, the heads map; "Explore on my own" opens the full app on the same knock-out."""
    presenter = presenter_page(browser, app_url, text=CAT)
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    presenter.locator("#live-panel .live-fold").click()            # projected, then folded to its line
    open_knockout(presenter)
    shown = knock_out(presenter, "cross L1, cross L2, cross L3")
    presenter.click("#ko-rank-btn")
    plots_in(presenter, "ko-rank-plot").wait_for(timeout=WAIT_MS)
    context = browser.new_context(**PHONE)
    phone = context.new_page()
    phone.goto(app_url + f"?follow={code}")
    phone.wait_for_selector("#view-where:has-text('switched off: cross L1, cross L2, cross L3')",
                            timeout=WAIT_MS)
    phone.locator("#parts [data-id=ko-rank-plot]").scroll_into_view_if_needed()   # drawn when scrolled to
    phone.locator("#parts [data-id=ko-rank-plot].js-plotly-plot").wait_for(timeout=WAIT_MS)
    knocked = phone.locator("#parts [data-id=ko-result]").inner_text()
    assert knocked.split("knocked out")[-1].strip()[:20] in shown
    phone.click("#follow-explore")
    plots_in(phone, "ko-plot").wait_for(timeout=WAIT_MS)
    phone.wait_for_selector("#ko-result .knockout-result", timeout=WAIT_MS)
    assert "changed from step 1" in phone.locator("#ko-result").inner_text()
    presenter.click("#live-end")
    presenter.close()
    context.close()
