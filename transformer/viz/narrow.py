"""Figures for a phone's column: ``for_narrow`` wraps a figure's title onto lines that fit, lays a map's
colour bar across the top of its plot, and shortens, thins and turns the tick labels so that none overprints
another (sizes from the figure's own type and a NARROW_WIDTH-px column). numpy and Plotly only."""
from __future__ import annotations

import html
import re
import textwrap

import numpy as np
import plotly.graph_objects as go

from .figure import short
from .style import BASE_FONT


NARROW_TITLE_CHARS = 40   # a title's line on a phone's column (≈ 330 px at the base type size)
# px: a figure's width in a 360-px phone's column (326 at 390 px); its labels are spaced for it
NARROW_WIDTH = 300
NARROW_LABEL_CHARS = 10   # a tick label on a phone ("12 ▁profe…"); a tap on a cell shows the whole piece
# a character's width (generous) and a line's height, in ems of the figures' type
CHAR_EM, LINE_EM = 0.62, 1.2
NARROW_BAR_ROOM = 70      # px beside the plot that a colour bar standing upright takes


def for_narrow(fig: go.Figure) -> go.Figure:
    """A figure for a phone's column, in place (and only once: figures are cached): its title wrapped onto
    lines that fit (the figure grows by the lines added, so its plot keeps its height), a map's colour bar
    laid across the top of its plot, tick labels shortened, thinned and turned so that no label overprints
    another, and a swipe over it scrolls the page instead of panning."""
    fig.layout.dragmode = False
    _narrow_title(fig)
    _narrow_notes(fig)
    bars = _upright_bars(fig)
    # a note on the plot's top
    above = any(a.yref == "paper" and (a.y or 0) >= 1 for a in fig.layout.annotations)
    across = bars[0] if len(bars) == 1 and len(list(fig.select_xaxes())) == 1 and not above else None
    below = _narrow_x(fig, beside=bool(bars) and across is None)
    if across is not None:
        _lay_across(fig, across, below)
    for owner in bars if across is None else []:          # its title along it, clear of its top number
        owner.colorbar.title.side = "right"
    _narrow_y(fig, below)
    return fig


def _narrow_title(fig: go.Figure) -> None:
    title = fig.layout.title.text if fig.layout.title else None
    shown = lambda line: len(html.unescape(re.sub(r"<[^>]+>", "", line)))   # noqa: E731
    if not title or all(shown(part) <= NARROW_TITLE_CHARS for part in title.split("<br>")):
        return
    parts = title.split("<br>")                     # lines the title already has are wrapped one by one
    lines = [line for part in parts for line in
             (textwrap.wrap(part, NARROW_TITLE_CHARS, break_long_words=False, break_on_hyphens=False)
              or [part])]
    if any(line.count("<") != line.count(">") for line in lines):   # never wrap inside a tag
        return
    size = fig.layout.title.font.size or fig.layout.font.size or BASE_FONT
    fig.layout.title.text = "<br>".join(lines)
    _room_on_top(fig, int((len(lines) - len(parts)) * 1.3 * size))


def _room_on_top(fig: go.Figure, px: int) -> None:
    """`px` more room under the title's first line: the top margin and the figure grow by it, and the title
    stays where it stood (left to Plotly, its first line's baseline would stay in the middle of the top
    margin: it would move down by half the room, onto what is under it)."""
    top, height = fig.layout.margin.t or 0, fig.layout.height
    fig.layout.margin.t = top + px
    if not height:
        return
    fig.layout.height = height + px
    if fig.layout.title and fig.layout.title.text:
        title = fig.layout.title
        size = title.font.size or fig.layout.font.size or BASE_FONT
        first = ((1 - title.y) * height if title.yref == "container" and isinstance(title.y, (int, float))
                 and title.yanchor == "top" else max(2, top / 2 - 0.9 * size))     # px from the top
        title.update(yref="container", yanchor="top", y=round(1 - first / fig.layout.height, 4))


def _narrow_notes(fig: go.Figure) -> None:
    """A message in the plot (an empty figure's) wrapped to the column; a note set over the plot's top right
    corner (the positional map's "outlined: your input…") is wider than a phone's plot and lands on the title:
    it is wrapped to the column from the plot's left edge, and given its own room under the title."""
    font = fig.layout.font.size or BASE_FONT
    room = 0
    for note in fig.layout.annotations:
        if note.xref == "paper" and note.yref == "paper" and (note.y or 0) < 1 and \
                "<" not in (note.text or ""):
            # a message in the plot (an empty figure's)
            size = note.font.size or font
            fits = int((NARROW_WIDTH - 20) / (CHAR_EM * size))
            if len(html.unescape(note.text or "")) > fits:
                note.text = "<br>".join(textwrap.wrap(note.text, fits, break_long_words=False))
            continue
        if note.yref != "paper" or (note.y or 0) < 1 or note.xanchor != "right" or \
                note.showarrow is not False:
            continue
        size = note.font.size or font
        text = note.text or ""
        lines = text.split("<br>") if "<" in text else (textwrap.wrap(text,
                                                                      int((NARROW_WIDTH - 75)
                                                                          / (CHAR_EM * size)))
                                                      or [text])
        note.update(text="<br>".join(lines), x=0, xanchor="left", yanchor="bottom")
        room = max(room, int(len(lines) * LINE_EM * size
                             + 2 * ((note.borderpad or 1) + (note.borderwidth or 1)) + 6))
    if room:
        _room_on_top(fig, room)


