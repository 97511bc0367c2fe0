"""The trace of one translation: what the model did, step by step, with every attention map.

It is the contract between the model and the pictures. The decoding code writes it
(``model/decoding.py: trace_greedy``), the views, plots and report read it (``viz/``), and
neither side imports the other: this module needs only numpy (no torch, no gradio), so a
trace can be kept per user in the app and redrawn without running the model again.

Attention arrays are (layers, heads, queries, keys), float32. Decoder queries are the decoder
input positions <s> y1 ... y_{n-1}: step i's query produced output piece y_i. A decoder
position's future cells hold probability 0 (the mask) and the score QKᵀ/√d_k the model computes
for them in one teacher-forced pass after decoding (the KV cache never computes them), so the
views can show the mask doing its work.
"""
from __future__ import annotations

import threading
import weakref
from dataclasses import dataclass
from functools import cached_property
from typing import Callable, Literal, Optional

import numpy as np

from .doubt import Confidence, confidence, output_doubts

AttentionKind = Literal["encoder", "decoder", "cross"]
KINDS: tuple[AttentionKind, ...] = ("encoder", "decoder", "cross")
StopReason = Literal["end", "length", "time"]   # </s> produced, output length limit, time limit


def freeze(obj, *names: str) -> None:
    """Make these fields of a frozen dataclass tuples (callers may pass lists): a trace is shared by every
    user who asks for its sentence, and nothing may append to it."""
    for name in names:
        object.__setattr__(obj, name, tuple(getattr(obj, name)))


@dataclass(frozen=True)
class Source:
    """The input as the model reads it: cleaned text, cut to the limits, and its pieces."""

    text: str
    ids: tuple[int, ...]              # ending in </s>
    pieces: tuple[str, ...]
    truncated: bool = False           # cut to the model's limit in pieces
    notes: tuple[str, ...] = ()       # what the user should be told about the input
    train_counts: tuple[int, ...] = ()  # how often each piece occurred in the training data (source side);
                                        # empty when the checkpoint has no piece_counts.json

    def __post_init__(self) -> None:
        freeze(self, "ids", "pieces", "notes", "train_counts")


@dataclass(frozen=True)
class Step:
    """One greedy decoding step: the decoder input so far, what came out, and what was considered."""

    index: int                        # 0-based
    decoder_input: tuple[str, ...]    # <s> y1 ... y_index, or longer: the steps of one trace share one tuple
    token_id: int                     # the chosen (most probable) piece
    piece: str
    prob: float
    topk_ids: tuple[int, ...]         # the top-k candidates, most probable first (the chosen one first)
    topk_pieces: tuple[str, ...]
    topk_probs: tuple[float, ...]

    def __post_init__(self) -> None:
        freeze(self, "decoder_input", "topk_ids", "topk_pieces", "topk_probs")
        if len(self.decoder_input) <= self.index:
            raise ValueError(f"step {self.index}: its decoder input has only {len(self.decoder_input)} "
                             f"pieces")

    @property
    def prefix(self) -> tuple[str, ...]:
        """The decoder's input at this step: <s> y1 ... y_index. Made when asked: a trace keeps one tuple for
        all its steps, not one per step (that grew with the square of the length: 0.1-0.3 MB a long trace,
        kept by every session that holds one)."""
        return self.decoder_input[: self.index + 1]


