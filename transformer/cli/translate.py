"""Translate English to French: ``python -m transformer.cli.translate "An English sentence."``

With no sentence argument, reads English sentences from stdin (one per line) and prints
one translation per line, in order, translated in length-sorted batches.
"""
from __future__ import annotations

import argparse
import sys

from ..io.checkpoint import CheckpointError
from ..sentences import split_sentences
from ..translator import Translator


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.translate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sentence", nargs="*", help="English text (default: read lines from stdin)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--pieces", action="store_true", help="also print the source and target SentencePiece pieces")
    p.add_argument("--no-split", action="store_true",
                   help="translate each line whole (default: a line of several sentences is translated "
                        "sentence by sentence and joined, so paragraphs never loop)")
    args = p.parse_args(argv)
    try:
        tr = Translator(args.checkpoint, args.device)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.sentence:
        text = " ".join(args.sentence)
        if args.pieces:
            trace = tr.trace(text)
            print("source pieces:", " ".join(trace.src_pieces))
            print("target pieces:", " ".join(trace.tgt_pieces))
            print(trace.translation)
        else:
            print(translate_lines(tr, [text], not args.no_split)[0])
        return 0
    for out in translate_lines(tr, sys.stdin.read().splitlines(), not args.no_split):
        print(out)
    return 0


def translate_lines(tr: Translator, lines: list[str], split: bool = True) -> list[str]:
    """One translation per line; with `split`, the sentences of all lines go in one batched call."""
    if not split:
        return tr.translate(lines)
    parts = [split_sentences(line) or [""] for line in lines]
    flat = tr.translate([s for p in parts for s in p])
    out, i = [], 0
    for p in parts:
        out.append(" ".join(t for t in flat[i:i + len(p)] if t))
        i += len(p)
    return out


if __name__ == "__main__":
    sys.exit(main())
