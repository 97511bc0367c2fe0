"""A real browser (Debian's chromium via playwright) uses the app as a person would.

Takes the same steps as tools/screenshots.py (which writes the README's screenshots to assets/
on request) and saves its own screenshots to a temporary folder. Skipped only where chromium is
absent and CI is not set; under CI a missing browser is a failure.
"""
from __future__ import annotations

import time

import pytest

from harness.browser import VIEWPORT, open_other_views, settle, translate_and_step


def test_translate_step_and_explore_in_a_browser(browser, app_url, tmp_path):
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    assert "chat" in translate_and_step(page, app_url).lower()
    page.screenshot(path=str(tmp_path / "steps.png"), full_page=False)
    # Plotly's own toolbar offers a PNG download of every figure
    page.hover("#topk-plot .js-plotly-plot")
    assert page.locator("#topk-plot .modebar-btn[data-title*='png' i]").count() == 1
    open_other_views(page)
    assert page.locator("#grid-plot .js-plotly-plot .heatmaplayer, #grid-plot .js-plotly-plot "
                        "image").count() > 0
    page.screenshot(path=str(tmp_path / "views.png"), full_page=False)
    assert (tmp_path / "steps.png").stat().st_size > 10_000 and \
        (tmp_path / "views.png").stat().st_size > 10_000
    # the standalone HTML report
    page.get_by_text("Colours & report").click()
    page.click("#report-btn")
    page.wait_for_selector("#report-file a", timeout=60_000)
    href = page.locator("#report-file a").first.get_attribute("href")
    assert href and "transformer-trace-the-cat-is-sleeping" in href   # named after the sentence
    full = href if href.startswith("http") else app_url.rstrip("/") + "/" + href.lstrip("/")
    report = page.request.get(full).text()
    assert report.startswith("<!DOCTYPE html>") and "Plotly" in report and "Le chat" in report
    assert not errors, errors
    page.close()
    # opened offline: the contents and the first figures at once, the rest drawn as they scroll into view
    offline = browser.new_page(viewport={"width": 1280, "height": 800})
    offline.route("**/*", lambda route: route.abort())                 # nothing from the network
    offline.set_content(report, wait_until="load")
    offline.wait_for_selector(".fig .main-svg", timeout=10_000)
    total = offline.locator(".fig").count()
    assert offline.locator("nav.toc a[href='#cross']").count() == 1
    assert 0 < offline.locator(".fig[data-drawn]").count() < total / 2
    offline.locator("nav.toc a[href='#positional']").click()
    offline.wait_for_function(f"() => document.getElementById('fig-{total - 1}').dataset.drawn",
                              timeout=10_000)
    offline.close()


def test_markup_in_input_is_not_interpreted(browser, app_url):
    page = browser.new_page()
    page.goto(app_url)
    box = page.locator("#src-text textarea")
    box.wait_for(timeout=90_000)
    box.fill('<img src=x onerror="window.__pwned=1"> <b>bold</b> hello')
    page.click("#translate-btn")
    page.wait_for_selector("#pieces .piece", timeout=60_000)
    settle(page)
    assert page.evaluate("() => window.__pwned === undefined")
    assert page.locator("#pieces b:has-text('bold')").count() == 0
    page.close()


# ------------------------------------------------------------------ the page as a lecture uses it
FONT = "(sel) => parseFloat(getComputedStyle(document.querySelector(sel)).fontSize)"
FIG_FONT = "(id) => document.querySelector('#' + id + ' .js-plotly-plot')._fullLayout.font.size"


def step_shown(page) -> int:
    return int(page.locator("#step-slider input[type=number]").input_value())


def test_the_page_opens_with_an_example_translated(browser, app_url):
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    from harness.browser import open_link
    assert open_link(page, app_url).strip()
    assert page.locator("#src-text textarea").input_value().strip()
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=60_000)
    plots_in = page.locator("#topk-plot .js-plotly-plot")
    plots_in.wait_for(timeout=60_000)
    # the step figures begin on the first screen of a 1280x800 laptop
    assert page.locator("#topk-plot").bounding_box()["y"] < 800
    page.close()


