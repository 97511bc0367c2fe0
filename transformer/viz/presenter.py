"""Figures for a projector (presenter mode, ``Look.large``): no text under PRESENTER_FONT, which the back row
of a lecture room reads at 1920×1080, and piece axes labelled as their length allows. Plain dicts only (no
Plotly).

Each figure sizes itself for the larger type (transformer/viz/plots.py and the others: heights, margins,
panels); ``for_large`` then makes the guarantee whole for every figure built by ``figure.fast_figure``:

- every font size a figure sets (titles, annotations, cell values, a small multiple's labels, colour bars) is
  raised to PRESENTER_FONT, hover labels aside (read up close, by whoever holds the mouse);
- a title longer than a half-width figure holds is wrapped onto lines (the figure grows by them), and so is a
  y axis's title longer than its plot is high;
- axes of pieces (categories given as a list of labels) are labelled by Plotly itself, as many as fit the
  axis's length at that size (a label every 1.2 × the type size at least): a half-width figure labels every
  other piece, the same figure full screen every one, and no label overprints another; the x axis's labels lie
  level when they fit, else turned 45° or upright, as they need; each keeps its whole piece (cut only at
  normal size);
- a bar's value is written at the type size, never shrunk by Plotly to fit its bar; a colour bar's name is
  written along it (above it, the top value's label would touch it).
"""
from __future__ import annotations

import html
import re
import textwrap

from .style import PRESENTER_FONT

FONT_KEYS = ("font", "tickfont", "textfont", "insidetextfont", "outsidetextfont")
X_ANGLES = [0, -45, -90]      # the x axis's labels: level if they fit, else the first angle at which they do
CHAR_EM = 0.6                 # a character's width, in ems of the figures' sans-serif (wide, to be safe)
TITLE_CHARS = 52              # a title's line in a half-width figure at 1920 px (~15 px a character at 29
                              # px), with the full-screen button beside it


def presenter(font_size: int) -> bool:
    """Whether a figure is drawn in presenter mode's type."""
    return font_size >= PRESENTER_FONT


def smaller(font_size: int, by: int = 1, least: int = 9) -> int:
    """A secondary text's size (a cell's value, a small multiple's name): `by` px under the figure's type and
    at least `least`; in presenter mode the type itself, the least that the back of a room reads."""
    return font_size if presenter(font_size) else max(least, font_size - by)


def _floor_fonts(obj, least: int) -> None:
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("hoverlabel", "template"):
                continue
            if key in FONT_KEYS and isinstance(value, dict):
                size = value.get("size")
                if isinstance(size, (int, float)) and size < least:
                    value["size"] = least
            if isinstance(value, (dict, list)):
                _floor_fonts(value, least)
    elif isinstance(obj, list):
        for value in obj:
            if isinstance(value, (dict, list)):
                _floor_fonts(value, least)


def _shown(line: str) -> int:
    return len(html.unescape(re.sub(r"<[^>]+>", "", line)))


