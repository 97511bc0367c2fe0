"""The page every tab builds on: the shared components (``Page``), what a tab gives back (``TabView``,
``Fit``), the redraws shared between users (``shared_view``) and small helpers of the tabs.
"""
from __future__ import annotations

import ast
import functools
import importlib.util
import inspect
import logging
import textwrap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import gradio as gr
import plotly.graph_objects as go
from gradio.components.plot import PlotData

from transformer.config import MAX_INPUT_CHARS, ModelConfig
from .draw_cache import DrawCache
from transformer.replay import Replay
from transformer.serving.translator import Translator, clean_text
from transformer.viz import views
from transformer.viz.figure import COLORSCALES, DEFAULT_SCALE, empty_figure, figure_json
from transformer.viz.narrow import for_narrow

from .fast_events import one_hop
from .settings import APP_DRAW_CACHE
from .inputs import ChoiceDropdown, RequiredRadio, WholeSlider

log = logging.getLogger("app")


# …-attention
KIND_CHOICES = [("Encoder self", "encoder"), ("Decoder masked self", "decoder"), ("Cross", "cross")]


NO_TRACE = "Translate a sentence to see this view."


def safe_view(fn):
    """A redraw that fails tells this user in one line (no traceback) and leaves the app serving others."""
    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001
            log.exception("view %s failed", fn.__name__)
            raise gr.Error(f"This view could not be drawn ({type(e).__name__}). Try another setting or "
                           f"sentence.")
    return wrapper


# Redraws shared by every user who looks at the same trace the same way (a lecture's sentence).
DRAWS = DrawCache(APP_DRAW_CACHE)


def _serialised(outputs) -> tuple:
    """A view's outputs as kept in DRAWS: Plotly figures turned into JSON once (Gradio sends PlotData as
    is)."""
    return tuple(PlotData(type="plotly", plot=figure_json(o)) if isinstance(o, go.Figure) else o
                 for o in outputs)


def for_screen(outputs, narrow: bool) -> tuple:
    """A view's outputs for the screen: on a phone's column, its figures' titles wrapped and swipes
    scrolling."""
    return tuple(for_narrow(o) if narrow and isinstance(o, go.Figure) else o for o in outputs)


def shared_view(fn):
    """`fn(trace, *controls, look, large, scale, narrow)` drawn once per trace object and controls, for every
    user (see DrawCache), for the screen it is drawn on."""
    view = (fn.__qualname__, id(fn))

    @functools.wraps(fn)
    def wrapper(trace, *args):
        out = DRAWS.get(view, trace, args, lambda: for_screen(fn(trace, *args), args[-1] is True),
                        _serialised)
        return tuple(dict(o) if isinstance(o, dict) else o for o in out)   # Gradio may consume an update dict
    return wrapper


def drawn_once(view: str, anchor, args: tuple, draw: Callable[[], tuple]) -> tuple:
    """`draw()` kept in DRAWS under `anchor` (an object everyone asking shares, e.g. a cached attribution;
    held by a weak reference) and `args`, as ``shared_view`` keeps a tab's views: a room that asks at once
    draws once."""
    out = DRAWS.get(("drawn_once", view), anchor, args, draw, _serialised)
    return tuple(dict(o) if isinstance(o, dict) else o for o in out)


def update_value(update, default):
    """The value a `gr.update(...)` (or a plain value) sets, or `default` when it sets none."""
    if isinstance(update, dict):
        return update.get("value", default) if update.get("__type__") == "update" else update
    return default if update is None else update


def slider_update(n: int, value: int = 1, **kw):
    """A 1..n slider (Gradio needs minimum < maximum: a single choice is shown as a locked 1..2 slider)."""
    return gr.update(minimum=1, maximum=max(n, 2), value=min(max(1, value), max(n, 1)), step=1,
                     interactive=n > 1, **kw)


def look_of(look: str, large: bool, scale: str, narrow: bool = False) -> views.Look:
    return views.Look(dark=(look == "Dark"), large=bool(large),
                      colorscale=scale if scale in COLORSCALES else DEFAULT_SCALE, narrow=bool(narrow))


def no_trace(lk: views.Look, n_figures: int, *extra):
    """What a view shows before the first translation: a note in every figure."""
    return (*[empty_figure(NO_TRACE, lk.dark, lk.font) for _ in range(n_figures)], *extra)


def caption(text: str) -> gr.Markdown:
    """The one line under a view's controls that says what to look at (hidden in presenter mode: the lecturer
    says it)."""
    return gr.Markdown(f"**What to look at:** {text}", elem_classes="view-caption")


def code_panel(*objs) -> None:
    """A collapsed "Code" panel with the project's own source of what a view shows (read at start). An object,
    or "module:function" for code the page should not import (training's, read from its file)."""
    with gr.Accordion("Code", open=False):
        gr.Code("\n\n".join(textwrap.dedent(source_of(o)) for o in objs), language="python",
                interactive=False)


def source_of(obj) -> str:
    if not isinstance(obj, str):
        return inspect.getsource(obj)
    module, name = obj.split(":")
    path = importlib.util.find_spec(module).origin          # found, not run
    text = Path(path).read_text(encoding="utf-8")
    node = next(n for n in ast.parse(text).body if getattr(n, "name", None) == name)
    return ast.get_source_segment(text, node, padded=True)


