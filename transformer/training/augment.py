"""Training-data augmentation: names, places, numbers, dates, times, prices and paragraphs.

Tatoeba's people are nearly all "Tom" and "Mary", its numbers few, and every pair is one
sentence, so a model trained on it alone turns "Professor Smith" into French-looking words,
"12 apples" into "trois pommes", and loops on a paragraph. This module makes extra pairs in
the training pipeline (the corpora themselves are never edited):

- ``substitute_names``: a pair whose two sides both name Tom, Mary or John (or Boston, Tokyo...)
  gets another person (or place) on both sides, from wide lists (``augment_words.json``: several origins,
  written the same in French), sometimes with a title ("Professor Smith" / "le professeur
  Smith", with French contractions and elisions fixed).
- ``substitute_numbers``: a number that both sides write the same (digits) or as words
  (``num2words`` writes the French) gets another number.
- ``template_pairs``: sentences of this project's own about people, numbers, dates, times and
  prices, from frames written for it (``FRAMES``), filled at random.
- ``concatenate``: 2-3 pairs joined (or as many as ``AugmentConfig.concat_sizes`` says, up to
  paragraphs of 6), so that multi-sentence input ends properly and does not loop.

Everything is seeded: the same seed gives the same pairs. ``HELD_OUT_*`` lists are never used
in training; the generated tests (``names_test``, ``numbers_test``) use them.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from dataclasses import dataclass
from typing import Callable, Sequence

from .coreference import coreference_pairs
from .ongoing import ongoing_pairs
from .values import (_case_like, number_words, random_count, random_count_text, random_date,
                     random_large_count, random_price, random_time)

Pair = tuple[str, str]
# The word lists and sentence frames, written for this project (augment_words.json).
WORDS = json.loads((Path(__file__).with_name("augment_words.json")).read_text(encoding="utf-8"))

# --- people and places ----------------------------------------------------------------------
FIRST_NAMES = [tuple(x) for x in WORDS["first_names"]]     # (name, gender), written the same in French
SURNAMES = WORDS["surnames"]
# never in training: the names test's
HELD_OUT_FIRST_NAMES = [tuple(x) for x in WORDS["held_out_first_names"]]
HELD_OUT_SURNAMES = WORDS["held_out_surnames"]
HELD_OUT_NAMES = frozenset({n for n, _ in HELD_OUT_FIRST_NAMES} | set(HELD_OUT_SURNAMES))
TITLES = [tuple(x) for x in WORDS["titles"]]     # English, French, whether French needs an article before it
CITIES = WORDS["cities"]                          # English -> French (no article: "à X", "de X" stay correct)
CORPUS_PEOPLE = ["Tom", "Mary", "John"]
CORPUS_GENDER = {"Tom": "m", "Mary": "f", "John": "m"}
CORPUS_PLACES = ["Boston", "Tokyo", "Paris", "Kyoto", "Osaka", "Chicago"]



def fix_french(text: str) -> str:
    """Contractions and elisions a substitution can break: à le -> au, de le -> du, de Amira -> d'Amira."""
    text = re.sub(r"\b([àÀ]) le ", lambda m: "au " if m.group(1) == "à" else "Au ", text)
    text = re.sub(r"\b([dD]e) le ", lambda m: m.group(1)[0] + "u ", text)
    text = re.sub(r"\b([àÀ]) les ", lambda m: "aux " if m.group(1) == "à" else "Aux ", text)
    text = re.sub(r"\b([dDqQ]u?e|[jJ]e|[lL]e|[lL]a|[sS]i) ([AEIOUYÉ])", _elide, text)
    if text[:1].islower():
        text = text[0].upper() + text[1:]
    return text


def _elide(m: re.Match) -> str:
    word, vowel = m.group(1), m.group(2)
    if word.lower() in ("si",):
        return m.group(0)            # "si Amira" stays (only "s'il" elides)
    if word.lower() in ("la", "le"):
        return m.group(0)            # an article never stands before a first name here
    return word[:-1] + "'" + vowel   # de -> d', que -> qu', je -> j'


