"""Cleaning parallel corpora before training: nothing that is (nearly) a dev or test line, and no pair whose
two sides disagree.

``EvalIndex`` holds every line of the evaluation sets (both sides) in two forms: normalised whole lines (exact
and near-exact: case, accents, punctuation, digits and spacing ignored) and their 8-word windows (a training
line that holds an evaluation sentence inside a longer paragraph). ``clean_pairs`` drops a pair for the first
reason that applies, in this order, and counts each reason:

- ``eval``: either side matches an evaluation line (whole, or by an 8-word window);
- ``tag``: a side holds the back-translation tag ``⊽`` (backtranslate.py), which must mean one thing only;
- ``duplicate``: the same pair (exactly) came earlier in the same file;
- ``empty`` / ``long``: a side is empty, or longer than ``max_words``;
- ``copy``: the French is the English (4 words or more: an untranslated line);
- ``ratio``: the sides' lengths disagree (characters, over ``max_ratio``, once the longer passes 30
  characters);
- ``numbers``: the numbers written in digits differ ("1,000" = "1 000", "3.5" = "3,5", "9:30" = "9 h 30");
- ``language``: the English side is French or the French side English (py3langid restricted to the two,
  probability ≥ 0.9, sides of 4 words or more; a technical string that could be either is left alone).

Training files are never edited: ``python -m transformer.cli.clean`` writes cleaned copies elsewhere, with a
report of what went from each file and why.
"""
from __future__ import annotations

import re
import unicodedata
from collections import Counter
from dataclasses import dataclass, field
from typing import Iterable, Optional

WINDOW = 8                                  # words in a near-duplicate window
_WORD = re.compile(r"[^\W\d_]+", re.UNICODE)
# a number grouped by thousands (1,000 / 1 000 / 1.000, each group exactly three digits), or plain digits;
# either with a decimal part (3.5 / 3,5)
_NUMBER = re.compile(r"(?<![\d.,])(?:\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+|\d+)(?:[.,]\d+)?(?!\d)")
_GROUPED = re.compile(r"(\d{1,3}(?:[,.\u00a0\u202f ]\d{3})+)(?:[.,](\d+))?")
# the back-translation tag (backtranslate.py): no real pair holds it
BT_TAG = "\u22bd"
REASONS = ("eval", "tag", "duplicate", "empty", "long", "copy", "ratio", "numbers", "language")


def words(text: str) -> list[str]:
    """Letters only, lower-cased and without accents: 'L'Été, 2019 !' -> ['l', 'ete']."""
    text = unicodedata.normalize("NFKD", text.casefold())
    text = "".join(c for c in text if not unicodedata.combining(c))
    return _WORD.findall(text)


def _number_value(written: str) -> str:
    grouped = _GROUPED.fullmatch(written)
    if grouped:
        whole, decimals = re.sub(r"\D", "", grouped[1]), grouped[2]
    else:
        whole, decimals = (written.replace(",", ".").split(".") + [""])[:2]
    return f"{whole}.{decimals}" if decimals else whole


def numbers(text: str) -> Counter:
    """The numbers written in digits, as values: thousands' separators removed, the decimal mark a point
    ('1,000.5 and 3' -> {'1000.5': 1, '3': 1}; '1 000,5' alike; '2019 150' is two numbers; '1.5'
    is not '15')."""
    return Counter(_number_value(m) for m in _NUMBER.findall(text))


@dataclass
class EvalIndex:
    """Every evaluation line (both sides), normalised, and its 8-word windows."""

    lines: set = field(default_factory=set)
    windows: set = field(default_factory=set)

    def add(self, text: str) -> None:
        w = words(text)
        if not w:
            return
        self.lines.add(" ".join(w))
        for i in range(len(w) - WINDOW + 1):
            self.windows.add(" ".join(w[i:i + WINDOW]))

    def add_pairs(self, pairs: Iterable[tuple[str, str]]) -> None:
        for en, fr in pairs:
            self.add(en)
            self.add(fr)

    def matches(self, text: str) -> bool:
        w = words(text)
        if not w:
            return False
        if " ".join(w) in self.lines:
            return True
        return any(" ".join(w[i:i + WINDOW]) in self.windows for i in range(len(w) - WINDOW + 1))


class LanguageCheck:
    """Is a side confidently the other language? py3langid restricted to English and French."""

    def __init__(self, min_words: int = 4, min_prob: float = 0.9):
        from py3langid.langid import MODEL_FILE, LanguageIdentifier
        self.ident = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
        self.ident.set_languages(["en", "fr"])
        self.min_words, self.min_prob = min_words, min_prob

    def is_other(self, text: str, lang: str) -> bool:
        if len(text.split()) < self.min_words:
            return False
        found, prob = self.ident.classify(text)
        return found != lang and float(prob) >= self.min_prob


def reason(en: str, fr: str, index: Optional[EvalIndex], lang: Optional[LanguageCheck],
           max_words: int = 200, max_ratio: float = 2.5) -> Optional[str]:
    """Why the pair (en, fr) is dropped, or None when it is kept."""
    if index is not None and (index.matches(en) or index.matches(fr)):
        return "eval"
    if BT_TAG in en or BT_TAG in fr:
        return "tag"
    if not en.strip() or not fr.strip():
        return "empty"
    n_en, n_fr = len(en.split()), len(fr.split())
    if max(n_en, n_fr) > max_words:
        return "long"
    if n_en >= 4 and words(en) == words(fr):
        return "copy"
    short, long_ = sorted((len(en), len(fr)))
    if long_ > 30 and long_ > max_ratio * max(short, 1):
        return "ratio"
    if numbers(en) != numbers(fr):
        return "numbers"
    if lang is not None and (lang.is_other(en, "en") or lang.is_other(fr, "fr")):
        return "language"
    return None


def clean_pairs(pairs: Iterable[tuple[str, str]], index: Optional[EvalIndex], lang: Optional[LanguageCheck],
                filters: bool = True) -> tuple[list[tuple[str, str]], Counter, list[tuple[str, str]]]:
    """The pairs kept, how many went for each reason, and the pairs the filters dropped (evaluation matches
    not among them: the control of an A/B trains on kept + these). filters=False drops
    evaluation matches only."""
    kept, dropped, seen, filtered = [], Counter(), set(), []
    for en, fr in pairs:
        why = reason(en, fr, index, lang) if filters else \
            ("eval" if index is not None and (index.matches(en) or index.matches(fr)) else None)
        if why is None and filters:
            why = "duplicate" if (en, fr) in seen else None
            seen.add((en, fr))
        if why is None:
            kept.append((en, fr))
        else:
            dropped[why] += 1
            if why != "eval":
                filtered.append((en, fr))
    return kept, dropped, filtered
