"""Plotly figures from arrays and token lists. Imports neither torch nor gradio.

Every token label is HTML-escaped before it reaches Plotly (which renders a little HTML
in labels), and axes are numeric with tick text, so repeated tokens keep their own rows.
Figures are built as plain dicts following Plotly's schema and wrapped by ``figure_from_dicts``
(the one place that skips Plotly's validation, for speed; tests/test_plots.py validates every
figure with Plotly and checks that the skip still works).
"""
from __future__ import annotations

import copy
import functools
import html
from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go

import plotly.colors as pc

from ..config import (BASE_FONT, CELL_VALUES_MAX_PIECES, LABEL_MAX_CHARS, MASK_COLOR, MASK_COLOR_GREYS)
from .analysis import HeadSteps

def _stops(colors: Sequence[str]) -> list:
    """An explicit colour scale (a list of [position, colour]) from colours spread evenly."""
    n = len(colors) - 1
    return [[round(i / n, 4), c] for i, c in enumerate(colors)]


# The offered scales, as plotly.js draws them: a name plotly.js knows, or an explicit list of colours
# (plotly.js has no "Magma"; its "Blues" and "Greys" run dark to light). tests/test_plots.py checks
# every scale in the figures against plotly.js's own list of names.
COLORSCALES = {"Viridis": "Viridis", "Cividis": "Cividis", "Magma": _stops(pc.sequential.Magma),
               "Blues": _stops(pc.sequential.Blues), "Greys": _stops(pc.sequential.Greys)}
REVERSED_IN_DARK = ("Blues", "Greys")   # light → dark in the light look; dark → light in the dark one
DEFAULT_SCALE = "Viridis"   # perceptually uniform and readable by colour-blind viewers
# Scores: ColorBrewer's red-white-blue (plotly.js's own "RdBu" is grey in the middle, like a masked cell).
SCORE_SCALE = _stops(pc.diverging.RdBu)


def colorscale_for(name: str, dark: bool = False):
    """The scale as plotly.js should draw it, so that strong attention is the most salient colour:
    dark on the light page, bright on the dark one."""
    scale = COLORSCALES.get(name, COLORSCALES[DEFAULT_SCALE])
    if dark and name in REVERSED_IN_DARK:
        return [[round(1 - p, 4), c] for p, c in reversed(scale)]
    return scale


def mask_color(name: str) -> str:
    return MASK_COLOR_GREYS if name == "Greys" else MASK_COLOR


def _f32(z, decimals: int = 4) -> np.ndarray:
    """Rounded float32: Plotly sends numpy arrays as typed binary, so this halves the JSON."""
    return np.round(np.asarray(z, dtype=np.float64), decimals).astype(np.float32)


def shown_piece(token: str) -> str:
    """A piece as a reader should see it: a lone word marker is named, not left as a bare "▁"."""
    return "▁ (space)" if token == "▁" else str(token)


GRID_UNITS = 1000   # the all-heads grid sends weights as whole thousandths (uint16): exact to 3 decimals, 2 bytes a cell


def thousandths(z) -> np.ndarray:
    """Weights in [0, 1] as whole thousandths: the same 3 decimals a hover shows, in uint8 when every value
    fits (a broad head never reaches 0.256: one byte a cell), else uint16 (half the bytes of float32 in
    Plotly's typed-array JSON)."""
    t = np.rint(np.clip(np.asarray(z, dtype=np.float64), 0.0, 1.0) * GRID_UNITS)
    return t.astype(np.uint8 if t.size and t.max() <= 255 else np.uint16)


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
    return [base, dict(z=t[rows, cols].astype(np.uint16), x=(cols + 1).astype(index), y=(rows + 1).astype(index))]


def esc(token: str) -> str:
    """A token as Plotly should show it: markup escaped, SentencePiece's word marker kept visible."""
    return html.escape(shown_piece(token), quote=True)