@dataclass
class Person:
    en: str
    fr: str          # French form, including any article ("le professeur Smith")
    gender: str


ONSETS = WORDS["onsets"]
VOWELS = WORDS["vowels"]
CODAS = WORDS["codas"]


# Names often begin like an English word ("Tendai", "Eskil", "Winona"); mixing such starts into invented
# names teaches the model to copy a capitalised name instead of translating the word inside it.
WORD_STARTS = WORDS["word_starts"]
# English-looking surnames are compounds ("Greenwood", "Ashford"): a word the model knows how to
# translate, then a common ending; it must copy the whole, not translate the first half.
SURNAME_ENDINGS = WORDS["surname_endings"]


def invented_name(rng: random.Random) -> str:
    """A name that is in no list (e.g. 'Tirakun', 'Kwalossa', 'Ashbrook'): pronounceable syllables,
    sometimes after an English word, or an English-looking compound. The tokenizer cuts it into
    several pieces, so the model must learn to copy pieces, not to map known names to themselves.
    Never one of the held-out test names."""
    while True:
        if rng.random() < 0.2:
            word = rng.choice(WORD_STARTS) + rng.choice(SURNAME_ENDINGS)
        else:
            n = rng.choice([2, 2, 3, 3, 3, 4])
            start = rng.choice(WORD_STARTS) if rng.random() < 0.35 else ""
            n = n - 1 if start else n
            word = start + "".join(rng.choice(ONSETS) + rng.choice(VOWELS)
                                   + (rng.choice(CODAS) if i == n - 1 or rng.random() < 0.2 else "")
                                   for i in range(n))
        word = word[:1].upper() + word[1:]
        if len(word) > 2 and word not in HELD_OUT_NAMES:
            return word


def random_person(rng: random.Random, held_out: bool = False, titled_share: float = 0.25,
                  gender: str | None = None, invented_share: float = 0.7) -> Person:
    """Someone from the name lists, or with an invented name (`invented_share` of the time, never for
    held-out tests); `gender` ('m'/'f') keeps the sentence's pronouns right."""
    firsts = HELD_OUT_FIRST_NAMES if held_out else FIRST_NAMES
    if gender is not None:
        firsts = [x for x in firsts if x[1] == gender]
    lasts = HELD_OUT_SURNAMES if held_out else SURNAMES
    first, gender = rng.choice(firsts)
    last = rng.choice(lasts)
    if not held_out and rng.random() < invented_share:
        first = invented_name(rng)
    if not held_out and rng.random() < invented_share:
        last = invented_name(rng)
    r = rng.random()
    if r < titled_share:
        en_t, fr_t, article = rng.choice(TITLES)
        while (en_t in ("Ms.", "Mrs.") and gender == "m") or (en_t == "Mr." and gender == "f"):
            en_t, fr_t, article = rng.choice(TITLES)
        if article:
            fr_title = ("la " + fr_t) if (gender == "f" and fr_t == "professeur") else ("le " + fr_t)
            if fr_t == "docteur" and gender == "f":
                fr_title = "la docteure"
            return Person(f"{en_t} {last}", f"{fr_title} {last}", gender)
        return Person(f"{en_t} {last}", f"{fr_t} {last}", gender)
    if r < titled_share + 0.2:
        return Person(f"{first} {last}", f"{first} {last}", gender)
    return Person(first, first, gender)


def _replace_word(text: str, old: str, new: str) -> str:
    return re.sub(r"(?<![\w-])" + re.escape(old) + r"(?![\w-])", lambda _m: new, text)


