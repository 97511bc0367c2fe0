"""Lecture rooms: the presenter's view, shared with everyone who follows it (no gradio here).

A room holds the view's state: the link parameters (``LINK_KEYS`` of ``transformer/viz/links.py``: text,
tab, step, kind, layer, head, the explorer's mode, the colour scale, Compare's variant), a version that grows
with every change, and the time of the last change. Only the holder of the room's secret (kept in the presenter's page, never in the link) can change
it or end it; anyone with the short code can read it. A room ends when the presenter ends it or after
ROOM_IDLE_S without a change.

Two stores behind one small interface: ``MemoryRooms`` (the default: one app process) and ``RedisRooms``
(``--redis URL``: several app processes behind a load balancer share rooms). ``RoomWatch`` pushes a room's
changes to the followers connected to this process: one reader per room and process, however many follow.
"""
from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
import logging
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import AsyncIterator, Optional, Protocol

from transformer.viz.links import LINK_KEYS

log = logging.getLogger("app")

WATCH_EVERY_S = 0.2             # how often a process reads a followed room from its store (a change published in this process is read at once: RoomWatch.poke)
KEEP_ALIVE_S = 15.0             # a comment on an idle stream, so that proxies keep it open
ROOM_IDLE_S = 4 * 3600          # a room nobody changed for this long ends
MAX_ROOMS = 1000                # rooms at once in one memory store (the oldest idle one goes first)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I: read aloud and typed on phones
CODE_LENGTH = 6
STATE_KEYS = LINK_KEYS   # a room holds what a link holds
MAX_VALUE_CHARS = 4000
ENDED_KEPT_S = 24 * 3600        # an ended room's code is remembered this long: a follower is told "ended", not "unknown"


class RoomError(ValueError):
    """A request a room refuses: unknown code, wrong secret, a state it cannot hold."""


@dataclass(frozen=True)
class RoomView:
    version: int
    state: dict


def new_code() -> str:
    return "".join(secrets.choice(CODE_ALPHABET) for _ in range(CODE_LENGTH))


def digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def clean_state(state) -> dict:
    """Only the view's parameters, as short strings: a room never stores anything else."""
    if not isinstance(state, dict):
        raise RoomError("a room's state is a JSON object of view parameters")
    out = {k: str(v)[:MAX_VALUE_CHARS] for k, v in state.items() if k in STATE_KEYS and v not in (None, "")}
    if not out.get("text"):
        raise RoomError("a room's state needs the sentence (text)")
    return out


class RoomStore(Protocol):
    def create(self) -> tuple[str, str]: ...                       # (code, secret)
    def publish(self, code: str, secret: str, state: dict) -> int: ...   # the new version
    def read(self, code: str) -> Optional[RoomView]: ...
    def end(self, code: str, secret: str) -> None: ...
    def known(self, code: str) -> bool: ...                      # was this a room (in the last ENDED_KEPT_S)?


class MemoryRooms:
    """Rooms in this process's memory (thread-safe)."""

    def __init__(self, idle_s: float = ROOM_IDLE_S, max_rooms: int = MAX_ROOMS) -> None:
        self.idle_s, self.max_rooms = idle_s, max_rooms
        self._rooms: dict[str, dict] = {}
        self._ended: dict[str, float] = {}      # code -> when it ended (read by `known`)
        self._lock = threading.Lock()

    def _sweep(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if now - r["touched"] > self.idle_s]:
            self._drop(code, now)
        while len(self._rooms) >= self.max_rooms:
            self._drop(min(self._rooms, key=lambda c: self._rooms[c]["touched"]), now)
        for code in [c for c, t in self._ended.items() if now - t > ENDED_KEPT_S]:
            del self._ended[code]
        while len(self._ended) > 10 * self.max_rooms:
            del self._ended[next(iter(self._ended))]

    def _drop(self, code: str, now: float) -> None:
        del self._rooms[code]
        self._ended[code] = now

    def create(self) -> tuple[str, str]:
        secret = secrets.token_urlsafe(24)
        with self._lock:
            now = time.time()
            self._sweep(now)
            code = new_code()
            while code in self._rooms:
                code = new_code()
            self._rooms[code] = dict(secret=digest(secret), state={}, version=0, touched=now)
        return code, secret

    def _owned(self, code: str, secret: str) -> dict:
        room = self._rooms.get(str(code).upper())
        if room is None or time.time() - room["touched"] > self.idle_s:
            raise RoomError("no such room (it may have ended)")
        if not hmac.compare_digest(room["secret"], digest(str(secret or ""))):
            raise RoomError("only the presenter can change this room")
        return room

    def publish(self, code: str, secret: str, state: dict) -> int:
        state = clean_state(state)
        with self._lock:
            room = self._owned(code, secret)
            room["touched"] = time.time()
            if state != room["state"]:
                room["state"], room["version"] = state, room["version"] + 1
            return room["version"]

    def read(self, code: str) -> Optional[RoomView]:
        with self._lock:
            room = self._rooms.get(str(code).upper())
            if room is None or time.time() - room["touched"] > self.idle_s:
                return None
            return RoomView(room["version"], dict(room["state"]))

    def end(self, code: str, secret: str) -> None:
        with self._lock:
            self._owned(code, secret)
            self._drop(str(code).upper(), time.time())

    def known(self, code: str) -> bool:
        code = str(code).upper()
        with self._lock:
            return code in self._rooms or code in self._ended


