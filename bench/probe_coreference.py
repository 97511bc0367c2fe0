"""Does the pronoun of "it" follow the adjective? The teacher-forced probe of transformer/training/probe.py.

    python bench/probe_coreference.py [--checkpoint DIR] [--json OUT] [--trained N]

Prints, per group (the classic pair, held-out nouns and adjectives, the generator's own lists), the share of
sentences whose right pronoun is the more probable, the right pronoun's share of P(il) + P(elle), the share of
minimal pairs with both right, and the mean swing of P(il) between the two sentences of a pair (0: the
adjective changes nothing); then P(il) and P(elle) for the two classics.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import torch

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

from transformer.io.checkpoint import load_checkpoint  # noqa: E402
from transformer.training.probe import PronounProbe, groups, summarise  # noqa: E402


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--checkpoint", default=None, help="a checkpoint folder (default: the bundled model)")
    ap.add_argument("--trained", type=int, default=100, help="minimal pairs drawn from the training lists")
    ap.add_argument("--json", default=None, help="also write the figures here")
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    probe = PronounProbe(*load_checkpoint(args.checkpoint, "cpu"))
    out = {}
    for name, pairs in groups(args.trained).items():
        out[name] = summarise(probe, pairs)
        r = out[name]
        print(f"{name:14s} {r['sentences']:4d} sentences: right {r['right']:.0%}, right pronoun's share "
              f"{r['right_share']:.2f}, minimal pairs both right {r['pairs_both_right']:.0%}, swing "
              f"{r['swing']:+.2f}")
    for case in groups(0)["classic"][0]:
        il, elle = probe(case.english, case.french)
        print(f"  {case.english}  P(il) {il:.2f}  P(elle) {elle:.2f}")
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
