"""Rooms in Redis (``RedisRooms``), shared by every app process that uses the same server: the same interface as
``rooms.MemoryRooms`` (``rooms.RoomStore``), each change one atomic Lua script."""
from __future__ import annotations

import hmac
import json
import time
from typing import Optional

from .rooms import (ENDED_KEPT_S, ROOM_IDLE_S, ROOM_UNUSED_S, NoSuchRoom, NotPresenter, Outage, RoomKeys, RoomsFull,
                    RoomView, StoreDown, clean_state, digest, new_code)
from .rooms import max_rooms as default_max_rooms

class RedisRooms:
    """Rooms in Redis, shared by every app process that uses the same server: one hash per room, expiring
    after ROOM_IDLE_S without a change (ROOM_UNUSED_S before its first view), and a sorted set of the rooms by
    expiry that caps how many there are. Making, adopting, publishing and ending a room are each one atomic
    script: no room is ever half written."""

    # KEYS: room, known, index. ARGV: secret digest, first version, unused_s, known_s, now, max rooms, adopting.
    CREATE = """
    if redis.call('EXISTS', KEYS[1]) == 1 then return 0 end
    if ARGV[7] == '1' and redis.call('GET', KEYS[2]) == 'ended' then return -2 end
    redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', ARGV[5])
    if redis.call('ZCARD', KEYS[3]) >= tonumber(ARGV[6]) then return -1 end
    redis.call('HSET', KEYS[1], 'secret', ARGV[1], 'state', '{}', 'version', ARGV[2])
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    redis.call('SET', KEYS[2], '1', 'EX', ARGV[4])
    redis.call('ZADD', KEYS[3], tonumber(ARGV[5]) + tonumber(ARGV[3]), KEYS[1])
    return 1
    """
    # KEYS: room, index. ARGV: secret digest, state, idle_s, now.
    PUBLISH = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    if redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then
      redis.call('HSET', KEYS[1], 'state', ARGV[2])
      redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    redis.call('ZADD', KEYS[2], tonumber(ARGV[4]) + tonumber(ARGV[3]), KEYS[1])
    return tonumber(redis.call('HGET', KEYS[1], 'version'))
    """
    # KEYS: room, known, index. ARGV: secret digest, known_s.
    END = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[3], KEYS[1])
    redis.call('SET', KEYS[2], 'ended', 'EX', ARGV[2])
    return 1
    """
    INDEX = "transformer-rooms"

    def __init__(self, url: str, idle_s: float = ROOM_IDLE_S, max_rooms: Optional[int] = None,
                 keys: Optional[RoomKeys] = None, unused_s: float = ROOM_UNUSED_S) -> None:
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry
        # one try, two seconds at most: a hung server is told at once, not after redis-py's backed-off retries
        self.r = redis.Redis.from_url(url, decode_responses=True, socket_timeout=2, socket_connect_timeout=2,
                                      retry=Retry(NoBackoff(), 0))
        self.down_errors = (redis.exceptions.RedisError,)   # not answering, or not able to (read-only, out of memory)
        self.idle_s, self.unused_s = int(idle_s), int(max(1, unused_s))
        self.max_rooms = max_rooms or default_max_rooms()
        self.keys = keys or RoomKeys.of_this_app()
        self.outage = Outage("the room store (Redis)")
        self._create = self.r.register_script(self.CREATE)
        self._publish = self.r.register_script(self.PUBLISH)
        self._end = self.r.register_script(self.END)
        self.r.ping()

    def _call(self, fn, *args, **kwargs):
        if self.outage.wait():
            raise StoreDown("the room store does not answer")
        try:
            out = fn(*args, **kwargs)
        except self.down_errors as e:
            self.outage.failed(e)
            raise StoreDown("the room store does not answer") from e
        self.outage.answered()
        return out

    @staticmethod
    def key(code: str) -> str:
        return f"transformer-room:{str(code).upper()}"

    @staticmethod
    def known_key(code: str) -> str:
        return f"transformer-room-known:{str(code).upper()}"

    def _make(self, code: str, secret: str, version: int, adopting: bool) -> int:
        return int(self._call(self._create, keys=[self.key(code), self.known_key(code), self.INDEX],
                              args=[digest(secret), version, self.unused_s, self.idle_s + ENDED_KEPT_S,
                                    time.time(), self.max_rooms, int(adopting)]))

    def full(self) -> RoomsFull:
        return RoomsFull(f"the lecture rooms hold their most live sessions ({self.max_rooms}) just now: "
                         "try again later")

    def create(self) -> tuple[str, str]:
        while True:
            code = new_code()
            secret = self.keys.new_secret(code)
            made = self._make(code, secret, 0, False)
            if made == -1:
                raise self.full()
            if made == 1:
                return code, secret

    def adopt(self, code: str, secret: str) -> bool:
        if not self.keys.proves(code, secret):
            return False
        made = self._make(code, secret, int(time.time() * 1000), True)
        if made == -1:
            raise self.full()
        return made == 1

    def owns(self, code: str, secret: str) -> bool:
        room = self._call(self.r.hget, self.key(code), "secret")
        return room is not None and hmac.compare_digest(room, digest(str(secret or "")))

    def _refused(self, answer: int) -> None:
        if answer == -1:
            raise NoSuchRoom("no such room (it may have ended)")
        if answer == -2:
            raise NotPresenter("only the presenter can change this room")

    def publish(self, code: str, secret: str, state: dict) -> int:
        body = json.dumps(clean_state(state), sort_keys=True)
        version = int(self._call(self._publish, keys=[self.key(code), self.INDEX],
                                 args=[digest(str(secret or "")), body, self.idle_s, time.time()]))
        self._refused(version)
        return version

    def read(self, code: str) -> Optional[RoomView]:
        room = self._call(self.r.hgetall, self.key(code))
        return RoomView(int(room["version"]), json.loads(room["state"])) if room else None

    def end(self, code: str, secret: str) -> None:
        self._refused(int(self._call(self._end, keys=[self.key(code), self.known_key(code), self.INDEX],
                                     args=[digest(str(secret or "")), ENDED_KEPT_S])))

    def known(self, code: str) -> bool:
        return bool(self._call(self.r.exists, self.known_key(code)))
