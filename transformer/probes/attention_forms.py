"""Three ways to compute one multi-head attention sub-layer, with a model's own weights (the app's
"Three ways to compute attention" panel and bench/attention_forms.py compare them; tests check they agree).

- ``per_head_loop``: the paper's equations as written, one head at a time:
  head_i = softmax(Q W_i^Q (K W_i^K)ᵀ / √d_k) V W_i^V, then Concat(head_1, ..., head_h) W^O.
- ``batched``: every head at once, as one (B, H, T, d_k) tensor and explicit matrix products
  (what ``MultiHeadAttention`` does when the weights are asked for).
- ``fused``: the same batched tensors through PyTorch's ``F.scaled_dot_product_attention``, a fused
  kernel that never keeps the (Tq, Tk) matrix (what the model runs when no weights are asked for).

Each takes the attention module (its W^Q, W^K, W^V, W^O, and whether it divides by √d_k: ``mha.scaled``, False
in the no-scaling variant), the queries' and the keys' inputs (B, T, d_model) and a boolean mask broadcastable
to (B, H, Tq, Tk) (True = may attend), and returns (B, Tq, d_model).
"""
from __future__ import annotations

import math
import statistics
import time
from typing import Optional

import torch
import torch.nn.functional as F

from ..model.attention import MultiHeadAttention


def per_head_loop(mha: MultiHeadAttention, query: torch.Tensor, key_value: torch.Tensor,
                  mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    d_k, heads = mha.d_k, []
    scale = 1 / math.sqrt(d_k) if mha.scaled else 1.0
    # one head's (B, Tq, Tk) or (Tq, Tk)
    head_mask = mask[:, 0] if mask is not None and mask.dim() == 4 else mask
    for i in range(mha.n_heads):
        cols = slice(i * d_k, (i + 1) * d_k)                             # head i's columns of W^Q, W^K, W^V
        q = query @ mha.w_q.weight[cols].T + mha.w_q.bias[cols]          # (B, Tq, d_k)
        k = key_value @ mha.w_k.weight[cols].T + mha.w_k.bias[cols]      # (B, Tk, d_k)
        v = key_value @ mha.w_v.weight[cols].T + mha.w_v.bias[cols]      # (B, Tk, d_k)
        scores = q @ k.transpose(-2, -1) * scale                         # (B, Tq, Tk): ÷√d_k, or not
        if mask is not None:
            scores = scores.masked_fill(~head_mask, float("-inf"))
        heads.append(torch.softmax(scores, dim=-1) @ v)                  # (B, Tq, d_k)
    return mha.w_o(torch.cat(heads, dim=-1))                             # Concat(head_1..h) W^O


def batched(mha: MultiHeadAttention, query: torch.Tensor, key_value: torch.Tensor,
            mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    q = mha.split_heads(mha.w_q(query))                                  # (B, H, Tq, d_k)
    k, v = mha.split_heads(mha.w_k(key_value)), mha.split_heads(mha.w_v(key_value))   # (B, H, Tk, d_k)
    scores = q @ k.transpose(-2, -1) * (1 / math.sqrt(mha.d_k) if mha.scaled else 1.0)   # (B, H, Tq, Tk)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    return mha.w_o(mha.merge_heads(torch.softmax(scores, dim=-1) @ v))   # (B, Tq, d_model)


def fused(mha: MultiHeadAttention, query: torch.Tensor, key_value: torch.Tensor,
          mask: Optional[torch.Tensor] = None) -> torch.Tensor:
    q = mha.split_heads(mha.w_q(query))
    k, v = mha.split_heads(mha.w_k(key_value)), mha.split_heads(mha.w_v(key_value))
    scale = None if mha.scaled else 1.0                                   # None: PyTorch's own 1/√d_k
    return mha.w_o(mha.merge_heads(F.scaled_dot_product_attention(q, k, v, attn_mask=mask, scale=scale)))


FORMS = {"per-head loop": per_head_loop, "batched": batched, "fused (PyTorch SDPA)": fused}


@torch.inference_mode()
def compare(mha: MultiHeadAttention, query: torch.Tensor, key_value: torch.Tensor,
            mask: Optional[torch.Tensor] = None, repeats: int = 15) -> dict:
    """Each form's output and its median time over `repeats` runs, interleaved (form 1, 2, 3, 1, 2, 3, ...: a
    noisy machine slows all three alike), and its largest difference from the batched form."""
    outs, times = {}, {name: [] for name in FORMS}
    for _ in range(max(1, repeats)):
        for name, form in FORMS.items():
            t0 = time.perf_counter()
            outs[name] = form(mha, query, key_value, mask)
            times[name].append(time.perf_counter() - t0)
    ref = outs["batched"]
    return {name: dict(seconds=statistics.median(times[name]), max_diff=float((outs[name] - ref).abs().max()),
                       output=outs[name]) for name in FORMS}
