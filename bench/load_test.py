"""Load test that does what a browser does: N simulated users, raw HTTP + SSE, in one light process.

``python bench/load_test.py [--scenario browser|lecture|burst|arrive|attribution|attribution-memory] [--users
16] [--duration 60] [--think 5]``
starts app.py on 127.0.0.1 (or uses --url). Each user is a page of its own (a session hash),
driven like Gradio's frontend drives it (bench/record_browser.py records a real browser's requests;
bench/browser_requests_*.json): it reads ``/config``, keeps every component's value, sends an
event's inputs to ``/gradio_api/queue/join`` (or ``/run/predict`` for unqueued events) and reads
the answer from the SSE stream ``/queue/data``, then runs what the browser runs next: the
event's ``.then`` chain and the ``change`` events of every output whose value changed.

Scenarios (each action's latency is the whole chain a click starts, e.g. Translate → figures):
- browser: open the page; then, until --duration: Translate the user's own sentence, Next 5 times,
  open the "Attention explorer" tab, change its layer, back to the first tab; --think s between actions.
- lecture: everyone opens the page; once all are open, all submit the SAME sentence within one second, then
  each steps through it (Next until the end) with --think s between steps.
- burst: everyone opens the page; once all are open, all submit a different sentence within one second, once
  (Translate only).
- arrive: as burst, but each user submits as soon as their own page is open, while the others' pages still
  open (the burst scenario before 2026-11-25: its translations overlap up to 100 pages' opening).
- attribution: everyone opens the page; once all are open, all press "Compute attribution" on the lecturer's
  sentence within one second (a room asking the same question: computed once, shared through the cache).
- attribution-memory: one user computes the attribution of --users different sentences, one after another; the
  app's RSS after them is the figure (attributions are bounded: chunks, a bounded cache).
Checks that every user saw their own translation and their own steps ("crossed" otherwise). Exit
code 1 on any error or crossed result. Prints p50/p95/max per action and the load generator's CPU.
"""
from __future__ import annotations

import argparse
import asyncio
import html
import itertools
import json
import random
import resource
import statistics
import sys
import time
from dataclasses import dataclass, field

from toolkit import percentile  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)
from harness.app import start_app, stop_app  # noqa: E402
from harness.gradio_page import AppConfig, Page  # noqa: E402
from ui.settings import APP_CONCURRENCY  # noqa: E402

SUBJECTS = ["My sister", "The teacher", "Our neighbour", "A young boy", "The old woman", "His friend",
            "The doctor", "My father"]
VERBS = ["is reading", "bought", "is cooking", "found", "likes", "is painting", "forgot", "is carrying"]
OBJECTS = ["a red book", "the small table", "some fresh bread", "a blue umbrella", "the heavy box",
           "a long letter", "an old map", "the new bicycle"]
LECTURE_SENTENCE = "The students are listening to the teacher in the big room."
NEXT_STEPS = 5


# --first-user: whose sentences user 0 sends (another value: sentences an app running has not seen)
FIRST_USER = 0


def user_sentences(user: int, n: int = 6) -> list[str]:
    rng = random.Random(user + FIRST_USER)
    combos = list(itertools.product(SUBJECTS, VERBS, OBJECTS))
    rng.shuffle(combos)
    return [f"{s} {v} {o}." for s, v, o in combos[:n]]


def long_sentences(n: int) -> list[str]:
    """n different two-clause sentences (about 18 words): what attribution's memory grows with."""
    pairs = user_sentences(1000, 2 * n)
    return [f"{a[:-1]} while {b[0].lower()}{b[1:]}" for a, b in zip(pairs[::2], pairs[1::2])]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", choices=list(SCENARIOS),
                   default="browser")
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--duration", type=float, default=60.0,
                   help="seconds of load after the last user arrived (browser scenario)")
    p.add_argument("--think", type=float, default=5.0,
                   help="seconds a user waits between actions (randomised ±50%%)")
    p.add_argument("--ramp", type=float, default=0.0,
                   help="users arrive evenly over this many seconds (0: all open the page at once)")
    p.add_argument("--url", default=None, help="an app already running (default: start one here)")
    p.add_argument("--first-user", type=int, default=0,
                   help="number the users' sentences from here: a second run against the same app (--url) "
                        "with another value sends mostly other sentences (there are 512 in all: some repeat)")
    p.add_argument("--concurrency", type=int, default=APP_CONCURRENCY,
                   help="app's --concurrency when started here")
    p.add_argument("--app-args", default="", help="more arguments for app.py when started here")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line too")
    p.add_argument("--trace-events", action="store_true",
                   help="print every event the first user sends, with its time and bytes (what an action "
                        "costs)")
    return p.parse_args(argv)


