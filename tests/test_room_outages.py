"""The live rooms hold (issue 38): a real redis-server hung and stopped under a running lecture, an app
process restarted under a live room, a client flooding room creation or guessing codes, a presenter publishing
too fast. Each checks what the people in the room are told: the follower's stream and routes, the presenter's
status line, and the app's log (one line per outage, no traceback)."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import threading
import time
from pathlib import Path

import httpx

from harness.app import free_port, start_app, stop_app
from harness.gradio_page import AppConfig, Page
from harness.redis_server import start_redis, stop_redis
from ui.room_keys import RoomKeys

VIEW = {"text": "The cat is sleeping on the sofa.", "tab": "steps", "step": "2"}


class Follower:
    """A follower's stream (``GET /live/rooms/CODE/events``) read in a thread: every event, in order."""

    def __init__(self, url: str, code: str, after: int = 0) -> None:
        self.events: list[tuple[str, dict]] = []
        self.closed = threading.Event()
        headers = {"Last-Event-ID": str(after)} if after else {}
        self.status = None
        threading.Thread(target=self.read, args=(f"{url}live/rooms/"
                                                 f"{code}/events", headers), daemon=True).start()

    def read(self, url: str, headers: dict) -> None:
        try:
            with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(5, read=120)) as r:
                self.status = r.status_code
                event = "message"
                for line in r.iter_lines():
                    if line.startswith("event: "):
                        event = line[7:]
                    elif line.startswith("data: "):
                        self.events.append((event, json.loads(line[6:])))
                        event = "message"
        except httpx.HTTPError:
            pass
        finally:
            self.closed.set()

    def wait(self, what, timeout: float = 20.0) -> tuple[str, dict]:
        """The first event after those already waited for that `what` accepts (a liveness wait)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for i, (event, data) in enumerate(self.events):
                if what(event, data):
                    del self.events[: i + 1]
                    return event, data
            time.sleep(0.05)
        raise AssertionError(f"not seen within {timeout} s; the stream had {self.events}")


def log_of(proc) -> str:
    return Path(proc.log_path).read_text(errors="replace")


def is_view(step: str):
    return lambda event, data: event == "message" and data.get("state", {}).get("step") == step


def test_a_hung_then_stopped_redis_is_said_plainly_and_the_lecture_resumes(bundled_checkpoint):
    port = free_port()
    redis_proc = start_redis(port)
    url = f"redis://127.0.0.1:{port}/0"
    from ui.rooms_redis import RedisRooms
    # the presenter, on an app process of its own (its key: this machine's file)
    rooms = RedisRooms(url)
    code, secret = rooms.create()
    rooms.publish(code, secret, VIEW)
    proc, app = start_app(["--redis", url])

    async def presenter(events: list) -> list[str]:
        """A presenter's page on the app: its status line after each of `events` (start, publish; a function
        is run between them)."""
        http, config, page = await presenter_page(app)
        ids, notes = live_parts(config), []
        page.values[ids["text"]] = "The dog runs."
        await page.fire(ids["go"], "click")
        for event in events:
            if callable(event):
                event()
                continue
            await page.fire(ids[event], "click")
            notes.append(str(page.values[ids["note"]] or ""))
        await http.aclose()
        return notes

    try:
        follower = Follower(app, code)
        follower.wait(is_view("2"))
        os.kill(redis_proc.pid, signal.SIGSTOP)                          # hung: connections open, no answer
        follower.wait(lambda e, d: e == "interrupted")
        assert "could not start" in asyncio.run(presenter(["start"]))[0]
        for path in ("", "/view"):
            r = httpx.get(f"{app}live/rooms/{code}{path}", timeout=30)
            assert r.status_code == 503 and "interrupted" in r.json()["error"] and r.headers["retry-after"]
        # the page itself still opens
        assert httpx.get(f"{app}?follow={code}", timeout=30).status_code == 200
        # a few seconds of outage: no log flood
        time.sleep(3)
        os.kill(redis_proc.pid, signal.SIGCONT)
        follower.wait(lambda e, d: e == "resumed")
        hang, wake = ((lambda: os.kill(redis_proc.pid, signal.SIGSTOP)),
                      (lambda: os.kill(redis_proc.pid, signal.SIGCONT)))
        # (a publish at most each 0.2 s)
        pause = lambda: time.sleep(0.3)                                 # noqa: E731
        notes = asyncio.run(presenter(["start", "publish", hang, pause, "publish", pause, "publish", wake,
                                       pause, "publish"]))
        assert notes[:2] == ["", ""] and all("Publishing is paused" in n for n in notes[2:4]) and \
            notes[4] == ""
        follower.wait(lambda e, d: e == "interrupted")
        follower.wait(lambda e, d: e == "resumed")
        rooms.publish(code, secret, {**VIEW, "step": "3"})               # nothing lost: the room goes on
        follower.wait(is_view("3"))
        stop_redis(redis_proc)                                           # stopped, then back empty
        follower.wait(lambda e, d: e == "interrupted")
        redis_proc = start_redis(port)
        follower.wait(lambda e, d: e == "lost")                          # gone without an end: the room waits
        assert not follower.closed.is_set()
        # its presenter's page takes it up again
        assert RedisRooms(url).adopt(code, secret)
        RedisRooms(url).publish(code, secret, {**VIEW, "step": "4"})
        event, data = follower.wait(is_view("4"))
        assert data["version"] > 3                                       # above what the followers saw before
        log = log_of(proc)
        assert log.count("does not answer") == 3 and log.count("answers again") == 3, log[-3000:]
        assert "Traceback" not in log
    finally:
        stop_app(proc)
        os.kill(redis_proc.pid, signal.SIGCONT)
        stop_redis(redis_proc)


async def presenter_page(url: str, room: dict | None = None):
    """A presenter's page over HTTP; `room`: what its browser holds already (localStorage) when it opens."""
    http = httpx.AsyncClient(timeout=120)
    app = AppConfig((await http.get(url + "config")).json())
    page = Page(http, url, app)
    if room is not None:
        page.values[next(cid for cid, c in app.components.items() if c["type"] == "browserstate")] = room
    await page.open()
    return http, app, page


