"""Knock-out: switch parts of the model off for one sentence and see what its translation needs (issue 40).

``EditedRun`` runs the model's own modules layer by layer, as ``Transformer.encode`` and ``decode`` do
(dropout off), with every part's output in reach by name (its *site*):

    ("positions", side)            the positional encoding added to the embeddings      (B, T, d_model)
    ("head", kind, layer)          each head's share of an attention sub-layer's output (B, H, T, d_model)
    ("sublayer", name, layer)      a sub-layer's output, before the residual connection (B, T, d_model)
    ("layer", stack, layer)        a layer's output: the residual stream after it       (B, T, d_model)
                                   (layer 0: the embeddings with their positions, the input to layer 1)

A head's share is head_i W^O_i + b^O / h, so the shares add up to the sub-layer's output (causal.py). An
*edit* of a site is (keep, replacement), broadcast against its output: out ← keep · out + (1 − keep) ·
replacement. A knock-out is an edit with keep = 0 at the parts switched off and replacement 0 ("zero") or the
part's own mean over the sentence's positions in the original run ("mean"); patching (patching.py) replaces a
part by another sentence's. Each batch row can change a different part, so one batched pass answers for every
head at once.

Knocking out nothing gives the model's own numbers (tests/test_knockout.py checks them against
``Transformer``).
"""
from __future__ import annotations

import time
from typing import Optional, Sequence

import torch

from ..causal import HEAD_KINDS, METHODS, SIDES, SUBLAYERS, HeadImportance, KnockOut, KnockOutResult, stack_of
from ..model.attention import MultiHeadAttention, scaled_dot_product_attention
from ..model.transformer import Transformer, causal_mask

Site = tuple
Edits = dict            # site -> (keep, replacement), tensors broadcast against the site's output
ROWS_PER_PASS = 48      # batch rows per pass (each holds T × vocabulary logits)


class EditedRun:
    """One teacher-forced (or step-by-step) run of the model with edits applied; `record` keeps every site's
    output as it was (after its own edit) in ``self.seen``."""

    def __init__(self, model: Transformer, edits: Optional[Edits] = None, record: bool = False) -> None:
        self.model, self.edits = model, edits or {}
        self.seen: Optional[dict] = {} if record else None
        self.pre = model.cfg.norm == "pre"

    def site(self, key: Site, value: torch.Tensor) -> torch.Tensor:
        edit = self.edits.get(key)
        if edit is not None:
            keep, replacement = edit
            value = keep * value + (1 - keep) * replacement
        if self.seen is not None:
            self.seen[key] = value
        return value

    def embed(self, ids: torch.Tensor, side: str) -> torch.Tensor:
        """Embedding × √d_model + positional encoding (an edited site)."""
        T, d = ids.size(1), self.model.cfg.d_model
        pe = self.model.positional.pe[:T].to(self.model.embedding.weight.dtype).expand(ids.size(0), T, d)
        return self.model.embedding(ids) * self.model.emb_scale + self.site(("positions", side), pe)

    def attention(self, attn: MultiHeadAttention, query, key_value, mask, key: Site) -> torch.Tensor:
        """MultiHead(Q, K, V) as the sum of its heads' shares (each an edited site)."""
        q = attn.split_heads(attn.w_q(query))                                        # (B, H, Tq, d_k)
        kv = attn.project_kv(key_value)                                               # (B, H, Tk, d_k)
        heads, _ = scaled_dot_product_attention(q, kv.k, kv.v, mask, 0.0, False, attn.scaled)
        # (H, d_k, d_model): W^O_i
        w_o = attn.w_o.weight.t().reshape(attn.n_heads, attn.d_k, -1)
        # (B, H, Tq, d_model)
        shares = torch.einsum("bhtk,hkd->bhtd", heads, w_o) + attn.w_o.bias / attn.n_heads
        return self.site(key, shares).sum(1)                                          # (B, Tq, d_model)

    def sublayer(self, x: torch.Tensor, norm, fn, key: Site) -> torch.Tensor:
        """residual = x; x = LayerNorm(residual + f(x)) (post-norm), or residual + f(LayerNorm(x))
        (pre-norm)."""
        residual = x
        out = self.site(key, fn(norm(x) if self.pre else x))
        return residual + out if self.pre else norm(residual + out)

    def encode(self, src: torch.Tensor) -> tuple[torch.Tensor, Optional[torch.Tensor]]:
        """The memory (B, S, d_model) and the padding mask."""
        m = self.model
        mask = m.padding_mask(src)
        x = self.site(("layer", "encoder", 0), self.embed(src, "source"))      # layer 0: the input to layer 1
        for n, layer in enumerate(m.encoder_layers, 1):
            x = self.sublayer(x, layer.norm1,
                              lambda h: self.attention(layer.self_attn, h, h, mask, ("head", "encoder", n)),
                              ("sublayer", "encoder-self", n))
            x = self.sublayer(x, layer.norm2, layer.feed_forward, ("sublayer", "encoder-ffn", n))
            x = self.site(("layer", "encoder", n), x)
        return m.encoder_norm(x), mask

    def decode(self, tgt_in: torch.Tensor, memory: torch.Tensor, src_mask,
               last_only: bool = False) -> torch.Tensor:
        """Logits (B, T, vocab) of every target position (teacher forcing on `tgt_in`); `last_only`: (B, 1,
        vocab)."""
        m = self.model
        tgt_mask = causal_mask(tgt_in.size(1), tgt_in.size(1), tgt_in.device)
        y = self.site(("layer", "decoder", 0), self.embed(tgt_in, "target"))
        if memory.size(0) != y.size(0):
            memory = memory.expand(y.size(0), -1, -1)
        for n, layer in enumerate(m.decoder_layers, 1):
            y = self.sublayer(y, layer.norm1,
                              lambda h: self.attention(layer.self_attn, h, h, tgt_mask,
                                                       ("head", "decoder", n)),
                              ("sublayer", "decoder-self", n))
            y = self.sublayer(y, layer.norm2,
                              lambda h: self.attention(layer.cross_attn, h, memory, src_mask,
                                                       ("head", "cross", n)), ("sublayer", "cross", n))
            y = self.sublayer(y, layer.norm3, layer.feed_forward, ("sublayer", "decoder-ffn", n))
            y = self.site(("layer", "decoder", n), y)
        return m.output_logits(y[:, -1:] if last_only else y)

    def __call__(self, src: torch.Tensor, tgt_in: torch.Tensor) -> torch.Tensor:
        memory, mask = self.encode(src)
        return self.decode(tgt_in, memory, mask)


