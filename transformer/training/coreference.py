"""Generated "it" pairs for training: an animal did not cross a place "because it was too ADJ", where the
adjective says what "it" is (the place when it is too wide, the animal when it is too tired), so the French
pronoun (*il* / *elle*) follows the gender of that noun, which the other noun often does not share.

The Winograd-style pairs of the Transformer blog (*The animal didn't cross the street because it was too
tired / wide*) are the classic; this makes thousands of such pairs with other nouns (``coreference_pairs``),
never the classic itself (``CLASSIC_PAIR``). Written for this project (its words and French are its own).
"""
from __future__ import annotations

import random
from typing import NamedTuple, Sequence

Pair = tuple[str, str]


MUTE_H = {"homme"}     # the nouns here whose h takes l'


class Noun(NamedTuple):
    en: str
    fr: str           # without its article
    feminine: bool

    def the(self) -> str:
        """The noun with its French definite article (l' before a vowel or a mute h: l'homme; *hérisson*'s and
        *hibou*'s h are aspirated: le hérisson, le hibou)."""
        if self.fr[0] in "aâeéèêiîoôu" or self.fr in MUTE_H:
            return f"l'{self.fr}"
        return f"{'la' if self.feminine else 'le'} {self.fr}"


class Adjective(NamedTuple):
    en: str
    masculine: str
    feminine: str


ANIMALS = [Noun(*x) for x in [
    ("animal", "animal", False), ("dog", "chien", False), ("horse", "cheval", False), ("cat", "chat", False),
    ("rabbit", "lapin", False), ("wolf", "loup", False), ("bear", "ours", False), ("fox", "renard", False),
    ("deer", "cerf", False), ("donkey", "âne", False), ("pig", "cochon", False),
    ("hedgehog", "hérisson", False), ("sheep", "mouton", False), ("duck", "canard", False),
    ("snake", "serpent", False), ("lizard", "lézard", False), ("squirrel", "écureuil", False),
    ("elephant", "éléphant", False), ("insect", "insecte", False), ("bird", "oiseau", False),
    ("cow", "vache", True), ("goat", "chèvre", True), ("mouse", "souris", True), ("turtle", "tortue", True),
    ("hen", "poule", True), ("mare", "jument", True), ("frog", "grenouille", True), ("ant", "fourmi", True),
    ("giraffe", "girafe", True), ("spider", "araignée", True),
]]

PLACES = [Noun(*x) for x in [
    ("street", "rue", True), ("road", "route", True), ("river", "rivière", True), ("avenue", "avenue", True),
    ("square", "place", True), ("motorway", "autoroute", True), ("valley", "vallée", True),
    ("forest", "forêt", True), ("railway line", "voie ferrée", True), ("bridge", "pont", False),
    ("stream", "ruisseau", False), ("field", "champ", False), ("garden", "jardin", False),
    ("park", "parc", False), ("boulevard", "boulevard", False), ("canal", "canal", False),
    ("path", "chemin", False), ("car park", "parking", False), ("desert", "désert", False),
    ("yard", "cour", True),
]]

# What only a place is too much of, and what only an animal is. (Cycle 15 trained on these lists with four
# more, dropped after it as ambiguous: "long" and "dangerous" fit a snake or a wolf too, "weak" and
# "old" a bridge.)
PLACE_ADJECTIVES = [Adjective(*x) for x in [
    ("wide", "large", "large"), ("narrow", "étroit", "étroite"), ("busy", "fréquenté", "fréquentée"),
    ("crowded", "bondé", "bondée"), ("muddy", "boueux", "boueuse"), ("noisy", "bruyant", "bruyante"),
    ("slippery", "glissant", "glissante"), ("steep", "raide", "raide"),
]]
ANIMAL_ADJECTIVES = [Adjective(*x) for x in [
    ("tired", "fatigué", "fatiguée"), ("scared", "effrayé", "effrayée"), ("slow", "lent", "lente"),
    ("young", "jeune", "jeune"), ("lazy", "paresseux", "paresseuse"), ("sick", "malade", "malade"),
    ("nervous", "nerveux", "nerveuse"), ("frightened", "effrayé", "effrayée"),
]]

# (English, French with {subject} and {place}: the verb phrase)
VERBS = [
    ("didn't cross the", "{subject} n'a pas traversé {place}"),
    ("did not cross the", "{subject} n'a pas traversé {place}"),
    ("couldn't cross the", "{subject} n'a pas pu traverser {place}"),
    ("refused to cross the", "{subject} a refusé de traverser {place}"),
]

