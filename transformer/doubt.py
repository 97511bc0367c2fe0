"""How far to trust a translation: the model's own confidence, and inputs far from what it learned.

Two kinds of signal, both cheap and torch-free (this module needs numpy and py3langid only):

- **Before decoding**, from the input (``input_doubts``): text mostly in capitals (the model saw
  ordinary case; the translator then translates it in sentence case), text in another language
  (French is recognised by the model's own statistics: its pieces are ones the model saw far more
  often on the French side of its training data; other languages by py3langid), and words cut into
  many pieces (words the vocabulary does not hold, which the model knows little about).
- **After decoding**, from the trace (``confidence`` and ``output_doubts``): the mean
  log-probability of the chosen pieces and the least likely of them, and numbers of the input that
  the translation lost or changed.

The thresholds were set on the dev sets (Tatoeba dev, Multi30k val); ``bench/doubt.py`` reports how often
each note fires on the test sets and on inputs where it should (no threshold was chosen on a test set).
"""
from __future__ import annotations

import math
import re
import threading
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import Optional, Sequence

import numpy as np

from .config import RARE_PIECE_COUNT
from .pieces import WORD_MARKER

# ------------------------------------------------------------------ thresholds (bench/doubt.py)
CAPITALS_SHARE = 0.6          # share of letters in capitals above which a text is "mostly capitals"
CAPITALS_MIN_LETTERS = 8
# mean log(target share / source share) of the pieces above which text looks French
FRENCH_SCORE = 0.0
OTHER_LANGUAGE_P = 0.999      # py3langid's probability for a language other than English...
OTHER_LANGUAGE_MIN_WORDS = 4  # ...on at least this many words
# a word cut into this many letter pieces or more, one of them rare, is "cut into many
FRAGMENT_PIECES = 3
FRAGMENT_PIECES_NO_COUNTS = 5  # rare pieces"; without the training counts: this many pieces
UNSURE_PIECE_P = 0.25         # a chosen piece below this probability is marked as unsure
UNSURE_MEAN_LOGPROB = -0.9    # below this mean log-probability per piece, the translation is flagged

LANGUAGES = {"fr": "French", "de": "German", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
             "nl": "Dutch", "sv": "Swedish", "pl": "Polish", "ru": "Russian", "tr": "Turkish",
             "zh": "Chinese", "ja": "Japanese", "ar": "Arabic", "en": "English"}


# ------------------------------------------------------------------ before decoding
def capitals_share(text: str) -> float:
    letters = [c for c in text if c.isalpha()]
    return sum(c.isupper() for c in letters) / len(letters) if len(letters) >= CAPITALS_MIN_LETTERS else 0.0


def mostly_capitals(text: str) -> bool:
    return capitals_share(text) > CAPITALS_SHARE


def sentence_case(text: str) -> str:
    """'THE CAT IS HERE. IS IT?' -> 'The cat is here. Is it?' (and the pronoun 'I' stays upper case)."""
    lowered = re.sub(r"\bi\b", "I", text.lower())
    return re.sub(r"(^|[.!?]\s+)([\"'«“(\[]*)([a-zà-ÿ])",
                  lambda m: m.group(1) + m.group(2) + m.group(3).upper(), lowered)


def ordinary_case(text: str) -> str:
    """The text in sentence case when it is mostly capitals (the model saw ordinary case), else as it is."""
    return sentence_case(text) if mostly_capitals(text) else text


def french_log_ratio(source_counts: Sequence[int], target_counts: Sequence[int]) -> np.ndarray:
    """Per piece, log(share among French training pieces / share among English ones), add-one smoothed:
    computed once per model (the translator keeps it)."""
    src = np.asarray(source_counts, dtype=np.float64)
    tgt = np.asarray(target_counts, dtype=np.float64)
    return np.log((tgt + 1) / (tgt.sum() + len(tgt))) - np.log((src + 1) / (src.sum() + len(src)))


