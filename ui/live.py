"""Live lecture: students' pages follow the presenter's view.

The presenter (presenter mode, "Start live session") creates a room (``rooms.py``): a short code, a link
``?follow=CODE`` and a QR code on screen. While the room runs, the presenter's page publishes its view (the
link parameters and the colour scale) twice a second from a timer, server side, with the room's secret kept
in the presenter's session state (never in a link). A follower's page listens to one small stream outside the
Gradio queue, ``GET /live/rooms/CODE/events`` (server-sent events: each new view as it is published, read from
the store once per room and process by ``rooms.RoomWatch``; the page falls back to polling ``GET
/live/rooms/CODE`` with an ETag, 304 while nothing changed, where a stream cannot be kept open), and applies a new view
through the same code as a link at page load, so its figures come from the shared caches. "Explore on my
own" stops applying changes (the page stays where it is), "Follow again" rejoins (ui/static/live.js).
"""
from __future__ import annotations

import asyncio
import html
import io
import json
import logging

import gradio as gr
from fastapi import APIRouter, Request, Response          # gradio's own server
from fastapi.responses import JSONResponse, StreamingResponse

from transformer.viz import links

from .links import link_controls
from .page import Page
from .rooms import RoomError, RoomStore, RoomWatch

log = logging.getLogger("app")
ROUTE = "/live/rooms"
PUBLISH_EVERY_S = 0.5


def live_routes(rooms: RoomStore) -> list:
    """The followers' route (a room's view, with an ETag) and the room's QR code, for the app's FastAPI server.
    Given to it when it is built (``launch(app_kwargs={"routes": ...})``), so they answer from the server's
    first request: added after ``launch()``, a follower arriving in the first instant got a 404."""
    app = APIRouter()
    watch = RoomWatch(rooms)

    @app.get(ROUTE + "/{code}/events")
    async def room_events(code: str, request: Request):
        """Server-sent events: ``data: {"version", "state"}`` with ``id: version`` for each new view (the
        current one first, unless the browser's Last-Event-ID says it has it), ``event: end`` when the room
        ends, a comment every KEEP_ALIVE_S while nothing changes."""
        try:
            after = int(request.headers.get("last-event-id") or 0)
        except ValueError:
            after = 0
        if await asyncio.to_thread(rooms.read, code) is None:
            return JSONResponse({"error": "no such room (it may have ended)"}, status_code=404,
                                headers={"Cache-Control": "no-store"})

        async def stream():
            yield "retry: 2000\n\n"
            async for view in watch.views(code, after):
                if view is None:
                    yield "event: end\ndata: {}\n\n"
                    return
                if view.version < 0:
                    yield ": keep-alive\n\n"
                    continue
                yield f"id: {view.version}\ndata: {json.dumps({'version': view.version, 'state': view.state})}\n\n"
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    @app.get(ROUTE + "/{code}")
    def room_view(code: str, request: Request):
        view = rooms.read(code)
        if view is None:
            return JSONResponse({"error": "no such room (it may have ended)"}, status_code=404,
                                headers={"Cache-Control": "no-store"})
        etag = f'"{view.version}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return JSONResponse({"version": view.version, "state": view.state}, headers=headers)

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
