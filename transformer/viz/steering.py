"""Figures and HTML for steering the decoder: your French (teacher forcing), what-if branches, beam search.

Reads the torch-free results of ``transformer/steering.py`` (and traces); imports neither torch nor gradio.
Every piece is HTML-escaped before it reaches the page or Plotly.
"""
from __future__ import annotations

import html
import math
from typing import Optional, Sequence

import plotly.graph_objects as go

from ..pieces import detokenize
from ..steering import NORMALISATION_NOTE, BeamResult, ForcedResult
from .figure import percent
from ..trace import TranslationTrace
from .figure import f32, fast_figure, grow, ticks, top_margin, esc, esc_all
from .presenter import presenter

RANK_COLOURS = (("#0072B2", "the model's top choice"), ("#E69F00", "rank 2-5"),
                ("#D55E00", "rank 6 or worse"))
BEAM_COLOURS = {"kept": "#0072B2", "finished": "#009E73", "pruned": "#999999", "final": "#E69F00"}


def rank_colour(rank: int) -> str:
    return RANK_COLOURS[0][0] if rank == 1 else RANK_COLOURS[1][0] if rank <= 5 else RANK_COLOURS[2][0]


# ---------------------------------------------------------------- your French (teacher forcing)
def forced_figure(pieces: Sequence[str], probs: Sequence[float], ranks: Sequence[int],
                  top_pieces: Sequence[str], title: str = "", dark: bool = False,
                  font_size: int = 14) -> go.Figure:
    """One bar per French piece: its probability under the model; colour by rank, the rank written
    above any piece that is not the model's top choice, the top choice on hover."""
    labels, tops = esc_all(pieces), esc_all(top_pieces)
    ce = [f"{-math.log(max(p, 1e-30)):.2f}" for p in probs]
    bar = dict(type="bar", x=list(range(len(labels))), y=f32(probs, 4),
               marker=dict(color=[rank_colour(r) for r in ranks]),
               text=["" if r == 1 else f"#{r}" for r in ranks], textposition="outside", cliponaxis=False,
               customdata=[[labels[i], ranks[i], tops[i], ce[i]] for i in range(len(labels))],
               hovertemplate="%{customdata[0]}: p = %{y:.2%}, rank %{customdata[1]}<br>model's top choice: "
                             "%{customdata[2]}<br>cross-entropy %{customdata[3]} nats<extra></extra>")
    layout = dict(xaxis=dict(title=dict(text="your French, piece by piece (&lt;/s&gt; last)"), tickangle=-45,
                             **ticks(pieces)),
                  yaxis=dict(title=dict(text="probability"), range=[0, 1.12], tickformat=".0%"),
                  showlegend=False)
    return fast_figure([bar], layout, dark, font_size, grow(400, font_size), title)


def rank_chips(result: ForcedResult) -> str:
    out = []
    for p in result.pieces:
        tip = html.escape(f"p = {p.probability:.1%}, rank {p.rank}, top choice {p.top_piece}", quote=True)
        style = f"border-color:{rank_colour(p.rank)};border-width:{1 if p.rank == 1 else 3}px"
        out.append(f'<span class="piece tgt" style="{style}" title="{tip}">{html.escape(p.piece)}'
                   f'{"" if p.rank == 1 else f" <b>#{p.rank}</b>"}</span>')
    return "".join(out)