# Never trained on: the pronoun probe's (transformer/training/probe.py), to see whether the rule carries over
# to nouns and adjectives the model never saw in such a sentence: in no list here, none in cycle 15's lists
# (commit 3a5ddfd) and none in a "because" sentence of the written corpora (tests/test_lecture_data.py
# checks). Everyday words the model translates right on their own ("I can see the owl." -> "le hibou"), people
# among them.
HELD_OUT_ANIMALS = [Noun(*x) for x in [
    ("soldier", "soldat", False), ("tiger", "tigre", False), ("chicken", "poulet", False),
    ("owl", "hibou", False), ("king", "roi", False), ("grandfather", "grand-père", False),
    ("queen", "reine", True), ("princess", "princesse", True), ("grandmother", "grand-mère", True),
    ("bee", "abeille", True),
]]
HELD_OUT_PLACES = [Noun(*x) for x in [
    ("beach", "plage", True), ("city", "ville", True), ("kitchen", "cuisine", True), ("room", "pièce", True),
    ("tunnel", "tunnel", False), ("ocean", "océan", False), ("stadium", "stade", False),
    ("corridor", "couloir", False),
]]
# only a place can be these (not "dark" or "far": "it was too dark" reads as the weather's impersonal "it")
HELD_OUT_PLACE_ADJECTIVES = [Adjective(*x) for x in [
    ("flooded", "inondé", "inondée"), ("polluted", "pollué", "polluée"),
]]
# which of them make sense for each place (an ocean can be too polluted, a corridor too flooded)
HELD_OUT_PLACE_FITS = {"beach": ("polluted",), "city": ("polluted", "flooded"), "kitchen": ("flooded",),
                       "room": ("flooded",), "tunnel": ("flooded",), "ocean": ("polluted",),
                       "stadium": ("flooded",), "corridor": ("flooded",)}
HELD_OUT_ANIMAL_ADJECTIVES = [Adjective(*x) for x in [
    ("exhausted", "épuisé", "épuisée"), ("injured", "blessé", "blessée"),
    ("terrified", "terrifié", "terrifiée"), ("ill", "malade", "malade"),
]]

# the classic's own nouns: never generated together (tests/test_examples.py)
CLASSIC_PAIR = ("animal", "street")


def coreference_pair(animal: Noun, place: Noun, adjective: Adjective, verb: tuple[str, str],
                     about_place: bool | None = None) -> Pair:
    """One pair: "The ANIMAL VERB PLACE because it was too ADJECTIVE." and its French, whose pronoun and
    adjective agree with the noun the adjective describes (the place when `about_place`; by default, when the
    adjective is one of PLACE_ADJECTIVES)."""
    about_place = adjective in PLACE_ADJECTIVES if about_place is None else about_place
    referent = place if about_place else animal
    pronoun = "elle" if referent.feminine else "il"
    agreed = adjective.feminine if referent.feminine else adjective.masculine
    en = f"The {animal.en} {verb[0]} {place.en} because it was too {adjective.en}."
    head = verb[1].format(subject=animal.the(), place=place.the())
    return en, f"{head[0].upper()}{head[1:]} parce qu'{pronoun} était trop {agreed}."


def coreference_pairs(n: int, rng: random.Random, animals: Sequence[Noun] = ANIMALS,
                      places: Sequence[Noun] = PLACES) -> list[Pair]:
    """n pairs drawn at random, in minimal pairs (the same animal, place and verb, one adjective about the
    place and one about the animal), three in four of them with nouns of different genders where the lists
    have both (the pronoun then tells which noun "it" is), never the classic's nouns."""
    if all((a.en, p.en) == CLASSIC_PAIR for a in animals for p in places):
        raise ValueError("these nouns make only the classic, which is never generated")
    out: list[Pair] = []
    while len(out) < n:
        animal = rng.choice(animals)
        contrast = rng.random() < 0.75
        place = rng.choice([p for p in places if (p.feminine != animal.feminine) == contrast] or list(places))
        if (animal.en, place.en) == CLASSIC_PAIR:
            continue
        verb = rng.choice(VERBS)
        out.append(coreference_pair(animal, place, rng.choice(PLACE_ADJECTIVES), verb))
        out.append(coreference_pair(animal, place, rng.choice(ANIMAL_ADJECTIVES), verb))
    return out[:n]
