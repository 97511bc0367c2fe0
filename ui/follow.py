"""A follower's page: the room's view on a light page of its own, outside Gradio (ui/static/follow.html).

A student opening ``/?follow=CODE`` (the link and QR code the presenter projects) gets a small static page
(``FollowPage``, ahead of Gradio's own ``/``: no page config, no Gradio session, no event per change). It
listens to ``GET /live/rooms/CODE/events?look=light|dark&narrow=0|1``: each of the room's views arrives with
its figures as data (Plotly JSON) and its text, drawn in the student's browser by plotly.js. The figures
are built once per view and look in each app process (``ViewFrames``: a follower costs the server a write of
bytes already made), from the same tab drawings and caches as the app's own pages (``FollowerViews``).
"Explore on my own" opens the full app on the same view.
"""
from __future__ import annotations

import asyncio
import gzip
import hashlib
import json
import logging
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional
from urllib.parse import parse_qs

import gradio as gr
from gradio.components.plot import PlotData
from markdown_it import MarkdownIt

from transformer import examples
from transformer.serving.translator import Translator
from transformer.viz import links
from transformer.viz.figure import COLORSCALES, DEFAULT_SCALE
from transformer.votes import Question

from .links import link_updates
from .train_live import CHOICE_LIST
from .page import KIND_CHOICES, Page, TabView, update_value
from .rooms import RoomView
from .tabs import DEFAULT_TAB, TAB_IDS, TABS

log = logging.getLogger("app")
STATIC = Path(__file__).resolve().parent / "static"
FRAMES_KEPT = 48                 # views x looks kept per process (a lecture's last few views, every look)
# outputs the app keeps folded away (an accordion): never on a follower's page
SKIPPED_OUTPUTS = {"kv-cache"}
MARKDOWN = MarkdownIt("commonmark", {"html": False}).enable("table")   # markup in a view's text stays text
KIND_WORDS = {kind: f"{label.lower()}-attention" for label, kind in KIND_CHOICES}   # "encoder self-attention"
TOY_TITLES = {name: title for title, name in CHOICE_LIST}   # Compare's design choices, by link value
VEILED = ("tab", "title", "where", "text")   # what a follower is sent of the view while a question is open
TITLES = {tab_id: title for title, tab_id, _ in TABS} | {"about": "About the model"}


@dataclass(frozen=True)
class Look:
    """How a follower's browser draws: its own light or dark, and a phone's column or a wider screen."""

    dark: bool = False
    narrow: bool = False

    @classmethod
    def of(cls, params) -> "Look":
        return cls(str(params.get("look", "")).lower() == "dark",
                   str(params.get("narrow", "")) in ("1", "true"))


