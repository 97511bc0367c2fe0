"""A student's phone (390×844, touch) in Chromium: every figure fits its column, Inside one head stacks its
four panels (all on screen), the Lines view shows every key, Previous/Next stay on screen beside the step
figures and the controls are 44 px touch targets; a phone turned to landscape redraws the figures for the
wider screen. With a 30-piece sentence, no map's labels overprint one another (a tap on a cell names its
pieces whole), nor the head summary's cell texts, and every control on every tab is at least 40
px both ways."""
from __future__ import annotations

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from harness.browser import TABS, WAIT_MS, open_link, plots_in, settle, show_tab
from transformer.viz.narrow import NARROW_LABEL_CHARS

PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True,
         "device_scale_factor": 2}
SENTENCE = "The little girl gave her brother a red ball in the garden yesterday."   # 16 source pieces or so
TOUCH_MIN_PX = 43.5
# 29 source pieces
LONG = ("When the students arrived at the lecture hall this morning, the professor had already written the "
        "equations of the attention mechanism on the board.")


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
            if (r.width > b.width + 1 || r.right > W + 1)
              out.push([(box.id || box.className).slice(0, 40), r.width, b.width]);
        }
        return out; }""")


def open_tab(page, name: str, plot: str | None = None) -> None:
    page.get_by_role("tab", name=name).first.click()
    if plot:
        plots_in(page, plot).first.wait_for(timeout=WAIT_MS)
    settle(page)


def phone_on(browser, app_url, sentence: str):
    """A phone's page on `sentence`, its step view drawn; returns (context, page)."""
    context = browser.new_context(**PHONE)
    page = context.new_page()
    open_link(page, app_url, text=sentence)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    return context, page


@pytest.fixture
def phone(browser, app_url):
    context, page = phone_on(browser, app_url, SENTENCE)
    settle(page)
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
        assert box["y"] + box["height"] <= 844 + 1 and box["y"] >= 844 - 60 and \
            box["height"] >= TOUCH_MIN_PX, b
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
        const sub = c === 1 ? 'xy' : `x${c}y${c}`;
        const e = document.querySelector(`#inside-plot .nsewdrag[data-subplot=${sub}]`);
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


# --- a long sentence on a phone: labels that never overprint, whole pieces on a tap, 40 px targets ----------

TAP_MIN_PX = 40
# (tab, figure, what a tap on it should name): the maps of every view that draws one (the all-heads grid's
# small multiples have no labels, only the L/H names around them), and How it learned's, drawn for
# a training sentence
MAPS = [("steps", "cross-step-plot", "source"), ("steps", "cross-steps-plot", "source"),
        ("explorer", "explorer-plot", "key"), ("explorer", "grid-plot", None),
        ("summary", "summary-plot", "entropy"), ("inside", "inside-plot", "key"),
        ("learned", "replay-plot", "key"), ("compare", "toy-maps", "reading")]

# Every label of a figure (ticks, axis titles, the title, the colour bar's, the cell texts) with its
# box on screen.
LABELS = """(id) => {
    const gd = document.querySelector(`#${id} .js-plotly-plot`);
    const kind = (t) => t.closest('.xtick') ? 'x' : t.closest('.ytick') ? 'y' : t.closest('.colorbar') ? 'bar'
        : t.closest('.annotation') ? 'cell' : 'title';
    return [...gd.querySelectorAll('.xtick text, .ytick text, .g-xtitle text, .g-ytitle text, .gtitle, '
                                   + '.colorbar text, .annotation-text')]
        .filter(t => t.checkVisibility() && t.textContent.trim())
        .map(t => { const r = t.getBoundingClientRect();
                    return [kind(t), t.textContent, r.left, r.top, r.right, r.bottom]; })
        .filter(b => b[4] > b[2]); }"""


