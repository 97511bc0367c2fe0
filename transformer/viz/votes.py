"""The room's answers on the projector (``transformer/votes.py``): how many students gave each answer, and,
once revealed, the model's own answer marked beside them. Reads the question and its counts only; imports
neither torch nor gradio. Every label is HTML-escaped before it reaches Plotly.
"""
from __future__ import annotations

import html
from typing import Optional

import numpy as np

from ..votes import Question, agreed
from .figure import esc, fast_figure, grow, short

ROOM_COLOUR, MODEL_COLOUR = "#56B4E9", "#E69F00"     # Okabe-Ito sky blue and orange: colour-blind safe
# beyond this many options (a long sentence's pieces) the chart keeps the answered ones only
MANY = 12


def bar_keys(q: Question, counts: dict) -> list[str]:
    """The answers the chart shows, in a fixed order: every option, then typed pieces that are not one."""
    if q.kind == "next":
        keys = list(q.options)
        return keys + sorted(k for k in counts if k not in keys)
    return [str(i) for i in range(len(q.options))]


def votes_figure(q: Question, counts: dict, dark: bool, font_size: int, revealed: bool = False):
    """The room's answers as bars (pieces, candidates, options) or as a layers × heads map (``head``); the
    model's answer in orange once revealed."""
    if q.kind == "head":
        return _head_map(q, counts, dark, font_size, revealed)
    keys = bar_keys(q, counts)
    # the projector shows what the room said (and, revealed, the model), in order
    if len(keys) > MANY:
        keys = [k for k in keys if counts.get(k) or (revealed and k == q.answer)]
    n = max(1, sum(counts.values()))
    labels = [esc(short(q.label(k), 24)) for k in keys]
    values = [int(counts.get(k, 0)) for k in keys]
    model = [revealed and k == q.answer for k in keys]
    colours = [MODEL_COLOUR if m else ROOM_COLOUR for m in model]
    text = [f"{v} ({v / n:.0%})" + (" ← the model" if m else "") if v or m else ""
            for v, m in zip(values, model)]
    y = list(range(len(keys)))
    data = [dict(type="bar", orientation="h", x=values, y=y, marker=dict(color=colours), text=text,
                 textposition="outside", cliponaxis=False, customdata=labels,
                 hovertemplate="%{customdata}: %{x} answers<extra></extra>")]
    top = max(values + [1])
    layout = dict(xaxis=dict(title=dict(text="answers"), range=[0, top * 1.45 + 0.5],
                             dtick=max(1, int(np.ceil(top / 5)))),
                  yaxis=dict(tickmode="array", tickvals=y, ticktext=labels, autorange="reversed",
                             automargin=True),
                  bargap=0.25, showlegend=False)
    height = grow(min(900, 110 + 34 * max(1, len(keys))), font_size)
    return fast_figure(data, layout, dark, font_size, height, _title(q, counts, revealed))


def _head_map(q: Question, counts: dict, dark: bool, font_size: int, revealed: bool):
    L, H = q.grid
    z = np.zeros((L, H), dtype=int)
    for k, v in counts.items():
        i = int(k)
        if 0 <= i < L * H:
            z[i // H, i % H] = int(v)
    text = [[str(v) if v else "" for v in row] for row in z]
    data = [dict(type="heatmap", z=z.tolist(), x=[f"H{h}" for h in range(1, H + 1)],
                 y=[f"L{l}" for l in range(1, L + 1)], text=text, texttemplate="%{text}",
                 colorscale=[[0, "#1f2937" if dark else "#f3f4f6"], [1, ROOM_COLOUR if dark else "#0072B2"]],
                 zmin=0, zmax=max(1, int(z.max())), showscale=False, xgap=2, ygap=2,
                 hovertemplate="layer %{y}, head %{x}: %{z} answers<extra></extra>")]
    shapes = []
    if revealed and q.answer:
        a = int(q.answer)
        r, c = a // H, a % H
        shapes.append(dict(type="rect", x0=c - 0.5, x1=c + 0.5, y0=r - 0.5, y1=r + 0.5,
                           line=dict(color=MODEL_COLOUR, width=5)))
    layout = dict(xaxis=dict(side="top"), yaxis=dict(autorange="reversed"), shapes=shapes)
    return fast_figure(data, layout, dark, font_size, grow(120 + 48 * L, font_size),
                       _title(q, counts, revealed))


def _title(q: Question, counts: dict, revealed: bool) -> str:
    n = sum(counts.values())
    said = f"{n} answer{'s' if n != 1 else ''}"
    if not revealed:
        return f"The room's answers so far: {said}"
    return (f"The room ({said}) and the model: {esc(q.answer_label)}"
            + (f" ({q.answer_note})" if q.answer_note else ""))


def status_html(q: Optional[Question], counts: dict, followers: int) -> str:
    """The line above the chart: the question, where it stands, answers against followers, and after a reveal
    how many agreed with the model."""
    if q is None:
        return ('<div class="vote-status" data-status="none">No question asked. Pick one and press '
                '<b>Ask</b>: it appears on every student\'s page.</div>')
    n = sum(counts.values())
    state = {"open": "answers open", "closed": "answers closed", "revealed": "revealed"}[q.status]
    out = [f'<div class="vote-status" data-status="{q.status}" data-answers="{n}" '
           f'data-followers="{followers}">',
           f'<p class="vote-q"><b>Question {q.id}</b> · {state} · <span class="vote-count"><b>{n}</b> answer'
           f'{"s" if n != 1 else ""} from <b>{followers}</b> following</span></p>',
           f'<p class="vote-prompt">{html.escape(q.prompt)}</p>']
    if q.context:
        out.append(f'<p class="vote-context">{html.escape(q.context)}</p>')
    if q.status == "revealed":
        share = agreed(q)
        said = ("" if share is None
                else f" · {q.counts.get(q.answer, 0)} of {q.answered} ({share:.0%}) said the same")
        out.append(f'<p class="vote-answer">The model: <b>{html.escape(q.answer_label)}</b>'
                   f'{" (" + html.escape(q.answer_note) + ")" if q.answer_note else ""}{said}</p>')
    out.append("</div>")
    return "".join(out)


