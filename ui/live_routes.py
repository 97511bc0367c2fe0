"""The followers' routes of a live lecture (no gradio here: plain FastAPI routes on Gradio's own server).

``GET /live/rooms/CODE/events``: the room's views as server-sent events, each with its figures as data for the
page's look; ``GET /live/rooms/CODE``: its view parameters with an ETag; ``GET /live/rooms/CODE/view``: the
same drawn, for pages that poll; ``GET /live/rooms/CODE/qr.svg``: the follow link's QR code;
``POST /live/rooms/CODE/answer``: a student's answer to the room's open question (``votes.py``). Every route
looks the room up the same way (``FollowerRoutes.lookup``): 429 for a client locked out (too many unknown
codes), 503 while the store does not answer, 404 for a room that is not running (an unknown code counts
against the client).
"""
from __future__ import annotations

import asyncio
import io
import json
import re
from typing import Callable, Optional

from fastapi import APIRouter, Request, Response          # gradio's own server
from fastapi.responses import JSONResponse, StreamingResponse

from .follow import Look, ViewFrames
from .room_limits import RoomLimits
from .room_watch import KEEP_ALIVE, TROUBLES, RoomWatch
from transformer.votes import Question, VoteError, accept

from .rooms import NoSuchRoom, QuestionClosed, RoomStore, StoreDown, digest
from .settings import forwarded_hops

ROUTE = "/live/rooms"
# what a follower's stream is told besides views (ui/static/follow.js)
EVENTS = [(marker, f"event: {name}\ndata: {{}}\n\n".encode()) for name, marker in
          (("interrupted", TROUBLES["down"]), ("lost", TROUBLES["lost"]), ("resumed", TROUBLES[None]))]
MAX_ANSWER_BYTES = 1024        # an answer's body: {"student", "question", "answer": {"option"} or {"typed"}}
STUDENT = re.compile(r"[A-Za-z0-9_-]{16,64}")   # a student's token: random, made by the follower's page
# a room made that has shown nothing yet (just started or taken up again)
NOT_YET = {"Cache-Control": "no-cache"}


def unavailable() -> JSONResponse:
    """503: the room store does not answer (Redis stopped or restarting; the store logs it once): the
    follower's page keeps its last view, says the connection is interrupted, and retries."""
    return JSONResponse({"error": "The live connection is interrupted (the lecture's room cannot be read "
                                  "just now): retrying.", "interrupted": True}, status_code=503,
                        headers={"Cache-Control": "no-store", "Retry-After": "2"})


def locked_out(seconds: int) -> JSONResponse:
    """429: this client asked for too many codes that name no room."""
    return JSONResponse({"error": f"Too many unknown lecture codes from this network: try again in {seconds} "
                                  f"s.",
                         "locked": seconds}, status_code=429,
                        headers={"Cache-Control": "no-store", "Retry-After": str(seconds)})


def client_of(request) -> str:
    """Who asks, for the room limits: the connection's address, or behind `forwarded_hops()` trusted proxies
    the address the outermost of them saw (X-Forwarded-For's entry that many from the right: what a client
    writes in the header itself stays to the left of it, so it cannot pass for another client)."""
    hops = forwarded_hops()
    if hops:
        headers = getattr(request, "headers", None) or {}
        lines = (headers.getlist("x-forwarded-for") if hasattr(headers, "getlist")
                 else [headers.get("x-forwarded-for", "")])
        # a header sent twice: both
        chain = [a.strip() for a in ",".join(map(str, lines)).split(",") if a.strip()]
        if len(chain) >= hops:
            return chain[-hops][:64]
    client = getattr(request, "client", None)
    return getattr(client, "host", None) or "unknown"


async def read_at_most(request: Request, limit: int) -> Optional[bytes]:
    """The request's body, or None past `limit` bytes (said by its Content-Length, or found while reading
    it)."""
    try:
        if int(request.headers.get("content-length") or 0) > limit:
            return None
    except ValueError:
        return None
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return body


