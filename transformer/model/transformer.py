"""The Transformer encoder-decoder of "Attention Is All You Need" (Vaswani et al., 2017), figure 1.

Post-norm layers (``layers.py``), sinusoidal positional encoding, embeddings scaled by
sqrt(d_model), one vocabulary shared by source and target with the input embeddings tied to
the output projection (section 3.4). The design choices the Compare view's toy runs
change (``ModelConfig``: learned or no positions, pre-norm with a final LayerNorm after each stack, no ÷√d_k)
are switched by the config.

Attention weights are returned only when asked (``output_attentions=True``), per layer and
per head, in typed results; they are never stored on the modules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from .attention import AttentionWeights, KVCache
from .layers import DecoderLayer, EncoderLayer, positional_encoding


@dataclass
class EncoderOutput:
    memory: torch.Tensor                                 # (B, S, d_model)
    src_mask: Optional[torch.Tensor]                     # (B, 1, 1, S) True at real tokens; None: no padding
    attentions: Optional[list[AttentionWeights]] = None  # per layer: (B, H, S, S)


@dataclass
class DecoderOutput:
    # (B, T, vocab); (B, vocab) or (B, k, vocab) with logits_at
    logits: torch.Tensor
    self_attentions: Optional[list[AttentionWeights]] = None   # per layer: (B, H, T, T_total)
    cross_attentions: Optional[list[AttentionWeights]] = None  # per layer: (B, H, T, S)
    # per layer: its output (B, T, d_model), when asked
    hidden_states: Optional[list[torch.Tensor]] = None


@dataclass
class Seq2SeqOutput:
    logits: torch.Tensor
    encoder_attentions: Optional[list[AttentionWeights]] = None
    decoder_self_attentions: Optional[list[AttentionWeights]] = None
    cross_attentions: Optional[list[AttentionWeights]] = None


@dataclass
class DecoderLayerCache:
    """One decoder layer's state while decoding step by step (the KV cache)."""

    memory_kv: KVCache                # cross-attention keys/values of the encoder memory: computed once
    self_kv: Optional[KVCache] = None  # self-attention keys/values of the target so far: one more per step


@dataclass
class DecoderCache:
    """The whole decoder's state while decoding step by step."""

    layers: list[DecoderLayerCache]
    length: int = 0   # target positions decoded so far

    def keep_rows(self, rows: torch.Tensor) -> None:
        """Keep only these batch rows (sentences that finished leave a batched decoding)."""
        keep = lambda kv: None if kv is None else KVCache(kv.k[rows], kv.v[rows])   # noqa: E731
        for lc in self.layers:
            lc.memory_kv, lc.self_kv = keep(lc.memory_kv), keep(lc.self_kv)


