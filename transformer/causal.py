"""Typed results of the causal experiments (numpy only, no torch, no gradio), like why.py: switch a part of the
model off and see what the translation needs (``KnockOut``, ``KnockOutResult``, ``HeadImportance``), or copy a
part of one sentence's run into another's (``PatchMap``). probes/knockout.py and probes/patching.py compute them.

A part is named the way the views name it: a head (attention kind, layer, head; 1-based), a sub-layer (its name
and layer), or the positional encoding of one side. A head's *share* of its sub-layer's output is
head_i W^O_i + b^O / h (the output projection's rows of that head, and an h-th of its bias), so that the h shares
add up to the sub-layer's output: knocking out every head of a sub-layer is knocking out the sub-layer.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np

Method = Literal["zero", "mean"]
METHODS: tuple[Method, ...] = ("zero", "mean")
METHOD_WORDS = {
    "zero": "zeroed (its output replaced by nothing)",
    "mean": "replaced by its mean over the sentence's positions (what it gives on average, whatever the piece)",
}
HEAD_KINDS = ("encoder", "decoder", "cross")                 # the attention kinds, as trace.py names them
SUBLAYERS = ("encoder-self", "encoder-ffn", "decoder-self", "cross", "decoder-ffn")
SUBLAYER_TITLES = {"encoder-self": "encoder self-attention", "encoder-ffn": "encoder feed-forward",
                   "decoder-self": "decoder masked self-attention", "cross": "cross-attention",
                   "decoder-ffn": "decoder feed-forward"}
SIDES = ("source", "target")                                 # whose positional encoding


def stack_of(name: str) -> str:
    """'encoder' or 'decoder': the stack a head kind or a sub-layer lives in."""
    return "encoder" if name.startswith("encoder") else "decoder"


@dataclass(frozen=True)
class KnockOut:
    """What is switched off, and how. Empty: nothing (the original model)."""

    heads: tuple[tuple[str, int, int], ...] = ()      # (kind, layer, head), 1-based
    sublayers: tuple[tuple[str, int], ...] = ()       # (sub-layer, layer), 1-based
    positions: tuple[str, ...] = ()                   # "source" and/or "target": that side's positional encoding
    method: Method = "zero"

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(sorted(set(self.heads))))
        object.__setattr__(self, "sublayers", tuple(sorted(set(self.sublayers))))
        object.__setattr__(self, "positions", tuple(sorted(set(self.positions))))

    @property
    def empty(self) -> bool:
        return not (self.heads or self.sublayers or self.positions)

    def words(self) -> str:
        """In words, for a title: "cross L2 H5, decoder L1 H3 and the encoder's feed-forward in layer 4, zeroed"."""
        parts = [f"{k} L{l} H{h}" for k, l, h in self.heads]
        parts += [f"{SUBLAYER_TITLES[s]} in layer {l}" for s, l in self.sublayers]
        parts += [f"the {s} positional encoding" for s in self.positions]
        if not parts:
            return "nothing"
        listed = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]
        return f"{listed}, {'zeroed' if self.method == 'zero' else 'mean-replaced'}"


@dataclass(frozen=True)
class KnockOutResult:
    """The sentence translated again with a knock-out, and the original translation read through it."""

    knockout: KnockOut
    src_pieces: tuple[str, ...]
    original: tuple[str, ...]          # the original greedy translation's pieces (with </s>)
    original_text: str
    pieces: tuple[str, ...]            # greedy from scratch with the knock-out applied (with </s> when it ended)
    text: str
    p_original: np.ndarray             # (T,) p(original piece t) in the original model (teacher forcing)
    p_knocked: np.ndarray              # (T,) p(the same piece) with the knock-out, on the original's prefix
    top_knocked: tuple[str, ...]       # the knocked-out model's first choice at each step of the original
    seconds: float = 0.0

    @property
    def changed(self) -> bool:
        return self.pieces != self.original

    @property
    def first_change(self) -> Optional[int]:
        """The first step (1-based) whose piece differs from the original's; None when none does."""
        for i, (a, b) in enumerate(zip(self.pieces, self.original)):
            if a != b:
                return i + 1
        return None if len(self.pieces) == len(self.original) else min(len(self.pieces), len(self.original)) + 1


@dataclass(frozen=True)
class HeadImportance:
    """For every head, the effect of knocking it out alone on the original translation (teacher forcing):
    Δ log p of each original piece, knocked out minus original (negative: the head helped)."""

    method: Method
    layers: dict                       # kind -> its number of layers
    heads: int
    per_step: dict                     # kind -> (layers, heads, T) Δ log p(original piece t)
    tgt_pieces: tuple[str, ...]        # the original translation (with </s>), T pieces
    log_p: np.ndarray                  # (T,) log p(original piece t) in the original model
    seconds: float = 0.0

    def total(self, kind: str, step: Optional[int] = None) -> np.ndarray:
        """(layers, heads): Δ log p summed over the translation, or of one step's piece (1-based)."""
        d = self.per_step[kind]
        return d.sum(-1) if step is None else d[..., step - 1]

    def ranked(self, step: Optional[int] = None) -> list[tuple[str, int, int, float]]:
        """Every head as (kind, layer, head, Δ log p), the one whose loss hurts most first."""
        rows = [(k, l + 1, h + 1, float(v)) for k in self.per_step
                for (l, h), v in np.ndenumerate(self.total(k, step))]
        return sorted(rows, key=lambda r: r[3])


@dataclass(frozen=True)
class PatchMap:
    """Sentence A's run with one part copied from sentence B's run (same decoder input: A's translation up to the
    step), part by part: how p(the piece) at that step moves. Restored share: (p_patched − p_A) / (p_B − p_A)."""

    text_a: str
    text_b: str
    src_a: tuple[str, ...]
    src_b: tuple[str, ...]
    tgt_pieces: tuple[str, ...]        # A's decoder input after <s>: the translation's pieces up to the step
    step: int                          # 1-based
    piece: str                         # the piece whose probability is read
    p_a: float                         # p(piece) in A's own run
    p_b: float                         # p(piece) when B is read with A's translation so far
    differing: tuple[int, ...]         # source positions (0-based) whose pieces differ
    stack_parts: dict                  # stack -> the names of its sub-layers, the sub-layer map's columns
    sublayer_p: dict                   # stack -> (layers, its sub-layers) p(piece) after patching one
    layer_positions_p: np.ndarray      # (encoder layers + 1, source positions) p after patching the residual stream
    #                                    (row 0: the input embeddings) at one source position
    head_p: dict                       # kind -> (layers, heads) p after patching that head's share
    seconds: float = 0.0

    def restored(self, p):
        """The share of the way from A to B that a patch goes (NaN where p_B = p_A)."""
        gap = self.p_b - self.p_a
        return (np.asarray(p, dtype=np.float64) - self.p_a) / gap if abs(gap) > 1e-9 else np.full_like(
            np.asarray(p, dtype=np.float64), np.nan)
