"""Cleaning training corpora (transformer/training/clean.py, python -m transformer.cli.clean): evaluation
lines kept out on both sides, exactly and nearly, and pairs whose sides disagree dropped, each for its reason.
Every sentence here is written for the test; no corpus line is copied."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from conftest import ROOT
from transformer.training.data import SHARED_DATA
from transformer.training.clean import BT_TAG, EvalIndex, LanguageCheck, clean_pairs, numbers, reason, words


@pytest.fixture(scope="module")
def index():
    ix = EvalIndex()
    ix.add_pairs([("The red kite circles above the old mill every single morning in spring.",
                   "Le milan royal tourne au-dessus du vieux moulin chaque matin au printemps."),
                  ("Where is my umbrella?", "Où est mon parapluie ?")])
    return ix


@pytest.fixture(scope="module")
def lang():
    return LanguageCheck()


def test_words_ignore_case_accents_punctuation_and_digits():
    assert words("L'Été, 2019 : très BIEN !") == ["l", "ete", "tres", "bien"]


@pytest.mark.parametrize("en, fr", [
    ("It costs 1,000.50 dollars at 9:30.", "Ça coûte 1 000,50 dollars à 9 h 30."),
    ("In 2019 150 people came.", "En 2019, 150 personnes sont venues."),    # two numbers, not 2019150
    ("Between 2018 and 2019.", "Entre 2018 et 2019."),
    ("It weighs 3.5 kg.", "Il pèse 3,5 kg."),
    ("We trained for 100,000 steps.", "Nous avons entraîné pendant 100 000 pas."),
    ("1,000,000.25 euros", "1 000 000,25 euros"),
])
def test_numbers_agree_across_the_two_ways_of_writing_them(en, fr):
    assert numbers(en) == numbers(fr)


@pytest.mark.parametrize("en, fr", [
    ("I have 3 cats.", "J'ai 4 chats."),
    ("It grew 1.5 times.", "Il a grandi 15 fois."),               # a decimal is not its digits run together
    ("It costs 1,500 dollars.", "Ça coûte 1,5 dollar."),          # thousands in English, a decimal in French
])
def test_numbers_that_differ_are_told_apart(en, fr):
    assert numbers(en) != numbers(fr)


@pytest.mark.parametrize("en, fr", [
    ("where is my umbrella", "Mon parapluie est là."),                      # English side, near-exact
    ("Take it.", "OÙ EST MON PARAPLUIE ?!"),                                   # French side, near-exact
    # 8-word window
    ("Yesterday the red kite circles above the old mill every single morning, they said.", "Hier."),
])
def test_a_pair_near_an_evaluation_line_goes_on_either_side(index, en, fr):
    assert reason(en, fr, index, None) == "eval"


def test_a_short_shared_phrase_is_not_a_match(index):
    assert reason("The old mill is closed.", "Le vieux moulin est fermé.", index, None) is None


@pytest.mark.parametrize("en, fr, why", [
    ("", "Bonjour.", "empty"),
    ("Install the package with pip today.", "Install the package with pip today.", "copy"),
    ("Yes.", "Oui, bien sûr, et je vous le redirai demain matin avant la réunion du conseil.", "ratio"),
    ("I have 3 cats.", "J'ai 4 chats.", "numbers"),
    (f"{BT_TAG} Hello there.", "Bonjour.", "tag"),
])
def test_each_reason(en, fr, why):
    assert reason(en, fr, None, None) == why


def test_language_swapped_sides_go_but_short_technical_strings_stay(lang):
    assert reason("Je ne sais pas où il est parti ce matin.", "Je ne sais pas où il est allé ce matin.",
                  None, lang) == "language"
    assert reason("Use git commit --amend --no-edit", "Utilisez git commit --amend "
                                                      "--no-edit", None, lang) is None
    assert reason("The cat sleeps on the warm sofa.", "Le chat dort sur le canapé chaud.", None, lang) is None


def test_clean_pairs_counts_and_keeps_the_filtered_ones_apart(index):
    pairs = [("The cat sleeps.", "Le chat dort."), ("The cat sleeps.", "Le chat dort."),
             ("Where is my umbrella?", "Où est mon parapluie ?"), ("I have 3 cats.", "J'ai 4 chats.")]
    kept, dropped, filtered = clean_pairs(pairs, index, None)
    assert kept == [("The cat sleeps.", "Le chat dort.")]
    assert dropped == {"duplicate": 1, "eval": 1, "numbers": 1}
    assert filtered == [("The cat sleeps.", "Le chat dort."), ("I have 3 cats.", "J'ai 4 chats.")]
    kept, dropped, _ = clean_pairs(pairs, index, None, filters=False)    # the control drops evaluation only
    assert len(kept) == 3 and dropped == {"eval": 1}


@pytest.mark.skipif(not SHARED_DATA.is_dir(), reason="reads the evaluation sets in ../shared/data")
def test_cli_writes_cleaned_copies_a_cap_and_a_report(tmp_path):
    corpus = tmp_path / "mine.tsv"
    rows = [(f"I see {n} birds in the garden.", f"Je vois {n} oiseaux dans le jardin.") for n in range(30)]
    rows += [("I see 5 birds.", "Je vois 6 oiseaux.")]
    corpus.write_text("".join(f"{a}\t{b}\n" for a, b in rows), encoding="utf-8")
    mono = tmp_path / "fr.txt"
    mono.write_text("Il pleut depuis ce matin sur la ville.\nOui.\nLe train part à huit heures précises.\n",
                    encoding="utf-8")
    out = tmp_path / "pack"
    r = subprocess.run([sys.executable, "-m", "transformer.cli.clean", "--out", str(out), "--train",
                        f"{corpus}%20", "--mono", str(mono)], capture_output=True, text=True, cwd=ROOT,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    report = json.loads((out / "report.json").read_text())
    row = report["corpora"][str(corpus)]
    assert (row["pairs"], row["kept"], row["written"], row["numbers"]) == (31, 30, 20, 1)
    with gzip.open(out / row["file"], "rt", encoding="utf-8") as f:
        assert len(f.read().splitlines()) == 20
    with gzip.open(out / "filtered" / row["file"], "rt", encoding="utf-8") as f:     # capped like the corpus
        assert f.read().splitlines() == ["I see 5 birds.\tJe vois 6 oiseaux."]
    with gzip.open(out / "mono-fr.txt.gz", "rt", encoding="utf-8") as f:
        assert f.read().splitlines() == ["Il pleut depuis ce matin sur la ville.",
                                         "Le train part à huit heures précises."]      # "Oui." is too short
    assert any("tatoeba-eng-fra/test" in name for name in report["evaluation_sets"])
