"""The positional encoding's figures: the sinusoidal matrix, its curves, and the similarity between
positions."""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np
import plotly.graph_objects as go

from .figure import GRID_UNITS, SCORE_SCALE, f32, fast_figure, grow, top_margin
from .style import PALETTE


def positional_heatmap(pe: np.ndarray, n_marked: int = 0, title: str = "Sinusoidal positional encoding",
                       dark: bool = False, font_size: int = 14) -> go.Figure:
    """The PE matrix, positions x dimensions; the input's positions marked by a box."""
    T, D = pe.shape
    # Values as whole thousandths in int16 (as the all-heads grids): exact to 3 decimals, half the
    # bytes of float32.
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
                                      text=f"outlined: your input, positions 0–{n_marked - 1} (pieces "
                                           f"1–{n_marked})",
                                      showarrow=False, borderpad=3,
                                      bgcolor="rgba(20,20,20,0.85)" if dark else "rgba(255,255,255,0.92)",
                                      bordercolor="#E69F00", borderwidth=2,
                                      font=dict(color="#f5f5f5" if dark else "#111111"))]
    return fast_figure([heat], layout, dark, font_size, grow(420, font_size), title)




def positional_curves(pe: np.ndarray, dims: Sequence[int], n_marked: int = 0, dark: bool = False,
                      font_size: int = 14, between: Optional[np.ndarray] = None) -> go.Figure:
    """PE value against position for chosen dimensions: each pair is a sine/cosine of one wavelength.
    The positions a piece can take are dots; `between` (the encoding every 0.5 position) draws the
    smooth curve through them."""
    T, D = pe.shape
    data = []
    for i, d in enumerate(x for x in dims if 0 <= x < D):
        kind, color = "sin" if d % 2 == 0 else "cos", PALETTE[i % len(PALETTE)]
        name = f"dim {d} {kind}, λ {2 * np.pi * 10000 ** ((d - d % 2) / D):.1f}"
        if between is not None:
            xs = np.round(np.linspace(0, T - 1, len(between)), 2)
            data.append(dict(type="scatter", x=f32(xs, 2), y=f32(between[:, d], 3), mode="lines", name=name,
                             legendgroup=name, line=dict(color=color), hoverinfo="skip"))
        data.append(dict(type="scatter", x=list(range(T)), y=f32(pe[:, d], 4),
                         mode="markers" if between is not None else "lines", name=name, legendgroup=name,
                         showlegend=between is None, marker=dict(color=color, size=5), line=dict(color=color),
                         hovertemplate=f"{name}<br>position %{{x}}: %{{y:.3f}}<extra></extra>"))
    n_curves = sum(1 for x in dims if 0 <= x < D)
    # The legend sits below the axis title in room of its own (container coordinates), never over it.
    legend_rows = int(np.ceil(n_curves / 2))
    bottom = int(3.2 * font_size + 1.6 * font_size * legend_rows)
    layout = dict(xaxis=dict(title=dict(text="position")),
                  yaxis=dict(title=dict(text="PE value"), range=[-1.1, 1.1]),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=top_margin(font_size, True), b=bottom))
    if n_marked:
        layout["shapes"] = [dict(type="rect", xref="x", yref="paper", x0=0, x1=n_marked - 1, y0=0, y1=1,
                                 fillcolor="#E69F00", opacity=0.3 if dark else 0.15, line=dict(width=0))]
        layout["annotations"] = [dict(xref="x", yref="paper", x=0, y=1, text="your input", showarrow=False,
                                      xanchor="left", yanchor="bottom")]
    return fast_figure(data, layout, dark, font_size, grow(380, font_size) + bottom,
                        "Sine and cosine curves of chosen dimensions")


def positional_similarity(pe: np.ndarray, n_marked: int = 0, dark: bool = False,
                          font_size: int = 14) -> go.Figure:
    """Dot products PE(p)·PE(q) for every pair of positions: nearby positions are similar."""
    sim = pe @ pe.T
    T = sim.shape[0]
    heat = dict(type="heatmap", z=f32(sim, 2), x=list(range(T)), y=list(range(T)), colorscale="Viridis",
                colorbar=dict(title=dict(text="dot"), thickness=12),
                hovertemplate="positions %{y} · %{x}: %{z:.2f}<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="position q")),
                  yaxis=dict(title=dict(text="position p"), autorange="reversed"))
    if n_marked:
        layout["shapes"] = [dict(type="rect", x0=-0.5, y0=-0.5, x1=n_marked - 0.5, y1=n_marked - 0.5,
                                 line=dict(color="#E69F00", width=3))]
    return fast_figure([heat], layout, dark, font_size, grow(480, font_size),
                        "Similarity of position encodings, PE(p) · PE(q)")
