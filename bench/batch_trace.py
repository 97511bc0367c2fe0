"""Traced decoding of N different sentences: one at a time against one batch (``trace_greedy_batch``).

``python bench/batch_trace.py [--n 16] [--reps 5]``: one process, one torch thread (the app's
setting), interleaved; prints the median wall time of each and the ratio, and checks that both
give the same tokens.

``python bench/batch_trace.py --arrivals 100 [--spread 1.0] [--decode-processes 2]``: the model's share of the
load test's burst, without the web server: that many different sentences sent to the app's Translator (its
batcher: APP_CONCURRENCY workers, one torch thread each, decoding in APP_DECODE_PROCESSES processes of their
own; 0: here) from as many threads, each at a random moment within --spread seconds; prints the latency
p50/p95 of ``Translator.trace`` and the batches made.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

from toolkit import percentile  # noqa: E402  (the checkout on sys.path: bench/toolkit.py)

def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--arrivals", type=int, default=0, metavar="N",
                   help="the burst without the web server (above)")
    p.add_argument("--spread", type=float, default=1.0)
    p.add_argument("--decode-processes", type=int, default=None, help="with --arrivals (default: the app's)")
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    if args.arrivals:
        return arrivals(args.arrivals, args.spread, args.decode_processes)
    from bench.load_test import user_sentences
    from transformer.model.decoding import trace_greedy, trace_greedy_batch
    from transformer.serving.translator import Translator
    tr = Translator(None, "cpu", cache_size=0)
    sources = [tr.source(user_sentences(u)[0]) for u in range(args.n)]
    cases = {"one at a time": lambda: [trace_greedy(tr.model, tr.tokenizer, s) for s in sources],
             "one batch": lambda: trace_greedy_batch(tr.model, tr.tokenizer, sources)}
    times = {k: [] for k in cases}
    outs = {}
    for rep in range(args.reps + 1):
        for k in (list(cases) if rep % 2 else list(cases)[::-1]):
            t0 = time.perf_counter()
            outs[k] = cases[k]()
            if rep:
                times[k].append(time.perf_counter() - t0)
    same = [a.tgt_ids for a in outs["one at a time"]] == [b.tgt_ids for b in outs["one batch"]]
    med = {k: statistics.median(v) * 1000 for k, v in times.items()}
    print(f"{args.n} different sentences, traced: one at a time {med['one at a time']:.0f} ms, one batch "
          f"{med['one batch']:.0f} ms ({med['one at a time'] / med['one batch']:.2f}x faster); same tokens: "
          f"{same}")
    return 0


def arrivals(n: int, spread: float, processes=None) -> int:
    import random
    import threading
    from bench.load_test import user_sentences
    from transformer.serving.translator import Translator
    from ui.settings import APP_CONCURRENCY, APP_DECODE_PROCESSES
    processes = APP_DECODE_PROCESSES if processes is None else processes
    tr = Translator(None, "cpu", batch_workers=APP_CONCURRENCY, cache_size=0, decode_processes=processes)
    tr.trace("A sentence to warm up.")
    texts, latencies, rng = [user_sentences(u)[0] for u in range(n)], [], random.Random(0)
    starts = [rng.uniform(0, spread) for _ in range(n)]

    def user(i: int) -> None:
        time.sleep(starts[i])
        t0 = time.perf_counter()
        tr.trace(texts[i])
        latencies.append(time.perf_counter() - t0)
    threads = [threading.Thread(target=user, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    latencies.sort()
    print(f"{n} different sentences within {spread:g} s, {APP_CONCURRENCY} batcher workers, {processes} "
          f"decoding processes: Translator.trace p50 "
          f"{latencies[n // 2] * 1000:.0f} ms, p95 {percentile(latencies, 0.95) * 1000:.0f} ms; "
          f"{tr.batcher.stats()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
