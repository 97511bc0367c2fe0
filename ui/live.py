"""Live lecture: students' pages follow the presenter's view.

The presenter (presenter mode, "Start live session") creates a room (``rooms.py``): a short code, a link
``?follow=CODE`` and a QR code on screen. While the room runs, the presenter's page publishes its view (the
link parameters and the colour scale) twice a second from a timer, server side, with the room's secret kept
in the presenter's session state (never in a link). A follower's page asks one small route outside the
Gradio queue, ``GET /live/rooms/CODE?wait=S`` with an ETag: a long poll, answered as soon as the view changes
(or with 304 after S seconds of no change), so a change reaches every follower at once and none skips a view
while it waits. One watcher per room and process reads the store (``RoomWatch``), however many follow. The
page applies a new view through the same code as a link at page load, so its figures come from the shared
caches. "Explore on my own" stops applying changes (the page stays where it is), "Follow again" rejoins
(ui/static/live.js).
"""
from __future__ import annotations

import asyncio
import html
import io
import json
import logging
import time
from typing import Optional

import gradio as gr
from fastapi import Request, Response          # gradio's own server
from fastapi.responses import JSONResponse

from transformer.viz import links

from .links import link_controls
from .page import Page
from .rooms import RoomError, RoomStore, RoomView

log = logging.getLogger("app")
ROUTE = "/live/rooms"
PUBLISH_EVERY_S = 0.5
MAX_WAIT_S = 30.0     # the longest a follower's request is held open without a change
CHECK_EVERY_S = 0.1   # how often a room's watcher reads the store while followers wait


class RoomWatch:
    """Followers waiting for a room's next view, in this process: one watcher task per room reads the store every
    CHECK_EVERY_S while anyone waits (in a thread: a Redis read blocks) and wakes them all at once when the
    version changes or the room ends. So 200 followers cost one store read per room per check, not 200."""

    def __init__(self, rooms: RoomStore, check_s: float = CHECK_EVERY_S) -> None:
        self.rooms, self.check_s = rooms, check_s
        self._changed: dict[str, asyncio.Event] = {}     # code -> set when its version moves past `_seen`
        self._seen: dict[str, Optional[int]] = {}
        self._waiting: dict[str, int] = {}
        self._watchers: dict[str, asyncio.Task] = {}          # one a room, while anyone waits

    async def read(self, code: str) -> Optional[RoomView]:
        return await asyncio.to_thread(self.rooms.read, code)

    async def _watch(self, code: str) -> None:
        try:
            while self._waiting.get(code):
                view = await self.read(code)
                version = view.version if view is not None else None
                if version != self._seen.get(code):
                    self._seen[code] = version
                    self._changed.pop(code, asyncio.Event()).set()
                await asyncio.sleep(self.check_s)
        finally:
            self._watchers.pop(code, None)
            self._seen.pop(code, None)
            self._changed.pop(code, asyncio.Event()).set()   # nobody waits on a room nobody watches

    async def next_view(self, code: str, version: int, wait_s: float) -> Optional[RoomView]:
        """The room's view once its version is no longer `version` (None: it ended), or the same view after
        `wait_s` seconds without a change."""
        deadline = time.monotonic() + wait_s
        self._waiting[code] = self._waiting.get(code, 0) + 1
        try:
            if code not in self._watchers:
                self._seen[code] = version
                self._watchers[code] = asyncio.get_running_loop().create_task(self._watch(code))
            while True:
                view = await self.read(code)
                if view is None or view.version != version or time.monotonic() >= deadline:
                    return view
                event = self._changed.setdefault(code, asyncio.Event())
                try:
                    await asyncio.wait_for(event.wait(), deadline - time.monotonic())
                except asyncio.TimeoutError:
                    pass
        finally:
            self._waiting[code] -= 1
            if not self._waiting[code]:
                del self._waiting[code]


