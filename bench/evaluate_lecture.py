"""What a lecture needs from the model, measured: names copied, numbers right, no loops on paragraphs,
and the in-domain (classroom) sets.

    python bench/evaluate_lecture.py [--checkpoint DIR] [--device auto|cpu|cuda] [--json OUT]

- names: held-out Tatoeba *test* sentences that name Tom, Mary or John, with those names replaced by
  names that never occur in training (``augment.HELD_OUT_*``); a sentence passes when every name
  appears exactly in the French.
- numbers: sentences from frames never trained on (``augment.HELD_OUT_FRAMES``) with random counts
  (digits or words), dates, times and prices; passes when each value appears in an accepted French
  form (``12 mai``, ``9 h 30``, ``12,50 euros``...).
- large numbers: a third as many sentences from frames of their own (``augment.HELD_OUT_LARGE_FRAMES``)
  with counts of 1,000 or more ("100,000"); passes when French groups the digits ("100 000"; a four-digit
  count may also stay whole, "1480"), the whole number ("10 000" is not in "110 000").
- paragraphs: the 20 paragraphs of ``transformer/training/corpora/paragraphs.en.txt`` translated
  whole (no sentence splitting); an output loops when a 3-gram of words occurs 3 or more times or
  decoding hits the length limit. Also sentence by sentence, as the command line does by default.
- classroom: BLEU and chrF (sacrebleu defaults) on the project's own classroom dev and test sets.

``--dev`` measures the same things on DEV data only, for choosing between checkpoints: names copied on
300 Tatoeba dev sentences naming Tom, Mary or John, with freshly invented names (never a held-out test
name), and loops on 150 paragraphs of 4-6 dev sentences (classroom dev and Tatoeba dev, 35-90 words;
``--paragraphs N`` for more). For those paragraphs it also gives chrF against the joined references and
the share whose translation has as many sentences as the English (a dropped or merged sentence shows
there).
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

import sacrebleu

from toolkit import ROOT  # noqa: E402  (the checkout, on sys.path: bench/toolkit.py)

from transformer.training.augment import names_test, numbers_test  # noqa: E402
from transformer.training.data import SHARED_DATA, read_corpus  # noqa: E402
from transformer.cli.translate import translate_lines  # noqa: E402
from transformer.sentences import split_sentences  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402

CORPORA = ROOT / "transformer" / "training" / "corpora"


def normalise(text: str) -> str:
    return " ".join(text.replace("\u00a0", " ").replace("\u202f", " ").split())


def has_number(number: str, text: str) -> bool:
    """Whether `text` holds `number` (digit groups split by spaces) as a whole:
    "10 000" is not in "110 000"."""
    return re.search(r"(?<!\d)(?<!\d )" + re.escape(normalise(number)) + r"(?!\d| \d)",
                     normalise(text)) is not None


def loops(text: str, n: int = 3, times: int = 3) -> bool:
    words = text.lower().split()
    grams = Counter(tuple(words[i:i + n]) for i in range(len(words) - n + 1))
    return any(c >= times for c in grams.values())


def looped(trace) -> bool:
    """The paragraph test's failure: a repeated 3-gram, or decoding stopped by the length limit."""
    return loops(trace.translation) or not trace.finished


