"""Load test: N simulated users drive the app through gradio_client at once.

``python bench/load_test.py [--users 16] [--duration 60]`` starts app.py on 127.0.0.1 (or uses
--url), then each user, in its own session, translates its own sentences and moves the step
slider, for a bounded time. Reports requests, errors, p50/p95/max latency, and checks that
every user got the translation of their own sentence (no crossed results). Exit code 1 if
any request failed or any result was crossed.
"""
from __future__ import annotations

import argparse
import html
import itertools
import json
import random
import statistics
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.apprunner import start_app, stop_app  # noqa: E402
from transformer.config import APP_CONCURRENCY  # noqa: E402

SUBJECTS = ["My sister", "The teacher", "Our neighbour", "A young boy", "The old woman", "His friend", "The doctor",
            "My father"]
VERBS = ["is reading", "bought", "is cooking", "found", "likes", "is painting", "forgot", "is carrying"]
OBJECTS = ["a red book", "the small table", "some fresh bread", "a blue umbrella", "the heavy box", "a long letter",
           "an old map", "the new bicycle"]


def user_sentences(user: int, n: int = 6) -> list[str]:
    rng = random.Random(user)
    combos = list(itertools.product(SUBJECTS, VERBS, OBJECTS))
    rng.shuffle(combos)
    return [f"{s} {v} {o}." for s, v, o in combos[:n]]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=16)
    p.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    p.add_argument("--url", default=None, help="an app already running (default: start one here)")
    p.add_argument("--concurrency", type=int, default=APP_CONCURRENCY, help="app's --concurrency when started here")
    p.add_argument("--think", type=float, default=0.0, help="seconds a user waits between actions")
    p.add_argument("--json", action="store_true", help="print the result as one JSON line too")
    return p.parse_args(argv)


@dataclass
class Load:
    """What the users measured and saw, shared between their threads."""

    stop_at: float
    think: float
    latency: dict = field(default_factory=lambda: {"translate": [], "slider": []})
    errors: list = field(default_factory=list)
    crossed: list = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def record(self, items: list, item) -> None:
        with self.lock:
            items.append(item)


def timed(load: Load, name: str, call):
    """call(), its latency recorded under `name`; then the user thinks."""
    t0 = time.perf_counter()
    out = call()
    load.record(load.latency[name], time.perf_counter() - t0)
    time.sleep(load.think)
    return out


def user(u: int, client, sentences: list[str], expected: dict, load: Load) -> None:
    """One user: translate their own sentences in turn, move the step slider three times after each,
    and check that they got their own translation and their own trace."""
    for i in itertools.count():
        if time.time() >= load.stop_at:
            return
        text = sentences[i % len(sentences)]
        try:
            french, info, pieces, slider = timed(load, "translate", lambda: client.predict(text, api_name="/translate"))
            if french != expected[text]:
                load.record(load.crossed, f"user {u}: {text!r} -> {french!r}, expected {expected[text]!r}")
            last = slider["maximum"] if isinstance(slider, dict) else 2
            for step in (2, 3, last):
                step_html, _, _ = timed(load, "slider", lambda: client.predict(
                    step, 3, "mean over heads", "Light", False, "Viridis", api_name="/step_view"))
            # the last step's "French so far" must be this user's own translation
            if step_html and html.escape(french.split()[0]) not in step_html:
                load.record(load.crossed, f"user {u}: slider showed another trace for {text!r}")
        except Exception as e:  # noqa: BLE001
            load.record(load.errors, f"user {u}: {e!r}")


def run_users(url: str, sentences: dict, expected: dict, load: Load) -> float:
    """Every user in a thread of their own, each with their own session; returns the wall time."""
    from gradio_client import Client

    def session(u: int) -> None:
        try:
            client = Client(url, verbose=False)
        except Exception as e:  # noqa: BLE001
            load.record(load.errors, f"user {u}: connect: {e!r}")
            return
        user(u, client, sentences[u], expected, load)

    threads = [threading.Thread(target=session, args=(u,)) for u in sentences]
    t_start = time.time()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return time.time() - t_start


def stats(xs) -> dict:
    if not xs:
        return dict(n=0)
    xs = sorted(xs)
    return dict(n=len(xs), p50_ms=round(1000 * statistics.median(xs)),
                p95_ms=round(1000 * xs[min(len(xs) - 1, int(0.95 * len(xs)))]), max_ms=round(1000 * xs[-1]))


def summary(args, load: Load, wall: float) -> dict:
    every = load.latency["translate"] + load.latency["slider"]
    result = dict(users=args.users, think_s=args.think, duration_s=round(wall, 1), requests=len(every),
                  errors=len(load.errors), crossed=len(load.crossed), all=stats(every),
                  translate=stats(load.latency["translate"]), slider=stats(load.latency["slider"]),
                  requests_per_s=round(len(every) / wall, 1))
    print(f"users {args.users}, {wall:.0f} s: {result['requests']} requests ({result['requests_per_s']}/s), "
          f"{len(load.errors)} errors, {len(load.crossed)} crossed results")
    for k in ("all", "translate", "slider"):
        s = result[k]
        if s["n"]:
            print(f"  {k:9} n={s['n']:5}  p50 {s['p50_ms']:6} ms  p95 {s['p95_ms']:6} ms  max {s['max_ms']:6} ms")
    for line in (load.errors + load.crossed)[:10]:
        print("  !", line)
    return result


def main(argv=None) -> int:
    args = parse_args(argv)
    from transformer.translator import Translator
    expected_model = Translator(None, "cpu")      # same model, same greedy path: the expected outputs
    sentences = {u: user_sentences(u) for u in range(args.users)}
    expected = {s: expected_model.trace(s).translation for ss in sentences.values() for s in ss}

    proc, url = (None, args.url) if args.url else start_app(["--concurrency", str(args.concurrency)])
    load = Load(stop_at=time.time() + args.duration, think=args.think)
    try:
        wall = run_users(url, sentences, expected, load)
    finally:
        if proc is not None:
            stop_app(proc)
    result = summary(args, load, wall)
    if args.json:
        print(json.dumps(result))
    return 0 if not load.errors and not load.crossed else 1


if __name__ == "__main__":
    sys.exit(main())
