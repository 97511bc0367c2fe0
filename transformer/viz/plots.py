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

from .analysis import HeadSteps

COLORSCALES = {"Viridis": "Viridis", "Cividis": "Cividis", "Magma": "Magma", "Blues": "Blues", "Greys": "Greys"}
DEFAULT_SCALE = "Viridis"   # perceptually uniform and readable by colour-blind viewers


def _f32(z, decimals: int = 4) -> np.ndarray:
    """Rounded float32: Plotly sends numpy arrays as typed binary, so this halves the JSON."""
    return np.round(np.asarray(z, dtype=np.float64), decimals).astype(np.float32)


GRID_UNITS = 1000   # the all-heads grid sends weights as whole thousandths (uint16): exact to 3 decimals, 2 bytes a cell


def thousandths(z) -> np.ndarray:
    """Weights in [0, 1] as whole thousandths, uint16: half the bytes of float32 in Plotly's typed-array JSON,
    and the same 3 decimals a hover shows."""
    return np.rint(np.clip(np.asarray(z, dtype=np.float64), 0.0, 1.0) * GRID_UNITS).astype(np.uint16)


def grid_cells(z: np.ndarray, masked: Optional[np.ndarray], q: list, k: list) -> dict:
    """A small multiple's cells for a heatmap trace: a (Tq, Tk) thousandths matrix with category labels; or,
    with masked cells (causal attention), only the cells that were computed, as columns of query index,
    key index and value (Plotly leaves the missing cells as gaps), so no float NaN is needed."""
    if masked is None:
        return dict(z=thousandths(z), x=k, y=q)
    rows, cols = np.nonzero(~masked)
    index = np.uint8 if max(masked.shape) <= 256 else np.uint16      # 1 byte an index for up to 256 positions
    return dict(z=thousandths(z[rows, cols]), x=cols.astype(index), y=rows.astype(index))


def esc(token: str) -> str:
    """A token as Plotly should show it: markup escaped, SentencePiece's word marker kept visible."""
    return html.escape(str(token), quote=True)


def esc_all(tokens: Sequence[str]) -> list[str]:
    return [esc(t) for t in tokens]


def _top_margin(font_size: int, title) -> int:
    """Room for the title below Gradio's label badge, growing with the type size."""
    return int(3.2 * font_size + 30) if title else 40


def _ticks(labels: Sequence[str], max_ticks: int = 80) -> dict:
    n = len(labels)
    step = max(1, int(np.ceil(n / max_ticks)))
    vals = list(range(0, n, step))
    return dict(tickmode="array", tickvals=vals, ticktext=[esc(labels[i]) for i in vals])


