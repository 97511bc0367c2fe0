"""Results of steering the decoder (numpy-free and torch-free, like ``trace.py``).

``model/steering.py`` writes them and ``viz/steering.py`` draws them:

- ``ForcedResult``: the model reads *your* French with teacher forcing (as in training): per
  piece its probability, rank and the model's own top choice, plus a ``TranslationTrace`` of the
  forced pass that every existing view can draw (its steps "choose" your pieces).
- a "what if" branch is a plain ``TranslationTrace`` (greedy, with one step overridden).
- ``BeamResult``: every candidate the beam search weighed, as a tree, and its final hypotheses.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Literal, Optional

from .trace import Source, TranslationTrace

NodeStatus = Literal["kept", "finished", "pruned"]


@dataclass(frozen=True)
class ForcedPiece:
    """One French piece read with teacher forcing."""

    piece: str
    token_id: int
    probability: float          # p(piece | source, the pieces before it)
    log_prob: float             # its natural log: the cross-entropy of this position is -log_prob
    rank: int                   # 1 = the model's own top choice here
    top_piece: str              # what the model would have chosen at this position
    top_probability: float

    def as_dict(self) -> dict:
        return {"piece": self.piece, "probability": round(self.probability, 6), "rank": self.rank,
                "top_piece": self.top_piece, "cross_entropy": round(-self.log_prob, 6)}


@dataclass(frozen=True)
class ForcedResult:
    """Teacher forcing of a French text: one forward pass over all its pieces (</s> included)."""

    french: str
    pieces: list[ForcedPiece]
    trace: TranslationTrace     # the forced pass, in the form every view draws
    notes: tuple[str, ...] = ()

    @property
    def mean_loss(self) -> float:
        """Mean cross-entropy per piece, in nats (what training minimises, without label smoothing)."""
        return -sum(p.log_prob for p in self.pieces) / max(1, len(self.pieces))

    @property
    def perplexity(self) -> float:
        return math.exp(self.mean_loss)

    @property
    def first_divergence(self) -> Optional[int]:
        """0-based position of the first piece that is not the model's top choice: where greedy decoding
        (which takes the top choice every time) and this French part ways. None: they never do."""
        return next((i for i, p in enumerate(self.pieces) if p.rank != 1), None)

    def as_rows(self) -> list[dict]:
        return [p.as_dict() for p in self.pieces]


@dataclass(frozen=True)
class BeamNode:
    """One candidate the beam search weighed: a hypothesis extended by one piece."""

    id: int
    parent: int                 # -1: extends the empty hypothesis (<s>)
    step: int                   # 0-based decoding step
    token_id: int
    piece: str
    log_prob: float             # log p(piece | source, the hypothesis it extends)
    score: float                # cumulative log-probability of the hypothesis up to and including it
    status: NodeStatus          # kept as a live beam, finished (</s>), or pruned


@dataclass(frozen=True)
class BeamHypothesis:
    ids: list[int]              # ending in </s> when finished
    pieces: list[str]
    text: str
    score: float                # sum of the pieces' log-probabilities
    normalized: float           # score / length penalty: what the final choice ranks by
    finished: bool
    node: int                   # its last node in the tree


@dataclass(frozen=True)
class BeamResult:
    source: Source
    beam: int
    alpha: float                # GNMT length-penalty exponent
    nodes: list[BeamNode]
    hypotheses: list[BeamHypothesis]   # best first (by normalized score)
    seconds: float = 0.0
    timed_out: bool = False

    @property
    def best(self) -> BeamHypothesis:
        return self.hypotheses[0]

    @property
    def translation(self) -> str:
        return self.best.text

    def path(self, node: int) -> list[int]:
        """Node ids from the first step to `node`."""
        out = []
        while node >= 0:
            out.append(node)
            node = self.nodes[node].parent
        return out[::-1]


def length_penalty(n_pieces: int, alpha: float) -> float:
    """GNMT's length penalty (Wu et al. 2016, eq. 14): ((5 + |Y|) / 6)^α; α = 0 compares raw sums."""
    return ((5 + n_pieces) / 6) ** alpha


NORMALISATION_NOTE = ("Hypotheses are ranked by log P(Y | X) / lp(Y) with GNMT's length penalty "
                      "lp(Y) = ((5 + |Y|) / 6)^α (Wu et al. 2016), α = {alpha}, |Y| in pieces with </s>; "
                      "without it, short hypotheses win because every piece adds a negative log-probability.")
