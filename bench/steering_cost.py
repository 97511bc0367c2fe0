"""What each steering view costs: ``python3 bench/steering_cost.py [--reps 30] [--threads 1]``.

On the bundled model and bench/run.py's 12-word sentence: the app's traced greedy decoding (the
reference), the teacher-forced pass of its own French, a what-if branch at step 3, beam search of
widths 1, 4 and 8 (model only), and drawing their figures (no model). Medians in ms, one thread
(the app's setting). Interleaved round-robin, so machine noise hits all alike.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)
import torch  # noqa: E402

from bench.run import SENTENCES  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402
from transformer.viz import steering as sv  # noqa: E402


def cases(tr: Translator, text: str) -> dict:
    greedy = tr.trace(text)
    other = greedy.steps[2].topk_pieces[1]
    forced = tr.forced(text, greedy.translation)
    beam4 = tr.beam(text, 4)
    fp = forced.pieces
    return {
        "greedy trace (Translate, reference)": lambda: tr.trace(text),
        "your French: forced pass": lambda: tr.forced(text, greedy.translation),
        "what if: branch at step 3": lambda: tr.what_if(text, 3, other, greedy.tgt_ids),
        "beam search, width 1": lambda: tr.beam(text, 1),
        "beam search, width 4": lambda: tr.beam(text, 4),
        "beam search, width 8": lambda: tr.beam(text, 8),
        "figure: your French bars": lambda: sv.forced_figure([p.piece for p in fp],
                                                             [p.probability for p in fp],
                                                             [p.rank for p in fp], [p.top_piece for p in fp])
        .to_json(),
        "figure: beam 4 tree": lambda: sv.beam_tree_figure(beam4).to_json(),
    }


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator(None, "cpu")
    text = SENTENCES["medium (12 words)"]
    fns = cases(tr, text)
    times = {k: [] for k in fns}
    for _ in range(args.reps):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            fn()
            times[name].append((time.perf_counter() - t0) * 1000)
    print(f"{text!r}: {len(tr.trace(text).steps)} greedy steps; medians of {args.reps} runs, {args.threads} "
          f"thread(s)")
    for name, ts in times.items():
        print(f"  {name:40s} {statistics.median(ts):7.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
