"""Live lecture (ui/rooms.py, ui/live.py, ui/follow.py, ui/static/follow.js): rooms kept in memory or in
Redis, the followers' routes (the view with its ETag, the stream of views drawn for a look), the follower's
page served ahead of Gradio, and, in Chromium, one presenter and three followers (one a phone) on two app
processes sharing a real redis-server: every follower shows the presenter's sentence, tab and step, and the
same figure; a follower can explore on its own (told so) and come back; a mistyped code, an ended lecture and
the join box."""
from __future__ import annotations

import time

import httpx
import pytest

from harness.app import start_app, stop_app
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
    assert rooms.known(code) and not rooms.known("ZZZZ99")
    rooms.end(code, secret)
    assert rooms.read(code) is None and rooms.read(other) is not None
    assert rooms.known(code.lower()) and not rooms.known("ZZZZ99")     # ended, not unknown
    with pytest.raises(RoomError, match="no such room"):
        rooms.publish(code, secret, VIEW)


def test_a_room_watch_streams_every_view_once_to_each_follower():
    """rooms.RoomWatch: one reader per room, however many follow; each follower gets the views after the one
    it has, in order, a keep-alive while nothing changes, that the store stopped answering and answers again,
    and the end of the room."""
    import asyncio
    from ui.room_watch import INTERRUPTED, KEEP_ALIVE, RESUMED, RoomWatch
    from ui.rooms import StoreDown

    class CountingRooms(MemoryRooms):
        reads, fail_next = 0, False

        def read(self, code):
            CountingRooms.reads += 1
            if CountingRooms.fail_next:
                CountingRooms.fail_next = False
                raise StoreDown("the store blinked")                # the watch reads again, the streams go on
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
        watch = RoomWatch(rooms, every=0.02, keep_alive=0.3, retry=0.02)
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
    assert quiet == [KEEP_ALIVE] and ended == [INTERRUPTED, RESUMED, None]


def check_restart_and_limits(make) -> None:
    """A room a restart lost comes back under its code for its presenter's secret (and no other), at a version
    above any its followers saw; a room its presenter ended never does; a full store refuses a new room and
    keeps the running ones."""
    from ui.rooms import NoSuchRoom, RoomKeys, RoomsFull
    keys = RoomKeys(b"k" * 32)
    before = make(keys=keys, max_rooms=3)
    code, secret = before.create()
    seen = max(before.publish(code, secret, {**VIEW, "step": str(step)}) for step in range(1, 6))
    assert before.owns(code, secret) and not before.owns(code, secret + "x") and keys.proves(code, secret)
    # the app, or the store, restarted empty
    after = make(keys=keys, max_rooms=3, fresh=True)
    with pytest.raises(NoSuchRoom):
        after.publish(code, secret, VIEW)
    assert not after.adopt(code, "forged.0123456789abcdef0123456789abcdef")
    assert not make(keys=RoomKeys(b"other" * 8), max_rooms=3).adopt(code, secret)   # another app's key
    assert after.adopt(code, secret) and not after.adopt(code, secret)   # once: then it is running
    version = after.publish(code, secret, VIEW)
    assert version > seen and after.read(code).state == VIEW             # its followers ignore nothing new
    after.end(code, secret)
    assert not after.adopt(code, secret)                                 # ended by its presenter: stays ended
    rooms = [after.create() for _ in range(3)]
    with pytest.raises(RoomsFull):
        after.create()
    assert all(after.read(c) is not None for c, _ in rooms)              # nobody pushed out


def wait_for(read, done, timeout: float = 10.0):
    """What `read` gives once `done` says so (a liveness wait: the test fails only if it never happens)."""
    deadline = time.monotonic() + timeout
    while True:
        got = read()
        if done(got) or time.monotonic() > deadline:
            return got
        time.sleep(0.02)


