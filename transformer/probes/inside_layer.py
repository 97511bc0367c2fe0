"""Inside one layer: the residual stream through its sub-layers, what LayerNorm does, and the feed-forward
network's hidden units, for one position (the app's "Inside one layer" panel).

A post-norm layer (layers.py) computes, for each sub-layer, x ← LayerNorm(x + Sublayer(x)): the encoder has
self-attention then the FFN, the decoder masked self-attention, cross-attention, then the FFN.
``layer_parts`` runs the model's own modules step by step (dropout off) and keeps every intermediate; its
final vector is the layer's output (tests check it against the layer's forward).
"""
from __future__ import annotations

from typing import Literal, Sequence

import torch
import torch.nn.functional as F

from ..why import LayerParts, SubLayerStep
from ..model.transformer import Transformer, causal_mask

Stack = Literal["encoder", "decoder"]


def _ln_step(name: str, norm: torch.nn.LayerNorm, x: torch.Tensor, added: torch.Tensor):
    """One sub-layer's residual connection and LayerNorm for one position's vectors (d_model,): its numbers,
    and the LayerNorm's output."""
    s = x + added
    out = norm(s)
    return SubLayerStep(name, float(x.norm()), float(added.norm()), float(s.norm()), float(s.mean()),
                        float(s.std(unbiased=False)), float(out.norm()), float(out.mean()),
                        float(out.std(unbiased=False))), out


@torch.inference_mode()
def layer_parts(model: Transformer, src_ids: Sequence[int], tgt_in_ids: Sequence[int], stack: Stack,
                layer: int, position: int, pieces: Sequence[str], top: int = 10) -> LayerParts:
    """Layer `layer` (1-based) of the encoder or decoder, at `position` (0-based) of its sequence."""
    if model.cfg.norm != "post":
        raise ValueError("Inside one layer follows the paper's post-norm layers; this model is pre-norm")
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    enc = model.encode(src)
    if stack == "encoder":
        x = model.embed(src)
        for lay in model.encoder_layers[: layer - 1]:
            x, _ = lay(x, enc.src_mask)
        lay = model.encoder_layers[layer - 1]
        a, _, _ = lay.self_attn(x, x, mask=enc.src_mask)
        first = "self-attention"
    else:
        tgt = torch.as_tensor([list(tgt_in_ids)], device=device)
        mask = causal_mask(tgt.size(1), tgt.size(1), device)
        x = model.embed(tgt)
        for lay in model.decoder_layers[: layer - 1]:
            x = lay(x, enc.memory, enc.src_mask, mask).x
        lay = model.decoder_layers[layer - 1]
        a, _, _ = lay.self_attn(x, x, mask=mask)
        first = "masked self-attention"
    step, _ = _ln_step(first, lay.norm1, x[0, position], a[0, position])
    steps = [step]
    h = lay.norm1(x + a)                     # every position: the next sub-layer reads them all
    if stack == "decoder":
        c, _, _ = lay.cross_attn(h, enc.memory, mask=enc.src_mask)
        step, _ = _ln_step("cross-attention", lay.norm2, h[0, position], c[0, position])
        steps.append(step)
        h = lay.norm2(h + c)
    hidden = F.relu(lay.feed_forward.w_1(h[0, position]))                         # (d_ff,)
    f = lay.feed_forward.w_2(hidden)
    step, out = _ln_step("feed-forward", lay.norm3 if stack == "decoder" else lay.norm2, h[0, position], f)
    steps.append(step)
    values, units = hidden.topk(min(top, hidden.numel()))
    return LayerParts(stack, layer, position, pieces[position], tuple(steps), hidden.double().cpu().numpy(),
                      tuple(int(u) for u in units), values.double().cpu().numpy(), out.double().cpu().numpy())