def french_score(ids: Sequence[int], source_counts: Sequence[int], target_counts: Sequence[int],
                 log_ratio: Optional[np.ndarray] = None) -> float:
    """Mean over the pieces of ``french_log_ratio``: above 0 the text is made of pieces the model met mostly
    on the French side. Pass `log_ratio` when it is at hand, so the counts are not read again."""
    ratio = french_log_ratio(source_counts, target_counts) if log_ratio is None else log_ratio
    ids = [i for i in ids if i < len(ratio)]
    return float(np.mean(ratio[ids])) if ids else float("-inf")


_IDENTIFIER_LOCK = threading.Lock()


@lru_cache(maxsize=1)
def _load_identifier():
    from py3langid.langid import MODEL_FILE, LanguageIdentifier
    ident = LanguageIdentifier.from_pickled_model(MODEL_FILE, norm_probs=True)
    ident.set_languages(list(LANGUAGES))
    return ident


def _identifier():
    """py3langid's model, read once (about 0.1-0.3 s of LZMA and unpickling): under a lock, so that a room of
    first requests arriving together does not read it once each (lru_cache alone lets every thread that
    misses compute it; a lecture's 100 simultaneous first pages spent ~9 CPU-seconds that way)."""
    with _IDENTIFIER_LOCK:
        return _load_identifier()


def load_language_identifier() -> None:
    """Read py3langid's model now (the app does it at start, before the first visitor)."""
    _identifier()


def other_language(text: str) -> Optional[str]:
    """The name of the language the text is in when py3langid is sure it is not English, else None."""
    if len(re.findall(r"\w+", text)) < OTHER_LANGUAGE_MIN_WORDS:
        return None
    lang, p = _identifier().classify(text)
    return LANGUAGES.get(lang, lang) if lang != "en" and p >= OTHER_LANGUAGE_P else None


def fragmented_words(pieces: Sequence[str], counts: Optional[Sequence[int]] = None) -> list[tuple[str, int]]:
    """Words (as the pieces spell them) cut into many rare pieces, with their piece count: FRAGMENT_PIECES
    letter pieces or more, one of them seen fewer than RARE_PIECE_COUNT times in training (`counts`, one per
    piece); without counts, FRAGMENT_PIECES_NO_COUNTS pieces or more."""
    words: list[list[tuple[str, int]]] = []
    for p, c in zip(pieces, counts if counts is not None else [None] * len(pieces)):
        if p.startswith(WORD_MARKER) or not words:
            words.append([(p, c)])
        else:
            words[-1].append((p, c))
    out = []
    for w in words:
        letters = [(p, c) for p, c in w if any(ch.isalpha() for ch in p)]   # punctuation pieces do not count
        many = (len(letters) >= FRAGMENT_PIECES and any(c < RARE_PIECE_COUNT for _, c in letters)
                if counts is not None else len(letters) >= FRAGMENT_PIECES_NO_COUNTS)
        if many:
            out.append(("".join(p for p, _ in letters).replace(WORD_MARKER, "").strip(), len(letters)))
    return out


def input_doubts(text: str, ids: Sequence[int], pieces: Sequence[str], counts: Optional[Sequence[int]] = None,
                 log_ratio: Optional[np.ndarray] = None) -> list[str]:
    """Notes on an input far from the training data. `counts`: each piece's training count
    (Source.train_counts); `log_ratio`: ``french_log_ratio`` of the model. Capitals are handled by the caller,
    who changes the text (``ordinary_case``)."""
    notes = []
    french = log_ratio is not None and french_score(ids, (), (), log_ratio) > FRENCH_SCORE
    lang = "French" if french else other_language(text)
    if lang:
        notes.append(f"This looks like {lang}, not English. The model translates English into French: "
                     f"its output for other languages means little.")
    cut = fragmented_words(pieces, counts)
    if cut:
        listed = ", ".join(f"“{w}” ({n} pieces)" for w, n in cut[:4])
        notes.append(f"Some words are not in the model's vocabulary and were cut into pieces it rarely saw "
                     f"in training: {listed}. The model knows little about them; check their translation.")
    return notes