def attention_heatmap(
    attn: np.ndarray,                  # (Tq, Tk) probabilities
    query_labels: Sequence[str],
    key_labels: Sequence[str],
    title: str = "",
    masked: Optional[np.ndarray] = None,   # bool (Tq, Tk): True where the cell is masked (drawn empty)
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
    """One large heatmap with tokens on both axes and exact values on hover."""
    z = np.array(attn, dtype=np.float64)
    if masked is not None:
        z = np.where(masked, np.nan, z)
    Tq, Tk = z.shape
    q = esc_all(query_labels)
    k = esc_all(key_labels)
    custom = np.empty((Tq, Tk, 2), dtype=object)
    for i in range(Tq):
        for j in range(Tk):
            custom[i, j, 0], custom[i, j, 1] = q[i], k[j]
    heat = dict(type="heatmap", z=_f32(z, 4), x=list(range(Tk)), y=list(range(Tq)), customdata=custom,
                colorscale=COLORSCALES.get(colorscale, colorscale), zmin=zmin, zmax=zmax, hoverongaps=False,
                hovertemplate=f"query %{{y}}: %{{customdata[0]}}<br>key %{{x}}: %{{customdata[1]}}<br>{value_name}: %{{z:.3f}}<extra></extra>",
                colorbar=dict(title=dict(text=value_name), thickness=14), xgap=1, ygap=1)
    layout = dict(xaxis=dict(title=dict(text=xaxis_title), side="bottom", tickangle=-45, showgrid=False, **_ticks(key_labels)),
                  yaxis=dict(title=dict(text=yaxis_title), autorange="reversed", showgrid=False, **_ticks(query_labels)))
    size = height or int(min(900, max(360, 140 + 28 * max(Tq, 6))))
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
    # Unique category names ("3 ▁the") keep repeated tokens apart and make hover text cheap.
    q = [f"{i} {t}" for i, t in enumerate(esc_all(query_labels))]
    k = [f"{j} {t}" for j, t in enumerate(esc_all(key_labels))]
    # Masked maps are sent as computed cells only, by index: the hover names positions, not pieces.
    where = "%{y} → %{x}" if masked is None else "query %{y} → key %{x}"
    zmax = float(thousandths(np.nanmax(attn))) if shared_scale and attn.size else None
    scale = COLORSCALES.get(colorscale, colorscale)
    gap_x, gap_y = 0.012, 0.04
    w = (1 - gap_x * (H - 1)) / H
    h_ = (1 - gap_y * (L - 1)) / L
    data, layout = [], {}
    annotations = []
    for l in range(L):
        for h in range(H):
            n = l * H + h + 1
            trace = dict(type="heatmap", **grid_cells(attn[l, h], masked, q, k), showscale=False, hoverongaps=False,
                         xaxis=f"x{n}", yaxis=f"y{n}",
                         hovertemplate=f"layer {l + 1}, head {h + 1}<br>{where}<br>weight %{{z}}/{GRID_UNITS}<extra></extra>")
            if shared_scale:
                trace["coloraxis"] = "coloraxis"
            else:
                trace["colorscale"] = scale
            data.append(trace)
            x0 = h * (w + gap_x)
            y1 = 1 - l * (h_ + gap_y)
            layout[f"xaxis{n}"] = dict(domain=[round(max(0.0, x0), 6), round(min(1.0, x0 + w), 6)], anchor=f"y{n}", showticklabels=False, showgrid=False)
            layout[f"yaxis{n}"] = dict(domain=[round(max(0.0, y1 - h_), 6), round(min(1.0, y1), 6)], anchor=f"x{n}", showticklabels=False, showgrid=False,
                                       autorange="reversed")
            annotations.append(dict(text=f"L{l + 1} H{h + 1}", x=x0 + w / 2, y=y1, xref="paper", yref="paper",
                                    xanchor="center", yanchor="bottom", showarrow=False,
                                    font=dict(size=max(9, font_size - 2))))
    layout["annotations"] = annotations
    if shared_scale:
        ticks = np.linspace(0, zmax, 5) if zmax else [0]
        layout["coloraxis"] = dict(colorscale=scale, cmin=0, cmax=zmax,
                                   colorbar=dict(title=dict(text="weight"), thickness=12, tickmode="array",
                                                 tickvals=[round(float(t)) for t in ticks],
                                                 ticktext=[f"{t / GRID_UNITS:.2f}" for t in ticks]))
    return _fast_figure(data, layout, dark, font_size, int(150 * L + 90), title)


def figure_from_dicts(data: list, layout: dict) -> go.Figure:
    """A figure from plain dicts, without Plotly's per-property validation: the slow part of a
    redraw (48 ms against 5 ms for the step view, 200 against 10-17 ms for the all-heads grid).
    ``_validate=False`` is a private argument of Plotly's: tests/test_plots.py fails if it stops
    skipping validation, and validates every figure of the app with Plotly itself."""
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def _fast_figure(data: list, layout: dict, dark: bool, font_size: int, height: Optional[int], title: Optional[str]) -> go.Figure:
    types = tuple(sorted({d.get("type", "scatter") for d in data}))
    return figure_from_dicts(data, {**layout, **_style_dict(dark, font_size, height, title, types)})


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
                  xaxis=dict(title=dict(text="probability"), range=[0, 1.15], tickformat=".0%"))
    return _fast_figure([bar], layout, dark, font_size, int(120 + 30 * max(len(labels), 3)), title)


