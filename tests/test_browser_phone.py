"""A student's phone (390×844, touch) in Chromium: every figure fits its column, Inside one head stacks its four
panels (all on screen), the Lines view shows every key, Previous/Next stay on screen beside the step figures and
the controls are 44 px touch targets; a phone turned to landscape redraws the figures for the wider screen."""
from __future__ import annotations

import pytest

from tests.support.browser import WAIT_MS, open_link, plots_in

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True, "device_scale_factor": 2}
SENTENCE = "The little girl gave her brother a red ball in the garden yesterday."   # 16 source pieces or so
TOUCH_MIN_PX = 43.5


def too_wide(page) -> list:
    """Every drawn figure (and the Lines view's picture) that is wider than the block holding it, or that
    reaches past the right edge of the screen: [(id, figure width, block width)]."""
    return page.evaluate("""() => {
        const out = [], W = document.documentElement.clientWidth;
        const items = [...document.querySelectorAll('.js-plotly-plot .main-svg:first-of-type'),
                       ...document.querySelectorAll('.lines-view svg')];
        for (const svg of items) {
            if (!svg.checkVisibility()) continue;
            const r = svg.getBoundingClientRect(), box = svg.closest('.block') || svg.parentElement;
            const b = box.getBoundingClientRect();
            if (r.width > b.width + 1 || r.right > W + 1) out.push([(box.id || box.className).slice(0, 40), r.width, b.width]);
        }
        return out; }""")


def open_tab(page, name: str, plot: str | None = None) -> None:
    page.get_by_role("tab", name=name).first.click()
    if plot:
        plots_in(page, plot).first.wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(1200)


@pytest.fixture
def phone(browser, app_url):
    context = browser.new_context(**PHONE)
    page = context.new_page()
    open_link(page, app_url, text=SENTENCE)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_timeout(1000)
    yield page
    context.close()


def test_phone_figures_fit_and_stack(phone):
    page = phone
    assert page.locator("#narrow-screen input").is_checked()          # the page knows it is on a phone
    assert too_wide(page) == []                                        # the Step tab's figures
    # Previous / Next stay at the bottom of the screen, wherever the page is scrolled
    page.locator("#cross-steps-plot").scroll_into_view_if_needed()
    for b in ("#prev-step", "#next-step", "#play-step"):
        box = page.locator(b).bounding_box()
        assert box["y"] + box["height"] <= 844 + 1 and box["y"] >= 844 - 60 and box["height"] >= TOUCH_MIN_PX, b
    page.click("#next-step")
    page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)

    open_tab(page, "Attention explorer", "explorer-plot")
    plots_in(page, "grid-plot").wait_for(timeout=WAIT_MS)
    assert too_wide(page) == []
    open_tab(page, "Inside one head", "inside-plot")
    fig = page.evaluate("() => document.querySelector('#inside-plot .js-plotly-plot').layout")
    lefts = {round((fig.get(f"xaxis{c}") or fig["xaxis"])["domain"][0], 3) for c in range(1, 5)}
    assert lefts == {0.0}                                              # one column: the panels are stacked
    assert too_wide(page) == []
    W = page.evaluate("() => document.documentElement.clientWidth")
    panels = page.evaluate("""() => [1, 2, 3, 4].map(c => {
        const e = document.querySelector(`#inside-plot .nsewdrag[data-subplot=${c === 1 ? 'xy' : `x${c}y${c}`}]`);
        const r = e.getBoundingClientRect(); return [r.left, r.right]; })""")
    assert len(panels) == 4 and all(0 <= l and r <= W for l, r in panels), panels   # every panel on screen
    # the query row the lower plot follows is outlined in every panel
    assert sum(s.get("type") == "rect" for s in fig.get("shapes", [])) == 4

    open_tab(page, "Why this word", None)
    page.locator("#lines-html svg").wait_for(timeout=WAIT_MS)
    keys = page.evaluate("""() => [...document.querySelectorAll('#lines-html svg text')].map(t => {
        const r = t.getBoundingClientRect(); return [t.textContent, r.left, r.right]; })""")
    assert keys and all(0 <= l and r <= W + 1 for _, l, r in keys), [k for k in keys if k[2] > W + 1][:5]
    assert too_wide(page) == []

    open_tab(page, "Head summary", "summary-plot")
    assert too_wide(page) == []
    # touch targets: the tab bar's buttons, Copy link, the accordions' headers, the radios
    small = page.evaluate("""(m) => [...document.querySelectorAll(
            'button, .label-wrap, label[data-testid$=-radio-label]')].filter(e => e.checkVisibility())
        .map(e => [e.id || e.textContent.trim().slice(0, 30), e.getBoundingClientRect().height])
        .filter(([, h]) => h > 0 && h < m)""", TOUCH_MIN_PX)
    assert small == []


def test_turning_the_phone_redraws_for_the_wider_screen(phone):
    page = phone
    open_tab(page, "Inside one head", "inside-plot")
    page.set_viewport_size({"width": 844, "height": 390})
    page.wait_for_function("() => !document.querySelector('#narrow-screen input').checked", timeout=WAIT_MS)
    page.wait_for_function("""() => { const f = document.querySelector('#inside-plot .js-plotly-plot');
        return f && f.layout && f.layout.xaxis2.domain[0] > 0.3; }""", timeout=WAIT_MS)   # two by two again
