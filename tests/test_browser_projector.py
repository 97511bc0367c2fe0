"""Presenter mode on a 1920×1080 projector, as Chromium draws it, with a long sentence: the sentence and its
French whole, the piece rows wrapped (nothing cut at the right), every figure's text at 28 px or more in every
tab (hover labels aside), each tab's first figure in the top 600 px, at most two panels side by side, and one
figure full screen at a button's press (Escape brings it back). tests/test_presenter_figures.py checks the
figures' JSON."""
from __future__ import annotations

from harness.browser import WAIT_MS, attribution_done, open_link, plots_in, settle

LONG = ("When the students arrived at the lecture hall this morning, the professor had already written the "
        "equations of the attention mechanism on the board.")
LEAST_PX, FOLD_PX = 28, 600

# Every figure's text in the tab on screen (and its sub-tab): the size drawn, in screen pixels, of the
# smallest. A text's size is its computed font size times the scale its SVG is drawn at (a figure wider than
# its box, a drawing scaled to its box, a bar's value shrunk by Plotly); hover labels and Plotly's toolbar are
# left out.
SMALLEST_TEXT = """() => {
  const out = [];
  const panels = [...document.querySelectorAll('[role=tabpanel]')].filter(p => p.offsetParent);
  const figures = new Set(panels.flatMap(p => [...p.querySelectorAll('.js-plotly-plot, .lines-view svg')])
                                .filter(f => f.offsetParent || f.getBoundingClientRect().width));
  for (const fig of figures) {
    let least = Infinity, which = '';
    for (const t of fig.querySelectorAll('text')) {
      if (t.closest('.hoverlayer, .modebar') || !t.textContent.trim()) continue;
      const style = getComputedStyle(t), box = t.getBoundingClientRect();
      if (style.display === 'none' || style.visibility === 'hidden' || !box.width) continue;
      const m = t.getScreenCTM(), scale = m ? Math.hypot(m.a, m.b) : 1;
      const px = parseFloat(style.fontSize) * scale;
      if (px < least) { least = px; which = t.textContent.slice(0, 30); }
    }
    const host = fig.closest('[id]');
    const whole = fig.closest('.lines-view') || fig;       // the lines view: its title is its own
    out.push({id: host ? host.id : '?', px: Math.round(least * 10) / 10, text: which,
              top: Math.round(whole.getBoundingClientRect().top + window.scrollY)});
  }
  return out;
}"""


def presenter_page(browser, app_url, text=LONG):
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(page, app_url, text=text)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.locator("#presenter input").check()
    page.wait_for_function("() => document.body.classList.contains('presenter')", timeout=WAIT_MS)
    settle(page)
    return page


def test_presenter_mode_shows_the_sentence_its_french_and_their_pieces_whole(browser, app_url):
    page = presenter_page(browser, app_url)
    for box in ("#src-text textarea", "#fr-text textarea"):
        fits = page.locator(box).evaluate("""(t) => { const lh = parseFloat(getComputedStyle(t).lineHeight);
            return [t.scrollHeight, t.clientHeight, t.clientHeight / lh]; }""")
        # nothing to scroll to: all of it shown
        assert fits[0] <= fits[1] + 4, (box, fits)
        assert fits[2] >= 2, (box, fits)                                  # wrapped onto lines of its own
    assert page.locator("#fr-text textarea").input_value().endswith("tableau.")
    rows = page.evaluate("""() => [...document.querySelectorAll('#pieces .pieces > div')].map(d => {
        const chips = [...d.querySelectorAll('.piece')], box = d.getBoundingClientRect();
        return {cls: d.className, over: d.scrollWidth - d.clientWidth, lines: new Set(chips.map(c =>
                  Math.round(c.getBoundingClientRect().top))).size,
                outside: chips.filter(c => c.getBoundingClientRect().right > box.right + 1).length}; })""")
    pieces = [r for r in rows if r["lines"]]
    # the source's and the French pieces
    assert len(pieces) >= 2, rows
    # no sideways scroll, no chip cut off
    assert all(r["over"] <= 1 and r["outside"] == 0 for r in rows), rows
    assert any(r["lines"] >= 2 for r in pieces), rows                      # the long sentence's pieces wrap
    assert page.locator("#topk-plot").bounding_box()["y"] < FOLD_PX
    page.close()