def esc_all(tokens: Sequence[str]) -> list[str]:
    return [esc(t) for t in tokens]


def numbered(tokens: Sequence[str]) -> list[str]:
    """Unique, 1-based category names ("3 ▁la"): repeated pieces keep their own rows, the same
    numbering as every slider, and the hover names position and piece."""
    return [f"{i} {t}" for i, t in enumerate(esc_all(tokens), start=1)]


def short(label: str, n: int = LABEL_MAX_CHARS) -> str:
    """A tick label cut to n characters (escaped labels are cut before their entities: html.unescape first)."""
    raw = html.unescape(label)
    return label if len(raw) <= n else html.escape(raw[: n - 1]) + "…"


def grow(height: int, font_size: int) -> int:
    """A height drawn for the normal type size, grown in proportion for presenter mode."""
    return int(height * max(1.0, font_size / BASE_FONT))


def label_room(labels: Sequence[str], font_size: int, angle: float = 45) -> int:
    """Pixels a row of rotated tick labels (cut to LABEL_MAX_CHARS) takes below an axis."""
    longest = max((min(len(html.unescape(t)), LABEL_MAX_CHARS) for t in labels), default=1)
    return int(0.62 * font_size * longest * np.sin(np.radians(angle)) + 1.2 * font_size)


def _top_margin(font_size: int, title) -> int:
    """Room for the title (and Plotly's toolbar beside it), growing with the type size. (Gradio's label
    badge over a figure is hidden by the app's CSS: the figure's own title names it.)"""
    return int(2.0 * font_size + 22) if title else 30


def _ticks(labels: Sequence[str], max_ticks: int = 80) -> dict:
    n = len(labels)
    step = max(1, int(np.ceil(n / max_ticks)))
    vals = list(range(0, n, step))
    return dict(tickmode="array", tickvals=vals, ticktext=[esc(labels[i]) for i in vals])


def _cat_ticks(cats: Sequence[str], max_ticks: int = 80) -> dict:
    """Every category labelled (cut to LABEL_MAX_CHARS; the hover has the full text) up to max_ticks."""
    step = max(1, int(np.ceil(len(cats) / max_ticks)))
    vals = list(cats[::step])
    return dict(type="category", tickmode="array", tickvals=vals, ticktext=[short(c) for c in vals])


def hatch_path(n_rows: int, n_cols: int) -> str:
    """Diagonal lines across the causal mask's future cells (column > row), in cell coordinates."""
    segs = []
    for c2 in range(2, 2 * n_cols - 1):           # lines x - y = c2 / 2, half a cell apart
        c = c2 / 2
        x0, y0 = c - 0.5, -0.5
        x1 = n_cols - 0.5
        y1 = x1 - c
        if y1 > n_rows - 0.5:
            y1 = n_rows - 0.5
            x1 = y1 + c
        segs.append(f"M{x0:g},{y0:g}L{x1:g},{y1:g}")
    return "".join(segs)


def mask_hatch(n_rows: int, n_cols: int, xref: str = "x", yref: str = "y") -> dict:
    return dict(type="path", path=hatch_path(n_rows, n_cols), xref=xref, yref=yref,
                line=dict(color="rgba(255,255,255,0.85)", width=1), layer="above")


