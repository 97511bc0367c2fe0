"""Random values written in both languages, for the generated pairs (augment.py) and the generated tests:
counts (in digits or words: ``num2words`` writes the French), dates ("May 12" / "12 mai"), times ("3 p.m." /
"15 h"), prices ("$4.50" / "4,50 dollars") and large counts ("100,000" / "100 000"). Each draws from the `rng`
given: the same seed gives the same values."""
from __future__ import annotations

import json
import random
from pathlib import Path

from num2words import num2words

# The month names of the word lists written for this project (augment_words.json)
MONTHS = [tuple(x)
          for x in json.loads(Path(__file__).with_name("augment_words.json").read_text(encoding="utf-8"))
          ["months"]]


def number_words(n: int, lang: str) -> str:
    return num2words(n, lang=lang)


def random_count(rng: random.Random) -> int:
    """A count of things (2..999), small ones more likely; never ending in 1 (French 'un'/'une')."""
    while True:
        n = rng.choice([rng.randint(2, 12), rng.randint(13, 100), rng.randint(100, 999)])
        if n % 10 != 1:
            return n


def _case_like(orig: str, new: str) -> str:
    return new[:1].upper() + new[1:] if orig[:1].isupper() else new


# --- dates, times, prices -------------------------------------------------------------------------
def random_date(rng: random.Random) -> tuple[str, str]:
    """('May 12', '12 mai'), sometimes with a year; the 1st is '1er' in French."""
    m_en, m_fr = rng.choice(MONTHS)
    day = rng.randint(1, 28 if m_en == "February" else 30)
    fr_day = "1er" if day == 1 else str(day)
    style = rng.random()
    if style < 0.5:
        en, fr = f"{m_en} {day}", f"{fr_day} {m_fr}"
    elif style < 0.7:
        suffix = {1: "st", 2: "nd", 3: "rd", 21: "st", 22: "nd", 23: "rd"}.get(day, "th")
        en, fr = f"{m_en} {day}{suffix}", f"{fr_day} {m_fr}"
    else:
        year = rng.randint(1950, 2035)
        en, fr = f"{m_en} {day}, {year}", f"{fr_day} {m_fr} {year}"
    return en, fr


def random_time(rng: random.Random, words: bool = False) -> tuple[str, str]:
    """('9:30', '9 h 30'), ('3 p.m.', '15 h'), ('noon', 'midi')...; with `words`, "o'clock" times are
    sometimes written in words ("nine o'clock", 'neuf heures'). (Without it no extra random draw is
    made, so the generated numbers test stays the same.)"""
    r = rng.random()
    if r < 0.06:
        return rng.choice([("noon", "midi"), ("midnight", "minuit")])
    h, m = rng.randint(1, 12), rng.choice([0, 0, 15, 30, 45, 10, 20, 40, 50, 5])
    if r < 0.45:  # 24-hour style as the English often writes it in a timetable
        h24 = rng.randint(0, 23)
        return (f"{h24}:{m:02d}", f"{h24} h {m:02d}" if m else f"{h24} h")
    pm = rng.random() < 0.5
    h24 = (h % 12) + (12 if pm else 0)
    en = f"{h}:{m:02d} {'p.m.' if pm else 'a.m.'}" if m else f"{h} {'p.m.' if pm else 'a.m.'}"
    fr = f"{h24} h {m:02d}" if m else f"{h24} h"
    if not pm and rng.random() < 0.3 and not m and not (words and h == 12):   # "12 o'clock" is noon, not 0 h
        en = f"{h} o'clock"
        if words and rng.random() < 0.5:
            en = f"{number_words(h, 'en')} o'clock"
            fr = "une heure" if h24 == 1 else f"{number_words(h24, 'fr')} heures"
    return en, fr


def random_price(rng: random.Random) -> tuple[str, str]:
    amount = rng.choice([rng.randint(2, 20), rng.randint(20, 500), rng.randint(1000, 9000) // 10 * 10])
    cents = rng.choice([0, 0, 0, 50, 99, 25])
    cur = rng.choice([("$", "dollars", "dollars"), ("€", "euros", "euros"), ("£", "pounds", "livres")])
    fr_amount = f"{amount},{cents:02d}" if cents else str(amount)
    en_amount = f"{amount}.{cents:02d}" if cents else str(amount)
    if rng.random() < 0.5:
        return f"{cur[0]}{en_amount}", f"{fr_amount} {cur[2]}"
    return f"{en_amount} {cur[1]}", f"{fr_amount} {cur[2]}"


def random_large_count(rng: random.Random) -> tuple[str, str]:
    """A count of 1,000 or more in digits, as English groups them ('100,000') and French ('100 000'):
    round ones (the paper's "100,000 steps", "2,500,000 people") as often as any other, and among them the
    tens of thousands ("20,000", "150,000") as often as the rest: their English is cut into pieces as '▁2'
    '0,000', so the French '▁20' '▁000' cannot be copied piece by piece (cycle 21 wrote "20,000" as «
    2 000 »)."""
    n = rng.choice([rng.randint(1_000, 9_999), rng.randint(10_000, 999_999),
                    rng.randint(1_000_000, 99_999_999),
                    rng.randint(1, 999) * 10 ** rng.choice([3, 3, 4, 5, 6]), rng.randint(1, 99) * 10_000])
    en = f"{n:,}"
    return en, en.replace(",", " ")


def random_count_text(rng: random.Random, feminine: bool = False) -> tuple[str, str]:
    n = random_count(rng)
    if rng.random() < 0.5 or n > 100:
        return str(n), str(n)
    return number_words(n, "en"), number_words(n, "fr")