def test_presenter_mode_writes_every_figures_text_at_28_px_in_every_tab(browser, app_url):
    """At 1920×1080 with a long sentence: every figure of every tab (the Why tab's four views, Inside one
    layer, your French scored and a beam search run, the design choices' shipped runs) measured as drawn."""
    page = presenter_page(browser, app_url)
    seen, tops = {}, {}

    def measure(view: str) -> None:
        settle(page)
        for fig in page.evaluate(SMALLEST_TEXT):
            seen[f"{view}: {fig['id']}"] = (fig["px"], fig["text"])

    for tab in ("Step by step", "Attention explorer", "Head summary", "Positional encoding",
                "Inside one head", "Why this word", "How it learned", "Compare", "Your French & beams"):
        page.get_by_role("tab", name=tab).first.click()
        page.locator("[role=tabpanel]:visible .js-plotly-plot, [role=tabpanel]:visible .lines-view "
                     "svg").first.wait_for(
            state="visible", timeout=WAIT_MS)
        settle(page)
        page.evaluate("() => window.scrollTo(0, 0)")
        tops[tab] = page.evaluate(SMALLEST_TEXT)[0]["top"]
        if tab == "Inside one head":
            page.get_by_text("Inside one layer: residual stream").click()
            plots_in(page, "layer-plot").wait_for(timeout=WAIT_MS)
        if tab == "Why this word":
            measure("Lines")
            page.get_by_role("tab", name="Attribution").click()
            page.locator("label:has-text('Gradient × input') input").first.check()
            page.click("#attr-btn")
            attribution_done(page)
            page.click("#contrast-btn")
            page.wait_for_selector("#contrast-caption:has-text('step')", timeout=WAIT_MS)
            plots_in(page, "contrast-plot").wait_for(timeout=WAIT_MS)
            measure("Attribution")
            for sub, plot in (("Layer by layer", "lens-plot"), ("Vectors", "input-plot")):
                page.get_by_role("tab", name=sub).click()
                plots_in(page, plot).wait_for(timeout=WAIT_MS)
                measure(sub)
            continue
        if tab == "Your French & beams":
            page.click("#forced-copy")
            settle(page)
            page.click("#forced-btn")
            page.wait_for_selector("#forced-summary", timeout=WAIT_MS)
            page.click("#beam-btn")
            page.wait_for_selector("#beam-info", timeout=WAIT_MS)
        measure(tab)
    small = {view: size for view, size in seen.items() if size[0] < LEAST_PX}
    assert not small, small
    for must in ("Step by step: cross-steps-plot", "Attention explorer: grid-plot",
                 "Head summary: summary-plot", "Inside one head: layer-plot", "Lines: ",
                 "Attribution: contrast-plot", "Layer by layer: lens-plot", "Vectors: input-plot",
                 "How it learned: replay-loss", "Compare: toy-loss", "Your French & beams: beam-plot"):
        assert any(view.startswith(must) for view in seen), (must, sorted(seen))
    assert all(top < FOLD_PX for top in tops.values()), " ".join(f"{k}={v}" for k, v in tops.items())
    page.close()


# The plot areas of a figure (Plotly's drag rectangles, one a subplot), as drawn.
PANELS = """(id) => [...document.querySelectorAll('#' + id + ' .draglayer .nsewdrag')].map(r => {
    const b = r.getBoundingClientRect(); return [Math.round(b.left), Math.round(b.top), Math.round(b.width),
                                                 Math.round(b.height)]; })"""


def side_by_side(panels) -> int:
    return max(sum(1 for _, t, _, h in panels if t < top + height and top < t + h)
               for _, top, _, height in panels)


def test_inside_one_head_puts_at_most_two_panels_side_by_side(browser, app_url):
    page = presenter_page(browser, app_url)
    page.get_by_role("tab", name="Inside one head").first.click()
    plots_in(page, "inside-plot").wait_for(timeout=WAIT_MS)
    page.get_by_text("Inside one layer: residual stream").click()
    plots_in(page, "layer-plot").wait_for(timeout=WAIT_MS)
    settle(page)
    for plot, count in (("inside-plot", 4), ("layer-plot", 3)):
        panels = page.evaluate(PANELS, plot)
        assert len(panels) == count, (plot, panels)
        assert side_by_side(panels) <= 2, (plot, panels)
        # each panel half the screen, not 190 px
        assert min(w for _, _, w, _ in panels) > 600, (plot, panels)
    page.close()


def test_a_figure_goes_full_screen_and_comes_back(browser, app_url):
    """The button in a figure's corner shows it alone on the whole screen, redrawn to fill it; the ← → keys
    still step the decoding (the figure stays full screen); Escape, or the button again, puts it back
    as it was."""
    page = presenter_page(browser, app_url)
    figure = "#cross-steps-plot"
    box = lambda: page.locator(f"{figure} .js-plotly-plot").bounding_box()       # noqa: E731
    drawn = lambda: page.locator(f"{figure} .js-plotly-plot .main-svg").first.bounding_box()   # noqa: E731
    before, drawn_before = box(), drawn()
    buttons = page.locator("[role=tabpanel]:visible .fig-full-btn")
    assert buttons.count() == page.locator("[role=tabpanel]:visible .js-plotly-plot").count() >= 3
    button = page.locator(f"{figure} .fig-full-btn")
    assert button.get_attribute("aria-label") == "Show this figure full screen"
    # its redraw comes a few frames after the button (full screen granted, then plotly's resize): waited for
    svg_height = f"document.querySelector('{figure} .main-svg').getBoundingClientRect().height"
    tall = f"() => {svg_height} >= 0.9 * innerHeight"
    for leave in ("Escape", "button"):
        button.click()
        page.wait_for_function(tall, timeout=WAIT_MS)
        settle(page)
        shown = drawn()
        assert shown["width"] >= 0.95 * 1920 and shown["height"] >= 0.9 * 1080, shown    # redrawn to fill it
        assert 0 <= shown["y"] < 40 and page.evaluate(
            "(s) => document.fullscreenElement === document.querySelector(s) || "
            "document.querySelector(s).classList.contains('fig-full-on')", figure)
        assert button.get_attribute("aria-pressed") == "true"
        if leave == "Escape":
            # the decoding steps on, full screen
            page.keyboard.press("ArrowRight")
            page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
            settle(page)
            assert drawn()["height"] >= 0.9 * 1080
            page.keyboard.press("Escape")
        else:
            button.click()
        page.wait_for_function(f"(h) => Math.abs({svg_height} - h) <= 2", arg=drawn_before["height"],
                               timeout=WAIT_MS)
        settle(page)
        after, drawn_after = box(), drawn()
        assert abs(after["width"] - before["width"]) <= 2 and \
            abs(drawn_after["height"] - drawn_before["height"]) <= 2, \
            (before, after, drawn_before, drawn_after)
        assert button.get_attribute("aria-pressed") == "false"
        assert not page.evaluate("() => !!document.fullscreenElement || "
                                 "!!document.querySelector('.fig-full-on')")
    page.close()