def heatmap_height(n_rows: int, x_labels: Sequence[str], font_size: int, title: bool = True, cap: int = 1400) -> int:
    """Tall enough that every row label has its line at this type size, with room for the title
    above and the rotated column labels and axis title below."""
    row = max(16, int(1.3 * font_size))
    return int(min(cap, max(grow(300, font_size), _top_margin(font_size, title) + row * max(n_rows, 6)
                            + label_room(x_labels, font_size) + 2 * font_size + 20)))


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
    heat = dict(type="heatmap", z=_f32(z, 4), x=k, y=q, colorscale=colorscale_for(colorscale, dark), zmin=zmin,
                zmax=zmax, hoverongaps=False, hovertemplate=f"query %{{y}} · key %{{x}}: %{{z:.3f}}<extra>{value_name}</extra>",
                colorbar=dict(title=dict(text=bar_title), thickness=14), xgap=1, ygap=1)
    layout = dict(xaxis=dict(title=dict(text=xaxis_title), side="bottom", tickangle=-45, showgrid=False, **_cat_ticks(k)),
                  yaxis=dict(title=dict(text=yaxis_title), autorange="reversed", showgrid=False, **_cat_ticks(q)))
    if masked is not None and masked.any():
        layout["plot_bgcolor"] = mask_color(colorscale)
        layout["shapes"] = [mask_hatch(Tq, Tk)]
    size = height or heatmap_height(Tq, k, font_size, bool(title))
    return _fast_figure([heat], layout, dark, font_size, size, title)


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
                trace = dict(type="heatmap", **cells, showscale=False, hoverongaps=False, xaxis=f"x{n}", yaxis=f"y{n}",
                             hovertemplate=f"L{l + 1} H{h + 1}<br>{where}: weight %{{z}}/{GRID_UNITS}<extra></extra>")
                if shared_scale:
                    trace["coloraxis"] = "coloraxis"
                else:       # both traces of a head on the head's own 0..max range, so their colours agree
                    trace.update(colorscale=scale, zauto=False, zmin=0, zmax=max(head_max, 1.0))
                data.append(trace)
            x0 = h * (w + gap_x)
            y1 = 1 - l * (h_ + gap_y)
            layout[f"xaxis{n}"] = dict(domain=[round(max(0.0, x0), 4), round(min(1.0, x0 + w), 4)], anchor=f"y{n}", showticklabels=False, showgrid=False)
            layout[f"yaxis{n}"] = dict(domain=[round(max(0.0, y1 - h_), 4), round(min(1.0, y1), 4)], anchor=f"x{n}", showticklabels=False, showgrid=False,
                                       autorange="reversed")
            if l == 0:      # heads named once above the top row, layers once left of each row
                annotations.append(dict(text=f"H{h + 1}", x=round(x0 + w / 2, 4), y=1, xref="paper", yref="paper",
                                        xanchor="center", yanchor="bottom", showarrow=False,
                                        font=dict(size=max(9, font_size - 1))))
            if h == 0:
                annotations.append(dict(text=f"L{l + 1}", x=0, y=round(y1 - h_ / 2, 4), xref="paper", yref="paper",
                                        xanchor="right", yanchor="middle", showarrow=False,
                                        font=dict(size=max(9, font_size - 1))))
    layout["annotations"] = annotations
    layout["margin"] = dict(l=10 + 2 * font_size, r=10, t=_top_margin(font_size, title) + font_size, b=10)   # L/H labels
    if masked is not None and masked.any():
        layout["plot_bgcolor"] = mask_color(colorscale)
    if shared_scale:
        ticks = np.linspace(0, zmax, 5) if zmax else [0]
        layout["coloraxis"] = dict(colorscale=scale, cmin=0, cmax=zmax,
                                   colorbar=dict(title=dict(text="weight"), thickness=12, tickmode="array",
                                                 tickvals=[round(float(t)) for t in ticks],
                                                 ticktext=[f"{t / GRID_UNITS:.2f}" for t in ticks]))
    return _fast_figure(data, layout, dark, font_size, grow(150 * L + 90, font_size + 2), title)


def figure_from_dicts(data: list, layout: dict) -> go.Figure:
    """A figure from plain dicts, without Plotly's per-property validation: the slow part of a
    redraw (48 ms against 5 ms for the step view, 200 against 10-17 ms for the all-heads grid).
    ``_validate=False`` is a private argument of Plotly's: tests/test_plots.py fails if it stops
    skipping validation, and validates every figure of the app with Plotly itself."""
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def _fast_figure(data: list, layout: dict, dark: bool, font_size: int, height: Optional[int], title: Optional[str]) -> go.Figure:
    types = tuple(sorted({d.get("type", "scatter") for d in data}))
    return figure_from_dicts(data, {**_style_dict(dark, font_size, height, title, types), **layout})  # a view's margin wins


