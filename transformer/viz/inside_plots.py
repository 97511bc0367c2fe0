"""Inside one head's figures: the four steps of scaled dot-product attention for one head (QKᵀ, ÷√d_k, the
mask, the softmax) on one colour range, and one query's softmax with and without the division. From arrays (no
torch, no gradio)."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go

from ..config import CELL_VALUES_MAX_PIECES
from .analysis import HeadSteps
from .figure import (DEFAULT_SCALE, SCORE_SCALE, cat_ticks, colorscale_for, f32, fast_figure, grow,
                     label_room, mask_hatch, numbered, top_margin)
from .presenter import presenter, smaller
from .style import MASK_COLOR, QUERY_OUTLINE


def _inside_colour_axes(lim: float, score_len: float, weight_len: float, colorscale: str, dark: bool) -> dict:
    """Inside one head's two colour bars: the scores' (diverging, centred on 0, beside panels 1-3 from the
    top) and the softmax weights' (0 to 1, beside panel 4 at the bottom)."""
    return dict(coloraxis=dict(colorscale=SCORE_SCALE, cmid=0, cmin=-lim, cmax=lim,
                               colorbar=dict(title=dict(text="score"), thickness=12, len=round(score_len, 4),
                                             y=1, yanchor="top")),
                coloraxis2=dict(colorscale=colorscale_for(colorscale, dark), cmin=0, cmax=1,
                                colorbar=dict(title=dict(text="weight"), thickness=12,
                                              len=round(weight_len, 4), y=0, yanchor="bottom")))


