"""The logit lens through the decoder (nostalgebraist 2020; Ecco): what the decoder would predict if it
stopped after layer 1, 2, ... — the model's own output projection (the tied embedding, ``output_logits``)
applied to each decoder layer's output, for every step of the translation at once (teacher forcing on the
greedy pieces). The decoder is post-norm, so each layer's output is already layer-normalised, as the last
one is: the last layer's lens is the model's own output distribution, exactly.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..why import Lens
from ..model.transformer import Transformer


@torch.inference_mode()
def logit_lens(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], pieces,
               top_k: int = 5) -> Lens:
    """For each decoder layer and step t: the top-k next pieces and the chosen piece's (y_t's) rank and
    probability. `pieces(ids)` names ids (the tokenizer's)."""
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_in = torch.as_tensor([[model.cfg.bos_id, *list(tgt_ids)[:-1]]], device=device)
    chosen = torch.as_tensor(list(tgt_ids), device=device)
    out = model.decode(tgt_in, model.encode(src), output_hidden_states=True)
    # (L, T, V)
    probs = torch.stack([torch.softmax(model.output_logits(h)[0].float(), -1) for h in out.hidden_states])
    # (L, T, 1)
    p_chosen = probs.gather(2, chosen[None, :, None].expand(probs.size(0), -1, 1))
    # (L, T)
    ranks = (probs > p_chosen).sum(-1) + 1
    # (L, T, k)
    top_p, top_i = probs.topk(top_k, dim=-1)
    return Lens(top_i.cpu().numpy(),
                tuple(tuple(tuple(pieces(r)) for r in layer) for layer in top_i.tolist()),
                top_p.double().cpu().numpy(), ranks.cpu().numpy(), p_chosen[..., 0].double().cpu().numpy(),
                tuple(pieces(list(tgt_ids))))