@functools.lru_cache(maxsize=64)
def _template(dark: bool, trace_types: tuple) -> dict:
    """Plotly's light or dark template with only the trace defaults this figure uses (the full one
    sends defaults for ~40 trace types: ~4 KB more JSON in every figure, and draws the same)."""
    import plotly.io as pio   # at the first figure, not at import (bench/RESULTS.md, section 4: start-up)
    full = pio.templates["plotly_dark" if dark else "plotly_white"].to_plotly_json()
    return dict(layout=full["layout"], data={t: full["data"][t] for t in trace_types if t in full.get("data", {})})


def _style_dict(dark: bool, font_size: int, height: Optional[int], title: Optional[str],
                trace_types: Optional[tuple] = None) -> dict:
    import plotly.io as pio
    template = (copy.deepcopy(_template(dark, trace_types)) if trace_types is not None
                else pio.templates["plotly_dark" if dark else "plotly_white"])
    out = dict(template=template, font=dict(size=font_size),
               paper_bgcolor="rgba(0,0,0,0)", margin=dict(l=10, r=10, t=_top_margin(font_size, title), b=10))
    if title:
        out["title"] = dict(text=title, x=0.01, xanchor="left", font=dict(size=font_size + 1))
    if height:
        out["height"] = height
    return out


def topk_bar(pieces: Sequence[str], probs: Sequence[float], chosen: int = 0, title: str = "",
             dark: bool = False, font_size: int = 14) -> go.Figure:
    """Horizontal bars of the top-k next-token probabilities; the chosen (greedy) one highlighted."""
    labels = esc_all(pieces)
    colors = ["#E69F00" if i == chosen else "#56B4E9" for i in range(len(labels))]
    bar = dict(type="bar", x=_f32(probs, 4), y=list(range(len(labels))), orientation="h", marker=dict(color=colors),
               text=[f"{p:.1%}" for p in probs], textposition="outside", customdata=labels,
               hovertemplate="%{customdata}: %{x:.2%}<extra></extra>", cliponaxis=False)
    layout = dict(yaxis=dict(autorange="reversed", **_ticks(pieces)),
                  xaxis=dict(range=[0, 1.15], tickformat=".0%"))   # the title says these are probabilities
    height = _top_margin(font_size, title) + int(1.8 * font_size) * max(len(labels), 3) + int(1.5 * font_size) + 20
    return _fast_figure([bar], layout, dark, font_size, height, title)


def source_attention_bar(src_pieces: Sequence[str], weights: Sequence[float], title: str = "",
                         dark: bool = False, font_size: int = 14) -> go.Figure:
    """Which source pieces the decoder looked at in one step (bars over the source), on a fixed
    0–1 axis so that steps and heads compare; long pieces are cut on the axis, whole in the hover."""
    w = np.asarray(weights, dtype=np.float64)
    top = int(np.argmax(w)) if w.size else -1
    x = numbered(src_pieces)
    bar = dict(type="bar", x=x, y=_f32(w, 4),
               marker=dict(color=["#D55E00" if i == top else "#0072B2" for i in range(len(w))]),
               hovertemplate="source %{x}: %{y:.3f}<extra></extra>")
    layout = dict(xaxis=dict(tickangle=-45, **_cat_ticks(x)),
                  yaxis=dict(title=dict(text="attention"), range=[0, 1], autorange=False, fixedrange=True))
    height = _top_margin(font_size, title) + grow(205, font_size) + label_room(x, font_size)
    return _fast_figure([bar], layout, dark, font_size, height, title)