def test_arrows_step_after_enter_and_only_where_stepping_is_shown(browser, app_url):
    from harness.browser import open_link
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    first = open_link(page, app_url, text="The cat is sleeping on the sofa.")
    box = page.locator("#src-text textarea")
    box.fill("Two children are playing football in the park.")
    box.press("Enter")
    page.wait_for_function("(old) => document.querySelector('#fr-text textarea').value !== old", arg=first,
                           timeout=60_000)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=60_000)
    assert page.evaluate("() => !document.activeElement.closest('#src-text')")   # Enter left the box
    page.keyboard.press("ArrowRight")
    page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=10_000)
    page.keyboard.press("ArrowLeft")
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=10_000)
    box.click()                                   # typing: the arrows move the text cursor only
    page.keyboard.press("ArrowRight")
    page.get_by_role("tab", name="Attention explorer").click()
    page.locator("body").click(position={"x": 5, "y": 5})
    page.keyboard.press("ArrowRight")             # the step is not on screen: nothing happens
    time.sleep(1.0)
    assert step_shown(page) == 1
    page.close()


def test_a_text_link_opens_its_sentence_and_view(browser, app_url):
    gradio_client = pytest.importorskip("gradio_client")
    from harness.browser import open_link
    text = "Where is the nearest train station?"
    expected, *_ = gradio_client.Client(app_url, verbose=False).predict(text, api_name="/translate")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    fr = open_link(page, app_url, text=text, tab="explorer", kind="cross", layer=2, head=3)
    assert fr == expected and page.locator("#src-text textarea").input_value() == text
    page.wait_for_selector("[role=tab][data-tab-id=explorer][aria-selected=true]")
    page.locator("#explorer-plot .js-plotly-plot").wait_for(timeout=60_000)
    settle(page)          # every redraw the link's controls start has landed: the last must be right
    title = page.evaluate("() => document.querySelector('#explorer-plot "
                          ".js-plotly-plot')._fullLayout.title.text")
    assert "Cross" in title and "layer 2" in title and "head 3" in title, title
    # the button gives the link of what is on screen, and that link opens the same view
    page.click("#link-btn")
    link_box = page.locator("#link-box textarea, #link-box input").first
    link_box.wait_for(timeout=10_000)
    page.wait_for_function("() => (document.querySelector('#link-box textarea, #link-box input') || {}).value"
                           " && document.querySelector('#link-box textarea, #link-box "
                           "input').value.startsWith('http')")
    link = link_box.input_value()
    assert "tab=explorer" in link and "kind=cross" in link and "layer=2" in link and "head=3" in link
    page.goto(link)
    page.wait_for_selector("[role=tab][data-tab-id=explorer][aria-selected=true]", timeout=60_000)
    page.wait_for_function("(t) => document.querySelector('#src-text textarea').value === t", arg=text)
    page.close()


def test_bad_link_values_fall_back_with_a_note(browser, app_url):
    from harness.browser import open_link
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    first = open_link(page, app_url, tab="nope", step="abc", kind="self", layer=99, head="x")
    assert first.strip()
    page.wait_for_selector("[role=tab][data-tab-id=steps][aria-selected=true]")
    # the notes under the pieces, as a translation's own notes, not in toasts that stack over the French
    page.wait_for_selector("#pieces .note:has-text('tab=nope')", timeout=10_000)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=60_000)
    assert page.locator("#pieces .note:has-text('kind=self')").count() == 1
    assert page.locator(".toast-body").count() == 0 and not errors
    box = page.locator("#src-text textarea")                  # the next Translate takes them away
    box.fill("Where is the station?")
    box.press("Enter")
    page.wait_for_function("(old) => document.querySelector('#fr-text textarea').value !== old", arg=first,
                           timeout=60_000)
    page.wait_for_function("() => !document.querySelector('#pieces').textContent.includes('tab=nope')",
                           timeout=10_000)
    assert page.locator("#pieces .note").count() == 0 and page.locator(".toast-body").count() == 0
    page.close()


