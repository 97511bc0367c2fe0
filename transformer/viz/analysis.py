"""Numbers derived from attention maps, for the app's summaries (numpy and scipy, no torch).

Attention arrays are (layers, heads, queries, keys) with rows summing to 1 (masked cells 0).
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.spatial.distance import jensenshannon

from ..config import BROAD_ENTROPY, PATTERN_THRESHOLD, ROLLOUT_RESIDUAL


def row_entropy(attn: np.ndarray) -> np.ndarray:
    """Entropy (nats) of each query row: (..., Tq, Tk) -> (..., Tq)."""
    p = np.clip(attn.astype(np.float64), 1e-12, 1.0)
    return -(attn * np.log(p)).sum(-1)


def head_entropy(attn: np.ndarray, causal: bool = False) -> np.ndarray:
    """Mean entropy over query rows, normalised by the most it could be (log of keys visible): (L, H).
    A causal head's first row (which can only see <s>) has no choice and is left out."""
    ent = row_entropy(attn)                                        # (L, H, Tq)
    Tq, Tk = attn.shape[-2:]
    if causal:
        visible = np.arange(1, Tq + 1)
    else:
        visible = np.full(Tq, Tk)
    max_ent = np.log(np.maximum(visible, 2))
    first = 1 if causal and Tq > 1 else 0
    return (ent / max_ent)[..., first:].mean(-1) if Tq else np.zeros(attn.shape[:2])


def head_distinctiveness(attn: np.ndarray, causal: bool = False) -> np.ndarray:
    """How much each head's attention differs from the average head's (all layers): the Jensen-Shannon
    divergence (base 2, so 0 = the same, 1 = disjoint) between its row and the mean row, averaged over query
    rows: (L, H). A causal head's first row (it can only see <s>) is left out, as for the entropy."""
    L, H, Tq, Tk = attn.shape
    if not Tq:
        return np.zeros((L, H))
    mean = attn.mean(axis=(0, 1), keepdims=True)                   # (1, 1, Tq, Tk)
    with np.errstate(invalid="ignore"):     # identical rows: a rounding error below 0 under the square root
        # distance² = divergence
        js = jensenshannon(attn, np.broadcast_to(mean, attn.shape), base=2, axis=-1) ** 2
    first = 1 if causal and Tq > 1 else 0
    return np.nan_to_num(js[..., first:]).mean(-1)


def pattern_scores(attn: np.ndarray, kind: str) -> dict[str, np.ndarray]:
    """Mean attention (over query rows) on the cells that define a simple pattern: each (L, H)."""
    L, H, Tq, Tk = attn.shape
    scores: dict[str, np.ndarray] = {}
    rows = np.arange(1 if kind == "decoder" and Tq > 1 else 0, Tq)   # the decoder's first row has no choice
    if kind in ("encoder", "decoder"):
        scores["itself"] = attn[..., rows, np.minimum(rows, Tk - 1)].mean(-1)
        if Tq > 1:
            prev = attn[..., rows[rows > 0], rows[rows > 0] - 1].mean(-1)
            scores["previous token"] = prev
        if kind == "encoder" and Tq > 1:
            scores["next token"] = attn[..., rows[:-1], rows[:-1] + 1].mean(-1)
            scores["end of sentence"] = attn[..., :-1, -1].mean(-1)
        if kind == "decoder" and Tq > 1:
            scores["start token <s>"] = attn[..., 1:, 0].mean(-1)
    else:
        if Tk > 1:
            scores["end of sentence"] = attn[..., :, -1].mean(-1)
        scores["diagonal / monotonic"] = monotonic_alignment(attn)
    return scores


def monotonic_alignment(attn: np.ndarray) -> np.ndarray:
    """How diagonal a cross-attention head is: correlation of each step's argmax source position
    with the step index (0 when undefined), times the mean weight on that argmax. (L, H)."""
    L, H, Tq, Tk = attn.shape
    out = np.zeros((L, H))
    if Tq < 3 or Tk < 3:
        return out
    core = attn[..., :, : Tk - 1] if Tk > 2 else attn                 # ignore the final </s> column
    am = core.argmax(-1).astype(np.float64)                          # (L, H, Tq)
    peak = core.max(-1).mean(-1)
    t = np.arange(Tq, dtype=np.float64)
    for l in range(L):
        for h in range(H):
            a = am[l, h]
            if a.std() < 1e-9:
                continue
            out[l, h] = max(0.0, float(np.corrcoef(t, a)[0, 1])) * peak[l, h]
    return out


@dataclass(frozen=True)
class HeadSummary:
    """One head at a glance."""

    layer: int            # 1-based
    head: int             # 1-based
    entropy: float        # mean over query rows, normalised: 0 = one key, 1 = uniform
    pattern: str          # the strongest simple pattern ("" if none)
    pattern_score: float  # mean attention on that pattern's cells
    label: str            # the pattern if it gets PATTERN_THRESHOLD of the attention, else "broad (spread
                          # out)" above BROAD_ENTROPY, else "mixed" (no simple pattern dominates)
    distinct: float = 0.0  # how far its attention is from the average head's (Jensen-Shannon, bits: 0 to 1)
    rank: int = 0          # 1 = the most distinctive head of its kind


