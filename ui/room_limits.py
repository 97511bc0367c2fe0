"""What one client may ask of the lecture rooms (no gradio here), counted with the `limits` package in moving
windows, in this app process's memory:

- live sessions started: ROOMS_PER_CLIENT (a loop cannot fill the store; a presenter starts one or two);
- answers to the room's questions: ANSWERS_PER_STUDENT per student token (a student changes their mind a few
  times; a script cannot flood the count) and ANSWERS_PER_CLIENT per address (a class behind one address
  answers together, far below it);
- different codes asked for that name no room: MISSES_PER_CLIENT, beyond which the client is locked out of
  every room lookup for LOCKOUT (a guesser learns nothing more; a class behind one address mistyping a code,
  or waiting for a room a restart lost, stays far below it: the same code counts once).

A client is its network address as the server sees it (behind a proxy, the proxy's: start the server with the
proxy's forwarded-address settings). Several app processes each count their own.
"""
from __future__ import annotations

import math
import time

from limits import parse, storage, strategies

ROOMS_PER_CLIENT = "6 per 10 minutes"
MISSES_PER_CLIENT = "120 per minute"
LOCKOUT = "5 minutes"
ANSWERS_PER_STUDENT = "10 per 10 seconds"
ANSWERS_PER_CLIENT = "1200 per minute"


class RoomLimits:
    def __init__(self, rooms: str = ROOMS_PER_CLIENT, misses: str = MISSES_PER_CLIENT,
                 lockout: str = LOCKOUT) -> None:
        self.window = strategies.MovingWindowRateLimiter(storage.MemoryStorage())
        self.rooms, self.misses = parse(rooms), parse(misses)
        self.answers_student, self.answers_client = parse(ANSWERS_PER_STUDENT), parse(ANSWERS_PER_CLIENT)
        self.lockout = parse(f"1 per {lockout}")
        self.seen = parse(f"1 per {self.misses.get_expiry()} seconds")    # a code counts once per window

    def may_create(self, client: str) -> bool:
        """Counts a live session started by `client`; False beyond its allowance (then nothing is counted)."""
        return self.window.hit(self.rooms, "create", client)

    def may_answer(self, client: str, student: str) -> bool:
        """Counts an answer from `student` at `client`; False beyond either allowance."""
        return (self.window.hit(self.answers_student, "answer", student)
                and self.window.hit(self.answers_client, "answers", client))

    def locked_for(self, client: str) -> int:
        """Seconds `client` stays locked out of room lookups (0: it is not)."""
        if self.window.test(self.lockout, "locked", client):
            return 0
        reset = self.window.get_window_stats(self.lockout, "locked", client).reset_time
        return max(1, math.ceil(reset - time.time()))

    def missed(self, client: str, code: str) -> int:
        """`client` asked for `code`, which names no room: past MISSES_PER_CLIENT different codes it is locked
        out for LOCKOUT (returns the seconds it is locked out, 0 if it is not). The same code asked again does
        not count again within the window: the pages of a class waiting for a room a restart lost
        poll its code."""
        if not self.window.test(self.seen, "asked", client, code):
            return 0
        self.window.hit(self.seen, "asked", client, code)
        if not self.window.hit(self.misses, "miss", client):
            self.window.hit(self.lockout, "locked", client)
            return self.locked_for(client)
        return 0
