"""The followers' side of a lecture room: one reader per followed room and app process (no gradio here).

``RoomWatch.views`` gives each follower's stream the room's views as they change, and tells it when the store
stops answering (``INTERRUPTED``: the page keeps its last view and says it retries), when the room vanished
without being ended (``LOST``: a restart of the store lost it; its presenter's page takes it up again under
the same code, and the followers wait for it), and when either is over (``RESUMED``), besides a keep-alive
while nothing happens. A room its presenter ended, or that expired, ends the streams (None).
"""
from __future__ import annotations

import asyncio
import logging
import os
import secrets
import socket
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Optional

from .rooms import RoomStore, RoomView, StoreDown

log = logging.getLogger("app")

WATCH_EVERY_S = 0.2             # how often a process reads a followed room from its store (a change published
                                # in this process is read at once: RoomWatch.poke)
KEEP_ALIVE_S = 15.0             # a comment on an idle stream, so that proxies keep it open
RETRY_S = 1.0                   # while the store does not answer, each followed room is read again this often
KEEP_ALIVE = RoomView(-1, {})   # not views: what a stream says between them
INTERRUPTED = RoomView(-2, {})
LOST = RoomView(-3, {})
RESUMED = RoomView(-4, {})
TROUBLES = {"down": INTERRUPTED, "lost": LOST, None: RESUMED}
# how often a process tells the store how many follow each room here (the vote's count)
TELL_FOLLOWERS_S = 2.0
PROCESS = f"{socket.gethostname()[:40]}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass
class _Watched:
    latest: Optional[RoomView] = None           # None once the room has ended
    read: bool = False                          # `latest` has been read from the store at least once
    trouble: Optional[str] = None               # "down": the store does not answer; "lost": the room vanished
    followers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)   # replaced after each change
    task: Optional[asyncio.Task] = None         # the reader (held here: the loop keeps only a weak reference)
    # set by `poke`: read now, not at the next tick
    poked: asyncio.Event = field(default_factory=asyncio.Event)

    def wake(self) -> None:
        self.changed.set()
        self.changed = asyncio.Event()


class RoomWatch:
    """Followers' streams of a room's views, for one process's event loop. One task per followed room reads
    the store every `every` seconds (in a worker thread: Redis answers over the network) and wakes that room's
    followers when the version changed, so 200 followers cost one read per room, not 200 requests. A follower
    gets every version this process saw, in order; a presenter publishing twice within `every` seconds is
    seen once (at the later view)."""

    def __init__(self, rooms: RoomStore, every: float = WATCH_EVERY_S, keep_alive: float = KEEP_ALIVE_S,
                 retry: float = RETRY_S) -> None:
        self.rooms, self.every, self.keep_alive, self.retry = rooms, every, keep_alive, retry
        self._watched: dict[str, _Watched] = {}
        self._loop: Optional[asyncio.AbstractEventLoop] = None

    def poke(self, code: str) -> None:
        """The room changed (published by this process, from any thread): its reader reads it now, so this
        process's followers get it at once instead of at the next tick (other processes read at theirs)."""
        w, loop = self._watched.get(str(code).upper()), self._loop
        if w is not None and loop is not None and not loop.is_closed():
            loop.call_soon_threadsafe(w.poked.set)

    async def _read(self, code: str) -> Optional[RoomView]:
        return await asyncio.to_thread(self.rooms.read, code)

    async def _tell(self, code: str, n: int) -> None:
        """This process's followers of the room, for the presenter's count (best effort: a vote counts without
        it)."""
        try:
            await asyncio.to_thread(self.rooms.followed, code, PROCESS, n)
        except Exception:  # noqa: BLE001  StoreDown, logged once by the store
            pass

    def current(self, code: str) -> Optional[RoomView]:
        """The room's view as this process last read it, while it watches the room and the store answers."""
        w = self._watched.get(str(code).upper())
        return w.latest if w is not None and w.read and w.trouble is None else None

    def followers(self, code: str) -> int:
        """The followers of a room in this process (streams open now)."""
        w = self._watched.get(str(code).upper())
        return w.followers if w is not None else 0

    async def _watch(self, code: str, w: _Watched) -> None:
        told, told_n = 0.0, -1
        try:
            while w.followers > 0:
                # (at most 5 a second)
                if told_n != w.followers or time.monotonic() - told >= TELL_FOLLOWERS_S:
                    told, told_n = time.monotonic(), w.followers
                    await self._tell(code, told_n)
                try:
                    view = await self._read(code)
                    ended = view is None and await asyncio.to_thread(self.rooms.known, code)
                except Exception as e:  # noqa: BLE001  StoreDown (logged once by the store) or anything else:
                    if not isinstance(e, StoreDown) and w.trouble != "down":   # the followers wait, told so
                        log.warning("live room %s: reading it failed: %s: %s", code, type(e).__name__, e)
                    self._trouble(w, "down")
                    await asyncio.sleep(self.retry)
                    continue
                if view is None and not ended and w.read:
                    # gone without an end: wait for its presenter to take it up again
                    self._trouble(w, "lost")
                    await asyncio.sleep(self.retry)
                    continue
                self._trouble(w, None)
                if not w.read or view is None or view.version != w.latest.version:
                    w.latest, w.read = view, True
                    w.wake()
                    if view is None:
                        return
                try:
                    await asyncio.wait_for(w.poked.wait(), self.every)
                except asyncio.TimeoutError:
                    pass
                w.poked.clear()
        finally:
            if self._watched.get(code) is w:
                del self._watched[code]
            await self._tell(code, 0)

    @staticmethod
    def _trouble(w: _Watched, trouble: Optional[str]) -> None:
        if w.trouble != trouble:
            w.trouble = trouble
            w.wake()

    async def views(self, code: str, after: int = 0) -> AsyncIterator[Optional[RoomView]]:
        """The room's views with a version above `after`, as they come; None (then the end) when the room
        has ended or never existed; ``KEEP_ALIVE`` after `keep_alive` seconds without a change,
        ``INTERRUPTED`` when the store stops answering, ``LOST`` when the room vanished, ``RESUMED`` when that
        is over (none of them views)."""
        code = str(code).upper()
        self._loop = asyncio.get_running_loop()
        w = self._watched.get(code)
        if w is None:
            w = self._watched[code] = _Watched()
            w.followers += 1
            w.task = asyncio.get_running_loop().create_task(self._watch(code, w))
        else:
            w.followers += 1
        told = None
        try:
            while True:
                waiting = w.changed
                if w.trouble != told:
                    told = w.trouble
                    yield TROUBLES[told]
                    continue
                if w.read and w.trouble is None:
                    if w.latest is None:
                        yield None
                        return
                    # (a room that has shown nothing: wait)
                    if w.latest.version > after and w.latest.state:
                        after = w.latest.version
                        yield w.latest
                        continue
                try:
                    await asyncio.wait_for(waiting.wait(), self.keep_alive)
                except asyncio.TimeoutError:
                    yield KEEP_ALIVE
        finally:
            w.followers -= 1
