"""Generated pairs for an English tense French does not have: "She has been learning to play the piano for
three years." is « Elle apprend à jouer du piano depuis trois ans. », a present with *depuis*, where a word
for word translation gives « Elle a appris … depuis … » (what cycle 21 wrote for one of the app's Examples).

``ongoing_pairs`` makes such pairs from subjects, activities and durations written for this project, and, as
contrasts, the same activities in the simple past with "for" (« a appris … pendant trois ans ») and the
present perfect without a duration (« a appris … »), so that the model learns the tense, not a word swap.
Everything is seeded by the caller's ``random.Random``.
"""
from __future__ import annotations

import random
from typing import NamedTuple

from ..examples import EVERYDAY
from .values import number_words

Pair = tuple[str, str]


class Subject(NamedTuple):
    en: str
    fr: str
    person: int          # 0 je, 1 tu, 2 il/elle, 3 nous, 4 vous, 5 ils/elles
    feminine: bool = False


SUBJECTS = [Subject("I", "je", 0), Subject("you", "vous", 4), Subject("he", "il", 2),
            Subject("she", "elle", 2, True), Subject("we", "nous", 3), Subject("they", "ils", 5),
            Subject("my sister", "ma sœur", 2, True), Subject("my brother", "mon frère", 2),
            Subject("our teacher", "notre professeur", 2), Subject("the students", "les étudiants", 5),
            Subject("my neighbours", "mes voisins", 5), Subject("the team", "l'équipe", 2, True)]


class Activity(NamedTuple):
    en_ing: str           # after "has been"
    en_past: str          # simple past
    fr_present: tuple[str, str, str, str, str, str]
    fr_participle: str    # after "avoir" (passé composé)
    rest_en: str
    rest_fr: str


def _act(ing, past, present, participle, rest_en="", rest_fr="") -> Activity:
    return Activity(ing, past, tuple(present.split()), participle, rest_en, rest_fr)


WORK = "travaille travailles travaille travaillons travaillez travaillent"
ACTIVITIES = [
    _act("learning", "learned", "apprends apprends apprend apprenons apprenez apprennent", "appris",
         "to play the piano", "à jouer du piano"),
    _act("learning", "learned", "apprends apprends apprend apprenons apprenez apprennent", "appris",
         "French", "le français"),
    _act("studying", "studied", "étudie étudies étudie étudions étudiez étudient", "étudié",
         "machine learning", "l'apprentissage automatique"),
    _act("working", "worked", WORK, "travaillé", "here", "ici"),
    _act("working", "worked", WORK, "travaillé", "on this project", "sur ce projet"),
    _act("living", "lived", "vis vis vit vivons vivez vivent", "vécu", "in Montreal", "à Montréal"),
    _act("living", "lived", "vis vis vit vivons vivez vivent", "vécu", "in this town", "dans cette ville"),
    _act("playing", "played", "joue joues joue jouons jouez jouent", "joué", "the guitar", "de la guitare"),
    _act("teaching", "taught", "enseigne enseignes enseigne enseignons enseignez enseignent", "enseigné",
         "at the university", "à l'université"),
    _act("training", "trained", "entraîne entraînes entraîne entraînons entraînez entraînent", "entraîné",
         "the model", "le modèle"),
    _act("writing", "wrote", "écris écris écrit écrivons écrivez écrivent", "écrit", "a book", "un livre"),
    _act("running", "ran", "cours cours court courons courez courent", "couru", "every morning",
         "tous les matins"),
    _act("waiting", "waited", "attends attends attend attendons attendez attendent", "attendu"),
    _act("reading", "read", "lis lis lit lisons lisez lisent", "lu", "this paper", "cet article"),
]

UNITS = [("year", "years", "an", "ans", False), ("month", "months", "mois", "mois", False),
         ("week", "weeks", "semaine", "semaines", True), ("day", "days", "jour", "jours", False),
         ("hour", "hours", "heure", "heures", True), ("minute", "minutes", "minute", "minutes", True)]
SINCE = [("since this morning", "depuis ce matin"), ("since Monday", "depuis lundi"),
         ("since last year", "depuis l'année dernière"), ("since the summer", "depuis l'été"),
         ("since January", "depuis janvier"), ("since 2019", "depuis 2019"), ("since 2021", "depuis 2021")]


def duration(rng: random.Random) -> Pair:
    """("three years", "trois ans"), ("a week", "une semaine"), ("12 days", "12 jours")..."""
    one_en, many_en, one_fr, many_fr, feminine = rng.choice(UNITS)
    n = rng.choice([1, 1, rng.randint(2, 12), rng.randint(2, 12), rng.randint(13, 40)])
    if n == 1:
        return f"a{'n' if one_en == 'hour' else ''} {one_en}", f"{'une' if feminine else 'un'} {one_fr}"
    if rng.random() < 0.3:
        return f"{n} {many_en}", f"{n} {many_fr}"
    words = number_words(n, "fr")
    if feminine and words.endswith(" un"):           # vingt et une semaines
        words += "e"
    return f"{number_words(n, 'en')} {many_en}", f"{words} {many_fr}"


def _start(subject: Subject, verb: str) -> str:
    """The French subject and verb, 'je' elided before a vowel."""
    if subject.fr == "je" and verb[0] in "aeéèêiîoôuh":
        return "j'" + verb
    return f"{subject.fr} {verb}"


def _sentence(text: str) -> str:
    text = " ".join(text.split())
    return text[0].upper() + text[1:] + "."


NEVER = frozenset(EVERYDAY)
AUXILIARY_FR = ("ai", "as", "a", "avons", "avez", "ont")


def ongoing_pairs(n: int, rng: random.Random) -> list[Pair]:
    """n pairs: 70 % present perfect continuous with a duration ("for three years", "since Monday") → present
    with *depuis*; 15 % simple past with "for" → passé composé with *pendant*; 15 % present perfect without a
    duration → passé composé. The app's Examples are never made (one of them is of this kind: it must read
    right by what the model learned, not by heart)."""
    out: list[Pair] = []
    while len(out) < n:
        s, a = rng.choice(SUBJECTS), rng.choice(ACTIVITIES)
        has = "has" if s.person == 2 else "have"
        kind = rng.random()
        if kind < 0.7:
            if rng.random() < 0.75:
                d_en, d_fr = duration(rng)
                when_en, when_fr = "for " + d_en, "depuis " + d_fr
            else:
                when_en, when_fr = rng.choice(SINCE)
            en = f"{s.en} {has} been {a.en_ing} {a.rest_en} {when_en}"
            fr = f"{_start(s, a.fr_present[s.person])} {a.rest_fr} {when_fr}"
        elif kind < 0.85:
            d_en, d_fr = duration(rng)
            en = f"{s.en} {a.en_past} {a.rest_en} for {d_en}"
            fr = f"{_start(s, AUXILIARY_FR[s.person])} {a.fr_participle} {a.rest_fr} pendant {d_fr}"
        else:
            participle = a.en_past if a.en_past != "ran" else "run"
            participle = {"wrote": "written", "taught": "taught"}.get(participle, participle)
            en = f"{s.en} {has} {participle} {a.rest_en}"
            fr = f"{_start(s, AUXILIARY_FR[s.person])} {a.fr_participle} {a.rest_fr}"
        if _sentence(en) not in NEVER:
            out.append((_sentence(en), _sentence(fr)))
    return out
