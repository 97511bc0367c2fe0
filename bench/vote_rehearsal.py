"""A vote rehearsed in real browsers: how long after the presenter's click each follower's screen shows the
question, and the reveal.

``python3 bench/vote_rehearsal.py [--rounds 2] [--url http://127.0.0.1:7860/]``

One presenter (1920×1080, presenter mode) and three followers in Chromium (two laptops, one dark, and a phone
at 390×844), all on this machine (the browsers share its cores with the app). For each kind of question (which
piece, the next piece, which head, a question of the presenter's own) and each round: Ask, every follower
answers, Reveal. The time is taken in the pages themselves: the presenter's click (``Date.now()`` just before
it) against the moment each follower's page drew the question or the reveal (``window.voteLog``,
ui/static/vote.js); one clock, one machine. Without ``--url`` an app is started on a free port and stopped
after.

Last line:
``vote rehearsal: F followers, K questions, question shown p95 X s (max Y), reveal shown p95 X s (max Y)``.
"""
from __future__ import annotations

import argparse
import sys

from playwright.sync_api import sync_playwright

from toolkit import percentile, spread  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)
from harness.app import start_app, stop_app  # noqa: E402

SENTENCE = "The cat is sleeping on the sofa."
KINDS = [("look at most", None), ("next French piece", None), ("Which head", None),
         ("of my own",
          ("Why divide the scores by √d_k?", "To keep the softmax from saturating\nTo save memory"))]
PHONE = {"viewport": {"width": 390, "height": 844}, "has_touch": True, "is_mobile": True,
         "device_scale_factor": 2}
WAIT_MS = 60_000


def pick(page, elem_id: str, text: str) -> None:
    page.locator(f"#{elem_id} input").click()
    page.locator("ul[role=listbox] li").filter(has_text=text).first.click()


def drawn_at(page, qid: int, status: str) -> float:
    page.wait_for_selector(f"#vote[data-question='{qid}'][data-status={status}]", timeout=WAIT_MS)
    return page.evaluate(f"() => window.voteLog.find(e => e[0] === {qid} && e[1] === '{status}')[2]")


def click_at(page, selector: str) -> float:
    t = page.evaluate("() => Date.now()")
    page.locator(selector).click()
    return t


def lecture(browser, url: str, rounds: int) -> tuple[list, list]:
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    presenter.goto(url + "?text=" + SENTENCE.replace(" ", "+") + "&step=3")
    presenter.locator("#step-info .stepinfo").first.wait_for(timeout=WAIT_MS)
    presenter.locator("#presenter input").check()
    presenter.locator("#live-start").click()
    presenter.locator("#live-panel .live-code").wait_for(timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    presenter.locator("#live-panel .live-fold").click()
    presenter.locator("#vote-toggle").click()
    followers = [browser.new_context(viewport={"width": 1280, "height": 800}).new_page(),
                 browser.new_context(viewport={"width": 1280, "height": 800}, color_scheme="dark").new_page(),
                 browser.new_context(**PHONE).new_page()]
    for f in followers:
        f.goto(url + f"?follow={code}")
        f.wait_for_selector("body[data-drawn]", timeout=WAIT_MS)
    shown, revealed, qid = [], [], 0
    for r in range(rounds):
        for kind, own in KINDS:
            qid += 1
            pick(presenter, "vote-kind", kind)
            if own:
                presenter.locator("#vote-prompt textarea, #vote-prompt input").first.fill(own[0])
                presenter.locator("#vote-options textarea").fill(own[1])
            t = click_at(presenter, "#vote-ask")
            for i, f in enumerate(followers):
                shown.append((kind, (drawn_at(f, qid, "open") - t) / 1000))
                options = f.locator("#vote .vote-opt")
                options.nth((i + r) % options.count()).click()
                f.wait_for_selector("#vote .vote-said.ok", timeout=WAIT_MS)
            presenter.wait_for_selector(f"#vote-status .vote-status[data-answers='{len(followers)}']",
                                        timeout=WAIT_MS)
            t = click_at(presenter, "#vote-reveal")
            for f in followers:
                revealed.append((kind, (drawn_at(f, qid, "revealed") - t) / 1000))
    presenter.click("#live-end")
    return shown, revealed


def summary(values: list[float]) -> str:
    return spread(values)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--url", default="")
    args = ap.parse_args(argv)
    proc, url = (None, args.url) if args.url else start_app()
    try:
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path="/usr/bin/chromium")
            shown, revealed = lecture(browser, url, args.rounds)
            browser.close()
    finally:
        if proc is not None:
            stop_app(proc)
    for kind, _ in KINDS:
        print(f"{kind:>18}: question shown {summary([t for k, t in shown if k == kind])}; "
              f"reveal shown {summary([t for k, t in revealed if k == kind])}")
    s, r = [t for _, t in shown], [t for _, t in revealed]
    print(f"vote rehearsal: 3 followers, {len(KINDS) * args.rounds} questions, question shown p95 "
          f"{percentile(s, 0.95):.2f} s (max {max(s):.2f}), reveal shown p95 "
          f"{percentile(r, 0.95):.2f} s (max {max(r):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