def cross_steps_heatmap(attn: np.ndarray, step: int, out_labels: Sequence[str], src_labels: Sequence[str],
                        title: str = "", colorscale: str = DEFAULT_SCALE, dark: bool = False,
                        font_size: int = 14) -> go.Figure:
    """Cross-attention (T, S) of every step so far: rows 1..step drawn, later rows still empty, the
    current row outlined, so the alignment grows as the steps advance. Colour range fixed at 0–1."""
    T, S = attn.shape
    z = np.where(np.arange(T)[:, None] < step, attn, np.nan)
    q, k = numbered(out_labels), numbered(src_labels)
    heat = dict(type="heatmap", z=_f32(z, 3), x=k, y=q, colorscale=colorscale_for(colorscale, dark), zmin=0, zmax=1,
                hoverongaps=False, xgap=1, ygap=1, colorbar=dict(title=dict(text="weight"), thickness=12),
                hovertemplate="step %{y} · source %{x}: %{z:.3f}<extra></extra>")
    current = dict(type="rect", xref="paper", yref="y", x0=0, x1=1, y0=step - 1.5, y1=step - 0.5,
                   line=dict(color="#E69F00", width=3))
    layout = dict(xaxis=dict(tickangle=-45, showgrid=False, title=dict(text="source piece"), **_cat_ticks(k)),
                  yaxis=dict(autorange="reversed", showgrid=False, title=dict(text="step → piece produced"),
                             **_cat_ticks(q)),
                  shapes=[current])
    return _fast_figure([heat], layout, dark, font_size, heatmap_height(T, k, font_size, bool(title), cap=1000), title)


# Short cell labels for the head summary (the table and the hover carry the full name).
SHORT_PATTERN = {"previous token": "prev.", "next token": "next", "itself": "itself", "end of sentence": "</s>",
                 "start token <s>": "<s>", "diagonal / monotonic": "diag.", "broad (spread out)": "broad",
                 "mixed": "mixed", "": "–"}


def summary_heatmap(values: np.ndarray, labels: Sequence[Sequence[str]], title: str = "", value_name: str = "entropy",
                    colorscale: str = "Cividis", dark: bool = False, font_size: int = 14,
                    scores: Optional[np.ndarray] = None, patterns: Optional[Sequence[Sequence[str]]] = None) -> go.Figure:
    """(L, H) values with a short label in every cell (a head's label; given patterns and scores, the
    strongest pattern's share, in brackets when it is too weak to be the label),
    written white on dark cells and black on light ones."""
    L, H = values.shape
    x, y = [f"head {h + 1}" for h in range(H)], [f"layer {l + 1}" for l in range(L)]
    full = [[esc(labels[l][h]) for h in range(H)] for l in range(L)]
    heat = dict(type="heatmap", z=_f32(values, 3), x=x, y=y, customdata=full, colorscale=colorscale, zmin=0, zmax=1,
                colorbar=dict(title=dict(text=value_name), thickness=12), xgap=2, ygap=2,
                hovertemplate="%{y}, %{x}<br>" + value_name + ": %{z:.2f}<br>%{customdata}<extra></extra>")
    size = max(10, min(font_size, int(font_size * 7 / max(H, 1))))
    notes = []
    for l in range(L):
        for h in range(H):
            text = esc(SHORT_PATTERN.get(labels[l][h], labels[l][h]))
            if scores is not None and patterns is not None:
                if labels[l][h] == patterns[l][h]:
                    text += f"<br>{scores[l, h]:.0%}"
                elif patterns[l][h]:   # too weak to be the label: its strongest pattern, in brackets
                    text += f"<br>({esc(SHORT_PATTERN.get(patterns[l][h], patterns[l][h]))} {scores[l, h]:.0%})"
            notes.append(dict(x=x[h], y=y[l], text=text, showarrow=False,
                              font=dict(size=size, color="white" if values[l, h] < 0.45 else "black")))
    layout = dict(yaxis=dict(autorange="reversed"), annotations=notes)
    return _fast_figure([heat], layout, dark, font_size, _top_margin(font_size, title) + grow(56, font_size) * L + 40,
                        title)