def test_memory_rooms():
    check_store(MemoryRooms())
    check_restart_and_limits(lambda fresh=False, **kw: MemoryRooms(**kw))
    rooms = MemoryRooms(idle_s=0.05, unused_s=0.05)
    code, secret = rooms.create()
    shown, shown_secret = rooms.create()
    rooms.publish(shown, shown_secret, VIEW)
    time.sleep(0.1)
    assert rooms.read(code) is None and rooms.read(shown) is None        # silent for too long: ended
    rooms = MemoryRooms(idle_s=60, unused_s=0.05)
    unused, _ = rooms.create()
    shown, shown_secret = rooms.create()
    rooms.publish(shown, shown_secret, VIEW)
    time.sleep(0.1)
    assert rooms.read(unused) is None and rooms.read(shown) is not None  # a room never shown goes sooner
    with pytest.raises(RoomError):
        clean_state({"tab": "steps"})                                    # a view needs its sentence


def test_redis_rooms(redis_url):
    import redis
    from ui.rooms_redis import RedisRooms
    check_store(RedisRooms(redis_url))
    server = redis.Redis.from_url(redis_url)

    def make(fresh=False, **kw):
        if fresh:
            server.flushdb()
        return RedisRooms(redis_url, **kw)
    make(fresh=True)
    check_restart_and_limits(make)
    server.flushdb()
    rooms = RedisRooms(redis_url, unused_s=1)
    code, secret = rooms.create()
    assert 0 < server.ttl(rooms.key(code)) <= 1                          # never shown: gone in a second
    rooms.publish(code, secret, VIEW)
    assert server.ttl(rooms.key(code)) > 3600                            # shown: kept while it is used


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
    from ui.rooms_redis import RedisRooms
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
    # the route's answer, not "Not Found"
    assert r.status_code == 404 and r.json() == {"error": "No lecture with code NOSUCH: check the code.",
                                                 "ended": False}
    drawn = two_apps[1] + f"live/rooms/{code}/view?look=dark&narrow=1"
    r = httpx.get(drawn)
    assert r.status_code == 200 and r.json()["state"]["step"] == "3" and \
        r.json()["view"]["where"].startswith("Step 3")
    assert httpx.get(drawn, headers={"If-None-Match": r.headers["etag"]}).status_code == 304
    assert httpx.get(drawn.replace("dark", "light"),
                     headers={"If-None-Match": r.headers["etag"]}).status_code == 200
    rooms.end(code, secret)
    r = httpx.get(url)
    assert r.status_code == 404 and r.json() == {"error": f"The lecture {code} has ended.", "ended": True}
    assert httpx.put(url, json=VIEW).status_code in (404, 405)         # the route only reads


def test_the_followers_stream_pushes_each_view_from_another_app(two_apps, redis_url):
    """``GET /live/rooms/CODE/events`` (what a follower's page listens to) on the app the presenter is not on:
    the current view, each new one as the presenter publishes it, and the end of the room."""
    import json
    from ui.rooms_redis import RedisRooms
    rooms = RedisRooms(redis_url)
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    url = two_apps[1] + f"live/rooms/{code}/events"
    assert httpx.get(two_apps[1] + "live/rooms/NOSUCH/events").status_code == 404
    seen = []
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
    # (speed: bench/follow_load.py)
    assert [(v["version"], v["state"]["step"]) for v in seen] == [(1, "2"), (2, "5")]
    # each view comes drawn: the step tab's figures as Plotly data, its text, where it stands
    view = seen[1]["view"]
    assert view["text"] == VIEW["text"] and view["french"] and view["title"] == "Step by step"
    assert view["where"].startswith("Step 5 of") and view["explore"].startswith("/?text=")
    plots = {p["id"]: p["figure"] for p in view["parts"] if p["type"] == "plot"}
    assert {"topk-plot", "cross-step-plot", "cross-steps-plot"} <= set(plots)
    assert "step 5" in plots["topk-plot"]["layout"]["title"]["text"]


