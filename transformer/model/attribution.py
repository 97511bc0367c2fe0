"""Which source pieces moved each target piece: gradient × input and Integrated Gradients, plain or contrastive.

f_t(e) = p(y_t | source, y_<t) for the greedy translation y (teacher forcing), as a function of
the source pieces' token embeddings e (embedding × √d_model; the positional encoding is kept).
Contrastive ("why y_t and not r?", Yin & Neubig 2022): f_t(e) = log p(y_t) − log p(r), which is the
difference of the two logits (the softmax's normaliser cancels). Baseline e' = 0: every source token
embedding replaced by zeros, positions kept.

    gradient × input:      A[t, s] = Σ_d ∂f_t/∂e[s, d] (e − e')[s, d]
    Integrated Gradients:  A[t, s] = Σ_d (e − e')[s, d] · (1/m) Σ_k ∂f_t/∂e[s, d] at e' + (k − ½)/m (e − e')

(Sundararajan et al. 2017; midpoint rule with m steps). IG is complete: Σ_s A[t, s] → f_t(e) − f_t(e') as m
grows. `attribute` starts at m = IG_STEPS and triples m (keeping the points it has) for the targets whose gap
is still above IG_TOLERANCE of their change, up to IG_MAX_STEPS; the result says how many steps each target took and
whether every one met the tolerance. The path's points run in chunks of ATTRIBUTION_TOKENS target
positions whose gradients are summed as they come, so memory does not grow with m.

Only the input embeddings ask for gradients: the shared model's parameters, mode and modules are
left as they are (no requires_grad flips, no hooks, no train mode), so users can ask at once.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from ..config import ATTRIBUTION_TOKENS, IG_MAX_STEPS, IG_STEPS, IG_TOLERANCE
from ..why import GAP_FLOOR, Attribution, AttributionMethod
from .transformer import Transformer

BASELINE = "zero token embeddings (positional encodings kept)"
Progress = Callable[[int, int, str], None]   # (rows done, rows in this pass, what is being computed): a progress bar


def target_function(model: Transformer, e: torch.Tensor, src: torch.Tensor, tgt_in: torch.Tensor,
                    tgt_out: torch.Tensor, rows: torch.Tensor, rivals: Optional[torch.Tensor] = None) -> torch.Tensor:
    """f for a batch: row b's token embeddings e[b] (S, d) -> p(y_t) at t = rows[b], or with `rivals`
    log p(y_t) − log p(rivals[b])."""
    B = e.size(0)
    enc = model.encode(src.expand(B, -1), embedded=model.positional(e))
    logits = model.decode(tgt_in.expand(B, -1), enc, logits_at=rows).logits                    # (B, vocab)
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))                       # fp16/bf16 -> fp32
    chosen = tgt_out[rows][:, None]
    if rivals is None:
        return torch.softmax(logits, -1).gather(1, chosen)[:, 0]
    return (logits.gather(1, chosen) - logits.gather(1, rivals[:, None]))[:, 0]


def path_gradients(model: Transformer, e: torch.Tensor, src, tgt_in, tgt_out, targets: torch.Tensor,
                   alphas: torch.Tensor, rivals: Optional[torch.Tensor] = None,
                   progress: Optional[Callable[[int, int], None]] = None) -> torch.Tensor:
    """Mean over `alphas` of ∂f_t/∂e at alpha · e, for each t in `targets` (with its rival): (len(targets), S, d).
    `progress(done, total)` after each chunk of rows."""
    n, m = targets.numel(), alphas.numel()
    which = torch.arange(n, device=e.device).repeat_interleave(m)                  # (n·m,) row -> its target
    a = alphas.repeat(n)                                                           # (n·m,) row -> its path point
    total = torch.zeros((n, *e.shape[1:]), device=e.device, dtype=torch.promote_types(e.dtype, torch.float32))
    batch = max(1, ATTRIBUTION_TOKENS // tgt_in.size(1))                           # rows per pass (each T long)
    if progress is not None:
        progress(0, n * m)
    for i in range(0, n * m, batch):
        sl = slice(i, i + batch)
        t = targets[which[sl]]
        seen = tgt_in[:, : int(t.max()) + 1]     # f_t reads positions ≤ t only (causal): the rest is not computed
        with torch.enable_grad():
            x = (a[sl, None, None] * e).detach().requires_grad_(True)
            f = target_function(model, x, src, seen, tgt_out, t, None if rivals is None else rivals[which[sl]])
            g = torch.autograd.grad(f.sum(), x)[0]
        total.index_add_(0, which[sl], g.to(total.dtype))                          # summed as they come
        if progress is not None:
            progress(min(i + batch, n * m), n * m)
    return total / m


def new_midpoints(m: int, first: bool) -> torch.Tensor:
    """The midpoints (j + ½)/m of m steps, or (not `first`) those that m/3 steps did not have: tripling the
    steps keeps every earlier midpoint ((k + ½)/(m/3) is j = 3k + 1), so a refinement costs only the new two
    thirds."""
    j = torch.arange(m, dtype=torch.float64)
    return (j + 0.5) / m if first else (j[j % 3 != 1] + 0.5) / m


def integrated_scores(model, e, src, tgt_in, tgt_out, rows, rivals, delta, steps: int, max_steps: int,
                      tolerance: float, progress: Optional[Progress] = None) -> tuple[torch.Tensor, torch.Tensor]:
    """IG scores (T, S) and the steps each target took: m triples for the targets whose gap is above
    `tolerance` of |f(input) − f(baseline)| (or GAP_FLOOR), while it stays within max_steps."""
    sums = torch.zeros((rows.numel(), *e.shape[1:]), dtype=torch.float64, device=e.device)   # Σ gradients so far
    scores = torch.zeros((rows.numel(), e.size(1)), dtype=torch.float64)
    taken = torch.zeros(rows.numel(), dtype=torch.long)
    steps = max(1, steps)
    todo, m = torch.arange(rows.numel()), steps
    while todo.numel():
        alphas = new_midpoints(m, first=m == steps).to(e.device, e.dtype)
        at = todo.to(rows.device)
        what = (f"Integrated Gradients: {m} steps for {todo.numel()} target{'s' if todo.numel() > 1 else ''}"
                + ("" if m == steps else " whose gap is still above the tolerance"))
        report = None if progress is None else (lambda done, total, what=what: progress(done, total, what))
        sums[at] += path_gradients(model, e, src, tgt_in, tgt_out, rows[at], alphas,
                                   None if rivals is None else rivals[at], report).double() * alphas.numel()
        scores[todo] = (sums[at] / m * e.double()).sum(-1).cpu()
        taken[todo] = m
        gap = (scores[todo].sum(1) - delta[todo]).abs()
        todo = todo[gap > torch.clamp(tolerance * delta[todo].abs(), min=GAP_FLOOR)]
        if 3 * m > max_steps:
            break
        m *= 3
    return scores, taken


def attribute(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], method: AttributionMethod,
              src_pieces: Sequence[str], tgt_pieces: Sequence[str], steps: int = IG_STEPS,
              max_steps: int = IG_MAX_STEPS, tolerance: float = IG_TOLERANCE, step: Optional[int] = None,
              rival_id: Optional[int] = None, rival_piece: str = "", progress: Optional[Progress] = None) -> Attribution:
    """Attribution of p(y_t) to the source token embeddings for every target piece y_t (tgt_ids: y1 ... y_n);
    with `step` (1-based) and `rival_id`: of log p(y_step) − log p(rival) at that step only. `progress` is told
    how far each pass over the path has got (the app's progress bar)."""
    if model.training:
        raise ValueError("attribution needs the model in eval mode (dropout off); it never switches a shared model")
    if method not in ("integrated_gradients", "gradient_x_input"):
        raise ValueError(f"unknown attribution method {method!r}")
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_out = torch.as_tensor(list(tgt_ids), device=device)
    tgt_in = torch.as_tensor([[model.cfg.bos_id, *list(tgt_ids)[:-1]]], device=device)
    contrastive = step is not None
    rows = torch.tensor([step - 1], device=device) if contrastive else torch.arange(tgt_out.numel(), device=device)
    rivals = torch.tensor([rival_id], device=device) if contrastive else None
    with torch.no_grad():
        e = model.embedding(src) * model.emb_scale                                   # (1, S, d), baseline: 0
        f_in = target_function(model, e.expand(len(rows), -1, -1), src, tgt_in, tgt_out, rows, rivals)
        f_base = target_function(model, torch.zeros_like(e).expand(len(rows), -1, -1), src, tgt_in, tgt_out, rows,
                                 rivals)
    delta = (f_in - f_base).double().cpu()
    if method == "integrated_gradients":
        scores, taken = integrated_scores(model, e, src, tgt_in, tgt_out, rows, rivals, delta, steps, max_steps,
                                          tolerance, progress)
    else:
        report = None if progress is None else (lambda done, total: progress(done, total, "Gradient × input"))
        grads = path_gradients(model, e, src, tgt_in, tgt_out, rows, torch.ones(1, device=device, dtype=e.dtype),
                               rivals, report)
        scores, taken = (grads * e.to(grads.dtype)).sum(-1).double().cpu(), torch.ones(rows.numel(), dtype=torch.long)
    targets = [tgt_pieces[step - 1]] if contrastive else list(tgt_pieces)
    return Attribution(method, scores.numpy(), f_in.double().cpu().numpy(), f_base.double().cpu().numpy(),
                       int(taken.max()), BASELINE, tuple(src_pieces), tuple(targets),
                       target_steps=tuple(int(s) for s in taken), tolerance=tolerance,
                       step=step, rival=rival_piece if contrastive else None)
