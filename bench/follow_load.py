"""Followers of a live lecture, end to end: from the presenter's change to the view's figure data in each
follower's hands, and what each follower costs the server.

``python3 bench/follow_load.py [--followers 100] [--apps 1|2] [--every 2] [--changes 30]``
(``--open 0 --within 30``: students opening the link instead)

Starts a real ``redis-server`` and one or two app processes sharing it (``--redis``), creates a room in Redis
as the presenter's page does and publishes the presenter's views (steps of a sentence, a tab, another
sentence: each a change) every ``--every`` seconds. Each follower does what the follower's page
(ui/static/follow.js) does: it listens to ``GET /live/rooms/CODE/events?look=…&narrow=…`` (a quarter each:
light and dark, laptop and phone) and reads every view's data, its figures included (parsed as JSON), split
evenly over the apps. Reported:

- for every change and follower, the time from the publish to the view's data parsed in the follower's hands
  (p50/p95/max), and views never seen (a later one came first);
- the apps' CPU time per follower per change: the same plan of changes run first with a tenth of the followers
  (at least 4: one per look), then with all of them, each on sentences the apps have not seen; the app
  processes' CPU time (user + system, psutil) during each run; the difference divided by the extra followers x
  changes is what one more follower costs (the rest, building each view once per look and process, translating
  each new sentence, is the same however many follow, and is printed per change);
- ``--open N``: N students open the follow link, arriving evenly over ``--within`` seconds while the presenter
  goes on changing views: each fetches the page, its style, its script and plotly.js (gzipped, as a first
  visit) and opens the stream; the time until the presenter's view is in their hands (p50/p95/max). Rendering
  in a browser is not in this figure: ``../shared/tools/lecture_rehearsal.py`` measures real Chromium pages.

The load generator is one asyncio process on the same machine (its own CPU time is printed).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import resource
import shutil
import sys
import time

import httpx
import psutil

from toolkit import spread  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)
from harness.app import free_port, start_app, stop_app  # noqa: E402
from harness.redis_server import start_redis, stop_redis  # noqa: E402
from ui.rooms_redis import RedisRooms  # noqa: E402

SENTENCES = ["The cat is sleeping on the sofa.", "The students are listening to the teacher in the big room.",
             "We will meet tomorrow morning in front of the big old museum.",
             "When the students arrived at the lecture hall this morning, the professor had already written "
             "the equations of the attention mechanism on the board."]
LOOKS = ["look=light&narrow=0", "look=light&narrow=1", "look=dark&narrow=0", "look=dark&narrow=1"]


def plan(n: int, first: int = 0) -> list[dict]:
    """The presenter's changes: a sentence's steps 1-5, the explorer, the head summary, then the next
    sentence. `first`: where in the list of sentences to start (a second run shows views the apps
    have not built)."""
    out = []
    for i in range(n):
        k, j = divmod(i, 7)
        text = SENTENCES[(k + first) % len(SENTENCES)] + ("" if (k + first) < len(SENTENCES)
                                                          else f" ({k + first})")
        out.append({"text": text, "tab": "steps", "step": str(j + 1)} if j < 5 else
                   {"text": text, "tab": "explorer", "kind": "cross", "layer": "2"} if j == 5 else
                   {"text": text, "tab": "summary"})
    return out


def stats(xs: list[float]) -> str:
    if not xs:
        return "none"
    return f"{spread(xs)} ({len(xs)} values)"


async def follower(http, url: str, code: str, look: str, published: dict, seen: list, stop: float,
                   first: asyncio.Future = None) -> None:
    """One follower's stream (reconnecting with Last-Event-ID as a browser does): each view parsed as it
    comes."""
    last = 0
    while time.time() < stop:
        try:
            headers = {"Last-Event-ID": str(last)} if last else {}
            async with http.stream("GET", f"{url}live/rooms/{code}/events?{look}", headers=headers,
                                   timeout=httpx.Timeout(30, read=max(1.0, stop - time.time()))) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: ") and line != "data: {}":
                        msg = json.loads(line[6:])
                        v, now = msg["version"], time.time()
                        assert msg["view"].get("parts") or msg["view"].get("error") is None, msg["view"]
                        if first is not None and not first.done():
                            first.set_result(now)
                        for k in range(last + 1, v + 1):
                            if k in published:
                                seen.append((k, now - published[k], k == v))
                        last = v
                    if time.time() >= stop:
                        return
        except httpx.HTTPError:
            await asyncio.sleep(0.5)


async def open_page(http, url: str, code: str, look: str, opened: list, stop: float, published: dict) -> None:
    """A student opening the follow link for the first time: the page, its files, then the stream's first
    view."""
    t0 = time.time()
    page = await http.get(f"{url}?follow={code}")
    assert page.status_code == 200 and "follow-bar" in page.text
    for asset in ("follow.css", "follow.js", "plotly.min.js"):
        r = await http.get(f"{url}live/static/{asset}", headers={"Accept-Encoding": "gzip"})
        assert r.status_code == 200
    first = asyncio.get_running_loop().create_future()
    task = asyncio.create_task(follower(http, url, code, look, published, [], stop, first))
    try:
        opened.append(await asyncio.wait_for(first, 30) - t0)
    except asyncio.TimeoutError:
        opened.append(float("inf"))
    await task


def app_cpu(procs: list) -> float:
    total = 0.0
    for p in procs:
        t = psutil.Process(p.pid).cpu_times()
        total += t.user + t.system
    return total


async def run(args, urls: list[str], rooms: RedisRooms, procs: list, followers: int, first: int,
              n_open: int = 0) -> dict:
    code, secret = rooms.create()
    views = plan(args.changes + 1, first)
    published, seen, opened = {}, [], []
    rooms.publish(code, secret, views[0])
    published[1] = time.time()
    stop = time.time() + args.changes * args.every + 6
    limits = httpx.Limits(max_connections=2 * (followers + n_open) + 20,
                          max_keepalive_connections=followers + n_open + 20)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        tasks = [asyncio.create_task(follower(http, urls[i % len(urls)], code, LOOKS[i % len(LOOKS)],
                                              published, seen, stop)) for i in range(followers)]
        await asyncio.sleep(min(3.0, args.every))           # every stream open, the first view in hand
        cpu0 = app_cpu(procs)
        arrive = [args.within * i / max(1, n_open) for i in range(n_open)]
        t_start = time.time()

        async def later(i):
            await asyncio.sleep(arrive[i])
            await open_page(http, urls[i % len(urls)], code, LOOKS[i % len(LOOKS)], opened, stop, published)
        tasks += [asyncio.create_task(later(i)) for i in range(n_open)]
        for view in views[1:]:
            await asyncio.sleep(max(0.0, args.every - (time.time() - t_start) % args.every))
            version = rooms.publish(code, secret, view)
            published[version] = time.time()
        await asyncio.sleep(3)
        cpu = app_cpu(procs) - cpu0
        await asyncio.gather(*tasks)
    rooms.end(code, secret)
    missed = sum(1 for k, _, shown in seen if not shown)
    return dict(changes=len(published) - 1, delay=[d for k, d, _ in seen if k > 1], missed=missed, cpu=cpu,
                opened=opened)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--followers", type=int, default=100)
    p.add_argument("--apps", type=int, default=1, choices=(1, 2))
    p.add_argument("--every", type=float, default=2.0, help="seconds between the presenter's changes")
    p.add_argument("--changes", type=int, default=30)
    p.add_argument("--open", type=int, default=0, help="students opening the follow link during the run")
    p.add_argument("--within", type=float, default=30.0, help="seconds over which --open students arrive")
    args = p.parse_args(argv)
    server = shutil.which("redis-server")
    if server is None:
        print("redis-server is not installed (apt-get install redis-server)")
        return 2
    port = free_port()
    redis = start_redis(port)                      # (returns once it answers)
    url = f"redis://127.0.0.1:{port}/0"
    apps = []
    try:
        apps = [start_app(["--redis", url]) for _ in range(args.apps)]
        urls, procs = [u for _, u in apps], [proc for proc, _ in apps]
        rooms = RedisRooms(url)
        few = max(len(LOOKS), args.followers // 10)
        alone = asyncio.run(run(args, urls, rooms, procs, few, first=0))
        result = asyncio.run(run(args, urls, rooms, procs, args.followers, first=len(SENTENCES),
                                 n_open=args.open))
    finally:
        for proc, _ in apps:
            stop_app(proc)
        stop_redis(redis)
    changes = result["changes"]
    per = (result["cpu"] - alone["cpu"]) / max(1, (args.followers - few) * changes)
    fixed = alone["cpu"] / changes - per * few
    own = resource.getrusage(resource.RUSAGE_SELF)
    print(f"{args.followers} followers on {args.apps} app process(es) sharing Redis; a change every "
          f"{args.every:g} s, {changes} changes (steps, tabs, new sentences)")
    print(f"view data in the followers' hands after the change: {stats(result['delay'])}; missed: "
          f"{result['missed']}")
    print(f"app CPU: {alone['cpu']:.2f} s for the changes with {few} followers, {result['cpu']:.2f} s with "
          f"{args.followers}: {1000 * per:.2f} ms per follower per change (and {1000 * fixed:.0f} ms per "
          f"change however many follow: the views built for four looks, new sentences translated)")
    if args.open:
        print(f"{args.open} students opening the follow link within {args.within:g} s: presenter's view in "
              f"hand after {stats(result['opened'])}")
    print(f"load generator CPU: {own.ru_utime + own.ru_stime:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
