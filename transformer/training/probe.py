"""The pronoun probe: does the *il* / *elle* of "it" follow the adjective? (bench/probe_coreference.py prints
it.)

For "The ANIMAL didn't cross the PLACE because it was too ADJ." the model is given the French up to
"parce qu'" (teacher forcing) and its probabilities of the next piece being *il* and *elle* are read.
Greedy decoding would pick the more probable one, so a sentence counts as right when the right pronoun is
the more probable of the two. Groups (``groups``):

- classic: the Transformer blog's two sentences (the animal and the street; tired / wide). Never trained on.
- held out: minimal pairs of ``coreference.HELD_OUT_*`` (everyday nouns, people among them, and adjectives
  in no training sentence of this kind): every mover and place of different genders, with each adjective that
  fits the place (``HELD_OUT_PLACE_FITS``) against one about the mover, and the first verb ("didn't cross
  the").
- trained lists: N minimal pairs with nouns of different genders drawn from the generator's own lists with
  a seed no training used (the kind of sentence trained on; some may be in the training data).

Per group (``summarise``): the share of sentences right; the mean share of the right pronoun in
P(il) + P(elle); and over minimal pairs, the share with both sentences right (only then does the pronoun
follow the adjective) and the mean swing P(il | the adjective describes the masculine noun) - P(il | it
describes the feminine one): 0 when the adjective changes nothing, 1 when it decides the pronoun.
"""
from __future__ import annotations

import itertools
import random
from dataclasses import dataclass

import torch

from ..io.tokenizer import Tokenizer
from ..model.transformer import Transformer
from .coreference import (ANIMAL_ADJECTIVES, ANIMALS, CLASSIC_PAIR, HELD_OUT_ANIMAL_ADJECTIVES,
                          HELD_OUT_ANIMALS, HELD_OUT_PLACE_ADJECTIVES, HELD_OUT_PLACE_FITS, HELD_OUT_PLACES,
                          PLACE_ADJECTIVES, PLACES, VERBS, Noun, coreference_pair)

CLASSIC_ANIMAL, CLASSIC_STREET = Noun("animal", "animal", False), Noun("street", "rue", True)
TIRED = next(a for a in ANIMAL_ADJECTIVES if a.en == "tired")
WIDE = next(a for a in PLACE_ADJECTIVES if a.en == "wide")
PROBE_SEED = 2_000_003        # the trained-lists group's draw (training seeds are small numbers)


@dataclass(frozen=True)
class Case:
    english: str
    french: str              # the right French: its pronoun is the one after "parce qu'"
    masculine_meant: bool    # whether "it" is the masculine noun (then *il* is right)


def minimal_pair(animal: Noun, place: Noun, place_adj, animal_adj, verb=VERBS[0]) -> tuple[Case, Case]:
    """The same sentence with "it" meaning the place, then the animal (nouns of different genders)."""
    if animal.feminine == place.feminine:
        raise ValueError(f"{animal.en} and {place.en} have the same gender: the pronoun would not tell them "
                         f"apart")
    return (Case(*coreference_pair(animal, place, place_adj, verb, about_place=True), not place.feminine),
            Case(*coreference_pair(animal, place, animal_adj, verb, about_place=False), not animal.feminine))


def groups(trained: int) -> dict[str, list[tuple[Case, Case]]]:
    fits = {a.en: a for a in HELD_OUT_PLACE_ADJECTIVES}
    # each place adjective paired with the next of these
    movers = itertools.cycle(HELD_OUT_ANIMAL_ADJECTIVES)
    held_out = [minimal_pair(a, p, fits[pa], next(movers))
                for a, p in itertools.product(HELD_OUT_ANIMALS, HELD_OUT_PLACES) if a.feminine != p.feminine
                for pa in HELD_OUT_PLACE_FITS[p.en]]
    rng = random.Random(PROBE_SEED)
    drawn = []
    while len(drawn) < trained:
        animal, place = rng.choice(ANIMALS), rng.choice(PLACES)
        if animal.feminine != place.feminine and (animal.en, place.en) != CLASSIC_PAIR:
            drawn.append(minimal_pair(animal, place, rng.choice(PLACE_ADJECTIVES),
                                      rng.choice(ANIMAL_ADJECTIVES), rng.choice(VERBS)))
    return {"classic": [minimal_pair(CLASSIC_ANIMAL, CLASSIC_STREET, WIDE, TIRED)],
            "held out": held_out, "trained lists": drawn}


class PronounProbe:
    """P(il) and P(elle) after "parce qu'" under teacher forcing, from one encoder and one decoder pass (the
    source as the app reads it: its pieces and </s>)."""

    def __init__(self, model: Transformer, tokenizer: Tokenizer):
        self.model, self.tok = model.eval(), tokenizer
        self.il, self.elle = tokenizer.piece_id("il"), tokenizer.piece_id("elle")

    def position(self, french_ids: list[int]) -> int:
        """The index of the pronoun piece: the first il/elle right after the pieces of "qu'"."""
        pieces = self.tok.pieces(french_ids)
        for k in range(2, len(pieces)):
            if pieces[k] in ("il", "elle") and pieces[k - 1] == "'" and pieces[k - 2] == "▁qu":
                return k
        raise ValueError(f"no pronoun after qu' in {pieces}")

    @torch.inference_mode()
    def __call__(self, english: str, french: str) -> tuple[float, float]:
        ids = self.tok.encode(french)
        k = self.position(ids)
        model, cfg = self.model, self.model.cfg
        src = torch.as_tensor([self.tok.encode(english) + [cfg.eos_id]], device=model.device)
        tgt = torch.as_tensor([[cfg.bos_id] + ids[:k]], device=model.device)
        p = torch.softmax(model.decode(tgt, model.encode(src)).logits[0, -1].float(), dim=-1)
        return float(p[self.il]), float(p[self.elle])


def summarise(probe: PronounProbe, pairs: list[tuple[Case, Case]]) -> dict:
    right, share, both, swing = [], [], [], []
    for pair in pairs:
        ok, p_il = [], {}
        for case in pair:
            il, elle = probe(case.english, case.french)
            p_right = il if case.masculine_meant else elle
            ok.append(p_right > (elle if case.masculine_meant else il))
            share.append(p_right / max(il + elle, 1e-12))
            p_il[case.masculine_meant] = il
        right += ok
        both.append(all(ok))
        swing.append(p_il[True] - p_il[False])
    n = len(right)
    return {"sentences": n, "right": sum(right) / n, "right_share": sum(share) / n,
            "pairs_both_right": sum(both) / len(both), "swing": sum(swing) / len(swing)}
