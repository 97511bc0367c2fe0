"""Design choices trained live, in Chromium: the Compare tab opens on the shipped longer run of the first
choice (figures and paragraph at once); a choice's Train live shows the live run in place of the shipped one,
redraws the two models' curves and maps as they learn and ends with the paragraph's numbers read from the run;
a new sentence (which redraws the tab) leaves the live run on screen; a second page that presses Train
meanwhile waits its turn (one run per app) and is told its place."""
from __future__ import annotations

from harness.browser import WAIT_MS, open_link, plots_in, settle


def pick(page, text: str) -> None:
    page.locator("#toy-choice input").click()
    page.locator("ul[role=listbox] li").filter(has_text=text).first.click()


def test_a_design_choice_trains_live_beside_its_shipped_run(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(page, app_url, text="The cat is sleeping on the sofa.", tab="compare")
    page.wait_for_selector("#toy-status:has-text('shipped longer run')", timeout=WAIT_MS)
    for elem in ("toy-loss", "toy-effect", "toy-maps"):
        plots_in(page, elem).wait_for(timeout=WAIT_MS)
    maps = page.evaluate("() => document.querySelector('#toy-maps .js-plotly-plot')._fullData.map(t => "
                         "[t.zmin, t.zmax])")
    assert maps == [[0, 1], [0, 1]]                                    # one colour scale for both models
    shown = page.locator("#toy-text").inner_text()
    # the shipped longer run
    assert "**" not in shown and "This run." in shown and "After 2800 steps" in shown
    pick(page, "none at all")
    page.wait_for_selector("#toy-status:has-text('Positions or none at all')", timeout=WAIT_MS)
    other = browser.new_page(viewport={"width": 390, "height": 844})
    open_link(other, app_url, text="The cat is sleeping on the sofa.", tab="compare")
    page.locator("#toy-train").click()
    page.wait_for_selector("#toy-live-status:has-text('training')", timeout=WAIT_MS)
    assert page.locator("#toy-live").is_visible() and not page.locator("#toy-shipped").is_visible()
    # (the loss figure's first draw can come after the status: its plotly code is loaded then)
    page.wait_for_function("() => { const p = document.querySelector('#toy-live-loss .js-plotly-plot');"
                           " return p && p._fullData && p._fullData.length > 0; }", timeout=WAIT_MS)
    points = page.evaluate("() => document.querySelector('#toy-live-loss "
                           ".js-plotly-plot')._fullData[0].x.length")
    other.locator("#toy-train").click()                              # the second run waits for the first
    other.wait_for_selector("#toy-live-status :text-matches('queue', 'i')", timeout=WAIT_MS)
    page.wait_for_selector("#toy-live-status:has-text('done')", timeout=180_000)
    later = page.evaluate("() => document.querySelector('#toy-live-loss "
                          ".js-plotly-plot')._fullData[0].x.length")
    assert later > points                                            # redrawn as it learned
    said = page.locator("#toy-live-text").inner_text()
    assert "After 450 steps" in said and "no positions" in said
    before = page.locator("#fr-text textarea").input_value()
    page.locator("#src-text textarea").fill("Where is the station?")
    page.locator("#translate-btn").click()                           # the tab redraws: the live run stays
    page.wait_for_function(f"() => document.querySelector('#fr-text textarea').value !== {before!r}",
                           timeout=WAIT_MS)
    settle(page)
    assert page.locator("#toy-live").is_visible() and \
        "After 450 steps" in page.locator("#toy-live-text").inner_text()
    other.wait_for_selector("#toy-live-status:has-text('training')", timeout=180_000)   # its turn came
    other.close()
    page.close()