def substitute_names(pairs: Sequence[Pair], rng: random.Random, copies: int = 1,
                     held_out: bool = False) -> list[Pair]:
    """Pairs naming Tom/Mary/John (or a corpus city) on both sides, with other people (places)."""
    out = []
    for en, fr in pairs:
        people = [n for n in CORPUS_PEOPLE if _count(en, n) and _count(en, n) == _count(fr, n)]
        places = [c for c in CORPUS_PLACES if _count(en, c) and _count(en, c) == _count(fr, c)]
        if not people and not places:
            continue
        for _ in range(copies):
            e, f = en, fr
            used = set()
            for name in people:
                g = CORPUS_GENDER[name]
                p = random_person(rng, held_out, 0.0 if held_out else 0.25, g)
                while p.en in used:
                    p = random_person(rng, held_out, 0.0 if held_out else 0.25, g)
                used.add(p.en)
                e, f = _replace_word(e, name, p.en), _replace_word(f, name, p.fr)
            for place in places:
                city_en, city_fr = rng.choice(list(CITIES.items()))
                e, f = _replace_word(e, place, city_en), _replace_word(f, place, city_fr)
            out.append((e, fix_french(f)))
    return out


def _count(text: str, word: str) -> int:
    return len(re.findall(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text))


# "two" is left out: "you two" / "tous les deux" is an idiom, not a count.
_EN_WORDS = {number_words(n, "en"): n for n in range(3, 100) if n % 10 != 1}


def substitute_numbers(pairs: Sequence[Pair], rng: random.Random, copies: int = 2) -> list[Pair]:
    """Another number where both sides write the same digits, or the same number in words."""
    out = []
    for en, fr in pairs:
        digits = [d for d in set(re.findall(r"(?<![\d:.,])\d{1,3}(?![\d:.,])", en))
                  if _count(fr, d) == _count(en, d) == 1]
        words = [w for w in _EN_WORDS if _count(en.lower(), w) == 1
                 and _count(fr.lower(), number_words(_EN_WORDS[w], "fr")) == 1]
        if not digits and not words:
            continue
        for _ in range(copies):
            e, f = en, fr
            for d in digits:
                n = str(random_count(rng) if int(d) > 1 else d)
                e, f = _replace_word(e, d, n), _replace_word(f, d, n)
            for w in words:
                n = random_count(rng) % 100 or 20
                if n % 10 == 1:
                    n += 1
                as_digits = rng.random() < 0.3
                ne = str(n) if as_digits else number_words(n, "en")
                nf = str(n) if as_digits else number_words(n, "fr")
                e = re.sub(r"(?<![\w-])" + w + r"(?![\w-])", lambda m, ne=ne: _case_like(m.group(0), ne), e,
                           flags=re.I)
                fw = number_words(_EN_WORDS[w], "fr")
                f = re.sub(r"(?<![\w-])" + fw + r"(?![\w-])", lambda m, nf=nf: _case_like(m.group(0), nf), f,
                           flags=re.I)
            out.append((e, f))
    return out


# Frames: English, French. {P}/{Q} people, {N} a count, {D} a date, {T} a time, {M} money,
# {C} a city, {e} French agreement with {P} ('' or 'e'), {es} plural agreement of {P} and {Q}.
FRAMES: list[Pair] = [tuple(x) for x in WORDS["frames"]]
# the numbers test's only (never trained)
HELD_OUT_FRAMES: list[Pair] = [tuple(x) for x in WORDS["held_out_frames"]]
# its large counts' only
HELD_OUT_LARGE_FRAMES: list[Pair] = [tuple(x) for x in WORDS["held_out_large_frames"]]


def fill(frame: Pair, rng: random.Random, held_out: bool = False, large: bool = False) -> tuple[Pair, dict]:
    """One pair from a frame, and the values put in (for tests); `large` puts a count of 1,000 or more in
    {N}."""
    en, fr = frame
    vals: dict = {}
    p, q = random_person(rng, held_out), random_person(rng, held_out)
    while q.en == p.en:
        q = random_person(rng, held_out)
    if "{N}" in en:
        vals["N"] = random_large_count(rng) if large else random_count_text(rng)
    if "{D}" in en:
        vals["D"] = random_date(rng)
    if "{T}" in en:
        vals["T"] = random_time(rng, words=not held_out)
    if "{M}" in en:
        vals["M"] = random_price(rng)
    cities = rng.sample(list(CITIES.items()), 2)
    vals["P"], vals["Q"] = (p.en, p.fr), (q.en, q.fr)
    vals["C"], vals["C2"] = cities[0], cities[1]
    for key, (ve, vf) in vals.items():
        en, fr = en.replace("{" + key + "}", ve), fr.replace("{" + key + "}", vf)
    fr = fr.replace("{e}", "e" if p.gender == "f" else "").replace("{es}", "es" if p.gender == q.gender == "f"
                                                                   else "s")
    en = en.replace("..", ".").replace(".?", "?").replace(".!", "!")   # "at 3 p.m." at the end of a sentence
    return (en[0].upper() + en[1:], fix_french(fr)), vals


