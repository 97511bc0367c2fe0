"""The app's memory under many sessions, each keeping its last translation (issue 38, item 2).

``python3 bench/session_memory.py [--long 1000] [--ordinary 5000] [--concurrency 4] [--cwd OTHER_CHECKOUT]``

Starts the app and opens sessions as browsers would, each with its own session (its own state on the server):
first ``--long`` sessions that each translate a different sentence of the longest the app takes (one sentence
of about 1,000 characters: 127 source pieces, a trace of 20-25 MB), then ``--ordinary`` sessions with a short
sentence each, ``--concurrency`` at a time, through the API's /translate (the same event and state as the
page's Translate). The app's resident memory (its process and its children, psutil) is sampled every half
second: the peak, the memory after the long sessions and at the end are printed (MB), with the time each phase
took. ``--cwd`` runs another checkout's app.py (a before/after comparison: run both, one after the other, on a
quiet machine).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import threading
import time
import uuid
from pathlib import Path

import httpx
import psutil

from toolkit import ROOT  # noqa: E402  (the checkout, on sys.path: bench/toolkit.py)

from harness.app import start_app, stop_app  # noqa: E402

WORDS = ("students teacher lecture model attention layer head word sentence French English translation piece "
         "step network weight training data morning evening museum garden river city village mountain "
         "library kitchen window table chair paper letter story history music picture friend family "
         "neighbour doctor engineer farmer painter writer reader question answer problem idea reason result "
         "example number minute hour week month year country language school office market station bridge "
         "street road forest field").split()


def long_sentence(i: int, chars: int = 990) -> str:
    """A different sentence for each `i`, one sentence (no full stop inside) of about `chars` characters."""
    rng, words = random.Random(i), []
    while sum(len(w) + 1 for w in words) < chars:
        words.append(rng.choice(WORDS) + ("," if rng.random() < 0.12 else ""))
    return "The " + " ".join(words)[: chars - 5].rstrip(",") + "."


def ordinary_sentence(i: int) -> str:
    rng = random.Random(10_000 + i)
    return f"The {rng.choice(WORDS)} of the {rng.choice(WORDS)} is near the {rng.choice(WORDS)} number {i}."


class Sampler(threading.Thread):
    """The resident memory of a process and its children, every `every` seconds: the peak, and the latest."""

    def __init__(self, pid: int, every: float = 0.5) -> None:
        super().__init__(daemon=True)
        self.proc, self.every, self.peak, self.last, self.stop = psutil.Process(pid), every, 0, 0, False

    def rss(self) -> int:
        total = 0
        for p in [self.proc, *self.proc.children(recursive=True)]:
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    def run(self) -> None:
        while not self.stop:
            self.last = self.rss()
            self.peak = max(self.peak, self.last)
            time.sleep(self.every)


async def sessions(url: str, sentences: list[str], concurrency: int) -> int:
    """Each sentence translated in a session of its own; returns how many answered with a translation."""
    done, queue = 0, list(reversed(sentences))

    async def worker(http: httpx.AsyncClient) -> None:
        nonlocal done
        while queue:
            text = queue.pop()
            r = await http.post(f"{url}gradio_api/call/translate",
                                json={"data": [text], "session_hash": uuid.uuid4().hex[:11]})
            body = (await http.get(f"{url}gradio_api/call/translate/{r.json()['event_id']}")).text
            data = next((line[6:] for line in body.splitlines() if line.startswith("data: ")), "null")
            out = json.loads(data)
            done += bool(isinstance(out, list) and len(out) > 1 and out[1])

    async with httpx.AsyncClient(timeout=600) as http:
        await asyncio.gather(*(worker(http) for _ in range(concurrency)))
    return done


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--long", type=int, default=1000, help="sessions with a long sentence each")
    ap.add_argument("--ordinary", type=int, default=5000, help="sessions with a short sentence each")
    ap.add_argument("--concurrency", type=int, default=4)
    ap.add_argument("--cwd", type=Path, default=ROOT, help="the checkout whose app.py runs")
    args = ap.parse_args()
    proc, url = start_app(cwd=args.cwd, timeout=300)
    sampler = Sampler(proc.pid)
    try:
        start_rss = sampler.rss()
        sampler.start()
        t0 = time.time()
        ok_long = asyncio.run(sessions(url, [long_sentence(i) for i in range(args.long)], args.concurrency))
        t_long, after_long, peak_long = time.time() - t0, sampler.rss(), sampler.peak
        t0 = time.time()
        ok_short = asyncio.run(sessions(url, [ordinary_sentence(i) for i in range(args.ordinary)],
                                        args.concurrency))
        t_short = time.time() - t0
        time.sleep(1.0)
        sampler.stop = True
        mb = lambda b: round(b / 2**20)                                      # noqa: E731
        print(json.dumps({"checkout": str(args.cwd), "long_sessions": args.long, "long_translated": ok_long,
                          "long_s": round(t_long, 1), "ordinary_sessions": args.ordinary,
                          "ordinary_translated": ok_short, "ordinary_s": round(t_short, 1),
                          "rss_start_mb": mb(start_rss), "rss_after_long_mb": mb(after_long),
                          "rss_peak_during_long_mb": mb(peak_long), "rss_end_mb": mb(sampler.rss()),
                          "rss_end_main_process_mb": mb(sampler.proc.memory_info().rss),
                          "children": len(sampler.proc.children(recursive=True)),
                          "rss_peak_mb": mb(sampler.peak)}, indent=1))
    finally:
        sampler.stop = True
        stop_app(proc)


if __name__ == "__main__":
    main()
