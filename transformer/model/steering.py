"""Steering the decoder: teacher forcing of your own French, "what if" branches, and beam search.

All three use the model's own ``encode`` / ``decode`` / ``new_cache`` (model/transformer.py), one
model run each:

- ``forced_pass``: the encoder once, then the decoder over all French pieces at once with the causal
  mask (teacher forcing, exactly as in training); per piece its log-probability and rank, and the
  attention maps of that pass as a ``TranslationTrace``.
- ``branch``: greedy decoding with the KV cache where one step takes a piece you picked
  (``decoding.trace_greedy(forced=...)``), greedy again after it.
- ``beam_search``: ``beam`` hypotheses decoded side by side as one batch with the KV cache, whose
  rows are reordered as beams are kept; GNMT length normalisation for the final choice.
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import torch

from ..config import BEAM_ALPHA, TOP_K
from ..steering import BeamHypothesis, BeamNode, BeamResult, ForcedPiece, ForcedResult, length_penalty
from ..trace import AttentionMaps, Source, Step, TranslationTrace
from .attention import KVCache
from .decoding import Vocabulary, encoder_maps, make_trace, output_limit, trace_greedy
from .transformer import DecoderCache, Transformer


def _decoder_maps(dec, tgt_in: list[str], src_pieces: list[str]) -> tuple[AttentionMaps, AttentionMaps]:
    """The full pass's decoder attention (batch of 1) as the trace holds it: future probabilities 0, and the
    future cells' scores QKᵀ/√d_k before the mask (as a greedy trace has them, so the mask is
    seen at work)."""
    stack = lambda ws, attr: torch.stack([getattr(w, attr)[0] for w in ws]).float().cpu().numpy()
    decoder = AttentionMaps("decoder", stack(dec.self_attentions, "probs"),
                            stack(dec.self_attentions, "scores"), tgt_in, tgt_in)
    cross = AttentionMaps("cross", stack(dec.cross_attentions, "probs"),
                          stack(dec.cross_attentions, "scores"), tgt_in, src_pieces)
    return decoder, cross


@torch.inference_mode()
def forced_pass(model: Transformer, vocab: Vocabulary, source: Source, tgt_ids: Sequence[int],
                top_k: int = TOP_K, notes: tuple[str, ...] = ()) -> ForcedResult:
    """Teacher forcing: the decoder reads <s> y1 ... y_{n-1} in one pass and scores y1 ... y_n
    (</s> is appended when missing). Every number comes from that one pass."""
    t0 = time.perf_counter()
    cfg, device = model.cfg, model.device
    ids = list(tgt_ids) if list(tgt_ids)[-1:] == [cfg.eos_id] else list(tgt_ids) + [cfg.eos_id]
    src = torch.as_tensor([source.ids], dtype=torch.long, device=device)
    enc = model.encode(src, output_attentions=True)
    dec = model.decode(torch.as_tensor([[cfg.bos_id] + ids[:-1]], device=device), enc, output_attentions=True)
    logp = torch.log_softmax(dec.logits[0].float(), dim=-1)                     # (T, vocab)
    chosen = logp.gather(1, torch.as_tensor(ids, device=device)[:, None])[:, 0]
    ranks = ((logp > chosen[:, None]).sum(1) + 1).tolist()
    top_lp, top_i = logp.topk(min(top_k, logp.size(-1)), dim=-1)
    pieces, tgt_in = vocab.pieces(ids), tuple(vocab.pieces([cfg.bos_id] + ids[:-1]))
    steps, forced = [], []
    for t, tok in enumerate(ids):
        cand = top_i[t].tolist()
        cand_p = top_lp[t].exp().tolist()
        cand_pieces = vocab.pieces(cand)
        p = float(chosen[t].exp())
        steps.append(Step(t, tgt_in, tok, pieces[t], p, cand, cand_pieces, cand_p))
        forced.append(ForcedPiece(pieces[t], tok, p, float(chosen[t]), int(ranks[t]), cand_pieces[0],
                                  cand_p[0]))
    decoder, cross = _decoder_maps(dec, tgt_in, source.pieces)
    trace = make_trace(vocab, source, steps, "end", encoder_maps(enc.attentions, source.pieces), decoder,
                       cross, cfg, str(device), time.perf_counter() - t0, forced=True)
    return ForcedResult(vocab.decode(ids), forced, trace, notes)


def branch(model: Transformer, vocab: Vocabulary, source: Source, step: int, token_id: int,
           prefix: Sequence[int] = (), top_k: int = TOP_K,
           deadline_s: Optional[float] = None) -> TranslationTrace:
    """Decoding where step `step` (0-based) takes `token_id`, the steps before it take `prefix` (when
    given: e.g. an earlier branch or your French) or the model's greedy choices, and greedy after it.
    Raises ValueError when decoding ends before that step."""
    if step < 0:
        raise ValueError("Steps are numbered from 1.")
    forced = {i: int(t) for i, t in enumerate(list(prefix)[:step])}
    forced[step] = int(token_id)
    trace = trace_greedy(model, vocab, source, None, top_k, deadline_s, forced=forced)
    if len(trace.steps) <= step:
        raise ValueError(f"There is no step {step + 1}: this translation has {len(trace.steps)} steps.")
    return trace


def _reorder(cache: DecoderCache, memory_kv: list[KVCache], rows: torch.Tensor) -> None:
    """Keep the cache rows of the kept beams (a beam may be kept twice); the memory's keys/values are
    the same for every beam, so they are a view, never copied."""
    n = rows.numel()
    for lc, mkv in zip(cache.layers, memory_kv):
        lc.self_kv = KVCache(lc.self_kv.k.index_select(0, rows), lc.self_kv.v.index_select(0, rows))
        lc.memory_kv = KVCache(mkv.k.expand(n, -1, -1, -1), mkv.v.expand(n, -1, -1, -1))


def _expand(live, logp, beam, eos, vocab, nodes, finished):
    """One step of the search: the best 2 × beam extensions of the live hypotheses. Returns the new live
    ones as (node id, score, ids, row it extends). An extension ending in </s> finishes a hypothesis only
    when it ranks among the best `beam` (as in common implementations), so beam 1 is greedy."""
    V = logp.size(-1)
    total = torch.as_tensor([h[1] for h in live], device=logp.device)[:, None] + logp
    top_s, top_i = total.view(-1).topk(min(2 * beam, total.numel()))
    new_live = []
    for rank, (s, i) in enumerate(zip(top_s.tolist(), top_i.tolist())):
        row, tok = divmod(i, V)
        parent = live[row]
        if tok == eos and rank < beam and len(finished) < beam:
            status = "finished"
            finished.append((len(nodes), s, parent[2] + [tok]))
        elif tok != eos and len(new_live) < beam:
            status = "kept"
            new_live.append((len(nodes), s, parent[2] + [tok], row))
        else:
            status = "pruned"
        nodes.append(BeamNode(len(nodes), parent[0], len(parent[2]), tok, vocab.pieces([tok])[0],
                              float(logp[row, tok]), s, status))
    return new_live


@torch.inference_mode()
def beam_search(model: Transformer, vocab: Vocabulary, source: Source, beam: int, alpha: float = BEAM_ALPHA,
                max_new_tokens: Optional[int] = None, deadline_s: Optional[float] = None) -> BeamResult:
    """Beam search with the KV cache: the live hypotheses are one batch. Stops when `beam` hypotheses
    have ended with </s>, at the output length limit or at the deadline; the final choice is the best
    by score / length penalty (GNMT, α = `alpha`)."""
    t0 = time.perf_counter()
    cfg, device = model.cfg, model.device
    src = torch.as_tensor([source.ids], dtype=torch.long, device=device)
    enc = model.encode(src)
    cache = model.new_cache(enc)
    memory_kv = [lc.memory_kv for lc in cache.layers]
    live = [(-1, 0.0, [], 0)]                      # (node id, score, ids, row)
    nodes: list[BeamNode] = []
    finished: list = []
    tokens = torch.tensor([[cfg.bos_id]], device=device)
    timed_out = False
    for _ in range(output_limit(model, src.size(1), max_new_tokens)):
        if deadline_s is not None and time.perf_counter() - t0 > deadline_s:
            timed_out = True
            break
        logp = torch.log_softmax(model.decode(tokens, enc, cache=cache).logits[:, -1].float(), dim=-1)
        live = _expand(live, logp, beam, cfg.eos_id, vocab, nodes, finished)
        if len(finished) >= beam or not live:
            break
        _reorder(cache, memory_kv, torch.as_tensor([h[3] for h in live], device=device))
        tokens = torch.as_tensor([[h[2][-1]] for h in live], device=device)
    ends = [(n, s, ids, True) for n, s, ids in finished] or [(n, s, ids, False) for n, s, ids, _ in live]
    hyps = [BeamHypothesis(ids, vocab.pieces(ids), vocab.decode(ids), s, s / length_penalty(len(ids), alpha),
                           done, n)
            for n, s, ids, done in ends]
    hyps.sort(key=lambda h: -h.normalized)
    return BeamResult(source, beam, alpha, nodes, hyps, time.perf_counter() - t0, timed_out)
