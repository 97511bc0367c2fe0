"""A class answers the presenter's question: 200 students, each on their own stream, answer within 10 s.

``python3 bench/class_votes.py [--students 200] [--apps 1|2] [--within 8] [--change 0.25]``

Starts one app process (rooms in its memory) or two sharing a real ``redis-server`` (``--redis``). The
presenter is a real Chromium page on the first app, in presenter mode: it starts a live session and, once
every student follows, asks a question of its own with four options (the panel "Ask the room"). Each student
does what the follower's page does (ui/static/follow.js, ui/static/vote.js): it listens to the room's stream
(split evenly over the apps, half of them as phones), and when the question arrives it answers at a random
moment within ``--within`` seconds (``POST /live/rooms/CODE/answer``); a share ``--change`` of them change
their mind once, a moment later. Reported:

- answer → acknowledged (the route's 200 in the student's hands): p50/p95/max over every answer sent;
- ask → the question in each student's hands (the stream's frame parsed);
- the presenter's count as its page shows it once the answers are in, against the students who answered, and
  after Reveal the counts per option in the room's download (JSON) against each student's last answer: an
  answer lost or counted twice shows here.

Last line: ``votes: S students, A answers sent, C counted, L lost, p95 X s``. The load generator is one
asyncio process on the same machine as the apps and the browser (its CPU time is printed): on 2 cores the
figures are an upper bound.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import random
import resource
import statistics
import sys
import time
from collections import Counter

import httpx
from playwright.async_api import async_playwright

from toolkit import percentile  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)
from harness.app import free_port, start_app, stop_app  # noqa: E402
from harness.redis_server import start_redis, stop_redis  # noqa: E402

OPTIONS = ["To keep the softmax from saturating", "To save memory", "To make training faster", "No reason"]
SENTENCE = "The cat is sleeping on the sofa."
WAIT_MS = 120_000


def stats(xs: list[float]) -> str:
    if not xs:
        return "none"
    xs = sorted(xs)
    return (f"p50 {statistics.median(xs):.3f} s, p95 {p95(xs):.3f} s, max {xs[-1]:.3f} s ({len(xs)} values)")


def p95(xs: list[float]) -> float:
    return percentile(xs, 0.95)


class Student:
    def __init__(self, i: int, url: str, args) -> None:
        self.i, self.url, self.args = i, url, args
        self.token = f"bench-student-{i:05d}-{random.getrandbits(40):010x}"
        self.look = "look=light&narrow=1" if i % 2 else "look=dark&narrow=0"
        self.connected = asyncio.Event()
        self.question: asyncio.Future = asyncio.get_event_loop().create_future()
        self.seen_at = 0.0
        self.last = None            # the option of its last acknowledged answer
        self.sent, self.acks, self.refused = 0, [], []

    async def listen(self, http, code: str, stop: float) -> None:
        """The room's stream, as the follower's page reads it: each frame parsed; the first open question
        kept."""
        while time.time() < stop:
            try:
                async with http.stream("GET", f"{self.url}live/rooms/{code}/events?{self.look}",
                                       timeout=httpx.Timeout(30, read=max(1.0, stop - time.time()))) as r:
                    self.connected.set()
                    async for line in r.aiter_lines():
                        if line.startswith("data: ") and line != "data: {}":
                            q = json.loads(line[6:]).get("question")
                            if q and q.get("status") == "open" and not self.question.done():
                                self.seen_at = time.time()
                                self.question.set_result(q)
                        if time.time() >= stop:
                            return
            except httpx.HTTPError:
                await asyncio.sleep(0.5)

    async def post(self, http, code: str, qid: int, option: int) -> None:
        body = {"student": self.token, "question": qid, "answer": {"option": option}}
        t0 = time.time()
        self.sent += 1
        r = await http.post(f"{self.url}live/rooms/{code}/answer", json=body, timeout=30)
        if r.status_code == 200:
            self.acks.append(time.time() - t0)
            self.last = option
        else:
            self.refused.append((r.status_code, r.text[:120]))

    async def answer(self, http, code: str) -> None:
        q = await self.question
        await asyncio.sleep(random.uniform(0, self.args.within))
        await self.post(http, code, q["id"], random.randrange(len(OPTIONS)))
        if random.random() < self.args.change:
            await asyncio.sleep(random.uniform(0.3, 1.5))
            await self.post(http, code, q["id"], random.randrange(len(OPTIONS)))


async def presenter_page(browser, url: str):
    page = await browser.new_page(viewport={"width": 1920, "height": 1080})
    await page.goto(url + "?text=" + SENTENCE.replace(" ", "+") + "&step=3")
    await page.locator("#step-info .stepinfo").first.wait_for(timeout=WAIT_MS)
    await page.locator("#presenter input").check()
    await page.locator("#live-start").click()
    await page.locator("#live-panel .live-code").wait_for(timeout=WAIT_MS)
    code = (await page.locator("#live-panel .live-code").inner_text()).strip()
    await page.locator("#live-panel .live-fold").click()
    await page.locator("#vote-toggle").click()
    await page.locator("#vote-kind input").click()
    await page.locator("ul[role=listbox] li").filter(has_text="of my own").first.click()
    await page.locator("#vote-prompt textarea, #vote-prompt input").first.fill(
        "Why divide the scores by √d_k?")
    await page.locator("#vote-options textarea").fill("\n".join(OPTIONS))
    return page, code


async def status_of(page) -> dict:
    return await page.evaluate("() => { const s = document.querySelector('#vote-status .vote-status');"
                               " return s ? {...s.dataset} : {}; }")


async def run(args, urls: list[str]) -> int:
    async with async_playwright() as pw:
        browser = await pw.chromium.launch(executable_path="/usr/bin/chromium")
        page, code = await presenter_page(browser, urls[0])
        limits = httpx.Limits(max_connections=4 * args.students, max_keepalive_connections=4 * args.students)
        async with httpx.AsyncClient(limits=limits, timeout=30) as http:
            students = [Student(i, urls[i % len(urls)], args) for i in range(args.students)]
            stop = time.time() + args.within + 120
            listening = [asyncio.create_task(s.listen(http, code, stop)) for s in students]
            await asyncio.wait_for(asyncio.gather(*(s.connected.wait() for s in students)), 120)
            await page.locator("#vote-status").wait_for(timeout=WAIT_MS)
            t_wait = time.time()
            while (await status_of(page)).get("followers") != str(args.students) and \
                    time.time() - t_wait < 20:
                await asyncio.sleep(0.3)
            answering = [asyncio.create_task(s.answer(http, code)) for s in students]
            asked = time.time()
            await page.locator("#vote-ask").click()
            await asyncio.wait_for(asyncio.gather(*answering), args.within + 60)
            answered_at = time.time() - asked
            expected = Counter(OPTIONS[s.last] for s in students if s.last is not None)
            who = sum(expected.values())
            t_wait = time.time()          # the presenter's count, as its page shows it (a tick every 0.7 s)
            while (await status_of(page)).get("answers") != str(who) and time.time() - t_wait < 10:
                await asyncio.sleep(0.2)
            shown = await status_of(page)
            await page.locator("#vote-reveal").click()
            await page.locator("#vote-status .vote-status[data-status=revealed]").wait_for(timeout=WAIT_MS)
            await page.locator("#vote-export").click()
            await page.locator("#vote-files a").first.wait_for(timeout=WAIT_MS)
            hrefs = [await a.get_attribute("href") for a in await page.locator("#vote-files a").all()]
            href = next(h for h in hrefs if h.endswith(".json"))
            full = href if href.startswith("http") else urls[0].rstrip("/") + href
            exported = (await http.get(full)).json()
            for t in listening:
                t.cancel()
        await browser.close()
    counts = Counter(exported["questions"][-1]["counts"])
    acks = [a for s in students for a in s.acks]
    seen = [s.seen_at - asked for s in students if s.seen_at]
    sent = sum(s.sent for s in students)
    refused = [r for s in students for r in s.refused]
    counted = int(shown.get("answers") or 0)
    # a student's last answer missing from its option
    lost = sum(max(0, expected[k] - counts[k]) for k in OPTIONS)
    twice = sum(max(0, counts[k] - expected[k]) for k in OPTIONS)     # ...or counted where it no longer is
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(f"students: {args.students} on {len(urls)} app process(es); all answered within {answered_at:.1f} "
          f"s of the question; the presenter's page counted {shown.get('answers')} of "
          f"{shown.get('followers')} following")
    print(f"ask -> question in the student's hands: {stats(seen)}")
    print(f"answer -> acknowledged: {stats(acks)}")
    print(f"refused answers: {len(refused)} {Counter(r[0] for r in refused).most_common()}")
    print(f"download (JSON) counts: {dict(counts)}; each student's last answer: {dict(expected)}; "
          f"{'equal' if counts == expected else 'DIFFERENT'}; counted twice or where it no longer is: "
          f"{twice}")
    print(f"load generator CPU: {usage.ru_utime + usage.ru_stime:.1f} s")
    print(f"votes: {args.students} students, {sent} answers sent, {counted} counted, {lost} lost, p95 "
          f"{p95(acks):.2f} s")
    return 0 if counts == expected and counted == who and not refused else 1


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--students", type=int, default=200)
    ap.add_argument("--apps", type=int, default=1, choices=(1, 2))
    ap.add_argument("--within", type=float, default=8.0,
                    help="each student answers at a random moment within this")
    ap.add_argument("--change", type=float, default=0.25,
                    help="the share of students who change their answer once")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    random.seed(args.seed)
    redis, procs = None, []
    try:
        extra = []
        if args.apps == 2:
            redis = start_redis(port := free_port())
            extra = ["--redis", f"redis://127.0.0.1:{port}/0"]
        procs = [start_app(extra) for _ in range(args.apps)]
        return asyncio.run(run(args, [url for _, url in procs]))
    finally:
        for proc, _ in procs:
            stop_app(proc)
        if redis is not None:
            stop_redis(redis)


if __name__ == "__main__":
    sys.exit(main())
