"""The vectors behind one attention score, read from the model's own modules (BertViz's neuron view).

``head_vectors``: the query and key vectors q_i = x_i W^Q_h and k_j = x_j W^K_h of one head, by
running the model's layers below it (teacher forcing on the translation); q_i · k_j / √d_k is
the score the trace holds. ``input_parts``: embedding × √d_model and the positional encoding.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..trace import AttentionKind
from ..why import HeadVectors, InputParts
from ..model.transformer import Transformer, causal_mask


def layer_inputs(model: Transformer, src: torch.Tensor, tgt_in: torch.Tensor, kind: AttentionKind,
                 layer: int):
    """The attention module of (kind, layer) and the inputs of its queries and keys (of the paper's post-norm
    layers: a pre-norm layer's attention reads LayerNorm(x) instead)."""
    if model.cfg.norm != "post":
        raise ValueError("the Vectors view follows the paper's post-norm layers; this model is pre-norm")
    enc = model.encode(src)
    if kind == "encoder":
        x = model.embed(src)
        for lay in model.encoder_layers[: layer - 1]:
            x, _ = lay(x, enc.src_mask)
        return model.encoder_layers[layer - 1].self_attn, x, x
    y, mask = model.embed(tgt_in), causal_mask(tgt_in.size(1), tgt_in.size(1), tgt_in.device)
    for lay in model.decoder_layers[: layer - 1]:
        y = lay(y, enc.memory, enc.src_mask, mask).x
    lay = model.decoder_layers[layer - 1]
    if kind == "decoder":
        return lay.self_attn, y, y
    # queries: the first sub-layer's output
    return lay.cross_attn, lay.masked_self_attention(y, mask)[0], enc.memory


@torch.inference_mode()
def head_vectors(model: Transformer, src_ids: Sequence[int], tgt_in_ids: Sequence[int], kind: AttentionKind,
                 layer: int, head: int, queries: list[str], keys: list[str]) -> HeadVectors:
    """q and k of head `head` (1-based) in layer `layer` (1-based) of attention `kind`."""
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_in = torch.as_tensor([list(tgt_in_ids)], device=device)
    attn, q_in, k_in = layer_inputs(model, src, tgt_in, kind, layer)
    q = attn.split_heads(attn.w_q(q_in))[0, head - 1].float().cpu().numpy()
    k = attn.split_heads(attn.w_k(k_in))[0, head - 1].float().cpu().numpy()
    return HeadVectors(kind, layer, head, q, k, list(queries), list(keys))


@torch.inference_mode()
def input_parts(model: Transformer, ids: Sequence[int], pieces: list[str]) -> InputParts:
    """Embedding × √d_model, the positional encoding, and their sum as the model computes it."""
    device = model.device
    x = torch.as_tensor([list(ids)], device=device)
    token = (model.embedding(x) * model.emb_scale)[0]
    total = model.embed(x)[0]
    position = model.positional.pe[: x.size(1)]
    np_ = lambda t: t.float().cpu().numpy()
    return InputParts(list(pieces), np_(token), np_(position), np_(total))
