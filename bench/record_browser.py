"""Record which requests a real browser sends to the app, for the load test to replay.

``python bench/record_browser.py [--url URL] [--out FILE]`` opens the page in Debian's chromium
(playwright, never a downloaded browser), and takes the lecture steps: open the page, Translate,
Next 5 times, open the "Attention explorer" tab, change its layer. It prints, per step, every
queue request (``/gradio_api/queue/join``: the function index and its API name) and every other
POST, and the bytes the server sent back (from Chromium's network events: all, static files
such as plotly.js included, and the API's alone, the SSE stream included), and writes them as JSON. Used to
check that ``bench/load_test.py`` sends the same mix.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

from harness.app import start_app, stop_app  # noqa: E402
from harness.browser import CHROMIUM, FLAGS, VIEWPORT  # noqa: E402

WAIT_MS = 90_000
SENTENCE = "The cat is sleeping on the sofa."


class Recorder:
    """Requests and received bytes, grouped under the step being taken."""

    def __init__(self, page, names: dict) -> None:
        self.names, self.step, self.log = names, "open", {}
        page.on("request", self.on_request)
        cdp = page.context.new_cdp_session(page)
        cdp.send("Network.enable")
        self.api_ids: set = set()      # Chromium request ids of the app's API (not its static files)
        cdp.on("Network.requestWillBeSent", self.on_sent)
        cdp.on("Network.dataReceived", self.on_data)

    def entry(self) -> dict:
        return self.log.setdefault(self.step, {"requests": [], "bytes_received": 0, "api_bytes_received": 0})

    def on_sent(self, e: dict) -> None:
        if "/gradio_api/" in e["request"]["url"]:
            self.api_ids.add(e["requestId"])

    def on_data(self, e: dict) -> None:
        n = int(e.get("encodedDataLength") or e.get("dataLength", 0))
        self.entry()["bytes_received"] += n
        if e["requestId"] in self.api_ids:
            self.entry()["api_bytes_received"] += int(e.get("dataLength", 0))

    def on_request(self, req) -> None:
        path = req.url.split("?")[0].split("/", 3)[-1]
        if req.method != "POST" and "queue/data" not in path:
            return
        item = {"method": req.method, "path": "/" + path}
        if path.endswith("queue/join"):
            body = json.loads(req.post_data or "{}")
            item.update(fn_index=body.get("fn_index"), api=self.names.get(body.get("fn_index")),
                        trigger_id=body.get("trigger_id"), n_inputs=len(body.get("data", [])))
        self.entry()["requests"].append(item)


def fn_names(url: str) -> dict:
    """fn_index -> a readable name (api_name, or the function's name) from the app's /config."""
    import urllib.request
    cfg = json.load(urllib.request.urlopen(url.rstrip("/") + "/config"))
    return {i: d.get("api_name") or d.get("js") and "js" or f"fn{i}"
            for i, d in enumerate(cfg["dependencies"])}


def take_steps(page, rec: Recorder, url: str) -> None:
    def step(name, action, wait_for=None, settle=1.5):
        rec.step = name
        action()
        if wait_for:
            page.wait_for_selector(wait_for, timeout=WAIT_MS)
        time.sleep(settle)   # let the chained events (.then) finish
    step("open", lambda: page.goto(url), "#src-text textarea", settle=3)
    step("translate", lambda: (page.fill("#src-text textarea", SENTENCE), page.click("#translate-btn")),
         "#step-info:has-text('Step 1 of')", settle=3)
    for i in range(5):
        step(f"next {i + 1}", lambda: page.click("#next-step"), f"#step-info:has-text('Step {i + 2} of')")
    step("open explorer tab", lambda: page.get_by_role("tab", name="Attention explorer").click(),
         "#grid-plot .js-plotly-plot", settle=3)
    slider = page.locator("input[aria-label='number input for Layer']:visible").first
    step("change layer", lambda: (slider.fill("2"), slider.press("Enter")), settle=3)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--url", default=None, help="an app already running (default: start one here)")
    p.add_argument("--out", default="/tmp/browser_requests.json")
    args = p.parse_args(argv)
    from playwright.sync_api import sync_playwright
    proc, url = (None, args.url) if args.url else start_app()
    try:
        names = fn_names(url)
        with sync_playwright() as pw:
            browser = pw.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
            page = browser.new_page(viewport=VIEWPORT)
            rec = Recorder(page, names)
            take_steps(page, rec, url)
            browser.close()
    finally:
        if proc is not None:
            stop_app(proc)
    Path(args.out).write_text(json.dumps(rec.log, indent=1))
    for name, e in rec.log.items():
        joins = [f"{r['fn_index']}:{r['api']}" for r in e["requests"] if r.get("fn_index") is not None]
        print(f"{name:18} {e['bytes_received'] / 1024:8.1f} KB all, {e['api_bytes_received'] / 1024:8.1f} KB "
              f"API  queue joins: {', '.join(joins) or '-'}")
    total = lambda k: sum(e[k] for e in rec.log.values()) / 1024
    print(f"total {total('bytes_received'):.1f} KB, API {total('api_bytes_received'):.1f} KB; written to "
          f"{args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
