"""The floor under the lecture's Translate: what Gradio itself costs when N users click at once.

``python bench/gradio_floor.py [--users 100] [--outputs 1 51] [--inputs 1 50] [--wiring plain one-hop]``
serves a page with nothing but a text box and a button, whose click sends `--inputs` components and gets
`--outputs` back (the first output is the text upper-cased, the others empty), and drives it with the same
load generator as bench/load_test.py (harness/gradio_page.py): every user opens the page, then all
click within one second, as the lecture scenario does. The p95 it prints is the best the app's own Translate
could reach on this machine with that many inputs and outputs: the function costs nothing here.
Run it beside ``bench/load_test.py --scenario lecture`` on the same quiet machine.
"""
from __future__ import annotations

import argparse
import asyncio
import itertools
import random
import statistics
import subprocess
import sys
import tempfile
import time

from toolkit import percentile  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)
from harness.app import free_port  # noqa: E402
from harness.gradio_page import AppConfig, Page  # noqa: E402


def serve(port: int, n_inputs: int, n_outputs: int, wiring: str) -> None:
    import gradio as gr

    from ui.fast_events import one_hop
    with gr.Blocks() as demo, gr.Tab("Page"):      # (the load generator opens a page's first tab)
        text = gr.Textbox(elem_id="src")
        extra_in = [gr.Slider(1, 10, value=1, step=1) for _ in range(n_inputs - 1)]
        btn = gr.Button("Go", elem_id="go")
        out = gr.Textbox(elem_id="out")
        extra_out = [gr.Plot() for _ in range(n_outputs - 1)]

        def go(t, *_):
            return (str(t).upper(), *[None] * len(extra_out)) if extra_out else str(t).upper()
        demo.load(lambda: None, None, None)   # as the app does: the session exists before the click
        if wiring == "one-hop":
            btn.click(**one_hop(go, [text, *extra_in], [out, *extra_out]), concurrency_limit=32)
        else:
            btn.click(go, [text, *extra_in], [out, *extra_out], concurrency_limit=32)
    demo.queue(max_size=512).launch(server_name="127.0.0.1", server_port=port, max_threads=80)


async def drive(url: str, users: int) -> list[float]:
    import httpx
    # before the server's 5 s: a reused connection it closed fails
    limits = httpx.Limits(max_connections=4 * users + 10, max_keepalive_connections=2 * users + 10,
                         keepalive_expiry=3.0)
    async with httpx.AsyncClient(timeout=httpx.Timeout(120.0), limits=limits) as http:
        app = AppConfig((await http.get(url + "/config")).json())
        src, go, out = app.find(elem_id="src"), app.find(elem_id="go"), app.find(elem_id="out")
        pages = [Page(http, url, app) for _ in range(users)]
        await asyncio.gather(*(p.open() for p in pages))
        times = []

        async def click(u: int, p: Page) -> None:
            await asyncio.sleep(random.uniform(0, 1.0))
            p.values[src] = f"sentence {u}"
            t0 = time.perf_counter()
            await p.fire(go, "click")
            times.append(time.perf_counter() - t0)
            assert p.values[out] == f"SENTENCE {u}", p.values[out]
        await asyncio.gather(*(click(u, p) for u, p in enumerate(pages)))
        return times


def wait_up(url: str, proc, timeout: float = 60) -> None:
    import urllib.request
    t0 = time.time()
    while time.time() - t0 < timeout:
        if proc.poll() is not None:
            raise RuntimeError("the floor app exited")
        try:
            with urllib.request.urlopen(url, timeout=2):
                return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError("the floor app did not answer")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--users", type=int, default=100)
    p.add_argument("--inputs", type=int, nargs="+", default=[1, 50])
    p.add_argument("--outputs", type=int, nargs="+", default=[1, 51])
    p.add_argument("--wiring", nargs="+", default=["plain", "one-hop"], choices=["plain", "one-hop"],
                   help="Gradio's own processing, or ui/fast_events.one_hop (each size is run with each)")
    p.add_argument("--serve", nargs=4, help=argparse.SUPPRESS)   # port, inputs, outputs, wiring (the child)
    a = p.parse_args()
    if a.serve:
        serve(int(a.serve[0]), int(a.serve[1]), int(a.serve[2]), a.serve[3])
        return 0
    for (n_in, n_out), wiring in itertools.product(zip(a.inputs, a.outputs), a.wiring):
        port = free_port()
        log = tempfile.NamedTemporaryFile("w", prefix="gradio-floor-", suffix=".log", delete=False)
        proc = subprocess.Popen([sys.executable, __file__, "--serve", str(port), str(n_in), str(n_out),
                                 wiring],
                                stdout=log, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_up(url + "/", proc)
            asyncio.run(drive(url, 5))                 # warm: the first events of a server take longer
            xs = sorted(asyncio.run(drive(url, a.users)))
            p95 = percentile(xs, 0.95)
            print(f"{a.users} users click at once, {n_in} inputs, {n_out} outputs, {wiring}: "
                  f"p50 {1000 * statistics.median(xs):.0f} ms, p95 {1000 * p95:.0f} ms, max "
                  f"{1000 * xs[-1]:.0f} ms",
                  flush=True)
        finally:
            proc.terminate()
            proc.wait(10)
    return 0


if __name__ == "__main__":
    sys.exit(main())
