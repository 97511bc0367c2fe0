"""Multi-head scaled dot-product attention (paper section 3.2).

    Attention(Q, K, V) = softmax(Q Kᵀ / √d_k) V                                   (equation 1)
    MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O,  head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)

The attention weights (softmax probabilities and scaled scores of every head) are computed and
returned only when the caller asks (``need_weights=True``), in the return value: nothing is
ever stored on the module, so one shared model can serve many users at once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class AttentionWeights:
    """What one attention sub-layer looked at, for every head."""

    probs: torch.Tensor   # (B, H, Tq, Tk) softmax(QKᵀ / √d_k) after masking; masked = 0
    scores: torch.Tensor  # (B, H, Tq, Tk) QKᵀ / √d_k (QKᵀ without scaling) before masking and softmax


@dataclass
class KVCache:
    """Keys and values of one attention sub-layer, split into heads, kept between decoding steps."""

    k: torch.Tensor  # (B, H, T, d_k)
    v: torch.Tensor  # (B, H, T, d_k)


def scaled_dot_product_attention(
    q: torch.Tensor,                       # (B, H, Tq, d_k)
    k: torch.Tensor,                       # (B, H, Tk, d_k)
    v: torch.Tensor,                       # (B, H, Tk, d_k)
    mask: Optional[torch.Tensor] = None,   # bool, broadcastable to (B, H, Tq, Tk); True = may attend
    dropout_p: float = 0.0,
    need_weights: bool = False,
    scaled: bool = True,
) -> tuple[torch.Tensor, Optional[AttentionWeights]]:
    """Attention(Q, K, V) = softmax(QKᵀ / √d_k) V: the output (B, H, Tq, d_k) and, when asked, the weights.
    `scaled=False` leaves out the ÷√d_k (the "no scaling" variant: softmax(QKᵀ) V).

    Without weights to return, PyTorch's fused kernel computes this same formula without keeping
    the (Tq, Tk) matrices (twice as fast in training; tests/test_model.py checks both agree)."""
    if not need_weights:
        scale = None if scaled else 1.0                                  # None: PyTorch's own 1/√d_k
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p, scale=scale), None
    scores = q @ k.transpose(-2, -1)                                     # (B, H, Tq, Tk)
    if scaled:
        scores = scores / math.sqrt(q.size(-1))
    masked = scores if mask is None else scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(masked.float(), dim=-1).to(q.dtype)
    probs = torch.nan_to_num(probs, nan=0.0)  # a query with every key masked attends nowhere
    out = F.dropout(probs, p=dropout_p, training=dropout_p > 0) @ v     # (B, H, Tq, d_k)
    return out, AttentionWeights(probs=probs, scores=scores)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V).

    W^Q, W^K, W^V hold the projections of all h heads side by side (h × d_k = d_model columns)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0, scaled: bool = True) -> None:
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = n_heads
        self.d_k = d_model // n_heads
        self.dropout = dropout
        self.scaled = scaled
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_k).transpose(1, 2)    # (B, H, T, d_k)

    @staticmethod
    def merge_heads(x: torch.Tensor) -> torch.Tensor:                     # Concat(head_1, ..., head_h)
        B, H, T, d_k = x.shape
        return x.transpose(1, 2).reshape(B, T, H * d_k)                   # (B, T, d_model)

    def project_kv(self, x: torch.Tensor) -> KVCache:
        """K = x W^K and V = x W^V, in heads (cross-attention computes these once per sentence)."""
        return KVCache(self.split_heads(self.w_k(x)), self.split_heads(self.w_v(x)))

    # self-attention while decoding: keys/values of earlier positions cross-attention while decoding:
    # keys/values of the memory
    def forward(
        self,
        query: torch.Tensor,                  # (B, Tq, d_model)
        key_value: Optional[torch.Tensor],    # (B, Tk, d_model) attended to; None when static_kv is given
        mask: Optional[torch.Tensor] = None,  # bool, broadcastable to (B, H, Tq, Tk); True = may attend
        need_weights: bool = False,
        cache: Optional[KVCache] = None,
        static_kv: Optional[KVCache] = None,
    ) -> tuple[torch.Tensor, Optional[AttentionWeights], KVCache]:
        """Returns the output (B, Tq, d_model), the weights when asked, and every key and value
        attended to (the cache's followed by this call's: the next step's cache)."""
        q = self.split_heads(self.w_q(query))
        kv = static_kv if static_kv is not None else self.project_kv(key_value)
        if cache is not None:
            kv = KVCache(torch.cat([cache.k, kv.k], dim=2), torch.cat([cache.v, kv.v], dim=2))
        dropout_p = self.dropout if self.training else 0.0
        heads, weights = scaled_dot_product_attention(q, kv.k, kv.v, mask, dropout_p, need_weights,
                                                      self.scaled)
        return self.w_o(self.merge_heads(heads)), weights, kv