def test_the_follower_page_is_served_ahead_of_gradio(two_apps):
    """``/?follow=CODE`` is the light page (no Gradio page config), ``/`` is still the app; plotly.js comes
    gzipped and cached, and answers 304 to a browser that has it."""
    page = httpx.get(two_apps[0] + "?follow=ABC123")
    assert page.status_code == 200 and 'id="follow-bar"' in page.text and "gradio_config" not in page.text
    assert len(page.content) < 5_000
    assert "gradio" in httpx.get(two_apps[0]).text.lower()                  # the app itself, as before
    js = httpx.get(two_apps[0] + "live/static/plotly.min.js", headers={"Accept-Encoding": "gzip"})
    assert js.status_code == 200 and js.headers["content-encoding"] == "gzip" and \
        "max-age" in js.headers["cache-control"]
    assert len(js.content) > 1_000_000 and "Plotly" in js.text[:5000]
    again = httpx.get(two_apps[0] + "live/static/plotly.min.js",
                      headers={"If-None-Match": js.headers["etag"]})
    assert again.status_code == 304


def test_a_view_is_built_once_however_many_follow():
    """follow.ViewFrames: 50 followers waiting for the same view and look cost one build; another look, one
    more; the same view published again later (a new version) costs none, and carries its own version."""
    import asyncio
    import json
    from ui.follow import Look, ViewFrames
    from ui.rooms import RoomView
    calls = []

    def build(state, look):
        calls.append((state["step"], look))
        time.sleep(0.05)
        return json.dumps({"step": state["step"], "dark": look.dark})

    async def main():
        frames = ViewFrames(build)
        view = RoomView(3, dict(VIEW))
        got = await asyncio.gather(*[frames.frame(view, Look()) for _ in range(50)],
                                   frames.frame(view, Look(dark=True)))
        later = await frames.frame(RoomView(7, dict(VIEW)), Look())
        return got, later
    got, later = asyncio.run(main())
    assert len(calls) == 2 and len(set(got[:50])) == 1
    head, data = got[0].decode().split("\n", 1)
    assert head == "id: 3" and json.loads(data[len("data: "):])["view"] == {"step": "2", "dark": False}
    assert later.decode().startswith("id: 7\ndata: {\"version\":7,") and len(calls) == 2