def check(model: Transformer, ko: KnockOut) -> None:
    """ValueError with a message for the user when `ko` names a part this model does not have."""
    cfg = model.cfg
    layers = {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers}
    for kind, layer, head in ko.heads:
        if kind not in HEAD_KINDS:
            raise ValueError(f"Unknown attention kind {kind!r}: use one of {', '.join(HEAD_KINDS)}.")
        n = layers[stack_of(kind)]
        if not 1 <= layer <= n:
            raise ValueError(f"There is no layer {layer} of {kind} attention: it has layers 1 to {n}.")
        if not 1 <= head <= cfg.n_heads:
            raise ValueError(f"There is no head {head}: each layer has heads 1 to {cfg.n_heads}.")
    for name, layer in ko.sublayers:
        if name not in SUBLAYERS:
            raise ValueError(f"Unknown sub-layer {name!r}: use one of {', '.join(SUBLAYERS)}.")
        n = layers[stack_of(name)]
        if not 1 <= layer <= n:
            raise ValueError(f"There is no layer {layer} of the {stack_of(name)}: it has layers 1 to {n}.")
    for side in ko.positions:
        if side not in SIDES:
            raise ValueError(f"Unknown side {side!r} for the positional encoding: use source or target.")
    if ko.method not in METHODS:
        raise ValueError(f"Unknown knock-out method {ko.method!r}: use zero or mean.")


def means_of(seen: dict) -> dict:
    """Each site's mean over the sentence's positions (dimension -2), from one recorded row."""
    return {key: value.mean(-2, keepdim=True) for key, value in seen.items()}


def knockout_edits(model: Transformer, ko: KnockOut, means: Optional[dict] = None) -> Edits:
    """The edits of a knock-out for one row (`means`: the original run's, needed by "mean")."""
    H = model.cfg.n_heads
    edits: Edits = {}
    dtype = model.embedding.weight.dtype
    by_site: dict = {}
    for kind, layer, head in ko.heads:
        by_site.setdefault(("head", kind, layer), []).append(head - 1)
    for key, heads in by_site.items():
        keep = torch.ones(1, H, 1, 1, dtype=dtype, device=model.device)
        keep[0, heads] = 0
        edits[key] = (keep, 0.0 if ko.method == "zero" else means[key])
    for name, layer in ko.sublayers:
        key = ("sublayer", name, layer)
        edits[key] = (torch.zeros((), dtype=dtype, device=model.device),
                      0.0 if ko.method == "zero" else means[key])
    for side in ko.positions:
        key = ("positions", side)
        edits[key] = (torch.zeros((), dtype=dtype, device=model.device),
                      0.0 if ko.method == "zero" else means[key])
    return edits


def chosen_log_probs(logits: torch.Tensor, tgt_out: torch.Tensor) -> torch.Tensor:
    """log p(tgt_out[t]) at every position: (B, T) float64, on the CPU (the chosen logit minus the log of the
    softmax's normaliser, in float32: no (B, T, vocab) copy in float64)."""
    logits = logits.float()
    chosen = logits.gather(-1, tgt_out.expand(logits.size(0), -1)[..., None])[..., 0]
    return (chosen - torch.logsumexp(logits, -1)).double().cpu()


@torch.inference_mode()
def original_run(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int]):
    """The unedited teacher-forced run of the original translation, recorded: (src, tgt_in, tgt_out, log p,
    seen)."""
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_out = torch.as_tensor([list(tgt_ids)], device=device)
    tgt_in = torch.cat([torch.full((1, 1), model.cfg.bos_id, device=device), tgt_out[:, :-1]], 1)
    run = EditedRun(model, record=True)
    logp = chosen_log_probs(run(src, tgt_in), tgt_out)
    return src, tgt_in, tgt_out, logp[0], run.seen


