"""Which source pieces moved each target piece: gradient × input and Integrated Gradients, plain or
contrastive.

f_t(e) = p(y_t | source, y_<t) for the greedy translation y (teacher forcing), as a function of
the source pieces' token embeddings e (embedding × √d_model; the positional encoding is kept).
Contrastive ("why y_t and not r?", Yin & Neubig 2022): f_t(e) = log p(y_t) − log p(r), which is the
difference of the two logits (the softmax's normaliser cancels). Baseline e' = 0: every source token
embedding replaced by zeros, positions kept.

    gradient × input:      A[t, s] = Σ_d ∂f_t/∂e[s, d] (e − e')[s, d]
    Integrated Gradients:  A[t, s] = Σ_d (e − e')[s, d] · ∫₀¹ ∂f_t/∂e[s, d] at e' + α (e − e') dα

(Sundararajan et al. 2017). IG is complete: Σ_s A[t, s] = f_t(e) − f_t(e'). The integral is a midpoint rule
on intervals of [0, 1] that `integrated_scores` makes finer where the path needs it: it starts from IG_STEPS
equal intervals, measures each interval's own completeness gap (f at its ends is a forward pass: no gradient),
and cuts the worst in three while a target's gap is above IG_TOLERANCE of its change, up to IG_MAX_STEPS
points; the result says how many points each target took and whether every one met the tolerance. Starting
coarse (4 points) costs fewer points in all than starting fine (32: 628 against 1,358 for a 33-piece sentence,
the same tolerance met), and gives a first picture of every target within seconds: `estimate` is told each
round's result while the refinement goes on (the app draws it, said to be a first estimate, and replaces it in
place). The points run in chunks of ATTRIBUTION_TOKENS target positions, so memory does not grow with their
number.

Only the input embeddings ask for gradients: the shared model's parameters, mode and modules are
left as they are (no requires_grad flips, no hooks, no train mode), so users can ask at once.
"""
from __future__ import annotations

from typing import Callable, Optional, Sequence

import torch

from ..config import ATTRIBUTION_TOKENS, IG_CUT_SHARE, IG_MAX_STEPS, IG_STEPS, IG_TOLERANCE
from ..why import GAP_FLOOR, Attribution, AttributionMethod
from ..model.transformer import Transformer

BASELINE = "zero token embeddings (positional encodings kept)"
# (rows done, rows in this pass, what is being computed): a progress bar
Progress = Callable[[int, int, str], None]


def target_function(model: Transformer, e: torch.Tensor, src: torch.Tensor, tgt_in: torch.Tensor,
                    tgt_out: torch.Tensor, rows: torch.Tensor,
                    rivals: Optional[torch.Tensor] = None) -> torch.Tensor:
    """f for a batch: row b's token embeddings e[b] (S, d) -> p(y_t) at t = rows[b], or with `rivals`
    log p(y_t) − log p(rivals[b]). `rows` (B, k) (and `rivals` alike): k targets per row, (B, k)."""
    B = e.size(0)
    enc = model.encode(src.expand(B, -1), embedded=model.positional(e))
    # (B, vocab) or (B, k, vocab)
    logits = model.decode(tgt_in.expand(B, -1), enc, logits_at=rows).logits
    # fp16/bf16 -> fp32
    logits = logits.to(torch.promote_types(logits.dtype, torch.float32))
    chosen = tgt_out[rows][..., None]
    if rivals is None:
        return torch.softmax(logits, -1).gather(-1, chosen)[..., 0]
    return (logits.gather(-1, chosen) - logits.gather(-1, rivals[..., None]))[..., 0]