def causal_mask(n_queries: int, n_keys: int, device=None) -> Optional[torch.Tensor]:
    """(Tq, Tk) bool, True where a target position may look: itself and the positions before it.
    The queries are the last Tq of the Tk positions. None for one new query, which may see them all."""
    if n_queries == 1:
        return None
    return torch.ones(n_queries, n_keys, dtype=torch.bool, device=device).tril(n_keys - n_queries)


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        with torch.random.fork_rng(devices=[]):   # its initial values are drawn last (reset_parameters)
            self.positional = positional_encoding(cfg)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        # Pre-norm leaves each stack's output unnormalised: one more LayerNorm closes it (post-norm: none).
        pre = cfg.norm == "pre"
        self.encoder_norm = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.decoder_norm = nn.LayerNorm(cfg.d_model) if pre else nn.Identity()
        self.emb_scale = math.sqrt(cfg.d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if name.startswith("positional."):
                # below, last: the other weights are those of the same seed's baseline
                continue
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        # Tied embedding: N(0, d^-1/2) so that embedding * sqrt(d) has unit scale.
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.cfg.d_model ** -0.5)
        with torch.no_grad():
            self.embedding.weight[self.cfg.pad_id].zero_()
        # on the scale of the sinusoids' values (at most 1), drawn aside:
        if self.cfg.positions == "learned":
            with torch.random.fork_rng(devices=[]):   # the RNG then goes on as the baseline's (dropout)
                nn.init.normal_(self.positional.embedding.weight, mean=0.0, std=0.1)

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    @property
    def device(self) -> torch.device:
        """Where the weights are (the inputs of every helper go there)."""
        return self.embedding.weight.device

    # --- pieces -------------------------------------------------------------------------
    def embed(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        """Embedding × √d_model + positional encoding (positions start at `start`): (B, T, d_model)."""
        return self.positional(self.embedding(ids) * self.emb_scale, start)

    def padding_mask(self, src: torch.Tensor) -> Optional[torch.Tensor]:
        """True at real tokens, (B, 1, 1, S); None when nothing is padded (one sentence), which lets
        attention skip the mask altogether."""
        mask = src != self.cfg.pad_id
        return None if bool(mask.all()) else mask[:, None, None, :]

    def output_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Next-piece logits of a decoder layer's output through the tied embedding: x Eᵀ, (B, T, vocab)
        (pre-norm: LayerNorm(x) Eᵀ, the stack's final LayerNorm first)."""
        return F.linear(self.decoder_norm(x), self.embedding.weight)

    # --- encoder and decoder ----------------------------------------------------------------
    def encode(self, src: torch.Tensor, output_attentions: bool = False,
               embedded: Optional[torch.Tensor] = None) -> EncoderOutput:
        """`embedded`: the input to layer 1 when the caller computed it (attribution differentiates
        through it); otherwise ``embed(src)``."""
        src_mask = self.padding_mask(src)
        x = self.embed(src) if embedded is None else embedded
        attentions = [] if output_attentions else None
        for layer in self.encoder_layers:
            x, w = layer(x, src_mask, need_weights=output_attentions)
            if output_attentions:
                attentions.append(w)
        return EncoderOutput(memory=self.encoder_norm(x), src_mask=src_mask, attentions=attentions)

    def new_cache(self, enc: EncoderOutput) -> DecoderCache:
        """An empty KV cache; the cross-attention keys/values of the memory are projected once, here."""
        return DecoderCache([DecoderLayerCache(layer.cross_attn.project_kv(enc.memory))
                             for layer in self.decoder_layers])

    def decode(
        self,
        tgt: torch.Tensor,                     # (B, T) decoder input ids (<s> y1 y2 ...)
        enc: EncoderOutput,
        cache: Optional[DecoderCache] = None,  # given: tgt holds only the new position(s), the cache the rest
        output_attentions: bool = False,
        output_hidden_states: bool = False,    # each layer's output (the logit lens reads them)
        logits_at: Optional[torch.Tensor] = None,   # (B,) or (B, k) positions per row: only their logits
    ) -> DecoderOutput:
        start = cache.length if cache is not None else 0
        x = self.embed(tgt, start)
        tgt_mask = causal_mask(tgt.size(1), start + tgt.size(1), tgt.device)
        self_ws = [] if output_attentions else None
        cross_ws = [] if output_attentions else None
        hidden = [] if output_hidden_states else None
        layer_caches = cache.layers if cache is not None else [None] * len(self.decoder_layers)
        for layer, lc in zip(self.decoder_layers, layer_caches):
            past_kv, memory_kv = (lc.self_kv, lc.memory_kv) if lc is not None else (None, None)
            out = layer(x, enc.memory, enc.src_mask, tgt_mask, past_kv, memory_kv,
                        need_weights=output_attentions)
            x = out.x
            if output_hidden_states:
                hidden.append(x)
            if lc is not None:
                lc.self_kv = out.self_kv
            if output_attentions:
                self_ws.append(out.self_attention)
                cross_ws.append(out.cross_attention)
        if cache is not None:
            cache.length += tgt.size(1)
        # attribution needs a few positions a row: skip the others' vocab
        if logits_at is not None:
            rows = torch.arange(x.size(0), device=x.device)
            # (B, d_model) or (B, k, d_model)
            x = x[rows if logits_at.dim() == 1 else rows[:, None], logits_at]
        return DecoderOutput(self.output_logits(x), self_ws, cross_ws, hidden)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, output_attentions: bool = False) -> Seq2SeqOutput:
        """Teacher forcing (training): every target position at once, each seeing only earlier ones."""
        enc = self.encode(src, output_attentions)
        dec = self.decode(tgt, enc, output_attentions=output_attentions)
        return Seq2SeqOutput(dec.logits, enc.attentions, dec.self_attentions, dec.cross_attentions)