@torch.inference_mode()
def greedy_edited(model: Transformer, src: torch.Tensor, edits: Edits, limit: int) -> list[int]:
    """Greedy decoding from scratch with `edits` (the decoder re-run on the whole prefix at each step)."""
    run = EditedRun(model, edits)
    memory, mask = run.encode(src)
    ys = [model.cfg.bos_id]
    for _ in range(limit):
        logits = run.decode(torch.as_tensor([ys], device=src.device), memory, mask, last_only=True)
        nxt = int(logits[0, -1].argmax())
        ys.append(nxt)
        if nxt == model.cfg.eos_id:
            break
    return ys[1:]


@torch.inference_mode()
def knock_out(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], ko: KnockOut, limit: int,
              pieces, detok) -> KnockOutResult:
    """The sentence `src_ids` (its original greedy translation `tgt_ids`, with </s>) with `ko` applied: greedy
    from scratch (at most `limit` pieces), and the original's pieces read through it. `pieces(ids)` and
    `detok(ids)`: the tokenizer's."""
    check(model, ko)
    t0 = time.perf_counter()
    src, tgt_in, tgt_out, logp, seen = original_run(model, src_ids, tgt_ids)
    edits = knockout_edits(model, ko, means_of(seen))
    logits = EditedRun(model, edits)(src, tgt_in)
    knocked = chosen_log_probs(logits, tgt_out)[0]
    top = logits[0].argmax(-1).tolist()
    new = greedy_edited(model, src, edits, limit)
    words = lambda ids: detok([i for i in ids if i != model.cfg.eos_id])   # noqa: E731
    return KnockOutResult(ko, tuple(pieces(list(tgt_ids))), words(list(tgt_ids)), tuple(pieces(new)),
                          words(new), logp.exp().numpy(), knocked.exp().numpy(), tuple(pieces(top)),
                          time.perf_counter() - t0)


def kind_layers(model: Transformer) -> dict:
    """Each attention kind's number of layers."""
    cfg = model.cfg
    return {"encoder": cfg.n_encoder_layers, "decoder": cfg.n_decoder_layers, "cross": cfg.n_decoder_layers}


def all_heads(model: Transformer) -> list[tuple[str, int, int]]:
    layers = kind_layers(model)
    return [(k, n, h) for k in HEAD_KINDS for n in range(1, layers[k] + 1)
            for h in range(1, model.cfg.n_heads + 1)]


def heads_one_per_row(model: Transformer, heads: Sequence[tuple[str, int, int]], replacement) -> Edits:
    """One batch row per head (kind, layer, head; 1-based): that head's share replaced by `replacement(site)`,
    every other head kept (patching.py builds its head map with it too)."""
    edits: Edits = {}
    for r, (kind, layer, head) in enumerate(heads):
        key = ("head", kind, layer)
        if key not in edits:
            edits[key] = (torch.ones(len(heads), model.cfg.n_heads, 1, 1, dtype=model.embedding.weight.dtype,
                                     device=model.device), replacement(key))
        edits[key][0][r, head - 1] = 0
    return edits


def row_passes(edits: Edits, rows: int):
    """Edits of `rows` batch rows taken ROWS_PER_PASS rows a pass: (rows in the pass, its edits)."""
    for start in range(0, rows, ROWS_PER_PASS):
        stop = min(rows, start + ROWS_PER_PASS)
        yield stop - start, {key: (keep[start:stop] if keep.dim() and keep.size(0) == rows else keep, repl)
                             for key, (keep, repl) in edits.items()}


@torch.inference_mode()
def head_importance(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], method: str,
                    tgt_pieces: Sequence[str]) -> HeadImportance:
    """Every head knocked out alone, one batch row each (ROWS_PER_PASS rows a pass): Δ log p of each original
    piece (teacher forcing)."""
    check(model, KnockOut(method=method))
    t0 = time.perf_counter()
    src, tgt_in, tgt_out, logp, seen = original_run(model, src_ids, tgt_ids)
    means = means_of(seen)
    heads = all_heads(model)
    edits = heads_one_per_row(model, heads, lambda key: 0.0 if method == "zero" else means[key])
    deltas = [chosen_log_probs(EditedRun(model, part)(src.expand(B, -1), tgt_in.expand(B, -1)), tgt_out)
              - logp
              for B, part in row_passes(edits, len(heads))]
    delta = torch.cat(deltas).numpy()                                                  # (heads, T)
    H, layers = model.cfg.n_heads, kind_layers(model)
    per_step, i = {}, 0
    for kind in HEAD_KINDS:
        n = layers[kind] * H
        per_step[kind] = delta[i:i + n].reshape(layers[kind], H, -1)
        i += n
    return HeadImportance(method, layers, H, per_step, tuple(tgt_pieces), logp.numpy(),
                          time.perf_counter() - t0)