def source_attention_bar(src_pieces: Sequence[str], weights: Sequence[float], title: str = "",
                         dark: bool = False, font_size: int = 14) -> go.Figure:
    """Which source pieces the decoder looked at in one step (bars over the source)."""
    w = np.asarray(weights, dtype=np.float64)
    top = int(np.argmax(w)) if w.size else -1
    bar = dict(type="bar", x=list(range(len(src_pieces))), y=_f32(w, 4), customdata=esc_all(src_pieces),
               marker=dict(color=["#D55E00" if i == top else "#0072B2" for i in range(len(w))]),
               hovertemplate="%{customdata}: %{y:.3f}<extra></extra>")
    layout = dict(xaxis=dict(tickangle=-45, **_ticks(src_pieces)),
                  yaxis=dict(title=dict(text="attention"), range=[0, max(0.05, float(w.max()) * 1.1) if w.size else 1]))
    return _fast_figure([bar], layout, dark, font_size, 340, title)


def summary_heatmap(values: np.ndarray, labels: Sequence[Sequence[str]], title: str = "", value_name: str = "entropy",
                    colorscale: str = "Cividis", dark: bool = False, font_size: int = 14) -> go.Figure:
    """(L, H) values with a text label in every cell (e.g. a head's pattern)."""
    L, H = values.shape
    text = [[esc(labels[l][h]) for h in range(H)] for l in range(L)]
    heat = dict(type="heatmap", z=_f32(values, 3), x=[f"head {h + 1}" for h in range(H)],
                y=[f"layer {l + 1}" for l in range(L)], text=text, texttemplate="%{text}",
                textfont=dict(size=max(9, font_size - 3)), colorscale=colorscale, zmin=0, zmax=1,
                colorbar=dict(title=dict(text=value_name), thickness=12), xgap=2, ygap=2,
                hovertemplate="%{y}, %{x}<br>" + value_name + ": %{z:.2f}<br>%{text}<extra></extra>")
    return _fast_figure([heat], dict(yaxis=dict(autorange="reversed")), dark, font_size, 120 + 80 * L, title)


def positional_heatmap(pe: np.ndarray, n_marked: int = 0, title: str = "Sinusoidal positional encoding",
                       dark: bool = False, font_size: int = 14) -> go.Figure:
    """The PE matrix, positions x dimensions; the input's positions marked by a box."""
    T, D = pe.shape
    heat = dict(type="heatmap", z=_f32(pe, 3), x=list(range(D)), y=list(range(T)), colorscale="RdBu", zmid=0,
                zmin=-1, zmax=1, colorbar=dict(title=dict(text="value"), thickness=12),
                hovertemplate="position %{y}, dimension %{x}: %{z:.3f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="dimension i (even = sin, odd = cos)")),
                  yaxis=dict(title=dict(text="position"), autorange="reversed"))
    if n_marked:
        layout["shapes"] = [dict(type="rect", x0=-0.5, x1=D - 0.5, y0=-0.5, y1=min(n_marked, T) - 0.5,
                                 line=dict(color="#E69F00", width=3))]
        layout["annotations"] = [dict(x=D - 1, y=min(n_marked, T) - 0.5, text=f"your input: positions 0–{n_marked - 1}",
                                      showarrow=False, xanchor="right", yanchor="top", font=dict(color="#E69F00"))]
    return _fast_figure([heat], layout, dark, font_size, 480, title)


def positional_curves(pe: np.ndarray, dims: Sequence[int], n_marked: int = 0, dark: bool = False,
                      font_size: int = 14) -> go.Figure:
    """PE value against position for chosen dimensions: each pair is a sine/cosine of one wavelength."""
    T, D = pe.shape
    data = []
    for d in dims:
        if 0 <= d < D:
            kind = "sin" if d % 2 == 0 else "cos"
            data.append(dict(type="scatter", x=list(range(T)), y=_f32(pe[:, d], 4), mode="lines",
                             name=f"dim {d} ({kind}, wavelength {2 * np.pi * 10000 ** ((d - d % 2) / D):.1f})"))
    layout = dict(xaxis=dict(title=dict(text="position")), yaxis=dict(title=dict(text="PE value"), range=[-1.1, 1.1]),
                  legend=dict(orientation="h", y=-0.25))
    if n_marked:
        layout["shapes"] = [dict(type="rect", xref="x", yref="paper", x0=0, x1=n_marked - 1, y0=0, y1=1,
                                 fillcolor="#E69F00", opacity=0.15, line=dict(width=0))]
        layout["annotations"] = [dict(xref="x", yref="paper", x=0, y=1, text="your input", showarrow=False,
                                      xanchor="left", yanchor="bottom")]
    return _fast_figure(data, layout, dark, font_size, 420, "Sine and cosine curves of chosen dimensions")


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
    return _fast_figure([heat], layout, dark, font_size, 480, "Similarity of position encodings, PE(p) · PE(q)")


