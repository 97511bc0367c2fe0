"""The doubt signals (transformer/doubt.py): each check on its own, and through the bundled model."""
from __future__ import annotations

import math

import pytest

from transformer import doubt
from transformer.doubt import changed_numbers, confidence, fragmented_words, french_score, sentence_case


@pytest.mark.parametrize("source, translation, missing, extra", [
    ("The train leaves at 9:30.", "Le train part à 9 h 30.", [], []),
    ("The talk starts at 3 p.m.", "La conférence commence à 15 h.", [], []),
    ("We meet at 9:00.", "Nous nous retrouvons à 9 h.", [], []),
    ("It costs $14.50.", "Cela coûte 14,50 dollars.", [], []),
    ("There were 1,500 people.", "Il y avait 1 500 personnes.", [], []),
    ("The exam is on May 12.", "L'examen a lieu le 12 mai.", [], []),
    ("Marie bought 12 apples.", "Marie a acheté trois pommes.", ["12"], []),
    ("12 345 6789 2024", "12578 679 2024 2024.", ["12", "345", "6789"], ["12578", "2024", "679"]),
    # a space is no separator in English
    ("Gate 10 is 100 meters away.", "La porte 10 est à 100 mètres.", [], []),
    ("It left at 9:05.", "Il est parti à 9 h 5.", [], []),                          # 05 is 5
])
def test_changed_numbers(source, translation, missing, extra):
    assert changed_numbers(source, translation) == (missing, extra)


def test_capitals_are_found_and_put_in_sentence_case():
    assert doubt.mostly_capitals("THE CAT IS SLEEPING ON THE SOFA.")
    assert not doubt.mostly_capitals("NASA and the ESA sent a probe to Mars.")
    assert not doubt.mostly_capitals("OK.")                       # too few letters to tell
    assert sentence_case("WHERE ARE YOU? I AM HERE.") == "Where are you? I am here."
    assert sentence_case('"HELLO THERE," SHE SAID.') == '"Hello there," she said.'


def test_fragmented_words_count_letter_pieces_only():
    pieces = ["▁The", "▁X", "y", "z", "z", "y", ".", "▁cat", "."]
    assert fragmented_words(pieces) == [("Xyzzy", 5)]                          # no counts: 5 pieces or more
    assert fragmented_words(["▁The", "▁cat", ".", ".", ".", ".", "."]) == []
    # with the training counts: 3 letter pieces or more, one of them rare
    common, rare = 10_000, doubt.RARE_PIECE_COUNT - 1
    assert fragmented_words(["▁sk", "ate", "board", "."], [common, common, common, common]) == []
    assert fragmented_words(["▁Oks", "an", "a", "."], [rare, common, common, common]) == [("Oksana", 3)]


def test_french_score_follows_which_side_the_pieces_came_from():
    source_counts = [0, 0, 0, 0, 1000, 10, 500]
    target_counts = [0, 0, 0, 0, 10, 1000, 500]
    assert french_score([4, 6], source_counts, target_counts) < 0 < \
        french_score([5, 6], source_counts, target_counts)


def test_confidence_marks_the_least_likely_pieces():
    conf = confidence(["▁Le", "▁chat", "</s>"], [0.9, 0.1, 0.2])
    assert math.isclose(conf.mean_logprob, (math.log(0.9) + math.log(0.1) + math.log(0.2)) / 3)
    # below UNSURE_PIECE_P, least likely first
    assert [p for _, p, _ in conf.unsure] == ["▁chat", "</s>"]
    assert conf.low == (conf.mean_logprob < doubt.UNSURE_MEAN_LOGPROB)


@pytest.fixture(scope="module")
def translator():
    from transformer.serving.translator import Translator
    return Translator(device="cpu", cache_size=0)


def notes_of(translator, text: str) -> list[str]:
    return translator.trace(text).notes


def test_everyday_sentences_get_no_warning(translator):
    for s in ("The cat is sleeping on the sofa.", "Where is the nearest train station?",
              "I have two brothers."):
        assert notes_of(translator, s) == [], s


def test_capitals_are_translated_in_ordinary_case(translator):
    trace = translator.trace("THE CAT IS SLEEPING ON THE SOFA.")
    assert trace.source.text == "The cat is sleeping on the sofa."
    assert trace.notes[0].startswith("Your text is mostly in capitals")
    assert trace.translation == translator.trace("The cat is sleeping on the sofa.").translation


@pytest.mark.parametrize("text, language", [
    ("Le chat dort sur le canapé.", "French"),
    ("Où est la gare la plus proche ?", "French"),
    ("Zwei Kinder spielen im Park Fußball.", "German"),
])
def test_another_language_is_named(translator, text, language):
    assert any(n.startswith(f"This looks like {language}") for n in notes_of(translator, text))


def test_the_page_shows_the_confidence_and_marks_unsure_pieces(translator):
    import dataclasses
    from transformer.viz.views import pieces_html
    trace = translator.trace("The cat is sleeping on the sofa.")
    steps = list(trace.steps)
    steps[1] = dataclasses.replace(steps[1], prob=0.05)           # one unsure piece, whatever the model
    unsure = dataclasses.replace(trace, steps=steps)
    page = pieces_html(unsure)
    assert "Confidence" in page and f"{unsure.confidence.mean_prob:.0%}" in page
    assert page.count('class="piece tgt unsure"') == len(unsure.confidence.unsure) >= 1
    assert 'title="p = 5.0%"' in page


def test_a_forced_pass_gets_no_confidence_or_number_notes(translator):
    """Your French scored by the model is not the model's translation: no 'unsure', no numbers check."""
    from transformer.viz.views import pieces_html
    result = translator.forced("Marie bought 12 apples.", "Marie a acheté trois pommes.")
    assert result.trace.forced and not any(n.startswith(("Check the numbers", "The model is unsure"))
                                           for n in result.trace.notes)
    assert "Confidence" not in pieces_html(result.trace)
