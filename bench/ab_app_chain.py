"""One user's Translate and Next as a browser sends them, two versions of the app side by side:
``python3 bench/ab_app_chain.py --before DIR [--reps 15]``.

DIR holds an earlier checkout (``git archive REV | (mkdir -p DIR && tar -x -C DIR)``). Both apps run
here on loopback with the same checkpoint (this checkout's bundled one) and are driven in turn
(before, after, after, before, ...) by bench/load_test.py's page driver: open the page, Translate a
12-word sentence never translated before in that app (so the model runs: no trace-cache hit), then
Next. Each time is the whole chain the click starts (every queued and direct request, the
``.then`` steps and the ``change`` events), as in the load test. Prints medians and after/before.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

from toolkit import ROOT  # noqa: E402  (the checkout, on sys.path: bench/toolkit.py)

from harness.app import start_app, stop_app  # noqa: E402
from bench.load_test import Ids  # noqa: E402
from harness.gradio_page import AppConfig, Page  # noqa: E402

NUMBERS = ["two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
           "twenty"]
PLACES = ["market", "station", "museum", "library", "harbour", "bakery"]


def sentence(i: int) -> str:
    """12 words, different for every i (so every Translate runs the model)."""
    return f"My old friend bought {NUMBERS[i % 12]} red apples at the {PLACES[i // 12 % 6]} this morning."


async def one(http, url: str, text: str) -> tuple[float, float]:
    app = AppConfig((await http.get(url + "config")).json())
    ids, page = Ids.of(app), None
    page = Page(http, url, app)
    await page.open()
    page.values[ids.text] = text
    t0 = time.perf_counter()
    await page.fire(ids.go, "click")
    t1 = time.perf_counter()
    await page.fire(ids.next, "click")
    return t1 - t0, time.perf_counter() - t1


async def run(urls: dict, reps: int) -> dict:
    import httpx
    times = {name: {"translate": [], "next": []} for name in urls}
    async with httpx.AsyncClient(timeout=60) as http:
        for name, url in urls.items():          # warm-up: first page and first model run of each app
            await one(http, url, "The cat is sleeping on the sofa.")
        for i in range(reps):
            order = list(urls) if i % 2 == 0 else list(reversed(urls))
            for name in order:
                tr, nx = await one(http, urls[name], sentence(i))
                times[name]["translate"].append(tr)
                times[name]["next"].append(nx)
    return times


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="an earlier checkout of this repository")
    p.add_argument("--reps", type=int, default=15)
    args = p.parse_args(argv)
    ck = ["--checkpoint", str(ROOT / "checkpoints" / "en-fr-base")]
    procs, urls = [], {}
    try:
        for name, cwd in (("before", Path(args.before).resolve()), ("after", ROOT)):
            proc, url = start_app(ck, cwd=cwd)
            procs.append(proc)
            urls[name] = url
        times = asyncio.run(run(urls, args.reps))
    finally:
        for proc in procs:
            stop_app(proc)
    for action in ("translate", "next"):
        med = {n: 1000 * statistics.median(times[n][action]) for n in times}
        print(f"{action:9}  before {med['before']:6.1f} ms  after {med['after']:6.1f} ms  "
              f"after/before {med['after'] / med['before']:.2f}  ({args.reps} each, interleaved)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
