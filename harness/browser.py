"""Driving the app in Debian's Chromium through playwright (never a downloaded browser): the steps the
browser tests take, shared with tools/screenshots.py and bench/record_browser.py, which import
them from here."""
from __future__ import annotations

import re
import shutil
import time
from urllib.parse import urlencode

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
         "--no-first-run", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1440, "height": 1650}
SENTENCE = "The cat is sleeping on the sofa."
WAIT_MS = 90_000
# ui.tabs.TAB_IDS, without importing gradio
TABS = ["steps", "explorer", "summary", "positional", "inside", "why", "knockout", "steer", "learned",
        "compare", "about"]
# a page without IDLE_JS (opened before it could be added): the figures' drawing time, guessed
SETTLE_S = 1.2
QUIET_MS = 300   # settled: this long with no request, no pending event and no change to the page

# Added to every page the tests open (tests/conftest.py: browser): counts the app's requests in flight and the
# queued events not yet completed (each /queue/join's event id, until its process_completed in the /queue/data
# stream; all of them when the stream breaks or reports an unexpected error), and the time of the last
# request, message or change to the page. `window.__idle(ms, since)`: nothing in flight and nothing changed
# for `ms`, counted from `since` at the earliest. Tests wait for it instead of sleeping a fixed time: a busy
# machine only makes them wait longer, never read a figure before its redraw has landed.
IDLE_JS = """(() => {
  if (window.__idle) return;
  const fetch0 = window.fetch.bind(window), pending = new Set(), early = new Set();
  let inflight = 0, last = performance.now();
  const touch = () => { last = performance.now(); };
  const completed = (id) => { if (!pending.delete(id)) early.add(id); };   // (before its join was read)
  async function watch(stream) {
    const reader = stream.getReader(), dec = new TextDecoder();
    let buf = '';
    try {
      for (;;) {
        const {value, done} = await reader.read();
        if (done) return;
        buf += dec.decode(value, {stream: true}).replace(/\\r/g, '');
        let i;
        while ((i = buf.indexOf('\\n\\n')) >= 0) {
          for (const line of buf.slice(0, i).split('\\n')) {
            if (!line.startsWith('data:')) continue;
            let m = null;
            try { m = JSON.parse(line.slice(5)); } catch (e) { continue; }
            if (m.msg === 'heartbeat') continue;
            if (m.msg === 'process_completed' && m.event_id) completed(m.event_id);
            if (m.msg === 'unexpected_error') pending.clear();   // no event id: none will complete
            touch();
          }
          buf = buf.slice(i + 2);
        }
      }
    } catch (e) { pending.clear(); touch(); }   // the stream broke: nothing more will complete on it
  }
  window.fetch = async function (input, init) {
    const url = String((input && input.url) || input);
    if (!url.includes('/gradio_api/')) return fetch0(input, init);
    inflight++; touch();
    try {
      const r = await fetch0(input, init);
      if (url.includes('/queue/data') && r.body) {
        const [mine, theirs] = r.body.tee();
        watch(mine).catch(() => {});   // the app closes or aborts its stream: nothing to say
        return new Response(theirs, {status: r.status, statusText: r.statusText, headers: r.headers});
      }
      if (url.includes('/queue/join')) {
        r.clone().json().then((j) => {
          if (j && j.event_id && !early.delete(j.event_id)) pending.add(j.event_id);
          touch();
        }).catch(() => {});
      }
      return r;
    } finally { inflight--; touch(); }
  };
  new MutationObserver(touch).observe(document, {subtree: true, childList: true, attributes: true,
                                                  characterData: true});
  window.__idle = (ms, since = 0) => inflight === 0 && pending.size === 0
                                     && performance.now() - Math.max(last, since) >= ms;
  window.__busy = () => `${inflight} requests in flight, ${pending.size} events pending, `
                        + `last change ${Math.round(performance.now() - last)} ms ago`;
})();"""