def inside_head_figure(steps: HeadSteps, query_labels: Sequence[str], key_labels: Sequence[str], d_k: int,
                       scaled: bool = True, title: str = "", dark: bool = False, font_size: int = 13) -> go.Figure:
    """The four steps of scaled dot-product attention for one head side by side."""
    panels = [("QKᵀ (raw scores)", steps.raw, "RdBu", True),
              (f"÷ √d_k = ÷ {np.sqrt(d_k):.2f}", steps.scaled, "RdBu", True),
              ("masked (blank = −∞)", steps.masked, "RdBu", True),
              ("softmax" if scaled else "softmax WITHOUT ÷√d_k",
               steps.softmax if scaled else steps.softmax_unscaled, "Viridis", False)]
    q = [f"{i} {t}" for i, t in enumerate(esc_all(query_labels))]
    k = [f"{j} {t}" for j, t in enumerate(esc_all(key_labels))]
    gap, data, layout, notes = 0.05, [], {}, []
    w = (1 - 3 * gap) / 4
    for c, (name, z, cs, diverging) in enumerate(panels, start=1):
        z = np.asarray(z, dtype=np.float64)
        lim = float(np.nanmax(np.abs(z))) if np.isfinite(z).any() else 1.0
        data.append(dict(type="heatmap", z=_f32(z, 3), x=k, y=q, colorscale=cs, zmid=0 if diverging else None,
                         zmin=-lim if diverging else 0, zmax=lim if diverging else 1, showscale=False, hoverongaps=False,
                         xaxis=f"x{c}", yaxis=f"y{c}",
                         hovertemplate=f"{name}<br>%{{y}} → %{{x}}: %{{z:.3f}}<extra></extra>"))
        x0 = (c - 1) * (w + gap)
        layout[f"xaxis{c}"] = dict(domain=[round(x0, 6), round(min(1.0, x0 + w), 6)], anchor=f"y{c}", showgrid=False,
                                   tickangle=-60)
        layout[f"yaxis{c}"] = dict(domain=[0, 1], anchor=f"x{c}", autorange="reversed", showgrid=False,
                                   showticklabels=c == 1)
        notes.append(dict(text=name, x=x0 + w / 2, y=1, xref="paper", yref="paper", xanchor="center",
                          yanchor="bottom", showarrow=False))
    layout["annotations"] = notes
    return _fast_figure(data, layout, dark, font_size, int(min(700, max(380, 160 + 22 * len(q)))), title)


def softmax_temperature_figure(row_scaled: np.ndarray, row_unscaled_softmax: np.ndarray, row_scaled_softmax: np.ndarray,
                               key_labels: Sequence[str], title: str = "", dark: bool = False,
                               font_size: int = 14) -> go.Figure:
    """One query row: softmax with and without the 1/√d_k scaling, the paper's argument in one plot."""
    x = list(range(len(key_labels)))
    data = [dict(type="bar", x=x, y=_f32(row_scaled_softmax, 4), name="softmax(QKᵀ/√d_k)", marker=dict(color="#0072B2")),
            dict(type="bar", x=x, y=_f32(row_unscaled_softmax, 4), name="softmax(QKᵀ) — unscaled",
                 marker=dict(color="#D55E00"))]
    layout = dict(barmode="group", legend=dict(orientation="h", y=1.12),
                  xaxis=dict(tickangle=-45, **_ticks(key_labels)),
                  yaxis=dict(title=dict(text="attention weight"), range=[0, 1.05]))
    return _fast_figure(data, layout, dark, font_size, 380, title)


def empty_figure(message: str, dark: bool = False, font_size: int = 16) -> go.Figure:
    note = dict(text=esc(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                font=dict(size=font_size + 2))
    layout = dict(annotations=[note], xaxis=dict(visible=False), yaxis=dict(visible=False))
    return _fast_figure([], layout, dark, font_size, 260, None)