class FollowerViews:
    """A room's view (its link parameters) as a follower's page shows it: the sentence, the translation, the
    tab's title and where it stands, and the tab's own figures and text, drawn by the tab's draw function (the
    shared drawings every page uses: ``page.DRAWS``) for the follower's look."""

    def __init__(self, page: Page, tabs: list[TabView], translator: Translator) -> None:
        self.page, self.translator = page, translator
        self.tabs = {tab.tab_id: tab for tab in tabs}

    def controls(self, tab: TabView, q: links.ViewQuery, trace) -> list:
        """The tab's control values for the view: the link's, else the control's own default."""
        updates, _, step = link_updates(self.page, q, tab, trace)
        keys = {id(c): k for k, c in tab.link.items()}
        values = []
        for c in tab.controls:
            if keys.get(id(c)) == "step":
                values.append(min(max(1, step or 1), max(1, len(trace.steps))))
            else:
                values.append(update_value(updates[c], c.value) if c in updates else c.value)
        return values

    def build(self, state: dict, look: Look) -> str:
        """The view as JSON text: {text, french, tab, title, where, notes, parts: [{type: plot|html, id,
        ...}], explore}, or {error} when the sentence cannot be shown."""
        q, _ = links.parse_query(state, TAB_IDS, examples.EVERYDAY[0], DEFAULT_TAB)
        view = {k: v for k, v in state.items() if k not in ("text", "tab")}
        explore = "/" + links.query_string(q.text, q.tab, **view)     # the full app on this view
        meta = dict(tab=q.tab, title=TITLES.get(q.tab, q.tab), explore=explore)
        try:
            trace = self.translator.trace(q.text)
        except ValueError as e:
            return json.dumps({**meta, "text": q.text, "error": str(e)})
        meta.update(text=trace.source.text, french=trace.translation, notes=list(trace.notes))
        tab = self.tabs.get(q.tab)
        parts = []
        if tab is not None:
            values = self.controls(tab, q, trace)
            meta["where"] = self.where(tab, values, len(trace.steps))
            scale = q.scale if q.scale in COLORSCALES else DEFAULT_SCALE
            try:
                out = tab.draw(trace, *values, "Dark" if look.dark else "Light", False, scale, look.narrow)
            except gr.Error as e:
                meta["error"] = str(e)
                out = ()
            parts = [part for c, o in zip(tab.outputs, out) if (part := self.part(c, o)) is not None]
        head = json.dumps(meta)[:-1]
        return head + ',"parts":[' + ",".join(parts) + "]}"

    @staticmethod
    def where(tab: TabView, values: list, n_steps: int) -> str:
        """Where the view stands, in words: "Step 3 of 12 · cross-attention · layer 6 · mean over heads"."""
        by_key = {k: v for k, c in tab.link.items() for cc, v in zip(tab.controls, values) if cc is c}
        words = []
        if "step" in by_key:
            words.append(f"Step {by_key['step']} of {n_steps}")
        if by_key.get("kind"):
            words.append(KIND_WORDS.get(str(by_key["kind"]), str(by_key["kind"])))
        if by_key.get("mode") in ("mean", "rollout"):
            words.append("mean over heads" if by_key["mode"] == "mean" else "rollout across layers")
        if by_key.get("layer") is not None:
            words.append(f"layer {int(float(by_key['layer']))}")
        if by_key.get("head") is not None and by_key.get("mode") in (None, "head"):
            head = str(by_key["head"])
            words.append(head if head.startswith("mean") else f"head {head}")
        if by_key.get("knockout"):                        # Knock it out's
            words.append(f"switched off: {by_key['knockout']} ({by_key.get('method') or 'zero'})")
        if by_key.get("b"):
            words.append(f"patched from: {by_key['b']}")
        if by_key.get("choice"):                          # Compare's design choice
            words.append(TOY_TITLES.get(str(by_key["choice"]), str(by_key["choice"])))
        return " · ".join(words)

    @staticmethod
    def part(component, value) -> Optional[str]:
        """One output as a part of the follower's page (JSON text), or None (a control's update, an empty box,
        a panel the app keeps folded)."""
        elem_id = getattr(component, "elem_id", None) or ""
        if elem_id in SKIPPED_OUTPUTS:
            return None
        value = update_value(value, None) if isinstance(value, dict) else value
        if isinstance(value, PlotData):
            return '{"type":"plot","id":%s,"figure":%s}' % (json.dumps(elem_id), value.plot)
        if isinstance(component, gr.HTML) and isinstance(value, str) and value.strip():
            return json.dumps({"type": "html", "id": elem_id, "html": value})
        if isinstance(component, gr.Markdown) and isinstance(value, str) and value.strip():
            return json.dumps({"type": "html", "id": elem_id, "html": MARKDOWN.render(value)})
        return None


class ViewFrames:
    """Server-sent-event frames of a room's views, built once per (view, look) in this process however many
    follow (concurrent followers wait for the one build), and kept for the last FRAMES_KEPT."""

    def __init__(self, build: Callable[[dict, Look], str], kept: int = FRAMES_KEPT) -> None:
        self.build, self.kept = build, kept
        self._frames: "OrderedDict[tuple, asyncio.Future]" = OrderedDict()
        self._veiled: "OrderedDict[tuple, bytes]" = OrderedDict()
        self.builds = 0

    @staticmethod
    def key(view: RoomView, look: Look) -> tuple:
        return json.dumps(view.state, sort_keys=True), look

    def _made(self, state: dict, look: Look) -> bytes:
        self.builds += 1
        return self.build(state, look).encode("utf-8")

    async def body(self, view: RoomView, look: Look) -> bytes:
        """The view's JSON for this look (built at most once while kept, whoever asks; a failed build is not
        kept: the next follower asking tries again)."""
        key = self.key(view, look)
        fut = self._frames.get(key)
        if fut is None:
            fut = asyncio.ensure_future(asyncio.to_thread(self._made, dict(view.state), look))
            self._frames[key] = fut
            while len(self._frames) > self.kept:
                self._frames.popitem(last=False)
        else:
            self._frames.move_to_end(key)
        try:
            return await asyncio.shield(fut)
        except Exception:  # noqa: BLE001  one view failing never takes the followers' stream down
            if self._frames.get(key) is fut:
                del self._frames[key]
            log.exception("live room: the follower's view of %s could not be built", view.state.get("tab"))
            return json.dumps({"error": "This view could not be drawn here: the presenter's screen shows "
                                        "it."}).encode()

    def veiled(self, view: RoomView, look: Look, body: bytes) -> bytes:
        """The view while the room answers a question: its title, where it stands and the English only (no
        French, no figures, no notes, no way to open it: any of them may give the answer away), made
        once per view."""
        key = self.key(view, look)
        if key not in self._veiled:
            full = json.loads(body)
            self._veiled[key] = json.dumps({k: full[k] for k in VEILED if k in full}).encode()
            while len(self._veiled) > self.kept:
                self._veiled.popitem(last=False)
        return self._veiled[key]

    async def frame(self, view: RoomView, look: Look) -> bytes:
        """One server-sent event: ``id: VERSION`` and ``data: {"version", "state", "view", "question"}`` (the
        room's question as a student may see it: ``votes.Question.public``, or null)."""
        body = await self.body(view, look)
        head = b'id: %d\ndata: {"version":%d,"state":' % (view.version, view.version)
        q = Question.of(view.question) if view.question else None
        if q is not None and q.status != "revealed":
            body = self.veiled(view, look, body)
        question = json.dumps(q.public()).encode() if q is not None else b"null"
        return b"".join((head, json.dumps(view.state).encode(), b',"view":', body, b',"question":', question,
                         b"}\n\n"))