def test_notes_are_under_the_pieces_and_go_with_their_sentence(browser, app_url):
    """Every doubt note is shown once, under the pieces (no toast over the French that stacks and outlives its
    sentence), and each Translate replaces them: a sentence without notes shows none."""
    from harness.browser import open_link
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    first = open_link(page, app_url, text="HELLO MY FRIEND, HOW ARE YOU?")
    page.wait_for_selector("#pieces .note:has-text('mostly in capitals')", timeout=60_000)
    n_notes = page.locator("#pieces .note").count()
    box = page.locator("#src-text textarea")
    for text, note in (("Je suis très content de te voir.", "looks like French"),
                       ("The cat is sleeping on the sofa.", None)):
        box.fill(text)
        box.press("Enter")
        page.wait_for_function("(old) => document.querySelector('#fr-text textarea').value !== old",
                               arg=first, timeout=60_000)
        first = page.locator("#fr-text textarea").input_value()
        page.wait_for_function("() => !document.querySelector('#pieces').textContent.includes('capitals')",
                               timeout=10_000)
        if note:
            page.wait_for_selector(f"#pieces .note:has-text('{note}')", timeout=10_000)
        else:
            assert page.locator("#pieces .note").count() == 0
    assert n_notes >= 1 and page.locator(".toast-body").count() == 0
    page.close()


def test_a_quote_is_drawn_as_a_quote_in_every_figure(browser, app_url):
    """A piece holding '"' reads '"' in the top-10 chart, the step figures' ticks and hovers, and the beam
    tree (Plotly does not decode &quot;); markup stays text."""
    from harness.browser import WAIT_MS, open_link, open_tab, plots_in
    svg_text = ("""(sel) => [...document.querySelectorAll(sel + ' .js-plotly-plot text')].map((t) => """
                """t.textContent)""")
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    open_link(page, app_url, text='He said "hello" to me.', step=6)        # "Il m'a dit ▁"": its step
    plots_in(page, "topk-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#step-info:has-text('Step 6 of')", timeout=WAIT_MS)
    page.wait_for_function("() => document.querySelectorAll('#cross-step-plot .xtick text').length > 0",
                           timeout=WAIT_MS)
    settle(page)                                                            # the link's redraws landed
    topk, cross = page.evaluate(svg_text, "#topk-plot"), page.evaluate(svg_text, "#cross-step-plot")
    ticks = page.evaluate("() => [...document.querySelectorAll('#topk-plot .ytick text')].map((t) => "
                          "t.textContent)")
    assert ticks[0] == '▁"' and '3 ▁"' in cross and '6 "' in cross, (ticks, cross)
    bar = page.locator("#topk-plot .bars .point").first.bounding_box()          # the hover too
    page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2, steps=4)
    page.wait_for_selector("#topk-plot .hoverlayer .hovertext", timeout=10_000)
    hovers = [page.evaluate("() => document.querySelector('#topk-plot .hoverlayer .hovertext').textContent")]
    assert hovers[0].startswith('▁"'), hovers
    open_tab(page, "Your French & beams")
    page.click("#beam-btn")
    page.wait_for_selector("#beam-plot .scatterlayer .textpoint", timeout=WAIT_MS)
    tree = page.evaluate(svg_text, "#beam-plot")
    assert any('"' in t for t in tree) and "<s>" in tree, tree
    for shown in (topk, cross, tree, hovers):
        assert not any(t and ("&quot;" in t or "&#" in t or "&lt;" in t) for t in shown), shown
    page.close()