def test_followers_follow_the_presenter(browser, two_apps):
    """One presenter, three followers (two laptops, a phone) on the other app process: the light page shows
    the presenter's step and figure, follows Next and a tab, tells a follower who explores on their own that
    they do, and says when the lecture has ended."""
    from harness.browser import WAIT_MS, follower_drawn, open_link, plots_in, show_tab
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, two_apps[0], text="The cat is sleeping on the sofa.")
    presenter.locator("#presenter input").check()
    assert presenter.locator("#live-end").count() == 0 or not presenter.locator("#live-end").is_visible()
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    # the QR code (an image of its own, fetched after the panel)
    presenter.wait_for_function("() => { const i = document.querySelector('#live-panel img.live-qr');"
                                " return i && i.complete && i.naturalWidth > 0; }", timeout=WAIT_MS)
    assert presenter.locator("#live-end").is_visible() and not presenter.locator("#live-start").is_visible()
    presenter.click("#next-step")
    presenter.wait_for_selector("#step-info:has-text('Step 2 of')", timeout=WAIT_MS)
    phone = browser.new_context(viewport={"width": 390, "height": 844}, is_mobile=True, has_touch=True)
    followers = [browser.new_page(viewport={"width": 1280, "height": 800}),
                 browser.new_page(viewport={"width": 1280, "height": 800}), phone.new_page()]
    for f in followers:
        f.goto(two_apps[1] + f"?follow={code}")
    for f in followers:
        f.wait_for_selector("#view-where:has-text('Step 2 of')", timeout=WAIT_MS)
        assert "Following the presenter" in f.locator("#follow-bar").inner_text()
        assert f.locator("#view-en").inner_text() == "The cat is sleeping on the sofa."
    # on the phone, the first figure starts on the first screen
    top = followers[2].locator("#parts .js-plotly-plot").first.evaluate(
        "(e) => e.getBoundingClientRect().top")
    assert top < 844 - 200
    # the presenter moves: step 3, then the explorer; every follower follows
    presenter.click("#next-step")
    presenter.wait_for_selector("#step-info:has-text('Step 3 of')", timeout=WAIT_MS)
    for f in followers:
        f.wait_for_selector("#view-where:has-text('Step 3 of')", timeout=20_000)
        follower_drawn(f, 20_000)
    # the same figure: the title's words (a phone wraps a long title onto lines)
    title = lambda p, sel: "".join(p.locator(f"{sel} .gtitle").first.text_content().split())
    want = title(presenter, "#cross-step-plot")
    assert all(title(f, "#parts [data-id=cross-step-plot]") == want for f in followers)
    followers[1].set_viewport_size({"width": 1280, "height": 540})      # a short window: the grid below it
    show_tab(presenter, "explorer")
    for f in followers:
        f.wait_for_selector("#view-title:has-text('Attention explorer')", timeout=20_000)
        f.locator("#parts [data-id=explorer-plot].js-plotly-plot").wait_for(timeout=20_000)
    # below the fold, the all-heads grid is drawn when the student scrolls to it, not ahead: drawn ahead, it
    # held the page 1-2 s and the presenter's next change waited for it
    laptop = followers[1]
    follower_drawn(laptop, 20_000)
    laptop.wait_for_timeout(800)
    grid = laptop.locator("#parts [data-id=grid-plot]")
    assert grid.evaluate("(e) => e.getBoundingClientRect().top > window.innerHeight - 120")
    assert not grid.evaluate("(e) => e.classList.contains('js-plotly-plot')")
    grid.scroll_into_view_if_needed()
    laptop.locator("#parts [data-id=grid-plot].js-plotly-plot").wait_for(timeout=20_000)
    laptop.evaluate("() => window.scrollTo(0, 0)")
    laptop.set_viewport_size({"width": 1280, "height": 800})
    # a follower explores on their own: the full app on the same view, told that they are exploring, with the
    # way back
    lone = followers[0]
    lone.click("#follow-explore")
    lone.wait_for_selector("#follow-bar.detached:has-text('Exploring on your own')", timeout=WAIT_MS)
    plots_in(lone, "explorer-plot").wait_for(timeout=WAIT_MS)
    assert lone.locator("[role=tab][data-tab-id='explorer'][aria-selected=true]").count() == 1
    lone.click("#follow-back")
    lone.wait_for_selector("#view-title:has-text('Attention explorer')", timeout=WAIT_MS)
    follower_drawn(lone)                                  # (the text comes first, its figures after)
    # the presenter ends the lecture: every follower is told, and keeps what it showed last
    presenter.click("#live-end")
    for f in followers:
        f.wait_for_selector("#follow-bar:has-text('has ended')", timeout=20_000)
        assert f.locator("#parts .js-plotly-plot").count() >= 1
    for p in [presenter, *followers]:
        p.close()
    phone.close()


def test_joining_a_lecture_by_its_code(browser, app_url):
    """The join box on the app's page takes the projected code (lower case and spaces forgiven); a mistyped
    code says that no lecture has it (not that one ended), and the page stays usable: its join box works."""
    from harness.browser import WAIT_MS, open_link
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, app_url, text="Where is the station?")
    presenter.locator("#presenter input").check()
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-code", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    student = browser.new_page(viewport={"width": 1280, "height": 800})
    open_link(student, app_url)
    assert student.locator("#join-code").is_visible()
    assert not presenter.locator("#join-code").is_visible()                 # the presenter does not join
    student.fill("#join-code", f" {code.lower()} ")
    student.press("#join-code", "Enter")
    student.wait_for_selector("#view-en:has-text('Where is the station?')", timeout=WAIT_MS)
    # a mistyped code
    student.goto(app_url + "?follow=ZZZZ99")
    student.wait_for_selector("#message:has-text('No lecture with code ZZZZ99')", timeout=WAIT_MS)
    body = student.inner_text("body")
    assert "check the code" in body and "ended" not in body
    assert student.locator("#join-code").evaluate("(e) => document.activeElement === e")
    student.fill("#join-code", code)
    student.locator("#join button").click()
    student.wait_for_selector("#view-en:has-text('Where is the station?')", timeout=WAIT_MS)
    # an ended lecture says so
    presenter.click("#live-end")
    presenter.wait_for_selector("#live-start", state="visible", timeout=WAIT_MS)
    student.goto(app_url + f"?follow={code}")
    student.wait_for_selector("#message:has-text('has ended')", timeout=WAIT_MS)
    presenter.close(), student.close()


