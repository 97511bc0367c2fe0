"""A copied link is the view: for every attention kind and every "Show" mode of the explorer (and a colour
scale), Copy link, open the link in a fresh page, and the same figure (title and data) is drawn. A paragraph
link shows the sentence picker; a new translation takes the old link away."""
from __future__ import annotations

import pytest

from harness.browser import WAIT_MS, open_link, plots_in, settle

FIG = """(id) => { const p = document.querySelector('#' + id + ' .js-plotly-plot');
  return p && p.data ? JSON.stringify([p._fullLayout.title.text, p.data.map((d) => d.z)]) : null; }"""


def figure_of(page, elem_id: str) -> str:
    plots_in(page, elem_id).wait_for(timeout=WAIT_MS)
    settle(page)
    return page.evaluate(FIG, elem_id)


def copied_link(page) -> str:
    page.click("#link-btn")
    page.wait_for_function("() => ((document.querySelector('#link-box textarea, #link-box input') || "
                           "{}).value || '').startsWith('http')", timeout=WAIT_MS)
    return page.locator("#link-box textarea, #link-box input").first.input_value()


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_copied_explorer_links_reproduce_the_view(browser, app_url, kind):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    for mode in ("head", "mean", "rollout"):
        open_link(page, app_url, text="The cat is sleeping on the sofa.", tab="explorer", kind=kind, layer=2,
                  head=3, mode=mode, scale="Cividis")
        want = figure_of(page, "explorer-plot")
        assert want and (("head 3" in want) == (mode == "head")), want[:200]
        link = copied_link(page)
        assert f"kind={kind}" in link and f"mode={mode}" in link and "scale=Cividis" in link, link
        fresh = browser.new_page(viewport={"width": 1280, "height": 800})
        fresh.goto(link)
        fresh.wait_for_selector("[role=tab][data-tab-id=explorer][aria-selected=true]", timeout=WAIT_MS)
        assert figure_of(fresh, "explorer-plot") == want, (kind, mode)
        fresh.close()
    page.close()


def test_a_paragraph_link_offers_its_sentences_and_a_new_translation_drops_the_old_link(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(page, app_url, text="The cat is sleeping. The dog is playing in the garden.")
    page.wait_for_selector("#sentence-picker", state="visible", timeout=WAIT_MS)
    copied_link(page)
    page.locator("#src-text textarea").fill("Where is the station?")
    page.click("#translate-btn")
    page.wait_for_selector("#link-box", state="hidden", timeout=WAIT_MS)
    page.close()


def test_a_compare_link_opens_its_design_choice(browser, app_url):
    """choice= opens that design choice's run, Copy link says it, and a link from before the English → French
    companions went (variant=no-scaling) opens the same choice's toy run."""
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(page, app_url, text="The cat is sleeping on the sofa.", tab="compare", choice="heads")
    page.wait_for_selector("#toy-status:has-text('Several heads or one')", timeout=WAIT_MS)
    maps = figure_of(page, "toy-maps")
    assert "choice=heads" in copied_link(page)
    old = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(old, app_url, text="The cat is sleeping on the sofa.", tab="compare", variant="no-scaling")
    old.wait_for_selector("#toy-status:has-text('Scaling the scores')", timeout=WAIT_MS)
    assert figure_of(old, "toy-maps") != maps
    old.close()
    page.close()