def _upright_bars(fig: go.Figure) -> list:
    """The heatmaps and colour axes whose colour bar stands beside the plot."""
    axes = {t.coloraxis for t in fig.data if getattr(t, "coloraxis", None)}
    own = [t for t in fig.data
           if t.type == "heatmap" and not getattr(t, "coloraxis", None) and t.showscale is not False]
    shared = [fig.layout[a] for a in sorted(axes) if fig.layout[a].showscale is not False]
    return [c for c in own + shared if c.colorbar.orientation != "h"]


def _lay_across(fig: go.Figure, owner, below: float) -> None:
    """A map's one colour bar across the top of its plot instead of beside it (where it takes a fifth of a
    phone's column from the map), the map moved down under it; the figure grows by the bar's height, so the
    map keeps its own. The bar is inside the plot's area: one in the margin makes Plotly set the x axis's
    title on its labels. The bottom margin is set to the labels' room, so that the map's share of the area is
    known in pixels."""
    font = fig.layout.font.size or BASE_FONT
    tick = max(10, font - 2)
    bar = owner.colorbar
    title = (bar.title.text or "").replace("<br>", " · ")
    # the title's line, the numbers', the bar, padding
    room = int(LINE_EM * font + LINE_EM * tick + 10 + 2 * 8 + 8)
    margin = fig.layout.margin
    margin.b = max(margin.b or 0, int(below) + 10)
    if fig.layout.height:
        fig.layout.height += room
    plot = (fig.layout.height or 450) - (margin.t or 0) - margin.b
    bar.update(orientation="h", x=0, xanchor="left", len=1, lenmode="fraction", y=1, yanchor="top",
               yref="paper", thickness=10, ypad=8, xpad=0, title=dict(text=title, side="top"),
               tickfont=dict(size=tick))
    for axis in fig.select_yaxes():
        axis.domain = [0, round(1 - room / max(plot, room + 1), 4)]


def _labelled(axis) -> bool:
    return axis.tickmode == "array" and axis.ticktext is not None and axis.showticklabels is not False


def _widest(labels, size: float) -> float:
    return (max((len(html.unescape(re.sub(r"<[^>]+>", "", str(t)))) for t in labels), default=1) * CHAR_EM
            * size)


def _thin(axis, room: float, pitch: float) -> None:
    """Every k-th label, k the smallest that gives each shown label `pitch` px along an axis `room` px
    long."""
    n = len(axis.tickvals)
    k = max(1, int(np.ceil(n * pitch / max(room, 1.0))))
    if k > 1:
        axis.tickvals, axis.ticktext = list(axis.tickvals)[::k], list(axis.ticktext)[::k]


def _tick_size(fig: go.Figure, axis) -> float:
    font = fig.layout.font.size or BASE_FONT
    if _labelled(axis) and axis.tickfont.size is None:
        axis.tickfont.size = max(10, font - 2)                          # a phone's labels a little smaller
    return axis.tickfont.size or font


def _title_room(fig: go.Figure, axis) -> float:
    return (LINE_EM * (fig.layout.font.size or BASE_FONT) + 4) if axis.title and axis.title.text else 0


def _span(axis) -> float:
    return (axis.domain[1] - axis.domain[0]) if axis.domain else 1.0


def _narrow_x(fig: go.Figure, beside: bool) -> float:
    """The x axes' piece labels cut to NARROW_LABEL_CHARS, level when every one fits so, else upright (a label
    one line of type wide) and thinned to every k-th, k from the pixels each label has in a NARROW_WIDTH-px
    figure (`beside`: a colour bar stands beside the plot). Returns the room the labels and the
    title take below."""
    ys = list(fig.select_yaxes())
    for axis in [*fig.select_xaxes(), *ys]:
        if _labelled(axis):
            axis.ticktext = [short(str(t), NARROW_LABEL_CHARS) for t in axis.ticktext]
    left = max(((_widest(a.ticktext, _tick_size(fig, a)) if _labelled(a)
                 else 4 * CHAR_EM * _tick_size(fig, a))
                + 6 + _title_room(fig, a) for a in ys
                if a.showticklabels is not False and a.visible is not False),
               default=0)
    margin = fig.layout.margin
    width = NARROW_WIDTH - (margin.l or 0) - (margin.r or 0) - left - (NARROW_BAR_ROOM if beside else 0)
    below = 0.0
    for axis in fig.select_xaxes():
        if not _labelled(axis):
            continue
        size = _tick_size(fig, axis)
        room, wide = width * _span(axis), _widest(axis.ticktext, size)
        if len(axis.tickvals) * (wide + 8) <= room:                   # level, every label
            axis.tickangle = 0
            below = max(below, LINE_EM * size + 6 + _title_room(fig, axis))
        else:
            # upright, clear of the y axis's lowest number
            axis.update(tickangle=-90, ticklabelstandoff=int(0.6 * size))
            _thin(axis, room, LINE_EM * size + 3)
            below = max(below, wide + 6 + int(0.6 * size) + _title_room(fig, axis))
    return below


def _narrow_y(fig: go.Figure, below: float) -> None:
    """The y axes' piece labels thinned to one a line of type, in the pixels the figure's height leaves
    them."""
    margin = fig.layout.margin
    plot = (fig.layout.height or 450) - (margin.t or 0) - max(margin.b or 0, below + 10)
    for axis in fig.select_yaxes():
        if _labelled(axis):
            size = _tick_size(fig, axis)
            _thin(axis, plot * _span(axis), LINE_EM * size + 3)