def _inside_sizes(Tq: int, k: Sequence[str], font_size: int, columns: int) -> tuple[bool, int, int, int]:
    """Inside one head's sizes: (values in the cells?, a panel's height, the room between panels, the key
    labels' room), in px. A value at the projector's type takes two cells' room: half as many
    pieces get values."""
    large = presenter(font_size)
    values = max(Tq, len(k)) <= (CELL_VALUES_MAX_PIECES if columns == 2 and not large
                                 else CELL_VALUES_MAX_PIECES // 2)
    row = max(12, int(1.0 * font_size))
    # rows a label high while they fit (Plotly labels every other one past that), a value high with values
    if large:
        row = int((1.8 if values else 1.25 if max(Tq, len(k)) <= 16 else 0.85) * font_size)
    xlab = label_room(k, font_size, 60 if columns == 2 else 90)
    # stacked: every panel keeps its key labels
    between = int(1.3 * font_size) + (xlab if columns == 1 else 0)
    return values, row * max(Tq, 4), between, xlab


def inside_head_figure(steps: HeadSteps, query_labels: Sequence[str], key_labels: Sequence[str], d_k: int,
                       scaled: bool = True, title: str = "", dark: bool = False, font_size: int = 13,
                       colorscale: str = DEFAULT_SCALE, query: Optional[int] = None,
                       columns: int = 2) -> go.Figure:
    """The four steps of scaled dot-product attention for one head, two by two (or one above the other,
    ``columns=1``, for a phone's column). The three score panels share one colour range and colour bar (so
    ÷√d_k is visibly a shrink), the softmax has its own 0–1 bar; masked cells are hatched; the row of
    ``query`` (0-based) is outlined in every panel; short sentences get the values in the cells."""
    causal = not steps.mask.all()
    # scaled=False: the no-scaling
    panels = [("1. QKᵀ (raw scores)", steps.raw, "coloraxis"),
              (f"2. ÷ √d_k (√{d_k} = {np.sqrt(d_k):.2f})", steps.scaled, "coloraxis"),
              ("3. mask (hatched = −∞)" if causal else "3. mask (nothing masked)",
               steps.masked, "coloraxis"),
              ("4. softmax" if scaled else "4. softmax WITHOUT ÷√d_k",
               steps.softmax if scaled else steps.softmax_unscaled, "coloraxis2")]
                                                                                          # model's own, or
                                                                                          # the toggle
    q, k = numbered(query_labels), numbered(key_labels)
    Tq, Tk = len(q), len(k)
    values, panel, between, xlab = _inside_sizes(Tq, k, font_size, columns)
    rows = 4 // columns
    top = top_margin(font_size, title) + int(1.3 * font_size)
    plot_h = rows * panel + (rows - 1) * between
    lim = float(np.nanmax(np.abs(steps.raw))) if np.isfinite(steps.raw).any() else 1.0
    gap, data, notes, shapes = 0.07, [], [], []
    w = (1 - gap * (columns - 1)) / columns
    score_len = 0.45 if columns == 2 else (2 * (panel + between) + panel) / plot_h   # beside panels 1-3
    layout = dict(**_inside_colour_axes(lim, score_len, 0.45 if columns == 2 else panel / plot_h, colorscale,
                                        dark),
                  margin=dict(l=10, r=10, t=top, b=xlab + 10))
    for c, (name, z, axis) in enumerate(panels, start=1):
        col, r = (c - 1) % columns, (c - 1) // columns
        x0 = col * (w + gap)
        y1 = 1 - r * (panel + between) / plot_h
        y0 = max(0.0, y1 - panel / plot_h)
        tr = dict(type="heatmap", z=f32(z, 3), x=k, y=q, coloraxis=axis, hoverongaps=False, xaxis=f"x{c}",
                  yaxis=f"y{c}", xgap=1, ygap=1,
                  hovertemplate=f"{name}<br>query %{{y}} · key %{{x}}: %{{z:.3f}}<extra></extra>")
        if values:
            tr.update(texttemplate="%{z:.2f}" if axis == "coloraxis2" else "%{z:.1f}",
                      textfont=dict(size=smaller(font_size, 2, 10)))
        data.append(tr)
        layout[f"xaxis{c}"] = dict(domain=[round(x0, 6), round(x0 + w, 6)], anchor=f"y{c}", showgrid=False,
                                   tickangle=-60 if columns == 2 else -90,
                                   showticklabels=columns == 1 or r == rows - 1, **cat_ticks(k))
        layout[f"yaxis{c}"] = dict(domain=[round(y0, 6), round(y1, 6)], anchor=f"x{c}", autorange="reversed",
                                   showgrid=False, showticklabels=col == 0, **cat_ticks(q))
        notes.append(dict(text=f"<b>{name}</b>", x=x0, y=y1, xref="paper", yref="paper", xanchor="left",
                          yanchor="bottom", showarrow=False))
        if c >= 3 and causal:
            shapes.append(mask_hatch(Tq, Tk, f"x{c}", f"y{c}"))
        if query is not None and 0 <= query < Tq:       # the query row the plot below follows
            shapes.append(dict(type="rect", xref=f"x{c}", yref=f"y{c}", x0=-0.5, x1=Tk - 0.5, y0=query - 0.5,
                               y1=query + 0.5, line=dict(color=QUERY_OUTLINE, width=2.5), layer="above"))
    layout.update(annotations=notes, shapes=shapes)
    if causal:
        layout["plot_bgcolor"] = MASK_COLOR
    return fast_figure(data, layout, dark, font_size, top + plot_h + xlab + 10, title)


def softmax_temperature_figure(row_scaled: np.ndarray, row_unscaled_softmax: np.ndarray,
                               row_scaled_softmax: np.ndarray, key_labels: Sequence[str], title: str = "",
                               dark: bool = False, font_size: int = 14) -> go.Figure:
    """One query row: softmax with and without the 1/√d_k scaling, the paper's argument in one plot."""
    x = numbered(key_labels)
    hover = "key %{x}: %{y:.3f}<extra>%{fullData.name}</extra>"
    data = [dict(type="bar", x=x, y=f32(row_scaled_softmax, 4), name="softmax(QKᵀ/√d_k)",
                 marker=dict(color="#0072B2"), hovertemplate=hover),
            dict(type="bar", x=x, y=f32(row_unscaled_softmax, 4), name="softmax(QKᵀ) — unscaled",
                 marker=dict(color="#D55E00"), hovertemplate=hover)]
    room = label_room(x, font_size)
    layout = dict(barmode="group", legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  xaxis=dict(tickangle=-45, **cat_ticks(x)),
                  yaxis=dict(title=dict(text="attention weight"), range=[0, 1.05]),
                  margin=dict(l=10, r=10, t=top_margin(font_size, title), b=room + 2 * font_size + 10))
    return fast_figure(data, layout, dark, font_size, grow(300, font_size) + room + 2 * font_size, title)