class Asset:
    """A static file served with a strong ETag and, where the browser takes it, gzipped once."""

    def __init__(self, path: Path, media_type: str, max_age: int) -> None:
        self.path, self.media_type, self.max_age = path, media_type, max_age
        self._body: Optional[bytes] = None
        self._gz: Optional[bytes] = None
        self.etag = ""

    def body(self, gz: bool) -> bytes:
        if self._body is None:
            self._body = self.path.read_bytes()
            self.etag = '"%s"' % hashlib.sha256(self._body).hexdigest()[:16]
        if gz and self._gz is None:
            self._gz = gzip.compress(self._body, 6)
        return self._gz if gz else self._body

    def headers(self, gz: bool) -> list[tuple[bytes, bytes]]:
        h = [(b"content-type", self.media_type.encode()), (b"etag", self.etag.encode()),
             (b"cache-control", f"public, max-age={self.max_age}".encode()), (b"vary", b"accept-encoding")]
        return h + ([(b"content-encoding", b"gzip")] if gz else [])


# the vendored cartesian bundle's (ui/static/vendor/README.md): plotly's own, tested
PLOTLY_JS_VERSION = "4.1.1"


def plotly_js_path() -> Path:
    """plotly.js's cartesian bundle (every trace type the app draws), a third of the full bundle's size."""
    return STATIC / "vendor" / f"plotly-cartesian-{PLOTLY_JS_VERSION}.min.js"


ASSETS = {"/live/static/follow.js": Asset(STATIC / "follow.js", "text/javascript; charset=utf-8", 300),
          "/live/static/vote.js": Asset(STATIC / "vote.js", "text/javascript; charset=utf-8", 300),
          "/live/static/follow.css": Asset(STATIC / "follow.css", "text/css; charset=utf-8", 300),
          "/live/static/plotly.min.js": Asset(plotly_js_path(), "text/javascript; charset=utf-8", 86400)}
PAGE = Asset(STATIC / "follow.html", "text/html; charset=utf-8", 60)
UPLOADS = ("/upload", "/process_recording")     # Gradio's routes that write what a user sends to disk


class FollowPage:
    """ASGI middleware ahead of Gradio's routes: ``GET /?follow=…`` (with or without a code: an empty one
    shows the join box) is the follower's page, and ``/live/static/…`` its script, style and plotly.js;
    Gradio's upload routes are refused (403: the app takes no files, so none can fill its disk); everything
    else goes on to Gradio."""

    def __init__(self, app) -> None:
        self.app = app

    async def __call__(self, scope, receive, send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and \
                scope["path"].rstrip("/").endswith(UPLOADS):
            await self.refuse_upload(send)      # no component takes a file: nothing a user sends is written
            return
        if scope["type"] == "http" and scope["method"] in ("GET", "HEAD"):
            path = scope["path"]
            asset = ASSETS.get(path)
            if asset is None and path in ("/", "") and \
                    "follow" in parse_qs(scope.get("query_string", b"").decode(
                    "latin-1"), keep_blank_values=True):
                asset = PAGE
            if asset is not None:
                await self.serve(asset, scope, send)
                return
        await self.app(scope, receive, send)

    @staticmethod
    async def refuse_upload(send) -> None:
        body = b"This app takes no file uploads."
        await send({"type": "http.response.start", "status": 403,
                    "headers": [(b"content-type", b"text/plain; charset=utf-8"),
                                (b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": body})

    @staticmethod
    async def serve(asset: Asset, scope, send) -> None:
        headers = dict(scope.get("headers") or [])
        gz = b"gzip" in headers.get(b"accept-encoding", b"") and asset.media_type.startswith(
            "text/javascript")
        body = asset.body(gz)
        if headers.get(b"if-none-match", b"").decode("latin-1") == asset.etag:
            await send({"type": "http.response.start", "status": 304, "headers": asset.headers(gz)[1:4]})
            await send({"type": "http.response.body", "body": b""})
            return
        await send({"type": "http.response.start", "status": 200,
                    "headers": asset.headers(gz) + [(b"content-length", str(len(body)).encode())]})
        await send({"type": "http.response.body", "body": b"" if scope["method"] == "HEAD" else body})
