"""The app's example sentences: everyday ones, and the classics of the attention literature.

A classic comes with where it is from, one line on what to look at (and the view that shows it),
and whether the model met it or its pattern in its data: a few classics are sentences of the WMT news
sets this project uses as its dev set (model selection only) and test set (never used for any choice),
the coreference pairs' pattern is in the project's own coreference corpus, and every classic's constructions
are drilled, with other words, by the project's formal corpus (``training/corpora/formal.train.tsv``, written
after the classics were seen to fail; a few of its lines are close paraphrases of a classic). No classic
itself is in the training data (``tests/test_examples.py`` checks the bundled model's training corpora).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

EVERYDAY = [
    "The cat is sleeping on the sofa.",
    "I would like a cup of coffee, please.",
    "Where is the nearest train station?",
    "Two children are playing football in the park.",
    "She has been learning to play the piano for three years.",
    "We will meet tomorrow morning in front of the museum.",
]


@dataclass(frozen=True)
class Classic:
    text: str
    source: str          # who made it famous
    look: str            # one line: what to look at
    view: str            # the link parameters of the view that shows it (links.py)
    in_data: str = ""    # where the project's data holds it, when it does


BAHDANAU = "Bahdanau, Cho & Bengio 2015, figure 3"
BLOG = "Google AI blog on the Transformer (Uszkoreit 2017)"
PAPER = "Vaswani et al. 2017 (Attention Is All You Need), figures 3-5"
NEWSTEST_2014 = "It is a sentence of newstest2014, this project's news test set (never trained or tuned on)."
NEWSTEST_2013 = ("It is a sentence of newstest2013, this project's news dev set (used only to choose "
                 "checkpoints).")
COREFERENCE = ("The model was trained on 75 sentences of the same pattern (“… because it was …”) with other "
               "nouns in the project's coreference corpus, 41 more in its formal corpus and 20,000 to "
               "100,000 generated ones in each pass over the data (other animals, places and adjectives), "
               "not on this sentence.")
FORMAL = ("The model was trained on sentences of the same construction written for this project (its formal "
          "corpus), not on this sentence")
PARAPHRASED = FORMAL + ", but one of them is close to it: "

CLASSICS = [
    Classic("The agreement on the European Economic Area was signed in August 1992.", BAHDANAU,
            "Cross-attention, mean over heads: in the paper's figure “zone économique européenne” looks at "
            "“European Economic Area” in reverse order (an anti-diagonal in a diagonal). Does this model's "
            "French reorder them, and does its attention follow?", "tab=explorer&kind=cross&head=mean",
            PARAPHRASED + "“The agreement on the European Economic Area was signed in Porto in May 1992.”"),
    Classic("It should be noted that the marine environment is the least known of environments.", BAHDANAU,
            "Cross-attention: the paper's model reverses “marine environment” into “environnement marin” and "
            "runs along the diagonal elsewhere; find the noun and its adjective here.",
            "tab=explorer&kind=cross&head=mean", NEWSTEST_2014 + " " + FORMAL + "."),
    Classic("Destruction of the equipment means that Syria can no longer produce new chemical weapons.",
            BAHDANAU, "Cross-attention: “armes chimiques” reverses “chemical weapons”, and “no longer” "
                      "becomes “ne … plus” "
            "around the verb: two French pieces looking at the same English words.",
            "tab=explorer&kind=cross&head=mean",
            NEWSTEST_2014 + " " + PARAPHRASED + "“Destruction of the archives "
            "means that historians can no longer study this period.”"),
    Classic("\"This will change my future with my family,\" the man said.", BAHDANAU,
            "Cross-attention at the end: French puts the verb before the subject (“a dit l'homme”), so the "
            "last steps look back at “said” before “man”.", "tab=explorer&kind=cross&head=mean",
            NEWSTEST_2014 + " " + PARAPHRASED
            + "“\"This will change my life with my children,\" the woman said.”"),
    Classic("The animal didn't cross the street because it was too tired.", BLOG,
            "Encoder self-attention, last layers, row “it”: which heads look at “animal”, which at “street”? "
            "The French needs “il” here (“l'animal” is masculine).",
            "tab=explorer&kind=encoder&layer=6&head=mean", COREFERENCE),
    Classic("The animal didn't cross the street because it was too wide.", BLOG,
            "One word changed: now “it” is the street, and the French needs “elle” (“la rue”). Compare the "
            "row “it” with the sentence above. This model writes “elle” (P 0.97 against 0.00 for “il”), but "
            "on such pairs of words it never saw in this pattern it gets both right only about one time in "
            "four: it learned the words of its training pairs more than the rule.",
            "tab=explorer&kind=encoder&layer=6&head=mean", COREFERENCE[:-1]
            + ", but some are close to it: “The dog didn't cross the street because it was too "
            "wide.”"),
    Classic("The Law will never be perfect, but its application should be just - this is what we are "
            "missing, in my opinion.", PAPER,
            "Encoder self-attention, layer 5 or 6, row “its”: the heads the paper shows resolve it to “Law” "
            "(anaphora).", "tab=explorer&kind=encoder&layer=5&head=mean",
            NEWSTEST_2013 + " " + PARAPHRASED
            + "“The Law will never be perfect, but its application must be fair.”"),
    Classic("It is in this spirit that a majority of American governments have passed new laws since 2009 "
            "making the registration or voting process more difficult.", PAPER,
            "Encoder self-attention, row “making”: heads that reach far ahead to “more difficult”, the "
            "paper's long-distance dependency.", "tab=explorer&kind=encoder&layer=5&head=mean",
            NEWSTEST_2013 + " " + PARAPHRASED
            + "“It is in this spirit that a majority of states have passed new laws "
            "since 2012 making voter registration easier.”"),
    Classic("I arrived at the bank after crossing the river.", BLOG,
            "Encoder self-attention, row “bank”: does it look at “river”? The French shows which bank the "
            "model chose (“rive” or “banque”).", "tab=explorer&kind=encoder&layer=6&head=mean",
            PARAPHRASED + "“I arrived at the bank after swimming across the river.”"),
]
BY_TEXT = {c.text: c for c in CLASSICS}


def classic(text: str) -> Optional[Classic]:
    return BY_TEXT.get(text)


def dropdown_choices() -> list[tuple[str, str]]:
    """(label, sentence) pairs: the everyday examples, then the classics named after their source."""
    short = lambda s: s if len(s) <= 60 else s[:57].rstrip() + "…"
    return [(s, s) for s in EVERYDAY] + [(f"Classic · {c.source.split(',')[0].split(' (')[0]}: "
                                          f"{short(c.text)}", c.text)
                                          for c in CLASSICS]
