"""Greedy decoding: batched (for evaluation and the CLI) and traced step by step (for the app).

With the KV cache each step feeds only the newest token to the decoder: self-attention
keys/values are appended per step, cross-attention keys/values of the encoder memory
are computed once. Without it, the whole prefix is recomputed every step (the reference).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Optional, Sequence

import numpy as np
import torch

from .transformer import Transformer


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, device=None) -> torch.Tensor:
    T = max(1, max((len(s) for s in seqs), default=1))
    out = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out.to(device) if device is not None else out


def default_max_new_tokens(src_len: int, model_max: int) -> int:
    """Translations are rarely more than twice as long as the source (in pieces)."""
    return max(1, min(model_max - 1, 2 * src_len + 10))


@torch.inference_mode()
def greedy_decode(
    model: Transformer,
    src: torch.Tensor,                 # (B, S) source ids ending in EOS, right-padded
    max_new_tokens: Optional[int] = None,
    use_cache: bool = True,
) -> list[list[int]]:
    """Greedy search for a batch; returns the generated ids of each sentence (EOS excluded)."""
    cfg = model.cfg
    B, S = src.shape
    if max_new_tokens is None:
        max_new_tokens = default_max_new_tokens(S, cfg.max_len)
    max_new_tokens = min(max_new_tokens, cfg.max_len - 1)
    enc = model.encode(src)
    cache = model.new_cache(enc) if use_cache else None
    ys = torch.full((B, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(max_new_tokens):
        inp = ys[:, -1:] if use_cache else ys
        logits = model.decode(inp, enc, cache=cache).logits[:, -1]          # (B, vocab)
        nxt = logits.argmax(-1)
        nxt = torch.where(done, torch.full_like(nxt, cfg.pad_id), nxt)
        ys = torch.cat([ys, nxt[:, None]], dim=1)
        done |= nxt == cfg.eos_id
        if bool(done.all()):
            break
    out = []
    for row in ys[:, 1:].tolist():
        seq = []
        for t in row:
            if t in (cfg.eos_id, cfg.pad_id):
                break
            seq.append(t)
        out.append(seq)
    return out


@dataclass
class Step:
    """One greedy decoding step: the prefix fed in, what came out, and what was considered."""

    index: int
    token_id: int
    piece: str
    prob: float
    topk_ids: list[int]
    topk_pieces: list[str]
    topk_probs: list[float]


@dataclass
class TranslationTrace:
    """Everything the app draws, as plain numpy arrays and lists (no model needed to redraw).

    Attention arrays are (layers, heads, queries, keys), float32. Decoder queries are the
    decoder input positions: <s> y1 ... y_{n-1}; step i's query produced output token i.
    Masked (future) cells of the decoder self-attention hold 0 probability and NaN scores.
    """

    source_text: str
    translation: str
    src_ids: list[int]
    src_pieces: list[str]          # source pieces, with the final </s>
    tgt_in_pieces: list[str]       # decoder inputs: <s> y1 ... y_{n-1}
    tgt_out_pieces: list[str]      # decoder outputs: y1 ... y_n (y_n is </s> if it stopped)
    tgt_ids: list[int]
    steps: list[Step]
    encoder_attn: np.ndarray       # (L_enc, H, S, S)
    encoder_scores: np.ndarray
    decoder_self_attn: np.ndarray  # (L_dec, H, T, T), lower triangular
    decoder_self_scores: np.ndarray
    cross_attn: np.ndarray         # (L_dec, H, T, S)
    cross_scores: np.ndarray
    d_head: int
    finished: bool                 # False: stopped at the length limit before </s>
    timed_out: bool = False        # True: stopped at the time limit before </s>
    truncated_source: bool = False
    device: str = "cpu"
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)


def _stack(weights, attr) -> np.ndarray:
    # list over layers of (1, H, Tq, Tk) -> (L, H, Tq, Tk)
    return torch.stack([getattr(w, attr)[0] for w in weights]).float().cpu().numpy()


@torch.inference_mode()
def trace_greedy(
    model: Transformer,
    src_ids: Sequence[int],            # source ids ending in EOS
    id_to_piece,                       # callable: list[int] -> list[str]
    max_new_tokens: Optional[int] = None,
    top_k: int = 10,
    deadline_s: Optional[float] = None,
) -> dict:
    """Greedy decoding of one sentence with every attention map and the top-k of every step.

    Uses the KV cache; step t's query row of decoder self-attention is written into a
    (T, T) matrix whose future cells stay empty.
    """
    cfg = model.cfg
    device = next(model.parameters()).device
    src = torch.as_tensor([list(src_ids)], dtype=torch.long, device=device)
    S = src.size(1)
    if max_new_tokens is None:
        max_new_tokens = default_max_new_tokens(S, cfg.max_len)
    max_new_tokens = min(max_new_tokens, cfg.max_len - 1)
    enc = model.encode(src, output_attentions=True)
    cache = model.new_cache(enc)
    L, H = cfg.n_decoder_layers, cfg.n_heads
    self_p = np.zeros((L, H, max_new_tokens, max_new_tokens), np.float32)
    self_s = np.full((L, H, max_new_tokens, max_new_tokens), np.nan, np.float32)
    cross_p = np.zeros((L, H, max_new_tokens, S), np.float32)
    cross_s = np.zeros((L, H, max_new_tokens, S), np.float32)
    token = cfg.bos_id
    out_ids: list[int] = []
    steps: list[Step] = []
    finished = False
    timed_out = False
    t_start = time.perf_counter()
    for t in range(max_new_tokens):
        if deadline_s is not None and time.perf_counter() - t_start > deadline_s:
            timed_out = True
            break
        dec = model.decode(torch.tensor([[token]], device=device), enc, cache=cache, output_attentions=True)
        probs = torch.softmax(dec.logits[0, -1].float(), dim=-1)
        top_p, top_i = probs.topk(min(top_k, probs.numel()))
        for li in range(L):
            self_p[li, :, t, : t + 1] = dec.self_attentions[li].probs[0, :, 0].float().cpu().numpy()
            self_s[li, :, t, : t + 1] = dec.self_attentions[li].scores[0, :, 0].float().cpu().numpy()
            cross_p[li, :, t] = dec.cross_attentions[li].probs[0, :, 0].float().cpu().numpy()
            cross_s[li, :, t] = dec.cross_attentions[li].scores[0, :, 0].float().cpu().numpy()
        token = int(top_i[0])
        ids = top_i.tolist()
        steps.append(Step(t, token, id_to_piece([token])[0], float(top_p[0]), ids, id_to_piece(ids), top_p.tolist()))
        out_ids.append(token)
        if token == cfg.eos_id:
            finished = True
            break
    T = len(out_ids)
    return dict(
        tgt_ids=out_ids,
        steps=steps,
        finished=finished,
        timed_out=timed_out,
        encoder_attn=_stack(enc.attentions, "probs"),
        encoder_scores=_stack(enc.attentions, "scores"),
        decoder_self_attn=self_p[:, :, :T, :T].copy(),
        decoder_self_scores=self_s[:, :, :T, :T].copy(),
        cross_attn=cross_p[:, :, :T].copy(),
        cross_scores=cross_s[:, :, :T].copy(),
        d_head=cfg.d_head,
    )