class RedisRooms:
    """Rooms in Redis, shared by every app process that uses the same server: one hash per room, expiring
    after ROOM_IDLE_S without a change. A publish is one atomic script (check the secret, bump the version)."""

    PUBLISH = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    if redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then
      redis.call('HSET', KEYS[1], 'state', ARGV[2])
      redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    return tonumber(redis.call('HGET', KEYS[1], 'version'))
    """

    def __init__(self, url: str, idle_s: float = ROOM_IDLE_S) -> None:
        import redis
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2)
        self.idle_s = int(idle_s)
        self._publish = self.r.register_script(self.PUBLISH)
        self.r.ping()

    @staticmethod
    def key(code: str) -> str:
        return f"transformer-room:{str(code).upper()}"

    @staticmethod
    def known_key(code: str) -> str:
        return f"transformer-room-known:{str(code).upper()}"

    def create(self) -> tuple[str, str]:
        secret = secrets.token_urlsafe(24)
        while True:
            code = new_code()
            if self.r.hsetnx(self.key(code), "secret", digest(secret)):
                self.r.hset(self.key(code), mapping={"state": "{}", "version": 0})
                self.r.expire(self.key(code), self.idle_s)
                self.r.set(self.known_key(code), 1, ex=self.idle_s + ENDED_KEPT_S)
                return code, secret

    def publish(self, code: str, secret: str, state: dict) -> int:
        body = json.dumps(clean_state(state), sort_keys=True)
        version = int(self._publish(keys=[self.key(code)], args=[digest(str(secret or "")), body, self.idle_s]))
        if version == -1:
            raise RoomError("no such room (it may have ended)")
        if version == -2:
            raise RoomError("only the presenter can change this room")
        return version

    def read(self, code: str) -> Optional[RoomView]:
        room = self.r.hgetall(self.key(code))
        return RoomView(int(room["version"]), json.loads(room["state"])) if room else None

    def end(self, code: str, secret: str) -> None:
        room = self.r.hget(self.key(code), "secret")
        if room is None:
            raise RoomError("no such room (it may have ended)")
        if not hmac.compare_digest(room, digest(str(secret or ""))):
            raise RoomError("only the presenter can change this room")
        self.r.delete(self.key(code))
        self.r.set(self.known_key(code), 1, ex=ENDED_KEPT_S)

    def known(self, code: str) -> bool:
        return bool(self.r.exists(self.known_key(code)))


def room_store(redis_url: Optional[str] = None) -> RoomStore:
    return RedisRooms(redis_url) if redis_url else MemoryRooms()


@dataclass
class _Watched:
    latest: Optional[RoomView] = None           # None once the room has ended
    read: bool = False                          # `latest` has been read from the store at least once
    followers: int = 0
    changed: asyncio.Event = field(default_factory=asyncio.Event)   # replaced after each change
    task: Optional[asyncio.Task] = None         # the reader (held here: the loop keeps only a weak reference)
    poked: asyncio.Event = field(default_factory=asyncio.Event)     # set by `poke`: read now, not at the next tick


class RoomWatch:
    """Followers' streams of a room's views, for one process's event loop. One task per followed room reads the
    store every `every` seconds (in a worker thread: Redis answers over the network) and wakes that room's
    followers when the version changed, so 200 followers cost one read per room, not 200 requests. A follower
    gets every version this process saw, in order; a presenter publishing twice within `every` seconds is
    seen once (at the later view)."""

    def __init__(self, rooms: "RoomStore", every: float = WATCH_EVERY_S, keep_alive: float = KEEP_ALIVE_S) -> None:
        self.rooms, self.every, self.keep_alive = rooms, every, keep_alive
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

    async def _watch(self, code: str, w: _Watched) -> None:
        try:
            while w.followers > 0:
                try:
                    view = await self._read(code)
                except Exception as e:  # noqa: BLE001  the store blinked (Redis restarting): keep the followers, read again
                    log.warning("live room %s: reading it failed: %s", code, e)
                    await asyncio.sleep(max(1.0, self.every))
                    continue
                if not w.read or view is None or view.version != w.latest.version:
                    w.latest, w.read = view, True
                    w.changed.set()
                    w.changed = asyncio.Event()
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

    async def views(self, code: str, after: int = 0) -> AsyncIterator[Optional[RoomView]]:
        """The room's views with a version above `after`, as they come; None (then the end) when the room
        has ended or never existed; ``RoomView(-1, {})`` after `keep_alive` seconds without a change (a
        keep-alive, not a view)."""
        code = str(code).upper()
        self._loop = asyncio.get_running_loop()
        w = self._watched.get(code)
        if w is None:
            w = self._watched[code] = _Watched()
            w.followers += 1
            w.task = asyncio.get_running_loop().create_task(self._watch(code, w))
        else:
            w.followers += 1
        try:
            while True:
                waiting = w.changed
                if w.read:
                    if w.latest is None:
                        yield None
                        return
                    if w.latest.version > after:
                        after = w.latest.version
                        yield w.latest
                        continue
                try:
                    await asyncio.wait_for(waiting.wait(), self.keep_alive)
                except asyncio.TimeoutError:
                    yield RoomView(-1, {})
        finally:
            w.followers -= 1
