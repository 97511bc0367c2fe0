"""Lecture rooms: the presenter's view, shared with everyone who follows it (no gradio here).

A room holds the view's state: the link parameters (``LINK_KEYS`` of ``transformer/viz/links.py``: text,
tab, step, kind, layer, head, the explorer's mode, the colour scale, Compare's design choice), a version that
grows with every change, and the time of the last change. Only the holder of the room's secret (kept in the
presenter's browser, never in the link) can change it or end it; anyone with the short code can read it. A
room ends when the presenter ends it, after ROOM_IDLE_S without a change, or after ROOM_UNUSED_S if nothing
was ever shown in it.

A room's secret is signed with this app's key (``RoomKeys``): after the app, or the room store, restarted
without the room, the presenter's page presents its secret again and the room comes back under the same code
(``adopt``), so its followers find it again. A room the presenter ended never comes back.

Two stores behind one small interface: ``MemoryRooms`` (the default: one app process) and ``RedisRooms``
(``rooms_redis.py``; ``--redis URL``: several app processes behind a load balancer share rooms). Either holds
at most MAX_ROOMS rooms and refuses a new one beyond (``RoomsFull``): a loop creating rooms cannot push out a
lecture. When Redis does not answer, ``RedisRooms`` raises ``StoreDown`` at once (one try a second, one log
line per outage). The followers' side, one reader per room and process, is ``room_watch.RoomWatch``.
"""
from __future__ import annotations

import hashlib
import hmac
import logging
import os
import secrets
import threading
import time
from dataclasses import dataclass
from typing import Optional, Protocol

from transformer.viz.links import LINK_KEYS
from transformer.votes import MAX_ANSWERS, MAX_QUESTIONS, tally

from .room_keys import RoomKeys

log = logging.getLogger("app")

ROOM_IDLE_S = 4 * 3600          # a room nobody changed for this long ends
ROOM_UNUSED_S = 15 * 60         # ...and one that never showed anything, this long after it was made
MAX_ROOMS = 1000                # rooms at once in one store; a new one beyond is refused (APP_MAX_ROOMS)
CODE_ALPHABET = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"   # no 0/O, 1/I: read aloud and typed on phones
CODE_LENGTH = 6
STATE_KEYS = LINK_KEYS   # a room holds what a link holds
MAX_VALUE_CHARS = 4000
# an ended room's code is remembered this long: a follower is told "ended", not "unknown"
ENDED_KEPT_S = 24 * 3600
# a process's count of a room's followers holds this long (it tells it every 2 s)
FOLLOWERS_FRESH_S = 10.0
STORE_RETRY_S = 1.0             # while the store does not answer, it is tried again at most this often


class RoomError(ValueError):
    """A request a room refuses: unknown code, wrong secret, a state it cannot hold."""


class NoSuchRoom(RoomError):
    """The room is not running: it ended, expired, or a restart lost it."""


class NotPresenter(RoomError):
    """The secret is not this room's."""


class RoomsFull(RoomError):
    """The store holds its most rooms: a new one is refused (not one running pushed out)."""


class QuestionClosed(RoomError):
    """An answer to a question that is not open (closed, revealed, or not the room's current question)."""


class StoreDown(RuntimeError):
    """The room store does not answer (Redis stopped, hung or restarting): try again shortly."""


@dataclass(frozen=True)
class RoomView:
    version: int
    state: dict
    # the question on the students' pages (votes.Question.to_dict), or None
    question: Optional[dict] = None


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


def max_rooms() -> int:
    return int(os.environ.get("APP_MAX_ROOMS") or MAX_ROOMS)


class Outage:
    """The store's health as this process sees it: one warning when it stops answering, one line when it
    answers again (not a line per failed request), and at most one try per STORE_RETRY_S meanwhile."""

    def __init__(self, what: str) -> None:
        self.what, self.since, self.tried = what, None, 0.0
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        return self.since is not None

    def wait(self) -> bool:
        """True while the store is down and was tried less than STORE_RETRY_S ago (answer "down" at once)."""
        with self._lock:
            if self.since is None or time.monotonic() - self.tried >= STORE_RETRY_S:
                self.tried = time.monotonic()
                return False
            return True

    def failed(self, e: Exception) -> None:
        with self._lock:
            if self.since is None:
                self.since = time.monotonic()
                log.warning("live rooms: %s does not answer (%s: %s): followers keep the last view, "
                            "publishing is paused, retrying", self.what, type(e).__name__, e)

    def answered(self) -> None:
        if self.since is None:
            return
        with self._lock:
            if self.since is not None:
                log.warning("live rooms: %s answers again after %.0f s", self.what,
                            time.monotonic() - self.since)
                self.since = None