def test_presenter_mode_enlarges_the_whole_page(browser, app_url):
    from harness.browser import open_link
    page = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(page, app_url)
    page.locator("#topk-plot .js-plotly-plot").wait_for(timeout=60_000)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=60_000)   # the step view is drawn
    parts = {"title": "#title-line h1", "tab": "[role=tab]", "button": "#translate-btn",
             "step button": "#next-step", "French": "#fr-text textarea", "English": "#src-text textarea",
             "label": "#step-slider [data-testid=block-info]", "pieces": ".piece", "step info": ".stepinfo"}
    before = {k: page.evaluate(FONT, s) for k, s in parts.items()}
    fig_before = page.evaluate(FIG_FONT, "topk-plot")
    page.locator("#presenter input").check()
    page.wait_for_function("(f) => document.querySelector('#topk-plot "
                           ".js-plotly-plot')._fullLayout.font.size > f",
                           arg=fig_before, timeout=30_000)       # the figures are redrawn in large type too
    # the buttons' CSS transitions ended
    page.wait_for_function("() => !document.getAnimations().some((a) => a.playState === 'running' && "
                           "isFinite(a.effect.getComputedTiming().endTime))", timeout=60_000)
    after = {k: page.evaluate(FONT, s) for k, s in parts.items()}
    small = {k: (before[k], after[k]) for k in parts if after[k] < 1.3 * before[k] or after[k] < 18}
    assert not small, small
    page.close()


def test_the_screenshot_script_names_every_tab():
    from ui.tabs import TAB_IDS
    from harness.browser import TABS
    assert TABS == TAB_IDS

def test_why_this_word_views_in_a_browser(browser, app_url, tmp_path):
    """The KV-cache panel, the lines (hover isolates a piece's lines), the attribution (button) and the
    vectors each open and draw; a Code panel shows the project's own source."""
    from harness.browser import open_why_views
    page = browser.new_page(viewport=VIEWPORT)
    errors = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    translate_and_step(page, app_url)
    shots = []
    open_why_views(page,
                   lambda name: (page.screenshot(path=str(tmp_path / f"why-{name}.png")), shots.append(name)))
    assert shots == ["kv-cache", "lines", "attribution", "vectors", "code"]
    assert "saved" in page.locator("#kv-cache").inner_text()
    from harness.browser import open_tab
    open_tab(page, "Lines")
    page.locator("#lines-html svg text.tq").nth(1).hover()
    lines = page.locator("#lines-html svg line")
    shown = page.evaluate("() => [...document.querySelectorAll('#lines-html svg line')]"
                          ".filter(l => getComputedStyle(l).display !== 'none').length")
    assert 0 < shown < lines.count()          # hovering one query piece leaves only its lines
    assert "Integrated Gradients" in page.locator("#attr-gap").inner_text()
    assert "q · k" in page.locator("#vectors-text").inner_text()
    assert not errors, errors
    page.close()


