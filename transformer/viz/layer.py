"""Inside one layer (the residual stream, LayerNorm, the feed-forward's hidden units) and the three ways to
compute attention, as figures and text: from the typed results only (no torch, no gradio)."""
from __future__ import annotations

import html

import numpy as np

from ..why import LayerParts
from . import figure
from .style import PALETTE
from .presenter import presenter


def layer_figure(parts: LayerParts, dark: bool, font_size: int):
    """Left: the residual stream's size through the layer (what comes in, what each sub-layer adds, what
    LayerNorm leaves); middle: the spread and mean before and after each LayerNorm; right: the feed-forward's
    hidden units, strongest first."""
    names = [s.name for s in parts.steps]
    bars = [("|x| coming in", [s.norm_in for s in parts.steps], PALETTE[0]),
            ("|Sublayer(x)|: what it adds", [s.norm_added for s in parts.steps], PALETTE[1]),
            ("|x + Sublayer(x)|", [s.norm_sum for s in parts.steps], PALETTE[4]),
            ("after LayerNorm", [s.norm_out for s in parts.steps], PALETTE[2])]
    data = [dict(type="bar", x=names, y=np.round(v, 3).tolist(), name=n, marker=dict(color=c), xaxis="x",
                 yaxis="y")
            for n, v, c in bars]
    ln = [("spread before", [s.std_before for s in parts.steps], PALETTE[5]),
          ("spread after", [s.std_after for s in parts.steps], PALETTE[2]),
          ("mean before", [s.mean_before for s in parts.steps], PALETTE[3]),
          ("mean after", [s.mean_after for s in parts.steps], PALETTE[7])]
    data += [dict(type="bar", x=names, y=np.round(v, 3).tolist(), name=n, marker=dict(color=c), xaxis="x2",
                  yaxis="y2") for n, v, c in ln]
    order = np.sort(parts.hidden)[::-1]
    data.append(dict(type="scatter", mode="lines", x=list(range(1, len(order) + 1)),
                     y=np.round(order, 4).tolist(), name="hidden units, strongest first",
                     line=dict(color=PALETTE[0]), xaxis="x3", yaxis="y3", fill="tozeroy"))
    layout = dict(barmode="group", legend=dict(orientation="h", y=-0.35),
                  xaxis=dict(domain=[0, 0.36]), yaxis=dict(title=dict(text="vector length")),
                  xaxis2=dict(domain=[0.42, 0.7], anchor="y2"),
                  yaxis2=dict(anchor="x2", title=dict(text="over d_model")),
                  xaxis3=dict(domain=[0.76, 1], anchor="y3", type="log", title=dict(text="unit (rank)")),
                  yaxis3=dict(anchor="x3", title=dict(text="ReLU output")))
    title = (f"Inside {parts.stack} layer {parts.layer} at «{figure.esc(parts.piece)}»: residual stream · "
             f"LayerNorm · feed-forward ({parts.firing} of {len(parts.hidden)} units fire)")
    height = figure.grow(520, font_size)
    # a projector: two panels side by side, the feed-forward's below, the legend under all
    if presenter(font_size):
        panel, legend = 13 * font_size, 5 * font_size                 # 3 rows of legend at the type size
        # the upper panels' labels and the title below
        gap = 4 * font_size
        top = figure.top_margin(font_size, title)
        height = top + 2 * panel + gap + legend + 10
        # (px down from the plot's top)
        y = lambda px: round(1 - px / (height - top - legend - 10), 4)   # noqa: E731
        layout.update(xaxis=dict(domain=[0, 0.44]),
                      yaxis=dict(domain=[y(panel), 1], title=dict(text="vector length")),
                      xaxis2=dict(domain=[0.56, 1], anchor="y2"),
                      yaxis2=dict(domain=[y(panel), 1], anchor="x2", title=dict(text="over d_model")),
                      xaxis3=dict(domain=[0, 1], anchor="y3", type="log", dtick=1,   # 1, 10, 100: full-size
                                  title=dict(text="unit (rank)")),
                      yaxis3=dict(domain=[0, y(panel + gap)], anchor="x3", title=dict(text="ReLU output")),
                      legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                      margin=dict(l=10, r=10, t=top, b=legend + 10))
    return figure.fast_figure(data, layout, dark, font_size, height, title)


def layer_text(parts: LayerParts) -> str:
    """What the figure says, in numbers a student can check."""
    lines = []
    for s in parts.steps:
        share = s.norm_added / s.norm_in if s.norm_in else float("inf")
        lines.append(f"- **{s.name}** adds a vector {share:.0%} as long as the stream it joins (|x| "
                     f"{s.norm_in:.1f}, added {s.norm_added:.1f}); LayerNorm then takes the sum's spread "
                     f"from {s.std_before:.2f} to {s.std_after:.2f} and its mean from {s.mean_before:+.2f} "
                     f"to {s.mean_after:+.2f}.")
    top = ", ".join(f"#{u} ({v:.2f})" for u, v in zip(parts.top_units[:5], parts.top_values[:5]))
    lines.append(f"- **the feed-forward's hidden units**: {parts.firing} of {len(parts.hidden)} hidden units "
                 f"fire (ReLU > 0); the strongest: {top}.")
    return ("The residual connection keeps what came in and adds each sub-layer's output to it; LayerNorm "
            "rescales the sum to a fixed spread, so no sub-layer can blow the stream up.\n\n"
            + "\n".join(lines))


def forms_markdown(result: dict, kind: str, layer: int, n_queries: int) -> str:
    """The three ways' speed (median, ratio to the batched form) and their largest difference, as a table."""
    base = result["batched"]["seconds"]
    rows = "\n".join(f"| {html.escape(name)} | {1e6 * r['seconds']:.0f} µs | ×{r['seconds'] / base:.2f} | "
                     f"{r['max_diff']:.1e} |" for name, r in result.items())
    return (f"Measured just now on this sentence ({kind} attention, layer {layer}, {n_queries} queries; "
            f"medians of interleaved runs on this server):\n\n| form | time | vs batched | largest "
            f"difference |\n|---|---:|---:|---:|\n{rows}\n\nThe three agree to float32 rounding (about "
            f"1e-6): the same formula, computed three ways.")
