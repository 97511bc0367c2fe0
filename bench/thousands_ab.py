"""Two checkpoints on the dev and test sentences that write a number in thousands ('20,000', '1,500'): is
the number kept in the French, and BLEU and chrF on those sentences.

    python3 bench/thousands_ab.py --a OLD_CHECKPOINT --b checkpoints/en-fr-base [--pattern '0,000']

Made for the vocabulary's retired piece "0,000" (tools/retire_pieces.py): the sentences that piece cut
differently are those holding '0,000'. A number is kept when its digits, spaces and separators taken out,
appear in the translation so (« 20 000 », « 20000 » and « 20.000 » all keep '20,000'). Greedy, CPU.
"""
from __future__ import annotations

import argparse
import re

import sacrebleu

from toolkit import emit  # the checkout on sys.path (bench/toolkit.py)
from evaluate_all import SETS  # the model card's dev and test sets
from transformer.serving.translator import Translator
from transformer.training.data import read_corpus

THOUSANDS = re.compile(r"\d{1,3}(?:,\d{3})+")


def kept(number: str, french: str) -> bool:
    digits = re.sub(r"(?<=\d)[\s\u202f\u00a0.,](?=\d)", "", french)
    return re.search(r"(?<!\d)" + number.replace(",", "") + r"(?!\d)", digits) is not None


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--a", required=True, help="checkpoint folder (before)")
    ap.add_argument("--b", required=True, help="checkpoint folder (after)")
    ap.add_argument("--pattern", default="0,000", help="only the sentences whose English holds this")
    args = ap.parse_args(argv)
    rows = []
    for name, path in SETS:
        rows += [(name, en, fr) for en, fr in read_corpus(path)
                 if args.pattern in en and THOUSANDS.search(en)]
    by_set = {n: sum(r[0] == n for r in rows) for n, _ in SETS}
    result = {"sentences": len(rows), "by set": {n: c for n, c in by_set.items() if c}}
    refs = [fr for _, _, fr in rows]
    for label, folder in (("a", args.a), ("b", args.b)):
        hyps = Translator(folder, "cpu").translate([en for _, en, _ in rows])
        numbers = [(n, h) for (_, en, _), h in zip(rows, hyps) for n in THOUSANDS.findall(en)]
        result[label] = {"checkpoint": folder, "numbers kept": f"{sum(kept(n, h) for n, h in numbers)} of "
                         f"{len(numbers)}", "BLEU": round(sacrebleu.corpus_bleu(hyps, [refs]).score, 1),
                         "chrF": round(sacrebleu.corpus_chrf(hyps, [refs]).score, 1)}
    emit(result)


if __name__ == "__main__":
    main()
