"""How long the causal experiments and a first attribution take (issue 40's targets), beside a reference.

    python3 bench/causal_speed.py [--url URL] [--repeats 7]

1. Through the app's API, as a page's user waits for them (one user, the app otherwise quiet; starts app.py
   when no --url is given): /knockout of one head on a 12-word sentence, /head_importance (every head, teacher
   forcing), /patching of the classic pair; each interleaved with /translate of the same sentence (the
   reference: what a Translate costs), medians over --repeats. Targets: ≤ 0.5 s, ≤ 10 s, ≤ 10 s.
2. In this process: Integrated Gradients of every piece of a 30-word sentence as the app computes it now (4
   points first, its first estimate handed over, refined to the tolerance) against the way it did before (32
   equal points first, nothing before the end), alternated, medians: when the first complete picture exists,
   and when the final result does. Target: a first result ≤ 5 s, the final within the same tolerance.
Prints a table and one JSON line.
"""
from __future__ import annotations

import argparse
import json
import statistics
import time

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)
from harness.app import start_app, stop_app  # noqa: E402

TWELVE = "The old fisherman told the children a long story about the storm last night."
THIRTY = ("When the students arrived at the lecture hall this morning, the professor had already written the "
          "equations of the attention mechanism on the board for everyone to see.")
PAIR = ("The animal didn't cross the street because it was too wide.",
        "The animal didn't cross the street because it was too tired.")


def timed(fn) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def api_figures(url: str, repeats: int) -> dict:
    from gradio_client import Client
    c = Client(url, verbose=False)
    calls = {
        "translate (reference)": lambda: c.predict(TWELVE, api_name="/translate"),
        "knockout, one head": lambda: c.predict(TWELVE, "cross L3 H6", "zero", api_name="/knockout"),
        "head_importance, every head": lambda: c.predict(TWELVE, "zero", 0, api_name="/head_importance"),
        "patching, the classic pair": lambda: c.predict(*PAIR, 0, "", api_name="/patching"),
    }
    for fn in calls.values():          # once each first: the traces are cached, as for a page that translated
        fn()
    times = {k: [] for k in calls}
    for _ in range(repeats):
        for k, fn in calls.items():
            times[k].append(timed(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def attribution_figures(repeats: int) -> dict:
    from transformer.probes.attribution import attribute
    from transformer.serving.translator import Translator
    tr = Translator(cache_size=0)
    trace = tr.trace(THIRTY)
    args = (tr.model, trace.source.ids, trace.tgt_ids, "integrated_gradients", trace.src_pieces,
            trace.tgt_pieces)
    out = {"now: first estimate": [], "now: final": [], "before: final (32 points first)": []}
    for _ in range(repeats):
        first = []
        t0 = time.perf_counter()
        a = attribute(*args,
                      estimate=lambda est: first.append(time.perf_counter() - t0) if not first else None)
        out["now: final"].append(time.perf_counter() - t0)
        out["now: first estimate"].append(first[0] if first else out["now: final"][-1])
        assert a.converged
        t0 = time.perf_counter()
        b = attribute(*args, steps=32)
        out["before: final (32 points first)"].append(time.perf_counter() - t0)
        assert b.converged
    return {k: statistics.median(v) for k, v in out.items()} | {
        "pieces": [len(trace.src_pieces), len(trace.tgt_pieces)],
        "largest relative gap now / before": [round(a.relative_gap, 4), round(b.relative_gap, 4)],
        "points now / before": [sum(a.target_steps), sum(b.target_steps)]}


def page_figures(url: str) -> dict:
    """Seconds from pressing Compute until the page shows the first estimate, and the final result."""
    from playwright.sync_api import sync_playwright
    from harness.browser import CHROMIUM, FLAGS
    out = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = browser.new_page(viewport={"width": 1280, "height": 800})
        page.goto(url + "?tab=why&text=" + THIRTY.replace(" ", "%20"), wait_until="load")
        page.wait_for_function("() => /professeur/.test((document.querySelector('#fr-text textarea') || "
                               "{}).value)",
                               timeout=120_000)
        page.get_by_role("tab", name="Attribution").click()
        page.wait_for_timeout(1000)
        t0 = time.perf_counter()
        page.click("#attr-btn")
        while time.perf_counter() - t0 < 300 and "final" not in out:
            text = page.locator("#attr-gap").inner_text()
            if "first estimate" in text and "first estimate" not in out:
                out["first estimate"] = time.perf_counter() - t0
            if "gap" in text and "refining" not in text:
                out["final"] = time.perf_counter() - t0
            time.sleep(0.05)
        browser.close()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--url", help="a running app (default: start one)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--no-attribution", action="store_true")
    ap.add_argument("--page", action="store_true", help="also time the attribution on the page, in Chromium")
    a = ap.parse_args()
    proc = None
    url = a.url
    if not url:
        proc, url = start_app()
    try:
        api = api_figures(url, a.repeats)
        page = page_figures(url) if a.page else {}
    finally:
        if proc is not None:
            stop_app(proc)
    for k, v in api.items():
        print(f"{k:34s} median {v:6.3f} s  ({v / api['translate (reference)']:.1f}× a Translate)")
    attr = {} if a.no_attribution else attribution_figures(max(1, a.repeats // 3))
    for k, v in attr.items():
        print(f"{k:34s} {v if isinstance(v, list) else f'median {v:6.2f} s'}")
    for k, v in page.items():
        print(f"on the page: {k:22s} {v:6.2f} s")
    print(json.dumps({"api_median_s": {k: round(v, 4) for k, v in api.items()}, "attribution": attr,
                      "page_s": page}))


if __name__ == "__main__":
    main()