def dev_figures(tr: Translator, seed: int, n_paragraphs: int = 150) -> dict:
    """Names and paragraph loops on dev data (see the module's docstring); tests are never read."""
    import random
    from transformer.training import augment
    rng = random.Random(seed)
    tatoeba = read_corpus(str(SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz"))
    classroom = read_corpus(str(CORPORA / "classroom.dev.tsv"))
    cases = []
    for en, fr in tatoeba:
        people = [x for x in augment.CORPUS_PEOPLE
                  if augment._count(en, x) == 1 and augment._count(fr, x) == 1]
        if not people:
            continue
        names = [augment.invented_name(rng) + ("" if rng.random() < 0.5 else " " + augment.invented_name(rng))
                 for _ in people]
        for person, name in zip(people, names):
            en = augment._replace_word(en, person, name)
        cases.append((en, names))
        if len(cases) >= 300:
            break
    outs = tr.translate([c[0] for c in cases])
    copied = sum(all(n in o for n in names) for (_, names), o in zip(cases, outs))
    paragraphs, references = [], []
    while len(paragraphs) < n_paragraphs:
        pool = classroom if len(paragraphs) % 2 == 0 else tatoeba
        chosen = rng.sample(pool, rng.choice([4, 5, 6]))
        text = " ".join(en for en, _ in chosen)
        if 35 <= len(text.split()) <= 90:
            paragraphs.append(text)
            references.append(" ".join(fr for _, fr in chosen))
    traces = [tr.trace(p) for p in paragraphs]
    looping = sum(looped(t) for t in traces)
    same_count = sum(len(split_sentences(t.translation)) == len(split_sentences(p))
                     for t, p in zip(traces, paragraphs))
    chrf = sacrebleu.corpus_chrf([t.translation for t in traces], [references]).score
    return {"dev_names_copied_pct": round(100 * copied / len(cases), 1), "dev_names_sentences": len(cases),
            "dev_paragraphs": len(paragraphs), "dev_paragraphs_looping": looping,
            "dev_paragraphs_chrf": round(chrf, 1),
            "dev_paragraphs_same_sentence_count_pct": round(100 * same_count / len(paragraphs), 1)}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=None)
    p.add_argument("--device", default="auto")
    p.add_argument("--n", type=int, default=300, help="sentences in each generated test")
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--json", default=None, help="also write the results here")
    p.add_argument("--show", type=int, default=0, help="print this many failures of each test")
    p.add_argument("--dev", action="store_true", help="dev data only (names, long paragraphs): for selection")
    p.add_argument("--paragraphs", type=int, default=150, help="with --dev: how many dev paragraphs")
    args = p.parse_args(argv)
    tr = Translator(args.checkpoint, args.device)
    if args.dev:
        res = {"checkpoint": str(args.checkpoint or "bundled"), **dev_figures(tr, args.seed, args.paragraphs)}
        print(json.dumps(res, ensure_ascii=False))
        return 0
    res: dict = {"checkpoint": str(args.checkpoint or "bundled")}

    t0 = time.perf_counter()
    cases = names_test(read_corpus(str(SHARED_DATA / "tatoeba-eng-fra" / "test.tsv.gz")), args.n, args.seed)
    outs = tr.translate([c[0] for c in cases])
    ok = [all(name in o for name in names) for (_, names), o in zip(cases, outs)]
    res["names_copied_pct"] = round(100 * sum(ok) / len(ok), 1)
    res["names_sentences"] = len(ok)
    failures = [(en, o) for (en, _), o, good in zip(cases, outs, ok) if not good]
    for en, o in failures[: args.show]:
        print(f"  names  ✗ {en!r} -> {o!r}")
    cases = numbers_test(args.n, args.seed)
    outs = tr.translate([c[0] for c in cases])
    ok = [all(any(normalise(a) in normalise(o) for a in accepted) for accepted in exp)
          for (_, exp), o in zip(cases, outs)]
    res["numbers_correct_pct"] = round(100 * sum(ok) / len(ok), 1)
    res["numbers_sentences"] = len(ok)
    failures = [(en, exp, o) for (en, exp), o, good in zip(cases, outs, ok) if not good]
    for en, exp, o in failures[: args.show]:
        print(f"  number ✗ {en!r} -> {o!r} (wanted one of {exp})")
    cases = numbers_test(args.n // 3, args.seed, large=True)
    outs = tr.translate([c[0] for c in cases])
    ok = [all(any(has_number(a, o) for a in accepted) for accepted in exp)
          for (_, exp), o in zip(cases, outs)]
    res["large_numbers_correct_pct"] = round(100 * sum(ok) / len(ok), 1)
    res["large_numbers_sentences"] = len(ok)
    for en, exp, o in [(en, exp, o) for (en, exp), o, good in zip(cases, outs, ok) if not good][: args.show]:
        print(f"  large  ✗ {en!r} -> {o!r} (wanted one of {exp})")

    paragraphs = [line.strip()
                  for line in (CORPORA / "paragraphs.en.txt").read_text(encoding="utf-8").splitlines()
                  if line.strip()]
    looping = []          # (not `looped`: that is the criterion, a function)
    for text in paragraphs:
        trace = tr.trace(text)
        if looped(trace):
            looping.append(text[:60])
    res["paragraphs"] = len(paragraphs)
    res["paragraphs_looping"] = len(looping)
    split = translate_lines(tr, paragraphs, split=True)          # what the CLI does by default
    res["paragraphs_looping_sentence_by_sentence"] = sum(loops(t) for t in split)
    for name in ("dev", "test"):
        path = CORPORA / f"classroom.{name}.tsv"
        if path.is_file():
            pairs = read_corpus(str(path))
            hyps = tr.translate([s for s, _ in pairs])
            refs = [[t for _, t in pairs]]
            res[f"classroom_{name}_bleu"] = round(sacrebleu.corpus_bleu(hyps, refs).score, 1)
            res[f"classroom_{name}_chrf"] = round(sacrebleu.corpus_chrf(hyps, refs).score, 1)
    res["seconds"] = round(time.perf_counter() - t0, 1)
    for text in looping:
        print(f"  loops: {text}...")
    print(json.dumps(res, ensure_ascii=False))
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
