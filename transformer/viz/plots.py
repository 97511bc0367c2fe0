"""Plotly figures from arrays and token lists. Imports neither torch nor gradio.

Every token label is HTML-escaped before it reaches Plotly (which renders a little HTML
in labels), and axes are numeric with tick text, so repeated tokens keep their own rows.
Figures are built as plain dicts following Plotly's schema and wrapped by ``figure_from_dicts``
(the one place that skips Plotly's validation, for speed; tests/test_plots.py validates every
figure with Plotly and checks that the skip still works).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go

from .figure import (DEFAULT_SCALE, GRID_UNITS, cat_ticks, colorscale_for, esc, esc_all, f32,
                     fast_figure, grow, heatmap_height, label_room, mask_color, mask_hatch, numbered,
                     thousandths, ticks, top_margin)
from .narrow import CHAR_EM, LINE_EM, NARROW_WIDTH
from .presenter import presenter, smaller


def grid_cells(z: np.ndarray, masked: Optional[np.ndarray]) -> list[dict]:
    """A small multiple's cells as heatmap traces (drawn in this order, the same colours), by position from 1:

    - no mask: the (Tq, Tk) thousandths in one byte a cell, capped at 255; then, on top, the exact
      thousandths of every cell above 0.255 (few: the peaks) as columns of key, query and value, framed
      by the first row and column so Plotly gives the sparse cells their full size. Hover falls through
      the frame's gaps to the matrix below, so every cell reads exact to 3 decimals, at ~2 KB a head
      instead of ~3 KB (uint16): what keeps a 6-layer grid of a 30-word sentence under 150 KB;
    - masked (causal attention): only the computed cells, as columns (no float NaN is needed)."""
    index = np.uint8 if max(np.shape(z)) < 256 else np.uint16     # 1 byte an index for up to 255 positions
    if masked is not None:
        rows, cols = np.nonzero(~masked)
        return [dict(z=thousandths(z[rows, cols]), x=(cols + 1).astype(index), y=(rows + 1).astype(index))]
    t = np.rint(np.clip(np.asarray(z, dtype=np.float64), 0.0, 1.0) * GRID_UNITS).astype(np.int64)
    base = dict(z=np.minimum(t, 255).astype(np.uint8), x0=1, dx=1, y0=1, dy=1)
    peak = t > 255
    if not peak.any():
        return [base]
    frame = peak.copy()
    frame[0, :] = frame[:, 0] = True
    rows, cols = np.nonzero(frame)
    return [base,
            dict(z=t[rows, cols].astype(np.uint16), x=(cols + 1).astype(index), y=(rows + 1).astype(index))]


def attention_heatmap(
    attn: np.ndarray,                  # (Tq, Tk) probabilities
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "",
    masked: Optional[np.ndarray] = None,   # bool (Tq, Tk): True where the cell is masked (drawn hatched grey)
    zmax: Optional[float] = None,
    colorscale: str = DEFAULT_SCALE,
    dark: bool = False,
    font_size: int = 14,
    value_name: str = "weight",
    xaxis_title: str = "key (attended to)",
    yaxis_title: str = "query (attending)",
    zmin: Optional[float] = 0.0,
    height: Optional[int] = None,
) -> go.Figure:
    """One large heatmap with numbered pieces on both axes; the hover names both ("query 3 ▁la ·
    key 5 ▁la: 0.412"). Masked cells are a hatched fixed grey, said in the colour bar."""
    z = np.array(attn, dtype=np.float64)
    if masked is not None:
        z = np.where(masked, np.nan, z)
    Tq, Tk = z.shape
    q, k = numbered(query_labels), numbered(key_labels)
    bar_title = value_name + ("<br>▨ = masked" if masked is not None and masked.any() else "")
    heat = dict(type="heatmap", z=f32(z, 4), x=k, y=q, colorscale=colorscale_for(colorscale, dark), zmin=zmin,
                zmax=zmax, hoverongaps=False,
                hovertemplate=f"query %{{y}} · key %{{x}}: %{{z:.3f}}<extra>{value_name}</extra>",
                colorbar=dict(title=dict(text=bar_title), thickness=14), xgap=1, ygap=1)
    layout = dict(xaxis=dict(title=dict(text=xaxis_title), side="bottom", tickangle=-45, showgrid=False,
                             **cat_ticks(k)),
                  yaxis=dict(title=dict(text=yaxis_title), autorange="reversed", showgrid=False,
                             **cat_ticks(q)))
    if masked is not None and masked.any():
        layout["plot_bgcolor"] = mask_color(colorscale)
        layout["shapes"] = [mask_hatch(Tq, Tk)]
    size = height or heatmap_height(Tq, k, font_size, bool(title))
    return fast_figure([heat], layout, dark, font_size, size, title)


def grid_axes(n: int, x0: float, y1: float, w: float, h: float) -> dict:
    """The n-th small multiple's axes: no ticks, queries downwards, in its cell of the grid."""
    return {f"xaxis{n}": dict(domain=[round(max(0.0, x0), 4), round(min(1.0, x0 + w), 4)], anchor=f"y{n}",
                              showticklabels=False, showgrid=False),
            f"yaxis{n}": dict(domain=[round(max(0.0, y1 - h), 4), round(min(1.0, y1), 4)], anchor=f"x{n}",
                              showticklabels=False, showgrid=False, autorange="reversed")}


def grid_label(text: str, x: float, y: float, xanchor: str, yanchor: str, font_size: int) -> dict:
    return dict(text=text, x=x, y=y, xref="paper", yref="paper", xanchor=xanchor, yanchor=yanchor,
                showarrow=False, font=dict(size=smaller(font_size, 1, 9)))


def attention_grid(
    attn: np.ndarray,                   # (L, H, Tq, Tk)
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "",
    masked: Optional[np.ndarray] = None,
    shared_scale: bool = True,
    colorscale: str = DEFAULT_SCALE,
    dark: bool = False,
    font_size: int = 12,
) -> go.Figure:
    """Layers x heads small multiples (BertViz's model view, as heatmaps).

    Built as a plain figure dict and wrapped without per-property validation: with 24+
    subplots, plotly's validation costs far more than the drawing (see bench/run.py)."""
    L, H, Tq, Tk = attn.shape
    # Cells by position (from 1), the pieces' names not repeated in each of the L × H small multiples: the
    # hover names positions (the large map above names the pieces).
    where = "query %{y} · key %{x}"
    zmax = float(np.rint(np.nanmax(attn) * GRID_UNITS)) if shared_scale and attn.size else None
    scale = colorscale_for(colorscale, dark)
    gap_x, gap_y = 0.012, 0.04
    w = (1 - gap_x * (H - 1)) / H
    h_ = (1 - gap_y * (L - 1)) / L
    data, layout = [], {}
    annotations = []
    for l in range(L):
        for h in range(H):
            n = l * H + h + 1
            head_max = float(np.rint(np.nanmax(attn[l, h]) * GRID_UNITS)) if attn[l, h].size else 1.0
            for cells in grid_cells(attn[l, h], masked):
                trace = dict(type="heatmap", **cells, showscale=False, hoverongaps=False, xaxis=f"x{n}",
                             yaxis=f"y{n}", hovertemplate=f"L{l + 1} H{h + 1}<br>{where}: weight "
                                                          f"%{{z}}/{GRID_UNITS}<extra></extra>")
                if shared_scale:
                    trace["coloraxis"] = "coloraxis"
                else:       # both traces of a head on the head's own 0..max range, so their colours agree
                    trace.update(colorscale=scale, zauto=False, zmin=0, zmax=max(head_max, 1.0))
                data.append(trace)
            x0, y1 = h * (w + gap_x), 1 - l * (h_ + gap_y)
            layout.update(grid_axes(n, x0, y1, w, h_))
            if l == 0:      # heads named once above the top row, layers once left of each row
                annotations.append(grid_label(f"H{h + 1}", round(x0 + w / 2, 4), 1, "center", "bottom",
                                              font_size))
            if h == 0:
                annotations.append(grid_label(f"L{l + 1}", 0, round(y1 - h_ / 2, 4), "right", "middle",
                                              font_size))
    layout["annotations"] = annotations
    # L/H labels
    layout["margin"] = dict(l=10 + 2 * font_size, r=10, t=top_margin(font_size, title) + font_size, b=10)
    if masked is not None and masked.any():
        layout["plot_bgcolor"] = mask_color(colorscale)
    if shared_scale:
        ticks = np.linspace(0, zmax, 5) if zmax else [0]
        layout["coloraxis"] = dict(colorscale=scale, cmin=0, cmax=zmax,
                                   colorbar=dict(title=dict(text="weight"), thickness=12, tickmode="array",
                                                 tickvals=[round(float(t)) for t in ticks],
                                                 ticktext=[f"{t / GRID_UNITS:.2f}" for t in ticks]))
    return fast_figure(data, layout, dark, font_size, grow(150 * L + 90, font_size + 2), title)


def topk_bar(pieces: Sequence[str], probs: Sequence[float], chosen: int = 0, title: str = "",
             dark: bool = False, font_size: int = 14) -> go.Figure:
    """Horizontal bars of the top-k next-token probabilities; the chosen (greedy) one highlighted."""
    labels = esc_all(pieces)
    colors = ["#E69F00" if i == chosen else "#56B4E9" for i in range(len(labels))]
    bar = dict(type="bar", x=f32(probs, 4), y=list(range(len(labels))), orientation="h",
               marker=dict(color=colors), text=[f"{p:.1%}" for p in probs], textposition="outside",
               customdata=labels, hovertemplate="%{customdata}: %{x:.2%}<extra></extra>", cliponaxis=False)
    layout = dict(yaxis=dict(autorange="reversed", **ticks(pieces)),
                  xaxis=dict(range=[0, 1.15], tickformat=".0%"))   # the title says these are probabilities
    per_bar = 1.35 if presenter(font_size) else 1.8     # presenter mode: the step's two figures on one screen
    height = (top_margin(font_size, title) + int(per_bar * font_size) * max(len(labels), 3)
              + int(1.5 * font_size) + 20)
    return fast_figure([bar], layout, dark, font_size, height, title)


def source_attention_bar(src_pieces: Sequence[str], weights: Sequence[float], title: str = "",
                         dark: bool = False, font_size: int = 14) -> go.Figure:
    """Which source pieces the decoder looked at in one step (bars over the source), on a fixed
    0–1 axis so that steps and heads compare; long pieces are cut on the axis, whole in the hover."""
    w = np.asarray(weights, dtype=np.float64)
    top = int(np.argmax(w)) if w.size else -1
    x = numbered(src_pieces)
    bar = dict(type="bar", x=x, y=f32(w, 4),
               marker=dict(color=["#D55E00" if i == top else "#0072B2" for i in range(len(w))]),
               hovertemplate="source %{x}: %{y:.3f}<extra></extra>")
    layout = dict(xaxis=dict(tickangle=-45, **cat_ticks(x)),
                  yaxis=dict(title=dict(text="attention"), range=[0, 1], autorange=False, fixedrange=True))
    # presenter: beside the top-k, on screen
    plot = 9 * font_size if presenter(font_size) else grow(205, font_size)
    height = top_margin(font_size, title) + plot + label_room(x, font_size)
    return fast_figure([bar], layout, dark, font_size, height, title)


def cross_steps_heatmap(attn: np.ndarray, step: int, out_labels: Sequence[str], src_labels: Sequence[str],
                        title: str = "", colorscale: str = DEFAULT_SCALE, dark: bool = False,
                        font_size: int = 14) -> go.Figure:
    """Cross-attention (T, S) of every step so far: rows 1..step drawn, later rows still empty and unnamed
    (the pieces to come are not given away), the current row outlined, so the alignment grows as the steps
    advance. Colour range fixed at 0–1. A long translation gets one row label per line of type, never
    one on another."""
    T, S = attn.shape
    z = np.where(np.arange(T)[:, None] < step, attn, np.nan)
    q = [label if t < step else f"{t + 1} ·" for t, label in enumerate(numbered(out_labels))]
    k = numbered(src_labels)
    height = heatmap_height(T, k, font_size, bool(title), cap=1000)
    rows_room = max(4, int((height - top_margin(font_size, title) - label_room(k, font_size))
                           / (1.25 * font_size)))
    heat = dict(type="heatmap", z=f32(z, 3), x=k, y=q, colorscale=colorscale_for(colorscale, dark), zmin=0,
                zmax=1, hoverongaps=False, xgap=1, ygap=1,
                colorbar=dict(title=dict(text="weight"), thickness=12),
                hovertemplate="step %{y} · source %{x}: %{z:.3f}<extra></extra>")
    current = dict(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=step - 1.5, y1=step - 0.5,
                   line=dict(color="#E69F00", width=3))
    layout = dict(xaxis=dict(tickangle=-45, showgrid=False, title=dict(text="source piece"), **cat_ticks(k)),
                  yaxis=dict(autorange="reversed", showgrid=False, title=dict(text="step → piece produced"),
                             **cat_ticks(q, max_ticks=rows_room)),
                  shapes=[current])
    return fast_figure([heat], layout, dark, font_size, height, title)


# Short cell labels for the head summary (the table and the hover carry the full name).
SHORT_PATTERN = {"previous token": "prev.", "next token": "next", "itself": "itself",
                 "end of sentence": "</s>", "start token <s>": "<s>", "diagonal / monotonic": "diag.",
                 "broad (spread out)": "broad", "mixed": "mixed", "": "–"}


def summary_heatmap(values: np.ndarray, labels: Sequence[Sequence[str]], title: str = "",
                    value_name: str = "entropy", colorscale: str = "Cividis", dark: bool = False,
                    font_size: int = 14, scores: Optional[np.ndarray] = None,
                    patterns: Optional[Sequence[Sequence[str]]] = None,
                    ranks: Optional[np.ndarray] = None) -> go.Figure:
    """(L, H) values with a short label in every cell (a head's label; given patterns and scores, the
    strongest pattern's share, in brackets when it is too weak to be the label; given ranks, "#r"),
    written white on dark cells and black on light ones."""
    L, H = values.shape
    x, y = [f"head {h + 1}" for h in range(H)], [f"layer {l + 1}" for l in range(L)]
    full = [[esc(labels[l][h]) for h in range(H)] for l in range(L)]
    heat = dict(type="heatmap", z=f32(values, 3), x=x, y=y, customdata=full, colorscale=colorscale, zmin=0,
                zmax=1, colorbar=dict(title=dict(text=value_name), thickness=12), xgap=2, ygap=2,
                hovertemplate="%{y}, %{x}<br>" + value_name + ": %{z:.2f}<br>%{customdata}<extra></extra>")
    size = font_size if presenter(font_size) else max(10, min(font_size, int(font_size * 7 / max(H, 1))))
    notes = []
    for l in range(L):
        for h in range(H):
            text = esc(SHORT_PATTERN.get(labels[l][h], labels[l][h]))
            if scores is not None and patterns is not None:
                if labels[l][h] == patterns[l][h]:
                    text += f"<br>{scores[l, h]:.0%}"
                elif patterns[l][h]:   # too weak to be the label: its strongest pattern, in brackets
                    text += (f"<br>({esc(SHORT_PATTERN.get(patterns[l][h], patterns[l][h]))} "
                             f"{scores[l, h]:.0%})")
            if ranks is not None:
                text = f"<b>#{int(ranks[l, h])}</b> " + text
            notes.append(dict(x=x[h], y=y[l], text=text, showarrow=False,
                              font=dict(size=size, color="white" if values[l, h] < 0.45 else "black")))
    layout = dict(yaxis=dict(autorange="reversed"), annotations=notes)
    return fast_figure([heat], layout, dark, font_size,
                       top_margin(font_size, title) + grow(56, font_size) * L + 40, title)


def summary_heatmap_narrow(values: np.ndarray, labels: Sequence[Sequence[str]], title: str = "",
                           value_name: str = "entropy", colorscale: str = "Cividis", dark: bool = False,
                           font_size: int = 14, scores: Optional[np.ndarray] = None,
                           patterns: Optional[Sequence[Sequence[str]]] = None,
                           ranks: Optional[np.ndarray] = None) -> go.Figure:
    """The head summary for a phone's column: turned a quarter (a column a layer, a row a head: a model has
    fewer layers than heads), a cell's text on lines of its own (the rank, the label, the pattern's share when
    it is the label) in a type that fits the cell's width, and everything else in the hover a tap shows."""
    L, H = values.shape
    x, y = [f"layer {l + 1}" for l in range(L)], [f"head {h + 1}" for h in range(H)]
    lines, hover = [[] for _ in range(H)], [[] for _ in range(H)]
    for h in range(H):
        for l in range(L):
            label = SHORT_PATTERN.get(labels[l][h], labels[l][h])
            cell = ([f"#{int(ranks[l, h])}"] if ranks is not None else []) + [label]
            more = [f"entropy {values[l, h]:.2f}", esc(labels[l][h] or "–")]
            if scores is not None and patterns is not None and patterns[l][h]:
                if labels[l][h] == patterns[l][h]:
                    cell.append(f"{scores[l, h]:.0%}")
                more.append(f"strongest pattern: {esc(patterns[l][h])} ({scores[l, h]:.0%})")
            if ranks is not None:
                more.append(f"#{int(ranks[l, h])} most distinctive")
            lines[h].append(cell)
            hover[h].append(f"layer {l + 1}, head {h + 1}<br>" + "<br>".join(more))
    left = 3 * CHAR_EM * font_size + 16                        # the head numbers ("H8")
    # less the gap between cells and a little room
    cell_w = (NARROW_WIDTH - 20 - left) / max(L, 1) - 6
    chars = max(len(t) for row in lines for cell in row for t in cell)
    size = int(max(9, min(font_size - 2, cell_w / (CHAR_EM * chars))))
    notes = [dict(x=x[l], y=y[h], showarrow=False, text="<br>".join(
                      f"<b>{esc(t)}</b>" if i == 0 and ranks is not None else esc(t)
                      for i, t in enumerate(lines[h][l])),
                  font=dict(size=size, color="white" if values[l, h] < 0.45 else "black"))
             for h in range(H) for l in range(L)]
    heat = dict(type="heatmap", z=f32(values.T, 3), x=x, y=y, customdata=hover, colorscale=colorscale, zmin=0,
                zmax=1, colorbar=dict(title=dict(text=value_name), thickness=12), xgap=2, ygap=2,
                hovertemplate="%{customdata}<extra></extra>")
    n_lines = max(len(cell) for row in lines for cell in row)
    row_h = int(n_lines * LINE_EM * size + 12)
    # L1, H1: as the all-heads grid
    axis = lambda cats: dict(type="category", tickmode="array", tickvals=cats, showgrid=False,   # noqa: E731
                             ticktext=[f"{c[0].upper()}{c.split()[-1]}" for c in cats])
    layout = dict(xaxis=axis(x), yaxis=dict(axis(y), autorange="reversed"), annotations=notes)
    height = top_margin(font_size, title) + row_h * H + int(LINE_EM * font_size) + 30
    return fast_figure([heat], layout, dark, font_size, height, title)
