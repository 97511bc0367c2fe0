"""Rooms in Redis (``RedisRooms``), shared by every app process that uses the same server: the same interface
as ``rooms.MemoryRooms`` (``rooms.RoomStore``), each change one atomic Lua script."""
from __future__ import annotations

import hmac
import json
import time
from typing import Optional

from transformer.votes import MAX_ANSWERS, MAX_QUESTIONS, tally

from .room_keys import RoomKeys
from .rooms import (ENDED_KEPT_S, FOLLOWERS_FRESH_S, ROOM_IDLE_S, ROOM_UNUSED_S, NoSuchRoom, NotPresenter,
                    Outage, QuestionClosed, RoomError, RoomsFull, RoomView, StoreDown, clean_state, digest,
                    new_code)
from .rooms import max_rooms as default_max_rooms

class RedisRooms:
    """Rooms in Redis, shared by every app process that uses the same server: one hash per room, expiring
    after ROOM_IDLE_S without a change (ROOM_UNUSED_S before its first view), and a sorted set of the rooms by
    expiry that caps how many there are. Making, adopting, publishing and ending a room are each one atomic
    script: no room is ever half written."""

    # KEYS: room, known, index. ARGV: secret digest, first version, unused_s, known_s, now,
    # max rooms, adopting.
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
    # KEYS: room, index, questions. ARGV: secret digest, state, idle_s, now.
    PUBLISH = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    if redis.call('HGET', KEYS[1], 'state') ~= ARGV[2] then
      redis.call('HSET', KEYS[1], 'state', ARGV[2])
      redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    redis.call('EXPIRE', KEYS[1], ARGV[3])
    if redis.call('EXISTS', KEYS[3]) == 1 then redis.call('EXPIRE', KEYS[3], ARGV[3]) end
    redis.call('ZADD', KEYS[2], tonumber(ARGV[4]) + tonumber(ARGV[3]), KEYS[1])
    return tonumber(redis.call('HGET', KEYS[1], 'version'))
    """
    # KEYS: room, known, index, questions. ARGV: secret digest, known_s.
    END = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    redis.call('DEL', KEYS[1])
    redis.call('ZREM', KEYS[3], KEYS[1])
    redis.call('SET', KEYS[2], 'ended', 'EX', ARGV[2])
    if redis.call('EXISTS', KEYS[4]) == 1 then redis.call('EXPIRE', KEYS[4], ARGV[2]) end
    return 1
    """
    # The room answers. Each question is JSON (votes.Question) in the room's hash of questions (with the
    # secret's digest, so that the presenter downloads them after the end too, and the questions' count, so
    # that a room taken up again never reuses a number); the current one also in the room's own hash (q, q_id,
    # q_open), which every answer checks in the same script that stores it. A question's answers go once its
    # counts are frozen. KEYS: room, questions. ARGV: secret digest, question JSON, idle_s, most questions.
    ASK = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    if redis.call('HLEN', KEYS[2]) > tonumber(ARGV[4]) + 1 then return -5 end
    local id = redis.call('HINCRBY', KEYS[2], '_seq', 1)
    local q = cjson.decode(ARGV[2])
    q['id'] = id
    q['status'] = 'open'
    local body = cjson.encode(q)
    redis.call('HSET', KEYS[2], '_secret', ARGV[1], tostring(id), body)
    redis.call('EXPIRE', KEYS[2], ARGV[3])
    redis.call('HSET', KEYS[1], 'q', body, 'q_id', tostring(id), 'q_open', '1')
    redis.call('HINCRBY', KEYS[1], 'version', 1)
    return body
    """
    # KEYS: room, answers. ARGV: question id, student, key, idle_s, most answers.
    ANSWER = """
    if redis.call('EXISTS', KEYS[1]) == 0 then return -1 end
    if redis.call('HGET', KEYS[1], 'q_id') ~= ARGV[1] or redis.call('HGET', KEYS[1], 'q_open') ~= '1' then
      return -4
    end
    local had = redis.call('HEXISTS', KEYS[2], ARGV[2])
    if had == 0 and redis.call('HLEN', KEYS[2]) >= tonumber(ARGV[5]) then return -6 end
    redis.call('HSET', KEYS[2], ARGV[2], ARGV[3])
    redis.call('EXPIRE', KEYS[2], ARGV[4])
    return had + 1
    """
    # KEYS: room, questions, answers. ARGV: secret digest, question id, followers, reveal (1/0).
    CLOSE = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    local body = redis.call('HGET', KEYS[2], ARGV[2])
    if not body then return -7 end
    local q = cjson.decode(body)
    if q['status'] == 'open' then
      local counts, n = {}, 0
      for _, v in ipairs(redis.call('HVALS', KEYS[3])) do
        counts[v] = (counts[v] or 0) + 1
        n = n + 1
      end
      q['counts'], q['answered'], q['followers'] = counts, n, tonumber(ARGV[3])
      redis.call('DEL', KEYS[3])
    end
    if ARGV[4] == '1' or q['status'] == 'revealed' then q['status'] = 'revealed'
    else q['status'] = 'closed' end
    body = cjson.encode(q)
    redis.call('HSET', KEYS[2], ARGV[2], body)
    if redis.call('HGET', KEYS[1], 'q_id') == ARGV[2] and redis.call('HGET', KEYS[1], 'q') ~= '' then
      redis.call('HSET', KEYS[1], 'q', body, 'q_open', '0')
      redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
    return body
    """
    # KEYS: room. ARGV: secret digest.
    DISMISS = """
    local secret = redis.call('HGET', KEYS[1], 'secret')
    if not secret then return -1 end
    if secret ~= ARGV[1] then return -2 end
    local q = redis.call('HGET', KEYS[1], 'q')
    if q and q ~= '' then
      redis.call('HSET', KEYS[1], 'q', '', 'q_open', '0')
      redis.call('HINCRBY', KEYS[1], 'version', 1)
    end
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
        # not answering, or not able to (read-only, out of memory)
        self.down_errors = (redis.exceptions.RedisError,)
        self.idle_s, self.unused_s = int(idle_s), int(max(1, unused_s))
        self.max_rooms = max_rooms or default_max_rooms()
        self.keys = keys or RoomKeys.of_this_app()
        self.outage = Outage("the room store (Redis)")
        self._create = self.r.register_script(self.CREATE)
        self._publish = self.r.register_script(self.PUBLISH)
        self._end = self.r.register_script(self.END)
        self._ask, self._answer = self.r.register_script(self.ASK), self.r.register_script(self.ANSWER)
        self._close, self._dismiss = self.r.register_script(self.CLOSE), self.r.register_script(self.DISMISS)
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
    def questions_key(code: str) -> str:
        return f"transformer-room-questions:{str(code).upper()}"

    @staticmethod
    def answers_key(code: str, qid) -> str:
        return f"transformer-room-answers:{str(code).upper()}:{int(qid)}"

    @staticmethod
    def followers_key(code: str) -> str:
        return f"transformer-room-followers:{str(code).upper()}"

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
        version = int(self._call(self._publish, keys=[self.key(code), self.INDEX, self.questions_key(code)],
                                 args=[digest(str(secret or "")), body, self.idle_s, time.time()]))
        self._refused(version)
        return version

    def read(self, code: str) -> Optional[RoomView]:
        room = self._call(self.r.hgetall, self.key(code))
        if not room:
            return None
        return RoomView(int(room["version"]), json.loads(room["state"]),
                        json.loads(room["q"]) if room.get("q") else None)

    def end(self, code: str, secret: str) -> None:
        self._refused(int(self._call(self._end, keys=[self.key(code), self.known_key(code), self.INDEX,
                                                      self.questions_key(code)],
                                     args=[digest(str(secret or "")), ENDED_KEPT_S])))

    def known(self, code: str) -> bool:
        return bool(self._call(self.r.exists, self.known_key(code)))

    # -- the room answers (see rooms.RoomStore) --
    def _body(self, out) -> dict:
        if isinstance(out, int):
            self._refused(out)
            if out == -5:
                raise RoomError(f"a room holds at most {MAX_QUESTIONS} questions")
            raise RoomError("no such question in this room")
        return json.loads(out)

    def ask(self, code: str, secret: str, question: dict) -> dict:
        return self._body(self._call(self._ask, keys=[self.key(code), self.questions_key(code)],
                                     args=[digest(str(secret or "")), json.dumps(question), self.idle_s,
                                           MAX_QUESTIONS]))

    def answer(self, code: str, qid: int, student: str, key: str) -> bool:
        out = int(self._call(self._answer, keys=[self.key(code), self.answers_key(code, qid)],
                             args=[int(qid), student, key, self.idle_s, MAX_ANSWERS]))
        if out == -1:
            raise NoSuchRoom("no such room (it may have ended)")
        if out == -4:
            raise QuestionClosed("this question is closed")
        if out == -6:
            raise QuestionClosed("this question has all the answers it can take")
        return out == 2

    def close(self, code: str, secret: str, qid: int, followers: int, reveal: bool) -> dict:
        return self._body(self._call(self._close, keys=[self.key(code), self.questions_key(code),
                                                        self.answers_key(code, qid)],
                                     args=[digest(str(secret or "")), int(qid), int(followers),
                                           int(bool(reveal))]))

    def dismiss(self, code: str, secret: str) -> None:
        self._refused(int(self._call(self._dismiss, keys=[self.key(code)], args=[digest(str(secret or ""))])))

    def tally(self, code: str, qid: int) -> dict:
        return tally(self._call(self.r.hvals, self.answers_key(code, qid)))

    def questions(self, code: str, secret: str) -> list:
        kept = self._call(self.r.hgetall, self.questions_key(code))
        if not kept or not hmac.compare_digest(kept.pop("_secret", ""), digest(str(secret or ""))):
            raise NotPresenter("only the presenter can download the room's questions")
        kept.pop("_seq", None)
        out = [json.loads(body) for _, body in sorted(kept.items(), key=lambda kv: int(kv[0]))]
        return [q if q["status"] != "open" else {**q, "counts": self.tally(code, q["id"])} for q in out]

    def followed(self, code: str, process: str, n: int) -> None:
        key = self.followers_key(code)
        pipe = self.r.pipeline()
        pipe.hset(key, process, f"{int(n)}:{time.time():.1f}")
        pipe.expire(key, int(4 * FOLLOWERS_FRESH_S))
        self._call(pipe.execute)

    def followers(self, code: str) -> int:
        told = self._call(self.r.hgetall, self.followers_key(code))
        now, n = time.time(), 0
        for value in told.values():
            count, _, when = value.partition(":")
            if count.isdigit() and now - float(when or 0) <= FOLLOWERS_FRESH_S:
                n += int(count)
        return n