def template_pairs(n: int, rng: random.Random, frames: Sequence[Pair] = FRAMES,
                   held_out: bool = False) -> list[Pair]:
    return [fill(rng.choice(frames), rng, held_out)[0] for _ in range(n)]


_RANGE = re.compile(r"\d\s*(?:or|to|and|-|–)\s*\d")    # "2 or 3 days", "5 to 6", "10-12"
# a number of 1-3 digits on its own: not part of a price, a time, a decimal or a range; not a label ("head 4",
# "room 12", "at 5") or a mark ("19 out of 20")
_NOT_A_COUNT = re.compile(r"\b(?:at|head|layer|room|page|chapter|platform|number|no\.|step|version|line)\s*$",
                          re.I)
_PLAIN_COUNT = re.compile(r"(?<![\d:.,$€£-])\d{1,3}"
                          r"(?![\d:.,-]|\s*(?:o'clock|[ap]\.?m\b|or\b|to\b|out\s+of\b))")


def large_number_pairs(pairs: Sequence[Pair], n: int, rng: random.Random) -> list[Pair]:
    """n pairs with a count of 1,000 or more ('100,000' / '100 000'): half from the frames with a count, half
    from corpus pairs whose two sides write the same number in digits (that number replaced). The other
    generated numbers stay under 1,000, and the generated numbers test draws only those. A time ("5 o'clock",
    "at 5"), a label ("head 4", "room 12"), a mark ("19 out of 20") or a range ("2 or 3 years")
    is left alone."""
    frames = [f for f in FRAMES if "{N}" in f[0]]
    digit_pairs = []
    for en, fr in pairs:
        if _RANGE.search(en):
            continue
        for m in _PLAIN_COUNT.finditer(en):
            d = m.group(0)
            if int(d) > 1 and _count(en, d) == _count(fr, d) == 1 and \
                    not _NOT_A_COUNT.search(en[: m.start()]):
                digit_pairs.append((en, fr, d))
                break
    out = []
    for i in range(n):
        if i % 2 == 0 or not digit_pairs:
            out.append(fill(rng.choice(frames), rng, large=True)[0])
        else:
            en, fr, d = rng.choice(digit_pairs)
            ne, nf = random_large_count(rng)
            out.append((_replace_word(en, d, ne), _replace_word(fr, d, nf)))
    return out


def concatenate(pairs: Sequence[Pair], n: int, rng: random.Random,
                sizes: Sequence[int] = (2, 2, 3)) -> list[Pair]:
    """n pairs, each k pairs joined by a space, k drawn from `sizes` (only pairs that end in . ! or ?)."""
    ends = [p for p in pairs if p[0][-1:] in ".!?" and p[1][-1:] in ".!?"]
    out = []
    for _ in range(n):
        chosen = rng.sample(ends, rng.choice(sizes))
        out.append((" ".join(p[0] for p in chosen), " ".join(p[1] for p in chosen)))
    return out


@dataclass
class AugmentConfig:
    """How many extra pairs of each kind (name copies per pair, numbers copies per pair, counts), and
    how many pairs each concatenation joins (drawn from `concat_sizes`)."""

    name_copies: int = 4
    number_copies: int = 3
    templates: int = 40_000
    concatenations: int = 25_000
    concat_sizes: tuple[int, ...] = (2, 2, 3)
    # generated "it" pairs whose French pronoun follows what "it" is (coreference.py)
    coreference: int = 0
    large_numbers: int = 0    # pairs with counts of 1,000 or more ('100,000' / '100 000')
    ongoing: int = 0          # "has been learning ... for three years" / "apprend ... depuis trois ans"


