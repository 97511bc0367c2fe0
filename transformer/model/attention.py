"""Multi-head scaled dot-product attention (paper section 3.2).

The fast path calls ``F.scaled_dot_product_attention``. Only when the caller asks
(``need_weights=True``) is attention computed step by step, so that the softmax
probabilities and the scaled scores of every head can be returned. Nothing is ever
stored on the module: results travel in the return value, so one shared model can
serve many users at once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class AttentionWeights:
    """What one attention sub-layer looked at, for every head."""

    probs: torch.Tensor   # (B, H, Tq, Tk) softmax(QK^T / sqrt(d_k)) after masking; masked = 0
    scores: torch.Tensor  # (B, H, Tq, Tk) QK^T / sqrt(d_k) before masking and softmax


@dataclass
class KVCache:
    """Keys and values of one attention sub-layer kept between decoding steps."""

    k: torch.Tensor  # (B, H, T, d_head)
    v: torch.Tensor  # (B, H, T, d_head)


def scaled_dot_product_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: Optional[torch.Tensor] = None,
    dropout_p: float = 0.0,
    training: bool = False,
) -> tuple[torch.Tensor, AttentionWeights]:
    """Attention(Q, K, V) = softmax(QK^T / sqrt(d_k)) V, written out so its parts can be seen.

    mask: boolean, broadcastable to (B, H, Tq, Tk); True where a query may attend.
    """
    d_k = q.size(-1)
    scores = q @ k.transpose(-2, -1) / math.sqrt(d_k)                  # (B, H, Tq, Tk)
    masked = scores if mask is None else scores.masked_fill(~mask, float("-inf"))
    probs = torch.softmax(masked.float(), dim=-1).to(q.dtype)
    probs = torch.nan_to_num(probs, nan=0.0)  # a query with every key masked attends nowhere
    out = F.dropout(probs, p=dropout_p, training=training) @ v          # (B, H, Tq, d_head)
    return out, AttentionWeights(probs=probs, scores=scores)


def derived(module: nn.Module, name: str, params: tuple[torch.Tensor, ...], build: Callable[[], Any]) -> Any:
    """A read-only value derived from `params` for inference (e.g. a transposed weight), kept on
    `module` and rebuilt whenever one of them changes (in place, replaced, or moved). It is the same
    for every caller: per-request results never live on modules."""
    key = tuple((p.data_ptr(), p._version, p.dtype, p.device) for p in params)
    cached = module.__dict__.get(name)
    if cached is None or cached[0] != key:
        with torch.no_grad():
            cached = (key, build())
        module.__dict__[name] = cached
    return cached[1]


def column_major(w: torch.Tensor) -> torch.Tensor:
    """The same (out, in) matrix stored column by column, i.e. W^T contiguous: F.linear then reads
    it row by row, which for one decoding position (a matrix-vector product whose weights are not
    in cache) MKL does about twice as fast here as the usual layout (bench/RESULTS.md)."""
    return w.t().contiguous().t()


def linear(x: torch.Tensor, layer: nn.Linear) -> torch.Tensor:
    """layer(x); at inference on CPU through a column-major copy of the weight (same numbers)."""
    if torch.is_grad_enabled() or x.device.type != "cpu":
        return layer(x)
    return F.linear(x, derived(layer, "_w_cm", (layer.weight,), lambda: column_major(layer.weight)), layer.bias)


class MultiHeadAttention(nn.Module):
    """MultiHead(Q, K, V) = Concat(head_1, ..., head_h) W^O, head_i = Attention(Q W_i^Q, K W_i^K, V W_i^V)."""

    def __init__(self, d_model: int, n_heads: int, dropout: float = 0.0) -> None:
        super().__init__()
        assert d_model % n_heads == 0, "d_model must be divisible by n_heads"
        self.n_heads = n_heads
        self.d_head = d_model // n_heads
        self.dropout = dropout
        self.w_q = nn.Linear(d_model, d_model)
        self.w_k = nn.Linear(d_model, d_model)
        self.w_v = nn.Linear(d_model, d_model)
        self.w_o = nn.Linear(d_model, d_model)

    def fused_qkv(self) -> tuple[torch.Tensor, torch.Tensor]:
        """[W_q; W_k; W_v] (column-major) and their biases, for inference: one product instead of three."""
        params = (self.w_q.weight, self.w_k.weight, self.w_v.weight, self.w_q.bias, self.w_k.bias, self.w_v.bias)
        return derived(self, "_qkv", params, lambda: (column_major(torch.cat(params[:3])), torch.cat(params[3:])))

    def split_heads(self, x: torch.Tensor) -> torch.Tensor:
        B, T, _ = x.shape
        return x.view(B, T, self.n_heads, self.d_head).transpose(1, 2)    # (B, H, T, d_head)

    def project_kv(self, x: torch.Tensor) -> KVCache:
        """Keys and values of x, in heads; used to precompute cross-attention memory once."""
        return KVCache(self.split_heads(linear(x, self.w_k)), self.split_heads(linear(x, self.w_v)))

    def forward(
        self,
        query: torch.Tensor,                 # (B, Tq, d_model)
        key_value: Optional[torch.Tensor],   # (B, Tk, d_model); None when `static_kv` is given
        mask: Optional[torch.Tensor] = None, # bool, broadcastable to (B, H, Tq, Tk); True = attend
        causal: bool = False,                # add the "no looking ahead" mask (training, full decode)
        need_weights: bool = False,
        cache: Optional[KVCache] = None,     # self-attention: past keys/values, new ones are appended
        static_kv: Optional[KVCache] = None, # cross-attention: keys/values of the encoder memory
    ) -> tuple[torch.Tensor, Optional[AttentionWeights], Optional[KVCache]]:
        B, Tq, _ = query.shape
        q = None
        if static_kv is not None:
            k, v = static_kv.k, static_kv.v
        elif key_value is query and not torch.is_grad_enabled():
            w, b = self.fused_qkv()                                       # self-attention, inference
            qkv = F.linear(query, w, b).view(B, Tq, 3, self.n_heads, self.d_head)
            q, k, v = qkv.permute(2, 0, 3, 1, 4).unbind(0)               # each (B, H, Tq, d_head)
            if cache is not None:
                k = torch.cat([cache.k, k], dim=2)
                v = torch.cat([cache.v, v], dim=2)
        else:
            kv = self.project_kv(key_value)
            k, v = kv.k, kv.v
            if cache is not None:
                k = torch.cat([cache.k, k], dim=2)                        # (B, H, T_past + Tq, d_head)
                v = torch.cat([cache.v, v], dim=2)
        if q is None:
            q = self.split_heads(linear(query, self.w_q))                 # (B, H, Tq, d_head)
        new_cache = KVCache(k, v) if static_kv is None else None
        Tk = k.size(2)

        if causal and Tq > 1:  # a single new query (cached decoding) may see every key so far
            # query i (at absolute position Tk - Tq + i) sees keys 0 .. Tk - Tq + i
            causal_mask = torch.ones(Tq, Tk, dtype=torch.bool, device=q.device).tril(Tk - Tq)
            mask = causal_mask if mask is None else mask & causal_mask

        dropout_p = self.dropout if self.training else 0.0
        weights = None
        if need_weights:
            out, weights = scaled_dot_product_attention(q, k, v, mask, dropout_p, self.training)
        elif causal and mask is not None and Tq == Tk and mask.dim() == 2:
            out = F.scaled_dot_product_attention(q, k, v, is_causal=True, dropout_p=dropout_p)
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=mask, dropout_p=dropout_p)
        out = out.transpose(1, 2).reshape(B, Tq, -1)                      # (B, Tq, d_model)
        return linear(out, self.w_o), weights, new_cache
