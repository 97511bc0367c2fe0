"""The "How it learned" view: a training replay (transformer/replay.py) drawn step by step.
No torch, no gradio: from the replay's arrays and pieces alone.
"""
from __future__ import annotations

import html
from typing import Optional

import numpy as np

from ..replay import Replay
from . import figure, plots
from .presenter import legend_below
from .views import AXIS_TITLES, KIND_TITLES, Look, clamp, head_choice


def example_choices(replay: Replay) -> list[tuple[str, int]]:
    return [(en, i) for i, (en, _) in enumerate(replay.examples)]


def point_label(replay: Replay, point: int) -> str:
    p = replay.points[point]
    return f"step {p.step:,} ({p.tokens / 1e6:.1f} M tokens seen)"


def replay_info_html(replay: Replay, example: int, point: int) -> str:
    """This example at this point: the translation, the reference and its loss, and the history table."""
    en, ref = replay.examples[example]
    rows = []
    for i, p in enumerate(replay.points):
        rec = p.records[example]
        text = rec.translation if len(rec.translation) <= 120 else rec.translation[:117] + "…"
        cls = ' class="current"' if i == point else ""
        rows.append(f"<tr{cls}><td>{p.step:,}</td><td>{rec.reference_loss:.2f}</td><td>"
                    f"{html.escape(text) or '<i>(nothing)</i>'}</td></tr>")
    rec = replay.points[point].records[example]
    return (f'<div class="replay"><div><b>English:</b> {html.escape(en)}</div>'
            f'<div><b>Reference French:</b> {html.escape(ref)}</div>'
            f'<div><b>At {html.escape(point_label(replay, point))}:</b> “{html.escape(rec.translation)}” '
            f'(loss of the reference: {rec.reference_loss:.2f} nats per piece)</div>'
            f'<details><summary>Every recorded step</summary><table class="replay-table"><tr><th>step</th>'
            f'<th>loss</th><th>greedy translation</th></tr>{"".join(rows)}</table></details></div>')


def replay_attention(replay: Replay, example: int, point: int, kind: str, layer: int, head, look: Look,
                     own_scale: bool = False):
    """The chosen attention map of the example at that point, with the pieces the model had then. Its colours
    run from 0 to 1 at every checkpoint, so that an early blur (weights near 1/n everywhere) looks pale and
    the late pattern stands out; `own_scale`: from this map's smallest to its largest weight (an early map's
    faint pattern shown, at the cost of comparing checkpoints), said in the title."""
    rec = replay.points[point].records[example]
    maps = rec.maps[kind]                                   # (L, H, Tq, Tk)
    layer = clamp(layer, 1, maps.shape[0])
    h = head_choice(head)
    z = maps[layer - 1].mean(0) if h is None else maps[layer - 1, h]
    if kind == "encoder":
        rows, cols = rec.src_pieces, rec.src_pieces
    elif kind == "decoder":
        rows, cols = rec.tgt_in_pieces, rec.tgt_in_pieces
    else:
        rows, cols = [f"→ {p}" for p in rec.tgt_out_pieces], rec.src_pieces
    z = z[: len(rows), : len(cols)]
    masked = np.triu(np.ones(z.shape, dtype=bool), k=1) if kind == "decoder" else None
    who = "mean over heads" if h is None else f"head {h + 1}"
    zmin, zmax = 0.0, 1.0
    seen = z[~masked] if masked is not None else z.ravel()
    if own_scale and seen.size:
        zmin, zmax = float(seen.min()), float(seen.max())
        zmax = zmax if zmax > zmin else zmin + 1e-6      # one value everywhere: still a scale
    colours = "own colour range" if own_scale else "colours 0–1"     # (the colour bar gives the numbers)
    title = f"{KIND_TITLES[kind]}, layer {layer}, {who} ({colours})"
    ytitle, xtitle = AXIS_TITLES[kind]
    return plots.attention_heatmap(z, rows, cols, title, masked, zmax, look.colorscale, look.dark, look.font,
                                   xaxis_title=xtitle, yaxis_title=ytitle, zmin=zmin)


def loss_curve(replay: Replay, example: int, point: int, look: Look):
    """Training loss and this example's reference loss at every recorded step (log x axis), current one
    marked."""
    pts = [p for p in replay.points if p.step > 0]
    steps = [p.step for p in pts]
    data = [dict(type="scatter", x=steps, y=[p.records[example].reference_loss for p in pts],
                 mode="lines+markers", name="this example's reference (nats/piece)"),
            dict(type="scatter", x=steps, y=[p.train_loss for p in pts], mode="lines+markers",
                 name="training loss (label-smoothed)")]
    cur = replay.points[point]
    shapes = []
    if cur.step > 0:
        shapes.append(dict(type="line", x0=cur.step, x1=cur.step, yref="paper", y0=0, y1=1,
                           line=dict(color="#d55e00", width=3, dash="dot")))
    # 10, 100, 1000…
    layout = dict(xaxis=dict(type="log", dtick=1, title=dict(text="training step (log scale)")),
                  yaxis=dict(title=dict(text="cross-entropy"), rangemode="tozero"),
                  legend=dict(orientation="h", y=-0.3), shapes=shapes)
    title, height = "Loss as training went on", 320 + 4 * look.font
    if look.large:      # the legend under the axis title, not over it (presenter.py)
        height = legend_below(layout, look.font, figure.top_margin(look.font, title), 8 * look.font,
                              int(3.2 * look.font), rows=2)
    return figure.fast_figure(data, layout, look.dark, look.font, height, title)


def learning_view(replay: Optional[Replay], example: int, point: int, kind: str, layer: int, head, look: Look,
                  own_scale: bool = False):
    """Info HTML, attention figure and loss figure; `point` is 1-based (the slider); `own_scale`: the map's
    colours over its own range instead of 0–1 (replay_attention)."""
    if replay is None or not replay.points:
        msg = ("This checkpoint has no training replay (replay.npz): train with python -m "
               "transformer.cli.train.")
        return (f"<div class='note'>{msg}</div>", figure.empty_figure(msg, look.dark),
                figure.empty_figure("", look.dark))
    example = clamp(example, 0, len(replay.examples) - 1)
    point = clamp(point, 1, len(replay.points)) - 1
    return (replay_info_html(replay, example, point),
            replay_attention(replay, example, point, kind, layer, head, look, own_scale),
            loss_curve(replay, example, point, look))
