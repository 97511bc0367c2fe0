"""Score a checkpoint on every dev and test set and print the model card's table.

``python bench/evaluate_all.py [--checkpoint DIR]`` runs ``python -m transformer.cli.evaluate`` once
per set (the exact commands are printed in the table) and prints a markdown table.
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys

from toolkit import ROOT  # the checkout (bench/toolkit.py)
DATA = "../shared/data"
SETS = [
    ("Tatoeba dev (selection)", f"{DATA}/tatoeba-eng-fra/dev.tsv.gz"),
    ("Multi30k val (selection)", f"{DATA}/multi30k/val"),
    ("Tatoeba test", f"{DATA}/tatoeba-eng-fra/test.tsv.gz"),
    ("Multi30k test_2016_flickr", f"{DATA}/multi30k/test_2016_flickr"),
    ("Multi30k test_2017_flickr", f"{DATA}/multi30k/test_2017_flickr"),
    ("Multi30k test_2017_mscoco", f"{DATA}/multi30k/test_2017_mscoco"),
    ("Multi30k test_2018_flickr", f"{DATA}/multi30k/test_2018_flickr"),
    ("Classroom dev (project's own; selection)", "transformer/training/corpora/classroom.dev.tsv"),
    ("Classroom test (project's own)", "transformer/training/corpora/classroom.test.tsv"),
    ("newstest2013 (news dev; selection)", f"{DATA}/news-formal/newstest2013.dev.tsv.gz"),
    ("newstest2014 (news test, WMT14)", f"{DATA}/news-formal/newstest2014.test.tsv.gz"),
    ("tech-docs dev: cnp3-ebook (held out by file; selection)", f"{DATA}/tech-docs/cnp3-ebook-fr.tsv.gz"),
    ("tech-docs test: rust-book (held out by file)", f"{DATA}/tech-docs/rust-book-fr.tsv.gz"),
    ("ml-courses dev (held out by file; selection)", f"{DATA}/ml-courses/dev.tsv.gz"),
]


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="cpu")
    args = p.parse_args(argv)
    rows, last = [], None
    for name, data in SETS:
        cmd = [sys.executable, "-m", "transformer.cli.evaluate", "--data", data, "--device", args.device]
        if args.checkpoint:
            cmd += ["--checkpoint", args.checkpoint]
        r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
        if r.returncode != 0:
            print(f"{name}: failed: {r.stderr.strip()}", file=sys.stderr)
            continue
        res = last = json.loads(r.stdout.strip().splitlines()[-1])
        shown = ("python -m transformer.cli.evaluate --data " + data
                 + (f" --checkpoint {args.checkpoint}" if args.checkpoint else ""))
        rows.append((name, res["sentences"], res["bleu"], res["chrf"], shown))
        print(f"{name}: BLEU {res['bleu']}, chrF {res['chrf']} ({res['seconds']} s)", file=sys.stderr,
              flush=True)
    print("| set | sentences | BLEU | chrF | command |\n|---|---:|---:|---:|---|")
    for name, n, b, c, cmd in rows:
        print(f"| {name} | {n:,} | {b:.1f} | {c:.1f} | `{cmd}` |")
    if last is None:
        return 1
    print(f"\nsacrebleu signatures: {last['bleu_signature']} / {last['chrf_signature']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
