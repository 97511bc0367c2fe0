"""The Transformer encoder-decoder of "Attention Is All You Need" (Vaswani et al., 2017).

Post-norm layers (x = LayerNorm(x + Dropout(Sublayer(x)))), sinusoidal positional
encoding, embeddings scaled by sqrt(d_model), one vocabulary shared by source and
target with the input embeddings tied to the output projection.

Attention weights are returned only when asked (``output_attentions=True``), per
layer and per head, in typed results; they are never stored on the modules.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from .attention import AttentionWeights, KVCache, MultiHeadAttention, column_major, derived, linear


def sinusoidal_encoding(max_len: int, d_model: int) -> torch.Tensor:
    """PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model))."""
    pos = torch.arange(max_len, dtype=torch.float64).unsqueeze(1)             # (T, 1)
    div = torch.pow(10000.0, torch.arange(0, d_model, 2, dtype=torch.float64) / d_model)
    pe = torch.zeros(max_len, d_model, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos / div)
    pe[:, 1::2] = torch.cos(pos / div[: d_model // 2])
    return pe.float()                                                          # (T, d_model)


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal position signal to the (scaled) embeddings, then dropout."""

    def __init__(self, d_model: int, max_len: int, dropout: float) -> None:
        super().__init__()
        self.register_buffer("pe", sinusoidal_encoding(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:       # x: (B, T, d_model)
        T = x.size(1)
        if start + T > self.pe.size(0):
            raise ValueError(f"sequence of {start + T} positions exceeds max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[start : start + T].to(x.dtype))


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return linear(self.dropout(F.relu(linear(x, self.w_1))), self.w_2)


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward; each wrapped as LayerNorm(x + Dropout(sublayer(x)))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, src_mask=None, need_weights=False):
        a, weights, _ = self.self_attn(x, x, mask=src_mask, need_weights=need_weights)
        x = self.norm1(x + self.dropout(a))
        x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x, weights


@dataclass
class DecoderLayerCache:
    """Per-layer decoding state: self-attention keys/values grow by one per step;
    cross-attention keys/values of the encoder memory are computed once."""

    self_kv: Optional[KVCache] = None
    cross_kv: Optional[KVCache] = None


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward (all post-norm)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.norm3 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x, memory, src_mask=None, tgt_mask=None, cache: Optional[DecoderLayerCache] = None,
                need_weights=False):
        past = cache.self_kv if cache is not None else None
        a, self_w, new_kv = self.self_attn(x, x, mask=tgt_mask, causal=True, need_weights=need_weights, cache=past)
        x = self.norm1(x + self.dropout(a))
        cross_kv = cache.cross_kv if cache is not None else None
        a, cross_w, _ = self.cross_attn(x, memory, mask=src_mask, need_weights=need_weights, static_kv=cross_kv)
        x = self.norm2(x + self.dropout(a))
        x = self.norm3(x + self.dropout(self.feed_forward(x)))
        if cache is not None:
            cache.self_kv = new_kv
        return x, self_w, cross_w


@dataclass
class EncoderOutput:
    memory: torch.Tensor                               # (B, S, d_model)
    src_mask: Optional[torch.Tensor]                   # (B, 1, 1, S) True at real tokens; None: no padding
    attentions: Optional[list[AttentionWeights]] = None  # per layer: (B, H, S, S)


@dataclass
class DecoderOutput:
    logits: torch.Tensor                                       # (B, T, vocab)
    self_attentions: Optional[list[AttentionWeights]] = None   # per layer: (B, H, T, T_total)
    cross_attentions: Optional[list[AttentionWeights]] = None  # per layer: (B, H, T, S)


@dataclass
class Seq2SeqOutput:
    logits: torch.Tensor
    encoder_attentions: Optional[list[AttentionWeights]] = None
    decoder_self_attentions: Optional[list[AttentionWeights]] = None
    cross_attentions: Optional[list[AttentionWeights]] = None


@dataclass
class DecoderCache:
    """The whole decoder's state during incremental (step by step) decoding."""

    layers: list[DecoderLayerCache] = field(default_factory=list)
    length: int = 0   # positions decoded so far


class Transformer(nn.Module):
    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.cfg = cfg
        self.embedding = nn.Embedding(cfg.vocab_size, cfg.d_model, padding_idx=cfg.pad_id)
        self.positional = PositionalEncoding(cfg.d_model, cfg.max_len, cfg.dropout)
        self.encoder_layers = nn.ModuleList(EncoderLayer(cfg) for _ in range(cfg.n_encoder_layers))
        self.decoder_layers = nn.ModuleList(DecoderLayer(cfg) for _ in range(cfg.n_decoder_layers))
        self.emb_scale = math.sqrt(cfg.d_model)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        for name, p in self.named_parameters():
            if p.dim() > 1:
                nn.init.xavier_uniform_(p)
            elif name.endswith("bias"):
                nn.init.zeros_(p)
        # Tied embedding: N(0, d^-1/2) so that embedding * sqrt(d) has unit scale.
        nn.init.normal_(self.embedding.weight, mean=0.0, std=self.cfg.d_model ** -0.5)
        with torch.no_grad():
            self.embedding.weight[self.cfg.pad_id].zero_()

    def num_parameters(self) -> int:
        return sum(p.numel() for p in self.parameters())

    # --- pieces -------------------------------------------------------------------------
    def embed(self, ids: torch.Tensor, start: int = 0) -> torch.Tensor:
        return self.positional(self.embedding(ids) * self.emb_scale, start)    # (B, T, d_model)

    def padding_mask(self, src: torch.Tensor) -> Optional[torch.Tensor]:
        """True at real tokens, (B, 1, 1, S); None when nothing is padded (one sentence), which lets
        attention skip the mask altogether."""
        mask = src != self.cfg.pad_id
        return None if bool(mask.all()) else mask[:, None, None, :]

    def encode(self, src: torch.Tensor, output_attentions: bool = False) -> EncoderOutput:
        src_mask = self.padding_mask(src)
        x = self.embed(src)
        attentions = [] if output_attentions else None
        for layer in self.encoder_layers:
            x, w = layer(x, src_mask, need_weights=output_attentions)
            if output_attentions:
                attentions.append(w)
        return EncoderOutput(memory=x, src_mask=src_mask, attentions=attentions)

    def output_logits(self, x: torch.Tensor) -> torch.Tensor:
        """Logits through the tied embedding (B, T, vocab). At inference on CPU through a column-major
        copy (see attention.linear): for one decoding position this 8000 x 256 product is the largest
        single cost of a step."""
        w = self.embedding.weight
        if not torch.is_grad_enabled() and x.device.type == "cpu":
            w = derived(self, "_out_cm", (w,), lambda: column_major(self.embedding.weight))
        return F.linear(x, w)

    def decode(
        self,
        tgt: torch.Tensor,                    # (B, T) decoder input ids (BOS y1 y2 ...)
        enc: EncoderOutput,
        cache: Optional[DecoderCache] = None,  # given: tgt holds only the new position(s)
        output_attentions: bool = False,
    ) -> DecoderOutput:
        start = cache.length if cache is not None else 0
        x = self.embed(tgt, start)
        self_ws = [] if output_attentions else None
        cross_ws = [] if output_attentions else None
        for i, layer in enumerate(self.decoder_layers):
            layer_cache = cache.layers[i] if cache is not None else None
            x, sw, cw = layer(x, enc.memory, enc.src_mask, cache=layer_cache, need_weights=output_attentions)
            if output_attentions:
                self_ws.append(sw)
                cross_ws.append(cw)
        if cache is not None:
            cache.length += tgt.size(1)
        return DecoderOutput(self.output_logits(x), self_ws, cross_ws)

    def new_cache(self, enc: EncoderOutput) -> DecoderCache:
        """Cross-attention keys/values of the memory are projected once, here."""
        layers = [DecoderLayerCache(cross_kv=layer.cross_attn.project_kv(enc.memory)) for layer in self.decoder_layers]
        return DecoderCache(layers=layers)

    def forward(self, src: torch.Tensor, tgt: torch.Tensor, output_attentions: bool = False) -> Seq2SeqOutput:
        enc = self.encode(src, output_attentions)
        dec = self.decode(tgt, enc, output_attentions=output_attentions)
        return Seq2SeqOutput(dec.logits, enc.attentions, dec.self_attentions, dec.cross_attentions)
