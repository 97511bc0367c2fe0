"""Presenter mode on a 1920×1080 projector, after a 3-sentence paragraph: every tab's main figure starts in
the top 600 px; the colours-and-report panel opens over the page (the tabs do not move) and closes at a click
elsewhere, like a menu."""
from __future__ import annotations

from harness.browser import WAIT_MS, open_link, plots_in, settle

PARAGRAPH = ("The cat is sleeping on the sofa. My brother bought a new car yesterday. We will go to the "
             "beach tomorrow.")
MAIN_FIGURE = {"Step by step": "#topk-plot", "Attention explorer": "#explorer-plot",
               "Head summary": "#summary-plot", "Positional encoding": "#pe-heatmap",
               "Inside one head": "#inside-plot", "Why this word": "#lines-html",
               "Your French & beams": "#forced-plot", "How it learned": "#replay-plot"}
FOLD_PX = 600


def tab_bar_y(page) -> float:
    return page.locator("[role=tablist]").first.bounding_box()["y"]


def test_presenter_mode_keeps_every_main_figure_in_the_top_of_the_screen(browser, app_url):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(page, app_url, text=PARAGRAPH)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.locator("#presenter input").check()
    settle(page)
    # the paragraph's picker is on screen too
    assert page.locator("#sentence-picker").is_visible()
    tops = {}
    for name, sel in MAIN_FIGURE.items():
        page.get_by_role("tab", name=name).first.click()
        page.locator(sel).wait_for(state="visible", timeout=WAIT_MS)
        settle(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        tops[name] = page.locator(sel).bounding_box()["y"]
    assert all(y < FOLD_PX for y in tops.values()), tops

    page.get_by_role("tab", name="Step by step").first.click()
    before = tab_bar_y(page)
    page.locator("#display > .label-wrap").click()
    page.locator("#report-btn").wait_for(state="visible", timeout=WAIT_MS)
    assert abs(tab_bar_y(page) - before) < 1                          # opened over the page
    scale = page.locator("#display input[role=combobox]")
    scale.click()
    page.locator("[role=option]:visible", has_text="Cividis").first.click()   # choosing in it keeps it open
    settle(page)
    assert scale.input_value() == "Cividis" and page.locator("#report-btn").is_visible()
    page.mouse.click(900, 30)                                         # a click elsewhere closes it
    page.locator("#report-btn").wait_for(state="hidden", timeout=WAIT_MS)
    page.close()



def test_presenter_mode_shows_a_classics_line_and_the_notes_whole(browser, app_url):
    """The line on a classic and the notes are prose and wrap in presenter mode (the longest classic's line,
    at 1920 px; the piece rows wrap too: tests/test_browser_projector.py), what the data holds of it is left
    to the lecturer, and the step figure still starts in the top of the screen."""
    from transformer.examples import CLASSICS
    longest = max(CLASSICS, key=lambda c: len(c.source) + len(c.look))
    assert longest.in_data
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(page, app_url, text=longest.text)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    assert page.locator(".pieces .classic .in-data").is_visible()     # a learner reading alone sees it
    page.locator("#presenter input").check()
    page.wait_for_function("() => document.body.classList.contains('presenter')", timeout=WAIT_MS)
    settle(page)
    shown = page.evaluate("""() => [...document.querySelectorAll('.pieces .classic, .pieces .note')].map(e =>
        [e.className, e.scrollWidth - e.clientWidth, e.getBoundingClientRect().height])""")
    assert shown and shown[0][0] == "classic", shown
    assert all(over <= 1 for _, over, _ in shown), shown              # nothing cut off at the right
    # the classic's line wraps onto a second line
    assert shown[0][2] > 30, shown
    assert page.locator(".pieces .classic").inner_text().rstrip().endswith("Open that view.")
    assert not page.locator(".pieces .classic .in-data").is_visible()
    assert page.locator("#topk-plot").bounding_box()["y"] < FOLD_PX
    page.close()