class IdleBrowser:
    """A playwright Browser whose every new page and context carries IDLE_JS (for :func:`settle`)."""

    def __init__(self, browser) -> None:
        self._browser = browser

    def __getattr__(self, name):
        return getattr(self._browser, name)

    def new_context(self, **kw):
        context = self._browser.new_context(**kw)
        context.add_init_script(IDLE_JS)
        return context

    def new_page(self, **kw):
        page = self._browser.new_page(**kw)
        page.add_init_script(IDLE_JS)
        return page


def settle(page, quiet_ms: int = QUIET_MS) -> None:
    """Until the page has settled (IDLE_JS): every request answered, every queued event completed, nothing on
    the page changed for `quiet_ms`. A page opened without IDLE_JS waits SETTLE_S instead."""
    if not page.evaluate("() => typeof window.__idle === 'function'"):
        time.sleep(SETTLE_S)
        return
    since = page.evaluate("() => performance.now()")    # an action just taken may start its request later
    try:
        page.wait_for_function("([ms, since]) => window.__idle(ms, since)", arg=[int(quiet_ms), since],
                               timeout=WAIT_MS, polling=100)
    except Exception as e:  # noqa: BLE001  playwright's timeout: say what the page was still doing
        raise AssertionError(f"the page did not settle: {page.evaluate('() => window.__busy()')}") from e


def follower_drawn(page, timeout: int = WAIT_MS) -> None:
    """Until a follower's page (ui/static/follow.js) has drawn the first screen of the view it shows last."""
    page.wait_for_function("() => document.body.dataset.drawn === document.body.dataset.version",
                           timeout=timeout)


def plots_in(page, elem_id):
    return page.locator(f"#{elem_id} .js-plotly-plot")


def french(page) -> str:
    return page.locator("#fr-text textarea").input_value()


def open_link(page, url: str, **query) -> str:
    """Open the app on a link (``text=``, ``tab=``, ...) and wait for its translation; returns the French."""
    page.goto(url + ("?" + urlencode(query) if query else ""))
    page.wait_for_function("() => { const t = document.querySelector('#fr-text textarea'); return t && "
                           "t.value; }",
                           timeout=WAIT_MS)
    return french(page)


def translate_and_step(page, url: str, sentence: str = SENTENCE) -> str:
    """Open the app on `sentence` (a ?text= link), wait for the step view, then go to step 3 with the Next
    button and the → key. Returns the French."""
    open_link(page, url, text=sentence)
    plots_in(page, "topk-plot").wait_for(timeout=WAIT_MS)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=WAIT_MS)
    settle(page)        # the link's own redraw of step 1 landed (it could land after Next's step 2)
    page.click("#next-step")
    page.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
    page.locator("body").press("ArrowRight")
    page.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)
    return french(page)


def open_other_views(page) -> None:
    """The attention explorer, the positional encoding and inside one head, each drawn; ends on the last."""
    page.get_by_role("tab", name="Attention explorer").click()
    plots_in(page, "explorer-plot").wait_for(timeout=WAIT_MS)
    plots_in(page, "grid-plot").wait_for(timeout=WAIT_MS)
    page.get_by_role("tab", name="Positional encoding").click()
    plots_in(page, "pe-heatmap").wait_for(timeout=WAIT_MS)
    page.get_by_role("tab", name="Inside one head").click()
    plots_in(page, "inside-plot").wait_for(timeout=WAIT_MS)


def run_knockout(page, parts: str = "cross L1, cross L2, cross L3") -> None:
    """On Knock it out: switch `parts` off and rank every head, each drawn (the tab open)."""
    page.locator("#ko-parts textarea, #ko-parts input").first.fill(parts)
    page.click("#ko-btn")
    page.wait_for_selector("#ko-result .knockout-result", timeout=WAIT_MS)
    page.click("#ko-rank-btn")
    page.wait_for_selector("#ko-rank-text:has-text('heads knocked out alone')", timeout=WAIT_MS)
    plots_in(page, "ko-rank-plot").wait_for(timeout=WAIT_MS)
    page.evaluate("() => window.scrollTo(0, 0)")
    settle(page)


