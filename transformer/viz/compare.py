"""The Compare view's figures and text: the baseline against a variant that differs in one design choice
(``transformer/variants.py``). From arrays, lists and the variants' scores only (no torch, no gradio)."""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional, Sequence

import numpy as np

from . import figure
from .style import PALETTE, QUERY_OUTLINE


@dataclass(frozen=True)
class Side:
    """One model of the comparison, as the view needs it."""

    name: str                      # variant name ("baseline", "no-scaling", ...)
    title: str
    translation: str
    scores: dict                   # the folder's scores.json
    steps: Sequence[int]           # training-loss curve: step ...
    losses: Sequence[float]        # ... and the mean training loss of the 100 steps before it
    color: str


def sides_colors() -> tuple[str, str]:
    return PALETTE[0], PALETTE[5]


def _bleu(scores: dict, split: str) -> str:
    s = scores.get(split)
    return f"{s['bleu']:.1f}" if s else "–"


def _past_longest(scores: dict) -> str:
    """The loss a piece within and beyond the longest training sentence's positions, on the joined test lines."""
    loss, n = scores.get("position_loss"), scores.get("longest_training_positions")
    if not loss:
        return ""
    return (f"; loss a piece on test sentences joined six at a time: {loss['within']:.2f} at positions 1–{n}, "
            f"**{loss['beyond']:.2f} past {n}**")


def scores_markdown(sides: Sequence[Side], look_for: str, positions: Optional[tuple[int, int]] = None) -> str:
    """What to look for, then each model's translation of the sentence and its Tatoeba scores (a list, not a
    table: it fits a phone's column)."""
    out = [look_for, ""]
    for s in sides:
        text = html.escape(s.translation, quote=False) or "(nothing)"
        out.append(f"- **{html.escape(s.title, quote=False)}**: “{text}”  \n"
                   f"  BLEU dev {_bleu(s.scores, 'dev')} · test {_bleu(s.scores, 'test')}"
                   + (_past_longest(s.scores) if positions else ""))
    a, b = sides[0].scores, sides[-1].scores
    same = a.get("steps") == b.get("steps") and a.get("tokens") == b.get("tokens")
    trained = (f"Both trained {a.get('steps', 0):,} steps on the same {a.get('tokens', 0):,} Tatoeba tokens in the same "
               f"order, from the same seed" if same else
               "⚠ these two were not trained with the same steps and tokens (see their scores.json)")
    out += ["", f"{trained}. BLEU: sacreBLEU, greedy, on the Tatoeba dev and test sets (small models trained "
                f"briefly: compare them with each other, not with the big model)."]
    if positions:
        n, longest = positions
        out.append(f"Your sentence fills **{n} positions**; the longest training sentence filled {longest}.")
    return "\n".join(out)


def loss_figure(sides: Sequence[Side], dark: bool, font_size: int):
    """Both models' training loss on one plot, step by step."""
    data = [dict(type="scatter", mode="lines", x=list(s.steps), y=np.round(np.asarray(s.losses, float), 4).tolist(),
                 name=s.title, line=dict(color=s.color, width=2.5),
                 hovertemplate=f"{html.escape(s.title)}<br>step %{{x}}: loss %{{y:.3f}}<extra></extra>") for s in sides]
    layout = dict(xaxis=dict(title=dict(text="training step")),
                  yaxis=dict(title=dict(text="training loss (label-smoothed)")),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=figure.top_margin(font_size, True), b=int(5 * font_size)))
    return figure.fast_figure(data, layout, dark, font_size, figure.grow(360, font_size),
                              "Training loss: the same data in the same order")


