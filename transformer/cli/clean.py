"""Write cleaned copies of training corpora: ``python -m transformer.cli.clean --out DIR --train SPEC ...``.

Every pair that is (nearly) a line of an evaluation set goes, and, unless ``--no-filters``, every pair whose
sides disagree (length, numbers, language; ``transformer/training/clean.py``). Each corpus is written to
``DIR/<folder>-<name>.tsv.gz``; ``DIR/report.json`` says how many pairs each lost and why, and
``DIR/filtered/`` holds the pairs the filters dropped (not the evaluation matches): training on a corpus plus
its ``filtered`` file is the unfiltered control of an A/B. ``NAME%N`` keeps a
random N of a corpus's cleaned pairs (a cap, e.g. for the legal register). The corpora themselves are never
edited.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import sys
import time
from collections import Counter
from pathlib import Path

from ..training.clean import REASONS, EvalIndex, LanguageCheck, clean_pairs
from ..training.data import SHARED_DATA, read_corpus

ROOT = Path(__file__).resolve().parents[2]
CORPORA = ROOT / "transformer" / "training" / "corpora"
# Every set the project evaluates or selects on (bench/evaluate_all.py, bench/evaluate_lecture.py, the dev
# sets of training): no training pair may be (nearly) one of their lines, on either side.
EVAL_SETS = [
    SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz", SHARED_DATA / "tatoeba-eng-fra" / "test.tsv.gz",
    *(SHARED_DATA / "multi30k" / name for name in
      ("val", "test_2016_flickr", "test_2017_flickr", "test_2017_mscoco", "test_2018_flickr")),
    SHARED_DATA / "news-formal" / "newstest2013.dev.tsv.gz",
    SHARED_DATA / "news-formal" / "newstest2014.test.tsv.gz",
    SHARED_DATA / "tech-docs" / "cnp3-ebook-fr.tsv.gz", SHARED_DATA / "tech-docs" / "rust-book-fr.tsv.gz",
    SHARED_DATA / "ml-courses" / "dev.tsv.gz", SHARED_DATA / "laws-canada" / "dev.tsv.gz",
    CORPORA / "classroom.dev.tsv", CORPORA / "classroom.test.tsv",
]
ENGLISH_ONLY = [CORPORA / "paragraphs.en.txt"]


def write_pairs(path: Path, pairs) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as f:
        f.writelines(f"{en}\t{fr}\n" for en, fr in pairs)


def out_name(spec: str) -> str:
    path = Path(spec)
    stem = path.name.replace(".tsv", "").replace(".gz", "")
    return f"{path.parent.name}-{stem}.tsv.gz"


def eval_index(extra=()) -> tuple[EvalIndex, dict]:
    index, sizes = EvalIndex(), {}
    for spec in [*EVAL_SETS, *extra]:
        pairs = read_corpus(str(spec))
        index.add_pairs(pairs)
        sizes[str(spec)] = len(pairs)
    for path in ENGLISH_ONLY:
        lines = [line for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
        for line in lines:
            index.add(line)
        sizes[str(path)] = len(lines)
    return index, sizes


def clean_mono(spec: str, index, out: Path) -> dict:
    """French sentences for back-translation (FILE or FILE%N: the first N kept), without evaluation lines and
    outside 3-40 words, written to OUT/mono-<name>.txt.gz; what was kept and dropped."""
    name, cap = (spec.rsplit("%", 1)[0], int(spec.rsplit("%", 1)[1])) if "%" in spec else (spec, 0)
    kept, dropped = [], Counter()
    with gzip.open(name, "rt",
                   encoding="utf-8") if name.endswith(".gz") else open(name, encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            why = "eval" if index.matches(line) else None if 3 <= len(line.split()) <= 40 else "length"
            if why:
                dropped[why] += 1
                continue
            kept.append(line)
            if cap and len(kept) >= cap:
                break
    target = out / ("mono-" + Path(name).name.replace(".txt", "").replace(".gz", "") + ".txt.gz")
    with gzip.open(target, "wt", encoding="utf-8", compresslevel=9) as f:
        f.writelines(line + "\n" for line in kept)
    row = {"file": target.name, "kept": len(kept), **dropped}
    print(json.dumps({"mono": name, **row}), file=sys.stderr, flush=True)
    return row


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.clean", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--train", nargs="*", default=[],
                   help="corpora to clean (as in training; NAME%%N caps one)")
    p.add_argument("--mono", nargs="*", default=[],
                   help="French sentences for back-translation, one a line (FILE%%N: the first N kept): "
                        "written to DIR/mono-<name>.txt.gz without evaluation lines and outside 3-40 words")
    p.add_argument("--out", required=True, help="folder for the cleaned copies and report.json")
    p.add_argument("--eval", nargs="*", default=[],
                   help="more evaluation sets to keep out (besides the project's)")
    p.add_argument("--no-filters", action="store_true",
                   help="drop evaluation matches only (the control of an A/B)")
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.time()
    index, sizes = eval_index(args.eval)
    lang = None if args.no_filters else LanguageCheck()
    print(f"evaluation index: {len(index.lines):,} lines, {len(index.windows):,} windows "
          f"from {len(sizes)} sets ({time.time() - t0:.0f} s)", file=sys.stderr)
    report = {"evaluation_sets": sizes, "filters": not args.no_filters, "corpora": {}}
    for spec in args.train:
        name, cap = (spec.rsplit("%", 1)[0], int(spec.rsplit("%", 1)[1])) if "%" in spec else (spec, 0)
        pairs = read_corpus(name)
        kept, dropped, filtered = clean_pairs(pairs, index, lang, filters=not args.no_filters)
        capped = len(kept)
        if cap and len(kept) > cap:       # the filtered pairs are capped in the same proportion
            filtered = random.Random(args.seed).sample(filtered, round(len(filtered) * cap / len(kept)))
            kept = random.Random(args.seed).sample(kept, cap)
        target = out / out_name(name)
        write_pairs(target, kept)
        if filtered:
            write_pairs(out / "filtered" / target.name, filtered)
        row = {"file": target.name, "pairs": len(pairs), "kept": capped, "written": len(kept),
               **{r: dropped.get(r, 0) for r in REASONS}}
        report["corpora"][name] = row
        print(json.dumps({"corpus": name, **row}), file=sys.stderr, flush=True)
    for spec in args.mono:
        report.setdefault("mono", {})[spec.rsplit("%", 1)[0]] = clean_mono(spec, index, out)
    report["seconds"] = round(time.time() - t0)
    (out / "report.json").write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