# ---------------------------------------------------------------- one page, as Gradio's frontend drives it
# ---------------------------------------------------------------- users and what they check
@dataclass
class Load:
    think: float
    stop_at: float = 0.0
    latency: dict = field(default_factory=dict)
    errors: list = field(default_factory=list)
    crossed: list = field(default_factory=list)
    # translations the app cut at its time limit (a busy machine, not a crossed result)
    timed_out: int = 0
    bytes: int = 0

    def timed(self, name: str):
        load = self

        class Timer:
            async def __aenter__(self):
                self.t0 = time.perf_counter()

            async def __aexit__(self, *exc):
                if exc[0] is None:
                    load.latency.setdefault(name, []).append(time.perf_counter() - self.t0)
        return Timer()

    async def pause(self) -> None:
        if self.think > 0:
            await asyncio.sleep(self.think * random.uniform(0.5, 1.5))


@dataclass
class Ids:
    """The components a user touches, found in /config by elem_id, label and tab id."""

    text: int
    go: int
    french: int
    next: int
    step_info: int
    first_tab: int
    run_info: int
    explorer_tab: int
    explorer_layer: int
    attr_btn: int
    attr_json: int

    @classmethod
    def of(cls, app: AppConfig) -> "Ids":
        tabs = [cid for cid, c in app.components.items() if c["type"] == "tabitem"]
        explorer = app.find(id="explorer")
        layer = next(cid for cid, c in app.components.items() if c["type"] == "slider"
                     and c["props"].get("label") == "Layer" and cid > explorer)
        return cls(app.find(elem_id="src-text"), app.find(elem_id="translate-btn"),
                   app.find(elem_id="fr-text"), app.find(elem_id="next-step"), app.find(elem_id="step-info"),
                   tabs[0], app.find(elem_id="run-info"), explorer, layer, app.find(elem_id="attr-btn"),
                   app.find(elem_id="attr-json"))


def check_own(u: int, page: Page, ids: Ids, text: str, expected: dict, load: Load,
              step: int | None = None) -> None:
    """The user's page shows the translation of their own sentence (and, at a step, their own French so
    far)."""
    french, steps = expected[text]
    if "time limit" in str(page.values.get(ids.run_info)):
        load.timed_out += step in (None, 1)
        return
    if page.values.get(ids.french) != french:
        load.crossed.append(f"user {u}: {text!r} -> {page.values.get(ids.french)!r}, expected {french!r}")
    if step is not None:
        info = page.values.get(ids.step_info) or ""
        want = f"Step {step} of {len(steps)}"
        so_far = html.escape(steps[step - 1])
        if want not in info or f"French so far: <b>{so_far}</b>" not in info:
            load.crossed.append(f"user {u}: step {step} of {text!r} shows another trace")


async def translate_and_step(u: int, page: Page, ids: Ids, text: str, expected: dict, load: Load,
                             n_next: int) -> None:
    page.values[ids.text] = text
    async with load.timed("translate"):
        await page.fire(ids.go, "click")
    check_own(u, page, ids, text, expected, load, 1)
    for k in range(min(n_next, len(expected[text][1]) - 1)):
        await load.pause()
        async with load.timed("next step"):
            await page.fire(ids.next, "click")
        check_own(u, page, ids, text, expected, load, k + 2)


async def browser_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    sentences = user_sentences(u)
    for i in itertools.count():
        if time.time() >= load.stop_at:
            return
        if i:
            await page.fire(ids.first_tab, "select")
        await translate_and_step(u, page, ids, sentences[i % len(sentences)], expected, load, NEXT_STEPS)
        await load.pause()
        async with load.timed("open tab"):
            await page.fire(ids.explorer_tab, "select")
        await load.pause()
        async with load.timed("change layer"):
            await page.set_and_change(ids.explorer_layer,
                                      2 if page.values.get(ids.explorer_layer) == 1 else 1)
        await load.pause()