def refusal(error: str, status: int) -> JSONResponse:
    return JSONResponse({"error": error}, status_code=status, headers={"Cache-Control": "no-store"})


def gone(rooms: RoomStore, code: str) -> JSONResponse:
    """404 for a room that is not running: ended (it was a room) or unknown (a mistyped code, or a room a
    restart lost: the page of a student who was following waits for its presenter to take it up again)."""
    ended = rooms.known(code)
    code = str(code).upper()[:12]
    error = (f"The lecture {code} has ended." if ended else f"No lecture with code {code}: check the code.")
    return JSONResponse({"error": error, "ended": ended}, status_code=404,
                        headers={"Cache-Control": "no-store"})


def follow_url(base: str, code: str) -> str:
    return base.rstrip("/") + "/?follow=" + code


def qr_svg(url: str) -> bytes:
    import qrcode
    import qrcode.image.svg
    buf = io.BytesIO()
    qrcode.make(url, image_factory=qrcode.image.svg.SvgPathFillImage, box_size=20, border=2).save(buf)
    return buf.getvalue()


class FollowerRoutes:
    """The routes, over one room store, one watcher of rooms, one cache of drawn views and the clients'
    limits."""

    def __init__(self, rooms: RoomStore, watch: RoomWatch, frames: ViewFrames,
                 limits: Optional[RoomLimits] = None, known_piece: Optional[Callable] = None) -> None:
        self.rooms, self.watch, self.frames, self.limits = rooms, watch, frames, limits or RoomLimits()
        self.known_piece = known_piece          # a typed word as one piece of the vocabulary, or None

    async def lookup(self, code: str, request: Request):
        """(the room's view, None) or (None, the answer that refuses it)."""
        client = client_of(request)
        locked = self.limits.locked_for(client)
        if locked:
            return None, locked_out(locked)
        try:
            view = await asyncio.to_thread(self.rooms.read, code)
            if view is not None:
                return view, None
            answer = await asyncio.to_thread(gone, self.rooms, code)
        except StoreDown:
            return None, unavailable()
        if not json.loads(answer.body)["ended"]:
            locked = self.limits.missed(client, str(code).upper()[:12])
            if locked:
                return None, locked_out(locked)
        return None, answer

    async def events(self, code: str, request: Request):
        """Server-sent events: ``data: {"version", "state", "view"}`` with ``id: version`` for each new view
        (the current one first, unless the browser's Last-Event-ID says it has it; ``view``: its figures and
        text for the ``look`` and ``narrow`` the page asks for), ``event: end`` when the room ends,
        ``event: interrupted`` when the store stops answering, ``event: lost`` when the room vanished without
        an end (its presenter takes it up again), ``event: resumed`` when that is over, a comment every
        KEEP_ALIVE_S while nothing changes."""
        try:
            after = int(request.headers.get("last-event-id") or 0)
        except ValueError:
            after = 0
        look = Look.of(request.query_params)
        _, refused = await self.lookup(code, request)
        if refused is not None:
            return refused

        async def stream():
            yield b"retry: 2000\n\n"
            async for view in self.watch.views(code, after):
                if view is None:
                    yield b"event: end\ndata: {}\n\n"
                    return
                if view is KEEP_ALIVE:
                    yield b": keep-alive\n\n"
                elif any(view is marker for marker, _ in EVENTS):
                    yield next(said for marker, said in EVENTS if view is marker)
                else:
                    yield await self.frames.frame(view, look)
        return StreamingResponse(stream(), media_type="text/event-stream",
                                 headers={"Cache-Control": "no-store", "X-Accel-Buffering": "no"})

    async def view(self, code: str, request: Request):
        """The room's view parameters (version and state), 304 while the browser has this version (or while
        the room has shown nothing yet)."""
        view, refused = await self.lookup(code, request)
        if refused is not None:
            return refused
        if not view.state:
            return Response(status_code=304, headers=NOT_YET)
        etag = f'"{view.version}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        return JSONResponse({"version": view.version, "state": view.state}, headers=headers)

    async def view_drawn(self, code: str, request: Request):
        """The same with the view drawn for the page's look (the follower's page polls this where a stream
        cannot be kept open)."""
        view, refused = await self.lookup(code, request)
        if refused is not None:
            return refused
        if not view.state:
            return Response(status_code=304, headers=NOT_YET)
        look = Look.of(request.query_params)
        etag = f'"{view.version}-{int(look.dark)}{int(look.narrow)}"'
        headers = {"ETag": etag, "Cache-Control": "no-cache"}
        if request.headers.get("if-none-match") == etag:
            return Response(status_code=304, headers=headers)
        frame = await self.frames.frame(view, look)
        return Response(frame[frame.index(b"data: ") + 6:-2], media_type="application/json", headers=headers)

    async def answer(self, code: str, request: Request):
        """A student's answer:
        ``{"student": token, "question": id, "answer": {"option": i} | {"typed": word}}``. 200
        ``{"ok", "key", "label", "replaced"}`` once stored (one answer per student token: a second replaces
        the first); 400 for an answer the question cannot take, 409 once the question is closed, 413, 429, and
        the room's own refusals (404, 503), each with a message the page shows."""
        body = await read_at_most(request, MAX_ANSWER_BYTES)
        if body is None:
            return refusal("An answer is a few words at most.", 413)
        try:
            sent = json.loads(body)
            student, qid = str(sent["student"]), sent["question"]
            if not STUDENT.fullmatch(student) or isinstance(qid, bool) or not isinstance(qid, int):
                raise ValueError
        except (ValueError, KeyError, TypeError):
            return refusal("This answer could not be read: reload the page and answer again.", 400)
        if not self.limits.may_answer(client_of(request), student):
            return refusal("Too many answers in a few seconds: wait a moment, then answer again.", 429)
        view = self.watch.current(code)
        if view is None or not view.question or view.question.get("id") != qid:
            view, refused = await self.lookup(code, request)      # (the watcher's copy may be a moment old)
            if refused is not None:
                return refused
        if not view.question or view.question.get("id") != qid or view.question.get("status") != "open":
            return refusal("Answers to this question are closed.", 409)
        q = Question.of(view.question)
        try:
            key = accept(q, sent.get("answer"), self.known_piece)
            replaced = await asyncio.to_thread(self.rooms.answer, code, qid, digest(student)[:32], key)
        except VoteError as e:
            return refusal(str(e), 400)
        except QuestionClosed as e:
            return refusal(f"Not counted: {e}.", 409)
        except NoSuchRoom:
            return await asyncio.to_thread(gone, self.rooms, code)
        except StoreDown:
            return unavailable()
        return JSONResponse({"ok": True, "question": qid, "key": key, "label": q.label(key),
                             "replaced": replaced},
                            headers={"Cache-Control": "no-store"})

    async def qr(self, code: str, request: Request):
        _, refused = await self.lookup(code, request)
        if refused is not None:
            return refused
        return Response(qr_svg(follow_url(str(request.base_url), code)), media_type="image/svg+xml",
                        headers={"Cache-Control": "max-age=3600"})


def live_routes(rooms: RoomStore, watch: RoomWatch, frames: ViewFrames, limits: Optional[RoomLimits] = None,
                known_piece: Optional[Callable] = None) -> list:
    """The followers' routes and the room's QR code, for the app's FastAPI server. Given to it when it is
    built (``launch(app_kwargs={"routes": ...})``), so they answer from the server's first request: added
    after ``launch()``, a follower arriving in the first instant got a 404."""
    routes, app = FollowerRoutes(rooms, watch, frames, limits, known_piece), APIRouter()
    app.get(ROUTE + "/{code}/events")(routes.events)
    app.get(ROUTE + "/{code}")(routes.view)
    app.get(ROUTE + "/{code}/view")(routes.view_drawn)
    app.get(ROUTE + "/{code}/qr.svg")(routes.qr)
    app.post(ROUTE + "/{code}/answer")(routes.answer)
    return app.routes