def forced_html(result: ForcedResult, greedy: Optional[str]) -> str:
    """The sentence's loss and perplexity, the pieces by rank, and where greedy decoding parts ways."""
    d = result.first_divergence
    if d is None:
        split = "Every piece is the model's top choice: this is exactly what greedy decoding produces."
    else:
        p = result.pieces[d]
        split = (f"Greedy decoding and your French part ways at piece {d + 1}: you wrote "
                 f"<b>{html.escape(p.piece)}</b> (rank {p.rank}, p = {percent(p.probability)}); the model's "
                 f"top choice was <b>{html.escape(p.top_piece)}</b> (p = {p.top_probability:.1%}).")
    worst = min(result.pieces, key=lambda q: q.probability)
    legend = " · ".join(f'<span style="color:{c};font-weight:700">■</span> {t}' for c, t in RANK_COLOURS)
    notes = "".join(f'<div class="note">{html.escape(n)}</div>' for n in result.notes)
    greedy_row = (f"<div><b>Greedy decoding:</b> {html.escape(greedy)}</div>" if greedy is not None else "")
    return (f'<div class="pieces" id="forced-summary"><div><b>Your French:</b> '
            f'{html.escape(result.french)}</div>{greedy_row}'
            f"<div>Mean cross-entropy <b>{result.mean_loss:.3f}</b> nats per piece over {len(result.pieces)} "
            f"pieces (&lt;/s&gt; included) · perplexity <b>{result.perplexity:.2f}</b> · least expected "
            f"piece: <b>{html.escape(worst.piece)}</b> (p = {percent(worst.probability)})</div>"
            f"<div>{split}</div><div>{rank_chips(result)}</div><div>{legend}</div>{notes}"
            "<div><i>Teacher forcing: the decoder reads your pieces as its input (as in training) and each "
            "position is scored given the pieces before it. The other tabs now show this pass's attention "
            "maps.</i></div></div>")


# ---------------------------------------------------------------- what if
def branch_html(original: TranslationTrace, new: TranslationTrace, step: int) -> str:
    """The original and the branch side by side, from the step where they split (1-based)."""
    s = new.steps[step - 1]
    was = original.steps[step - 1].piece if len(original.steps) >= step else "?"
    same = detokenize(original.tgt_pieces[: step - 1])
    return (f'<div class="pieces" id="branch-info"><div><b>What if</b> step {step} took <span class="piece '
            f'chosen">'
            f"{html.escape(s.piece)}</span> (p = {percent(s.prob)}) instead of <span "
            f"class=\"piece\">{html.escape(was)}</span>? Decoding then went on greedily.</div>"
            f"<div><b>Original:</b> {html.escape(original.translation)}</div>"
            f"<div><b>This branch:</b> {html.escape(new.translation)}</div>"
            f"<div>Shared start: <i>{html.escape(same) or '(nothing)'}</i> · every view now shows the "
            f"branch; <b>Back to the original</b> (beside this) returns to it.</div></div>")


# ---------------------------------------------------------------- beam search
def _beam_positions(result: BeamResult) -> dict[int, float]:
    """y of each node: per step, candidates in order of score (best on top)."""
    y = {}
    for step in {n.step for n in result.nodes}:
        ranked = sorted((n for n in result.nodes if n.step == step), key=lambda n: -n.score)
        for i, n in enumerate(ranked):
            y[n.id] = -float(i)
    return y