def live_parts(app: AppConfig) -> dict:
    return {name: app.find(elem_id=elem) for name, elem in
            (("start", "live-start"), ("end", "live-end"), ("publish", "live-publish"),
             ("note", "live-status"), ("panel", "live-panel"), ("text", "src-text"), ("go", "translate-btn"))}


def browser_room(app: AppConfig, page: Page) -> dict:
    room = next(cid for cid, c in app.components.items() if c["type"] == "browserstate")
    return page.values[room]


def test_a_presenter_is_told_when_publishing_pauses_and_the_room_survives_an_app_restart(bundled_checkpoint):
    """Memory rooms: the app is killed and started again on its port; the presenter's page (its room in its
    browser) publishes again and the room comes back under its code; a follower that waited gets the view."""
    port = free_port()
    proc, url = start_app(port=port)

    async def scenario():
        http, app, page = await presenter_page(url)
        ids = live_parts(app)
        page.values[ids["text"]] = "The cat is sleeping on the sofa."
        await page.fire(ids["go"], "click")
        await page.fire(ids["start"], "click")
        room = browser_room(app, page)
        assert set(room) == {"code", "secret"} and ".live-room" not in str(page.values[ids["note"]])
        await page.fire(ids["publish"], "click")
        first = httpx.get(f"{url}live/rooms/{room['code']}").json()
        stop_app(proc_box[0])                                            # the app process dies...
        proc_box[0] = start_app(port=port)[0]                            # ...and starts again, empty
        r = httpx.get(f"{url}live/rooms/{room['code']}")
        assert r.status_code == 404 and not r.json()["ended"]            # a follower waits (follow.js)
        # beyond the slider's built range (1-2)
        page.values[app.find(elem_id="step-slider")] = 3
        await page.fire(ids["publish"], "click")                         # the presenter's page, not reloaded
        assert "taken up again" in str(page.values[ids["note"]])
        again = httpx.get(f"{url}live/rooms/{room['code']}").json()
        assert again["state"]["text"] == first["state"]["text"] and again["version"] > first["version"]
        assert again["state"]["step"] == "3"
        assert browser_room(app, page) == room
        http2, _, reloaded = await presenter_page(url, room)             # a reload: offered to resume it
        assert f"Resume live session {room['code']}" in str(reloaded.values[ids["start"]])
        assert "still open" in str(reloaded.values[ids["note"]])
        await http2.aclose()
        await page.fire(ids["end"], "click")
        assert browser_room(app, page) == {} and httpx.get(f"{url}live/rooms/{room['code']}").json()["ended"]
        await http.aclose()

    proc_box = [proc]
    try:
        asyncio.run(scenario())
        assert "taken up again by its presenter" in log_of(proc_box[0])
    finally:
        stop_app(proc_box[0])


def test_room_creation_code_guessing_and_uploads_are_limited(bundled_checkpoint):
    proc, url = start_app()

    async def starts(n: int) -> list[str]:
        http, app, page = await presenter_page(url)
        ids, notes = live_parts(app), []
        for _ in range(n):
            await page.fire(ids["start"], "click")
            notes.append(str(page.values[ids["note"]] or ""))
            await page.fire(ids["end"], "click")
        await http.aclose()
        return notes

    try:
        notes = asyncio.run(starts(8))
        assert not any(notes[:6]) and all("Too many live sessions" in n for n in notes[6:])
        answers = [httpx.get(f"{url}live/rooms/ZZZZ{i:02d}").status_code for i in range(121)]
        assert answers[:120] == [404] * 120 and answers[120] == 429
        r = httpx.get(f"{url}live/rooms/ZZZZ99")
        assert r.status_code == 429 and "Too many unknown lecture codes" in r.json()["error"]
        assert 0 < int(r.headers["retry-after"]) <= 300
        # no component takes a file
        for path in ("gradio_api/upload", "upload", "gradio_api/process_recording"):
            r = httpx.post(url + path, files={"files": ("big.bin", b"x" * 2_000_000)})
            assert r.status_code == 403 and r.text == "This app takes no file uploads."
    finally:
        stop_app(proc)


