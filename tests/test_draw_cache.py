"""The shared draw cache: one drawing per (view, trace object, controls), never another trace's figure."""
from ui.draw_cache import DrawCache, plain_key


class Trace:   # stands for a TranslationTrace: the cache only needs an object it can weakly reference
    def __init__(self, text):
        self.text = text


def test_the_same_trace_and_controls_draw_once():
    cache, calls = DrawCache(8), []

    def draw(t, layer):
        calls.append((t.text, layer))
        return (f"{t.text}@{layer}",)
    t = Trace("a")
    first = cache.get("v", t, (1,), lambda: draw(t, 1))
    again = cache.get("v", t, (1,), lambda: draw(t, 1))
    other_layer = cache.get("v", t, (2,), lambda: draw(t, 2))
    other_view = cache.get("w", t, (1,), lambda: draw(t, 1))
    assert first is again and first == ("a@1",) and other_layer == ("a@2",) and other_view == ("a@1",)
    assert calls == [("a", 1), ("a", 2), ("a", 1)] and (cache.hits, cache.misses) == (1, 3)


def test_an_equal_looking_trace_of_another_user_is_drawn_for_itself():
    cache = DrawCache(8)
    a, b = Trace("same"), Trace("same")
    assert cache.get("v", a, (1,), lambda: ("drawn for a",)) == ("drawn for a",)
    assert cache.get("v", b, (1,), lambda: ("drawn for b",)) == ("drawn for b",)


def test_a_dead_trace_never_answers_for_a_new_one_at_the_same_address():
    cache, addresses = DrawCache(8), set()
    for i in range(50):     # CPython reuses freed addresses: a key by id() alone would hand back old figures
        t = Trace(str(i))
        addresses.add(id(t))
        assert cache.get("v", t, (), lambda t=t: (t.text,)) == (str(i),)
        # freed here (no cycle): a full gc.collect() each time took 14 s in a loaded process
        del t
    assert len(addresses) < 50                       # an address came back: the test had something to catch


def test_only_plain_arguments_make_a_key():
    assert plain_key([1, "x", None, 2.5, True, ["3", "4"]]) == (1, "x", None, 2.5, True, ("seq", ("3", "4")))
    assert plain_key([object()]) is None and plain_key([[object()]]) is None
    cache, calls = DrawCache(8), []
    t, result = Trace("a"), object()
    for _ in range(2):
        cache.get("v", t, (result,), lambda: calls.append(1) or ("x",))
    assert len(calls) == 2 and len(cache) == 0


def test_freeze_runs_once_and_the_cache_stays_bounded():
    cache, frozen = DrawCache(4), []
    t = Trace("a")
    for layer in range(10):
        cache.get("v", t, (layer,), lambda: ("fig",),
                  lambda out: frozen.append(1) or tuple(o.upper() for o in out))
    assert len(cache) == 4 and len(frozen) == 10
    assert cache.get("v", t, (9,), lambda: ("not drawn",)) == ("FIG",)


def test_users_missing_the_same_view_at_once_share_one_drawing():
    import threading
    import time
    cache, calls, t = DrawCache(8), [], Trace("lecture")

    def slow_draw():
        calls.append(1)
        time.sleep(0.2)
        return ("figure",)
    results = []
    threads = [threading.Thread(target=lambda: results.append(cache.get("v", t, (1,), slow_draw)))
               for _ in range(8)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert results == [("figure",)] * 8 and len(calls) == 1


def test_a_failed_drawing_lets_the_waiting_users_draw_their_own():
    import threading
    import time
    cache, t, results = DrawCache(8), Trace("x"), []

    def failing():
        time.sleep(0.1)
        raise RuntimeError("boom")

    def first():
        try:
            cache.get("v", t, (), failing)
        except RuntimeError:
            results.append("failed")
    th = threading.Thread(target=first)
    th.start()
    time.sleep(0.02)
    results.append(cache.get("v", t, (), lambda: ("drawn",)))
    th.join()
    assert sorted(map(str, results)) == ["('drawn',)", "failed"]


def test_a_rooms_attribution_is_drawn_once_for_every_page():
    """ui.page.drawn_once (the attribution's maps): pages given the same cached attribution object and look
    get the same figures, drawn once; another layer or another attribution object draws again."""
    import plotly.graph_objects as go

    from ui.page import drawn_once
    calls = []

    def draw(layer):
        calls.append(layer)
        return ("gap", go.Figure(go.Heatmap(z=[[layer]])))
    shared, recomputed = Trace("attribution"), Trace("attribution")
    pages = [drawn_once("attr-test", shared, (1, "Light"), lambda: draw(1)) for _ in range(5)]
    assert calls == [1] and all(p[1] is pages[0][1] for p in pages)
    assert pages[0][0] == "gap" and '"z":[[1]]' in pages[0][1].plot.replace(" ", "")
    drawn_once("attr-test", shared, (2, "Light"), lambda: draw(2))
    drawn_once("attr-test", recomputed, (1, "Light"), lambda: draw(1))
    assert calls == [1, 2, 1]
