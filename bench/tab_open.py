"""How long a tab takes to show its view, clicked on a page that has translated, in real Chromium:
``python3 bench/tab_open.py [--tabs compare explorer] [--sentences 4] [--url URL]``.

Starts the app (or uses URL), and for each sentence opens a page on it (a ?text= link), waits until the page
has settled (harness.browser.settle: no request in flight, no queued event pending), clicks the tab and times,
in the page's own clock, from the click to the tab's view drawn: its figure present and the page settled again
(the settling's quiet window of 0.3 s is subtracted). Each sentence is a fresh page and a fresh trace, so no
figure comes from the shared draw cache. Prints one line per tab (p50, p95, max) and the JSON of every time.
"""
from __future__ import annotations

import argparse
import time

from toolkit import emit, spread  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)

from harness.app import start_app, stop_app  # noqa: E402
from harness.browser import CHROMIUM, FLAGS, QUIET_MS, IdleBrowser, open_link, settle  # noqa: E402

SENTENCES = ["The cat is sleeping on the sofa.", "Where is the nearest train station?",
             "We will meet tomorrow morning in front of the museum.",
             "The attention mechanism allows the model to focus on the relevant words.",
             "She has been learning to play the piano for three years.",
             "My brother bought a new bicycle last week."]
# what shows that a tab's view is drawn
DRAWN = {"compare": "#toy-maps .js-plotly-plot", "explorer": "#explorer-plot .js-plotly-plot",
         "summary": "#summary-plot .js-plotly-plot", "inside": "#inside-plot .js-plotly-plot",
         "positional": "#pe-heatmap .js-plotly-plot", "learned": "#replay-plot .js-plotly-plot"}


def time_tab(browser, url: str, sentence: str, tab: str) -> float:
    page = browser.new_page(viewport={"width": 1280, "height": 800})
    try:
        open_link(page, url, text=sentence)
        page.locator("#cross-step-plot .js-plotly-plot").wait_for(timeout=90_000)
        settle(page)
        t0 = page.evaluate("() => performance.now()")
        page.locator(f"[role=tab][data-tab-id='{tab}']").click()
        page.locator(DRAWN[tab]).first.wait_for(timeout=90_000)
        settle(page)
        return (page.evaluate("() => performance.now()") - t0 - QUIET_MS) / 1000
    finally:
        page.close()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tabs", nargs="+", default=["compare", "explorer"], choices=sorted(DRAWN))
    ap.add_argument("--sentences", type=int, default=4, help=f"how many (at most {len(SENTENCES)})")
    ap.add_argument("--url", help="a running app (default: start one here)")
    ap.add_argument("--json", help="also save the times to this file")
    args = ap.parse_args(argv)
    from playwright.sync_api import sync_playwright
    proc, url = (None, args.url) if args.url else start_app()
    times: dict[str, list[float]] = {t: [] for t in args.tabs}
    try:
        with sync_playwright() as pw:
            browser = IdleBrowser(pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS))
            for sentence in SENTENCES[:args.sentences]:
                for tab in args.tabs:           # interleaved: the machine's noise hits every tab alike
                    times[tab].append(time_tab(browser, url, sentence, tab))
            browser.close()
    finally:
        if proc is not None:
            stop_app(proc)
    for tab, xs in times.items():
        print(f"{tab:10s} click -> view drawn: {spread(xs)} ({len(xs)} sentences)", flush=True)
    emit({"seconds": {t: [round(x, 3) for x in xs] for t, xs in times.items()},
          "when": time.strftime("%F %T")},
         args.json)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
