"""Patching between two sentences that differ in one word (issue 40): where is the decision carried?

Sentence A ("… because it was too wide.") and sentence B ("… too tired.") are read with the same decoder
input, A's translation up to a step (the pronoun's, say). Copying one part's output from B's run into A's run
(knockout.py's edits, with B's recorded output as the replacement) and reading p(piece) at that step shows how
much of B's answer that part carries: all of it once the whole residual stream is copied (p becomes p_B), none
when a part copied from A into A itself. Three maps, each one batched pass (a row per part):

- sub-layers: each attention and feed-forward sub-layer's output, at every position;
- heads: each head's share of its sub-layer's output, at every position;
- the encoder's residual stream after each layer (row 0: its input) at one source position at a time.
"""
from __future__ import annotations

import time
from typing import Sequence

import numpy as np
import torch

from ..causal import HEAD_KINDS, PatchMap
from ..model.transformer import Transformer
from .knockout import EditedRun, Edits, all_heads, heads_one_per_row, kind_layers, row_passes

STACK_PARTS = {"encoder": (("encoder-self", "self-attention"), ("encoder-ffn", "feed-forward")),
               "decoder": (("decoder-self", "masked self-attention"), ("cross", "cross-attention"),
                           ("decoder-ffn", "feed-forward"))}


def same_length(src_a: Sequence[int], src_b: Sequence[int], pieces_a, pieces_b) -> list[int]:
    """The source positions whose pieces differ; ValueError with a message for the user when the two sentences
    cannot be compared position by position."""
    if len(src_a) != len(src_b):
        raise ValueError(f"Patching compares the two sentences piece by piece, so they need the same number "
                         f"of pieces: the first has {len(src_a) - 1}, the second {len(src_b) - 1} "
                         f"({' '.join(pieces_a[:-1])} / {' '.join(pieces_b[:-1])}). Change one word for a "
                         f"word of "
                         "as many pieces.")
    differing = [i for i, (a, b) in enumerate(zip(src_a, src_b)) if a != b]
    if not differing:
        raise ValueError("The two sentences are the same, piece for piece: change a word in the second.")
    return differing


def p_last(logits: torch.Tensor, piece: int) -> np.ndarray:
    """p(piece) at the last position of every row: (B,) float64."""
    return torch.softmax(logits[:, -1].double(), -1)[:, piece].cpu().numpy()


def batched(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor, edits: Edits, rows: int, piece: int):
    """p(piece) at the last position for `rows` rows of edits, ROWS_PER_PASS rows a pass (knockout.py)."""
    out = []
    for B, part in row_passes(edits, rows):
        run = EditedRun(model, part)
        memory, mask = run.encode(src.expand(B, -1))
        out.append(p_last(run.decode(tgt_in.expand(B, -1), memory, mask, last_only=True), piece))
    return np.concatenate(out) if out else np.zeros(0)


def sublayer_map(model: Transformer, run, seen_b: dict) -> dict:
    """Each sub-layer's whole output (every position) copied from B, a row each: stack -> (layers, its
    sub-layers)."""
    layers = {"encoder": model.cfg.n_encoder_layers, "decoder": model.cfg.n_decoder_layers}
    subs = [(n, name) for stack, parts in STACK_PARTS.items() for n in range(1, layers[stack] + 1)
            for name, _ in parts]
    edits: Edits = {}
    for r, (n, name) in enumerate(subs):
        keep = torch.ones(len(subs), 1, 1, dtype=model.embedding.weight.dtype, device=model.device)
        keep[r] = 0
        edits[("sublayer", name, n)] = (keep, seen_b[("sublayer", name, n)])
    p, out, i = run(edits, len(subs)), {}, 0
    for stack, parts in STACK_PARTS.items():
        k = layers[stack] * len(parts)
        out[stack], i = p[i:i + k].reshape(layers[stack], len(parts)), i + k
    return out


def head_map(model: Transformer, run, seen_b: dict) -> dict:
    """Each head's share copied from B, a row each: kind -> (layers, heads)."""
    H, layers = model.cfg.n_heads, kind_layers(model)
    heads = all_heads(model)
    p, out, i = run(heads_one_per_row(model, heads, lambda key: seen_b[key]), len(heads)), {}, 0
    for kind in HEAD_KINDS:
        out[kind], i = p[i:i + layers[kind] * H].reshape(layers[kind], H), i + layers[kind] * H
    return out


def residual_map(model: Transformer, run, seen_b: dict, S: int) -> np.ndarray:
    """The encoder's residual stream after each layer (0: its input) copied from B at one source position a
    row: (layers + 1, S)."""
    L = model.cfg.n_encoder_layers
    edits: Edits = {}
    for n in range(L + 1):
        keep = torch.ones((L + 1) * S, S, 1, dtype=model.embedding.weight.dtype, device=model.device)
        for s in range(S):
            keep[n * S + s, s] = 0
        edits[("layer", "encoder", n)] = (keep, seen_b[("layer", "encoder", n)])
    return run(edits, (L + 1) * S).reshape(L + 1, S)


@torch.inference_mode()
def patching(model: Transformer, src_a: Sequence[int], src_b: Sequence[int], tgt_ids: Sequence[int],
             step: int, piece: int, texts: tuple[str, str], pieces_a, pieces_b, tgt_pieces,
             piece_text: str) -> PatchMap:
    """A (`src_a`, its translation `tgt_ids`) with parts of B (`src_b`) copied in, read at `step` (1-based)
    for `piece` (an id)."""
    t0 = time.perf_counter()
    differing = same_length(src_a, src_b, pieces_a, pieces_b)
    device = model.device
    a = torch.as_tensor([list(src_a)], device=device)
    b = torch.as_tensor([list(src_b)], device=device)
    tgt_in = torch.as_tensor([[model.cfg.bos_id, *tgt_ids[:step - 1]]], device=device)
    run_b = EditedRun(model, record=True)
    p_a = float(p_last(EditedRun(model)(a, tgt_in), piece)[0])
    p_b = float(p_last(run_b(b, tgt_in), piece)[0])
    run = lambda edits, rows: batched(model, a, tgt_in, edits, rows, piece)   # noqa: E731  (A's run, edited)
    return PatchMap(texts[0], texts[1], tuple(pieces_a), tuple(pieces_b), tuple(tgt_pieces[:step]), step,
                    piece_text, p_a, p_b, tuple(differing),
                    {s: tuple(label for _, label in parts) for s, parts in STACK_PARTS.items()},
                    sublayer_map(model, run, run_b.seen), residual_map(model, run, run_b.seen, len(src_a)),
                    head_map(model, run, run_b.seen), time.perf_counter() - t0)
