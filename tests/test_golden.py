"""Golden translations of the bundled model (our own sentences, not corpus lines).

Chosen so that at every greedy step the winning piece leads the runner-up by at least 0.5 in
probability, so that tiny floating-point differences between CPUs cannot flip them. A change
here means the model, the tokenizer or decoding changed: look before updating.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from conftest import ROOT
from transformer.serving.translator import Translator

GOLDEN = {
    "The cat is sleeping on the sofa.": "Le chat dort sur le canapé.",
    "Two children are playing football in the park.": "Deux enfants jouent au football dans le parc.",
    "My brother likes green tea.": "Mon frère aime le thé vert.",
    "I don't understand this question.": "Je ne comprends pas cette question.",
    "A woman in a red dress is riding a bicycle.": "Une femme en robe rouge fait du vélo.",
    "It is very cold today.": "Il fait très froid aujourd'hui.",
    "The dog is running on the beach.": "Le chien court sur la plage.",
    # a lecture's own subject, names, numbers: none of these sentences is in the training data
    "The encoder reads the sentence.": "L'encodeur lit la phrase.",
    "The decoder writes the translation.": "Le décodeur écrit la traduction.",
    "Kenji lives in Berlin.": "Kenji habite à Berlin.",
    "Ngozi lives in Lisbon.": "Ngozi habite à Lisbonne.",
    "Amira bought twelve apples.": "Amira a acheté douze pommes.",
    "The book costs 20 euros.": "Le livre coûte 20 euros.",
    "The ticket costs 45 dollars.": "Le billet coûte 45 dollars.",
    "The lecture starts at nine o'clock.": "Le cours commence à neuf heures.",
}


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    return Translator(bundled_checkpoint, "cpu")


def test_batched_translations_are_pinned(translator):
    assert dict(zip(GOLDEN, translator.translate(list(GOLDEN)))) == GOLDEN


def test_traced_translations_match_batched(translator):
    for en, fr in list(GOLDEN.items())[:4]:
        trace = translator.trace(en)
        assert trace.translation == fr and trace.finished
        assert trace.tgt_pieces[-1] == "</s>" and len(trace.steps) == len(trace.tgt_pieces)
        L, H = translator.cfg.n_decoder_layers, translator.cfg.n_heads
        assert trace.cross.probs.shape == (L, H, len(trace.steps), len(trace.src_pieces))


def test_cli_prints_the_translation_last(bundled_checkpoint):
    r = subprocess.run([sys.executable, "-m", "transformer.cli.translate",
                        "The cat is sleeping on the sofa."],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == GOLDEN[
        "The cat is sleeping on the sofa."]