def point_scores(model: Transformer, e: torch.Tensor, src, tgt_in, tgt_out, targets: torch.Tensor,
                 alphas: torch.Tensor, rivals: Optional[torch.Tensor] = None,
                 progress: Optional[Callable[[int, int], None]] = None) -> torch.Tensor:
    """Row r: Σ_d ∂f_t/∂e at alphas[r] · e, times e, for t = targets[r] (with rivals[r]): (R, S) float64, the
    gradient's share for each source piece (its sum is df_t/dα there). Rows run in chunks of
    ATTRIBUTION_TOKENS target positions; `progress(done, total)` after each."""
    R = targets.numel()
    out = torch.empty((R, e.size(1)), dtype=torch.float64)
    # rows per pass (each T long)
    batch = max(1, ATTRIBUTION_TOKENS // tgt_in.size(1))
    if progress is not None:
        progress(0, R)
    for i in range(0, R, batch):
        sl = slice(i, i + batch)
        t = targets[sl]
        # f_t reads positions ≤ t only (causal): the rest is not computed
        seen = tgt_in[:, : int(t.max()) + 1]
        with torch.enable_grad():
            x = (alphas[sl, None, None].to(e.dtype) * e).detach().requires_grad_(True)
            f = target_function(model, x, src, seen, tgt_out, t, None if rivals is None else rivals[sl])
            g = torch.autograd.grad(f.sum(), x)[0]                                 # (rows, S, d)
        out[sl] = (g.double() * e.double()).sum(-1).cpu()
        if progress is not None:
            progress(min(i + batch, R), R)
    return out


def path_values(model: Transformer, e: torch.Tensor, src, tgt_in, tgt_out, targets: torch.Tensor,
                alphas: torch.Tensor, rivals: Optional[torch.Tensor] = None) -> torch.Tensor:
    """f at alphas[r] · e for the targets of row r (targets (R, k), rivals alike), forward only: (R, k)
    float64. One pass of the model serves the k targets of a row; no gradient is kept."""
    k = targets.size(1)
    seen = tgt_in[:, : int(targets.max()) + 1]
    # bounds the logits kept: rows × k
    batch = max(1, ATTRIBUTION_TOKENS // (seen.size(1) * k))
    out = []
    with torch.no_grad():
        for i in range(0, alphas.numel(), batch):
            sl = slice(i, i + batch)
            f = target_function(model, alphas[sl, None, None].to(e.dtype) * e, src, seen, tgt_out,
                                targets[sl], None if rivals is None else rivals[sl])
            out.append(f.double().cpu())
    return torch.cat(out)


def integrated_scores(model, e, src, tgt_in, tgt_out, rows, rivals, delta, steps: int, max_steps: int,
                      tolerance: float, progress: Optional[Progress] = None,
                      estimate: Optional[Callable[[torch.Tensor, torch.Tensor], None]] = None
                      ) -> tuple[torch.Tensor, torch.Tensor]:
    """IG scores (T, S) and the points each target took, by an adaptive midpoint rule on the path.

    Every target starts with `steps` equal intervals of [0, 1], each with its midpoint's gradient. An interval
    [a, a + h]'s own share of the completeness gap is known exactly: h · df/dα at its midpoint (the sum of its
    scores) against f(a + h) − f(a), where f at the ends costs a forward pass and no gradient. While a
    target's gap is above `tolerance` of |f(input) − f(baseline)| (or GAP_FLOOR), its worst intervals are cut
    in three: the fewest, largest first, whose shares add up to IG_CUT_SHARE of all its intervals' (Dörfler's
    marking, from adaptive finite elements). The middle third keeps its midpoint, so a cut costs two new
    points. At most `max_steps` points per target. `estimate(scores, points)` is told the result so far after
    the first pass and after each round that did not finish (a first complete picture within seconds, refined
    in place)."""
    n, S = rows.numel(), e.size(1)
    # (n,) the gap a target may keep
    limit = torch.clamp(tolerance * delta.abs(), min=GAP_FLOOR)
    steps = max(1, min(steps, max_steps))
    edges = torch.arange(steps + 1, dtype=torch.float64) / steps
    f_edges = path_values(model, e, src, tgt_in, tgt_out, rows.expand(steps + 1, -1), edges.to(e.device),
                          None if rivals is None else rivals.expand(steps + 1, -1))          # (steps + 1, n)
    what = f"Integrated Gradients: {steps} points for {n} target{'s' if n > 1 else ''}"
    report = None if progress is None else (lambda done, total: progress(done, total, what))
    mids = (edges[:-1] + edges[1:]) / 2
    first = point_scores(model, e, src, tgt_in, tgt_out, rows.repeat_interleave(steps),
                         mids.repeat(n).to(e.device),
                         None if rivals is None else rivals.repeat_interleave(steps), report) / steps
    # each target's intervals: left end, width, f at both ends, and width × its midpoint's point scores (K, S)
    left = [edges[:-1].clone() for _ in range(n)]
    width = [torch.full((steps,), 1 / steps, dtype=torch.float64) for _ in range(n)]
    f_left = [f_edges[:-1, t].clone() for t in range(n)]
    f_right = [f_edges[1:, t].clone() for t in range(n)]
    parts = list(first.view(n, steps, S))
    so_far = lambda: (torch.stack([p.sum(0) for p in parts]),  # noqa: E731
                      torch.tensor([len(p) for p in parts], dtype=torch.long))
    while True:
        cuts = worst_intervals(parts, f_left, f_right, delta, limit, max_steps)
        if not cuts:
            break
        if estimate is not None:
            estimate(*so_far())
        who = torch.cat([torch.full((len(ks),), t) for t, ks in cuts.items()])   # (C,) each cut's target
        a0 = torch.cat([left[t][ks] for t, ks in cuts.items()])
        h3 = torch.cat([width[t][ks] for t, ks in cuts.items()]) / 3
        C = who.numel()
        # (2C,): first thirds, then seconds
        new_edges = torch.cat([a0 + h3, a0 + 2 * h3])
        new_mids = torch.cat([a0 + h3 / 2, a0 + 2.5 * h3])
        at, riv = rows[who.to(rows.device)], None if rivals is None else rivals[who.to(rivals.device)]
        f_new = path_values(model, e, src, tgt_in, tgt_out, at.repeat(2)[:, None], new_edges.to(e.device),
                            None if riv is None else riv.repeat(2)[:, None])[:, 0]
        what = (f"Integrated Gradients: {2 * C} more points where {len(cuts)} "
                f"target{'s' if len(cuts) > 1 else ''} still miss{'' if len(cuts) > 1 else 'es'} "
                f"completeness by more than {tolerance:.0%}")
        report = None if progress is None else (lambda done, total, what=what: progress(done, total, what))
        g_new = point_scores(model, e, src, tgt_in, tgt_out, at.repeat(2), new_mids.to(e.device),
                             None if riv is None else riv.repeat(2), report) * h3.repeat(2)[:, None]
        cut_in_three(cuts, (left, width, f_left, f_right, parts), a0, h3, f_new, g_new)
    return so_far()


def worst_intervals(parts, f_left, f_right, delta, limit, max_steps: int) -> dict:
    """For each target still above its gap limit: its intervals to cut (the fewest, largest first, whose own
    gaps add up to IG_CUT_SHARE of all of its intervals'), at most as many as its points left allow."""
    cuts = {}
    for t in range(len(parts)):
        if abs(parts[t].sum() - delta[t]) <= limit[t]:
            continue
        share = (parts[t].sum(1) - (f_right[t] - f_left[t])).abs()              # each interval's own gap
        order = share.argsort(descending=True)
        k = int((share[order].cumsum(0) < IG_CUT_SHARE * share.sum()).sum()) + 1   # the worst few
        k = min(k, (max_steps - len(share)) // 2)                             # a cut adds two points
        if k > 0:
            cuts[t] = order[:k]
    return cuts


def cut_in_three(cuts: dict, intervals: tuple, a0, h3, f_new, g_new) -> None:
    """Each cut interval [a0, a0 + 3·h3] becomes its middle third (which keeps its point, at a third of its
    weight) and two new thirds with their points' scores `g_new` and their ends' values `f_new` (first thirds,
    then last)."""
    left, width, f_left, f_right, parts = intervals
    C, i = int(a0.numel()), 0
    for t, ks in cuts.items():
        # its cuts' first and last thirds
        lo, hi = slice(i, i + len(ks)), slice(C + i, C + i + len(ks))
        fa, fb = f_left[t][ks], f_right[t][ks]
        # the middle third keeps its point
        parts[t][ks] /= 3
        left[t][ks], width[t][ks] = a0[lo] + h3[lo], h3[lo]
        f_left[t][ks], f_right[t][ks] = f_new[lo], f_new[hi]
        left[t] = torch.cat([left[t], a0[lo], a0[lo] + 2 * h3[lo]])             # the first and last thirds
        width[t] = torch.cat([width[t], h3[lo], h3[lo]])
        f_left[t] = torch.cat([f_left[t], fa, f_new[hi]])
        f_right[t] = torch.cat([f_right[t], f_new[lo], fb])
        parts[t] = torch.cat([parts[t], g_new[lo], g_new[hi]])
        i += len(ks)


def path_inputs(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int]) -> tuple:
    """(src (1, S), tgt_in (1, T): <s> y1 … y_{n-1}, tgt_out (T,): y1 … y_n, e (1, S, d): the source token
    embeddings × √d_model, the path's end; its start, the baseline, is 0)."""
    device = model.device
    src = torch.as_tensor([list(src_ids)], device=device)
    tgt_in = torch.as_tensor([[model.cfg.bos_id, *list(tgt_ids)[:-1]]], device=device)
    with torch.no_grad():
        e = model.embedding(src) * model.emb_scale
    return src, tgt_in, torch.as_tensor(list(tgt_ids), device=device), e


def attribute(model: Transformer, src_ids: Sequence[int], tgt_ids: Sequence[int], method: AttributionMethod,
              src_pieces: Sequence[str], tgt_pieces: Sequence[str], steps: int = IG_STEPS,
              max_steps: int = IG_MAX_STEPS, tolerance: float = IG_TOLERANCE, step: Optional[int] = None,
              rival_id: Optional[int] = None, rival_piece: str = "", progress: Optional[Progress] = None,
              estimate: Optional[Callable[[Attribution], None]] = None) -> Attribution:
    """Attribution of p(y_t) to the source token embeddings for every target piece y_t (tgt_ids: y1 ... y_n);
    with `step` (1-based) and `rival_id`: of log p(y_step) − log p(rival) at that step only. `progress` is
    told how far each pass over the path has got (the app's progress bar); `estimate`, Integrated Gradients'
    result so far while it refines (an Attribution with final=False)."""
    if model.training:
        raise ValueError("attribution needs the model in eval mode (dropout off); it never switches a shared "
                         "model")
    if method not in ("integrated_gradients", "gradient_x_input"):
        raise ValueError(f"unknown attribution method {method!r}")
    device = model.device
    src, tgt_in, tgt_out, e = path_inputs(model, src_ids, tgt_ids)
    contrastive = step is not None
    rows = (torch.tensor([step - 1], device=device) if contrastive
            else torch.arange(tgt_out.numel(), device=device))
    rivals = torch.tensor([rival_id], device=device) if contrastive else None
    with torch.no_grad():
        f_in = target_function(model, e.expand(len(rows), -1, -1), src, tgt_in, tgt_out, rows, rivals)
        f_base = target_function(model, torch.zeros_like(e).expand(len(rows), -1, -1), src, tgt_in, tgt_out,
                                 rows, rivals)
    delta = (f_in - f_base).double().cpu()
    targets = [tgt_pieces[step - 1]] if contrastive else list(tgt_pieces)

    def result(scores, taken, final=True) -> Attribution:
        return Attribution(method, scores.numpy(), f_in.double().cpu().numpy(), f_base.double().cpu().numpy(),
                           int(taken.max()), BASELINE, tuple(src_pieces), tuple(targets),
                           target_steps=tuple(int(s) for s in taken), tolerance=tolerance,
                           step=step, rival=rival_piece if contrastive else None, final=final)
    if method == "integrated_gradients":
        told = (None if estimate is None
                else (lambda scores, taken: estimate(result(scores, taken, final=False))))
        scores, taken = integrated_scores(model, e, src, tgt_in, tgt_out, rows, rivals, delta, steps,
                                          max_steps, tolerance, progress, told)
    else:
        report = None if progress is None else (lambda done, total: progress(done, total, "Gradient × input"))
        scores = point_scores(model, e, src, tgt_in, tgt_out, rows, torch.ones(rows.numel(), device=device),
                              rivals, report)
        taken = torch.ones(rows.numel(), dtype=torch.long)
    return result(scores, taken)
