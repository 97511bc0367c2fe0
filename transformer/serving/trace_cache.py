"""Traces kept in memory, so that a room typing the lecturer's sentence costs one model run.

``TraceCache`` is a bounded LRU (``cachetools.LRUCache``) of finished traces with
single-flight: when several requests ask for the same key at once, the first one runs the
model and the others wait for its result instead of all running it. The key is
``TraceKey``: the full cleaned text (never a hash or a prefix: one user can never be handed
another user's sentence), the checkpoint's identity and every decoding setting. A trace is
frozen (``freeze``: its arrays made read-only) before it is shared. No torch, no gradio.
"""
from __future__ import annotations

import threading
from concurrent.futures import Future
from dataclasses import dataclass
from typing import Callable, Hashable

import numpy as np
from cachetools import LRUCache

from ..trace import KINDS, TranslationTrace

TRACE_CACHE_SIZE = 256      # finished traces kept in memory (same sentence, same settings: one model run)
# ...and at most this many bytes of them: one 1,000-character trace is 10-25 MB
TRACE_CACHE_BYTES = 384 * 2**20


@dataclass(frozen=True)
class TraceKey:
    """What a trace depends on. Add a field here when decoding gains a setting (beam width, ...)."""

    text: str                 # the cleaned source text the model reads, in full
    checkpoint: Hashable      # which weights and tokenizer (Translator.checkpoint_id)
    settings: tuple = ()      # decoding settings, as sorted (name, value) pairs

    @classmethod
    def of(cls, text: str, checkpoint: Hashable, **settings) -> "TraceKey":
        return cls(text, checkpoint, tuple(sorted(settings.items())))


def nbytes(obj, depth: int = 0) -> int:
    """About how much memory a cached result holds: its numpy arrays' bytes, and its text, found through its
    attributes, lists, tuples and dicts (4 levels down); anything else counts 64 bytes."""
    if isinstance(obj, np.ndarray):
        return int(obj.nbytes)
    if isinstance(obj, (str, bytes)):
        return len(obj)
    if depth >= 4:
        return 64
    if isinstance(obj, dict):
        return 64 + sum(nbytes(v, depth + 1) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return 64 + sum(nbytes(v, depth + 1) for v in obj)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {k: getattr(obj, k, None) for k in obj.__slots__}
    return 64 + (sum(nbytes(v, depth + 1) for v in fields.values()) if fields else 0)


def freeze(trace: TranslationTrace) -> TranslationTrace:
    """Make the trace's arrays read-only, so a view that tried to change a shared trace would fail loudly."""
    for kind in KINDS:
        maps = trace.attention(kind)
        for arr in (maps.probs, maps.scores):
            if isinstance(arr, np.ndarray):
                arr.flags.writeable = False
    return trace


class _ReleasingLRU(LRUCache):
    """An LRU that tells `evicted(key, value)` what it drops to make room."""

    def __init__(self, maxsize, getsizeof, evicted: Callable) -> None:
        super().__init__(maxsize=maxsize, getsizeof=getsizeof)
        self._evicted = evicted

    def popitem(self):
        key, value = super().popitem()
        self._evicted(key, value)
        return key, value


class TraceCache:
    """Bounded, thread-safe, single-flight cache of traces. ``get(key, make)`` returns the cached
    trace or runs ``make()`` once for all concurrent callers of the same key. A failure is not
    cached (each waiting caller gets the exception); nor is a trace that ``keep`` rejects (e.g.
    one cut by the time limit, which depends on the load, not on the sentence). It keeps other results of a
    sentence the same way (the translator's attributions), given how to make them read-only (`frozen`).

    Bounded twice: at most ``maxsize`` entries and at most ``maxbytes`` bytes (``nbytes``), the least recently
    used going first; a result larger than ``maxbytes`` alone is returned but not kept. Long inputs make
    traces a hundred times larger than short ones, so a bound in entries alone lets input
    choose the memory."""

    def __init__(self, maxsize: int = TRACE_CACHE_SIZE,
                 keep: Callable[[TranslationTrace], bool] = lambda t: True,
                 frozen: Callable = freeze, maxbytes: int = TRACE_CACHE_BYTES,
                 after_evictions: Callable[[], None] = lambda: None) -> None:
        self._lru: LRUCache = _ReleasingLRU(max(1, maxbytes), nbytes, self._evicted)
        # how each kept trace was made: to make it again (`_evicted`)
        self._makers: dict[Hashable, Callable] = {}
        self._maxentries = max(1, maxsize)
        # e.g. hand freed memory back to the system
        self._after_evictions, self._evictions = after_evictions, 0
        self._in_flight: dict[TraceKey, Future] = {}
        self._lock = threading.Lock()
        self._keep, self._frozen = keep, frozen     # `frozen`: makes a result read-only (traces: `freeze`)
        self.hits = self.misses = self.joined = 0

    def __len__(self) -> int:
        with self._lock:
            return len(self._lru)

    def get(self, key: TraceKey, make: Callable[[], TranslationTrace]) -> TranslationTrace:
        with self._lock:
            trace = self._lru.get(key)
            if trace is not None:
                self.hits += 1
                return trace
            future = self._in_flight.get(key)
            owner = future is None
            if owner:
                future = self._in_flight[key] = Future()
                self.misses += 1
            else:
                self.joined += 1
        if not owner:
            return future.result()
        try:
            trace = self._frozen(make())
        except BaseException as e:
            with self._lock:
                del self._in_flight[key]
            future.set_exception(e)
            raise
        with self._lock:
            evictions = self._evictions
            if self._keep(trace) and nbytes(trace) <= self._lru.maxsize:
                self._makers[key] = make
                self._lru[key] = trace                  # evicts the least recently used until the bytes fit
                while len(self._lru) > self._maxentries:
                    self._lru.popitem()
            del self._in_flight[key]
            evicted = self._evictions != evictions
        future.set_result(trace)
        if evicted:
            self._after_evictions()
        return trace

    def _evicted(self, key, value) -> None:
        """A trace leaves the cache: users' sessions may still hold it, so its attention maps let go of their
        arrays (``AttentionMaps.release``) and get them back, made again through this cache, if
        they are read."""
        self._evictions += 1
        make = self._makers.pop(key, None)
        if make is None or not isinstance(value, TranslationTrace):
            return
        for kind in KINDS:
            value.attention(kind).release(lambda kind=kind: self.get(key, make).attention(kind))

    def stats(self) -> dict:
        with self._lock:
            return dict(size=len(self._lru), maxsize=self._maxentries, bytes=self._lru.currsize,
                        maxbytes=self._lru.maxsize, hits=self.hits, misses=self.misses, joined=self.joined)