def augment(pairs: Sequence[Pair], seed: int, cfg: AugmentConfig = AugmentConfig(),
            log: Callable[[str], None] = lambda s: None) -> list[Pair]:
    """The extra training pairs made from `pairs` (the corpora) and from FRAMES."""
    rng = random.Random(seed)
    names = substitute_names(pairs, rng, cfg.name_copies)
    numbers = substitute_numbers(pairs, rng, cfg.number_copies)
    templates = template_pairs(cfg.templates, rng)
    concat = concatenate(list(pairs) + names[: len(names) // 4], cfg.concatenations, rng, cfg.concat_sizes)
    # (last: the rest as before)
    coreference = coreference_pairs(cfg.coreference, rng) if cfg.coreference else []
    # (after coreference)
    large = large_number_pairs(pairs, cfg.large_numbers, rng) if cfg.large_numbers else []
    ongoing = ongoing_pairs(cfg.ongoing, rng) if cfg.ongoing else []     # (after large numbers)
    log(f"augmentation: {len(names):,} name/place pairs, {len(numbers):,} number pairs, "
        f"{len(templates):,} template pairs, {len(concat):,} multi-sentence pairs"
        + (f", {len(coreference):,} coreference pairs" if coreference else "")
        + (f", {len(large):,} large-number pairs" if large else "")
        + (f", {len(ongoing):,} ongoing-action pairs" if ongoing else ""))
    return names + numbers + templates + concat + coreference + large + ongoing


# --- generated tests (held-out names and frames) --------------------------------------------------
def names_test(pairs: Sequence[Pair], n: int, seed: int) -> list[tuple[str, list[str]]]:
    """(English sentence, names it holds) from held-out pairs naming Tom/Mary/John, with unseen names."""
    rng = random.Random(seed)
    out = []
    for en, fr in pairs:
        people = [x for x in CORPUS_PEOPLE if _count(en, x) == 1 and _count(fr, x) == 1]
        if not people:
            continue
        e, names = en, []
        for name in people:
            p = random_person(rng, True, 0.0, CORPUS_GENDER[name])
            while p.en in names:
                p = random_person(rng, True, 0.0, CORPUS_GENDER[name])
            names.append(p.en)
            e = _replace_word(e, name, p.en)
        out.append((e, names))
        if len(out) >= n:
            break
    return out


def numbers_test(n: int, seed: int, large: bool = False) -> list[tuple[str, list[list[str]]]]:
    """(English sentence, for each value in it the accepted French renderings) from held-out frames; with
    `large`, counts of 1,000 or more ('100,000') in frames of their own, whose French groups the digits
    ('100 000'; a four-digit count may also stay whole, '1480')."""
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        frame = rng.choice(HELD_OUT_LARGE_FRAMES if large else HELD_OUT_FRAMES)
        (en, _fr), vals = fill(frame, rng, held_out=True, large=large)
        expected = []
        for key in ("N", "D", "T", "M"):
            if key in vals:
                ve, vf = vals[key]
                accepted = {vf}
                if key == "N" and not ve.isdigit():
                    accepted.add(str(_EN_WORDS.get(ve, ve)) if ve in _EN_WORDS else vf)
                if key == "N" and ve.isdigit():
                    accepted.add(number_words(int(ve), "fr"))
                if key == "N" and large and len(ve) == 5:          # 1,480: "1 480" or "1480"
                    accepted.add(ve.replace(",", ""))
                if key == "T":
                    accepted |= {vf.replace(" h ", "h").replace(" h", "h"), vf.replace(" h ", ":")}
                if key == "M":
                    num, cur = vf.rsplit(" ", 1)
                    accepted |= ({f"{num} {sym}" for sym in ("$", "€", "£")}
                                 | {f"{num}{sym}" for sym in ("$", "€", "£")})
                expected.append(sorted(accepted))
        out.append((en, expected))
    return out
