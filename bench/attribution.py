"""Time one attribution request (the app's /attribution: translate, then attribute) for a 12-word
sentence; Integrated Gradients' completeness gap against a fixed number of steps; and the refinement
(intervals cut where a target needs it until its gap is under 2 %) on the 5 longest Tatoeba dev sentences and
a 30-word sentence: the steps it took, the gap it reached, the time.

``python3 bench/attribution.py [--threads 1] [--repeats 5]``

``python3 bench/attribution.py --threads-ab 2 [--repeats 3]``: only Integrated Gradients of the load test's
lecture sentence, with the process's threads and with N threads for the attribution (``intra_op_threads``, as
the app runs it), interleaved in one process: medians and their ratio.

``python3 bench/attribution.py --rule-ab [--repeats 3] [--reference 2187] [--threads 2]``: the app's adaptive
refinement (probes/attribution.py) against the rule it replaced (64 equal steps, tripled for every target
still above the tolerance: ``uniform_tripling`` below), both stopping at the same 2 % completeness rule,
interleaved on four sentences (the lecture sentence, two classics, a 17-word one): median time, points, and
with --reference M how far each is from M equal steps (float32, M a power of 3), per target as a share of its
largest score.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

import torch  # noqa: E402

from transformer.config import IG_MAX_STEPS, IG_STEPS  # noqa: E402
from transformer.probes.attribution import attribute, path_inputs, point_scores  # noqa: E402
from transformer.why import GAP_FLOOR  # noqa: E402
from transformer.training.data import SHARED_DATA, read_corpus  # noqa: E402
from transformer.serving.resources import intra_op_threads  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402
from ui.settings import APP_TORCH_THREADS  # noqa: E402

SENTENCE = "We will meet tomorrow morning in front of the big old museum."   # 12 words
OTHERS = ["The cat is sleeping on the sofa.", "She has been learning to play the piano for three years."]
WORDS_30 = ("When the students arrived at the station early on Monday morning, the train to the old city by "
            "the sea had already left, so they waited two hours in cold.")   # 30 words


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
        print(f"{label}: {len(a.src_pieces)} x {len(a.tgt_pieces)} pieces, steps per target "
              f"{min(a.target_steps)}-{a.steps}, largest gap {a.relative_gap:.2%}, every target within "
              f"{a.tolerance:.0%}: {'yes' if a.converged else 'NO'}, {time.perf_counter() - t0:.1f} s")


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


RULE_SENTENCES = ["The agreement on the European Economic Area was signed in August 1992.",
                  "It should be noted that the marine environment is the least known of environments.",
                  "When the students arrived at the station early on Monday morning, the train had already "
                  "left."]


def uniform_tripling(tr: Translator, text: str, steps: int = 64, max_steps: int = IG_MAX_STEPS,
                     tolerance=0.02, delta=None):
    """The rule the app used before: the midpoint rule with `steps` equal steps for every target, tripled
    (keeping the earlier points) for the targets whose completeness gap is above `tolerance`: scores
    (T, S), points."""
    t = tr.trace(text)
    src, tgt_in, tgt_out, e = path_inputs(tr.model, t.source.ids, t.tgt_ids)
    n = tgt_out.numel()
    rows = torch.arange(n)
    if delta is None:
        a = attribute(tr.model, t.source.ids, t.tgt_ids, "gradient_x_input", t.src_pieces, t.tgt_pieces)
        delta = torch.as_tensor(a.f_input - a.f_baseline)
    sums = torch.zeros((n, e.size(1)), dtype=torch.float64)
    taken = torch.zeros(n, dtype=torch.long)
    todo, m = rows, steps
    while todo.numel():
        j = torch.arange(m, dtype=torch.float64)
        alphas = (j + 0.5) / m if m == steps else (j[j % 3 != 1] + 0.5) / m
        k = alphas.numel()
        sums[todo] += point_scores(tr.model, e, src, tgt_in, tgt_out, rows[todo].repeat_interleave(k),
                                   alphas.repeat(todo.numel())).view(todo.numel(), k, -1).sum(1)
        taken[todo] = m
        scores = sums / taken.clamp(min=1)[:, None]
        gap = (scores[todo].sum(1) - delta[todo]).abs()
        todo = todo[gap > torch.clamp(tolerance * delta[todo].abs(), min=GAP_FLOOR)]
        if 3 * m > max_steps:
            break
        m *= 3
    return sums / taken[:, None], taken


def rule_ab(tr: Translator, repeats: int, reference: int) -> int:
    from load_test import LECTURE_SENTENCE
    request(tr, LECTURE_SENTENCE, "gradient_x_input")              # warm-up
    ratios = []
    for text in [LECTURE_SENTENCE, *RULE_SENTENCES]:
        times = {"uniform": [], "adaptive": []}
        for _ in range(repeats):
            t0 = time.perf_counter()
            old, old_taken = uniform_tripling(tr, text)
            times["uniform"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            new = request(tr, text, "integrated_gradients")
            times["adaptive"].append(time.perf_counter() - t0)
        a, b = statistics.median(times["uniform"]), statistics.median(times["adaptive"])
        ratios.append(b / a)
        line = (f"{text[:40]!r}: uniform tripling {a:.2f} s, {int(old_taken.sum())} points (most "
                f"{int(old_taken.max())}); adaptive {b:.2f} s, {sum(new.target_steps)} points (most "
                f"{new.steps}), ratio {b / a:.2f}")
        if reference:
            ref, _ = uniform_tripling(tr, text, reference, reference, tolerance=float("inf"))
            scale = ref.abs().max(1, keepdim=True).values.numpy()
            for name, sc in (("uniform", old.numpy()), ("adaptive", new.scores)):
                d = abs(sc - ref.numpy()) / scale
                line += f"; {name} vs {reference} steps: worst {d.max():.1%}, mean {d.mean():.2%}"
        print(line, flush=True)
    print(f"time ratio adaptive / uniform: median {statistics.median(ratios):.2f} over {len(ratios)} "
          f"sentences ({repeats} runs each, interleaved)")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=APP_TORCH_THREADS)
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--threads-ab", type=int, default=0, metavar="N",
                   help="compare the lecture sentence's IG with --threads and with N threads, interleaved")
    p.add_argument("--rule-ab", action="store_true",
                   help="the adaptive refinement against uniform tripling, interleaved (see above)")
    p.add_argument("--reference", type=int, default=0, metavar="M",
                   help="with --rule-ab: also the distance of each to M equal steps (slow: M points per "
                        "target)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator()
    if args.rule_ab:
        return rule_ab(tr, args.repeats, args.reference)
    if args.threads_ab:
        return threads_ab(tr, args.threads, args.threads_ab, args.repeats)
    request(tr, SENTENCE, "gradient_x_input")      # warm-up
    t = tr.trace(SENTENCE)
    print(f"{len(SENTENCE.split())} words, {len(t.src_pieces)} source pieces, {len(t.tgt_pieces)} target "
          f"pieces, {args.threads} thread(s)")
    for method in ("gradient_x_input", "integrated_gradients"):
        times = []
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            request(tr, SENTENCE, method)
            times.append(time.perf_counter() - t0)
        print(f"{method}: median {statistics.median(times):.2f} s, min {min(times):.2f} s ({args.repeats} "
              f"runs)")
    for steps in (8, 16, 32, 64):
        gaps = [request(tr, s, "integrated_gradients", steps, steps).relative_gap
                for s in [SENTENCE, *OTHERS]]
        print(f"IG with {steps:2d} steps: largest completeness gap {max(gaps):.1%} over {len(gaps)} "
              f"sentences")
    refinement(tr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