def overprinted(labels: list) -> list:
    """The pairs of labels whose boxes overlap (by more than half a pixel each way)."""
    return [(a[:2], b[:2]) for i, a in enumerate(labels) for b in labels[i + 1:]
            if a[2] < b[4] - 0.5 and b[2] < a[4] - 0.5 and a[3] < b[5] - 0.5 and b[3] < a[5] - 0.5]


def tap_tab(page, tab: str) -> None:
    """Open a tab with a tap, as on a phone (a mouse click would leave Plotly expecting a mouse)."""
    page.locator(f"[role=tab][data-tab-id='{tab}']").tap()
    page.wait_for_selector(f"[role=tab][data-tab-id='{tab}'][aria-selected=true]", timeout=WAIT_MS)
    settle(page)


def drawn_for_phone(page, fig: str) -> None:
    """Wait until the figure is drawn for the phone (for_narrow has run on it) from the long sentence."""
    page.wait_for_function("""(id) => { const gd = document.querySelector(`#${id} .js-plotly-plot`);
        return gd && gd.layout && gd.layout.dragmode === false && gd.data.length > 0
               && (id === 'grid-plot' || id === 'summary-plot' || id === 'replay-plot' || id === 'toy-maps'
                   || (gd.data[0].x || []).length >= 25); }""", arg=fig, timeout=WAIT_MS)
    settle(page)


def tap_a_cell(page, fig: str) -> str:
    """Tap the first row's cell under the longest piece (the one its label shortens most) in the figure's
    first panel (in a bar chart, the middle of the tallest bar), and give back the hover label
    the tap shows."""
    point = """(id) => {
        const gd = document.querySelector(`#${id} .js-plotly-plot`), fl = gd._fullLayout, tr = gd.data[0];
        const xa = fl.xaxis, ya = fl.yaxis, xs = tr.x || [], bar = tr.type === 'bar';
        const ys = bar ? Array.from(gd._fullData[0].y || tr.y) : [];
        let c = 0;
        xs.forEach((v, i) => { if (bar ? ys[i] > ys[c] : String(v).length > String(xs[c]).length) c = i; });
        const r = gd.getBoundingClientRect();
        const x = r.left + xa._offset + xa.l2p(c);
        const y = r.top + ya._offset + (bar ? ya.c2p(ys[c] / 2) : ya.l2p(0));
        return [x, y + window.scrollY]; }"""
    hover = page.locator(f"#{fig} .hoverlayer .hovertext").first
    for _ in range(3):                                  # (a figure still being redrawn drops the hover)
        x, y = page.evaluate(point, fig)
        page.evaluate("(y) => window.scrollTo(0, y - 300)", y)
        page.wait_for_timeout(500)
        x, y = page.evaluate(point, fig)
        page.touchscreen.tap(x, y - page.evaluate("() => window.scrollY"))
        try:
            hover.wait_for(timeout=3000)
            return hover.text_content()
        except PlaywrightTimeout:
            continue
    raise AssertionError(f"a tap on {fig} shows no hover label")


@pytest.fixture
def long_phone(browser, app_url):
    context, page = phone_on(browser, app_url, LONG)
    page.wait_for_function("() => document.querySelector('#narrow-screen input').checked", timeout=WAIT_MS)
    yield page
    context.close()