def add_routes(app, rooms: RoomStore) -> None:
    """The followers' route (a room's view, with an ETag; ``?wait=S``: held until it changes) and the room's
    QR code, on the app's FastAPI server."""
    watch = RoomWatch(rooms)

    @app.get(ROUTE + "/{code}")
    async def room_view(code: str, request: Request, wait: float = 0.0):
        code = code.upper()
        view = await watch.read(code)
        seen = request.headers.get("if-none-match")
        if view is not None and wait > 0 and seen == f'"{view.version}"':
            view = await watch.next_view(code, view.version, min(float(wait), MAX_WAIT_S))
        if view is None:
            return JSONResponse({"error": "no such room (it may have ended)"}, status_code=404,
                                headers={"Cache-Control": "no-store"})
        etag = f'"{view.version}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if seen == etag:
            return Response(status_code=304, headers=headers)
        return JSONResponse({"version": view.version, "state": view.state}, headers=headers)

    @app.get(ROUTE + "/{code}/qr.svg")
    def room_qr(code: str, request: Request):   # a plain def: FastAPI runs it in a thread (a Redis read blocks)
        if rooms.read(code) is None:
            return Response(status_code=404)
        return Response(qr_svg(follow_url(str(request.base_url), code)), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=3600"})


def follow_url(base: str, code: str) -> str:
    return base.rstrip("/") + "/?follow=" + code


def qr_svg(url: str) -> bytes:
    import qrcode
    import qrcode.image.svg
    buf = io.BytesIO()
    qrcode.make(url, image_factory=qrcode.image.svg.SvgPathFillImage, box_size=20, border=2).save(buf)
    return buf.getvalue()


def room_html(code: str) -> str:
    """What the presenter projects: the code, the link, the QR code (a student scans it or types the code)."""
    c = html.escape(code)
    return (f'<div class="live-room"><img class="live-qr" alt="QR code of the follow link" '
            f'src="{ROUTE}/{c}/qr.svg"><div><div class="live-code">{c}</div><div class="live-link">Follow: '
            f'<a href="/?follow={c}" target="_blank"><span class="live-origin"></span>/?follow={c}</a></div>'
            f'<div class="live-note">Students open the link or scan the code: their page follows this one.</div>'
            f'</div></div>')


def view_state(page: Page, tabs: list, trace, text, tab, scale, values) -> dict:
    """The view on the presenter's screen as link parameters: what a follower's page applies."""
    view = {key: v for (tab_id, key, _), v in zip(link_controls(tabs), values) if tab_id == tab}
    shown = trace.source.text if trace is not None else str(text or "")
    return links.view_params(shown, tab, scale=scale, **view)


def wire_live(page: Page, tabs: list, current_tab, rooms: RoomStore, start_btn, end_btn, panel) -> None:
    """Start / end a room, and publish the presenter's view while it runs."""
    room = gr.State(None)                 # (code, secret): this presenter's page only
    timer = gr.Timer(PUBLISH_EVERY_S, active=False)
    controls = [c for *_, c in link_controls(tabs)]
    quiet = dict(api_visibility="private", queue=False)

    def start(room_v):
        if room_v is not None:
            return room_v, gr.update(), gr.Timer(active=True)
        code, secret = rooms.create()
        return (code, secret), gr.update(value=room_html(code), visible=True), gr.Timer(active=True)

    def end(room_v):
        if room_v is not None:
            try:
                rooms.end(*room_v)
            except RoomError:
                pass
        return None, gr.update(value="", visible=False), gr.Timer(active=False)

    def publish(room_v, trace, text, tab, scale, *values):
        if room_v is None or trace is None:
            return
        try:
            rooms.publish(*room_v, view_state(page, tabs, trace, text, tab, scale, values))
        except RoomError as e:
            log.warning("live room: %s", e)

    start_btn.click(start, room, [room, panel, timer], **quiet)
    end_btn.click(end, room, [room, panel, timer], **quiet)
    timer.tick(publish, [room, page.trace, page.text, current_tab, page.look[2], *controls], None,
               show_progress="hidden", **quiet)


def follow_params(params: dict, rooms: RoomStore) -> tuple[dict, list[str]]:
    """A ``?follow=CODE`` link: the room's view as link parameters (and a note when the room is gone)."""
    code = str(params.get("follow") or "").strip().upper()
    if not code:
        return params, []
    view = rooms.read(code)
    if view is None or not view.state:
        return {k: v for k, v in params.items() if k != "follow"}, [
            f"Room {code[:12]} has no view yet or has ended: showing the app on its own."]
    return dict(view.state), []


def state_params(state_json: str) -> dict:
    """The view a follower's page received (JSON from the room's route), as link parameters."""
    try:
        state = json.loads(state_json or "{}")
    except json.JSONDecodeError:
        return {}
    return {k: str(v) for k, v in state.items()} if isinstance(state, dict) else {}
