"""Followers of a live lecture, simulated: how long until each follower has the presenter's new view.

``python3 bench/follow_load.py [--followers 200] [--every 2] [--duration 120] [--apps 1|2] [--apply N]
[--mode stream|poll]``

Starts a real ``redis-server`` and one or two app processes sharing it (``--redis``), creates a room in Redis
as the presenter's page does, and publishes a new view (the next step of one sentence, then the next
sentence) every ``--every`` seconds. Each follower listens to ``GET /live/rooms/CODE/events`` (server-sent
events, as ui/static/live.js does; ``--mode poll``: polls ``GET /live/rooms/CODE`` every 0.7 s with its ETag,
the page's fallback), split evenly over the apps. Reported: for every published view, the time until
each follower's poll returned it (p50/p95/max over all followers and views), and views a follower never saw
(missed: a later view arrived first). ``--apply N``: N of the followers also hand each new view to their page through Gradio's queue, as
the page does (the follow event: a cached translation and the visible tab drawn from the shared caches), and
the time until that event finished is reported too. The load generator is one asyncio process.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.app import free_port, start_app, stop_app  # noqa: E402
from tests.support.gradio_page import AppConfig, Page  # noqa: E402
from ui.rooms import RedisRooms  # noqa: E402

POLL_S = 0.7
SENTENCES = ["The cat is sleeping on the sofa.", "The students are listening to the teacher in the big room.",
             "We will meet tomorrow morning in front of the big old museum."]


def views(n: int) -> list[dict]:
    """The presenter's views: each sentence's steps 1-6 in turn, on the Step-by-step tab."""
    return [{"text": SENTENCES[(i // 6) % len(SENTENCES)], "tab": "steps", "step": str(i % 6 + 1), "scale": "Viridis"}
            for i in range(n)]


def stats(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return (f"p50 {statistics.median(xs):.2f} s, p95 {xs[int(0.95 * (len(xs) - 1))]:.2f} s, max {xs[-1]:.2f} s "
            f"({len(xs)} values)")


def arrived(seen: list, published: dict, last: int, v: int) -> None:
    """A follower got view `v` after `last`: the delay of every published view in between, and whether it
    showed (only `v` does: the ones before it were missed)."""
    now = time.time()
    for k in range(last + 1, v + 1):
        if k in published:
            seen.append((k, now - published[k], k == v))


async def follower(http, url: str, code: str, published: dict, seen: list, stop: float, page=None, box=None,
                   applied=None) -> None:
    etag, last = None, 0
    while time.time() < stop:
        try:
            r = await http.get(f"{url}live/rooms/{code}", headers={"If-None-Match": etag} if etag else {})
            if r.status_code == 200:
                etag, body = r.headers.get("etag"), r.json()
                v = body["version"]
                arrived(seen, published, last, v)
                if page is not None and v > last and v in published:
                    page.values[box] = json.dumps(body["state"])
                    await page.fire(box, "change")
                    applied.append(time.time() - published[v])
                last = v
        except httpx.HTTPError:
            pass
        await asyncio.sleep(POLL_S)


async def stream_follower(http, url: str, code: str, published: dict, seen: list, stop: float) -> None:
    """One follower's stream of views (server-sent events), reconnecting with Last-Event-ID as a browser does."""
    last = 0
    while time.time() < stop:
        try:
            headers = {"Last-Event-ID": str(last)} if last else {}
            async with http.stream("GET", f"{url}live/rooms/{code}/events", headers=headers,
                                   timeout=httpx.Timeout(30, read=max(1.0, stop - time.time()))) as r:
                async for line in r.aiter_lines():
                    if line.startswith("data: ") and line != "data: {}":
                        v = json.loads(line[6:])["version"]
                        arrived(seen, published, last, v)
                        last = v
                    if time.time() >= stop:
                        return
        except httpx.HTTPError:
            await asyncio.sleep(0.5)


async def run(args, urls: list[str], rooms: RedisRooms) -> dict:
    code, secret = rooms.create()
    published, seen, applied = {}, [], []
    plan = views(int(args.duration / args.every) + 1)
    rooms.publish(code, secret, plan[0])
    published[1] = time.time()
    stop = time.time() + args.duration + 3
    limits = httpx.Limits(max_connections=2 * args.followers + 20, max_keepalive_connections=args.followers + 20)
    async with httpx.AsyncClient(timeout=30, limits=limits) as http:
        pages = []
        for i in range(args.apply):
            url = urls[i % len(urls)]
            app = AppConfig((await http.get(url + "config")).json())
            page = Page(http, url, app)
            await page.open()
            pages.append((page, app.find(elem_id="follow-state")))
        tasks = [asyncio.create_task(
                    stream_follower(http, urls[i % len(urls)], code, published, seen, stop)
                    if args.mode == "stream" and i >= len(pages) else
                    follower(http, urls[i % len(urls)], code, published, seen, stop,
                             *(pages[i] if i < len(pages) else (None, None)), applied))
                 for i in range(args.followers)]
        for view in plan[1:]:
            await asyncio.sleep(args.every)
            if time.time() > stop - 3:
                break
            version = rooms.publish(code, secret, view)
            published[version] = time.time()
        await asyncio.gather(*tasks)
    missed = sum(1 for k, _, shown in seen if not shown)       # a later view came first: this one never showed
    return dict(views=len(published), delay=stats([d for k, d, _ in seen if k > 1]), missed=missed,
                applied=stats(applied))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--followers", type=int, default=200)
    p.add_argument("--every", type=float, default=2.0, help="seconds between the presenter's changes")
    p.add_argument("--duration", type=float, default=120.0)
    p.add_argument("--apps", type=int, default=1, choices=(1, 2))
    p.add_argument("--apply", type=int, default=0, help="followers that also apply each view through the page "
                   "(these poll)")
    p.add_argument("--mode", choices=("stream", "poll"), default="stream",
                   help="followers listen to the room's event stream (the page's way) or poll its view (its fallback)")
    args = p.parse_args(argv)
    server = shutil.which("redis-server")
    if server is None:
        print("redis-server is not installed (apt-get install redis-server)")
        return 2
    port = free_port()
    redis = subprocess.Popen([server, "--port", str(port), "--save", "", "--appendonly", "no"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"redis://127.0.0.1:{port}/0"
    apps = []
    try:
        time.sleep(0.5)
        apps = [start_app(["--redis", url]) for _ in range(args.apps)]
        result = asyncio.run(run(args, [u for _, u in apps], RedisRooms(url)))
    finally:
        for proc, _ in apps:
            stop_app(proc)
        redis.terminate()
    print(f"{args.followers} followers ({args.mode}) on {args.apps} app process(es), a change every {args.every:g} s for "
          f"{args.duration:g} s ({result['views']} views)")
    print(f"new view on the followers' route after: {result['delay']}; missed views: {result['missed']}")
    if args.apply:
        print(f"{args.apply} followers' pages finished applying it after: {result['applied']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
