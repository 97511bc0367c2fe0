"""Time one attribution request (the app's /attribution: translate, then attribute) for a 12-word
sentence; Integrated Gradients' completeness gap against a fixed number of steps; and the refinement
(steps doubled per target until its gap is under 2 %) on the 5 longest Tatoeba dev sentences and a
30-word sentence: the steps it took, the gap it reached, the time.

``python3 bench/attribution.py [--threads 1] [--repeats 5]``

``python3 bench/attribution.py --threads-ab 2 [--repeats 3]``: only Integrated Gradients of the load test's lecture
sentence, with the process's threads and with N threads for the attribution (``intra_op_threads``, as the app
runs it), interleaved in one process: medians and their ratio.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

from transformer.config import IG_MAX_STEPS, IG_STEPS  # noqa: E402
from transformer.model.attribution import attribute  # noqa: E402
from transformer.training.data import SHARED_DATA, read_corpus  # noqa: E402
from transformer.translator import Translator, intra_op_threads  # noqa: E402
from ui.settings import APP_TORCH_THREADS  # noqa: E402

SENTENCE = "We will meet tomorrow morning in front of the big old museum."   # 12 words
OTHERS = ["The cat is sleeping on the sofa.", "She has been learning to play the piano for three years."]
WORDS_30 = ("When the students arrived at the station early on Monday morning, the train to the old city by the "
            "sea had already left, so they waited two hours in cold.")   # 30 words


def request(tr: Translator, text: str, method: str, steps: int = IG_STEPS, max_steps: int = IG_MAX_STEPS):
    t = tr.trace(text)
    return attribute(tr.model, t.source.ids, t.tgt_ids, method, t.src_pieces, t.tgt_pieces, steps, max_steps)


def refinement(tr: Translator) -> None:
    """The adaptive steps on long inputs: Tatoeba dev's 5 longest English sentences (when ../shared/data is
    there) and WORDS_30."""
    dev = SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz"
    longest = sorted((en for en, _ in read_corpus(str(dev))), key=len)[-5:] if dev.exists() else []
    for label, text in [*((f"Tatoeba dev, longest #{i + 1}", s) for i, s in enumerate(reversed(longest))),
                        ("30 words", WORDS_30)]:
        t0 = time.perf_counter()
        a = request(tr, text, "integrated_gradients")
        print(f"{label}: {len(a.src_pieces)} x {len(a.tgt_pieces)} pieces, steps per target {min(a.target_steps)}-"
              f"{a.steps}, largest gap {a.relative_gap:.2%}, every target within {a.tolerance:.0%}: "
              f"{'yes' if a.converged else 'NO'}, {time.perf_counter() - t0:.1f} s")


def threads_ab(tr: Translator, base: int, more: int, repeats: int) -> int:
    from load_test import LECTURE_SENTENCE
    request(tr, LECTURE_SENTENCE, "gradient_x_input")              # warm-up
    times = {base: [], more: []}
    for _ in range(repeats):
        for n in (base, more):
            with intra_op_threads(n):
                t0 = time.perf_counter()
                request(tr, LECTURE_SENTENCE, "integrated_gradients")
                times[n].append(time.perf_counter() - t0)
    a, b = statistics.median(times[base]), statistics.median(times[more])
    print(f"IG of the lecture sentence: {base} thread(s) median {a:.2f} s, {more} threads median {b:.2f} s, "
          f"ratio {b / a:.2f} ({repeats} runs each, interleaved)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=APP_TORCH_THREADS)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads-ab", type=int, default=0, metavar="N",
                   help="compare the lecture sentence's IG with --threads and with N threads, interleaved")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator()
    if args.threads_ab:
        return threads_ab(tr, args.threads, args.threads_ab, args.repeats)
    request(tr, SENTENCE, "gradient_x_input")      # warm-up
    t = tr.trace(SENTENCE)
    print(f"{len(SENTENCE.split())} words, {len(t.src_pieces)} source pieces, {len(t.tgt_pieces)} target pieces, "
          f"{args.threads} thread(s)")
    for method in ("gradient_x_input", "integrated_gradients"):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            request(tr, SENTENCE, method)
            times.append(time.perf_counter() - t0)
        print(f"{method}: median {statistics.median(times):.2f} s, min {min(times):.2f} s ({args.repeats} runs)")
    for steps in (8, 16, 32, 64):
        gaps = [request(tr, s, "integrated_gradients", steps, steps).relative_gap for s in [SENTENCE, *OTHERS]]
        print(f"IG with {steps:2d} steps: largest completeness gap {max(gaps):.1%} over {len(gaps)} sentences")
    refinement(tr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