class RoomStore(Protocol):
    def create(self) -> tuple[str, str]: ...                       # (code, secret)
    def adopt(self, code: str, secret: str) -> bool: ...           # the room again, after a restart lost it
    def owns(self, code: str, secret: str) -> bool: ...            # is this running room the secret's?
    def publish(self, code: str, secret: str, state: dict) -> int: ...   # the new version
    def read(self, code: str) -> Optional[RoomView]: ...
    def end(self, code: str, secret: str) -> None: ...
    def known(self, code: str) -> bool: ...                      # was this a room (in the last ENDED_KEPT_S)?
    # the room answers (ui/votes.py): only the secret asks, closes and reveals; a student answers an open one
    def ask(self, code: str, secret: str, question: dict) -> dict: ...    # the question with its id, open
    # True: replaced an earlier one
    def answer(self, code: str, qid: int, student: str, key: str) -> bool: ...
    # counts frozen
    def close(self, code: str, secret: str, qid: int, followers: int, reveal: bool) -> dict: ...
    def dismiss(self, code: str, secret: str) -> None: ...       # the question off the students' pages
    def tally(self, code: str, qid: int) -> dict: ...            # key -> answers, now
    def questions(self, code: str, secret: str) -> list: ...     # every question asked, with counts (export)
    def followed(self, code: str, process: str, n: int) -> None: ...   # this process's followers of a room
    def followers(self, code: str) -> int: ...                   # a room's followers, every process together