async def lecture_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    await asyncio.sleep(random.uniform(0, 1.0))           # the room types the same sentence within a second
    await translate_and_step(u, page, ids, LECTURE_SENTENCE, expected, load, 10 ** 6)


async def burst_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    await asyncio.sleep(random.uniform(0, 1.0))           # the room presses within a second
    await arrive_user(u, page, ids, expected, load)


async def arrive_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    text = user_sentences(u)[0]
    page.values[ids.text] = text
    async with load.timed("translate"):
        await page.fire(ids.go, "click")
    check_own(u, page, ids, text, expected, load)


async def attribute(u: int, page: Page, ids: Ids, text: str, expected: dict, load: Load) -> None:
    """Press "Compute attribution" for `text` (the sentence box's), and check it is this sentence's."""
    page.values[ids.text] = text
    async with load.timed("attribution"):
        await page.fire(ids.attr_btn, "click")
    got = (page.values.get(ids.attr_json) or {}).get("translation")
    if got != expected[text][0]:
        load.crossed.append(f"user {u}: attribution of {text!r} is of {got!r}")


async def attribution_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    await asyncio.sleep(random.uniform(0, 1.0))           # the room presses within a second
    await attribute(u, page, ids, LECTURE_SENTENCE, expected, load)


async def attribution_memory_user(u: int, page: Page, ids: Ids, expected: dict, load: Load) -> None:
    if u == 0:
        for text in sorted(expected):
            await attribute(u, page, ids, text, expected, load)


SCENARIOS = {"browser": browser_user, "lecture": lecture_user, "burst": burst_user, "arrive": arrive_user,
             "attribution": attribution_user,
             "attribution-memory": attribution_memory_user}


async def run_users(url: str, scenario: str, users: int, expected: dict, load: Load,
                    trace_events: bool = False, ramp: float = 0.0) -> float:
    import httpx
    limits = httpx.Limits(max_connections=4 * users + 10, max_keepalive_connections=2 * users + 10)
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), limits=limits) as http:
        r = await http.get(url.rstrip("/") + "/config")
        app = AppConfig(r.json())
        ids = Ids.of(app)

        opened, all_open = [0], asyncio.Event()

        def count_open() -> None:
            opened[0] += 1
            if opened[0] >= users:
                # e.g. to start py-spy
                print(f"# all {users} pages open ({time.time() - t0:.1f} s)", file=sys.stderr, flush=True)
                all_open.set()

        async def one(u: int) -> None:
            page, counted = Page(http, url, app), False
            page.trace = trace_events and u == 0
            await asyncio.sleep(ramp * u / users)          # --ramp: users arrive one after another
            try:
                async with load.timed("open page"):
                    await page.open()
                count_open()
                counted = True
                # the room has the page open when it starts
                if scenario in ("lecture", "burst", "attribution"):
                    await all_open.wait()
                await SCENARIOS[scenario](u, page, ids, expected, load)
            except Exception as e:  # noqa: BLE001
                load.errors.append(f"user {u}: {type(e).__name__}: {e}")
                if not counted:
                    count_open()
            load.bytes += page.bytes
        t0 = time.time()
        await asyncio.gather(*(one(u) for u in range(users)))
        return time.time() - t0


def expected_results(scenario: str, users: int) -> dict:
    """text -> (French, French so far at every step), from the same model and greedy path."""
    from transformer.io.tokenizer import detokenize
    from transformer.serving.translator import Translator
    tr = Translator(None, "cpu")
    if scenario in ("lecture", "attribution"):
        texts = {LECTURE_SENTENCE}
    elif scenario == "attribution-memory":                  # one user, `users` different sentences
        texts = set(long_sentences(users))
    else:
        # the sentences each user sends
        per_user = {"burst": 1, "arrive": 1, "browser": len(user_sentences(0))}[scenario]
        texts = {s for u in range(users) for s in user_sentences(u)[:per_user]}
    out = {}
    for t in texts:
        trace = tr.trace(t, deadline_s=None)      # never cut by the time limit, however busy the machine
        out[t] = (trace.translation,
                  [detokenize(trace.tgt_pieces[:k]) for k in range(1, len(trace.steps) + 1)])
    return out


