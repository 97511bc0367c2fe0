"""The figures in a real browser (Debian's chromium via playwright): plotly.js draws every offered
colour scale as named, masked cells stay distinct, and the explorer's controls follow its mode."""
from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import plotly.graph_objects as go

from harness.browser import SENTENCE, WAIT_MS, open_link, plots_in, settle, translate_and_step
from transformer.viz import figure, plots

PLOTLY_JS = Path(go.__file__).parent.parent / "package_data" / "plotly.min.js"


def drawn_scale(page, fig) -> list:
    """The colour scale plotly.js resolved for the figure's first trace (what it really draws)."""
    return page.evaluate("""async (f) => {
        const d = document.createElement('div'); document.body.appendChild(d);
        await Plotly.newPlot(d, f.data, f.layout); return d._fullData[0].colorscale; }""",
                         json.loads(fig.to_json()))


def test_plotlyjs_draws_every_offered_scale_as_named(browser):
    page = browser.new_page()
    page.set_content("<html><body></body></html>")
    page.add_script_tag(path=str(PLOTLY_JS))
    a = np.tril(np.ones((4, 4))) / np.arange(1, 5)[:, None]
    masked = ~np.tril(np.ones((4, 4), dtype=bool))
    viridis_low = drawn_scale(page, plots.attention_heatmap(a, list("abcd"), list("abcd"),
                                                            colorscale="Viridis"))[0][1]
    for name in figure.COLORSCALES:
        for dark in (False, True):
            fig = plots.attention_heatmap(a, list("abcd"), list("abcd"), masked=masked, colorscale=name,
                                          dark=dark)
            scale = drawn_scale(page, fig)
            expected = figure.colorscale_for(name, dark)
            if isinstance(expected, str):   # a plotly.js name: drawn as that scale, not the default
                assert expected in ("Viridis", "Cividis") and \
                    (scale[0][1] == viridis_low) == (expected == "Viridis")
            else:
                assert [c for _, c in scale] == [c for _, c in expected]
            bg = page.evaluate("() => { const bgs = document.querySelectorAll('.bg');"
                               " return getComputedStyle(bgs[bgs.length - 1]).fill; }")
            # the masked grey (or tan for Greys)
            assert bg.replace(" ", "") in ("rgb(158,158,158)", "rgb(201,166,107)")
    page.close()


def pick(page, elem_id: str, option: str) -> None:
    """Choose `option` in the Gradio dropdown `elem_id`, as a user does (open it, click the option)."""
    page.locator(f"#{elem_id} input").click()
    page.locator("[role=option]:visible", has_text=option).first.click()


def test_explorer_keeps_the_layer_and_hides_the_head_picker(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    translate_and_step(page, app_url)
    page.get_by_role("tab", name="Attention explorer").click()
    number = page.locator("#explorer-layer input[type=number]")
    number.fill("2")
    number.press("Enter")
    settle(page)
    page.locator("#explorer-kind label:visible", has_text=re.compile(r"^\s*Cross\s*$")).first.click()
    settle(page)
    assert number.input_value() == "2"                                   # not reset to 1
    assert page.locator("#explorer-head").is_visible()
    pick(page, "explorer-mode", "Mean over heads")
    settle(page)
    assert not page.locator("#explorer-head").is_visible()               # no head to pick for a mean
    pick(page, "explorer-mode", "Rollout across layers")
    page.locator("#rollout-note").wait_for(state="visible", timeout=10_000)   # says what rollout is here
    assert "Abnar" in page.locator("#rollout-note").inner_text()
    pick(page, "explorer-mode", "One head")
    page.locator("#explorer-head").wait_for(state="visible", timeout=10_000)
    assert not page.locator("#rollout-note").is_visible()
    page.close()



def font_of(page, elem_id: str) -> str:
    """The font colour a drawn figure uses (the figures' paper is transparent; the template sets the font)."""
    return page.evaluate(f"() => document.querySelector('#{elem_id} .js-plotly-plot')._fullLayout.font.color")


def wait_for_font(page, elem_id: str, color: str) -> None:
    page.wait_for_function(f"() => document.querySelector('#{elem_id} "
                           f".js-plotly-plot')._fullLayout.font.color === {json.dumps(color)}",
                           timeout=30_000)


def test_a_browser_that_prefers_dark_opens_in_the_dark_look_and_follows_a_change(browser, app_url):
    """Gradio darkens the page for a browser that prefers dark: the Look says Dark and the first figures are
    drawn dark; when the preference changes with the page open, the Look and the figures follow. A link that
    forces a look (?__theme=light) keeps it whatever the browser prefers."""
    dark, light = (plots.topk_bar(["a"], [1.0], dark=d).layout.template.layout.font.color
                   for d in (True, False))
    assert dark != light
    context = browser.new_context(color_scheme="dark", viewport={"width": 1280, "height": 800})
    page = context.new_page()
    open_link(page, app_url, text=SENTENCE)
    plots_in(page, "topk-plot").wait_for(timeout=WAIT_MS)
    assert font_of(page, "topk-plot") == dark                          # the first figure drawn, not a redraw
    assert page.evaluate("() => document.body.classList.contains('dark')")
    assert page.locator("#look input[value=Dark]").is_checked()
    translate_and_step(page, app_url)
    wait_for_font(page, "topk-plot", dark)
    assert font_of(page, "cross-step-plot") == dark
    page.emulate_media(color_scheme="light")
    page.wait_for_function("() => !document.body.classList.contains('dark')", timeout=30_000)
    wait_for_font(page, "topk-plot", light)
    assert font_of(page, "cross-step-plot") == light and page.locator("#look input[value=Light]").is_checked()

    forced = context.new_page()                                        # the browser prefers dark again
    forced.emulate_media(color_scheme="dark")
    open_link(forced, app_url, text=SENTENCE, __theme="light")
    plots_in(forced, "topk-plot").wait_for(timeout=WAIT_MS)
    assert font_of(forced, "topk-plot") == light and forced.locator("#look input[value=Light]").is_checked()
    forced.emulate_media(color_scheme="light")
    forced.emulate_media(color_scheme="dark")
    settle(forced)
    assert forced.locator("#look input[value=Light]").is_checked() and font_of(forced, "topk-plot") == light
    context.close()