def test_the_presenter_folds_the_room_panel(browser, app_url):
    """Presenter mode with a session running: the room panel opens with its QR code, folds to one line (code
    and link) and opens again; folded, every tab's first figure starts in the top 600 px of
    a 1080p projector."""
    from harness.browser import WAIT_MS, open_link, show_tab
    presenter = browser.new_page(viewport={"width": 1920, "height": 1080})
    open_link(presenter, app_url,
              text="When the students arrived at the lecture hall this morning, the professor had "
                                       "already written the equations of the attention mechanism on the "
                                       "board.")
    presenter.locator("#presenter input").check()
    presenter.wait_for_function("() => document.body.classList.contains('presenter')", timeout=WAIT_MS)
    presenter.locator("#live-start").click()
    presenter.wait_for_selector("#live-panel .live-qr", state="visible", timeout=WAIT_MS)
    code = presenter.locator("#live-panel .live-code").inner_text().strip()
    first_figure = ("() => { const f = [...document.querySelectorAll('[role=tabpanel] .js-plotly-plot')]"
                    ".find(e => e.offsetParent); return f.getBoundingClientRect().top + window.scrollY; }")
    # open, the QR code lies over the page
    assert presenter.evaluate(first_figure) <= 600
    summary = presenter.locator("#live-panel summary")
    fold = presenter.locator("#live-panel .live-fold")
    assert "Fold" in fold.evaluate("(e) => getComputedStyle(e, '::before').content")
    fold.click()
    presenter.wait_for_selector("#live-panel .live-qr", state="hidden", timeout=WAIT_MS)
    box = summary.bounding_box()
    line = presenter.locator("#live-panel .live-link").bounding_box()
    # one line: the link with its code, the toggle
    assert box["height"] <= 1.5 * line["height"] + 12
    assert "/?follow=" in summary.inner_text() and \
        presenter.locator("#live-panel .live-link b").inner_text() == code
    assert presenter.locator("#live-panel .live-link").evaluate(
        "(e) => e.scrollWidth <= e.clientWidth + 1")   # whole
    for tab in ("steps", "explorer", "summary", "inside"):
        show_tab(presenter, tab)
        top = presenter.evaluate(first_figure)
        assert top <= 600, (tab, top)
    fold.click()
    presenter.wait_for_selector("#live-panel .live-qr", state="visible", timeout=WAIT_MS)
    presenter.close()


def test_every_tab_reaches_a_follower_with_figures_the_vendored_plotly_draws(bundled_checkpoint):
    """Each tab's view as a follower's page gets it (a phone in the dark, a laptop in the light): its title,
    where it stands, its figures as Plotly data of the trace types the vendored cartesian bundle of plotly.js
    draws, at the version the Python plotly package draws them with."""
    import json
    from pathlib import Path
    from plotly.offline import get_plotlyjs_version
    from transformer.serving.translator import Translator
    from ui.demo import build_demo
    from ui.follow import PLOTLY_JS_VERSION, Look, plotly_js_path
    from ui.tabs import TAB_IDS
    assert PLOTLY_JS_VERSION == get_plotlyjs_version() and \
        f"v{PLOTLY_JS_VERSION}" in plotly_js_path().read_text()[:400]
    demo = build_demo(Translator(str(bundled_checkpoint), "cpu"), Path(bundled_checkpoint))
    build = demo.frames.build
    types = set()
    for tab in TAB_IDS:
        for look in (Look(dark=True, narrow=True), Look()):
            view = json.loads(build({"text": "The cat is sleeping on the sofa.", "tab": tab, "step": "2"},
                                    look))
            assert "error" not in view and view["title"] and view["french"], (tab, view.get("error"))
            plots = [p["figure"] for p in view["parts"] if p["type"] == "plot"]
            assert tab == "about" or plots, tab
            types |= {t.get("type", "scatter") for fig in plots for t in fig["data"]}
            if tab == "steps":
                assert view["where"].startswith("Step 2 of")
    assert types and types <= {"scatter", "bar", "heatmap"}, types     # plotly.js-cartesian-dist-min's own