def test_no_map_labels_overprint_on_a_phone_and_a_tap_names_the_pieces(long_phone):
    """Every map of a 29-piece sentence at 390 px: no tick label, axis title or colour-bar number overprints
    another (labels are shortened, thinned to every k-th and turned upright), enough of them are left to read
    the axes, and a tap on a cell shows the hover label with both pieces whole (its axis label is
    cut with "…")."""
    page, shown = long_phone, None
    src = page.evaluate("() => [...document.querySelector('.pieces').querySelectorAll('.piece.src')]"
                        ".map(e => e.textContent.replace(/\\d+$/, ''))")
    assert len(src) >= 28, src                                          # the sentence is as long as meant
    longest = max(src, key=len)
    for tab, fig, names in MAPS:
        if tab != shown:
            tap_tab(page, tab)
            shown = tab
        drawn_for_phone(page, fig)
        labels = page.evaluate(LABELS, fig)
        assert overprinted(labels) == [], (fig, overprinted(labels)[:5])
        xs, ys = ([b[1] for b in labels if b[0] == k] for k in "xy")
        if fig == "grid-plot":
            continue
        assert len(xs) >= (6 if fig == "summary-plot" else 5) and len(ys) >= 5, (fig, xs, ys)
        if fig == "toy-maps":        # the maps stacked, the colour bar across the top: every digit named (the
            # top map's axis: LABELS reads .xtick, the lower map's are .x2tick, the same digits)
            n = page.evaluate("() => document.querySelector('#toy-maps .js-plotly-plot').data[0].x.length")
            assert len(xs) == n, (xs, n)
        assert all(len(t) <= NARROW_LABEL_CHARS for t in xs + ys), (fig, xs, ys)
        hover = tap_a_cell(page, fig)
        assert names in hover, (fig, hover)
        if fig in ("explorer-plot", "cross-steps-plot", "inside-plot"):
            assert longest in hover and not any(longest in t for t in xs), (fig, longest, hover)


def test_the_head_summary_cells_never_overprint_on_a_phone(long_phone):
    """Head summary at 390 px: a column a layer, a row a head; every cell's text (rank, label, share) inside
    its cell, none over another; the whole label and the strongest pattern in the hover a tap shows."""
    page = long_phone
    tap_tab(page, "summary")
    drawn_for_phone(page, "summary-plot")
    labels = page.evaluate(LABELS, "summary-plot")
    cells = [b for b in labels if b[0] == "cell"]
    assert len(cells) == 6 * 8 and overprinted(labels) == [], overprinted(labels)[:5]
    width = page.evaluate("""() => { const gd = document.querySelector('#summary-plot .js-plotly-plot');
        return gd._fullLayout.xaxis._length / gd._fullLayout.xaxis._categories.length; }""")
    assert all(b[4] - b[2] <= width - 2 for b in cells), width            # inside its column, with the gap
    hover = tap_a_cell(page, "summary-plot")
    assert "layer 1, head 1" in hover and "strongest pattern" in hover and "most distinctive" in hover, hover


TAP_TARGETS = ("button, [role=button], input[type=number], input[type=range], "
               "label[data-testid$=-radio-label], label:has(>input[type=checkbox]), input[role=combobox], "
               "details>summary")


def small_targets(page) -> list:
    """Every control on screen smaller than TAP_MIN_PX either way: [(what, width, height)]."""
    return page.evaluate("""([sel, m]) => [...document.querySelectorAll(sel)]
        .filter(e => e.checkVisibility() && !e.closest('.offscreen'))
        .map(e => { const r = e.getBoundingClientRect();
                    const name = e.id || e.getAttribute('aria-label') || e.textContent;
                    return [name.trim().slice(0, 40), r.width, r.height]; })
        .filter(([, w, h]) => w > 0 && (w < m || h < m))""", [TAP_TARGETS, TAP_MIN_PX])


def test_every_control_on_every_tab_is_a_40px_target_on_a_phone(long_phone):
    """Buttons (a slider's reset too, a multiselect chip's ×), number boxes, sliders, radio and checkbox
    labels, dropdown fields and collapsible summaries: at least 40 px wide and tall, on every tab, with the
    header's panels and each tab's accordions open (not the one that times three computations when opened)."""
    page = long_phone
    for header in page.locator("#extras .label-wrap").all():
        header.click()
    settle(page)
    small = {"header": small_targets(page)}
    for tab in TABS:
        show_tab(page, tab)
        for acc in page.locator("[role=tabpanel]:visible .label-wrap").all():
            if acc.is_visible() and "Three ways" not in acc.text_content():
                acc.click()
        settle(page)
        small[tab] = small_targets(page)
    assert not any(small.values()), {k: v for k, v in small.items() if v}
