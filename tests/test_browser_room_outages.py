"""A lecture through a Redis outage and an app restart, in Chromium: a presenter (1920x1080, presenter mode)
and two followers (a laptop, a phone). While Redis hangs, the followers keep the last view and say the
connection is interrupted, and the presenter's page says publishing is paused; when it answers, both go on by
themselves. The app process is then killed and started again: the followers wait for the presenter, the
presenter's reloaded page offers to resume the room, and once resumed the followers follow again. Screenshots
go to $ROOM_SHOTS if set."""
from __future__ import annotations

import os
import signal
from pathlib import Path

from harness.app import free_port, start_app, stop_app
from harness.redis_server import start_redis, stop_redis

SHOTS = os.environ.get("ROOM_SHOTS")


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=f"{SHOTS}/{name}.png")


def test_a_lecture_through_a_redis_outage_and_an_app_restart(browser, bundled_checkpoint):
    from harness.browser import WAIT_MS, open_link
    redis_port, app_port = free_port(), free_port()
    redis_proc = start_redis(redis_port)
    args = ["--redis", f"redis://127.0.0.1:{redis_port}/0"]
    proc, url = start_app(args, port=app_port)
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    try:
        open_link(presenter, url, text="The cat is sleeping on the sofa.")
        presenter.locator("#presenter input").check()
        presenter.locator("#live-start").click()
        presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
        code = presenter.locator("#live-panel .live-code").inner_text().strip()
        presenter.locator("#live-panel summary").click()                 # folded to one line for the lecture
        followers = [browser.new_page(viewport={"width": 1280, "height": 800}), phone.new_page()]
        for f in followers:
            f.goto(url + f"?follow={code}")
            f.wait_for_selector("#view-en:has-text('The cat is sleeping')", timeout=WAIT_MS)

        os.kill(redis_proc.pid, signal.SIGSTOP)                          # Redis hangs
        for f in followers:
            f.wait_for_selector("#follow-bar.lost:has-text('interrupted')", timeout=20_000)
            # the last view stays
            assert f.locator("#view-en").inner_text() == "The cat is sleeping on the sofa."
        presenter.click("#next-step")
        presenter.wait_for_selector("#live-status:has-text('Publishing is paused')", timeout=20_000)
        shot(presenter, "presenter-redis-hung"), shot(followers[0], "laptop-redis-hung")
        shot(followers[1], "phone-redis-hung")
        # back: everyone goes on by themselves
        os.kill(redis_proc.pid, signal.SIGCONT)
        for f in followers:
            f.wait_for_selector("#follow-bar:not(.lost):has-text('Following the presenter')", timeout=20_000)
            f.wait_for_selector("#view-where:has-text('Step 2 of')", timeout=20_000)
        presenter.wait_for_selector("#live-status .live-note-line", state="detached", timeout=20_000)

        stop_app(proc)                                                   # the app process dies
        for f in followers:
            f.wait_for_selector("#follow-bar.lost", timeout=20_000)
        proc, url = start_app(args, port=app_port)                       # ...and is started again
        # Gradio's page tries every 2 s to reach its server and reloads itself once it is back: when that
        # reload comes first, the test's own is aborted, and the page is loading anyway
        try:
            presenter.reload()
        except Exception as e:  # noqa: BLE001 - playwright's Error, by its message
            if "ERR_ABORTED" not in str(e):
                raise
            presenter.wait_for_load_state("load")
        presenter.locator("#presenter input").check()
        presenter.wait_for_selector(f"#live-start:has-text('Resume live session {code}')", timeout=WAIT_MS)
        assert "still open" in presenter.locator("#live-status").inner_text()
        shot(presenter, "presenter-resume-offered")
        presenter.locator("#live-start").click()
        presenter.wait_for_selector(f"#live-panel .live-code:has-text('{code}')", timeout=WAIT_MS)
        presenter.locator("#src-text textarea").fill("The dog runs in the park.")
        presenter.click("#translate-btn")
        for f in followers:
            f.wait_for_selector("#view-en:has-text('The dog runs in the park.')", timeout=WAIT_MS)
            assert "Following the presenter" in f.locator("#follow-bar").inner_text()
        shot(followers[1], "phone-after-restart")
    finally:
        stop_app(proc)
        os.kill(redis_proc.pid, signal.SIGCONT)
        stop_redis(redis_proc)
        phone.close()
