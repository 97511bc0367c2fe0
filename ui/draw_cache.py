"""Figures already drawn, shared by everyone who looks at the same trace the same way.

In a lecture a hundred students translate the lecturer's sentence: the trace cache
(``trace_cache.py``) makes that one model run and hands every one of them the same trace
object. Their views are then the same figures too (the same tab, controls and look), so a
redraw is kept here, keyed by the trace object (held by a weak reference, so a trace that
is gone can never be confused with a new one at the same address) and the view's arguments.

Only plain arguments make a key (None, bool, int, float, str, tuples of them); a draw given
anything else (a user's own forced-decoding result, say) is not cached. Drawing functions
must be pure: the same trace and arguments give the same outputs.
"""
from __future__ import annotations

import threading
import weakref
from typing import Any, Callable, Hashable, Optional

from cachetools import LRUCache

_PLAIN = (type(None), bool, int, float, str)


def plain_key(values) -> Optional[tuple]:
    """A hashable key of `values`, or None when one of them is not a plain value (lists become tuples)."""
    out = []
    for v in values:
        if isinstance(v, (list, tuple)):
            if not all(isinstance(x, _PLAIN) for x in v):
                return None
            out.append(("seq", tuple(v)))
        elif isinstance(v, _PLAIN):
            out.append(v)
        else:
            return None
    return tuple(out)


class DrawCache:
    """A bounded LRU of drawn outputs: ``get(view, trace, args, draw)`` returns draw()'s outputs,
    computed once per (view, trace object, args) while the entry lasts. Thread-safe, and single-flight:
    users who miss the same key while it is being drawn (a room's first Translate of the lecturer's
    sentence) wait for that one drawing instead of drawing it again; if it fails, each draws its own."""

    def __init__(self, maxsize: int = 512) -> None:
        self._lru: LRUCache = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()
        self._drawing: dict = {}          # key -> Event set when its drawing is stored (or has failed)
        self.hits = self.misses = 0

    def get(self, view: Hashable, trace: Any, args, draw: Callable[[], Any],
            freeze: Callable[[Any], Any] = None):
        key = plain_key(args)
        if key is None:
            return draw()
        if trace is None:
            ref, ident = None, None
        else:
            try:
                ref, ident = weakref.ref(trace), id(trace)
            except TypeError:              # not weak-referenceable: never cached
                return draw()
        k = (view, ident, key)
        for attempt in range(2):
            with self._lock:
                hit = self._lru.get(k)
                if hit is not None and (hit[0] is None if ref is None else hit[0]() is trace):
                    self.hits += 1
                    return hit[1]
                pending = self._drawing.get(k)
                if pending is None or attempt:
                    self.misses += 1
                    mine = self._drawing.setdefault(k, threading.Event()) if pending is None else None
                    break
            pending.wait(timeout=30)               # someone is drawing this very view: take theirs
        try:
            out = draw()
            if freeze is not None:
                out = freeze(out)
            with self._lock:
                self._lru[k] = (ref, out)
            return out
        finally:
            if mine is not None:
                with self._lock:
                    self._drawing.pop(k, None)
                mine.set()

    def __len__(self) -> int:
        return len(self._lru)