def test_a_knock_out_and_a_patching_reach_a_follower_as_the_presenter_ran_them(bundled_checkpoint):
    """Knock it out's view carries its parts, method, ranking and sentence B as link values: a follower's page
    draws the same knock-out (the same numbers as the Translator's), the ranking and the patching maps, and
    says what is switched off; a part list a link cannot mean is named, never an error."""
    import json
    from pathlib import Path
    from transformer.causal import parse_parts
    from transformer.serving.translator import Translator
    from ui.demo import build_demo
    from ui.follow import Look
    tr = Translator(str(bundled_checkpoint), "cpu")
    build = build_demo(tr, Path(bundled_checkpoint)).frames.build
    wide = "The animal didn't cross the street because it was too wide."
    view = json.loads(build({"text": wide, "tab": "knockout", "knockout": "cross L1, cross L2, cross L3",
                             "rank": "0",
                             "b": "The animal didn't cross the street because it was too tired."},
                            Look(narrow=True)))
    assert "error" not in view and "switched off: cross L1, cross L2, cross L3 (zero)" in view["where"]
    parts = {p["id"]: p for p in view["parts"]}
    expected = tr.knock_out(wide, parse_parts("cross L1, cross L2, cross L3"))
    assert expected.text in parts["ko-result"]["html"].replace("&#x27;", "'").replace("&#39;", "'")
    assert {"ko-plot", "ko-rank-plot", "ko-scatter", "ko-patch-plot", "ko-patch-parts", "ko-patch-heads"} <= \
        set(parts)
    assert "patch-result" in parts["ko-patch-result"]["html"]
    bad = json.loads(build({"text": wide, "tab": "knockout", "knockout": "the whole brain"}, Look()))
    assert "error" not in bad and "ko-plot" in {p["id"] for p in bad["parts"]}


def test_a_presenters_next_and_tab_reach_the_room_from_the_click_handler(bundled_checkpoint):
    """The server's handler of Next (and of opening a tab) publishes the move itself, before the presenter's
    page has the new step: a room's followers need not wait for the presenter's own drawing."""
    from pathlib import Path
    from types import SimpleNamespace
    from transformer.serving.translator import Translator
    from ui.demo import build_demo
    demo = build_demo(Translator(str(bundled_checkpoint), "cpu"), Path(bundled_checkpoint))
    fns = {}
    for f in demo.fns.values():
        fns.setdefault(f.name, []).append(f.fn)
    request = SimpleNamespace(session_hash="presenter-1", client=SimpleNamespace(host="10.0.0.1"))
    room = fns["start"][0](None, request)[0]
    code = room["code"]
    trace = demo.frames.build.__self__.translator.trace("The cat is sleeping on the sofa.")
    page = demo.frames.build.__self__.page
    assert demo.rooms.read(code).version == 0
    nxt = next(fn for fn in fns["go"] if fn.__closure__ and any(getattr(c, "cell_contents", None) == 1
                                                                for c in fn.__closure__))
    nxt(request, trace, 2, 3, "mean over heads", False, False, "Light", False, "Viridis", False)
    view = wait_for(lambda: demo.rooms.read(code), lambda v: v.version == 1)    # sent beside the handler
    assert view.version == 1 and view.state["step"] == "3" and view.state["tab"] == "steps"
    # not a presenter: nothing
    page.announce(SimpleNamespace(session_hash="someone-else"), trace, "explorer")
    time.sleep(0.5)
    assert demo.rooms.read(code).version == 1
    page.announce(request, trace, "explorer",
                  view={"kind": "cross", "layer": 2, "head": "3", "scale": "Viridis"})
    # within PUBLISH_MIN_S of the last
    view = wait_for(lambda: demo.rooms.read(code), lambda v: v.version == 2)
    assert view.version == 2 and view.state == {"text": "The cat is sleeping on the sofa.", "tab": "explorer",
                                                "kind": "cross", "layer": "2", "head": "3",
                                                "scale": "Viridis"}
