"""The trace cache (same sentence, one run), the micro-batcher (many sentences, batched runs),
and traces staying read-only under every view."""
from __future__ import annotations

import copy
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from transformer.serving.batcher import MicroBatcher
from transformer.trace import KINDS
from transformer.serving.trace_cache import TraceCache, TraceKey


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu")


@pytest.fixture(scope="module")
def batched(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu", cache_size=0, batch_workers=1, max_batch=8)


class FakeTrace:
    """Enough of a trace for the cache (freeze looks at its attention arrays)."""

    def __init__(self, text):
        self.text = text
        self.timed_out = False
        self.arr = np.zeros(3)

    def attention(self, kind):
        return type("M", (), {"probs": self.arr, "scores": self.arr})()


def test_single_flight_runs_once_for_concurrent_identical_requests():
    cache, calls = TraceCache(8), []

    def make():
        calls.append(1)
        time.sleep(0.2)
        return FakeTrace("x")
    key = TraceKey.of("The cat.", "ckpt", top_k=10)
    with ThreadPoolExecutor(12) as pool:
        got = list(pool.map(lambda _: cache.get(key, make), range(12)))
    assert len(calls) == 1 and all(g is got[0] for g in got)
    assert cache.stats()["misses"] == 1 and cache.stats()["hits"] + cache.stats()["joined"] == 11
    assert not got[0].arr.flags.writeable      # frozen before it is shared


def test_key_is_the_full_text_checkpoint_and_settings():
    cache = TraceCache(8)
    long = "word " * 200
    a = cache.get(TraceKey.of(long + "cat.", "c"), lambda: FakeTrace("a"))
    b = cache.get(TraceKey.of(long + "dog.", "c"), lambda: FakeTrace("b"))
    c = cache.get(TraceKey.of(long + "cat.", "other checkpoint"), lambda: FakeTrace("c"))
    d = cache.get(TraceKey.of(long + "cat.", "c", top_k=5), lambda: FakeTrace("d"))
    assert [t.text for t in (a, b, c, d)] == ["a", "b", "c", "d"]
    assert cache.get(TraceKey.of(long + "cat.", "c"), lambda: FakeTrace("again")) is a


def test_bounded_and_failures_not_cached():
    cache = TraceCache(3)
    for i in range(10):
        cache.get(TraceKey.of(str(i), "c"), lambda: FakeTrace("t"))
    assert len(cache) == 3
    key = TraceKey.of("bad", "c")
    with pytest.raises(RuntimeError):
        cache.get(key, lambda: (_ for _ in ()).throw(RuntimeError("boom")))
    assert cache.get(key, lambda: FakeTrace("ok")).text == "ok"


def test_rejected_traces_are_not_kept():
    cache = TraceCache(3, keep=lambda t: False)
    cache.get(TraceKey.of("a", "c"), lambda: FakeTrace("1"))
    assert cache.get(TraceKey.of("a", "c"), lambda: FakeTrace("2")).text == "2"


def test_translator_runs_the_model_once_per_sentence(translator):
    before = translator.cache.stats()["misses"]
    a = translator.trace("The cat is sleeping on the sofa.")
    b = translator.trace("  The cat   is sleeping on the sofa. ")     # same once cleaned
    c = translator.trace("The cat is sleeping on the bed.")
    assert a is b and c is not a and c.translation != a.translation
    assert translator.cache.stats()["misses"] - before == 2
    assert all(not a.attention(k).probs.flags.writeable for k in KINDS)


def test_microbatcher_gives_each_caller_its_own_result_and_batches():
    def run(items):
        time.sleep(0.05)
        return [f"out:{x}" for x in items]
    mb = MicroBatcher(run, max_batch=8, workers=1)
    with ThreadPoolExecutor(16) as pool:
        got = list(pool.map(mb.submit, range(16)))
    assert got == [f"out:{i}" for i in range(16)]
    assert mb.stats()["largest"] > 1 and mb.stats()["items"] == 16


def test_microbatcher_failure_reaches_only_callers_and_worker_survives():
    mb = MicroBatcher(lambda items: [1 / x for x in items], max_batch=1, workers=1)
    with pytest.raises(ZeroDivisionError):
        mb.submit(0)
    assert mb.submit(2) == 0.5


def test_batched_translator_gives_each_user_their_own_trace(translator, batched):
    texts = ["The cat is sleeping on the sofa.", "Where is the nearest train station?", "Hello.",
             "Two children are playing football in the park.", "I would like a cup of coffee, please."] * 2
    barrier = threading.Barrier(len(texts))

    def one(t):
        barrier.wait()
        return batched.trace(t)
    with ThreadPoolExecutor(len(texts)) as pool:
        got = list(pool.map(one, texts))
    for t, trace in zip(texts, got):
        want = translator.trace(t)
        assert trace.source.text == want.source.text and trace.tgt_ids == want.tgt_ids
        np.testing.assert_allclose(trace.cross.probs, want.cross.probs, rtol=1e-4, atol=1e-5)
    assert batched.batcher.stats()["largest"] > 1


def test_views_never_change_a_trace(translator, tmp_path):
    """Traces are shared between users: no view may write into one (frozen arrays would raise,
    and the lists are compared with a deep copy)."""
    from transformer.viz import views
    from transformer.viz.report import build_report
    trace = translator.trace("Two children are playing football in the park.")
    snapshot = copy.deepcopy(trace)
    lk = views.Look()
    for kind in KINDS:
        for mode in ("head", "mean", "rollout"):
            views.explorer_figure(trace, kind, 1, "1", mode, True, lk)
            views.explorer_figure(trace, kind, 2, "mean over heads", mode, False, lk)
        views.grid_figure(trace, kind, True, lk)
        views.grid_figure(trace, kind, False, lk)
        views.summary_view(trace, kind, lk)
        views.inside_view(trace, kind, 1, "2", 2, True, lk)
        views.inside_view(trace, kind, 1, "2", 1, False, lk)
    for step in range(1, len(trace.steps) + 1):
        views.step_view(trace, step, 1, "mean over heads", lk)
    views.positional_views(trace, translator.cfg.d_model, ["0", "1"], lk)
    views.pieces_html(trace), views.run_info(trace)
    build_report(trace, translator.cfg, lk)
    assert trace.steps == snapshot.steps and trace.source == snapshot.source
    assert (trace.tgt_ids, trace.tgt_pieces, trace.translation) == (snapshot.tgt_ids, snapshot.tgt_pieces,
                                                                     snapshot.translation)
    for kind in KINDS:
        a, b = trace.attention(kind), snapshot.attention(kind)
        assert a.queries == b.queries and a.keys == b.keys
        np.testing.assert_array_equal(a.probs, b.probs)
        np.testing.assert_array_equal(a.scores, b.scores)


class SizedTrace(FakeTrace):
    def __init__(self, text, n_bytes):
        super().__init__(text)
        self.arr = np.zeros(n_bytes // 8)


def test_bounded_in_bytes_whatever_the_entries():
    """Issue 38: a bound in entries alone let long inputs (25 MB traces) drive the cache to gigabytes. The
    least recently used go until the bytes fit; a result larger than the bound is returned but never kept."""
    cache = TraceCache(256, maxbytes=100_000)
    for i in range(10):
        cache.get(TraceKey.of(f"sentence {i}", "c"), lambda i=i: SizedTrace(str(i), 30_000))
        assert cache.stats()["bytes"] <= 100_000
    assert len(cache) == 3                                       # 3 × ~30 KB fit, not 10
    assert cache.get(TraceKey.of("sentence 9", "c"), lambda: SizedTrace("new", 8)).text == "9"   # newest kept
    huge = cache.get(TraceKey.of("long", "c"), lambda: SizedTrace("long", 200_000))
    assert huge.text == "long" and len(cache) == 3 and cache.stats()["bytes"] <= 100_000


def test_a_real_trace_is_counted_by_its_arrays(translator):
    from transformer.trace import KINDS
    from transformer.serving.trace_cache import nbytes
    trace = translator.trace("The cat is sleeping on the sofa.")
    arrays = sum(trace.attention(k).probs.nbytes for k in KINDS)
    assert arrays <= nbytes(trace) < 4 * arrays + 100_000


def test_a_session_holding_a_dropped_trace_does_not_hold_its_arrays(translator):
    """Issue 38, item 2: each session keeps its last trace, and a trace the byte-bounded cache dropped was
    held by the sessions alone, outside any bound (a long input's trace is 10-25 MB; 1,000 sessions,
    gigabytes). Dropped, its attention maps keep only weak references: the arrays go, and the same numbers
    come back, made again through the cache, when a view reads them."""
    import gc
    import weakref
    small = TraceCache(1)                                            # a cache that keeps one trace at a time
    made = []

    def make(text):
        def run():
            made.append(text)
            return translator._decode(translator.source(text),
                                      dict(top_k=10, max_new_tokens=None, deadline_s=30))
        return run
    first = small.get(TraceKey.of("a", "c"), make("The cat is sleeping on the sofa."))
    kept = {k: first.attention(k).probs.copy() for k in KINDS}
    arrays = weakref.ref(first.cross.probs)
    small.get(TraceKey.of("b", "c"), make("We will meet tomorrow morning."))     # pushes the first one out
    gc.collect()
    assert all(first.attention(k).released for k in KINDS) and arrays() is None   # its arrays are gone
    for k in KINDS:                                                  # read again: the same numbers
        np.testing.assert_array_equal(first.attention(k).probs, kept[k])
    assert made == ["The cat is sleeping on the sofa.", "We will meet tomorrow morning.",
                    "The cat is sleeping on the sofa."]              # made again once, for all three kinds
    from transformer.viz import views
    assert views.pieces_html(first)                                  # the views draw a released trace
