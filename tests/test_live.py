"""Live lecture (ui/rooms.py, ui/live.py, ui/static/live.js): rooms kept in memory or in Redis, the
followers' route with its ETag, and, in Chromium, one presenter and three followers (one a phone) on two app
processes sharing a real redis-server: every follower shows the presenter's sentence, tab and step, and the
same figure; a follower can explore on its own and rejoin, and can never drive the room."""
from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time

import httpx
import pytest

from tests.support.app import free_port, start_app, stop_app
from ui.rooms import MemoryRooms, RoomError, clean_state

VIEW = {"text": "The cat is sleeping on the sofa.", "tab": "steps", "step": "2"}


def check_store(rooms) -> None:
    code, secret = rooms.create()
    assert len(code) == 6 and rooms.read(code).version == 0
    assert rooms.publish(code, secret, VIEW) == 1
    assert rooms.publish(code, secret, dict(VIEW)) == 1                 # no change, no new version
    assert rooms.publish(code, secret, {**VIEW, "step": "3", "evil": "x"}) == 2
    view = rooms.read(code.lower())
    assert view.state == {**VIEW, "step": "3"} and view.version == 2     # only the view's parameters
    with pytest.raises(RoomError, match="only the presenter"):
        rooms.publish(code, "not-the-secret", VIEW)
    with pytest.raises(RoomError, match="only the presenter"):
        rooms.end(code, "")
    other, other_secret = rooms.create()
    with pytest.raises(RoomError, match="only the presenter"):
        rooms.publish(code, other_secret, VIEW)                          # one room's secret opens no other
    rooms.end(code, secret)
    assert rooms.read(code) is None and rooms.read(other) is not None
    with pytest.raises(RoomError, match="no such room"):
        rooms.publish(code, secret, VIEW)


def test_a_room_watch_streams_every_view_once_to_each_follower():
    """rooms.RoomWatch: one reader per room, however many follow; each follower gets the views after the one
    it has, in order, a keep-alive while nothing changes, and the end of the room."""
    import asyncio
    from ui.rooms import RoomView, RoomWatch

    class CountingRooms(MemoryRooms):
        reads, fail_next = 0, False

        def read(self, code):
            CountingRooms.reads += 1
            if CountingRooms.fail_next:
                CountingRooms.fail_next = False
                raise ConnectionError("the store blinked")          # the watch reads again, the streams go on
            return super().read(code)

    rooms = CountingRooms()
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)

    async def follow(watch, after=0, n=3):
        got = []
        async for view in watch.views(code, after):
            got.append(view)
            if view is None or len(got) == n:
                break
        return got

    async def scenario():
        watch = RoomWatch(rooms, every=0.02, keep_alive=0.3)
        followers = [asyncio.create_task(follow(watch)) for _ in range(20)]
        late = asyncio.create_task(follow(watch, after=1, n=2))     # it has view 1 (a reconnecting browser)
        await asyncio.sleep(0.1)
        rooms.publish(code, secret, {**VIEW, "step": "3"})
        await asyncio.sleep(0.1)
        rooms.publish(code, secret, {**VIEW, "step": "4"})
        got = await asyncio.gather(*followers, late)
        reads = CountingRooms.reads
        quiet = await follow(watch, after=3, n=1)                   # nothing new: a keep-alive after 0.3 s
        CountingRooms.fail_next = True
        rooms.end(code, secret)
        ended = await follow(watch, after=3, n=5)
        return got, reads, quiet, ended

    got, reads, quiet, ended = asyncio.run(scenario())
    assert all([v.version for v in g] == [1, 2, 3] for g in got[:-1])
    assert [v.state["step"] for v in got[0]] == ["2", "3", "4"] and [v.version for v in got[-1]] == [2, 3]
    assert reads < 40                                    # ~0.2 s at one read per 0.02 s, not one per follower
    assert quiet == [RoomView(-1, {})] and ended[-1] is None


def test_memory_rooms():
    check_store(MemoryRooms())
    rooms = MemoryRooms(idle_s=0.05)
    code, secret = rooms.create()
    time.sleep(0.1)
    assert rooms.read(code) is None                                      # silent for too long: ended
    with pytest.raises(RoomError):
        clean_state({"tab": "steps"})                                    # a view needs its sentence


@pytest.fixture(scope="module")
def redis_url():
    server = shutil.which("redis-server")
    if server is None:
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed (CI installs it: apt-get install redis-server)")
        pytest.skip("redis-server is not installed (apt-get install redis-server); CI runs this test")
    port = free_port()
    proc = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for _ in range(100):
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            break
        except OSError:
            time.sleep(0.05)
    yield f"redis://127.0.0.1:{port}/0"
    proc.terminate()
    proc.wait(10)


def test_redis_rooms(redis_url):
    from ui.rooms import RedisRooms
    check_store(RedisRooms(redis_url))


