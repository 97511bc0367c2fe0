"""Typed results of the causal experiments (numpy only, no torch, no gradio), like why.py: switch a part of
the model off and see what the translation needs (``KnockOut``, ``KnockOutResult``, ``HeadImportance``), or
copy a part of one sentence's run into another's (``PatchMap``). probes/knockout.py and probes/patching.py
compute them.

A part is named the way the views name it: a head (attention kind, layer, head; 1-based), a sub-layer (its
name and layer), or the positional encoding of one side. A head's *share* of its sub-layer's output is
head_i W^O_i + b^O / h (the output projection's rows of that head, and an h-th of its bias), so that the h
shares add up to the sub-layer's output: knocking out every head of a sub-layer is knocking out the sub-layer.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np

Method = Literal["zero", "mean"]
METHODS: tuple[Method, ...] = ("zero", "mean")
METHOD_WORDS = {
    "zero": "zeroed (its output replaced by nothing)",
    "mean": "replaced by its mean over the sentence's positions (what it gives on average, whatever the "
            "piece)",
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
    # "source" and/or "target": that side's positional encoding
    positions: tuple[str, ...] = ()
    method: Method = "zero"

    def __post_init__(self) -> None:
        object.__setattr__(self, "heads", tuple(sorted(set(self.heads))))
        object.__setattr__(self, "sublayers", tuple(sorted(set(self.sublayers))))
        object.__setattr__(self, "positions", tuple(sorted(set(self.positions))))

    @property
    def empty(self) -> bool:
        return not (self.heads or self.sublayers or self.positions)

    def words(self) -> str:
        """In words, for a title: "cross L2 H5, decoder L1 H3 and the encoder's feed-forward in layer 4,
        zeroed"."""
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
    original: tuple[str, ...]          # the original greedy translation's pieces (with </s>)
    original_text: str
    # greedy from scratch with the knock-out applied (with </s> when it ended)
    pieces: tuple[str, ...]
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
        return (None if len(self.pieces) == len(self.original)
                else min(len(self.pieces), len(self.original)) + 1)


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
    """Sentence A's run with one part copied from sentence B's run (same decoder input: A's translation up to
    the step), part by part: how p(the piece) at that step moves.
    Restored share: (p_patched − p_A) / (p_B − p_A)."""

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
    layer_positions_p: np.ndarray      # (encoder layers + 1, source positions) p after patching the residual
    #                                    stream (row 0: the input embeddings) at one source position
    head_p: dict                       # kind -> (layers, heads) p after patching that head's share
    seconds: float = 0.0

    def restored(self, p):
        """The share of the way from A to B that a patch goes (NaN where p_B = p_A)."""
        gap = self.p_b - self.p_a
        return (np.asarray(p, dtype=np.float64) - self.p_a) / gap if abs(gap) > 1e-9 else np.full_like(
            np.asarray(p, dtype=np.float64), np.nan)


# ---------------------------------------------------------------- parts as text (the page's box and the API)
PART_HELP = ("Parts, separated by commas: a head `cross L2 H5` (kinds: enc, dec, cross; heads as `H1-4` "
             "too), a whole attention sub-layer `cross L2`, a feed-forward `enc L3 ffn` or `dec L1 ffn`, the "
             "positional encoding `positions source`, `positions target` or `positions both`.")
KIND_WORDS = {"enc": "encoder", "encoder": "encoder", "dec": "decoder", "decoder": "decoder",
              "cross": "cross"}
ATTENTION_SUBLAYER = {"encoder": "encoder-self", "decoder": "decoder-self", "cross": "cross"}
MAX_PARTS_TEXT = 2000


