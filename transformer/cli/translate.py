"""Translate English to French: ``python -m transformer.cli.translate "An English sentence."``

With no sentence argument, reads English sentences from stdin (one per line) and prints
one translation per line, in order, translated in length-sorted batches.
"""
from __future__ import annotations

import argparse
import sys

from ..config import BEAM_ALPHA, BEAM_MAX
from ..io.checkpoint import CheckpointError
from ..sentences import split_sentences
from ..serving.translator import Translator


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.translate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("sentence", nargs="*", help="English text (default: read lines from stdin)")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--pieces", action="store_true",
                   help="also print the source and target SentencePiece pieces")
    p.add_argument("--no-split", action="store_true",
                   help="translate each line whole (default: a line of several sentences is translated "
                        "sentence by sentence and joined, so paragraphs never loop)")
    args = parse_with_beam(p, argv)
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
            print(translate_lines(tr, [text], args.beam, not args.no_split)[0])
        return 0
    for out in translate_lines(tr, sys.stdin.read().splitlines(), args.beam, not args.no_split):
        print(out)
    return 0


def parse_with_beam(p: argparse.ArgumentParser, argv=None) -> argparse.Namespace:
    """Adds --beam (shared by translate and evaluate), parses, and refuses a width out of range."""
    p.add_argument("--beam", type=int, default=1, metavar="N",
                   help=f"beam search of width N (1 = greedy, batched, the default; at most {BEAM_MAX}: GNMT "
                        f"length penalty, alpha {BEAM_ALPHA}, one sentence at a time)")
    args = p.parse_args(argv)
    if not 1 <= args.beam <= BEAM_MAX:
        p.error(f"--beam must be from 1 to {BEAM_MAX}")
    return args


def translate_lines(tr: Translator, lines: list[str], beam: int = 1, split: bool = True) -> list[str]:
    """One translation per line: greedy (batched) for beam 1, beam search (one sentence at a time) otherwise.
    With `split`, a line of several sentences is translated sentence by sentence and joined."""
    run = tr.translate if beam == 1 else (lambda texts: tr.translate_beam(texts, beam))
    if not split:
        return run(lines)
    parts = [split_sentences(line) or [""] for line in lines]
    flat = run([s for p in parts for s in p])
    out, i = [], 0
    for p in parts:
        out.append(" ".join(t for t in flat[i:i + len(p)] if t))
        i += len(p)
    return out


if __name__ == "__main__":
    sys.exit(main())