def beam_tree_figure(result: BeamResult, dark: bool = False, font_size: int = 14) -> go.Figure:
    """The search as a tree: x = step, one marker per candidate with its piece and cumulative
    log-probability; kept beams blue, finished green, pruned grey, the final choice's path orange."""
    y = _beam_positions(result)
    final = set(result.path(result.best.node))
    x_of = lambda i: 0 if i < 0 else result.nodes[i].step + 1     # steps from 1; <s> at 0
    y_of = lambda i: 0.0 if i < 0 else y[i]
    data = []
    for group, width, colour in (("other", 1, BEAM_COLOURS["pruned"]), ("kept", 2, BEAM_COLOURS["kept"]),
                                 ("final", 5, BEAM_COLOURS["final"])):
        xs, ys = [], []
        for n in result.nodes:
            g = "final" if n.id in final else "kept" if n.status != "pruned" else "other"
            if g == group:
                xs += [x_of(n.parent), n.step + 1, None]
                ys += [y_of(n.parent), y[n.id], None]
        data.append(dict(type="scatter", mode="lines", x=xs, y=ys, line=dict(color=colour, width=width),
                         hoverinfo="skip", showlegend=False))
    for status in ("pruned", "kept", "finished", "final"):
        ns = [n for n in result.nodes
              if (n.id in final) == (status == "final") and (status == "final" or n.status == status)]
        data.append(dict(type="scatter", mode="markers+text",
                         name={"final": "final choice"}.get(status, status), x=[n.step + 1 for n in ns],
                         y=[y[n.id] for n in ns], text=[esc(n.piece) for n in ns], textposition="top center",
                         marker=dict(color=BEAM_COLOURS[status], size=11 if status != "pruned" else 7),
                         customdata=[[esc(n.piece), round(n.log_prob, 3), round(n.score, 3)] for n in ns],
                         hovertemplate="%{customdata[0]}<br>log p = %{customdata[1]}<br>cumulative log p = "
                                       "%{customdata[2]}<extra>" + status + "</extra>"))
    data.append(dict(type="scatter", mode="markers+text", x=[0], y=[0], text=["&lt;s&gt;"],
                     textposition="top center", marker=dict(color=BEAM_COLOURS["final"], size=11),
                     hoverinfo="skip", showlegend=False))
    n_rows = (max(len([n for n in result.nodes if n.step == s]) for s in {n.step for n in result.nodes})
              if result.nodes else 1)
    layout = dict(xaxis=dict(title=dict(text="decoding step"), dtick=1, zeroline=False),
                  yaxis=dict(title=dict(text="candidates (best score on top)"), showticklabels=False,
                             zeroline=False),
                  legend=dict(orientation="h", y=-0.15))
    title = f"Beam search, width {result.beam}: {len(result.nodes)} candidates weighed"
    if presenter(font_size):
        return _beam_tree_downwards(data, title, dark, font_size, n_rows)
    return fast_figure(data, layout, dark, font_size, int(min(1000, 260 + 2.6 * font_size * n_rows)), title)


def _beam_tree_downwards(data: list, title: str, dark: bool, font_size: int, n_rows: int) -> go.Figure:
    """Presenter mode: the same tree grown downwards, a step a line of type and the candidates side by side
    (best on the left), so that every piece is written whole at the projector's type, beside its marker; the
    legend in a line of its own under it."""
    for trace in data:
        xs, ys = trace["x"], trace["y"]
        trace["x"] = [None if v is None else -v for v in ys]      # rank 0 (best) on the left
        trace["y"] = xs
        if "text" in trace:
            trace.update(textposition="middle right", cliponaxis=False)
    steps = max((v for trace in data for v in trace["y"] if v is not None), default=1)
    top, bottom = top_margin(font_size, title), int(4.6 * font_size) + 10
    layout = dict(yaxis=dict(title=dict(text="decoding step"), dtick=1, zeroline=False,
                             range=[steps + 0.5, -0.5]),
                  xaxis=dict(title=dict(text="candidates (best score on the left)"), showticklabels=False,
                             zeroline=False, range=[-0.3, max(n_rows, 3) - 0.2]),
                  legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=top, b=bottom))
    return fast_figure(data, layout, dark, font_size, top + bottom + int(1.6 * font_size) * (steps + 1),
                       title)


def beam_html(result: BeamResult, greedy: Optional[str] = None) -> str:
    rows = "".join(
        f"<tr><td>{i + 1}</td><td>{html.escape(h.text)}</td><td>{h.score:.3f}</td><td>{len(h.ids)}</td>"
        f"<td>{h.normalized:.3f}</td><td>{'&lt;/s&gt;' if h.finished else 'the length limit'}</td></tr>"
        for i, h in enumerate(result.hypotheses))
    greedy_row = f"<div><b>Greedy decoding:</b> {html.escape(greedy)}</div>" if greedy is not None else ""
    return (f'<div class="pieces" id="beam-info"><div><b>Beam search (width {result.beam}):</b> '
            f"{html.escape(result.translation)}</div>{greedy_row}"
            f"<div>{html.escape(NORMALISATION_NOTE.format(alpha=result.alpha))} "
            f"{len(result.nodes)} candidates in {result.seconds * 1000:.0f} ms.</div>"
            f'<table class="beam-table"><tr><th>#</th><th>hypothesis</th><th>log P</th><th>pieces</th>'
            f"<th>log P / lp</th><th>ended by</th></tr>{rows}</table></div>")
