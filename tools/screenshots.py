"""Write the README's screenshots and one of every view into assets/: ``python3 tools/screenshots.py [--out assets]``.

Starts app.py on 127.0.0.1 (bench/apprunner.py) and drives Debian's Chromium through playwright
(never a downloaded browser). Writes ``screenshot.png`` (step by step, step 3) and
``screenshot-explorer.png`` for the README, then every tab at the three sizes a lecture meets:
1920x1080 in presenter mode (the projector), 1280x800 (a laptop) and 390x844 (a phone, whole
page), each in the light and the dark look, as ``views/<size>-<look>[-presenter]-<tab>.png``.
Run by hand only: the browser test (tests/test_browser.py) takes the same steps and writes its
screenshots to a temporary folder, so running the tests never changes the tracked images.
"""
from __future__ import annotations

import argparse
import re
import shutil
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic",
         "--no-first-run", "--disable-component-update", "--disable-sync"]
VIEWPORT = {"width": 1440, "height": 1650}
SENTENCE = "The cat is sleeping on the sofa."
WAIT_MS = 90_000
TABS = ["steps", "explorer", "summary", "positional", "inside", "why", "steer", "learned", "about"]   # ui.tabs.TAB_IDS, without importing gradio
SIZES = [(1920, 1080, True), (1280, 800, False), (390, 844, False)]     # width, height, presenter mode
SETTLE_S = 1.2   # for the figures to finish drawing after a tab or look change


def plots_in(page, elem_id):
    return page.locator(f"#{elem_id} .js-plotly-plot")


def french(page) -> str:
    return page.locator("#fr-text textarea").input_value()


def open_link(page, url: str, **query) -> str:
    """Open the app on a link (``text=``, ``tab=``, ...) and wait for its translation; returns the French."""
    page.goto(url + ("?" + urlencode(query) if query else ""))
    page.wait_for_function("() => { const t = document.querySelector('#fr-text textarea'); return t && t.value; }",
                           timeout=WAIT_MS)
    return french(page)


def translate_and_step(page, url: str, sentence: str = SENTENCE) -> str:
    """Open the app on `sentence` (a ?text= link), wait for the step view, then go to step 3 with the Next
    button and the → key. Returns the French."""
    open_link(page, url, text=sentence)
    plots_in(page, "topk-plot").wait_for(timeout=WAIT_MS)
    plots_in(page, "cross-step-plot").wait_for(timeout=WAIT_MS)
    page.wait_for_selector("#step-info:has-text('Step 1 of')", timeout=WAIT_MS)
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


def set_look(page, dark: bool, presenter: bool) -> None:
    """The Dark look and presenter mode, as a lecturer sets them (each redraws every figure)."""
    if dark:
        page.locator("#look label:has-text('Dark')").click()
        page.wait_for_function("() => document.body.classList.contains('dark')", timeout=WAIT_MS)
    if presenter:
        page.locator("#presenter input").check()
        page.wait_for_function("() => document.body.classList.contains('presenter')", timeout=WAIT_MS)
    time.sleep(SETTLE_S)


def show_tab(page, tab: str) -> None:
    page.locator(f"[role=tab][data-tab-id='{tab}']").click()
    page.wait_for_selector(f"[role=tab][data-tab-id='{tab}'][aria-selected=true]", timeout=WAIT_MS)
    drawn = {"about": None, "why": "#lines-html svg", "steer": "#forced-text"}.get(
        tab, "[role=tabpanel]:visible .js-plotly-plot")          # what shows that the tab is drawn
    if drawn:
        page.locator(drawn).first.wait_for(state="attached", timeout=WAIT_MS)
    time.sleep(SETTLE_S)


def every_view(browser, url: str, out: Path) -> list[Path]:
    """Each tab at each size and look; the phone shots hold the whole page, the others the first screen."""
    written = []
    for width, height, presenter in SIZES:
        for dark in (False, True):
            page = browser.new_page(viewport={"width": width, "height": height})
            open_link(page, url, text=SENTENCE, step=3)
            set_look(page, dark, presenter)
            for tab in TABS:
                show_tab(page, tab)
                name = f"{width}x{height}-{'dark' if dark else 'light'}{'-presenter' if presenter else ''}-{tab}.png"
                page.screenshot(path=str(out / name), full_page=width < 600)
                written.append(out / name)
            page.close()
    return written

def open_tab(page, name: str) -> None:
    """Click a tab by its name; on a narrow screen Gradio folds tabs into a "More tabs" menu."""
    tab = page.get_by_role("tab", name=name, exact=True)
    if tab.count() and tab.first.is_visible():
        tab.first.click()
        return
    item = page.locator(".overflow-dropdown button").filter(has_text=re.compile(f"^\\s*{re.escape(name)}\\s*$"))
    menu = page.locator(".overflow-menu").filter(has=item)
    menu.locator("button[aria-label='More tabs']").first.click()
    menu.locator(".overflow-dropdown button").filter(has_text=re.compile(f"^\\s*{re.escape(name)}\\s*$")).first.click()


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
    page.wait_for_selector("#lines-html svg line", state="attached", timeout=WAIT_MS)   # a level line has no height
    shots("lines", "#lines-caption", "#lines-html svg text.tq.q1")     # hovering a piece isolates its lines
    open_tab(page, "Attribution")
    page.click("#attr-btn")
    page.wait_for_selector("#attr-gap:has-text('gap')", timeout=WAIT_MS)
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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(ROOT / "assets"), help="folder for the PNG files (default: assets/)")
    p.add_argument("--readme-only", action="store_true", help="only the README's two screenshots")
    args = p.parse_args(argv)
    sys.path.insert(0, str(ROOT))
    from playwright.sync_api import sync_playwright

    from bench.apprunner import start_app, stop_app
    out = Path(args.out)
    (out / "views").mkdir(parents=True, exist_ok=True)
    proc, url = start_app()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport=VIEWPORT)
            translate_and_step(page, url)
            page.evaluate("() => document.activeElement && document.activeElement.blur()")   # no focus ring
            page.screenshot(path=str(out / "screenshot.png"), full_page=False)
            open_other_views(page)
            show_tab(page, "explorer")
            page.screenshot(path=str(out / "screenshot-explorer.png"), full_page=False)
            page.close()
            views = [] if args.readme_only else every_view(browser, url, out / "views")
            browser.close()
    finally:
        stop_app(proc)
    print(f"wrote {out / 'screenshot.png'}, {out / 'screenshot-explorer.png'} and {len(views)} views in {out / 'views'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
