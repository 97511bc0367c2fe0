"""The Transformer's layers (paper sections 3.1, 3.3 and 3.5).

Post-norm sub-layers, as in the paper: x = LayerNorm(x + Dropout(Sublayer(x))). Two of the design
choices the Compare view's toy runs change (``config.ModelConfig``) live here too: pre-norm sub-layers,
x = x + Dropout(Sublayer(LayerNorm(x))), and learned positional embeddings.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch
import torch.nn.functional as F
from torch import nn

from ..config import ModelConfig
from ..positional import sinusoidal_encoding
from .attention import AttentionWeights, KVCache, MultiHeadAttention


class PositionalEncoding(nn.Module):
    """Adds the fixed sinusoidal position signal (``transformer/positional.py``) to the scaled
    embeddings, then dropout."""

    def __init__(self, d_model: int, max_len: int, dropout: float) -> None:
        super().__init__()
        pe = torch.from_numpy(sinusoidal_encoding(max_len, d_model)).float()      # (max_len, d_model)
        self.register_buffer("pe", pe, persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:          # x: (B, T, d_model)
        T = x.size(1)
        if start + T > self.pe.size(0):
            raise ValueError(f"sequence of {start + T} positions exceeds max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[start : start + T].to(x.dtype))


class LearnedPositionalEmbedding(nn.Module):
    """The alternative of section 3.5 ("we also experimented with using learned positional embeddings"):
    one trained vector per position, added to the scaled embeddings, then dropout. A position no training
    sentence reached keeps its random initial vector."""

    def __init__(self, d_model: int, max_len: int, dropout: float) -> None:
        super().__init__()
        self.embedding = nn.Embedding(max_len, d_model)
        self.dropout = nn.Dropout(dropout)

    @property
    def pe(self) -> torch.Tensor:                                                  # (max_len, d_model)
        return self.embedding.weight

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:          # x: (B, T, d_model)
        T = x.size(1)
        if start + T > self.pe.size(0):
            raise ValueError(f"sequence of {start + T} positions exceeds max_len={self.pe.size(0)}")
        return self.dropout(x + self.pe[start : start + T].to(x.dtype))


class NoPositions(nn.Module):
    """No position signal at all (not in the paper; the toy tasks show why it is needed): the embeddings, then
    dropout. Self-attention then sees the sentence as a bag of pieces."""

    def __init__(self, d_model: int, max_len: int, dropout: float) -> None:
        super().__init__()
        self.register_buffer("pe", torch.zeros(max_len, d_model), persistent=False)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor, start: int = 0) -> torch.Tensor:          # x: (B, T, d_model)
        return self.dropout(x)


def positional_encoding(cfg: ModelConfig) -> nn.Module:
    """The config's choice: the paper's fixed sinusoids, learned positional embeddings, or none."""
    kind = {"sinusoidal": PositionalEncoding, "learned": LearnedPositionalEmbedding, "none": NoPositions}
    return kind[cfg.positions](cfg.d_model, cfg.max_len, cfg.dropout)


def residual(x: torch.Tensor, norm: nn.LayerNorm, pre: bool, sublayer, dropout: nn.Module):
    """One sub-layer with its residual connection: LayerNorm(x + Dropout(f(x))) (post-norm, the paper's) or
    x + Dropout(f(LayerNorm(x))) (pre-norm). `sublayer(h)` returns its output and anything else
    (weights, keys/values), which is passed on after the new x."""
    out, *rest = sublayer(norm(x) if pre else x)
    y = x + dropout(out)
    return (y if pre else norm(y)), *rest


class PositionwiseFeedForward(nn.Module):
    """FFN(x) = max(0, x W_1 + b_1) W_2 + b_2."""

    def __init__(self, d_model: int, d_ff: int, dropout: float) -> None:
        super().__init__()
        self.w_1 = nn.Linear(d_model, d_ff)
        self.w_2 = nn.Linear(d_ff, d_model)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.w_2(self.dropout(F.relu(self.w_1(x))))


class EncoderLayer(nn.Module):
    """Self-attention, then feed-forward; each wrapped as LayerNorm(x + Dropout(sublayer(x)))
    (``residual``)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.scale_scores)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, src_mask: Optional[torch.Tensor] = None,
                need_weights: bool = False) -> tuple[torch.Tensor, Optional[AttentionWeights]]:
        x, weights, _ = residual(x, self.norm1, self.pre_norm,
                                 lambda h: self.self_attn(h, h, mask=src_mask, need_weights=need_weights),
                                 self.dropout)
        x, = residual(x, self.norm2, self.pre_norm, lambda h: (self.feed_forward(h),), self.dropout)
        return x, weights


class DecoderLayerOutput(NamedTuple):
    x: torch.Tensor                                     # (B, T, d_model)
    self_attention: Optional[AttentionWeights]          # (B, H, T, T_past + T) when asked
    cross_attention: Optional[AttentionWeights]         # (B, H, T, S) when asked
    self_kv: KVCache                                    # keys/values of every target position so far


class DecoderLayer(nn.Module):
    """Masked self-attention, cross-attention over the encoder memory, feed-forward (each through
    ``residual``)."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.pre_norm = cfg.norm == "pre"
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.scale_scores)
        self.cross_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout, cfg.scale_scores)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.norm3 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(
        self,
        # (B, T, d_model) target positions (only the new ones when decoding)
        x: torch.Tensor,
        memory: torch.Tensor,                      # (B, S, d_model) the encoder's output
        src_mask: Optional[torch.Tensor] = None,   # True at real source tokens (padding is masked)
        tgt_mask: Optional[torch.Tensor] = None,   # True where a target position may look: itself and earlier
        past_kv: Optional[KVCache] = None,         # decoding: self-attention keys/values of earlier positions
        memory_kv: Optional[KVCache] = None,       # decoding: cross-attention keys/values of the memory
        need_weights: bool = False,
    ) -> DecoderLayerOutput:
        x, self_w, self_kv = self.masked_self_attention(x, tgt_mask, past_kv, need_weights)
        x, cross_w, _ = residual(x, self.norm2, self.pre_norm, lambda h: self.cross_attn(
            h, memory, mask=src_mask, need_weights=need_weights, static_kv=memory_kv), self.dropout)
        x, = residual(x, self.norm3, self.pre_norm, lambda h: (self.feed_forward(h),), self.dropout)
        return DecoderLayerOutput(x, self_w, cross_w, self_kv)

    def masked_self_attention(self, x: torch.Tensor, tgt_mask: Optional[torch.Tensor] = None,
                              past_kv: Optional[KVCache] = None, need_weights: bool = False):
        """The first sub-layer, LayerNorm(x + MaskedSelfAttention(x)) (post-norm: what the cross-attention
        reads; the Vectors view calls it too), or x + MaskedSelfAttention(LayerNorm(x)) (pre-norm). Returns
        it, the weights when asked, the keys/values."""
        return residual(x, self.norm1, self.pre_norm,
                        lambda h: self.self_attn(h, h, mask=tgt_mask, need_weights=need_weights,
                                                 cache=past_kv),
                        self.dropout)
