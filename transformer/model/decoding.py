"""Greedy decoding: batched (evaluation, the CLI, training) and traced step by step (the app).

With the KV cache each step feeds only the newest piece to the decoder: self-attention
keys/values are appended per step, cross-attention keys/values of the encoder memory are
computed once. Without it, the whole prefix is recomputed every step (the reference).
The traced decoding writes a ``TranslationTrace`` (``transformer/trace.py``): every step's
candidates and every attention map, as numpy arrays, for the views to draw.
"""
from __future__ import annotations

import time
from typing import Optional, Protocol, Sequence

import numpy as np
import torch

from ..config import (BATCH_TOKENS, MAX_BATCH_SENTENCES, MAX_SOURCE_PIECES, TOP_K, ModelConfig,
                      max_output_pieces)
from ..trace import AttentionMaps, Source, Step, StopReason, TranslationTrace
from .attention import AttentionWeights
from .transformer import DecoderOutput, EncoderOutput, Transformer


class Vocabulary(Protocol):
    """What decoding needs from a tokenizer (io/tokenizer.py's Tokenizer has it)."""

    def pieces(self, ids: Sequence[int]) -> list[str]: ...
    def decode(self, ids: Sequence[int]) -> str: ...
    def encode(self, texts: Sequence[str]) -> list[list[int]]: ...


def pad_batch(seqs: Sequence[Sequence[int]], pad_id: int, device=None) -> torch.Tensor:
    T = max(1, max((len(s) for s in seqs), default=1))
    out = torch.full((len(seqs), T), pad_id, dtype=torch.long)
    for i, s in enumerate(seqs):
        if len(s):
            out[i, : len(s)] = torch.as_tensor(list(s), dtype=torch.long)
    return out.to(device) if device is not None else out


def source_limit(model: Transformer) -> int:
    """Longest source in pieces, </s> included: MAX_SOURCE_PIECES, and room left for the positional
    encoding."""
    return min(model.cfg.max_len, MAX_SOURCE_PIECES)


def cut_source(ids: Sequence[int], eos_id: int, limit: int) -> tuple[list[int], bool]:
    """The one place a source is cut to its limit: its first limit - 1 pieces and </s>; and whether it was
    cut."""
    return list(ids[: limit - 1]) + [eos_id], len(ids) > limit - 1


def output_limit(model: Transformer, src_len: int, max_new_tokens: Optional[int]) -> int:
    """The caller's limit, or the output length rule (config.py); never past the positional encoding."""
    max_len = model.cfg.max_len
    return min(max_new_tokens if max_new_tokens is not None else max_output_pieces(src_len, max_len),
               max_len - 1)


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
    enc = model.encode(src)
    cache = model.new_cache(enc) if use_cache else None
    ys = torch.full((B, 1), cfg.bos_id, dtype=torch.long, device=src.device)
    done = torch.zeros(B, dtype=torch.bool, device=src.device)
    for _ in range(output_limit(model, S, max_new_tokens)):
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


class AttentionRecorder:
    """The decoder's attention of a batch, step by step: one numpy copy per layer and step of the query rows
    of the sentences still decoding, cut per sentence at the end (``maps``) to what that sentence computed.
    Decoder self-attention rows go into a (T, T) matrix: future probabilities stay 0, and the future cells'
    scores (which the KV cache never computes) come from one teacher-forced pass at
    the end (``add_future_scores``)."""

    def __init__(self, layers: int, heads: int) -> None:
        self.layers, self.heads = layers, heads
        # [step][layer] -> (self_p, self_s, cross_p, cross_s)
        self.rows: list[list[tuple[np.ndarray, ...]]] = []
        # [step] sentence -> its row in that step's arrays
        self.row_of: list[dict[int, int]] = []
        # [layer] -> (B, H, T, T) scores of a whole-prefix pass
        self.full: Optional[list[np.ndarray]] = None

    def add(self, dec: DecoderOutput, sentences: Sequence[int]) -> None:
        """One step's maps; `sentences`: the sentence of each row of the batch that decoded it."""
        row = lambda x: x[:, :, 0].float().cpu().numpy()                  # (B, H, 1, keys) -> (B, H, keys)
        self.rows.append([(row(sw.probs), row(sw.scores), row(cw.probs), row(cw.scores))
                          for sw, cw in zip(dec.self_attentions, dec.cross_attentions)])
        self.row_of.append({b: r for r, b in enumerate(sentences)})

    def add_future_scores(self, dec: DecoderOutput) -> None:
        """Decoder self-attention scores of a teacher-forced pass over every sentence's prefix (padded at the
        end: a query never sees a later key before the mask, so padding changes none of
        a sentence's cells)."""
        self.full = [sw.scores.float().cpu().numpy() for sw in dec.self_attentions]

    def maps(self, b: int, T: int, tgt_in: list[str],
             src_pieces: list[str]) -> tuple[AttentionMaps, AttentionMaps]:
        """Sentence b's decoder and cross-attention maps over its T steps (its padded keys dropped)."""
        L, H, S = self.layers, self.heads, len(src_pieces)
        self_p, self_s = np.zeros((L, H, T, T), np.float32), np.full((L, H, T, T), np.nan, np.float32)
        cross_p, cross_s = np.zeros((L, H, T, S), np.float32), np.zeros((L, H, T, S), np.float32)
        for t in range(T):
            r = self.row_of[t][b]
            for li, (sp, ss, cp, cs) in enumerate(self.rows[t]):
                self_p[li, :, t, : t + 1], self_s[li, :, t, : t + 1] = sp[r, :, : t + 1], ss[r, :, : t + 1]
                cross_p[li, :, t], cross_s[li, :, t] = cp[r, :, :S], cs[r, :, :S]
        if self.full is not None and T > 1:
            future = np.triu(np.ones((T, T), dtype=bool), 1)
            for li, full in enumerate(self.full):
                self_s[li] = np.where(future, full[b, :, :T, :T], self_s[li])
        return (AttentionMaps("decoder", self_p, self_s, tgt_in, tgt_in),
                AttentionMaps("cross", cross_p, cross_s, tgt_in, src_pieces))