def stats(xs) -> dict:
    if not xs:
        return dict(n=0)
    xs = sorted(xs)
    return dict(n=len(xs), p50_ms=round(1000 * statistics.median(xs)),
                p95_ms=round(1000 * percentile(xs, 0.95)), max_ms=round(1000 * xs[-1]))


def summary(args, load: Load, wall: float, cpu_s: float, rss_mb) -> dict:
    every = [x for name, xs in load.latency.items() if name != "open page" for x in xs]
    result = dict(scenario=args.scenario, users=args.users, think_s=args.think, ramp_s=args.ramp,
                  duration_s=round(wall, 1), actions=len(every), errors=len(load.errors),
                  crossed=len(load.crossed), timed_out=load.timed_out, all=stats(every),
                  per_action={k: stats(v) for k, v in load.latency.items()},
                  received_mb=round(load.bytes / 2**20, 2), load_generator_cpu_s=round(cpu_s, 1),
                  app_rss_mb=rss_mb)
    print(f"{args.scenario}: {args.users} users, {wall:.0f} s: {len(every)} actions, {len(load.errors)} "
          f"errors, {len(load.crossed)} crossed, {load.timed_out} cut at the time limit; received "
          f"{result['received_mb']} MB; load generator CPU {cpu_s:.1f} s"
          + (f"; app RSS {rss_mb['rss']:.0f} MB, PSS {rss_mb['pss']:.0f} MB ({rss_mb['processes']} "
             f"processes; the app's own RSS {rss_mb['app_rss']:.0f} MB)" if rss_mb else ""))
    for k, s in [("all", result["all"]), *result["per_action"].items()]:
        if s["n"]:
            print(f"  {k:13} n={s['n']:5}  p50 {s['p50_ms']:6} ms  p95 {s['p95_ms']:6} ms  max "
                  f"{s['max_ms']:6} ms")
    for line in (load.errors + load.crossed)[:10]:
        print("  !", line)
    return result


def app_rss_mb(proc):
    """The memory of the app started here (None with --url) and of any processes it started (decoding
    processes): the sum of their RSS (which counts the libraries they share, e.g. torch's, once per process:
    an upper bound) and of their PSS (shared pages split between them)."""
    try:
        import psutil
        app = psutil.Process(proc.pid)
        procs = [app, *app.children(recursive=True)]
    except Exception:  # noqa: BLE001  (no psutil, or the app has gone)
        return None
    rss = pss = 0.0
    for p in procs:
        try:
            m = p.memory_full_info()
            rss, pss = rss + m.rss, pss + getattr(m, "pss", m.rss)     # PSS where the system has it (Linux)
        except Exception:  # noqa: BLE001  (a child that ended meanwhile)
            continue
    return dict(rss=rss / 2**20, pss=pss / 2**20, app_rss=app.memory_info().rss / 2**20, processes=len(procs))


def main(argv=None) -> int:
    global FIRST_USER
    args = parse_args(argv)
    FIRST_USER = args.first_user
    expected = expected_results(args.scenario, args.users)
    extra = ["--concurrency", str(args.concurrency), *args.app_args.split()]
    proc, url = (None, args.url) if args.url else start_app(extra)
    load = Load(think=args.think, stop_at=time.time() + args.ramp + args.duration)
    cpu0 = resource.getrusage(resource.RUSAGE_SELF)
    try:
        wall = asyncio.run(run_users(url, args.scenario, args.users, expected, load, args.trace_events,
                                     args.ramp))
        rss = app_rss_mb(proc)
    finally:
        if proc is not None:
            stop_app(proc)
    cpu1 = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (cpu1.ru_utime + cpu1.ru_stime) - (cpu0.ru_utime + cpu0.ru_stime)
    result = summary(args, load, wall, cpu, rss)
    if args.json:
        print(json.dumps(result))
    return 0 if not load.errors and not load.crossed else 1


if __name__ == "__main__":
    sys.exit(main())
