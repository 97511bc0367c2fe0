"""The building blocks every figure shares: colour scales, piece labels (escaped, shortened, numbered),
axis ticks, sizes that grow with the font, the hatch of masked cells, and figures built from plain dicts
with the app's style (fast: no Plotly validation). numpy and Plotly only."""
from __future__ import annotations

import functools
import html
from typing import Optional, Sequence

import numpy as np
import plotly.colors as pc
import plotly.graph_objects as go

from ..config import LABEL_MAX_CHARS
from .style import BASE_FONT, MASK_COLOR, MASK_COLOR_GREYS
from .presenter import for_large, presenter


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
# blue (negative) -> white (0) -> red (positive): attributions
SIGNED_SCALE = _stops(pc.diverging.RdBu[::-1])


def colorscale_for(name: str, dark: bool = False):
    """The scale as plotly.js should draw it, so that strong attention is the most salient colour:
    dark on the light page, bright on the dark one."""
    if not isinstance(name, str):      # a scale given as stops (e.g. SIGNED_SCALE) is drawn as it is
        return name
    scale = COLORSCALES.get(name, COLORSCALES[DEFAULT_SCALE])
    if dark and name in REVERSED_IN_DARK:
        return [[round(1 - p, 4), c] for p, c in reversed(scale)]
    return scale


def mask_color(name: str) -> str:
    return MASK_COLOR_GREYS if name == "Greys" else MASK_COLOR


def f32(z, decimals: int = 4) -> np.ndarray:
    """Rounded float32: Plotly sends numpy arrays as typed binary, so this halves the JSON."""
    return np.round(np.asarray(z, dtype=np.float64), decimals).astype(np.float32)


def percent(p: float) -> str:
    """A probability as a percentage; tiny ones keep their order of magnitude (0.0% would hide it)."""
    return f"{p:.1%}" if p >= 0.001 else f"{p * 100:.1e}%"


def shown_piece(token: str) -> str:
    """A piece as a reader should see it: a lone word marker is named, not left as a bare "▁"."""
    return "▁ (space)" if token == "▁" else str(token)


# the all-heads grid sends weights as whole thousandths (uint16): exact to 3 decimals, 2 bytes a cell
GRID_UNITS = 1000


def thousandths(z) -> np.ndarray:
    """Weights in [0, 1] as whole thousandths: the same 3 decimals a hover shows, in uint8 when every value
    fits (a broad head never reaches 0.256: one byte a cell), else uint16 (half the bytes of float32 in
    Plotly's typed-array JSON)."""
    t = np.rint(np.clip(np.asarray(z, dtype=np.float64), 0.0, 1.0) * GRID_UNITS)
    return t.astype(np.uint8 if t.size and t.max() <= 255 else np.uint16)


def esc(token: str) -> str:
    """A token as Plotly should show it: markup escaped, SentencePiece's word marker kept visible. Quotes are
    left as they are: Plotly's SVG text decodes only &lt; &gt; &amp; (a few named entities more) and numeric
    ones, so an escaped quote would be drawn as "&quot;"; a bare quote is plain text there (it means something
    only inside a tag, and no tag gets through with < escaped). For Plotly's text only, never
    an HTML attribute."""
    return html.escape(shown_piece(token), quote=False)


def esc_all(tokens: Sequence[str]) -> list[str]:
    return [esc(t) for t in tokens]


def numbered(tokens: Sequence[str]) -> list[str]:
    """Unique, 1-based category names ("3 ▁la"): repeated pieces keep their own rows, the same
    numbering as every slider, and the hover names position and piece."""
    return [f"{i} {t}" for i, t in enumerate(esc_all(tokens), start=1)]


def short(label: str, n: int = LABEL_MAX_CHARS) -> str:
    """A tick label cut to n characters (escaped labels are cut before their entities: html.unescape
    first)."""
    raw = html.unescape(label)
    return label if len(raw) <= n else html.escape(raw[: n - 1], quote=False) + "…"


def grow(height: int, font_size: int) -> int:
    """A height drawn for the normal type size, grown for presenter mode's larger type: half as fast as the
    type (twice the type, 1.5 × the height), whose own room is in the margins, which grow with it."""
    return int(height * max(1.0, 1 + 0.5 * (font_size / BASE_FONT - 1)))


def label_room(labels: Sequence[str], font_size: int, angle: float = 45) -> int:
    """Pixels a row of rotated tick labels (cut to LABEL_MAX_CHARS) takes below an axis."""
    longest = max((min(len(html.unescape(t)), LABEL_MAX_CHARS) for t in labels), default=1)
    return int(0.62 * font_size * longest * np.sin(np.radians(angle)) + 1.2 * font_size)


def top_margin(font_size: int, title) -> int:
    """Room for the title (and Plotly's toolbar beside it), growing with the type size. (Gradio's label
    badge over a figure is hidden by the app's CSS: the figure's own title names it.)"""
    return int(2.0 * font_size + 22) if title else 30


