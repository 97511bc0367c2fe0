"""Live lecture: students' phones and laptops follow the presenter's view.

The presenter (presenter mode, "Start live session") creates a room (``rooms.py``): a short code, a link
``?follow=CODE`` and a QR code on screen, in a panel the presenter folds to one line. While the room runs, the
presenter's page publishes its view (the link parameters and the colour scale) with each change of its controls (and once a
second from a timer), server side, with the room's secret kept in the presenter's session state (never in a link). A student's link opens
the follower's page (``follow.py``: a light page outside Gradio) that listens to one stream, ``GET
/live/rooms/CODE/events``: each new view with its figures as data, built once per view and look in each app
process (``follow.ViewFrames``), read from the store once per room and process (``rooms.RoomWatch``). Where a
stream cannot be kept open the page polls ``GET /live/rooms/CODE/view`` (304 while nothing changed).
"""
from __future__ import annotations

import asyncio
import functools
import html
import io
import logging
import time

from typing import Optional

import gradio as gr
from fastapi import APIRouter, Request, Response          # gradio's own server
from fastapi.responses import JSONResponse, StreamingResponse

from transformer.viz import links

from .follow import Look, ViewFrames
from .links import link_controls
from .page import Page
from .rooms import RoomError, RoomStore, RoomWatch

log = logging.getLogger("app")
ROUTE = "/live/rooms"
PUBLISH_EVERY_S = 1.0         # the timer's publish: a safety net behind the change events and the moves
TIMER_QUIET_S = 10.0          # ...which stays quiet this long after one (the presenter's page may not show it yet)


def unavailable(e: Exception) -> JSONResponse:
    """503: the room store does not answer (Redis restarting): the follower's page says it reconnects, and retries."""
    log.warning("live rooms: the store does not answer: %s", e)
    return JSONResponse({"error": "The lecture's room cannot be read just now: retrying."}, status_code=503,
                        headers={"Cache-Control": "no-store", "Retry-After": "2"})


def gone(rooms: RoomStore, code: str) -> JSONResponse:
    """404 for a room that is not running: ended (it was a room) or unknown (a mistyped code)."""
    ended = rooms.known(code)
    code = str(code).upper()[:12]
    error = (f"The lecture {code} has ended." if ended else f"No lecture with code {code}: check the code.")
    return JSONResponse({"error": error, "ended": ended}, status_code=404, headers={"Cache-Control": "no-store"})