def parse_parts(text: str, method: str = "zero") -> KnockOut:
    """A knock-out from text such as "cross L2 H5, enc L3 ffn, positions source"; ValueError saying what is
    wrong."""
    if not isinstance(text, str):
        raise ValueError(f"The parts to switch off must be text. {PART_HELP}")
    if any("\ud800" <= c <= "\udfff" for c in text):
        raise ValueError("The parts to switch off hold a lone surrogate, which is not text: type them again.")
    if len(text) > MAX_PARTS_TEXT:
        raise ValueError(f"The list of parts is longer than {MAX_PARTS_TEXT} characters.")
    if method not in METHODS:
        raise ValueError(f"Unknown knock-out method {str(method)[:20]!r}: use zero or mean.")
    heads, subs, sides = [], [], []
    for raw in (p.strip() for p in text.replace(";", ",").split(",")):
        if not raw:
            continue
        words = raw.lower().split()
        if words[0] in ("positions", "position", "pos", "pe"):
            side = words[1] if len(words) == 2 else ""
            if side not in ("source", "target", "both"):
                raise ValueError(f"“{raw[:40]}”: say which positional encoding, source, target or both.")
            sides += list(SIDES) if side == "both" else [side]
            continue
        m = re.fullmatch(r"(enc|encoder|dec|decoder|cross)\s+l(?:ayer)?\s*(\d{1,3})"
                         r"(?:\s+(ffn|h(?:ead)?\s*(\d{1,3})(?:\s*-\s*(\d{1,3}))?))?", " ".join(words))
        if not m:
            raise ValueError(f"“{raw[:40]}” is not a part. {PART_HELP}")
        kind, layer = KIND_WORDS[m.group(1)], int(m.group(2))
        if m.group(3) == "ffn":
            if kind == "cross":
                raise ValueError("“cross … ffn”: the feed-forward belongs to a layer: `dec L2 ffn`.")
            subs.append((f"{kind}-ffn", layer))
        elif m.group(4):
            first, last = int(m.group(4)), int(m.group(5) or m.group(4))
            if last < first or last - first > 64:
                raise ValueError(f"“{raw[:40]}”: a range of heads goes up, e.g. H1-4.")
            heads += [(kind, layer, h) for h in range(first, last + 1)]
        else:
            subs.append((ATTENTION_SUBLAYER[kind], layer))
    return KnockOut(tuple(heads), tuple(subs), tuple(sides), method)


def parts_text(ko: KnockOut) -> str:
    """The knock-out as the box writes it (parse_parts reads it back)."""
    short = {"encoder": "enc", "decoder": "dec", "cross": "cross"}
    back = {v: k for k, v in ATTENTION_SUBLAYER.items()}
    out = [f"{short[k]} L{n} H{h}" for k, n, h in ko.heads]
    for name, n in ko.sublayers:
        out.append(f"{short[back[name]]} L{n}" if name in back else f"{short[stack_of(name)]} L{n} ffn")
    out += [f"positions {s}" for s in ko.positions]
    return ", ".join(out)


# ---------------------------------------------------------------- as JSON (the API's answers)
def knockout_json(r: KnockOutResult) -> dict:
    return dict(switched_off=parts_text(r.knockout), method=r.knockout.method, original=r.original_text,
                translation=r.text, changed=r.changed, first_change=r.first_change,
                seconds=round(r.seconds, 3), steps=[dict(piece=p, p_original=round(float(a), 6),
                                                         p_knocked=round(float(b), 6), knocked_top=t)
                       for p, a, b, t in zip(r.original, r.p_original, r.p_knocked, r.top_knocked)])


def importance_json(hi: HeadImportance, step: Optional[int] = None) -> dict:
    """Every head, ranked: Δ log p of the translation (or of one step's piece), and per step."""
    return dict(method=hi.method, pieces=list(hi.tgt_pieces), step=step, seconds=round(hi.seconds, 3),
                log_p=[round(float(v), 6) for v in hi.log_p],
                heads=[dict(kind=k, layer=l, head=h, delta_log_p=round(d, 6),
                            per_step=[round(float(v), 6) for v in hi.per_step[k][l - 1, h - 1]])
                       for k, l, h, d in hi.ranked(step)])


def patch_json(pm: PatchMap) -> dict:
    rnd = lambda a: np.round(np.asarray(a, dtype=np.float64), 6).tolist()   # noqa: E731
    return dict(a=pm.text_a, b=pm.text_b, step=pm.step, piece=pm.piece, p_a=round(pm.p_a, 6),
                p_b=round(pm.p_b, 6), differing_positions=[i + 1 for i in pm.differing],
                source_pieces=list(pm.src_a), sublayers={s: dict(parts=list(pm.stack_parts[s]), p=rnd(v))
                                                         for s, v in pm.sublayer_p.items()},
                heads={k: rnd(v) for k, v in pm.head_p.items()},
                encoder_residual=dict(rows="input, after layer 1, ...", columns="source positions",
                                      p=rnd(pm.layer_positions_p)),
                seconds=round(pm.seconds, 3))