def ticks(labels: Sequence[str], max_ticks: int = 80) -> dict:
    n = len(labels)
    step = max(1, int(np.ceil(n / max_ticks)))
    vals = list(range(0, n, step))
    return dict(tickmode="array", tickvals=vals, ticktext=[esc(labels[i]) for i in vals])


def cat_ticks(cats: Sequence[str], max_ticks: int = 80) -> dict:
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


def heatmap_height(n_rows: int, x_labels: Sequence[str], font_size: int, title: bool = True,
                   cap: int = 1400) -> int:
    """Tall enough that every row label has its line at this type size, with room for the title
    above and the rotated column labels and axis title below."""
    row = max(16, int(1.3 * font_size))
    return int(min(cap, max(grow(300, font_size), top_margin(font_size, title) + row * max(n_rows, 6)
                            + label_room(x_labels, font_size) + 2 * font_size + 20)))


def figure_from_dicts(data: list, layout: dict) -> go.Figure:
    """A figure from plain dicts, without Plotly's per-property validation: the slow part of a
    redraw (48 ms against 5 ms for the step view, 200 against 10-17 ms for the all-heads grid).
    ``_validate=False`` is a private argument of Plotly's: tests/test_plots.py fails if it stops
    skipping validation, and validates every figure of the app with Plotly itself."""
    return go.Figure(dict(data=data, layout=layout), _validate=False)


def _tree_copy(obj):
    """The dicts and lists of a figure's properties copied, their leaves (numbers, strings, arrays) shared."""
    if isinstance(obj, dict):
        return {k: _tree_copy(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_tree_copy(v) for v in obj]
    return obj


def figure_json(fig: go.Figure) -> str:
    """``fig.to_json()``, the same string, at a tenth of the cost (0.1 against 1.5 ms for the step view's
    three figures): Plotly's ``to_dict`` deep-copies every array before turning it into base64, where only the
    dicts that hold them need copying. Reads the figure's private ``_data`` and ``_layout`` (the properties as
    set); tests/test_plots.py checks the string against ``to_json`` for every figure of the app."""
    from plotly.basedatatypes import convert_to_base64
    from plotly.io.json import to_json_plotly
    if fig._frame_objs:                                # (no figure of the app has frames)
        return fig.to_json()
    out = {"data": _tree_copy(fig._data), "layout": _tree_copy(fig._layout)}
    convert_to_base64(out)                             # numpy arrays -> typed arrays, as to_dict does
    for trace in out["data"]:
        trace.pop("uid", None)                         # as to_json does
    return to_json_plotly(out)


def fast_figure(data: list, layout: dict, dark: bool, font_size: int, height: Optional[int],
                title: Optional[str]) -> go.Figure:
    types = tuple(sorted({d.get("type", "scatter") for d in data}))
    layout = {**style_dict(dark, font_size, height, title, types), **layout}   # a view's margin wins
    if presenter(font_size):
        for_large(data, layout)           # for a projector: no text under PRESENTER_FONT (presenter.py)
    return figure_from_dicts(data, layout)


@functools.lru_cache(maxsize=64)
def _template(dark: bool, trace_types: tuple) -> dict:
    """Plotly's light or dark template with only the trace defaults this figure uses (the full one
    sends defaults for ~40 trace types: ~4 KB more JSON in every figure, and draws the same)."""
    import plotly.io as pio  # at the first figure, not at import (bench/RESULTS.md, section 4: start-up)
    full = pio.templates["plotly_dark" if dark else "plotly_white"].to_plotly_json()
    return dict(layout=full["layout"],
                data={t: full["data"][t] for t in trace_types if t in full.get("data", {})})


def style_dict(dark: bool, font_size: int, height: Optional[int], title: Optional[str],
                trace_types: Optional[tuple] = None) -> dict:
    import plotly.io as pio
    # The cached template as it is: go.Figure copies what it is given (figure_from_dicts), so a figure changed
    # later never reaches the cache (tests/test_plots.py); a second copy here cost ~0.3 ms a figure.
    template = (_template(dark, trace_types) if trace_types is not None
                else pio.templates["plotly_dark" if dark else "plotly_white"])
    out = dict(template=template, font=dict(size=font_size),
               paper_bgcolor="rgba(0,0,0,0)", margin=dict(l=10, r=10, t=top_margin(font_size, title), b=10))
    if title:
        out["title"] = dict(text=title, x=0.01, xanchor="left", font=dict(size=font_size + 1))
    if height:
        out["height"] = height
    return out


def empty_figure(message: str, dark: bool = False, font_size: int = BASE_FONT) -> go.Figure:
    """A figure that only says what to do first, a little larger than the figures' type (the look's: presenter
    mode's in presenter mode)."""
    note = dict(text=esc(message), x=0.5, y=0.5, xref="paper", yref="paper", showarrow=False,
                font=dict(size=font_size + 4))
    layout = dict(annotations=[note], xaxis=dict(visible=False), yaxis=dict(visible=False),
                  plot_bgcolor="rgba(0,0,0,0)")
    return fast_figure([], layout, dark, font_size, 160, None)
