"""How often each of the app's doubt warnings (transformer/doubt.py) fires, on inputs where it should
stay quiet (Tatoeba and Multi30k test) and on inputs where it should fire (the same sentences in
capitals, their French side, Multi30k's German side, a news test set, the held-out names and numbers).

``python bench/doubt.py [--checkpoint DIR] [--sentences 400]`` prints a markdown table: per set, the
share of sentences with each warning. Every sentence is traced as the app traces it (Translator.trace).
"""
from __future__ import annotations

import argparse
import gzip
import random
import sys
import time
from pathlib import Path

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

import torch  # noqa: E402

from transformer.doubt import changed_numbers  # noqa: E402
from transformer.training.augment import names_test, numbers_test  # noqa: E402
from transformer.training.data import SHARED_DATA, read_corpus  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402

WARNINGS = {   # the start of each note, as doubt.py and translator.py word them
    "capitals": "Your text is mostly in capitals",
    "language": "This looks like",
    "cut words": "Some words are not in the model's vocabulary",
    "numbers": "Check the numbers",
    "unsure": "The model is unsure",
}


def lines(path: Path) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [line.strip() for line in f]


def sets(n: int, seed: int) -> list[tuple[str, str, list[str]]]:
    """(name, what it should do, sentences)."""
    rng = random.Random(seed)
    pick = lambda xs: rng.sample(xs, min(n, len(xs)))
    tat = read_corpus(str(SHARED_DATA / "tatoeba-eng-fra" / "test.tsv.gz"))
    m30 = SHARED_DATA / "multi30k"
    news = read_corpus(str(SHARED_DATA / "news-formal" / "newstest2014.test.tsv.gz"))
    tat_en = pick([e for e, _ in tat])
    return [
        ("Tatoeba test", "quiet", tat_en),
        ("Multi30k test_2016", "quiet", pick(lines(m30 / "test_2016_flickr.en.gz"))),
        ("newstest2014", "(report)", pick([e for e, _ in news])),
        ("Tatoeba test in CAPITALS", "capitals", [s.upper() for s in tat_en]),
        ("Tatoeba test, French side", "language", pick([f for _, f in tat])),
        ("Multi30k test_2016, German side", "language", pick(lines(m30 / "test_2016_flickr.de.gz"))),
        ("tech-docs test (rust-book)", "(report)",
         pick([e for e, _ in read_corpus(str(SHARED_DATA / "tech-docs" / "rust-book-fr.tsv.gz"))])),
        ("names test (unseen names)", "(report)", [e for e, _ in names_test(tat, min(n, 228), 7)]),
        ("numbers test (held-out frames)", "(report)", [e for e, _ in numbers_test(min(n, 300), 7)]),
    ]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--sentences", type=int, default=400, help="sentences per set (a seeded sample)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=1, help="torch threads (1: leaves a core to other work)")
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator(args.checkpoint, "cpu", cache_size=0)
    print("| set | should | sentences | " + " | ".join(WARNINGS) + " | mean p per piece |")
    print("|---|---|---:|" + "---:|" * (len(WARNINGS) + 1))
    for name, should, sentences in sets(args.sentences, args.seed):
        t0 = time.time()
        fired = {k: 0 for k in WARNINGS}
        mean_p = 0.0
        for s in sentences:
            trace = tr.trace(s)
            for k, start in WARNINGS.items():
                fired[k] += any(n.startswith(start) for n in trace.notes)
            mean_p += trace.confidence.mean_prob
        n = len(sentences)
        print(f"| {name} | {should} | {n} | " + " | ".join(f"{100 * fired[k] / n:.1f} %" for k in WARNINGS)
              + f" | {mean_p / n:.0%} |", flush=True)
        print(f"  {name}: {time.time() - t0:.0f} s", file=sys.stderr)
    example = "12 345 6789 2024"
    print(f"\nThe issue's example: {example!r} -> {tr.trace(example).translation!r}; "
          f"numbers check: {changed_numbers(example, tr.trace(example).translation)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