def attribution_done(page) -> None:
    """Until the attribution's final result is drawn (a first estimate says "refining" while it is shown)."""
    page.wait_for_function("() => { const t = (document.querySelector('#attr-gap') || {}).innerText || '';"
                           " return /gap/.test(t) && !/refining/.test(t); }", timeout=WAIT_MS)


def set_look(page, dark: bool, presenter: bool) -> None:
    """The Dark look and presenter mode, as a lecturer sets them (each redraws every figure)."""
    if dark:
        page.locator("#look label:has-text('Dark')").click()
        page.wait_for_function("() => document.body.classList.contains('dark')", timeout=WAIT_MS)
    if presenter:
        page.locator("#presenter input").check()
        page.wait_for_function("() => document.body.classList.contains('presenter')", timeout=WAIT_MS)
    settle(page)


def show_tab(page, tab: str) -> None:
    page.locator(f"[role=tab][data-tab-id='{tab}']").click()
    page.wait_for_selector(f"[role=tab][data-tab-id='{tab}'][aria-selected=true]", timeout=WAIT_MS)
    drawn = {"about": None, "why": "#lines-html svg", "steer": "#forced-text"}.get(
        tab, "[role=tabpanel]:visible .js-plotly-plot")          # what shows that the tab is drawn
    if drawn:
        page.locator(drawn).first.wait_for(state="attached", timeout=WAIT_MS)
    settle(page)


def open_tab(page, name: str) -> None:
    """Click a tab by its name; on a narrow screen Gradio folds tabs into a "More tabs" menu."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    named = re.compile(f"^\\s*{re.escape(name)}\\s*$")
    item = page.locator(".overflow-dropdown button").filter(has_text=named)
    menu = page.locator(".overflow-menu").filter(has=item)
    menu.locator("button[aria-label='More tabs']").first.click()
    menu.locator(".overflow-dropdown button").filter(has_text=named).first.click()


def open_why_views(page, shots=None) -> None:
    """After a translation: the KV-cache panel of Step by step, then Why this word's lines, attribution
    (computed by its button) and vectors, each drawn; `shots(name)` is called after each view."""
    take = shots or (lambda name: None)

    def shots(name, top=None, hover=None):
        if top:
            page.locator(top).first.evaluate("(el) => el.scrollIntoView({block: 'start'})")
        if hover:
            page.locator(hover).first.hover()
        take(name)
    open_tab(page, "Step by step")
    page.get_by_text("KV cache at this step").click()
    page.wait_for_selector("#kv-cache .kv-view", timeout=WAIT_MS)
    shots("kv-cache", "#step-info")
    open_tab(page, "Why this word")
    # a level line has no height
    page.wait_for_selector("#lines-html svg line", state="attached", timeout=WAIT_MS)
    shots("lines", "#lines-caption", "#lines-html svg text.tq.q1")     # hovering a piece isolates its lines
    open_tab(page, "Attribution")
    page.click("#attr-btn")
    attribution_done(page)
    plots_in(page, "attr-ig").wait_for(timeout=WAIT_MS)
    plots_in(page, "attr-agree").wait_for(timeout=WAIT_MS)
    shots("attribution", "#attr-gap")
    open_tab(page, "Vectors")
    plots_in(page, "vectors-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#vectors-text:has-text('√')", timeout=WAIT_MS)
    shots("vectors", "#vectors-text")
    page.locator("#vectors-plot").locator("xpath=following::button[contains(., 'Code')][1]").click()
    page.wait_for_selector(".cm-content:has-text('def head_vectors')", timeout=WAIT_MS)
    shots("code", ".cm-content")