@dataclass(frozen=True)
class AttentionMaps:
    """One kind of attention in every layer and head, with the pieces on both axes."""

    kind: AttentionKind
    probs: np.ndarray                 # (layers, heads, queries, keys): softmax(QKᵀ/√d_k), masked = 0
    scores: np.ndarray                # same shape: QKᵀ/√d_k (QKᵀ in a model that does not scale: the trace's
                                      # `scaled`) before masking (future cells included)
    queries: tuple[str, ...]          # the piece at each query position
    keys: tuple[str, ...]             # the piece at each key position

    def __post_init__(self) -> None:
        """Check the arrays against the pieces that label them (a shape bug must fail here, loudly, not draw a
        wrong picture), and make them read-only: a trace is shared by every user who asks for its sentence."""
        if self.kind not in KINDS:
            raise ValueError(f"unknown attention kind {self.kind!r}")
        freeze(self, "queries", "keys")
        shape = (len(self.queries), len(self.keys))
        for name in ("probs", "scores"):
            a = getattr(self, name)
            if not isinstance(a, np.ndarray) or a.ndim != 4 or a.shape[2:] != shape:
                raise ValueError(f"{self.kind} attention {name}: shape {getattr(a, 'shape', None)} does not "
                                 f"match (layers, heads, {shape[0]} queries, {shape[1]} keys)")
            a.setflags(write=False)
        if self.scores.shape != self.probs.shape:
            raise ValueError(f"{self.kind} attention: scores {self.scores.shape} and probs "
                             f"{self.probs.shape} differ")

    @property
    def layers(self) -> int:
        return self.probs.shape[0]

    @property
    def heads(self) -> int:
        return self.probs.shape[1]

    @property
    def causal(self) -> bool:
        """Decoder self-attention: a position sees only itself and earlier positions."""
        return self.kind == "decoder"

    @property
    def future(self) -> Optional[np.ndarray]:
        """(queries, keys) bool, True at the cells a causal query may not see; None for other kinds."""
        if not self.causal:
            return None
        return ~np.tril(np.ones((len(self.queries), len(self.keys)), dtype=bool))

    # A trace the shared cache has dropped may still be held by users' sessions (their last translation): its
    # arrays, 10-25 MB for a long input, would stay as long as the sessions do, outside any bound. `release`
    # lets go of them (weak references only) and makes them again on demand with `refill` (the same maps:
    # decoding is deterministic), so that the cache's bound in bytes is the bound of the traces' memory.
    def release(self, refill: Callable[[], "AttentionMaps"]) -> None:
        """Keep only weak references to the arrays; `refill()` gives the same maps when they are gone and
        read."""
        held = self.__dict__
        if "probs" not in held:
            return
        # ready before the arrays go
        held["_weak"] = (weakref.ref(held["probs"]), weakref.ref(held["scores"]))
        held["_refill_lock"], held["_refill"] = threading.Lock(), refill
        del held["probs"], held["scores"]

    @property
    def released(self) -> bool:
        return "_refill" in self.__dict__

    def __getattr__(self, name: str):
        """Reached only when normal lookup fails: the arrays of released maps (made again if gone)."""
        held = self.__dict__
        if name not in ("probs", "scores") or "_refill" not in held:
            raise AttributeError(name)
        with held["_refill_lock"]:
            probs, scores = held["_weak"][0](), held["_weak"][1]()
            if probs is None or scores is None:
                fresh = held["_refill"]()
                probs, scores = fresh.probs, fresh.scores
                if probs.shape[2:] != (len(self.queries), len(self.keys)):
                    raise RuntimeError(f"{self.kind} attention made again does not match its pieces")
                held["_weak"] = (weakref.ref(probs), weakref.ref(scores))
        return probs if name == "probs" else scores


@dataclass(frozen=True)
class TranslationTrace:
    """Everything the app draws, as read-only numpy arrays and tuples: no model is needed to redraw."""

    source: Source
    translation: str
    tgt_ids: tuple[int, ...]          # y1 ... y_n (y_n is </s> when decoding stopped there)
    tgt_pieces: tuple[str, ...]
    steps: tuple[Step, ...]
    encoder: AttentionMaps            # queries and keys: source pieces
    decoder: AttentionMaps            # queries and keys: decoder inputs <s> y1 ... y_{n-1}
    cross: AttentionMaps              # queries: decoder inputs; keys: source pieces
    d_k: int                          # each head's width: the "inside one head" view's √d_k
    stop: StopReason
    deadline_s: Optional[float] = None
    device: str = "cpu"
    seconds: float = 0.0              # decoding time, encoder included
    # a teacher-forced pass of given pieces (your French), not the model's choices
    forced: bool = False
    scaled: bool = True               # the model divides its scores by √d_k (False: the no-scaling variant),
                                      # so the maps' scores are QKᵀ/√d_k, or QKᵀ where it does not

    def __post_init__(self) -> None:
        freeze(self, "tgt_ids", "tgt_pieces", "steps")

    def attention(self, kind: AttentionKind) -> AttentionMaps:
        if kind not in KINDS:
            raise ValueError(f"unknown attention kind {kind!r}")
        return getattr(self, kind)

    @property
    def src_pieces(self) -> tuple[str, ...]:
        return self.source.pieces

    @property
    def tgt_in_pieces(self) -> tuple[str, ...]:
        """The decoder's inputs: <s> y1 ... y_{n-1}."""
        return self.steps[-1].prefix if self.steps else ()

    @property
    def finished(self) -> bool:
        return self.stop == "end"

    @property
    def timed_out(self) -> bool:
        return self.stop == "time"

    @cached_property
    def confidence(self) -> Confidence:
        """How sure the model was of its chosen pieces (doubt.py); computed once (the page and notes read
        it)."""
        return confidence(self.tgt_pieces, [s.prob for s in self.steps])

    @property
    def notes(self) -> list[str]:
        """What the user should be told: about the input, about the translation (its numbers, the model's
        confidence), then about where decoding stopped."""
        notes = list(self.source.notes)
        if not self.forced:           # the model's own translation: its numbers and its confidence
            notes += output_doubts(self.source.text, self.translation, self.confidence,
                                   numbers=self.finished and not self.source.truncated)
        if self.stop == "time":
            notes.append(f"Decoding stopped at the time limit of {self.deadline_s:.0f} s.")
        elif self.stop == "length":
            notes.append("Decoding stopped at the output length limit before the end-of-sentence token. The "
                         "model learned from single sentences: a long paragraph can make it repeat itself; "
                         "try one sentence at a time.")
        return notes
