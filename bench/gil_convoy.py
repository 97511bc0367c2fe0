"""How much a busy Python thread slows the batched decoding that shares its process (the GIL convoy).

``python3 bench/gil_convoy.py [--batch 16] [--busy 0 1 2] [--intervals 0.005 0.001 0.0002] [--where here process]``

One process, one torch thread: a batch of the load test's sentences decoded by ``trace_greedy_batch`` while 0, 1
or 2 other threads run plain Python, with each of Python's GIL switch intervals (``sys.setswitchinterval``;
0.005 s is Python's default). Each torch call in the decoding loop lets go of the GIL and must take it back;
with another thread wanting it, that waits up to one switch interval. Prints each time and its ratio to the
time with no busy thread (same interval). In the app the busy threads are Gradio's and the views' Python.
``--where process`` decodes the same batch in a decoding process (``transformer/serving/decode_process.py``, one torch
thread, as the app can with `--decode-processes N`) while the busy threads run here: its own GIL, so they should not slow it.
"""
from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--busy", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--intervals", type=float, nargs="+", default=[0.005, 0.001, 0.0002])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--where", nargs="+", choices=["here", "process"], default=["here", "process"],
                   help="decode in this process, or in a decoding process of its own")
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from bench.load_test import user_sentences
    from transformer.serving.decode_process import DecodeProcesses
    from transformer.model.decoding import trace_greedy_batch
    from transformer.serving.translator import Translator
    tr = Translator(None, "cpu", cache_size=0)
    sources = [tr.source(user_sentences(u)[0]) for u in range(args.batch)]
    runs = {}
    if "here" in args.where:
        runs["here"] = lambda: trace_greedy_batch(tr.model, tr.tokenizer, sources)
    if "process" in args.where:
        decoders = DecodeProcesses(None, "cpu", 1, 1)
        runs["in a decoding process"] = lambda: decoders.trace_batch([(s, ()) for s in sources])
    for run in runs.values():
        run()                                                                  # warm-up
    stop = threading.Event()

    def busy() -> None:
        x = 0
        while not stop.is_set():
            for i in range(1000):
                x += i * i
    before = sys.getswitchinterval()
    try:
        for (where, run), interval in itertools.product(runs.items(), args.intervals):
            sys.setswitchinterval(interval)
            alone = None
            for n in args.busy:
                times = []
                for _ in range(args.repeats):
                    stop.clear()
                    threads = [threading.Thread(target=busy, daemon=True) for _ in range(n)]
                    for t in threads:
                        t.start()
                    t0 = time.perf_counter()
                    run()
                    times.append(time.perf_counter() - t0)
                    stop.set()
                    for t in threads:
                        t.join()
                med = statistics.median(times)
                alone = med if n == 0 else alone
                ratio = f", {med / alone:.1f}x the time alone" if alone else ""
                print(f"{where}: switch interval {interval * 1000:g} ms, {n} busy Python thread(s): a batch of {args.batch} "
                      f"in {med * 1000:.0f} ms (median of {args.repeats}){ratio}", flush=True)
    finally:
        sys.setswitchinterval(before)
    return 0


if __name__ == "__main__":
    sys.exit(main())
