"""Traced decoding of N different sentences: one at a time against one batch (``trace_greedy_batch``).

``python bench/batch_trace.py [--n 16] [--reps 5]``: one process, one torch thread (the app's
setting), interleaved; prints the median wall time of each and the ratio, and checks that both
give the same tokens.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=16)
    p.add_argument("--reps", type=int, default=5)
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from bench.load_test import user_sentences
    from transformer.model.decoding import trace_greedy, trace_greedy_batch
    from transformer.translator import Translator
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
          f"{med['one batch']:.0f} ms ({med['one at a time'] / med['one batch']:.2f}x faster); same tokens: {same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