def live_routes(rooms: RoomStore, watch: RoomWatch, frames: ViewFrames) -> list:
    """The followers' routes (a room's stream of views, its current view with an ETag) and the room's QR code, for
    the app's FastAPI server. Given to it when it is built (``launch(app_kwargs={"routes": ...})``), so they answer
    from the server's first request: added after ``launch()``, a follower arriving in the first instant got a 404."""
    app = APIRouter()

    @app.get(ROUTE + "/{code}/events")
    async def room_events(code: str, request: Request):
        """Server-sent events: ``data: {"version", "state", "view"}`` with ``id: version`` for each new view (the
        current one first, unless the browser's Last-Event-ID says it has it; ``view``: its figures and text for
        the ``look`` and ``narrow`` the page asks for), ``event: end`` when the room ends, a comment every
        KEEP_ALIVE_S while nothing changes."""
        try:
            after = int(request.headers.get("last-event-id") or 0)
        except ValueError:
            after = 0
        look = Look.of(request.query_params)
        try:
            if await asyncio.to_thread(rooms.read, code) is None:
                return await asyncio.to_thread(gone, rooms, code)
        except Exception as e:  # noqa: BLE001  the store blinked
            return unavailable(e)

        async def stream():
            yield b"retry: 2000\n\n"
            async for view in watch.views(code, after):
                if view is None:
                    yield b"event: end\ndata: {}\n\n"
                    return
                if view.version < 0:
                    yield b": keep-alive\n\n"
                    continue
                yield await frames.frame(view, look)
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.get(ROUTE + "/{code}")
    def room_view(code: str, request: Request):
        """The room's view parameters (version and state), 304 while the browser has this version."""
        view = rooms.read(code)
        if view is None:
            return gone(rooms, code)
        etag = f'"{view.version}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return JSONResponse({"version": view.version, "state": view.state}, headers=headers)

    @app.get(ROUTE + "/{code}/view")
    async def room_view_drawn(code: str, request: Request):
        """The same with the view drawn for the page's look (the follower's page polls this where a stream
        cannot be kept open)."""
        try:
            view = await asyncio.to_thread(rooms.read, code)
            if view is None:
                return await asyncio.to_thread(gone, rooms, code)
        except Exception as e:  # noqa: BLE001  the store blinked
            return unavailable(e)
        look = Look.of(request.query_params)
        etag = f'"{view.version}-{int(look.dark)}{int(look.narrow)}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        frame = await frames.frame(view, look)
        return Response(frame[frame.index(b"data: ") + 6:-2], media_type="application/json", headers=headers)

    @app.get(ROUTE + "/{code}/qr.svg")
    def room_qr(code: str, request: Request):
        if rooms.read(code) is None:
            return Response(status_code=404)
        return Response(qr_svg(follow_url(str(request.base_url), code)), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=3600"})

    return app.routes


def follow_url(base: str, code: str) -> str:
    return base.rstrip("/") + "/?follow=" + code


def qr_svg(url: str) -> bytes:
    import qrcode
    import qrcode.image.svg
    buf = io.BytesIO()
    qrcode.make(url, image_factory=qrcode.image.svg.SvgPathFillImage, box_size=20, border=2).save(buf)
    return buf.getvalue()


def room_html(code: str) -> str:
    """What the presenter projects: the code, the link, the QR code (a student scans it or types the code). A
    <details>: the presenter folds it to one line (code and link) for the lecture, and opens it again."""
    c = html.escape(code)
    link = f'<a href="/?follow={c}" target="_blank"><span class="live-origin"></span>/?follow=<b>{c}</b></a>'
    return (f'<details class="live-room" open><summary><span class="live-code-line">Room <b>{c}</b></span> '
            f'<span class="live-link">{link}</span><span class="live-fold"></span></summary>'
            f'<div class="live-body"><img class="live-qr" alt="QR code of the follow link" src="{ROUTE}/{c}/qr.svg">'
            f'<div><div class="live-code">{c}</div><div class="live-note">Students scan the code, open the link, or '
            f'type the code in "Join a lecture" on the app\'s page: their page follows this one.</div></div></div>'
            f'</details>')


def view_state(page: Page, tabs: list, trace, text, tab, scale, values) -> dict:
    """The view on the presenter's screen as link parameters: what a follower's page applies."""
    view = {key: v for (tab_id, key, _), v in zip(link_controls(tabs), values) if tab_id == tab}
    shown = trace.source.text if trace is not None else str(text or "")
    return links.view_params(shown, tab, scale=scale, **view)


def wire_live(page: Page, tabs: list, current_tab, rooms: RoomStore, watch: RoomWatch, start_btn, end_btn,
              panel) -> None:
    """Start / end a room, and publish the presenter's view while it runs (the followers in this process are
    woken at once: ``watch.poke``)."""
    room = gr.State(None)                 # (code, secret): this presenter's page only
    timer = gr.Timer(PUBLISH_EVERY_S, active=False)
    controls = [c for *_, c in link_controls(tabs)]
    quiet = dict(api_visibility="private", queue=False)
    versions: dict[str, int] = {}         # the last version each room published from this process
    recent: dict[str, float] = {}         # when each room last published on a change (the timer waits after one)
    shown: dict[str, dict] = {}           # each room's last view on each tab: {code: {tab: state}}
    presenters: dict[str, tuple] = {}     # session hash -> (code, secret): for the moves announced by the server

    def start(room_v, request: gr.Request):
        if room_v is None:
            room_v = rooms.create()
        if request is not None and request.session_hash:
            presenters[request.session_hash] = room_v
        return (room_v, gr.update(value=room_html(room_v[0]), visible=True), gr.Timer(active=True),
                gr.update(visible=False), gr.update(visible=True))

    def end(room_v, request: gr.Request):
        if request is not None:
            presenters.pop(request.session_hash, None)
        if room_v is not None:
            try:
                rooms.end(*room_v)
            except RoomError:
                pass
            watch.poke(room_v[0])
            for kept in (versions, recent, shown):
                kept.pop(room_v[0], None)
        return (None, gr.update(value="", visible=False), gr.Timer(active=False), gr.update(visible=True),
                gr.update(visible=False))

    def send(room_v, state: dict) -> None:
        code = room_v[0]
        try:
            version = rooms.publish(*room_v, state)
        except RoomError as e:
            log.warning("live room: %s", e)
            if "no such room" in str(e):            # ended or expired: forget it here too
                for kept in (versions, recent, shown):
                    kept.pop(code, None)
            return
        except Exception as e:  # noqa: BLE001  the store blinked (Redis restarting): the presenter's page goes on
            log.warning("live room %s: publishing failed: %s", code, e)
            return
        shown.setdefault(code, {})[state["tab"]] = state
        if versions.get(code) != version:
            versions[code] = version
            watch.poke(code)

    def publish(room_v, trace, text, tab, scale, *values, timer_tick=False):
        if room_v is None or trace is None:
            return
        code = room_v[0]
        if timer_tick and time.monotonic() - recent.get(code, 0.0) < TIMER_QUIET_S:
            return                      # a change or a move published lately: the timer's values may be older
        if not timer_tick:
            recent[code] = time.monotonic()
        send(room_v, view_state(page, tabs, trace, text, tab, scale, values))

    def announce(request, trace, tab: str, step=None, view: Optional[dict] = None) -> None:
        """A presenter's move (Next, Previous, a tab opened) published from the server's handler of it, before the
        presenter's own page has drawn it: `view` (the tab's link values and the colour scale, as the handler got
        them), else that tab's view as last published; at the new step."""
        room_v = presenters.get(getattr(request, "session_hash", None) or "")
        if room_v is None or trace is None:
            return
        if view is not None:
            state = links.view_params(trace.source.text, tab, **view)
        else:
            state = dict(shown.get(room_v[0], {}).get(tab) or {})
            if state.get("text") != trace.source.text:
                state = {"text": trace.source.text}
            state["tab"] = tab
        if step is not None:
            state["step"] = str(step)
        recent[room_v[0]] = time.monotonic()
        send(room_v, state)
    page.announce = announce

    # While a room runs, the presenter's page carries the class "presenting": only then does a change send anything.
    start_btn.click(start, room, [room, panel, timer, start_btn, end_btn], **quiet).then(
        None, None, None, js="() => { document.body.classList.add('presenting'); }", **quiet)
    end_btn.click(end, room, [room, panel, timer, start_btn, end_btn], **quiet).then(
        None, None, None, js="() => { document.body.classList.remove('presenting'); }", **quiet)
    inputs = [room, page.trace, page.text, current_tab, page.look[2], *controls]
    # Published as soon as the presenter's page has a new value (each control's change, a new translation), and a
    # move or a tab by the server's handler of the click itself (``announce``, above); the timer is a safety net.
    # The changes reach the server through one off-screen button, pressed in the browser only on a presenting page:
    # every other page's Translate (a room of 100 students) sends no request for it.
    send_btn = gr.Button("publish", elem_id="live-publish", elem_classes="offscreen")
    gr.on([page.french.change, current_tab.change, page.look[2].change, *(c.change for c in controls)], None, None,
          None, js="() => { if (document.body.classList.contains('presenting')) "
                   "document.getElementById('live-publish').click(); }", **quiet)
    send_btn.click(publish, inputs, None, show_progress="hidden", trigger_mode="always_last", **quiet)
    timer.tick(functools.partial(publish, timer_tick=True), inputs, None, show_progress="hidden", **quiet)
