"""Students opening the follow link in real Chromium (issue 43): how long until each page shows the
presenter's view.

    python3 bench/follow_open.py http://127.0.0.1:7860/ [--students 100] [--within 30]

A presenter at 1920x1080 in presenter mode starts a live session on a long sentence (as
bench/follower_lag.py); then STUDENTS light follower pages open the follow link, arriving evenly over WITHIN
seconds, in four kinds in turn: laptop 1280x800 and phone 390x844 (touch), each light and dark. Every page
stays open, listening. Each page's own log (``window.followLog``, ms since its navigation started) gives, per
student: when the view's step line, sentence and title were on screen ("view shown") and when the figures on
its first screen were drawn ("figures drawn"). Prints how long the arrivals took (each waits for its page's
answer to start), p50 / p95 / max of both, and the pages that had not shown them 60 s after the last arrival.

All the pages, the presenter's and the app share this machine's cores, which a class's own devices would not:
the figures are an upper bound of what the server and the page cost. The presenter holds still while the
students arrive (as at a lecture's start); bench/follow_load.py --open measures the same arrivals over HTTP
while the presenter changes views. Needs the app already started, playwright and Debian's chromium.
"""
from __future__ import annotations

import argparse
import statistics
import time

from playwright.sync_api import sync_playwright

from follower_lag import ARGS, presenter
from toolkit import percentile

KINDS = [dict(viewport={"width": 1280, "height": 800}, color_scheme="light"),
         dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
              color_scheme="light"),
         dict(viewport={"width": 1280, "height": 800}, color_scheme="dark"),
         dict(viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True,
              color_scheme="dark")]
FIRST = "(what) => { const e = (window.followLog || []).find(([w]) => w === what); return e ? e[2] : null; }"


def arrivals(browser, url: str, code: str, students: int, within: float) -> tuple[list, float]:
    """The students' pages, opened evenly over `within` seconds (each awaited until its page's answer starts:
    a slow answer delays the arrivals after it), and the seconds the arrivals took."""
    pages, t0 = [], time.time()
    for i in range(students):
        time.sleep(max(0.0, t0 + i * within / students - time.time()))
        # a context (a browser profile) each, as each student has their own browser: one profile keeps at most
        # 6 connections to a host, and every page holds one open for the room's stream
        page = browser.new_context(**KINDS[i % len(KINDS)]).new_page()
        page.goto(url + "?follow=" + code, wait_until="commit")
        pages.append(page)
    return pages, time.time() - t0


def shown(pages: list, limit_s: float = 60) -> tuple[list, list]:
    """Per page, ms from its navigation to the view on screen and to its first screen's figures drawn (None:
    not within limit_s of the last arrival, or the page crashed)."""
    end = time.time() + limit_s
    views, drawn = [], []
    for page in pages:
        try:
            page.wait_for_function("() => document.body.dataset.drawn",
                                   timeout=max(1, end - time.time()) * 1000)
        except Exception:  # noqa: BLE001 - a page that never drew: counted as missing below
            pass
        try:
            views.append(page.evaluate(FIRST, "text"))
            drawn.append(page.evaluate(FIRST, "drawn"))
        except Exception:  # noqa: BLE001 - a crashed page: missing
            views.append(None)
            drawn.append(None)
    return views, drawn


def report(name: str, values: list) -> None:
    seen = sorted(v for v in values if v is not None)
    missing = len(values) - len(seen)
    if not seen:
        print(f"{name:14s} none of {len(values)}")
        return
    print(f"{name:14s} n={len(values):3d}  p50 {statistics.median(seen) / 1000:.2f} s  p95 "
          f"{percentile(seen, 0.95) / 1000:.2f} s  max {seen[-1] / 1000:.2f} s"
          + (f"  ({missing} not within 60 s of the last arrival)" if missing else ""))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("--students", type=int, default=100)
    p.add_argument("--within", type=float, default=30.0, help="seconds over which the students arrive")
    args = p.parse_args()
    url = args.url.rstrip("/") + "/"
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=ARGS)
        _pres, code = presenter(browser, url)
        pages, took = arrivals(browser, url, code, args.students, args.within)
        views, drawn = shown(pages)
        browser.close()
    print(f"{args.students} students opening the follow link within {args.within:.0f} s (the arrivals took "
          f"{took:.1f} s), on the presenter's view (from each page's navigation):")
    report("view shown", views)
    report("figures drawn", drawn)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