def _balanced(text: str, width: int) -> list[str]:
    """`text` on as few lines of `width` characters as it needs, of about the same length (no last line of one
    word)."""
    n = -(-_shown(text) // width)
    if n <= 1:
        return [text]
    for w in range(-(-len(text) // n), len(text) + 1):
        lines = textwrap.wrap(text, w, break_long_words=False, break_on_hyphens=False)
        if len(lines) <= n:
            return lines
    return [text]


def _wrap_title(layout: dict) -> None:
    """A long title on lines of TITLE_CHARS (a half-width figure would cut it at the right); the figure grows
    by the lines added, so its plot keeps its height."""
    title = layout.get("title")
    text = title.get("text") if isinstance(title, dict) else None
    if not text or all(_shown(part) <= TITLE_CHARS for part in text.split("<br>")):
        return
    parts = text.split("<br>")
    lines = [line for part in parts for line in _balanced(part, TITLE_CHARS)]
    if any(line.count("<") != line.count(">") for line in lines):      # never wrap inside a tag
        return
    size = (title.get("font") or {}).get("size") or (layout.get("font") or {}).get("size") or PRESENTER_FONT
    extra = int((len(lines) - len(parts)) * 1.3 * size)
    # from the top down (Plotly centres a title's first line in the top margin and writes the next ones below
    # it, over the plot); Plotly anchors a title of several lines 0.7 em higher than a title of one
    title.update(text="<br>".join(lines), y=1, yref="container", yanchor="top",
                 pad=dict(t=8 + round(0.7 * size)))
    margin = layout.setdefault("margin", {})
    margin["t"] = margin.get("t", 0) + extra
    if layout.get("height"):
        layout["height"] += extra


def _fit_axis_titles(layout: dict, font: int) -> None:
    """A y axis's title longer than its plot is high, wrapped onto lines that fit (Plotly draws an axis title
    at 1.2 × the type, on one line unless told otherwise; turned upright, it would overprint the title above
    and the labels below)."""
    height, margin = layout.get("height"), layout.get("margin") or {}
    if not height:
        return
    # the x axis's labels and title
    plot = height - margin.get("t", 0) - max(margin.get("b", 0), 3 * font + 10)
    for key, axis in layout.items():
        title = axis.get("title") if key.startswith("yaxis") and isinstance(axis, dict) else None
        text = title.get("text") if isinstance(title, dict) else None
        if not text or "<br>" in text:
            continue
        lo, hi = axis.get("domain", (0, 1))
        room = max(plot * (hi - lo), 2 * font)
        per_line = max(6, int(room / (CHAR_EM * round(1.2 * font))))
        if _shown(text) > per_line:
            lines = textwrap.wrap(text, per_line, break_long_words=False, break_on_hyphens=False)
            if all(line.count("<") == line.count(">") for line in lines):
                title["text"] = "<br>".join(lines)


def for_large(data: list, layout: dict) -> None:
    """A figure's dicts made fit for a projector, in place (see the module's note)."""
    _wrap_title(layout)
    _fit_axis_titles(layout, (layout.get("font") or {}).get("size") or PRESENTER_FONT)
    _floor_fonts(layout, PRESENTER_FONT)
    _floor_fonts(data, PRESENTER_FONT)
    for key, axis in layout.items():
        if not (key.startswith(("xaxis", "yaxis")) and isinstance(axis, dict)):
            continue
        if axis.get("type") == "category" and axis.get("tickmode") == "array":   # Plotly labels what fits
            for name in ("tickvals", "ticktext", "tickmode"):
                axis.pop(name, None)
        if key.startswith("x") and "tickangle" in axis:                          # level, 45° or upright
            del axis["tickangle"]
            axis["autotickangles"] = X_ANGLES
    for trace in data:
        if trace.get("type") == "bar" and trace.get("text") is not None:
            trace.setdefault("constraintext", "none")
    for bar in _colorbars(data, layout):        # its name along the bar, where the top value cannot touch it
        title = bar.get("title")
        if isinstance(title, dict) and title.get("text"):
            title.setdefault("side", "right")


def _colorbars(data: list, layout: dict) -> list:
    bars = [trace["colorbar"] for trace in data if isinstance(trace.get("colorbar"), dict)]
    return bars + [axis["colorbar"] for key, axis in layout.items() if key.startswith("coloraxis")
                   and isinstance(axis, dict) and isinstance(axis.get("colorbar"), dict)]


def legend_below(layout: dict, font_size: int, top: int, plot: int, under: int, rows: int) -> int:
    """A legend's `rows` lines under everything, in room of their own (container coordinates), below `under`
    px of tick labels and axis title (where a legend placed below the plot in its own coordinates would
    overprint them at this type); returns the figure's height for a plot `plot` px high."""
    bottom = under + int(rows * 1.6 * font_size) + 10
    layout.update(legend=dict(orientation="h", yref="container", y=0, yanchor="bottom", x=0),
                  margin=dict(l=10, r=10, t=top, b=bottom))
    return top + plot + bottom