# ------------------------------------------------------------------ after decoding
@dataclass(frozen=True)
class Confidence:
    mean_logprob: float                          # mean log p of the chosen pieces, </s> included
    # (0-based step, piece, p) below UNSURE_PIECE_P, least likely first
    unsure: tuple[tuple[int, str, float], ...]

    @property
    def mean_prob(self) -> float:
        """The geometric mean of the chosen pieces' probabilities."""
        return math.exp(self.mean_logprob)

    @property
    def low(self) -> bool:
        return self.mean_logprob < UNSURE_MEAN_LOGPROB


def confidence(pieces: Sequence[str], probs: Sequence[float]) -> Confidence:
    if not probs:
        return Confidence(0.0, ())
    logp = [math.log(max(p, 1e-12)) for p in probs]
    unsure = sorted(((i, pc, p) for i, (pc, p) in enumerate(zip(pieces, probs)) if p < UNSURE_PIECE_P),
                    key=lambda x: x[2])
    return Confidence(float(np.mean(logp)), tuple(unsure))


_THOUSANDS = {"en": "[,]", "fr": "[\u00a0\u202f ]"}   # 1,500 in English; 1 500 in French
_NUMBER = re.compile(r"\d+")
_PM = re.compile(r"(\d{1,2})(?::\d\d)?\s*p\.?\s?m\b", re.IGNORECASE)


def numbers_in(text: str, lang: str) -> Counter:
    """The numbers of a text as integers (written in digits; "05" is 5), with the language's thousands
    separator removed first (1,500 in English, 1 500 in French)."""
    grouped = re.compile(r"(?<![\d.,])\d{1,3}(?:" + _THOUSANDS[lang] + r"\d{3})+(?![\d])")
    text = grouped.sub(lambda m: re.sub(r"\D", "", m.group(0)), text)
    return Counter(str(int(n)) for n in _NUMBER.findall(text))


def changed_numbers(source: str, translation: str) -> tuple[list[str], list[str]]:
    """(numbers of the source missing from the translation, numbers of the translation not in the
    source). A time "3 p.m." may become "15 h", and ":00" may be dropped ("9:00" -> "9 h")."""
    src, out = numbers_in(source, "en"), numbers_in(translation, "fr")
    for m in _PM.finditer(source):                       # 3 p.m. -> 15 h
        h = int(m.group(1))
        if h < 12 and out[str(h + 12)] > src[str(h + 12)]:
            src[m.group(1)] -= 1
            src[str(h + 12)] += 1
    src = +src
    missing = src - out
    if re.search(r":00\b", source):                     # 9:00 -> 9 h
        missing.pop("0", None)
    extra = out - src
    return sorted(missing.elements()), sorted(extra.elements())


def output_doubts(source: str, translation: str, conf: Confidence, numbers: bool = True) -> list[str]:
    """Notes on a finished translation; `numbers=False` when the source was cut or decoding stopped early
    (numbers after the cut are missing for a reason the user is already told)."""
    notes = []
    missing, extra = changed_numbers(source, translation) if numbers else ([], [])
    if missing or extra:
        parts = ([f"{', '.join(missing)} of your text {'is' if len(missing) == 1 else 'are'} not in the "
                  f"translation"]
                 if missing else []) + ([f"{', '.join(extra)} appeared that your text does not have"] if extra
                                        else [])
        notes.append(f"Check the numbers: {'; '.join(parts)}.")
    if conf.low:
        notes.append(f"The model is unsure of this translation (its chosen pieces have a mean probability of "
                     f"{conf.mean_prob:.0%}); the input may be far from what it learned.")
    return notes
