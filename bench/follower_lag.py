"""Where a follower's lag goes, read from the followers' own pages (issue 43).

    python3 bench/follower_lag.py http://127.0.0.1:7860/ [FOLLOWERS] [--rounds 2]

The same lecture as ../shared/tools/lecture_rehearsal.py (a presenter at 1920x1080 in presenter mode starts a
live session on a long sentence; FOLLOWERS light follower pages, laptops 1280x800 and phones 390x844 in turn;
three Next clicks, the Attention explorer tab, back to Step by step), but each follower's times come from its
own page's log (``window.followLog``: when the view arrived, when its step line and sentence were on screen,
when each figure and the last one were drawn), against the presenter's click on the same clock. The rehearsal
polls every page in turn from outside, and a page busy drawing answers only when it is done, so its figures
include the other pages' drawing; these do not. Prints, for "received", "text shown" and "figures drawn": p50,
p95 and max over every follower and change, and the slowest figure. Needs the app already started, playwright
and Debian's chromium.
"""
from __future__ import annotations

import argparse
import re
import statistics
import time

from playwright.sync_api import sync_playwright

from toolkit import percentile

ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"]
LONG = ("When the students arrived at the lecture hall this morning, the professor had already written "
        "the equations of the attention mechanism on the board.")
WINDOW_MS = 4000          # a change's events: those logged within this long after its click


def presenter(browser, url: str):
    """A presenter at 1920x1080 in presenter mode with a live session on LONG: (their page, the room's
    code)."""
    pres = browser.new_page(viewport={"width": 1920, "height": 1080})
    pres.goto(url + "?text=" + LONG.replace(" ", "%20"), wait_until="load")
    pres.wait_for_function("() => [...document.querySelectorAll('textarea')]"
                           ".some(t => /[éèàç]|le |la |les /i.test(t.value))", timeout=90_000)
    pres.get_by_label(re.compile("presenter", re.I)).first.check()
    pres.wait_for_timeout(1500)
    pres.get_by_role("button", name=re.compile(r"start live", re.I)).first.click()
    pres.wait_for_timeout(2500)
    links = pres.inner_text("body") + " ".join(pres.eval_on_selector_all("a", "els => els.map(e => e.href)"))
    return pres, re.search(r"follow=([A-Z0-9]{4,12})", links).group(1)


def lecture(browser, url: str, followers: int):
    pres, code = presenter(browser, url)
    phone = browser.new_context(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True,
                                has_touch=True)
    laptop = browser.new_context(viewport={"width": 1280, "height": 800})
    pages = []
    for i in range(followers):
        page = (phone if i % 2 else laptop).new_page()
        page.goto(url + "?follow=" + code, wait_until="commit")
        pages.append(page)
    for page in pages:
        page.wait_for_function("() => document.body.dataset.drawn", timeout=60_000)
    time.sleep(2)
    clicks = []
    nxt = pres.get_by_role("button", name=re.compile(r"^\s*Next", re.I)).first
    for _ in range(3):
        clicks.append(time.time() * 1000)
        nxt.click()
        time.sleep(WINDOW_MS / 1000)
    for name in ("Attention explorer", "Step by step"):
        clicks.append(time.time() * 1000)
        pres.get_by_role("tab", name=re.compile(name, re.I)).first.click()
        time.sleep(WINDOW_MS / 1000)
    logs = [page.evaluate("() => window.followLog.map(([w, v, t]) => [w, v, performance.timeOrigin + t])")
            for page in pages]
    for ctx in (phone, laptop):
        ctx.close()
    pres.close()
    return clicks, logs


def stages(clicks, logs):
    """Per follower and change: ms from the click to received / text / drawn, and the figures' drawing
    times."""
    out = {"received": [], "text shown": [], "figures drawn": []}
    figures = []
    for log in logs:
        for t0 in clicks:
            events = [(what, t - t0) for what, _v, t in log if t0 - 50 <= t < t0 + WINDOW_MS]
            for stage, name in (("received", "received"), ("text shown", "text"), ("figures drawn", "drawn")):
                times = [dt for what, dt in events if what == name]
                out[stage].append((times[-1] if stage == "figures drawn" else times[0]) if times else None)
            figures += [(int(what.split()[-2]), what.split()[1]) for what, _ in events
                        if what.startswith("plot ")]
    return out, figures


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("followers", type=int, nargs="?", default=4)
    p.add_argument("--rounds", type=int, default=1, help="lectures, one after another (figures pooled)")
    args = p.parse_args()
    url = args.url.rstrip("/") + "/"
    pooled, figures = {"received": [], "text shown": [], "figures drawn": []}, []
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        for _ in range(args.rounds):
            clicks, logs = lecture(browser, url, args.followers)
            out, figs = stages(clicks, logs)
            for stage, values in out.items():
                pooled[stage] += values
            figures += figs
        browser.close()
    for stage, values in pooled.items():
        seen = sorted(v for v in values if v is not None)
        missing = len(values) - len(seen)
        p95 = percentile(seen, 0.95)
        print(f"{stage:14s} n={len(values):3d}  p50 {statistics.median(seen) / 1000:.2f} s  p95 "
              f"{p95 / 1000:.2f} s  max {seen[-1] / 1000:.2f} s"
              + (f"  ({missing} not within {WINDOW_MS / 1000:.0f} s)" if missing else ""))
    if figures:
        ms, name = max(figures)
        print(f"slowest figure: {name} {ms} ms (median figure {statistics.median(m for m, _ in figures):.0f} "
              f"ms)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
