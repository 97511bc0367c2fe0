"""Live lecture: students' phones and laptops follow the presenter's view.

The presenter (presenter mode, "Start live session") creates a room (``rooms.py``): a short code, a link
``?follow=CODE`` and a QR code on screen, in a panel the presenter folds to one line. While the room runs, the
presenter's page publishes its view (the link parameters and the colour scale) with each change of its
controls (and once a second from a timer), server side, with the room's secret kept in the presenter's session
state (never in a link). A student's link opens the follower's page (``follow.py``: a light page outside
Gradio) that listens to one stream, ``GET /live/rooms/CODE/events``: each new view with its figures as data,
built once per view and look in each app process (``follow.ViewFrames``), read from the store once per room
and process (``rooms.RoomWatch``). Where a stream cannot be kept open the page polls
``GET /live/rooms/CODE/view`` (304 while nothing changed).
"""
from __future__ import annotations

import html
import logging
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from typing import Optional

import gradio as gr

from transformer.viz import links

from .links import link_controls
from .page import Page
from .room_limits import RoomLimits
from .live_routes import ROUTE, client_of
from .room_watch import RoomWatch
from .rooms import NoSuchRoom, RoomError, RoomsFull, RoomStore, StoreDown

log = logging.getLogger("app")
PUBLISH_EVERY_S = 1.0         # the timer's publish: a safety net behind the change events and the moves
# ...which stays quiet this long after one (the presenter's page may not show it yet)
TIMER_QUIET_S = 10.0


def room_html(code: str) -> str:
    """What the presenter projects: the code, the link, the QR code (a student scans it or types the code). A
    <details>: the presenter folds it to one line (code and link) for the lecture, and opens it again."""
    c = html.escape(code)
    link = f'<a href="/?follow={c}" target="_blank"><span class="live-origin"></span>/?follow=<b>{c}</b></a>'
    return (f'<details class="live-room" open><summary><span class="live-code-line">Room <b>{c}</b></span> '
            f'<span class="live-link">{link}</span><span class="live-fold"></span></summary>'
            f'<div class="live-body"><img class="live-qr" alt="QR code of the follow link" '
            f'src="{ROUTE}/{c}/qr.svg"><div><div class="live-code">{c}</div><div class="live-note">Students '
            f'scan the code, open the link, or type the code in "Join a lecture" on the app\'s page: their '
            f'page follows this one.</div></div></div></details>')


def view_state(page: Page, tabs: list, trace, text, tab, scale, values) -> dict:
    """The view on the presenter's screen as link parameters: what a follower's page applies."""
    view = {key: v for (tab_id, key, _), v in zip(link_controls(tabs), values) if tab_id == tab}
    shown = trace.source.text if trace is not None else str(text or "")
    return links.view_params(shown, tab, scale=scale, **view)


# where the presenter's browser keeps its room (localStorage, gr.BrowserState)
ROOM_KEY = "transformer-live-room"
# "no room" in the browser (gr.BrowserState does not store a falsy value)
NO_ROOM: dict = {}
# a room publishes at most this often: faster changes are sent as one, the last
PUBLISH_MIN_S = 0.2
NOTES = {   # the presenter's status line under the live buttons (ui/static/presenter.css)
    "down": ("live-down",
             "Publishing is paused: the lecture room store does not answer. Students keep the last "
                          "view and are told the connection is interrupted; it resumes by itself."),
    "resumed": ("live-resumed", "Live session {code} resumed: the students' pages follow this page again."),
    "taken_up": ("live-resumed",
                 "Live session {code} taken up again after a restart: the students' pages find it "
                                 "by themselves."),
    "lost": ("live-lost",
             "Live session {code} has ended (a restart lost it, or it was ended elsewhere): start a "
                          "new one; students join with the new code."),
    "ended": ("live-lost", "Your last live session, {code}, is no longer running."),
    "resume": ("live-resume",
               "Your live session {code} is still open: Resume it to publish this page again."),
    "start_down": ("live-down",
                   "The live session could not start: the lecture room store does not answer. Try "
                                "again in a moment."),
    "end_down": ("live-down",
                 "The live session could not be ended: the lecture room store does not answer. Try "
                              "again in a moment."),
    "too_many": ("live-down",
                 "Too many live sessions were started from this network in the last minutes: try "
                              "again later, or resume the one you have."),
}


