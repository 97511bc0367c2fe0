"""The Compare view in Chromium, as a lecturer (1920×1080, presenter mode, dark), a self-learner (1280×800) and a
student (390×844 phone): both maps, what the choice changes and the loss curves are drawn for each variant, the
maps come from the two models (their titles say which), nothing is wider than its column, and in presenter mode
the maps start on the first screen."""
from __future__ import annotations

import pytest

from harness.browser import WAIT_MS, open_link, plots_in, set_look
from tests.test_browser_phone import PHONE, too_wide
from transformer import variants

pytestmark = pytest.mark.skipif(len(variants.available()) < len(variants.VARIANTS),
                                reason="companion models not bundled (python tools/train_variants.py)")
SENTENCE = "The cat is sleeping on the sofa."
PLOTS = ("compare-left", "compare-right", "compare-choice", "compare-loss")
TITLE = ("(id) => document.querySelector('#' + id + ' .js-plotly-plot')._fullLayout.title.text"
         ".replaceAll('<br>', ' ')")                     # a phone wraps long titles onto lines


def open_compare(page, url: str, variant: str, **view) -> None:
    open_link(page, url, text=SENTENCE, tab="compare", variant=variant, **view)
    for p in PLOTS:
        plots_in(page, p).wait_for(timeout=WAIT_MS)
    page.wait_for_selector(f"#compare-about:has-text('{variants.VARIANTS[variant].title.split(' (')[0]}')",
                           timeout=WAIT_MS)
    page.wait_for_timeout(1500)


@pytest.mark.parametrize("size", ["1920 presenter dark", "1280", "390 phone"])
def test_compare_draws_every_variant_at_every_size(browser, app_url, size):
    context = browser.new_context(**PHONE) if "phone" in size else browser.new_context(
        viewport={"width": int(size.split()[0]), "height": 1080 if size.startswith("1920") else 800})
    page = context.new_page()
    for variant in [n for n in variants.VARIANTS if n != "baseline"]:
        open_compare(page, app_url, variant, kind="cross", layer=3, head=2)
        if "presenter" in size and variant == "learned-positions":
            set_look(page, dark=True, presenter=True)
            assert page.locator("#toy-loss").bounding_box()["y"] < 600     # the live runs' figures on the first screen
        left, right = page.evaluate(TITLE, "compare-left"), page.evaluate(TITLE, "compare-right")
        assert left.startswith("Baseline") and right.startswith(variants.VARIANTS[variant].title), (left, right)
        assert "layer 3" in left and "layer 3" in right
        assert ("head 1" if variant == "one-head" else "head 2") in right
        choice = page.evaluate(TITLE, "compare-choice")
        assert ("position vectors" in choice) == (variant == "learned-positions"), choice
        assert too_wide(page) == [], (size, variant)
        text = page.locator("#compare-about").inner_text()
        assert "dev" in text and "test" in text and "Both trained" in text
    context.close()
