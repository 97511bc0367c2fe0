"""Translate English to French: ``python -m transformer.cli.translate "An English sentence."``

With no sentence argument, reads English sentences from stdin (one per line) and prints
one translation per line, in order, translated in length-sorted batches.
"""
from __future__ import annotations

import argparse
import sys

from ..config import BEAM_ALPHA, BEAM_MAX
from ..io.checkpoint import CheckpointError
from ..translator import Translator


def translate_lines(tr: Translator, lines: list[str], beam: int = 1) -> list[str]:
    """Greedy (batched) for beam 1, beam search (one sentence at a time) otherwise."""
    return tr.translate(lines) if beam == 1 else tr.translate_beam(lines, beam)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.translate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sentence", nargs="*", help="English text (default: read lines from stdin)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--pieces", action="store_true", help="also print the source and target SentencePiece pieces")
    p.add_argument("--beam", type=int, default=1, metavar="N",
                   help=f"beam search of width N (1 = greedy, the default; at most {BEAM_MAX}; GNMT length penalty, "
                        f"alpha {BEAM_ALPHA}); beam search translates one sentence at a time")
    args = p.parse_args(argv)
    if not 1 <= args.beam <= BEAM_MAX:
        p.error(f"--beam must be from 1 to {BEAM_MAX}")
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
            print(translate_lines(tr, [text], args.beam)[0])
        return 0
    lines = sys.stdin.read().splitlines()
    for out in translate_lines(tr, lines, args.beam):
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