def test_a_presenter_publishing_fast_is_sent_as_one_and_the_last_view_lands():
    from ui.live import PUBLISH_MIN_S, LiveRooms
    from ui.room_limits import RoomLimits
    from ui.room_watch import RoomWatch
    from ui.rooms import MemoryRooms
    rooms = MemoryRooms(keys=RoomKeys(b"k" * 32))
    live = LiveRooms(None, [], rooms, RoomWatch(rooms), RoomLimits())
    room = rooms.create()
    for step in range(1, 41):
        live.send(room, {**VIEW, "step": str(step)})
    deadline = time.monotonic() + 10
    while rooms.read(room[0]).state.get("step") != "40" and time.monotonic() < deadline:
        time.sleep(0.02)
    view = rooms.read(room[0])
    # 40 changes, at most a few publishes
    assert view.state["step"] == "40" and view.version <= 3
    assert PUBLISH_MIN_S > 0


def test_a_forged_secret_cannot_hold_back_or_close_a_room_and_waiting_pages_are_not_guessers():
    """The publish event can be called by hand with a room's public code: without the signed secret it changes
    nothing, neither the room nor the presenter's own publishing. A class polling the same lost code is not a
    guesser: a code counts once."""
    from ui.live import PUBLISH_MIN_S, LiveRooms
    from ui.room_limits import RoomLimits
    from ui.room_watch import RoomWatch
    from ui.rooms import MemoryRooms
    rooms = MemoryRooms(keys=RoomKeys(b"k" * 32))
    live = LiveRooms(None, [], rooms, RoomWatch(rooms), RoomLimits())
    room = rooms.create()
    assert live.send(room, VIEW) == "ok"
    forged = {"code": room[0], "secret": "junk.0123456789abcdef0123456789abcdef"}
    for _ in range(5):
        out = live.publish(forged, None, "Someone else's sentence.", "steps", "Viridis", "")
        assert all(o == {"__type__": "update"} for o in out)                    # gr.skip(): nothing changes
        assert live.end(forged, None)[-1] == ""
    assert rooms.read(room[0]).state == VIEW and room[0] not in live.pending and \
        live.outcomes[room[0]] == "ok"
    time.sleep(PUBLISH_MIN_S + 0.05)
    assert live.send(room, {**VIEW, "step": "3"}) == "ok" and rooms.read(room[0]).state["step"] == "3"
    limits = RoomLimits(misses="3 per minute", lockout="60 seconds")
    # one code, polled: no lock-out
    assert [limits.missed("school", "LOST42") for _ in range(50)] == [0] * 50
    assert [limits.missed("guesser", c) for c in ("AAAA11", "BBBB22", "CCCC33", "DDDD44")][-1] > 0


def test_behind_a_proxy_clients_are_told_apart_by_the_address_the_proxy_saw(monkeypatch):
    """On a Hugging Face Space every request comes from its proxy: the room limits count the address the proxy
    appended to X-Forwarded-For, not the proxy's own (one allowance for the whole Space), and what a client
    wrote in the header itself cannot make it pass for another."""
    from types import SimpleNamespace
    from ui.live_routes import client_of

    def request(forwarded=None):
        headers = {"x-forwarded-for": forwarded} if forwarded is not None else {}
        return SimpleNamespace(client=SimpleNamespace(host="10.0.0.9"), headers=headers)

    monkeypatch.delenv("APP_FORWARDED_HOPS", raising=False)
    monkeypatch.delenv("SPACE_ID", raising=False)
    # no proxy trusted: the header means nothing
    assert client_of(request("203.0.113.7")) == "10.0.0.9"
    monkeypatch.setenv("SPACE_ID", "someone/transformer-lecture")
    assert client_of(request("203.0.113.7")) == "203.0.113.7"
    # a forged entry stays on the left
    assert client_of(request("198.51.100.1, 203.0.113.7")) == "203.0.113.7"
    assert client_of(request()) == "10.0.0.9"                                  # no header: the connection's
    from starlette.datastructures import Headers                  # a forged line of its own, then the proxy's
    two_lines = Headers(raw=[(b"x-forwarded-for", b"198.51.100.1"), (b"x-forwarded-for", b"203.0.113.7")])
    assert client_of(SimpleNamespace(client=SimpleNamespace(host="10.0.0.9"), headers=two_lines)) == \
        "203.0.113.7"
    monkeypatch.setenv("APP_FORWARDED_HOPS", "2")
    assert client_of(request("198.51.100.1, 203.0.113.7, 10.1.1.1")) == "203.0.113.7"
    monkeypatch.setenv("APP_FORWARDED_HOPS", "0")
    assert client_of(request("203.0.113.7")) == "10.0.0.9"
