"""Score a checkpoint with sacrebleu: ``python -m transformer.cli.evaluate --data TEST [--checkpoint DIR]``.

TEST is a TSV file (``english<TAB>french``) or a PREFIX of two aligned files
(PREFIX.en[.gz], PREFIX.fr[.gz]). Greedy decoding (or ``--beam N``: beam search of width N); BLEU and chrF
with sacrebleu's defaults (cased, detokenized, 13a). Prints the signatures, writes the hypotheses, and
prints one JSON line (with ``bleu`` and ``chrf``) last.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import sacrebleu

from ..io.checkpoint import CheckpointError
from ..training.data import read_corpus
from ..serving.translator import Translator
from .translate import parse_with_beam, translate_lines


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.evaluate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="TSV file or PREFIX of aligned .en/.fr files")
    p.add_argument("--checkpoint", default=None, help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default="auto", help="auto, cpu or cuda")
    p.add_argument("--hyp-out", default=None,
                   help="where to write the hypotheses (default: alongside, in runs/eval/)")
    p.add_argument("--limit", type=int, default=0, help="score only the first N pairs (0 = all)")
    args = parse_with_beam(p, argv)
    try:
        tr = Translator(args.checkpoint, args.device)
        pairs = read_corpus(args.data)
    except (CheckpointError, FileNotFoundError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.limit:
        pairs = pairs[: args.limit]
    t0 = time.perf_counter()
    # the model as it is, line by line
    hyps = translate_lines(tr, [s for s, _ in pairs], args.beam, split=False)
    secs = time.perf_counter() - t0
    refs = [[t for _, t in pairs]]
    bleu, chrf = sacrebleu.metrics.BLEU(), sacrebleu.metrics.CHRF()
    b, c = bleu.corpus_score(hyps, refs), chrf.corpus_score(hyps, refs)
    name = Path(args.data).name.replace(".tsv", "").replace(".gz", "")
    hyp_path = Path(args.hyp_out) if args.hyp_out else Path("runs") / "eval" / f"{name}.hyp.fr"
    hyp_path.parent.mkdir(parents=True, exist_ok=True)
    hyp_path.write_text("\n".join(hyps) + "\n", encoding="utf-8")
    print(f"{b}\n  signature: {bleu.get_signature()}")
    print(f"{c}\n  signature: {chrf.get_signature()}")
    print(f"hypotheses: {hyp_path}  ({len(hyps)} sentences in {secs:.1f}s, {len(hyps) / secs:.1f} "
          f"sentences/s on {tr.device})")
    print(json.dumps({"data": args.data, "sentences": len(hyps), "beam": args.beam, "bleu": round(b.score, 2),
                      "chrf": round(c.score, 2), "bleu_signature": str(bleu.get_signature()),
                      "chrf_signature": str(chrf.get_signature()), "seconds": round(secs, 2)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