def note_html(kind: str, code: str = "", detail: str = "") -> str:
    if not kind:
        return ""
    cls, text = NOTES[kind] if kind in NOTES else ("live-down", detail)
    return f'<div class="live-note-line {cls}" role="status">{html.escape(text.format(code=code))}</div>'


def held(room_v, keys=None) -> Optional[tuple[str, str]]:
    """The (code, secret) a presenter's browser holds, or None (anything else it may send is no room). With
    `keys`, only a secret this app signed for that code counts: a forged one (an event called by hand with a
    room's public code) never reaches the room's bookkeeping, so it cannot hold back or close the real
    presenter's room."""
    if isinstance(room_v, dict) and isinstance(room_v.get("code"), str) and \
            isinstance(room_v.get("secret"), str):
        room = room_v["code"][:12].upper(), room_v["secret"][:200]
        return room if keys is None or keys.proves(*room) else None
    return None


class LiveRooms:
    """The presenter's side of live sessions in one app process: start (or resume) a room, publish the page's
    view to it (coalesced to one publish per PUBLISH_MIN_S; taken up again under its code when a restart lost
    it), end it. The room's (code, secret) lives in the presenter's browser, so it outlives
    the app process."""

    def __init__(self, page: Page, tabs: list, rooms: RoomStore, watch: RoomWatch,
                 limits: RoomLimits) -> None:
        self.page, self.tabs, self.rooms, self.watch, self.limits = page, tabs, rooms, watch, limits
        self.versions: dict[str, int] = {}      # the last version each room published from this process
        # when each room last published on a change (the timer waits after one)
        self.recent: dict[str, float] = {}
        self.shown: dict[str, dict] = {}        # each room's last view on each tab: {code: {tab: state}}
        # session hash -> (code, secret): for the moves announced by the server
        self.presenters: dict[str, tuple] = {}
        self.last_sent: dict[str, float] = {}
        self.pending: dict[str, tuple] = {}     # code -> (room, state) waiting for its PUBLISH_MIN_S
        self.outcomes: dict[str, str] = {}      # code -> how its last publish went (ok, taken_up, down, lost)
        self.lock = threading.Lock()
        self.mover = ThreadPoolExecutor(max_workers=2, thread_name_prefix="live-announce")

    def forget(self, code: str) -> None:
        for kept in (self.versions, self.recent, self.shown, self.pending, self.outcomes):
            kept.pop(code, None)

    def opened(self, room: tuple) -> tuple:
        """The page's live controls for a running room: (room, panel, timer, start, end)."""
        return ({"code": room[0], "secret": room[1]}, gr.update(value=room_html(room[0]), visible=True),
                gr.Timer(active=True), gr.update(visible=False, value="Start live session"),
                gr.update(visible=True))

    def closed(self) -> tuple:
        return (NO_ROOM, gr.update(value="", visible=False), gr.Timer(active=False),
                gr.update(visible=True, value="Start live session"), gr.update(visible=False))

    def start(self, room_v, request: gr.Request) -> tuple:
        """Start a room, or resume the one this browser holds (taken up again if a restart lost it)."""
        room, note = held(room_v, self.rooms.keys), ""
        try:
            if room is not None and (self.rooms.owns(*room) or self.rooms.adopt(*room)):
                note = "resumed"
            else:
                if not self.limits.may_create(client_of(request)):
                    return (*[gr.skip()] * 5, note_html("too_many"))
                room = self.rooms.create()
        except StoreDown:
            return (*[gr.skip()] * 5, note_html("start_down"))
        except RoomsFull as e:
            return (*[gr.skip()] * 5, note_html("", detail=f"The live session could not start: {e}."))
        if request is not None and request.session_hash:
            self.presenters[request.session_hash] = room
        return (*self.opened(room), note_html(note, room[0]))

    def end(self, room_v, request: gr.Request) -> tuple:
        room = held(room_v, self.rooms.keys)
        if request is not None:
            self.presenters.pop(request.session_hash, None)
        if room is not None:
            try:
                self.freeze_question(room)
                self.rooms.end(*room)
            except StoreDown:
                return (*[gr.skip()] * 5, note_html("end_down"))
            except RoomError:
                pass
            self.watch.poke(room[0])
            self.forget(room[0])
        return (*self.closed(), "")

    def freeze_question(self, room: tuple) -> None:
        """A question still open when the session ends keeps its counts as they stand (its download after)."""
        try:
            view = self.rooms.read(room[0])
            if view is not None and view.question and view.question.get("status") == "open":
                self.rooms.close(*room, view.question["id"], self.rooms.followers(room[0]), False)
        except RoomError:
            pass

    def check(self, room_v) -> tuple:
        """A page opens: a room this browser holds is offered to resume (Start says so), or said to have
        ended."""
        room = held(room_v)
        if room is None:
            return gr.skip(), gr.skip(), gr.skip()
        try:
            # running, or lost and takeable again
            if self.rooms.owns(*room) or self.rooms.keys.proves(*room):
                return (gr.skip(), gr.update(value=f"Resume live session {room[0]}"),
                        note_html("resume", room[0]))
        except StoreDown:
            return gr.skip(), gr.skip(), note_html("start_down")
        return NO_ROOM, gr.skip(), note_html("ended", room[0])

    def deliver(self, room: tuple, state: dict) -> str:
        """Publish now: "ok", "taken_up" (a restart had lost the room: made again), "down" or "lost"."""
        outcome = self._deliver(room, state)
        if outcome != "lost":
            self.outcomes[room[0]] = outcome
        return outcome

    def _deliver(self, room: tuple, state: dict) -> str:
        code, outcome = room[0], "ok"
        try:
            try:
                version = self.rooms.publish(*room, state)
            except NoSuchRoom:
                if self.rooms.adopt(*room):
                    log.warning("live room %s: taken up again by its presenter (a restart had lost it)", code)
                    outcome = "taken_up"
                # (made meanwhile by another tab or request: fine)
                version = self.rooms.publish(*room, state)
        except StoreDown:
            return "down"
        except RoomError as e:          # ended by its presenter, or no room left for it
            log.warning("live room %s: %s", code, e)
            self.forget(code)
            return "lost"
        self.shown.setdefault(code, {})[state["tab"]] = state
        if self.versions.get(code) != version:
            self.versions[code] = version
            self.watch.poke(code)
        return outcome

    def send(self, room: tuple, state: dict) -> str:
        """Publish, at most once per PUBLISH_MIN_S per room: a faster change waits, and only the last one
        goes."""
        code = room[0]
        with self.lock:
            wait = self.last_sent.get(code, -PUBLISH_MIN_S) + PUBLISH_MIN_S - time.monotonic()
            if wait > 0:
                if code not in self.pending:
                    threading.Timer(wait, self.flush, [code]).start()
                self.pending[code] = (room, state)
                return self.outcomes.get(code, "ok")     # as the last one went: the page's status stays true
            self.last_sent[code] = time.monotonic()
        return self.deliver(room, state)

    def flush(self, code: str) -> None:
        with self.lock:
            room, state = self.pending.pop(code, (None, None))
            if room is None:
                return
            self.last_sent[code] = time.monotonic()
        self.deliver(room, state)

    def publish(self, room_v, trace, text, tab, scale, note, *values, timer_tick=False,
                request=None) -> tuple:
        """The presenter's page's view, published; the page's live controls change only when the outcome
        does."""
        room = held(room_v, self.rooms.keys)
        skip = (gr.skip(),) * 6
        if room is None or (trace is None and not str(text or "").strip()):
            return skip
        code = room[0]
        if timer_tick and time.monotonic() - self.recent.get(code, 0.0) < TIMER_QUIET_S:
            return skip                 # a change or a move published lately: the timer's values may be older
        if not timer_tick:
            self.recent[code] = time.monotonic()
        if request is not None and request.session_hash:
            self.presenters[request.session_hash] = room
        outcome = self.send(room, view_state(self.page, self.tabs, trace, text, tab, scale, values))
        if outcome == "lost":
            return (*self.closed(), note_html("lost", code))
        if outcome == "ok":
            return (*skip[:5], "" if "live-down" in str(note or "") else gr.skip())
        shown = note_html(outcome, code)
        return (*skip[:5], gr.skip() if shown == note else shown)

    def announce(self, request, trace, tab: str, step=None, view: Optional[dict] = None) -> None:
        """A presenter's move (Next, Previous, a tab opened) published from the server's handler of it, before
        the presenter's own page has drawn it: `view` (the tab's link values and the colour scale, as the
        handler got them), else that tab's view as last published; at the new step."""
        room = self.presenters.get(getattr(request, "session_hash", None) or "")
        if room is None or trace is None:
            return
        if view is not None:
            state = links.view_params(trace.source.text, tab, **view)
        else:
            state = dict(self.shown.get(room[0], {}).get(tab) or {})
            if state.get("text") != trace.source.text:
                state = {"text": trace.source.text}
            state["tab"] = tab
        if step is not None:
            state["step"] = str(step)
        self.recent[room[0]] = time.monotonic()
        self.mover.submit(self.send, room, state)     # the move's own handler never waits on the store