def new_step_slider() -> gr.Slider:
    """The slider over decoding steps, made with the page (Translate, your French and a branch set its range;
    the Step tab shows it), so that no tab depends on another's having been built first."""
    return WholeSlider(1, 2, value=1, step=1, label="Decoding step (or the ← → keys)", scale=4,
                       elem_id="step-slider",
                     interactive=False, buttons=[], render=False)   # no reset button: every move draws


@dataclass
class Page:
    """What every tab needs: the model's sizes, this user's trace, and the display controls."""

    cfg: ModelConfig
    trace: gr.State
    look: list           # Look, presenter mode, colour scale: every figure follows them
    replay: Optional[Replay] = None   # the checkpoint's training replay (the same for every user)
    translator: Optional[Translator] = None      # the shared model, for the tabs that run it on request
    english: Optional[gr.Textbox] = None         # the sentence box (the attribution reads it)
    original: Optional[gr.State] = None          # the greedy trace, while a branch or your French is shown
    model_events: list = field(default_factory=list)   # events that set a new trace: every tab redraws after
    step_slider: gr.Slider = field(default_factory=new_step_slider)   # rendered by the Step tab
    viewing: gr.HTML = field(default_factory=lambda: gr.HTML("", elem_id="viewing", render=False))
    # ...says which trace the views show (greedy, a branch, your French): a banner above the tabs, with
    back: gr.Button = field(default_factory=lambda: gr.Button("Back to the original", size="sm",
                                                              elem_id="viewing-back", scale=0, min_width=200,
                                                              render=False))
    text: Optional[gr.Textbox] = None            # the English sentence box
    french: Optional[gr.Textbox] = None          # the French translation box
    pieces: Optional[gr.HTML] = None             # the source and target pieces
    # a presenter's move, to its live room (ui/live.py)
    announce: Callable = lambda request, trace, tab, step=None, view=None: None

    @property
    def head_choices(self) -> list[str]:
        return ["mean over heads"] + [str(h) for h in range(1, self.cfg.n_heads + 1)]

    def n_layers(self, kind: str) -> int:
        return self.cfg.n_encoder_layers if kind == "encoder" else self.cfg.n_decoder_layers

    def layer_range(self, kind: str, layer=1):
        """The layer slider for `kind`: the layer shown stays where the new kind has it (the value is not
        sent then, so a link that sets the kind and the layer at once keeps its layer)."""
        n = self.n_layers(kind)
        if int(layer or 1) > n:
            return slider_update(n, n)
        return gr.update(minimum=1, maximum=max(n, 2), step=1, interactive=n > 1)


@dataclass
class Fit:
    """What a tab resets when a new trace arrives: ``fn(trace, *inputs)`` gives the updates of ``outputs``
    (slider ranges, pickers). ``after_branch``: also after a what-if branch, going back or your French (a fit
    without it always reads the greedy translation). ``deferrable``: a tab off screen runs it when opened
    (every gr.update costs Gradio a new component: a lecture's 100 Translates would rebuild
    every tab's pickers)."""

    fn: Callable
    inputs: list
    outputs: list
    after_branch: bool = True
    deferrable: bool = True


@dataclass
class TabView:
    """A tab's redraw from the trace: ``draw(trace, *controls, look, large, scale, narrow)`` gives its outputs
    (shared between users through DRAWS); ``fits`` run with every new trace, before the draw."""

    draw: Callable
    controls: list
    outputs: list
    fits: list = field(default_factory=list)     # Fit: what a new trace resets in this tab
    link: dict = field(default_factory=dict)      # URL key (step, kind, layer, head) -> its control
    tab_id: str = ""                             # set by build_demo: the gr.Tab it lives in
    # layers of a kind, when not the page model's (Compare's models)
    layers: Optional[Callable[[str], int]] = None

    def __post_init__(self) -> None:
        self.draw = shared_view(self.draw)

    def inputs(self, page: Page) -> list:
        return [page.trace, *self.controls, *page.look]

    def redraw_on(self, page: Page, components, **kw) -> None:
        for c in components:
            c.change(**one_hop(self.draw, self.inputs(page), self.outputs), api_visibility="undocumented",
                     concurrency_id="draw", **kw)

    def redraw_on_kind(self, page: Page, kind, layer, *fits: Fit) -> None:
        """A new attention kind: first the layer slider's range (and `fits`), then the redraw, in that order,
        so that the redraw reads the layer the range left, never the one from before."""
        quiet = dict(api_visibility="undocumented", show_progress="hidden")
        event = kind.change(page.layer_range, [kind, layer], layer, queue=False, **quiet)
        for f in fits:
            event = event.then(f.fn, [page.trace, *f.inputs], f.outputs, queue=False, **quiet)
        event.then(**one_hop(self.draw, self.inputs(page), self.outputs), concurrency_id="draw",
                   trigger_mode="always_last", **quiet)


def one_head_row(page: Page, more: Callable[[], tuple] = tuple):
    """Attention kind, layer and one head (no mean) on one row, then what `more()` adds to it: the controls
    of the views of a single head."""
    with gr.Row():
        kind = RequiredRadio(KIND_CHOICES, value="encoder", label="Attention kind", scale=4, min_width=330)
        layer = WholeSlider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer", scale=2,
                            min_width=160)
        head = ChoiceDropdown(page.head_choices[1:], value="1", label="Head", scale=1, min_width=90)
        return (kind, layer, head, *more())


def greedy_of(trace, original, english: str):
    """The greedy trace of `english` this user already has (the original behind a branch, or the trace), or
    None."""
    text = clean_text(str(english or "")[:MAX_INPUT_CHARS])
    for t in (original, trace):
        if t is not None and t.source.text == text:
            return t
    return None