def head_summary(attn: np.ndarray, kind: str, threshold: float = PATTERN_THRESHOLD) -> list[HeadSummary]:
    """Per layer and head: normalised entropy, the strongest pattern and its score, and a label."""
    ent = head_entropy(attn, causal=kind == "decoder")
    distinct = head_distinctiveness(attn, causal=kind == "decoder")
    order = np.argsort(-distinct, axis=None, kind="stable")
    rank = np.empty(distinct.size, dtype=int)
    rank[order] = np.arange(1, distinct.size + 1)
    pats = pattern_scores(attn, kind)
    rows = []
    L, H = attn.shape[:2]
    for l in range(L):
        for h in range(H):
            best, score = "", 0.0
            for name, s in pats.items():
                if s[l, h] > score:
                    best, score = name, float(s[l, h])
            if score >= threshold:
                label = best
            elif ent[l, h] > BROAD_ENTROPY:
                label = "broad (spread out)"
            else:
                label = "mixed"
            rows.append(HeadSummary(l + 1, h + 1, round(float(ent[l, h]), 3), best, round(score, 3), label,
                                    round(float(distinct[l, h]), 3), int(rank[l * H + h])))
    return rows


def attention_rollout(attn: np.ndarray, residual: float = ROLLOUT_RESIDUAL) -> np.ndarray:
    """Abnar & Zuidema (2020): mix each layer's head-mean with the identity (the residual path)
    and multiply through the layers. Square attention only. Returns (L, T, T): rollout up to each layer."""
    L, H, T, _ = attn.shape
    eye = np.eye(T)
    out = np.zeros((L, T, T))
    acc = eye
    for l in range(L):
        a = residual * attn[l].mean(0) + (1 - residual) * eye
        a = a / np.maximum(a.sum(-1, keepdims=True), 1e-12)
        acc = a @ acc
        out[l] = acc
    return out


def cross_rollout(cross: np.ndarray, encoder: np.ndarray) -> np.ndarray:
    """Cross-attention (head-mean, per decoder layer) pushed through the encoder's rollout, so each
    target step is mapped to the input tokens rather than to encoder states: (L_dec, T, S)."""
    enc_roll = attention_rollout(encoder)[-1]                       # (S, S)
    return np.stack([cross[l].mean(0) @ enc_roll for l in range(cross.shape[0])])


def softmax(x: np.ndarray, axis: int = -1) -> np.ndarray:
    x = np.where(np.isfinite(x), x, -np.inf)
    m = np.max(x, axis=axis, keepdims=True)
    m = np.where(np.isfinite(m), m, 0.0)
    e = np.exp(x - m)
    s = e.sum(axis=axis, keepdims=True)
    return np.divide(e, s, out=np.zeros_like(e), where=s > 0)


@dataclass(frozen=True)
class HeadSteps:
    """The steps of scaled dot-product attention for one head, each (Tq, Tk); NaN = not shown."""

    raw: np.ndarray               # QKᵀ
    scaled: np.ndarray            # QKᵀ / √d_k
    masked: np.ndarray            # the same with masked cells blank (their -inf)
    softmax: np.ndarray           # softmax(QKᵀ / √d_k): the weights with the paper's scaling
    softmax_unscaled: np.ndarray  # softmax(QKᵀ): the weights without it
    mask: np.ndarray              # bool, True where the query may attend
    model_scales: bool = True     # which of the two the model used (False: the no-scaling variant)

    @property
    def weights(self) -> np.ndarray:
        """The model's own attention weights."""
        return self.softmax if self.model_scales else self.softmax_unscaled


def inside_head(scores: np.ndarray, d_k: int, causal: bool, scaled: bool = True) -> HeadSteps:
    """The steps of scaled dot-product attention for one head, from the scores (Tq, Tk) the model fed its
    softmax: QKᵀ/√d_k, or QKᵀ when it does not scale (`scaled=False`, the trace's `scaled`)."""
    raw = scores * math.sqrt(d_k) if scaled else scores
    scaled_scores = raw / math.sqrt(d_k)
    Tq, Tk = scaled_scores.shape
    mask = np.tril(np.ones((Tq, Tk), dtype=bool), Tk - Tq) if causal else np.ones((Tq, Tk), dtype=bool)
    # The raw and scaled panels show every score, the future ones included (trace_greedy computes them),
    # so that the mask panel is seen blanking them.
    return HeadSteps(raw=raw, scaled=scaled_scores, masked=np.where(mask, scaled_scores, np.nan),
                     softmax=softmax(np.where(mask, scaled_scores, -np.inf)),
                     softmax_unscaled=softmax(np.where(mask, raw, -np.inf)), mask=mask, model_scales=scaled)