def wire_live(demo, page: Page, tabs: list, current_tab, rooms: RoomStore, watch: RoomWatch, start_btn,
              end_btn, panel, note, limits: Optional[RoomLimits] = None) -> LiveRooms:
    """Start / resume / end a room, and publish the presenter's view while it runs (the followers in this
    process are woken at once: ``watch.poke``)."""
    live = LiveRooms(page, tabs, rooms, watch, limits or RoomLimits())
    # (code, secret) in the presenter's browser: it survives a reload and a restart of the app. A fixed key
    # (the value is the presenter's own, sent with each event) so that a restarted app reads it.
    room = gr.BrowserState(NO_ROOM, storage_key=ROOM_KEY,
                           secret=os.environ.get("APP_BROWSER_STATE_KEY", ROOM_KEY))
    # the room's questions (ui/votes.py) are asked with the same secret
    live.room = room
    timer = gr.Timer(PUBLISH_EVERY_S, active=False)
    controls = [c for *_, c in link_controls(tabs)]
    quiet = dict(api_visibility="private", queue=False)
    page.announce = live.announce
    live_outputs = [room, panel, timer, start_btn, end_btn, note]
    # the page presents while its panel shows a room (read once Gradio has drawn the outputs)
    presenting = ("() => { setTimeout(() => document.body.classList.toggle('presenting', "
                  "!!document.querySelector('#live-panel .live-room')), 0); }")
    demo.load(live.check, room, [room, start_btn, note], **quiet)
    # While a room runs, the presenter's page carries the class "presenting": only then does a
    # change send anything.
    start_btn.click(live.start, room, live_outputs, **quiet).then(None, None, None, js=presenting, **quiet)
    end_btn.click(live.end, room, live_outputs, **quiet).then(None, None, None, js=presenting, **quiet)
    inputs = [room, page.trace, page.text, current_tab, page.look[2], note, *controls]
    # Published as soon as the presenter's page has a new value (each control's change, a new translation),
    # and a move or a tab by the server's handler of the click itself (``announce``, above); the timer is a
    # safety net. The changes reach the server through one off-screen button, pressed in the browser only on a
    # presenting page: every other page's Translate (a room of 100 students) sends no request for it.
    send_btn = gr.Button("publish", elem_id="live-publish", elem_classes="offscreen")
    gr.on([page.french.change, current_tab.change, page.look[2].change, *(c.change for c in controls)], None,
          None, None, js="() => { if (document.body.classList.contains('presenting')) "
                   "document.getElementById('live-publish').click(); }", **quiet)

    def publish(request: gr.Request, *args):
        return live.publish(*args, request=request)

    def tick(request: gr.Request, *args):
        return live.publish(*args, timer_tick=True, request=request)
    # The values as the page sent them (preprocess=False): after a restart of the app a control's range is
    # back to the one it was built with (a step slider's 1-2), and the page's own step 7 must still
    # reach the room.
    raw = dict(preprocess=False, show_progress="hidden", **quiet)
    send_btn.click(publish, inputs, live_outputs, trigger_mode="always_last", **raw).then(
        None, None, None, js=presenting, **quiet)
    timer.tick(tick, inputs, live_outputs, **raw).then(None, None, None, js=presenting, **quiet)
    return live