def positional_heatmap(pe: np.ndarray, n_marked: int = 0, title: str = "Sinusoidal positional encoding",
                       dark: bool = False, font_size: int = 14) -> go.Figure:
    """The PE matrix, positions x dimensions; the input's positions marked by a box."""
    T, D = pe.shape
    # Values as whole thousandths in int16 (as the all-heads grids): exact to 3 decimals, half the bytes of float32.
    heat = dict(type="heatmap", z=np.round(np.asarray(pe) * GRID_UNITS).astype(np.int16), x=list(range(D)),
                y=list(range(T)), colorscale=SCORE_SCALE, zmid=0, zmin=-GRID_UNITS, zmax=GRID_UNITS,
                colorbar=dict(title=dict(text="value"), thickness=12, tickmode="array",
                              tickvals=[-GRID_UNITS, -GRID_UNITS // 2, 0, GRID_UNITS // 2, GRID_UNITS],
                              ticktext=["−1", "−0.5", "0", "0.5", "1"]),
                hovertemplate=f"position %{{y}}, dimension %{{x}}: %{{z}}/{GRID_UNITS}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="dimension i (even = sin, odd = cos)")),
                  yaxis=dict(title=dict(text="position"), autorange="reversed"))
    if n_marked:
        layout["shapes"] = [dict(type="rect", x0=-0.5, x1=D - 0.5, y0=-0.5, y1=min(n_marked, T) - 0.5,
                                 line=dict(color="#E69F00", width=3))]
        layout["annotations"] = [dict(x=1, xref="paper", y=1, yref="paper", yanchor="bottom", xanchor="right",
                                      text=f"outlined: your input, positions 0–{n_marked - 1} (pieces 1–{n_marked})",
                                      showarrow=False, borderpad=3,
                                      bgcolor="rgba(20,20,20,0.85)" if dark else "rgba(255,255,255,0.92)",
                                      bordercolor="#E69F00", borderwidth=2,
                                      font=dict(color="#f5f5f5" if dark else "#111111"))]
    return _fast_figure([heat], layout, dark, font_size, grow(420, font_size), title)


CURVE_COLORS = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9", "#F0E442", "#999999"]


def positional_curves(pe: np.ndarray, dims: Sequence[int], n_marked: int = 0, dark: bool = False,
                      font_size: int = 14, between: Optional[np.ndarray] = None) -> go.Figure:
    """PE value against position for chosen dimensions: each pair is a sine/cosine of one wavelength.
    The positions a piece can take are dots; `between` (the encoding every 0.5 position) draws the
    smooth curve through them."""
    T, D = pe.shape
    data = []
    for i, d in enumerate(x for x in dims if 0 <= x < D):
        kind, color = "sin" if d % 2 == 0 else "cos", CURVE_COLORS[i % len(CURVE_COLORS)]
        name = f"dim {d} {kind}, λ {2 * np.pi * 10000 ** ((d - d % 2) / D):.1f}"
        if between is not None:
            xs = np.round(np.linspace(0, T - 1, len(between)), 2)
            data.append(dict(type="scatter", x=_f32(xs, 2), y=_f32(between[:, d], 3), mode="lines", name=name,
                             legendgroup=name, line=dict(color=color), hoverinfo="skip"))
        data.append(dict(type="scatter", x=list(range(T)), y=_f32(pe[:, d], 4),
                         mode="markers" if between is not None else "lines", name=name, legendgroup=name,
                         showlegend=between is None, marker=dict(color=color, size=5), line=dict(color=color),
                         hovertemplate=f"{name}<br>position %{{x}}: %{{y:.3f}}<extra></extra>"))
    n_curves = sum(1 for x in dims if 0 <= x < D)
    # The legend sits below the axis title in room of its own (container coordinates), never over it.
    legend_rows = int(np.ceil(n_curves / 2))
    bottom = int(3.2 * font_size + 1.6 * font_size * legend_rows)
    layout = dict(xaxis=dict(title=dict(text="position")), yaxis=dict(title=dict(text="PE value"), range=[-1.1, 1.1]),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=_top_margin(font_size, True), b=bottom))
    if n_marked:
        layout["shapes"] = [dict(type="rect", xref="x", yref="paper", x0=0, x1=n_marked - 1, y0=0, y1=1,
                                 fillcolor="#E69F00", opacity=0.3 if dark else 0.15, line=dict(width=0))]
        layout["annotations"] = [dict(xref="x", yref="paper", x=0, y=1, text="your input", showarrow=False,
                                      xanchor="left", yanchor="bottom")]
    return _fast_figure(data, layout, dark, font_size, grow(380, font_size) + bottom,
                        "Sine and cosine curves of chosen dimensions")


