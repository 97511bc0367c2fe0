"""Make tagged back-translated pairs: ``python -m transformer.cli.backtranslate --checkpoint FR-EN --mono FILE
--out OUT.tsv.gz [--count N]``.

FILE holds French sentences, one a line (gzip'd or not); a French→English checkpoint of this project
(``python -m transformer.cli.train --reverse``) translates them greedily, and OUT gets
``⊽ english<TAB>french`` lines (``transformer/training/backtranslate.py``), ready to be a training corpus
(``OUT.tsv.gz@W``).
"""
from __future__ import annotations

import argparse
import gzip
import json
import sys
import time
from pathlib import Path

import torch

from ..io.checkpoint import load_checkpoint
from ..training.backtranslate import backtranslate


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.backtranslate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", required=True, help="a French→English checkpoint folder")
    p.add_argument("--mono", required=True, help="French sentences, one a line (.txt or .txt.gz)")
    p.add_argument("--out", required=True, help="the tagged pairs (.tsv.gz)")
    p.add_argument("--count", type=int, default=0, help="translate the first N sentences only (0 = all)")
    p.add_argument("--device", default="auto")
    p.add_argument("--batch-tokens", type=int, default=60_000)
    args = p.parse_args(argv)
    device = ("cuda" if torch.cuda.is_available() else "cpu") if args.device == "auto" else args.device
    model, tok = load_checkpoint(args.checkpoint, device)
    opener = gzip.open if args.mono.endswith(".gz") else open
    with opener(args.mono, "rt", encoding="utf-8") as f:
        french = [line.strip() for line in f if line.strip()]
    if args.count:
        french = french[: args.count]
    t0 = time.time()
    pairs = backtranslate(model, tok, french, batch_tokens=args.batch_tokens)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(out, "wt", encoding="utf-8") as f:
        f.writelines(f"{en}\t{fr}\n" for en, fr in pairs)
    print(json.dumps({"sentences": len(french), "pairs": len(pairs), "seconds": round(time.time() - t0, 1),
                      "device": str(device), "out": str(out)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