def test_play_shows_the_step_the_slider_shows_and_stops_at_the_end(browser, app_url):
    """Play moves the slider and draws that step in one event (the browser clicks Next at the chosen speed):
    at every moment the slider, the step line and the figures' titles name the same step; it stops at the last
    step and gives the button back; Play at the end starts again from step 1. (Its speed is measured by hand,
    not here: tests never race the clock.)"""
    from harness.browser import WAIT_MS, open_link
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(page, app_url, text="We will meet tomorrow morning in front of the museum.")
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=60_000)
    settle(page)                                               # the link's redraws landed before Play
    n = int(page.locator("#step-info").inner_text().split(" of ")[1].split()[0])
    page.locator("#play-speed input").click()
    page.locator("[role=option]:visible", has_text="0.5 s").first.click()
    page.click("#play-step")
    page.wait_for_selector("#play-step:has-text('Pause')", timeout=WAIT_MS)
    seen = set()
    while "Pause" in page.locator("#play-step").inner_text():
        shown = page.evaluate("""() => [
            document.querySelector('#step-slider input[type=number]').value,
            (document.querySelector('#step-info').innerText.match(/Step (\\d+) of/) || [])[1],
            (document.querySelector('#topk-plot .js-plotly-plot')._fullLayout.title.text
               .match(/step (\\d+)/) || [])[1]]""")
        assert shown[0] == shown[1] == shown[2], shown        # slider, step line and figure agree
        seen.add(int(shown[0]))
        time.sleep(0.1)
    page.wait_for_selector(f"#step-info:has-text('Step {n} of {n}')", timeout=WAIT_MS)   # stopped at the end
    assert len(seen) >= n // 2 and max(seen) <= n, (seen, n)
    time.sleep(1.5)                                            # no click after the end
    assert page.locator("#play-step").inner_text().strip() == "▶ Play" and step_shown(page) == n
    # at the end: from step 1 again, at 3 s a step (the pause below lands before the end). The steps shown are
    # recorded in the page: a busy test process could miss a step line that the page showed for a moment.
    page.locator("#play-speed input").click()
    page.locator("[role=option]:visible", has_text="3 s").first.click()
    page.evaluate("""() => { window.__steps = [];
        const line = document.querySelector('#step-info'), read = () => {
          const m = line.innerText.match(/Step (\\d+) of/), s = window.__steps;
          if (m && s[s.length - 1] !== +m[1]) s.push(+m[1]); };
        new MutationObserver(read).observe(line, {subtree: true, childList: true, characterData: true}); }""")
    page.click("#play-step")
    try:
        page.wait_for_function("() => /(^|,)1,2(,|$)/.test(window.__steps.join(','))", timeout=WAIT_MS)
    except Exception as e:   # noqa: BLE001  playwright's timeout: say what the page showed
        raise AssertionError(f"Play at the end: steps shown {page.evaluate('() => window.__steps')}, "
                             f"button {page.locator('#play-step').inner_text()!r}") from e
    page.click("#play-step")                                   # pause
    page.wait_for_selector("#play-step:has-text('Play')", timeout=WAIT_MS)
    settle(page)                                               # a Next sent just before the pause landed
    paused = step_shown(page)
    time.sleep(1.5)
    assert step_shown(page) == paused                          # paused: it stays
    page.close()


def test_a_tab_opened_while_a_translate_waits_shows_the_new_sentence(browser, app_url):
    """Open another tab right after pressing Translate (a long sentence: the answer comes after the tab's own
    draw): the Translate empties that tab, and the page, seeing another tab on screen than the one the
    Translate drew, redraws it from the new sentence (ui/demo.py, MOVED_JS): the same figure a link
    to it draws."""
    from harness.browser import WAIT_MS, open_link, plots_in
    fig = """() => { const p = document.querySelector('#explorer-plot .js-plotly-plot');
      return p && p.data
        ? JSON.stringify([p._fullLayout.title.text, p.data.map((d) => [d.x, d.y, d.z])]) : null; }"""
    long = ("The old fisherman who lived in the small white house near the harbour walked to the market "
            "every morning to sell the fish he had caught during the long cold night on the quiet sea.")
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    first = open_link(page, app_url, text="Where is the station?")
    page.locator("#src-text textarea").fill(long)
    page.evaluate("() => { document.querySelector('#translate-btn').click();"     # the tab, the same instant
                  " document.querySelector('#tabs [role=\"tab\"][data-tab-id=\"explorer\"]').click(); }")
    page.wait_for_function("(old) => document.querySelector('#fr-text textarea').value !== old", arg=first,
                           timeout=WAIT_MS)
    plots_in(page, "explorer-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_function(f"() => ({fig})() && ({fig})().includes('▁walked')", timeout=WAIT_MS)
    settle(page)                                               # and nothing redraws it after
    shown = page.evaluate(fig)
    ref = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(ref, app_url, text=long, tab="explorer")
    plots_in(ref, "explorer-plot").wait_for(timeout=WAIT_MS)
    settle(ref)
    assert shown == ref.evaluate(fig)
    ref.close()
    page.close()
