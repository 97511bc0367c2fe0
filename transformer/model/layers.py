"""The Transformer's layers (paper sections 3.1, 3.3 and 3.5).

Post-norm sub-layers, as in the paper: x = LayerNorm(x + Dropout(Sublayer(x))).
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
    """Self-attention, then feed-forward; each wrapped as LayerNorm(x + Dropout(sublayer(x)))."""

    def __init__(self, cfg: ModelConfig) -> None:
        super().__init__()
        self.self_attn = MultiHeadAttention(cfg.d_model, cfg.n_heads, cfg.dropout)
        self.feed_forward = PositionwiseFeedForward(cfg.d_model, cfg.d_ff, cfg.dropout)
        self.norm1 = nn.LayerNorm(cfg.d_model)
        self.norm2 = nn.LayerNorm(cfg.d_model)
        self.dropout = nn.Dropout(cfg.dropout)

    def forward(self, x: torch.Tensor, src_mask: Optional[torch.Tensor] = None,
                need_weights: bool = False) -> tuple[torch.Tensor, Optional[AttentionWeights]]:
        a, weights, _ = self.self_attn(x, x, mask=src_mask, need_weights=need_weights)
        x = self.norm1(x + self.dropout(a))
        x = self.norm2(x + self.dropout(self.feed_forward(x)))
        return x, weights


class DecoderLayerOutput(NamedTuple):
    x: torch.Tensor                                     # (B, T, d_model)
    self_attention: Optional[AttentionWeights]          # (B, H, T, T_past + T) when asked
    cross_attention: Optional[AttentionWeights]         # (B, H, T, S) when asked
    self_kv: KVCache                                    # keys/values of every target position so far


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

    def forward(
        self,
        x: torch.Tensor,                           # (B, T, d_model) target positions (only the new ones when decoding)
        memory: torch.Tensor,                      # (B, S, d_model) the encoder's output
        src_mask: Optional[torch.Tensor] = None,   # True at real source tokens (padding is masked)
        tgt_mask: Optional[torch.Tensor] = None,   # True where a target position may look: itself and earlier
        past_kv: Optional[KVCache] = None,         # decoding: self-attention keys/values of earlier positions
        memory_kv: Optional[KVCache] = None,       # decoding: cross-attention keys/values of the memory
        need_weights: bool = False,
    ) -> DecoderLayerOutput:
        x, self_w, self_kv = self.masked_self_attention(x, tgt_mask, past_kv, need_weights)
        a, cross_w, _ = self.cross_attn(x, memory, mask=src_mask, need_weights=need_weights, static_kv=memory_kv)
        x = self.norm2(x + self.dropout(a))
        x = self.norm3(x + self.dropout(self.feed_forward(x)))
        return DecoderLayerOutput(x, self_w, cross_w, self_kv)

    def masked_self_attention(self, x: torch.Tensor, tgt_mask: Optional[torch.Tensor] = None,
                              past_kv: Optional[KVCache] = None, need_weights: bool = False):
        """The first sub-layer, LayerNorm(x + MaskedSelfAttention(x)): what the cross-attention's queries read
        (the Vectors view calls it too). Returns it, the weights when asked, the keys/values."""
        a, w, kv = self.self_attn(x, x, mask=tgt_mask, need_weights=need_weights, cache=past_kv)
        return self.norm1(x + self.dropout(a)), w, kv