class MemoryRooms:
    """Rooms in this process's memory (thread-safe)."""

    def __init__(self, idle_s: float = ROOM_IDLE_S, max_rooms: Optional[int] = None,
                 keys: Optional[RoomKeys] = None, unused_s: float = ROOM_UNUSED_S) -> None:
        self.idle_s, self.unused_s = idle_s, unused_s
        self.max_rooms = max_rooms or globals()["max_rooms"]()
        self.keys = keys or RoomKeys.of_this_app()
        self._rooms: dict[str, dict] = {}
        self._ended: dict[str, tuple[float, bool]] = {}   # code -> (when it ended, ended by its presenter)
        # an ended room's questions: code -> (when, secret digest, questions, answers)
        self._kept: dict[str, tuple] = {}
        # code -> {process: (followers, when told)}
        self._followers: dict[str, dict[str, tuple[int, float]]] = {}
        self._lock = threading.Lock()

    def _alive(self, room: Optional[dict], now: float) -> bool:
        return room is not None and now - room["touched"] <= (self.idle_s if room["version"]
                                                              else self.unused_s)

    def _sweep(self, now: float) -> None:
        for code in [c for c, r in self._rooms.items() if not self._alive(r, now)]:
            self._drop(code, now, False)
        for code in [c for c, (t, _) in self._ended.items() if now - t > ENDED_KEPT_S]:
            del self._ended[code]
            self._kept.pop(code, None)
        while len(self._ended) > 10 * self.max_rooms:
            del self._ended[next(iter(self._ended))]

    def _drop(self, code: str, now: float, by_presenter: bool) -> None:
        room = self._rooms.pop(code)
        self._ended[code] = (now, by_presenter)
        self._followers.pop(code, None)
        if room["questions"]:           # the presenter downloads them after the end too (for ENDED_KEPT_S)
            for qid, q in room["questions"].items():
                if q["status"] == "open":     # ended while open: its counts as they stood
                    q.update(counts=tally(room["answers"][qid].values()), status="closed")
                    q["answered"] = sum(q["counts"].values())
            self._kept[code] = (now, room["secret"], room["questions"], {})

    def _add(self, code: str, secret: str, version: int, now: float) -> None:
        self._sweep(now)
        if len(self._rooms) >= self.max_rooms:
            raise RoomsFull(f"this app holds its most live sessions ({self.max_rooms}) just now: try again "
                            f"later")
        self._rooms[code] = dict(secret=digest(secret), state={}, version=version, touched=now, question=None,
                                 questions={}, answers={}, asked=0)

    def create(self) -> tuple[str, str]:
        with self._lock:
            code = new_code()
            while code in self._rooms or code in self._ended:
                code = new_code()
            secret = self.keys.new_secret(code)
            self._add(code, secret, 0, time.time())
        return code, secret

    def adopt(self, code: str, secret: str) -> bool:
        code = str(code).upper()
        if not self.keys.proves(code, secret):
            return False
        with self._lock:
            now = time.time()
            if self._alive(self._rooms.get(code), now) or self._ended.get(code, (0, False))[1]:
                return False
            self._rooms.pop(code, None)
            self._add(code, secret, int(now * 1000), now)   # a version above any the followers saw before
            return True

    def _owned(self, code: str, secret: str) -> dict:
        room = self._rooms.get(str(code).upper())
        if not self._alive(room, time.time()):
            raise NoSuchRoom("no such room (it may have ended)")
        if not hmac.compare_digest(room["secret"], digest(str(secret or ""))):
            raise NotPresenter("only the presenter can change this room")
        return room

    def owns(self, code: str, secret: str) -> bool:
        with self._lock:
            try:
                return bool(self._owned(code, secret))
            except RoomError:
                return False

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
            if not self._alive(room, time.time()):
                return None
            q = room["question"]
            return RoomView(room["version"], dict(room["state"]), dict(q) if q else None)

    def end(self, code: str, secret: str) -> None:
        with self._lock:
            self._owned(code, secret)
            self._drop(str(code).upper(), time.time(), True)

    def known(self, code: str) -> bool:
        code = str(code).upper()
        with self._lock:
            return code in self._rooms or code in self._ended

    # -- the room answers (see RoomStore; the rules in ui/votes.py) --
    def ask(self, code: str, secret: str, question: dict) -> dict:
        with self._lock:
            room = self._owned(code, secret)
            if len(room["questions"]) >= MAX_QUESTIONS:
                raise RoomError(f"a room holds at most {MAX_QUESTIONS} questions")
            room["asked"] += 1
            q = {**question, "id": room["asked"], "status": "open"}
            room["questions"][q["id"]], room["answers"][q["id"]] = q, {}
            room["question"], room["touched"] = q, time.time()
            room["version"] += 1
            return dict(q)

    def answer(self, code: str, qid: int, student: str, key: str) -> bool:
        with self._lock:
            room = self._rooms.get(str(code).upper())
            if not self._alive(room, time.time()):
                raise NoSuchRoom("no such room (it may have ended)")
            q = room["question"]
            if q is None or q["id"] != qid or q["status"] != "open":
                raise QuestionClosed("this question is closed")
            answers = room["answers"][qid]
            if student not in answers and len(answers) >= MAX_ANSWERS:
                raise QuestionClosed("this question has all the answers it can take")
            replaced = student in answers
            answers[student] = key
            return replaced

    def close(self, code: str, secret: str, qid: int, followers: int, reveal: bool) -> dict:
        with self._lock:
            room = self._owned(code, secret)
            q = room["questions"].get(qid)
            if q is None:
                raise RoomError("no such question in this room")
            # the counts as they stand when answers stop; the answers themselves go
            if q["status"] == "open":
                counts = tally(room["answers"][qid].values())
                q.update(counts=counts, answered=sum(counts.values()), followers=int(followers))
                room["answers"][qid] = {}
            q["status"] = "revealed" if reveal or q["status"] == "revealed" else "closed"
            if room["question"] is not None and room["question"]["id"] == qid:
                room["question"] = q
                room["version"] += 1
            return dict(q)

    def dismiss(self, code: str, secret: str) -> None:
        with self._lock:
            room = self._owned(code, secret)
            if room["question"] is not None:
                room["question"] = None
                room["version"] += 1

    def tally(self, code: str, qid: int) -> dict:
        with self._lock:
            room = self._rooms.get(str(code).upper())
            return tally(room["answers"].get(qid, {}).values()) if room else {}

    def questions(self, code: str, secret: str) -> list:
        code = str(code).upper()
        with self._lock:
            room = self._rooms.get(code)
            if room is not None:
                kept = (room["secret"], room["questions"], room["answers"])
            else:
                kept = self._kept.get(code, (0, "", {}, {}))[1:]
            if not kept[0] or not hmac.compare_digest(kept[0], digest(str(secret or ""))):
                raise NotPresenter("only the presenter can download the room's questions")
            return [dict(q) if q["status"] != "open" else {**q, "counts": tally(kept[2][i].values())}
                    for i, q in sorted(kept[1].items())]

    def followed(self, code: str, process: str, n: int) -> None:
        with self._lock:
            self._followers.setdefault(str(code).upper(), {})[process] = (int(n), time.time())

    def followers(self, code: str) -> int:
        with self._lock:
            told = self._followers.get(str(code).upper(), {})
            return sum(n for n, t in told.values() if time.time() - t <= FOLLOWERS_FRESH_S)


def room_store(redis_url: Optional[str] = None) -> RoomStore:
    if not redis_url:
        return MemoryRooms()
    from .rooms_redis import RedisRooms          # redis-py only where Redis is asked for
    return RedisRooms(redis_url)
