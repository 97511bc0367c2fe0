"""Translate English to French: ``python -m transformer.cli.translate "An English sentence."``

With no sentence argument, reads English sentences from stdin (one per line) and prints
one translation per line, in order, translated in length-sorted batches.
"""
from __future__ import annotations

import argparse
import sys

from ..io.checkpoint import CheckpointError
from ..translator import Translator


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.translate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sentence", nargs="*", help="English text (default: read lines from stdin)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--pieces", action="store_true", help="also print the source and target SentencePiece pieces")
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
            print(tr.translate([text])[0])
        return 0
    lines = sys.stdin.read().splitlines()
    for out in tr.translate(lines):
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
