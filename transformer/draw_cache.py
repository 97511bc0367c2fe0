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
    computed once per (view, trace object, args) while the entry lasts. Thread-safe; two users
    missing at the same moment both draw (drawing is cheap next to the model run)."""

    def __init__(self, maxsize: int = 512) -> None:
        self._lru: LRUCache = LRUCache(maxsize=maxsize)
        self._lock = threading.Lock()
        self.hits = self.misses = 0

    def get(self, view: Hashable, trace: Any, args, draw: Callable[[], Any], freeze: Callable[[Any], Any] = None):
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
        with self._lock:
            hit = self._lru.get(k)
            if hit is not None and (hit[0] is None if ref is None else hit[0]() is trace):
                self.hits += 1
                return hit[1]
            self.misses += 1
        out = draw()
        if freeze is not None:
            out = freeze(out)
        with self._lock:
            self._lru[k] = (ref, out)
        return out

    def __len__(self) -> int:
        return len(self._lru)
