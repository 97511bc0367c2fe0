"""Write the README's screenshots and one of every view into assets/:
``python3 tools/screenshots.py [--out assets]``.

Starts app.py on 127.0.0.1 and drives Debian's Chromium through playwright (never a downloaded browser),
with the browser tests' own steps (harness/). Writes ``screenshot.png`` (step by step, step 3) and
``screenshot-explorer.png`` for the README, then every tab at the three sizes a lecture meets:
1920x1080 in presenter mode (the projector), 1280x800 (a laptop) and 390x844 (a phone, whole
page), each in the light and the dark look, as ``views/<size>-<look>[-presenter]-<tab>.png``; and a lecture:
the presenter's projector with a live session (its room panel open, then folded) and the follower's page on a
laptop and a phone, light and dark, on the step view and the explorer, then a question to the room (asked,
then revealed), as ``views/lecture-*.png``.
Run by hand only: the browser test (tests/test_browser.py) takes the same steps and writes its
screenshots to a temporary folder, so running the tests never changes the tracked images.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness.app import start_app, stop_app  # noqa: E402
from harness.browser import (CHROMIUM, FLAGS, SENTENCE, SETTLE_S, TABS, VIEWPORT, IdleBrowser,  # noqa: E402
                             follower_drawn, open_link, open_other_views, run_knockout, set_look, show_tab,
                             translate_and_step)
SIZES = [(1920, 1080, True), (1280, 800, False), (390, 844, False)]     # width, height, presenter mode
LONG_SENTENCE = ("When the students arrived at the lecture hall this morning, the professor had already "
                 "written the equations of the attention mechanism on the board.")


def every_view(browser, url: str, out: Path, tabs=TABS) -> list[Path]:
    """Each tab at each size and look; the phone shots hold the whole page, the others the first screen."""
    written = []
    for width, height, presenter in SIZES:
        for dark in (False, True):
            page = browser.new_page(viewport={"width": width, "height": height})
            open_link(page, url, text=SENTENCE, step=3)
            set_look(page, dark, presenter)
            for tab in tabs:
                show_tab(page, tab)
                if tab == "knockout":
                    run_knockout(page)                    # its views drawn, not their "press …" notes
                name = (f"{width}x{height}-{'dark' if dark else 'light'}{'-presenter' if presenter else ''}-"
                        f"{tab}.png")
                page.screenshot(path=str(out / name), full_page=width < 600)
                written.append(out / name)
            page.close()
    return written


def lecture_views(browser, url: str, out: Path) -> list[Path]:
    """A live lecture: the presenter (1920x1080, presenter mode) starts a session, and followers open its
    link."""
    written = []
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, url, text=LONG_SENTENCE, step=3)
    set_look(presenter, False, True)
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-qr", state="visible")
    time.sleep(SETTLE_S)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    for name in ("open", "folded"):
        if name == "folded":
            presenter.locator("#live-panel .live-fold").click()
            time.sleep(SETTLE_S)
        presenter.screenshot(path=str(out / f"lecture-presenter-{name}.png"))
        written.append(out / f"lecture-presenter-{name}.png")
    pages = []
    for width, height in ((1280, 800), (390, 844)):
        for dark in (False, True):
            phone = width < 600
            ctx = browser.new_context(viewport={"width": width, "height": height}, is_mobile=phone,
                                      has_touch=phone, color_scheme="dark" if dark else "light")
            page = ctx.new_page()
            page.goto(url + f"?follow={code}")
            pages.append((f"{width}x{height}-{'dark' if dark else 'light'}", page))
    for tab in ("steps", "explorer"):
        if tab != "steps":
            show_tab(presenter, tab)
        for name, page in pages:
            page.wait_for_selector(f"#view-title:has-text('"
                                   f"{'Step by step' if tab == 'steps' else 'Attention'}')",
                                   timeout=60_000)
            follower_drawn(page, 30_000)
            time.sleep(0.5)
            path = out / f"lecture-follower-{name}-{tab}.png"
            if name.startswith("390"):
                scroll_through(page)
            page.screenshot(path=str(path), full_page=name.startswith("390"))
            written.append(path)
    written += vote_views(presenter, pages, out)
    for _, page in pages:
        page.context.close()
    presenter.close()
    return written


def scroll_through(page) -> None:
    """A follower's page scrolled past each of its figures and back to the top: it draws a figure below the
    fold when a student scrolls to it, and a full-page shot shows them all."""
    for box in page.locator("#parts .part.plot").all():
        box.scroll_into_view_if_needed()
        page.wait_for_function("(e) => e.classList.contains('js-plotly-plot')", arg=box.element_handle(),
                               timeout=30_000)
    page.evaluate("() => window.scrollTo(0, 0)")
    time.sleep(0.3)


def vote_views(presenter, pages: list, out: Path) -> list[Path]:
    """The room answers: the presenter asks which English piece step 3 looks at most, each follower taps one,
    the projector counts (the view blurred), then Reveal: ``lecture-vote-*.png``."""
    written = []
    show_tab(presenter, "steps")
    presenter.locator("#vote-toggle").click()
    presenter.locator("#vote-ask").click()
    for i, (_, page) in enumerate(pages):
        page.wait_for_selector("#vote[data-status=open]", timeout=60_000)
        page.locator("#vote .vote-opt").nth((2, 3, 3, 5)[i % 4]).click()
        page.wait_for_selector("#vote .vote-said.ok")
    presenter.wait_for_selector(f"#vote-status .vote-status[data-answers='{len(pages)}']", timeout=60_000)
    time.sleep(SETTLE_S)

    def shoot(name: str, status: str) -> None:
        presenter.screenshot(path=str(out / f"lecture-vote-presenter-{name}.png"))
        written.append(out / f"lecture-vote-presenter-{name}.png")
        for look, page in pages:
            page.wait_for_selector(f"#vote[data-status={status}]", timeout=60_000)
            time.sleep(0.3)
            path = out / f"lecture-vote-follower-{look}-{name}.png"
            if look.startswith("390"):
                scroll_through(page)
            page.screenshot(path=str(path), full_page=look.startswith("390"))
            written.append(path)
    shoot("open", "open")
    presenter.locator("#vote-reveal").click()
    presenter.wait_for_selector("#vote-status .vote-status[data-status=revealed]", timeout=60_000)
    time.sleep(SETTLE_S)
    shoot("revealed", "revealed")
    presenter.locator("#vote-done").click()
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", default=str(ROOT / "assets"), help="folder for the PNG files (default: assets/)")
    p.add_argument("--readme-only", action="store_true", help="only the README's two screenshots")
    p.add_argument("--tabs", nargs="+", choices=TABS, default=TABS,
                   help="only these tabs' views (default: all)")
    p.add_argument("--lecture-only", action="store_true",
                   help="only the lecture's shots (presenter and followers)")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright

    out = Path(args.out)
    (out / "views").mkdir(parents=True, exist_ok=True)
    proc, url = start_app()
    try:
        with sync_playwright() as pw:
            browser = IdleBrowser(pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS))
            lecture = [] if args.readme_only else lecture_views(browser, url, out / "views")
            if args.lecture_only:
                browser.close()
                print(f"wrote {len(lecture)} lecture views in {out / 'views'}")
                return 0
            page = browser.new_page(viewport=VIEWPORT)
            translate_and_step(page, url)
            page.evaluate("() => document.activeElement && document.activeElement.blur()")   # no focus ring
            page.screenshot(path=str(out / "screenshot.png"), full_page=False)
            open_other_views(page)
            show_tab(page, "explorer")
            page.screenshot(path=str(out / "screenshot-explorer.png"), full_page=False)
            page.close()
            views = [] if args.readme_only else every_view(browser, url, out / "views", args.tabs)
            browser.close()
    finally:
        stop_app(proc)
    print(f"wrote {out / 'screenshot.png'}, {out / 'screenshot-explorer.png'} and {len(views)} views in "
          f"{out / 'views'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