def entropy_figure(named: Sequence[tuple[str, np.ndarray, str]], kind_title: str, dark: bool, font_size: int):
    """The normalised entropy of every head (dots), layer by layer, for each model: `named` holds
    (title, entropies (layers, heads), colour). 0 = one key takes all the weight, 1 = spread evenly."""
    data, offsets = [], np.linspace(-0.15, 0.15, len(named)) if len(named) > 1 else [0.0]
    for (title, ent, color), off in zip(named, offsets):
        L, H = ent.shape
        xs = [round(l + 1 + off, 3) for l in range(L) for _ in range(H)]
        text = [f"layer {l + 1}, head {h + 1}" for l in range(L) for h in range(H)]
        data.append(dict(type="scatter", mode="markers", x=xs, y=np.round(ent.ravel(), 4).tolist(), text=text,
                         name=f"{title} ({H} head{'s' if H > 1 else ''} a layer)",
                         marker=dict(color=color, size=11 if H > 1 else 16, line=dict(width=1, color="#333333")),
                         hovertemplate=f"{html.escape(title)}<br>%{{text}}: entropy %{{y:.2f}}<extra></extra>"))
    L = max(e.shape[0] for _, e, _ in named)
    layout = dict(xaxis=dict(title=dict(text="layer"), tickmode="array", tickvals=list(range(1, L + 1)),
                             range=[0.5, L + 0.5]),
                  yaxis=dict(title=dict(text="entropy (0 = one key, 1 = even)"), range=[-0.03, 1.03]),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=figure.top_margin(font_size, True), b=int(5 * font_size)))
    return figure.fast_figure(data, layout, dark, font_size, figure.grow(380, font_size),
                              f"{kind_title}: how spread out each head's attention is, on your sentence")


def cosine_similarity(pe: np.ndarray) -> np.ndarray:
    """cos(PE(p), PE(q)) for every pair of positions: (T, T)."""
    unit = pe / np.maximum(np.linalg.norm(pe, axis=1, keepdims=True), 1e-12)
    return unit @ unit.T


def positions_figure(named: Sequence[tuple[str, np.ndarray]], longest: int, n_input: int, dark: bool, font_size: int,
                     narrow: bool = False):
    """Side by side (stacked on a phone): how alike the position vectors are, cos(PE(p), PE(q)), for each model's
    table; a dashed line at the longest training sentence (a learned table is random past it), the input
    outlined."""
    data, layout, n = [], {}, len(named)
    for i, (title, pe) in enumerate(named, start=1):
        sim = cosine_similarity(np.asarray(pe, dtype=np.float64))
        T = sim.shape[0]
        x0, y0 = ((0.0, 1 - i / n + 0.06 / n) if narrow else ((i - 1) / n + 0.03 * (i > 1), 0.0))
        w, h = (1.0, 1 / n - 0.12 / n) if narrow else (1 / n - 0.03, 1.0)
        data.append(dict(type="heatmap", z=figure.f32(sim, 3), x=list(range(T)), y=list(range(T)), zmin=-1, zmax=1,
                         colorscale=figure.SCORE_SCALE, zmid=0, xaxis=f"x{i}", yaxis=f"y{i}", showscale=i == n,
                         colorbar=dict(title=dict(text="cosine"), thickness=12),
                         hovertemplate=f"{html.escape(title)}<br>positions %{{y}} · %{{x}}: %{{z:.2f}}<extra></extra>"))
        layout[f"xaxis{i}"] = dict(domain=[round(x0, 4), round(x0 + w, 4)], anchor=f"y{i}",
                                   title=dict(text=f"{title}: position q"))
        layout[f"yaxis{i}"] = dict(domain=[round(y0, 4), round(y0 + h, 4)], anchor=f"x{i}", autorange="reversed",
                                   title=dict(text="position p"))
    shapes = []
    for i in range(1, n + 1):
        line = dict(color="#E69F00", width=2, dash="dash")
        shapes += [dict(type="line", xref=f"x{i}", yref=f"y{i}", x0=longest - 0.5, x1=longest - 0.5, y0=-0.5,
                        y1=T - 0.5, line=line),
                   dict(type="line", xref=f"x{i}", yref=f"y{i}", y0=longest - 0.5, y1=longest - 0.5, x0=-0.5,
                        x1=T - 0.5, line=line)]
        if n_input:
            shapes.append(dict(type="rect", xref=f"x{i}", yref=f"y{i}", x0=-0.5, y0=-0.5, x1=n_input - 0.5,
                               y1=n_input - 0.5, line=dict(color=QUERY_OUTLINE, width=2)))
    layout["shapes"] = shapes
    size = figure.grow(430, font_size) * (n if narrow else 1)
    return figure.fast_figure(data, layout, dark, font_size, size,
                              f"How alike the position vectors are (dashed: the longest training sentence, "
                              f"{longest} positions; outlined: your input)")
