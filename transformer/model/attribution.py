"""Which source pieces moved each target piece's probability: gradient × input and Integrated Gradients.

f_t(e) = p(y_t | source, y_<t) for the greedy translation y (teacher forcing), as a function of
the source pieces' token embeddings e (embedding × √d_model; the positional encoding is kept).
Baseline e' = 0: every source token embedding replaced by zeros, positions kept.

    gradient × input:      A[t, s] = Σ_d ∂f_t/∂e[s, d] (e − e')[s, d]
    Integrated Gradients:  A[t, s] = Σ_d (e − e')[s, d] · (1/m) Σ_k ∂f_t/∂e[s, d] at e' + (k − ½)/m (e − e')

(Sundararajan et al. 2017; midpoint rule with m steps). IG is complete: Σ_s A[t, s] ≈ f_t(e) − f_t(e').

Only the input embeddings ask for gradients: the shared model's parameters, mode and modules are
left as they are (no requires_grad flips, no hooks, no train mode), so users can ask at once.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..config import ATTRIBUTION_TOKENS, IG_STEPS
from ..why import Attribution, AttributionMethod
from .transformer import Transformer

BASELINE = "zero token embeddings (positional encodings kept)"


def target_probs(model: Transformer, e: torch.Tensor, src: torch.Tensor, tgt_in: torch.Tensor,
                 tgt_out: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """f for a batch: row b's token embeddings e[b] (S, d), the probability of y_t at t = rows[b]."""
    B = e.size(0)
    enc = model.encode(src.expand(B, -1), embedded=model.positional(e))
    logits = model.decode(tgt_in.expand(B, -1), enc).logits[torch.arange(B), rows]            # (B, vocab)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))                       # fp16/bf16 -> fp32
    return torch.softmax(logits, -1).gather(1, tgt_out[rows][:, None])[:, 0]


def path_gradients(model: Transformer, e: torch.Tensor, src, tgt_in, tgt_out, alphas: torch.Tensor):
    """Mean over `alphas` of ∂f_t/∂e at alpha · e, for every target t: (T, S, d)."""
    T, m = tgt_out.numel(), alphas.numel()
    rows = torch.arange(T, device=e.device).repeat_interleave(m)                  # (T·m,) target of each row
    a = alphas.repeat(T)                                                          # (T·m,) path point of each row
    grads = torch.zeros((T * m, *e.shape[1:]), device=e.device, dtype=torch.promote_types(e.dtype, torch.float32))
    batch = max(1, ATTRIBUTION_TOKENS // T)                                        # rows per pass (each T long)
    for i in range(0, T * m, batch):
        sl = slice(i, i + batch)
        with torch.enable_grad():
            x = (a[sl, None, None] * e).detach().requires_grad_(True)
            f = target_probs(model, x, src, tgt_in, tgt_out, rows[sl])
            grads[sl] = torch.autograd.grad(f.sum(), x)[0].to(grads.dtype)
    return grads.view(T, m, *e.shape[1:]).mean(1)


def attribute(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], method: AttributionMethod,
              src_pieces: list[str], tgt_pieces: list[str], steps: int = IG_STEPS) -> Attribution:
    """Attribution of p(y_t) to the source token embeddings for every target piece y_t (tgt_ids: y1 ... y_n)."""
    if model.training:
        raise ValueError("attribution needs the model in eval mode (dropout off); it never switches a shared model")
    if method not in ("integrated_gradients", "gradient_x_input"):
        raise ValueError(f"unknown attribution method {method!r}")
    device = next(model.parameters()).device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_out = torch.as_tensor(list(tgt_ids), device=device)
    tgt_in = torch.as_tensor([[model.cfg.bos_id, *list(tgt_ids)[:-1]]], device=device)
    with torch.no_grad():
        e = model.embedding(src) * model.emb_scale                                   # (1, S, d), baseline: 0
        rows = torch.arange(tgt_out.numel(), device=device)
        f_in = target_probs(model, e.expand(len(rows), -1, -1), src, tgt_in, tgt_out, rows)
        f_base = target_probs(model, torch.zeros_like(e).expand(len(rows), -1, -1), src, tgt_in, tgt_out, rows)
    m = steps if method == "integrated_gradients" else 1
    alphas = (torch.arange(m, device=device) + 0.5) / m if m > 1 else torch.ones(1, device=device)
    grads = path_gradients(model, e, src, tgt_in, tgt_out, alphas)                  # (T, S, d)
    scores = (grads * e.to(grads.dtype)).sum(-1)                                              # (T, S)
    return Attribution(method, scores.cpu().double().numpy(), f_in.cpu().double().numpy(),
                       f_base.cpu().double().numpy(), m, BASELINE, list(src_pieces), list(tgt_pieces))