def encoder_maps(weights: list[AttentionWeights], src_pieces: list[str], b: int = 0) -> AttentionMaps:
    """Sentence b's encoder self-attention (its padded positions dropped), every layer."""
    S = len(src_pieces)
    stack = lambda attr: torch.stack([getattr(w, attr)[b, :, :S, :S] for w in weights]).float().cpu().numpy()
    return AttentionMaps("encoder", stack("probs"), stack("scores"), src_pieces, src_pieces)


def make_trace(vocab: Vocabulary, source: Source, steps: list[Step], stop: StopReason, encoder: AttentionMaps,
               decoder: AttentionMaps, cross: AttentionMaps, cfg: ModelConfig, device: str, seconds: float,
               deadline_s: Optional[float] = None, forced: bool = False) -> TranslationTrace:
    """The one place a TranslationTrace is made: the target is what the steps chose; `cfg` says how the model
    scaled its scores (√d_k, or not), which the trace records beside them."""
    tgt_ids = [s.token_id for s in steps]
    return TranslationTrace(
        source=source, translation=vocab.decode(tgt_ids), tgt_ids=tgt_ids,
        tgt_pieces=[s.piece for s in steps], steps=steps, encoder=encoder, decoder=decoder, cross=cross,
        d_k=cfg.d_k, stop=stop, deadline_s=deadline_s, device=device, seconds=seconds, forced=forced,
        scaled=cfg.scale_scores)


def trace_greedy(model: Transformer, vocab: Vocabulary, source: Source, max_new_tokens: Optional[int] = None,
                 top_k: int = TOP_K, deadline_s: Optional[float] = None,
                 forced: Optional[dict[int, int]] = None) -> TranslationTrace:
    """Greedy decoding of one sentence (``trace_greedy_batch`` with a batch of one).
    ``forced={step: token_id}`` (0-based steps) feeds those pieces instead of the model's choices at those
    steps, and decoding goes on greedily after them: a "what if" branch (model/steering.py)."""
    return trace_greedy_batch(model, vocab, [source], max_new_tokens, top_k, deadline_s, [forced])[0]