@pytest.fixture(scope="module")
def two_apps(redis_url, bundled_checkpoint):
    """Two app processes sharing the room store, as behind a load balancer."""
    a = start_app(["--redis", redis_url])
    try:
        b = start_app(["--redis", redis_url])
    except Exception:
        stop_app(a[0])
        raise
    yield a[1], b[1]
    stop_app(a[0]), stop_app(b[0])


def test_the_followers_route_answers_304_until_the_view_changes(two_apps, redis_url):
    from ui.rooms import RedisRooms
    rooms = RedisRooms(redis_url)
    code, secret = rooms.create()                      # as the presenter's page on one app does
    rooms.publish(code, secret, VIEW)
    url = two_apps[1] + f"live/rooms/{code}"           # asked of the other app, its first request after "/"
    r = httpx.get(url)
    assert r.status_code == 200 and r.json() == {"version": 1, "state": VIEW} and r.headers["etag"] == '"1"'
    assert httpx.get(url, headers={"If-None-Match": '"1"'}).status_code == 304
    rooms.publish(code, secret, {**VIEW, "step": "3"})
    r = httpx.get(url, headers={"If-None-Match": '"1"'})
    assert r.status_code == 200 and r.json()["state"]["step"] == "3"
    assert httpx.get(two_apps[0] + f"live/rooms/{code}/qr.svg").text.lstrip().startswith("<")
    r = httpx.get(two_apps[0] + "live/rooms/NOSUCH")
    assert r.status_code == 404 and "no such room" in r.json()["error"]     # the route's answer, not "Not Found"
    assert httpx.put(url, json=VIEW).status_code in (404, 405)         # the route only reads


def test_the_followers_stream_pushes_each_view_from_another_app(two_apps, redis_url):
    """``GET /live/rooms/CODE/events`` (what a follower's page listens to) on the app the presenter is not on:
    the current view, each new one as the presenter publishes it, and the end of the room."""
    import json
    from ui.rooms import RedisRooms
    rooms = RedisRooms(redis_url)
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    url = two_apps[1] + f"live/rooms/{code}/events"
    assert httpx.get(two_apps[1] + "live/rooms/NOSUCH/events").status_code == 404
    seen, t0 = [], time.time()
    with httpx.stream("GET", url, timeout=10) as r:
        assert r.status_code == 200 and r.headers["content-type"].startswith("text/event-stream")
        for line in r.iter_lines():
            if line.startswith("data: ") and line != "data: {}":
                seen.append(json.loads(line[6:]))
                if len(seen) == 1:
                    rooms.publish(code, secret, {**VIEW, "step": "5"})
                elif len(seen) == 2:
                    rooms.end(code, secret)
            elif line == "event: end":
                break
    assert [(v["version"], v["state"]["step"]) for v in seen] == [(1, "2"), (2, "5")] and time.time() - t0 < 5


def step_of(page) -> str:
    return page.locator("#step-info").inner_text()


def test_followers_follow_the_presenter(browser, two_apps):
    from tests.support.browser import WAIT_MS, open_link, plots_in, show_tab
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, two_apps[0], text="The cat is sleeping on the sofa.")
    presenter.locator("#presenter input").check()
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    assert presenter.locator("#live-panel img.live-qr").evaluate("(i) => i.complete && i.naturalWidth > 0")
    presenter.click("#next-step")
    presenter.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
    followers = [browser.new_page(viewport=v) for v in
                 ({"width": 1280, "height": 800}, {"width": 1280, "height": 800}, {"width": 390, "height": 844})]
    for f in followers:
        f.goto(two_apps[1] + f"?follow={code}")
    for f in followers:
        f.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
        assert "Following the presenter" in f.locator("#follow-bar").inner_text()
    # the presenter moves: step 3, then the explorer; every follower follows within a few seconds
    presenter.click("#next-step")
    presenter.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)
    for f in followers:
        f.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=20_000)
    # the title's words (a phone wraps a long title onto lines)
    title = lambda p, el: "".join(p.locator(f"#{el} .gtitle").first.text_content().split())
    want = title(presenter, "cross-step-plot")
    assert all(title(f, "cross-step-plot") == want for f in followers)
    # one follower explores on its own: it stays where it is while the presenter moves on, then rejoins
    lone = followers[1]
    lone.click("#follow-toggle")
    presenter.click("#next-step")
    presenter.wait_for_selector("#step-info:has-text('Step 4 of')", timeout=WAIT_MS)
    followers[0].wait_for_selector("#step-info:has-text('Step 4 of')", timeout=20_000)
    assert "Step 3 of" in step_of(lone)
    lone.click("#follow-toggle")
    lone.wait_for_selector("#step-info:has-text('Step 4 of')", timeout=20_000)
    # a follower's own moves never reach the room
    followers[0].click("#follow-toggle")
    followers[0].click("#prev-step")
    followers[0].wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)
    time.sleep(2)
    assert "Step 4 of" in step_of(presenter) and "Step 4 of" in step_of(followers[2])
    show_tab(presenter, "explorer")
    plots_in(followers[2], "explorer-plot").wait_for(timeout=30_000)
    for p in [presenter, *followers]:
        p.close()