def positional_similarity(pe: np.ndarray, n_marked: int = 0, dark: bool = False, font_size: int = 14) -> go.Figure:
    """Dot products PE(p)·PE(q) for every pair of positions: nearby positions are similar."""
    sim = pe @ pe.T
    T = sim.shape[0]
    heat = dict(type="heatmap", z=_f32(sim, 2), x=list(range(T)), y=list(range(T)), colorscale="Viridis",
                colorbar=dict(title=dict(text="dot"), thickness=12),
                hovertemplate="positions %{y} · %{x}: %{z:.2f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="position q")), yaxis=dict(title=dict(text="position p"), autorange="reversed"))
    if n_marked:
        layout["shapes"] = [dict(type="rect", x0=-0.5, y0=-0.5, x1=n_marked - 0.5, y1=n_marked - 0.5,
                                 line=dict(color="#E69F00", width=3))]
    return _fast_figure([heat], layout, dark, font_size, grow(480, font_size),
                        "Similarity of position encodings, PE(p) · PE(q)")


def inside_head_figure(steps: HeadSteps, query_labels: Sequence[str], key_labels: Sequence[str], d_k: int,
                       scaled: bool = True, title: str = "", dark: bool = False, font_size: int = 13,
                       colorscale: str = DEFAULT_SCALE) -> go.Figure:
    """The four steps of scaled dot-product attention for one head, two by two. The three score
    panels share one colour range and colour bar (so ÷√d_k is visibly a shrink), the softmax has
    its own 0–1 bar; masked cells are hatched; short sentences get the values in the cells."""
    panels = [("1. QKᵀ (raw scores)", steps.raw, "coloraxis"),
              (f"2. ÷ √d_k (√{d_k} = {np.sqrt(d_k):.2f})", steps.scaled, "coloraxis"),
              ("3. mask (hatched = −∞)", steps.masked, "coloraxis"),
              ("4. softmax" if scaled else "4. softmax WITHOUT ÷√d_k",
               steps.softmax if scaled else steps.softmax_unscaled, "coloraxis2")]
    q, k = numbered(query_labels), numbered(key_labels)
    Tq, Tk = len(q), len(k)
    values = max(Tq, Tk) <= CELL_VALUES_MAX_PIECES
    row = max(12, int(1.0 * font_size))
    panel, title_h, xlab = row * max(Tq, 4), int(1.3 * font_size), label_room(k, font_size, 60)
    top = _top_margin(font_size, title) + title_h
    plot_h = 2 * panel + title_h
    lim = float(np.nanmax(np.abs(steps.raw))) if np.isfinite(steps.raw).any() else 1.0
    gap, data, notes, shapes = 0.07, [], [], []
    layout = dict(coloraxis=dict(colorscale=SCORE_SCALE, cmid=0, cmin=-lim, cmax=lim,
                                 colorbar=dict(title=dict(text="score"), thickness=12, len=0.45, y=1, yanchor="top")),
                  coloraxis2=dict(colorscale=colorscale_for(colorscale, dark), cmin=0, cmax=1,
                                  colorbar=dict(title=dict(text="weight"), thickness=12, len=0.45, y=0, yanchor="bottom")),
                  margin=dict(l=10, r=10, t=top, b=xlab + 10))
    w = (1 - gap) / 2
    for c, (name, z, axis) in enumerate(panels, start=1):
        col, r = (c - 1) % 2, (c - 1) // 2
        x0 = col * (w + gap)
        y0 = 0 if r else (panel + title_h) / plot_h
        y1 = panel / plot_h if r else 1
        tr = dict(type="heatmap", z=_f32(z, 3), x=k, y=q, coloraxis=axis, hoverongaps=False, xaxis=f"x{c}",
                  yaxis=f"y{c}", xgap=1, ygap=1,
                  hovertemplate=f"{name}<br>query %{{y}} · key %{{x}}: %{{z:.3f}}<extra></extra>")
        if values:
            tr.update(texttemplate="%{z:.2f}" if axis == "coloraxis2" else "%{z:.1f}",
                      textfont=dict(size=max(8, font_size - 5)))
        data.append(tr)
        layout[f"xaxis{c}"] = dict(domain=[round(x0, 6), round(x0 + w, 6)], anchor=f"y{c}", showgrid=False,
                                   tickangle=-60, showticklabels=r == 1, **_cat_ticks(k))
        layout[f"yaxis{c}"] = dict(domain=[round(y0, 6), round(y1, 6)], anchor=f"x{c}", autorange="reversed",
                                   showgrid=False, showticklabels=col == 0, **_cat_ticks(q))
        notes.append(dict(text=f"<b>{name}</b>", x=x0, y=y1, xref="paper", yref="paper", xanchor="left",
                          yanchor="bottom", showarrow=False))
        if c >= 3 and not steps.mask.all():
            shapes.append(mask_hatch(Tq, Tk, f"x{c}", f"y{c}"))
    layout.update(annotations=notes, shapes=shapes)
    if not steps.mask.all():
        layout["plot_bgcolor"] = MASK_COLOR
    return _fast_figure(data, layout, dark, font_size, top + plot_h + xlab + 10, title)


def softmax_temperature_figure(row_scaled: np.ndarray, row_unscaled_softmax: np.ndarray, row_scaled_softmax: np.ndarray,
                               key_labels: Sequence[str], title: str = "", dark: bool = False,
                               font_size: int = 14) -> go.Figure:
    """One query row: softmax with and without the 1/√d_k scaling, the paper's argument in one plot."""
    x = numbered(key_labels)
    hover = "key %{x}: %{y:.3f}<extra>%{fullData.name}</extra>"
    data = [dict(type="bar", x=x, y=_f32(row_scaled_softmax, 4), name="softmax(QKᵀ/√d_k)", marker=dict(color="#0072B2"),
                 hovertemplate=hover),
            dict(type="bar", x=x, y=_f32(row_unscaled_softmax, 4), name="softmax(QKᵀ) — unscaled",
                 marker=dict(color="#D55E00"), hovertemplate=hover)]
    room = label_room(x, font_size)
    layout = dict(barmode="group", legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  xaxis=dict(tickangle=-45, **_cat_ticks(x)),
                  yaxis=dict(title=dict(text="attention weight"), range=[0, 1.05]),
                  margin=dict(l=10, r=10, t=_top_margin(font_size, title), b=room + 2 * font_size + 10))
    return _fast_figure(data, layout, dark, font_size, grow(300, font_size) + room + 2 * font_size, title)


def empty_figure(message: str, dark: bool = False, font_size: int = 16) -> go.Figure:
    note = dict(text=esc(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                font=dict(size=font_size + 2))
    layout = dict(annotations=[note], xaxis=dict(visible=False), yaxis=dict(visible=False),
                  plot_bgcolor="rgba(0,0,0,0)")
    return _fast_figure([], layout, dark, font_size, 160, None)