@torch.inference_mode()
def trace_greedy_batch(
    model: Transformer,
    vocab: Vocabulary,
    sources: Sequence[Source],          # each source.ids ends in EOS
    max_new_tokens: Optional[int] = None,
    top_k: int = TOP_K,
    deadline_s: Optional[float] = None,
    forced: Optional[Sequence[Optional[dict[int, int]]]] = None,
) -> list[TranslationTrace]:
    """The traced decoding loop: greedy decoding with the KV cache of one sentence or several (right-padded,
    one decoder call per step for the whole batch), recording every attention map and the top-k candidates
    of every step. A sentence's own output limit and </s> end its trace; the batch runs until every
    sentence has ended, or the deadline (which then ends every unfinished one). A sentence decoded in a
    batch gets the same steps, pieces and maps as alone (tests/test_batch_trace.py). ``forced[b]``:
    ``{step: token_id}`` pieces that sentence b takes instead of the model's choice (see ``trace_greedy``)."""
    t0 = time.perf_counter()
    cfg, device = model.cfg, model.device
    forced = list(forced) if forced is not None else [None] * len(sources)
    src = pad_batch([s.ids for s in sources], cfg.pad_id, device)
    limits = [output_limit(model, len(s.ids), max_new_tokens) for s in sources]
    enc = model.encode(src, output_attentions=True)
    cache, recorder = model.new_cache(enc), AttentionRecorder(cfg.n_decoder_layers, cfg.n_heads)
    # per sentence: (index, token, piece, p, top-k...) per step
    steps: list[list] = [[] for _ in sources]
    stops: list[Optional[StopReason]] = [None] * len(sources)
    prefixes = [vocab.pieces([cfg.bos_id]) for _ in sources]
    tokens = [cfg.bos_id] * len(sources)
    active, memory = list(range(len(sources))), enc     # the sentences still decoding: the batch's rows
    t_start = time.perf_counter()
    for t in range(max(limits)):
        if deadline_s is not None and time.perf_counter() - t_start > deadline_s:
            stops = [s or "time" for s in stops]
            break
        dec = model.decode(torch.tensor([tokens[b] for b in active], device=device)[:, None], memory,
                           cache=cache, output_attentions=True)
        recorder.add(dec, active)
        probs = torch.softmax(dec.logits[:, -1].float(), dim=-1)                  # (rows, vocab)
        top_p, top_i = probs.topk(min(top_k, probs.size(-1)))
        for r, (b, ps, ids) in enumerate(zip(active, top_p.tolist(), top_i.tolist())):
            pieces = vocab.pieces(ids)
            tok = forced[b][t] if forced[b] and t in forced[b] else ids[0]
            piece, p = (pieces[0], ps[0]) if tok == ids[0] else (vocab.pieces([tok])[0], float(probs[r, tok]))
            steps[b].append((t, tok, piece, p, ids, pieces, ps))
            tokens[b], prefixes[b] = tok, prefixes[b] + [piece]
            stops[b] = "end" if tok == cfg.eos_id else ("length" if t + 1 >= limits[b] else None)
        going = [r for r, b in enumerate(active) if stops[b] is None]
        if not going:
            break
        if len(going) < len(active):             # the finished leave the batch: their rows cost nothing more
            rows = torch.tensor(going, device=device)
            cache.keep_rows(rows)
            memory = EncoderOutput(memory.memory[rows],
                                   None if memory.src_mask is None else memory.src_mask[rows])
            active = [active[r] for r in going]
    return batch_traces(model, vocab, sources, enc, recorder, steps, stops, prefixes, t0, deadline_s)


def batch_traces(model: Transformer, vocab: Vocabulary, sources: Sequence[Source], enc: EncoderOutput,
                 recorder: AttentionRecorder, steps: list[list], stops: list, prefixes: list[list[str]],
                 t0: float, deadline_s: Optional[float]) -> list[TranslationTrace]:
    """The traces of a decoded batch: one teacher-forced pass for the full QKᵀ of decoder self-attention, then
    each sentence's steps, maps and stop reason (``trace_greedy_batch``'s records)."""
    cfg, device = model.cfg, model.device
    if any(len(s) > 1 for s in steps):
        tgt_in = pad_batch([[cfg.bos_id] + [st[1] for st in s][:-1] for s in steps], cfg.pad_id, device)
        recorder.add_future_scores(model.decode(tgt_in, enc, output_attentions=True))
    seconds = time.perf_counter() - t0
    traces = []
    for b, source in enumerate(sources):
        # <s> y1 ... y_{n-1}: one tuple for every step
        decoder_input = tuple(prefixes[b][: len(steps[b])])
        done = [Step(t, decoder_input, *rest) for t, *rest in steps[b]]
        decoder, cross = recorder.maps(b, len(done), decoder_input if done else [], source.pieces)
        traces.append(make_trace(vocab, source, done, stops[b] or "length", encoder_maps(enc.attentions,
                                 source.pieces, b), decoder, cross, cfg, str(device), seconds, deadline_s))
    return traces


@torch.inference_mode()
def translate_batch(model, tokenizer: Vocabulary, texts: Sequence[str], batch_tokens: int = BATCH_TOKENS,
                    max_src_tokens: Optional[int] = None, use_cache: bool = True,
                    max_sentences: int = MAX_BATCH_SENTENCES) -> list[str]:
    """Greedy translation of many texts: length-sorted batches of at most `batch_tokens` padded
    source tokens (and `max_sentences` sentences), returned in input order. Used by training
    and evaluation. The caller puts the model in eval mode (a shared model is never switched here)."""
    device = model.device
    eos, pad = model.cfg.eos_id, model.cfg.pad_id
    limit = max_src_tokens or source_limit(model)
    encoded = [cut_source(ids, eos, limit)[0] for ids in tokenizer.encode(list(texts))]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    out: list[str] = [""] * len(encoded)
    i = 0
    while i < len(order):
        j = i + 1                      # lengths ascend, so the last one added is the longest
        while (j < len(order) and (j - i + 1) * len(encoded[order[j]]) <= batch_tokens
               and j - i < max_sentences):
            j += 1
        idx = order[i:j]
        src = pad_batch([encoded[k] for k in idx], pad, device)
        for k, ids in zip(idx, greedy_decode(model, src, use_cache=use_cache)):
            out[k] = tokenizer.decode(ids)
        i = j
    return out
