"""See a Transformer translate English to French, step by step and head by head.

Run: ``python app.py [--checkpoint DIR] [--device auto|cpu|cuda] [--host 127.0.0.1] [--port 7860] [--share]``.
The same file runs unchanged as a Hugging Face Space. Layout and thin callbacks only: the model
runs once per Translate (``transformer.translator``); every other control redraws from the trace
kept per user in ``gr.State`` (``transformer.viz.views``), so sliders and pickers never re-run the model.

One ``build_<name>_tab`` function per tab. To add a view: write its drawing in
``transformer/viz/views.py``, a ``build_<name>_tab(page)`` here that lays out its controls,
wires them and returns a ``TabView``, and add it to ``TABS``.
"""
from __future__ import annotations

import argparse
import functools
import html
import inspect
import logging
import os
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Optional

import gradio as gr
from gradio.components.plot import PlotData

from transformer.config import (APP_CACHE_CLEAN_S, APP_CONCURRENCY, APP_DRAW_CACHE, APP_PORT, APP_QUEUE_SIZE,
                                APP_REDRAW_CONCURRENCY, APP_MAX_THREADS, APP_REPORT_KEEP_S, APP_TORCH_THREADS, APP_TRANSLATE_WAITING, BEAM_DEFAULT, BEAM_MAX, MAX_INPUT_CHARS, PE_DEFAULT_DIMS, PLAY_INTERVAL_S, PLAY_SPEEDS, REPLAY_POINTS, TEXTBOX_MAX_CHARS,
                                ModelConfig)
from transformer.io.checkpoint import DEFAULT_CHECKPOINT, REPLAY_FILE, CheckpointError
from transformer.draw_cache import DrawCache
from transformer.replay import Replay, load_replay
from transformer.sentences import split_sentences
from transformer.translator import Translator, clean_text
from transformer.viz import learning, links, views
from transformer.config import ATTRIBUTION_MAX_PIECES
from transformer.model import attribution, vectors
from transformer.model.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.model.decoding import trace_greedy
from transformer.model.layers import PositionalEncoding
from transformer.model.transformer import Transformer
from transformer.positional import sinusoidal_encoding
from transformer.viz.analysis import head_summary
from transformer import examples
from transformer.why import METHODS
from transformer.viz import why as why_views
from transformer.viz import steering as steer_views
from transformer.viz.plots import COLORSCALES, DEFAULT_SCALE, empty_figure
from transformer.viz.report import build_report, report_filename

log = logging.getLogger("app")

KIND_CHOICES = [("Encoder self", "encoder"), ("Decoder masked self", "decoder"), ("Cross", "cross")]   # …-attention
NO_TRACE = "Translate a sentence to see this view."
ROLLOUT_NOTE = ("*Rollout* (Abnar & Zuidema, 2020) multiplies each self-attention layer's head-mean, mixed with "
                "the residual path, through the layers. For cross-attention this app extends it (not in the "
                "paper): each decoder layer's head-mean cross-attention times the encoder's rollout, mapping "
                "steps to input pieces rather than encoder states; it is blurrier than raw cross-attention.")

CSS = """
.piece{display:inline-block;border:1px solid var(--border-color-primary);border-radius:6px;padding:1px 6px;margin:2px;
 font-family:var(--font-mono);white-space:pre}
.piece.src{background:rgba(230,159,0,.15)} .piece.tgt{background:rgba(86,180,233,.18)}
.piece.chosen{background:rgba(230,159,0,.45);font-weight:bold}
.piece.unsure{border:2px dotted #d55e00;text-decoration:underline wavy #d55e00} .confidence{opacity:.9}
.piece.rare{border:2px dashed #d55e00} .piece.rare sup{color:#d55e00;font-weight:bold;margin-left:2px}
.replay div{margin:4px 0} .replay-table td,.replay-table th{padding:2px 8px;text-align:left}
.replay-table tr.current{font-weight:bold;background:rgba(230,159,0,.25)}
.pieces div,.stepinfo div{margin:4px 0} .note{color:#b45309;font-weight:600}
.arch{display:flex;gap:18px;align-items:center;flex-wrap:wrap}.arch-col{flex:1;min-width:260px}
.arch-head{font-weight:700;font-size:1.1em;margin-bottom:6px}
.arch-box{border:2px solid var(--border-color-primary);border-radius:8px;padding:6px 10px;margin:6px 0}
.arch-box.enc{border-color:#E69F00}.arch-box.dec{border-color:#56B4E9}.arch-box.emb{border-style:dashed}
.arch-box.out{border-color:#009E73}.arch-box.stack{border-style:double;border-width:5px}.arch-title{font-weight:700}.arch-arrow{text-align:center;font-weight:600}
/* compact header and input, so that each tab's main figure is on screen at 1280x800 */
#title-line{display:flex;flex-wrap:wrap;align-items:baseline;gap:4px 16px}
#title-line h1{font-size:1.4rem;margin:0;line-height:1.2;white-space:nowrap} #title-line .tagline{opacity:.8}
@media (max-width:1599px){#title-line .tagline{display:none}}
#header{align-items:center} #look-row{gap:8px}
#io-row textarea{font-size:var(--input-text-size)} .stepinfo{line-height:1.35}
#step-controls .block{padding:6px 10px}
#run-info{padding:0!important;background:none!important;border:none!important;box-shadow:none!important}
#run-info textarea,#run-info input{font-size:var(--text-sm);opacity:.85;padding:0 8px!important;min-height:0;
 background:none!important;border:none!important;box-shadow:none!important;height:auto}
/* the tab bar on one line at 1280 px; the kind, layer and head controls low */
[role=tablist] button[role=tab]{padding:6px 9px;font-size:15px}
@media (max-width:1700px){[role=tablist] button[role=tab]{padding:5px 7px;font-size:14px}} #link-btn{align-self:center}
.block:has(>[data-testid=block-info]),.form{--block-padding:6px 10px}
#extras .label-wrap{font-size:var(--text-sm)}
.pieces{font-size:var(--text-sm)} .pieces div{margin:2px 0}
/* a figure wider than a phone scrolls sideways in its box; its own title replaces the box label */
.block:has(.js-plotly-plot):not(:has(.block)){overflow-x:auto!important}
.block:has(.js-plotly-plot):not(:has(.block))>label[data-testid=block-label]{display:none}
label[data-testid$=-radio-label]{padding:4px 10px}
#look-row{flex-wrap:nowrap;justify-content:flex-end;align-items:center} #look .wrap{flex-wrap:nowrap}
#extras,#pieces-col{gap:6px} #extras>.block{padding:4px 10px!important} #extras .label-wrap{padding:2px 0}
.stepinfo{display:flex;flex-wrap:wrap;gap:0 22px} .stepinfo div{margin:2px 0}
.gradio-container .main{--layout-gap:10px} #look label{padding:4px 10px}
/* presenter mode: the whole page in large type (Gradio's theme sizes are variables) */
body.presenter .gradio-container{--body-text-size:22px;--prose-text-size:22px;--input-text-size:24px;
 --block-label-text-size:20px;--block-title-text-size:20px;--block-info-text-size:18px;
 --checkbox-label-text-size:20px;--section-header-text-size:22px;--button-large-text-size:24px;
 --button-medium-text-size:22px;--button-small-text-size:20px;--text-sm:18px;--text-md:22px;
 --text-lg:24px;--text-xl:28px}
body.presenter #look-col{min-width:min(480px,100%)!important} body.presenter #title-line h1{font-size:2.3rem!important} body.presenter #title-line .tagline{font-size:20px!important}
body.presenter [role=tablist] button[role=tab],body.presenter .overflow-dropdown button{font-size:21px!important;
 padding:6px 12px!important}
body.presenter #run-info input,body.presenter #run-info textarea{line-height:1.4!important;height:auto!important;
 min-height:1.5em!important}
body.presenter .piece{font-size:20px} body.presenter .pieces,body.presenter .stepinfo{font-size:22px}
body.presenter input[type=number]{font-size:20px} body.presenter .min_value,body.presenter .max_value{font-size:18px}
/* phones: every control on its own line, the step buttons side by side under their slider (Gradio puts
   its own container before the selectors inside @media: they must not name body or .gradio-container) */
@media (max-width:640px){
 .row>.form,.row>.block,.row>.column,.row>button,.row>.form>.block{min-width:100%!important}
 #step-controls>.form:has(#step-slider){order:-1} #step-controls>.form:has(#step-head){order:1}
 #step-controls>button{min-width:0!important;flex:1 1 0!important;padding:6px 4px}
 #io-row>button{min-width:100%!important}
 #look-row{justify-content:flex-start;flex-wrap:wrap} #look-row>.form,#look-row>.block{min-width:0!important;flex:0 1 auto!important}
 #title-line h1{font-size:1.2rem;white-space:normal} #title-line .tagline{display:none}
}
/* figures keep a readable width and scroll sideways on phones; no toolbar over labels there */
#grid-plot,#explorer-plot,#summary-plot,#inside-plot,#cross-steps-plot,#cross-step-plot{overflow-x:auto}
#cross-step-plot .js-plotly-plot{min-width:460px}
#grid-plot .js-plotly-plot,#inside-plot .js-plotly-plot,#summary-plot .js-plotly-plot{min-width:680px}
#explorer-plot .js-plotly-plot,#cross-steps-plot .js-plotly-plot,#replay-plot .js-plotly-plot{min-width:540px}
#replay-plot{overflow-x:auto}
/* tables (the model card's scores, the per-head table) scroll sideways on a phone instead of breaking words */
.prose table{display:block;overflow-x:auto;max-width:100%}
@media (max-width:640px){.prose th,.prose td{white-space:nowrap} .lines-view{overflow-x:auto}
 .lines-view svg{min-width:520px}}
@media (max-width:640px){.js-plotly-plot .modebar-container{display:none}}
.lines-view svg text{fill:var(--body-text-color);font-family:var(--font-mono);font-size:14px;cursor:pointer;outline:none}
.lines-view svg text:hover,.lines-view svg text:focus{font-weight:bold} body.presenter .lines-view svg{max-width:960px!important}
.lines-hint{opacity:.75;font-size:.9em} .kv-view{overflow-x:auto} .kv-view td,.kv-view th{padding:3px 8px;text-align:left}
.piece.kv-cached{opacity:.6} .piece.kv-new{border:2px solid #E69F00;font-weight:bold}
"""

# Keyboard: ← / → step through decoding, only while the Step-by-step tab is on screen and never while
# typing (text fields, dropdowns, sliders keep their keys). Enter in the sentence box translates and
# leaves the box, so that the arrows step right after a translation.
JS = """
() => {
  const typing = (t) => { const tag = (t && t.tagName || '').toLowerCase();
    return tag === 'textarea' || tag === 'input' || tag === 'select' || !!(t && t.isContentEditable); };
  document.addEventListener('keydown', (e) => {
    const t = e.target;
    if (e.key === 'Enter' && !e.shiftKey && t && t.closest && t.closest('#src-text')) {
      setTimeout(() => t.blur(), 0); return;
    }
    if (e.key !== 'ArrowRight' && e.key !== 'ArrowLeft') return;
    if (e.altKey || e.ctrlKey || e.metaKey || e.shiftKey || typing(t)) return;
    const b = document.getElementById(e.key === 'ArrowRight' ? 'next-step' : 'prev-step');
    if (!b || !b.checkVisibility()) return;
    b.click(); e.preventDefault();
  });
}
"""


# ---------------------------------------------------------------- helpers shared by the tabs
def safe_view(fn):
    """A redraw that fails tells this user in one line (no traceback) and leaves the app serving others."""
    @functools.wraps(fn)
    def wrapper(*args):
        try:
            return fn(*args)
        except Exception as e:  # noqa: BLE001
            log.exception("view %s failed", fn.__name__)
            raise gr.Error(f"This view could not be drawn ({type(e).__name__}). Try another setting or sentence.")
    return wrapper


# Redraws shared by every user who looks at the same trace the same way (a lecture's sentence).
DRAWS = DrawCache(APP_DRAW_CACHE)


def _serialised(outputs) -> tuple:
    """A view's outputs as kept in DRAWS: Plotly figures turned into JSON once (Gradio sends PlotData as is)."""
    return tuple(PlotData(type="plotly", plot=o.to_json()) if hasattr(o, "to_plotly_json") else o for o in outputs)


def shared_view(fn):
    """`fn(trace, *controls)` drawn once per trace object and controls, for every user (see DrawCache)."""
    view = (fn.__qualname__, id(fn))

    @functools.wraps(fn)
    def wrapper(trace, *args):
        out = DRAWS.get(view, trace, args, lambda: fn(trace, *args), _serialised)
        return tuple(dict(o) if isinstance(o, dict) else o for o in out)   # Gradio may consume an update dict
    return wrapper


def update_value(update, default):
    """The value a `gr.update(...)` (or a plain value) sets, or `default` when it sets none."""
    if isinstance(update, dict):
        return update.get("value", default) if update.get("__type__") == "update" else update
    return default if update is None else update


def slider_update(n: int, value: int = 1, **kw):
    """A 1..n slider (Gradio needs minimum < maximum: a single choice is shown as a locked 1..2 slider)."""
    return gr.update(minimum=1, maximum=max(n, 2), value=min(max(1, value), max(n, 1)), step=1, interactive=n > 1, **kw)


def look_of(look: str, large: bool, scale: str) -> views.Look:
    return views.Look(dark=(look == "Dark"), large=bool(large), colorscale=scale if scale in COLORSCALES else DEFAULT_SCALE)


def no_trace(lk: views.Look, n_figures: int, *extra):
    """What a view shows before the first translation: a note in every figure."""
    return (*[empty_figure(NO_TRACE, lk.dark) for _ in range(n_figures)], *extra)


def model_card(checkpoint: Path) -> str:
    card = checkpoint / "MODEL_CARD.md"
    if card.is_file():
        text = card.read_text(encoding="utf-8")
        text = "\n".join(line for line in text.splitlines() if not line.startswith("![")) + "\n"  # no relative images
        return text.split("\n", 1)[1] if text.startswith("# ") else text
    return "_This checkpoint has no MODEL_CARD.md._"


def code_panel(*objs) -> None:
    """A collapsed "Code" panel with the project's own source of what a view shows (read at start)."""
    with gr.Accordion("Code", open=False):
        gr.Code("\n\n".join(textwrap.dedent(inspect.getsource(o)) for o in objs), language="python", interactive=False)


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
    step_slider: Optional[gr.Slider] = None
    viewing: Optional[gr.HTML] = None            # says which trace the views show (greedy, a branch, your French)
    text: Optional[gr.Textbox] = None            # the English sentence box
    french: Optional[gr.Textbox] = None          # the French translation box
    pieces: Optional[gr.HTML] = None             # the source and target pieces

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
    (slider ranges, pickers). ``after_branch``: also after a what-if branch, going back or your French."""

    fn: Callable
    inputs: list
    outputs: list
    after_branch: bool = True


@dataclass
class TabView:
    """A tab's redraw from the trace: ``draw(trace, *controls, look, large, scale)`` gives its outputs
    (shared between users through DRAWS); ``fits`` run with every new trace, before the draw."""

    draw: Callable
    controls: list
    outputs: list
    fits: list = field(default_factory=list)     # Fit: what a new trace resets in this tab
    step_slider: Optional[gr.Slider] = None      # the slider over decoding steps: Translate sets its range
    link: dict = field(default_factory=dict)      # URL key (step, kind, layer, head) -> its control
    tab_id: str = ""                             # set by build_demo: the gr.Tab it lives in

    def __post_init__(self) -> None:
        self.draw = shared_view(self.draw)

    def inputs(self, page: Page) -> list:
        return [page.trace, *self.controls, *page.look]

    def redraw_on(self, page: Page, components, **kw) -> None:
        for c in components:
            c.change(self.draw, self.inputs(page), self.outputs, api_visibility="undocumented", concurrency_id="draw",
                     **kw)

    def redraw_on_kind(self, page: Page, kind, layer, *fits: Fit) -> None:
        """A new attention kind: first the layer slider's range (and `fits`), then the redraw, in that order,
        so that the redraw reads the layer the range left, never the one from before."""
        quiet = dict(api_visibility="undocumented", show_progress="hidden")
        event = kind.change(page.layer_range, [kind, layer], layer, queue=False, **quiet)
        for f in fits:
            event = event.then(f.fn, [page.trace, *f.inputs], f.outputs, queue=False, **quiet)
        event.then(self.draw, self.inputs(page), self.outputs, concurrency_id="draw", trigger_mode="always_last",
                   **quiet)


# ---------------------------------------------------------------- the tabs, one function each
def build_steps_tab(page: Page) -> TabView:
    L = page.cfg.n_decoder_layers
    with gr.Row(equal_height=True, elem_id="step-controls"):   # one row, so that the figures stay on screen
        prev_btn = gr.Button("◀ Previous", elem_id="prev-step", scale=1, min_width=130)
        step = gr.Slider(1, 2, value=1, step=1, label="Decoding step (or the ← → keys)", scale=4,
                         elem_id="step-slider", interactive=False, buttons=[])   # no reset: every move draws
        next_btn = gr.Button("Next ▶", elem_id="next-step", scale=1, min_width=100)
        play_btn = gr.Button("▶ Play", elem_id="play-step", scale=1, min_width=100)
        speed = gr.Dropdown(PLAY_SPEEDS, value=PLAY_INTERVAL_S, label="Speed", scale=1, min_width=110,
                            elem_id="play-speed", filterable=False)
        layer = gr.Slider(1, L, value=L, step=1, label="Layer", scale=2, elem_id="step-layer")
        head = gr.Dropdown(page.head_choices, value="mean over heads", label="Head", scale=2, min_width=190,
                           elem_id="step-head")
    timer = gr.Timer(PLAY_INTERVAL_S, active=False)
    step_info = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="step-info")
    with gr.Row():
        topk_plot = gr.Plot(show_label=False, label="Next-token probabilities", elem_id="topk-plot")
        cross_plot = gr.Plot(show_label=False, label="Cross-attention over the source", elem_id="cross-step-plot")
    cross_steps = gr.Plot(show_label=False, label="Cross-attention, steps so far", elem_id="cross-steps-plot")
    kv_html = kv_cache_accordion()
    code_panel(trace_greedy)

    page.step_slider = step
    cand, step_no, candidates = build_what_if(page, step)

    @safe_view
    def draw_step(trace, step_v, layer_v, head_v, look, large, scale):
        """A step's figures, and with them its KV cache, its what-if candidates and the step for the API."""
        lk = look_of(look, large, scale)
        if trace is None:
            return (f"<i>{NO_TRACE}</i>", *no_trace(lk, 3), f"<i>{NO_TRACE}</i>", candidates(None, 1), 1)
        args = (trace, int(step_v or 1), int(layer_v or 1), head_v, lk)
        return (*views.step_view(*args), views.cross_steps_figure(*args), kv_view(trace, page.cfg, args[1]),
                candidates(trace, args[1]), args[1])

    def fit(trace):
        """A new translation is the original now (a what-if branch or your French is not)."""
        return trace, ""

    tab = TabView(draw_step, [step, layer, head], [step_info, topk_plot, cross_plot, cross_steps, kv_html, cand, step_no],
                  [Fit(fit, [], [page.original, page.viewing], after_branch=False)], step)
    tab.link = dict(step=step, layer=layer, head=head)
    # The step's figures come in the same event that moves the slider (Previous, Next, the keys, Play), so they
    # always show the step the slider shows; a drag of the slider is one event too.
    step.input(tab.draw, tab.inputs(page), tab.outputs, api_name="step_view", show_progress="hidden",
               trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [layer, head], show_progress="hidden")
    wire_step_buttons(page, tab, step, prev_btn, next_btn, play_btn, timer, speed)
    return tab


def wire_step_buttons(page: Page, tab: TabView, step, prev_btn, next_btn, play_btn, timer, speed) -> None:
    """Previous / Next (and the ← → keys, which click them), Play / Pause with a timer at the chosen speed.
    Each moves the slider and draws that step in one event."""
    def moved_to(trace, new_step, values):
        return (new_step, *tab.draw(trace, new_step, *values))

    def shift(delta):
        def go(trace, step_v, *values):
            n = views.n_steps(trace)
            return moved_to(trace, max(1, min(n, int(step_v or 1) + delta)) if n else 1, values)
        return go

    def tick(trace, step_v, *values):
        n = views.n_steps(trace)
        if not n or int(step_v or 1) >= n:
            return (gr.update(), gr.Timer(active=False), "▶ Play", *[gr.skip()] * len(tab.outputs))
        new_step, *drawn = moved_to(trace, int(step_v) + 1, values)
        return (new_step, gr.update(), gr.update(), *drawn)

    def toggle_play(trace, step_v, label, interval, *values):
        n = views.n_steps(trace)
        if label.startswith("▶") and n > 1:
            new_step, *drawn = moved_to(trace, 1 if int(step_v or 1) >= n else int(step_v or 1), values)
            return (new_step, gr.Timer(value=float(interval or PLAY_INTERVAL_S), active=True), "⏸ Pause", *drawn)
        return (gr.update(), gr.Timer(active=False), "▶ Play", *[gr.skip()] * len(tab.outputs))

    ins, rest = [page.trace, step], [*tab.controls[1:], *page.look]
    quiet = dict(api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
    prev_btn.click(shift(-1), [*ins, *rest], [step, *tab.outputs], **quiet)
    next_btn.click(shift(+1), [*ins, *rest], [step, *tab.outputs], **quiet)
    play_btn.click(toggle_play, [*ins, play_btn, speed, *rest], [step, timer, play_btn, *tab.outputs], **quiet)
    timer.tick(tick, [*ins, *rest], [step, timer, play_btn, *tab.outputs], **quiet)
    speed.change(lambda v: gr.Timer(value=float(v or PLAY_INTERVAL_S)), speed, timer, api_visibility="undocumented",
                 queue=False)


def greedy_of(trace, original, english: str):
    """The greedy trace of `english` this user already has (the original behind a branch, or the trace), or None."""
    text = clean_text(str(english or "")[:MAX_INPUT_CHARS])
    for t in (original, trace):
        if t is not None and t.source.text == text:
            return t
    return None


def what_if_callback(translator: Translator):
    def what_if(english, step_v, piece, trace, original):
        """Another piece at one step, then greedy again: one model run (from the trace shown, when it is
        of this sentence). Returns the new trace, the original, the comparison, the new French, the slider."""
        keep = (gr.update(),) * 6
        try:
            base = trace if trace is not None and greedy_of(trace, None, english) is not None else None
            new = translator.what_if(str(english or ""), int(step_v or 1), piece, base.tgt_ids if base is not None else ())
            orig = greedy_of(None, original, english) or (base if base is not None and original is None else None)
            orig = orig or translator.trace(str(english))
        except ValueError as e:
            gr.Warning(str(e))
            return (*keep[:2], f'<div class="note">{html.escape(str(e))}</div>', *keep[3:])
        except Exception:  # noqa: BLE001  a model failure is this user's, not the app's
            log.exception("what-if failed")
            gr.Warning("Sorry, the model failed on this branch. Try another piece.")
            return keep
        return (new, orig, steer_views.branch_html(orig, new, int(step_v)), new.translation,
                slider_update(len(new.steps), int(step_v)), views.pieces_html(new))
    return what_if


def build_what_if(page: Page, step):
    """Under the step view: take another candidate (or a typed piece) at this step, continue greedily,
    compare with the original, and go back. Returns the candidate picker, the step as a number, and the
    function that lists a step's candidates (the step tab updates both with every step)."""
    page.viewing = gr.HTML("", elem_id="viewing")
    with gr.Accordion("What if? Take another piece at this step", open=False, elem_id="whatif-acc"):
        with gr.Row():
            cand = gr.Dropdown([], value=None, label="Another candidate at this step", elem_id="whatif-cand", scale=2)
            piece = gr.Textbox(label="…or type a piece (as the step view shows it)", elem_id="whatif-piece",
                               max_length=100, scale=2)
            go_btn = gr.Button("Continue from this piece", variant="primary", elem_id="whatif-btn", scale=1)
            back_btn = gr.Button("Back to the original", elem_id="whatif-back", scale=1)
    step_no = gr.Number(1, precision=0, visible=False)   # the step as a plain number (the API's input: any step)
    quiet = dict(api_visibility="undocumented", queue=False)

    def candidates(trace, step_v):
        if trace is None or not trace.steps:
            return gr.update(choices=[], value=None)
        s = trace.steps[views.clamp(step_v or 1, 1, len(trace.steps)) - 1]
        return gr.update(choices=[(f"{p}  ({q:.1%})", p) for p, q in zip(s.topk_pieces, s.topk_probs)], value=None)

    def go_back(original):
        if original is None:
            gr.Warning("Translate a sentence first.")
            return (gr.update(),) * 5
        return original, "", original.translation, slider_update(len(original.steps)), views.pieces_html(original)

    cand.change(lambda c: c if c else gr.update(), cand, piece, **quiet)
    page.model_events.append(go_btn.click(
        what_if_callback(page.translator), [page.text, step_no, piece, page.trace, page.original],
        [page.trace, page.original, page.viewing, page.french, step, page.pieces], api_name="what_if",
        concurrency_id="model"))
    page.model_events.append(back_btn.click(go_back, page.original,
                                            [page.trace, page.viewing, page.french, step, page.pieces], **quiet))
    return cand, step_no, candidates


def build_explorer_tab(page: Page) -> TabView:
    with gr.Row(elem_id="explorer-controls"):     # one row: the map stays on a laptop's first screen
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind", elem_id="explorer-kind", scale=3,
                        min_width=330)
        mode = gr.Dropdown([("One head", "head"), ("Mean over heads", "mean"), ("Rollout across layers", "rollout")],
                           value="head", label="Show", scale=1, min_width=150, elem_id="explorer-mode",
                           filterable=False)
        layer = gr.Slider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer", elem_id="explorer-layer",
                          scale=2, min_width=180)
        head = gr.Dropdown(page.head_choices, value="1", label="Head", elem_id="explorer-head", scale=1, min_width=90,
                           filterable=False)
        scaling = gr.Dropdown([("shared", "shared across heads"), ("per head", "per head")],
                              value="shared across heads", label="Colour scale", scale=1, min_width=150,
                              elem_id="explorer-scaling", filterable=False)
    rollout_note = gr.Markdown(ROLLOUT_NOTE, visible=False, elem_id="rollout-note")
    ex_plot = gr.Plot(show_label=False, label="Attention map", elem_id="explorer-plot")
    gr.Markdown("**All heads** (layers × heads, like BertViz's model view). Hover for values; pick a "
                "layer and head above to enlarge one.")
    grid_plot = gr.Plot(show_label=False, label="All heads", elem_id="grid-plot")
    code_panel(scaled_dot_product_attention)

    @safe_view
    def draw_explorer(trace, kind_v, layer_v, head_v, mode_v, scaling_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 2)
        shared = scaling_v.startswith("shared")
        return (views.explorer_figure(trace, kind_v, int(layer_v), head_v, mode_v, shared, lk),
                views.grid_figure(trace, kind_v, shared, lk))

    tab = TabView(draw_explorer, [kind, layer, head, mode, scaling], [ex_plot, grid_plot])
    tab.link = dict(kind=kind, layer=layer, head=head)
    tab.redraw_on_kind(page, kind, layer)
    mode.change(lambda m: (gr.update(visible=m == "head"), gr.update(visible=m == "rollout")), mode,
                [head, rollout_note], api_visibility="undocumented", queue=False)
    head.change(tab.draw, tab.inputs(page), tab.outputs, api_name="explorer", show_progress="hidden",
                trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [layer, mode, scaling], show_progress="hidden", trigger_mode="always_last")
    return tab


def build_summary_tab(page: Page) -> TabView:
    with gr.Row(equal_height=True):
        gr.Markdown("Entropy of each head's attention (0 = looks at one piece, 1 = spread evenly) and the "
                    "simple pattern it follows most, to find interesting heads fast.")
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind", min_width=430)
    plot = gr.Plot(show_label=False, label="Heads at a glance", elem_id="summary-plot")
    gr.Markdown(views.summary_legend())
    table = gr.Dataframe(headers=["layer", "head", "entropy", "label", "strongest pattern", "its share"],
                         label="Per head", interactive=False, wrap=True)
    code_panel(head_summary)

    @safe_view
    def draw_summary(trace, kind_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 1, [])
        return views.summary_view(trace, kind_v, lk)

    tab = TabView(draw_summary, [kind], [plot, table])
    tab.link = dict(kind=kind)
    tab.redraw_on(page, [kind])
    return tab


def build_positional_tab(page: Page) -> TabView:
    d_model = page.cfg.d_model
    gr.Markdown("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). "
                "The input's positions are outlined.")
    heat = gr.Plot(show_label=False, label="Positional encoding matrix", elem_id="pe-heatmap")
    dims = gr.Dropdown([str(d) for d in range(d_model)], value=[str(d) for d in PE_DEFAULT_DIMS if d < d_model],
                       multiselect=True, label="Dimensions to plot as curves (below)")
    with gr.Row():
        curves = gr.Plot(show_label=False, label="Curves")
        similarity = gr.Plot(show_label=False, label="Similarity between positions")
    code_panel(sinusoidal_encoding, PositionalEncoding.forward)

    @safe_view
    def draw_positional(trace, dims_v, look, large, scale):   # drawn before any translation too
        return views.positional_views(trace, d_model, dims_v or [], look_of(look, large, scale))

    tab = TabView(draw_positional, [dims], [heat, curves, similarity])
    tab.redraw_on(page, [dims])
    return tab


def one_head_row(page: Page, more: Callable[[], tuple] = tuple):
    """Attention kind, layer and one head (no mean) on one row, then what `more()` adds to it: the controls
    of the views of a single head."""
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind", scale=4, min_width=330)
        layer = gr.Slider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer", scale=2, min_width=160)
        head = gr.Dropdown(page.head_choices[1:], value="1", label="Head", scale=1, min_width=90)
        return (kind, layer, head, *more())


def build_inside_tab(page: Page) -> TabView:
    kind, layer, head, query, unscaled = one_head_row(page, lambda: (   # the figure's title names the steps
        gr.Slider(1, 2, value=1, step=1, label="Query row", scale=2, min_width=160),
        gr.Checkbox(label="Softmax without ÷√d_k", value=False, scale=1, min_width=200)))
    plot = gr.Plot(show_label=False, label="Scaled dot-product attention, step by step", elem_id="inside-plot")
    row = gr.Plot(show_label=False, label="One query: with and without scaling")
    text = gr.Markdown()
    code_panel(scaled_dot_product_attention)

    @safe_view
    def draw_inside(trace, kind_v, layer_v, head_v, query_v, unscaled_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 2, "")
        n_q = len(trace.attention(kind_v).queries)
        return views.inside_view(trace, kind_v, int(layer_v), head_v, min(int(query_v or 1), n_q), bool(unscaled_v), lk)

    def fit_query(trace, kind_v, query_v=1):
        n = len(trace.attention(kind_v).queries) if trace is not None else 1
        return slider_update(n, int(query_v or 1))

    tab = TabView(draw_inside, [kind, layer, head, query, unscaled], [plot, row, text],
                  [Fit(fit_query, [kind, query], [query])])
    tab.link = dict(kind=kind, layer=layer, head=head)
    tab.redraw_on_kind(page, kind, layer, *tab.fits)
    tab.redraw_on(page, [layer, head, query, unscaled], show_progress="hidden", trigger_mode="always_last")
    return tab


def build_learning_tab(page: Page) -> TabView:
    n = len(page.replay.points) if page.replay else 1
    with gr.Row():
        example = gr.Dropdown(learning.example_choices(page.replay) if page.replay else [("(no replay)", 0)],
                              value=0, label="Example sentence", scale=2, min_width=260)
        point = gr.Slider(1, max(n, 2), value=n, step=1, label="Training checkpoint (early → late)", scale=2,
                          min_width=260, elem_id="replay-slider")
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="cross", label="Attention kind", scale=3, min_width=330)
        layer = gr.Slider(1, page.cfg.n_decoder_layers, value=1, step=1, label="Layer", scale=2, min_width=180)
        head = gr.Dropdown(page.head_choices, value="mean over heads", label="Head", scale=1, min_width=150)
    with gr.Row():
        attn_plot = gr.Plot(show_label=False, label="Attention at this point of training", elem_id="replay-plot")
        with gr.Column():
            gr.Markdown("During training, 8 fixed sentences were translated at log-spaced steps: move through "
                        "training and watch the translation, the loss and the attention take shape.")
            info = gr.HTML(elem_id="replay-info")
            loss_plot = gr.Plot(show_label=False, label="Loss", elem_id="replay-loss")

    @safe_view
    def draw_learning(trace, example_v, point_v, kind_v, layer_v, head_v, look, large, scale):
        return learning.learning_view(page.replay, int(example_v or 0), int(point_v), kind_v, int(layer_v), head_v,
                                      look_of(look, large, scale))

    tab = TabView(draw_learning, [example, point, kind, layer, head], [info, attn_plot, loss_plot])
    tab.link = dict(kind=kind, layer=layer, head=head)
    tab.redraw_on_kind(page, kind, layer)
    tab.redraw_on(page, [example, point, layer, head], show_progress="hidden", trigger_mode="always_last")
    return tab


def kv_cache_accordion():
    """The Step-by-step tab's KV-cache panel (collapsed): what is cached at this step, and what it saves."""
    with gr.Accordion("KV cache at this step", open=False):
        gr.Markdown(
            "Decoding feeds one new piece per step: each decoder layer appends its key and value to the cache and "
            "reuses the earlier ones; the cross-attention keys and values of the source are computed once. "
            "Multiply-adds at step t (S source pieces, L decoder layers, d = d_model): per layer and position "
            "6d² (W<sup>Q</sup>, W<sup>K</sup>, W<sup>V</sup>, W<sup>O</sup> of self-attention, W<sup>Q</sup>, "
            "W<sup>O</sup> of cross-attention) + 2·d·d_ff (feed-forward) + "
            "2·d·(keys seen) + 2·d·S (the two attention products), and d·vocab for the output layer. With the cache "
            "one position per step, seeing t keys (and 2·S·d² per layer for the source's keys and values, at step 1 "
            "only); recomputing the prefix, t positions each scoring all t keys (the masked ones too), the source's "
            "keys and values again, and t output rows. "
            "Biases and layer norms are left out.")
        out = gr.HTML(elem_id="kv-cache")
        code_panel(MultiHeadAttention.forward, why_views.kv_macs)
    return out


def kv_view(trace, cfg: ModelConfig, step: int) -> str:
    s = trace.steps[views.clamp(step, 1, len(trace.steps)) - 1]
    return why_views.kv_cache_html(s.prefix, trace.src_pieces, cfg.n_decoder_layers, cfg.d_model, cfg.d_ff,
                                   cfg.vocab_size)


def build_why_tab(page: Page) -> TabView:
    gr.Markdown("Three more ways to read attention: as lines between pieces, beside a gradient-based attribution, "
                "and as the vectors behind one score.")
    with gr.Tabs():
        with gr.Tab("Lines", id="why-lines"):
            lines = build_lines_view(page)
        with gr.Tab("Attribution", id="why-attribution"):
            build_attribution_view(page)
        with gr.Tab("Vectors", id="why-vectors"):
            vec = build_vectors_view(page)
    n = len(lines.controls)

    def draw_why(trace, *values):      # the lines and the vectors (both are drawn when the tab is opened)
        *controls, look, large, scale = values
        return (*lines.draw(trace, *controls[:n], look, large, scale), *vec.draw(trace, *controls[n:], look, large, scale))
    tab = TabView(draw_why, [*lines.controls, *vec.controls], [*lines.outputs, *vec.outputs], [*lines.fits, *vec.fits])
    tab.link = lines.link
    return tab


def build_lines_view(page: Page) -> TabView:
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="cross", label="Attention kind", scale=4, min_width=330)
        layer = gr.Slider(1, page.cfg.n_decoder_layers, value=1, step=1, label="Layer", scale=2, min_width=160)
        heads = gr.CheckboxGroup(page.head_choices[1:], value=page.head_choices[1:], label="Heads", scale=4,
                                 min_width=300)
    caption = gr.Markdown(elem_id="lines-caption")
    lines = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="lines-html")
    code_panel(MultiHeadAttention.forward)

    @safe_view
    def draw_lines(trace, kind_v, layer_v, heads_v, look, large, scale):
        if trace is None:
            return "", f"<i>{NO_TRACE}</i>"
        maps = trace.attention(kind_v)
        layer_v = views.clamp(layer_v or 1, 1, maps.layers)
        hs = sorted(int(h) - 1 for h in (heads_v or []) if str(h).isdigit() and 0 < int(h) <= maps.heads)
        queries = views.query_labels(trace, maps)
        return (why_views.lines_caption(maps.probs[layer_v - 1], hs, queries, maps.keys),
                why_views.lines_html(maps.probs[layer_v - 1], hs, queries, maps.keys,
                                     f"{views.KIND_TITLES[kind_v]}, layer {layer_v}"))

    tab = TabView(draw_lines, [kind, layer, heads], [caption, lines])
    tab.redraw_on_kind(page, kind, layer)
    tab.redraw_on(page, [layer, heads], show_progress="hidden", trigger_mode="always_last")
    return tab


def run_attribution(translator: Translator):
    def attribution_api(english, method):
        """Attribution of each target piece's probability to the source pieces: JSON with the matrix
        (target pieces × source pieces) and the completeness gap; method: integrated_gradients,
        gradient_x_input or both."""
        method = str(method or "both")
        if method not in (*METHODS, "both"):
            raise gr.Error(f"Unknown method {method!r}: use integrated_gradients, gradient_x_input or both.")
        if english is None or not str(english).strip():
            raise gr.Error("Type an English sentence first.")
        try:
            trace = translator.trace(str(english))
            longest = max(len(trace.src_pieces), len(trace.tgt_pieces))
            if longest > ATTRIBUTION_MAX_PIECES:
                raise ValueError(f"Attribution is limited to {ATTRIBUTION_MAX_PIECES} pieces on either side (this "
                                 f"sentence has {longest}): try a shorter sentence.")
            attrs = [attribution.attribute(translator.model, trace.source.ids, trace.tgt_ids, m, trace.src_pieces,
                                           trace.tgt_pieces) for m in (METHODS if method == "both" else (method,))]
        except ValueError as e:
            raise gr.Error(str(e))
        out = {"translation": trace.translation, **attrs[0].to_dict()}
        if len(attrs) > 1:
            out["also"] = {a.method: a.to_dict() for a in attrs[1:]}
        return {"trace": trace, "attributions": attrs}, out
    return attribution_api


def build_attribution_view(page: Page) -> None:
    gr.Markdown("Is attention an explanation? Beside the cross-attention, how much each source piece's embedding "
                "moved the probability of each target piece (red: up, blue: down), and how well the two agree "
                "(Jain & Wallace 2019; Wiegreffe & Pinter 2019). Computed on request: a few seconds.")
    with gr.Row():
        method = gr.Radio([("Both", "both"), ("Integrated Gradients", "integrated_gradients"),
                           ("Gradient × input", "gradient_x_input")], value="both", label="Method")
        layer = gr.Slider(1, page.cfg.n_decoder_layers, value=page.cfg.n_decoder_layers, step=1,
                          label="Cross-attention layer to compare")
        btn = gr.Button("Compute attribution for the sentence above", variant="primary", elem_id="attr-btn")
    result = gr.State(None)
    gap = gr.Markdown(elem_id="attr-gap")
    with gr.Row():
        plots = [gr.Plot(show_label=False, label="Integrated Gradients", elem_id="attr-ig"),
                 gr.Plot(show_label=False, label="Cross-attention", elem_id="attr-cross")]
    with gr.Row():
        plots += [gr.Plot(show_label=False, label="Gradient × input", elem_id="attr-gx"), gr.Plot(show_label=False, label="Agreement", elem_id="attr-agree")]
    with gr.Accordion("Numbers (JSON)", open=False):
        numbers = gr.JSON(elem_id="attr-json")
    code_panel(attribution.target_probs, attribution.path_gradients, attribution.attribute)

    @safe_view
    def draw_attribution(res, layer_v, look, large, scale):
        lk = look_of(look, large, scale)
        if res is None:
            return ("", *[empty_figure("Press “Compute attribution”.", lk.dark) for _ in plots])
        return why_views.attribution_views(res["trace"], res["attributions"], int(layer_v or 1), lk)

    ins = [result, layer, *page.look]
    btn.click(run_attribution(page.translator), [page.english, method], [result, numbers], api_name="attribution",
              concurrency_id="attribution", concurrency_limit=1).then(
        draw_attribution, ins, [gap, *plots], api_visibility="undocumented", concurrency_id="draw")
    for c in (layer, *page.look):
        c.change(draw_attribution, ins, [gap, *plots], api_visibility="undocumented", concurrency_id="draw")


def build_vectors_view(page: Page) -> TabView:
    gr.Markdown("The vectors behind one score: a query vector and a key vector of one head, their element-wise "
                "product, and its sum, the score before ÷√d_k. Below, a piece's input to layer 1.")
    kind, layer, head = one_head_row(page)
    with gr.Row():
        query = gr.Slider(1, 2, value=1, step=1, label="Query piece")
        key = gr.Slider(1, 2, value=1, step=1, label="Key piece")
        piece = gr.Slider(1, 2, value=1, step=1, label="Source piece for the input to layer 1")
    numbers = gr.Markdown(elem_id="vectors-text")
    vec_plot = gr.Plot(show_label=False, label="Query, key and their product", elem_id="vectors-plot")
    input_plot = gr.Plot(show_label=False, label="Embedding × √d_model + positional encoding", elem_id="input-plot")
    code_panel(vectors.layer_inputs, vectors.head_vectors, Transformer.embed)

    @safe_view
    def draw_vectors(trace, kind_v, layer_v, head_v, q_v, k_v, piece_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return (NO_TRACE, *no_trace(lk, 2))
        maps = trace.attention(kind_v)
        layer_v, head_v = views.clamp(layer_v or 1, 1, maps.layers), views.clamp(head_v or 1, 1, maps.heads)
        model = page.translator.model
        hv = vectors.head_vectors(model, trace.source.ids, [page.cfg.bos_id, *trace.tgt_ids[:-1]], kind_v, layer_v,
                                  head_v, views.query_labels(trace, maps), maps.keys)
        parts = vectors.input_parts(model, trace.source.ids, trace.src_pieces)
        return why_views.vectors_view(hv, parts, maps, int(q_v or 1), int(k_v or 1), int(piece_v or 1), lk.dark,
                                      lk.font)

    def fit(trace, kind_v, q_v=1, k_v=1, piece_v=1):
        if trace is None:
            return gr.update(), gr.update(), gr.update()
        maps = trace.attention(kind_v)
        return (slider_update(len(maps.queries), int(q_v or 1)), slider_update(len(maps.keys), int(k_v or 1)),
                slider_update(len(trace.src_pieces), int(piece_v or 1)))

    tab = TabView(draw_vectors, [kind, layer, head, query, key, piece], [numbers, vec_plot, input_plot],
                  [Fit(fit, [kind, query, key, piece], [query, key, piece])])
    tab.redraw_on_kind(page, kind, layer, *tab.fits)
    tab.redraw_on(page, [layer, head, query, key, piece], trigger_mode="always_last", show_progress="hidden")
    return tab
def forced_callback(translator: Translator):
    def forced_decoding(english, french, trace, original):
        """Your French read with teacher forcing: one forward pass. The views then show that pass."""
        try:
            greedy = greedy_of(trace if trace is not None and trace.steps and original is None else None, original,
                               english) or translator.trace(str(english or ""))
            result = translator.forced(str(english or ""), str(french or ""))
        except ValueError as e:
            gr.Warning(str(e))
            return (gr.update(),) * 3 + (f'<div class="note">{html.escape(str(e))}</div>', [], *(gr.update(),) * 3)
        except Exception:  # noqa: BLE001
            log.exception("forced decoding failed")
            gr.Warning("Sorry, the model failed on this input. Please try another sentence.")
            return (gr.update(),) * 8
        viewing = (f'<div class="note" id="viewing-forced">The views show the teacher-forced pass of your French: '
                   f'«&nbsp;{html.escape(result.french)}&nbsp;». <b>Back to the original</b> (under What if?) returns to greedy.</div>')
        return (result, result.trace, greedy, steer_views.forced_html(result, greedy.translation), result.as_rows(),
                viewing, slider_update(len(result.trace.steps)), views.pieces_html(result.trace))
    return forced_decoding


def beam_callback(translator: Translator):
    def beam_search(english, beam, trace, original):
        """Beam search of this sentence: one model run; the tree is drawn from the result."""
        try:
            result = translator.beam(str(english or ""), beam)
        except ValueError as e:
            gr.Warning(str(e))
            return None, "", f'<div class="note">{html.escape(str(e))}</div>'
        except Exception:  # noqa: BLE001
            log.exception("beam search failed")
            gr.Warning("Sorry, the model failed on this input. Please try another sentence.")
            return None, "", ""
        greedy = greedy_of(None, original, english)
        return result, result.translation, steer_views.beam_html(result, greedy.translation if greedy else None)
    return beam_search


def build_steer_tab(page: Page) -> TabView:
    gr.Markdown("**Your French (teacher forcing).** Type or edit a French translation of the English above: the "
                "model reads it as in training and scores every piece. The model's own translation gets rank 1 "
                "everywhere; a word it did not expect stands out.")
    with gr.Row(equal_height=True):
        french = gr.Textbox(label="Your French translation", max_lines=3, scale=5, max_length=TEXTBOX_MAX_CHARS,
                            elem_id="forced-text")
        copy_btn = gr.Button("Start from the model's French", scale=1, elem_id="forced-copy")
        score_btn = gr.Button("Score my French", variant="primary", scale=1, elem_id="forced-btn")
    forced_info = gr.HTML(elem_id="forced-info")
    forced_plot = gr.Plot(show_label=False, label="Your French under the model", elem_id="forced-plot")
    with gr.Accordion("Per piece (JSON)", open=False):
        forced_json = gr.JSON(label="piece, probability, rank, top_piece, cross_entropy", elem_id="forced-json")
    gr.Markdown("**Beam search** keeps the `width` best hypotheses at every step instead of one.")
    with gr.Row(equal_height=True):
        beam = gr.Slider(1, BEAM_MAX, value=BEAM_DEFAULT, step=1, label="Beam width (1 = greedy)", scale=4,
                         elem_id="beam-width")
        beam_btn = gr.Button("Run beam search", variant="primary", scale=1, elem_id="beam-btn")
    beam_text = gr.Textbox(label="Beam search translation", interactive=False, elem_id="beam-text")
    beam_info = gr.HTML(elem_id="beam-info-box")
    beam_plot = gr.Plot(show_label=False, label="The search tree", elem_id="beam-plot")
    forced_state, beam_state = gr.State(None), gr.State(None)
    beam_no = gr.Number(BEAM_DEFAULT, precision=0, visible=False)   # the width as a plain number (the API's input)
    beam.change(lambda v: v, beam, beam_no, api_visibility="undocumented", queue=False)

    @safe_view
    def draw_steer(trace, forced_v, beam_v, look, large, scale):
        lk = look_of(look, large, scale)
        f = (empty_figure("Type your French and press Score my French.", lk.dark) if forced_v is None else
             steer_views.forced_figure([p.piece for p in forced_v.pieces], [p.probability for p in forced_v.pieces],
                                       [p.rank for p in forced_v.pieces], [p.top_piece for p in forced_v.pieces],
                                       "Probability of each of your pieces (rank when not the top choice)",
                                       lk.dark, lk.font))
        b = (empty_figure("Press Run beam search.", lk.dark) if beam_v is None else
             steer_views.beam_tree_figure(beam_v, lk.dark, lk.font))
        return f, b

    tab = TabView(draw_steer, [forced_state, beam_state], [forced_plot, beam_plot])
    copy_btn.click(lambda fr: fr, page.french, french, api_visibility="undocumented", queue=False)
    page.model_events.append(gr.on(
        [score_btn.click, french.submit], forced_callback(page.translator), [page.text, french, page.trace, page.original],
        [forced_state, page.trace, page.original, forced_info, forced_json, page.viewing, page.step_slider, page.pieces],
        api_name="forced_decoding", concurrency_id="model"))
    beam_btn.click(beam_callback(page.translator), [page.text, beam_no, page.trace, page.original],
                   [beam_state, beam_text, beam_info], api_name="beam_search", concurrency_id="model").then(
        draw_steer, tab.inputs(page), tab.outputs, api_visibility="undocumented", concurrency_id="draw")
    return tab


def build_about_tab(page: Page, n_params: int, checkpoint: Path) -> None:
    gr.HTML(views.architecture_html(page.cfg, n_params))
    gr.Markdown(model_card(checkpoint))


TABS = [("Step by step", "steps", build_steps_tab), ("Attention explorer", "explorer", build_explorer_tab),
        ("Head summary", "summary", build_summary_tab), ("Positional encoding", "positional", build_positional_tab),
        ("Inside one head", "inside", build_inside_tab), ("Why this word", "why", build_why_tab),
        ("Your French & beams", "steer", build_steer_tab), ("How it learned", "learned", build_learning_tab)]


# ---------------------------------------------------------------- the page around the tabs
TITLE_HTML = ('<div id="title-line"><h1>Transformer, step by step: English → French</h1><span class="tagline">'
              'A Transformer written from scratch after <i>Attention Is All You Need</i> translates with greedy '
              'decoding.</span></div>')
GLOSSARY = """
- **greedy decoding**: at every step the model writes the most probable next piece.
- **piece**: what the model reads and writes, a word or part of a word from the tokenizer (SentencePiece).
- **`▁`** at the start of a piece: the piece begins a new word (it stands for the space before it):
  `▁chat` is the word *chat*, a piece without `▁` continues the word before it; a lone `▁` is a space.
- **`<s>`**: start of sentence, the decoder's first input (before any French piece exists).
- **`</s>`**: end of sentence: it closes the English input, and decoding stops when the model picks it.
- **layer**: one block of the encoder or the decoder; each reads the output of the layer before.
- **head**: one of the attentions a layer runs side by side; each learns its own way of looking
  (*mean over heads* averages them).
- **score**: how well a query matches a key, QKᵀ/√d_k, before the softmax turns a row of scores into
  attention weights that sum to 1.
- **rollout**: attention followed through the layers (Abnar & Zuidema, 2020): each layer's mean over heads,
  mixed half and half with the identity for the residual path, multiplied from the first layer up. For
  cross-attention (this app's own extension) the decoder's cross-attention is multiplied by the encoder's rollout.
"""


def build_header():
    """The title on one line; beside it the examples, the look and the presenter-mode switch."""
    with gr.Row(equal_height=True, elem_id="header"):
        with gr.Column(scale=3, min_width=560):
            gr.HTML(TITLE_HTML)
        example = gr.Dropdown([("Examples…", "")] + examples.dropdown_choices(), value="", label="Examples",
                              show_label=False, container=False, scale=1, min_width=220, elem_id="examples",
                              filterable=False)
        with gr.Column(scale=0, min_width=350, elem_id="look-col"):
            with gr.Row(elem_id="look-row"):
                look = gr.Radio(["Light", "Dark"], value="Light", label="Look", show_label=False, container=False,
                                elem_id="look", min_width=150)
                large = gr.Checkbox(label="Presenter mode", value=False, container=False, elem_id="presenter",
                                    min_width=120)
    look.change(None, look, None, js="(v) => { document.body.classList.toggle('dark', v === 'Dark'); }")
    large.change(None, large, None, js="(v) => { document.body.classList.toggle('presenter', !!v); }")
    return look, large, example


def build_input_section(extras: Callable[[], list]):
    """English → French on one line; then the pieces and run info, and beside them the link button and
    what ``extras()`` lays out (the glossary and the display settings)."""
    with gr.Row(equal_height=True, elem_id="io-row"):
        text = gr.Textbox(label="English", placeholder="Type an English sentence and press Enter", max_lines=3,
                          scale=5, max_length=TEXTBOX_MAX_CHARS, elem_id="src-text", autofocus=True, show_label=False,
                          container=False)
        go_btn = gr.Button("Translate →", variant="primary", scale=1, min_width=120, elem_id="translate-btn")
        french = gr.Textbox(label="French", interactive=False, scale=5, elem_id="fr-text", buttons=["copy"],
                            show_label=False, container=False, placeholder="French translation")
        link_btn = gr.Button("Copy link", size="sm", scale=0, min_width=120, elem_id="link-btn")
    with gr.Row(elem_id="pieces-row"):
        with gr.Column(scale=3, min_width=300, elem_id="pieces-col"):
            pieces = gr.HTML(elem_id="pieces")
            info = gr.Textbox(label="Run", show_label=False, container=False, interactive=False, elem_id="run-info")
        with gr.Column(scale=1, min_width=260, elem_id="extras"):
            link_box = gr.Textbox(label="Link to this view (copied)", visible=False, interactive=False,
                                  elem_id="link-box", buttons=["copy"])
            look = extras()
    return text, go_btn, [french, info, pieces], (link_btn, link_box), look


def build_display_section(cfg: ModelConfig, trace_state: gr.State, look, large) -> list:
    """The symbols explained, the colour scale and the HTML report; returns the look controls."""
    with gr.Accordion("Symbols: ▁ <s> </s> …", open=False, elem_id="glossary"):
        gr.Markdown(GLOSSARY)
    with gr.Accordion("Colours, HTML report", open=False, elem_id="display"):
        scale = gr.Dropdown(list(COLORSCALES), value=DEFAULT_SCALE,
                            label="Colour scale (Viridis and Cividis are colour-blind safe)")
        report_btn = gr.Button("Build HTML report of this translation", elem_id="report-btn")
        report_file = gr.File(label="Standalone HTML report (opens offline)", interactive=False, height=90,
                              elem_id="report-file")

    @safe_view
    def make_report(trace, look_v, large_v, scale_v):
        if trace is None:
            gr.Warning("Translate a sentence first; the report holds its figures.")
            return None
        out = Path(tempfile.mkdtemp(prefix="trace-report-", dir=report_folder())) / report_filename(trace.source.text)
        out.write_text(build_report(trace, cfg, look_of(look_v, False, scale_v)), encoding="utf-8")
        return str(out)

    report_btn.click(make_report, [trace_state, look, large, scale], report_file, api_visibility="undocumented",
                     concurrency_id="draw")
    return [look, large, scale]


def report_folder() -> Path:
    """Where HTML reports are written. Gradio copies each one into its cache when it is returned (and
    deletes the copies on the ``delete_cache`` schedule), so ours are deleted here, before every new
    report, once older than APP_REPORT_KEEP_S: a day of lectures cannot fill the disk."""
    env = os.environ.get
    folder = Path(env("APP_REPORT_DIR") or Path(tempfile.gettempdir()) / "transformer-reports")
    folder.mkdir(parents=True, exist_ok=True)
    prune_old(folder, float(env("APP_REPORT_KEEP_S", APP_REPORT_KEEP_S)))
    return folder


def sweep_reports(every_s: float) -> None:
    """Prune the report folder every `every_s` seconds too, so the last reports of a day go as well."""
    import threading

    def sweep():
        while True:
            time.sleep(every_s)
            try:
                report_folder()
            except OSError:
                log.exception("report sweep failed")
    threading.Thread(target=sweep, name="report-sweep", daemon=True).start()


def delete_cache_setting() -> tuple[int, int]:
    """Gradio's delete_cache (frequency, age) in seconds: APP_CACHE_CLEAN_S, or APP_DELETE_CACHE="f,a"."""
    value = os.environ.get("APP_DELETE_CACHE")
    return tuple(int(v) for v in value.split(",")) if value else APP_CACHE_CLEAN_S


def prune_old(folder: Path, max_age_s: float) -> int:
    """Delete the entries of `folder` last changed more than `max_age_s` ago; returns how many."""
    import shutil
    cutoff, removed = time.time() - max_age_s, 0
    for entry in folder.iterdir():
        try:
            if entry.stat().st_mtime < cutoff:
                shutil.rmtree(entry) if entry.is_dir() else entry.unlink()
                removed += 1
        except OSError:   # another request removed it first
            pass
    return removed


def translate_callback(translator: Translator):
    def run_translate(text):
        """The only callback that runs the model: this user's new trace, or a message."""
        if text is None or not str(text).strip():
            gr.Warning("Type an English sentence first.")
            return None, "", "Type an English sentence first.", "", gr.update()
        try:
            trace = translator.trace(str(text))
        except ValueError as e:
            gr.Warning(str(e))
            return None, "", str(e), "", gr.update()
        except Exception:  # a model failure is this user's, not the app's
            log.exception("translation failed")
            msg = "Sorry, the model failed on this input. Please try another sentence."
            gr.Warning(msg)
            return None, "", msg, "", gr.update()
        for note in trace.notes:
            gr.Info(note)
        return trace, trace.translation, views.run_info(trace), views.pieces_html(trace), slider_update(len(trace.steps))
    return run_translate


def sentence_choices(text):
    """The picker of sentences, shown only when the text holds more than one."""
    sentences = split_sentences(str(text or ""))
    if len(sentences) < 2:
        return gr.update(visible=False)
    return gr.update(choices=sentences, value=None, visible=True,
                     label=f"Your text has {len(sentences)} sentences. The model learned mostly from single "
                           "sentences: pick one to translate it alone")


def redraw_all(page: Page, tabs: list[TabView]):
    """One callback that redraws every tab (after Translate, a change of look, and at page load)."""
    inputs = [page.trace, *[c for tab in tabs for c in tab.controls], *page.look]
    outputs = [o for tab in tabs for o in tab.outputs]

    @safe_view
    def draw_all(trace, *values):
        *controls, look, large, scale = values
        out, i = [], 0
        for tab in tabs:
            out += tab.draw(trace, *controls[i:i + len(tab.controls)], look, large, scale)
            i += len(tab.controls)
        return tuple(out)
    return draw_all, inputs, outputs


def replay_of(checkpoint: Path) -> Optional[Replay]:
    """The checkpoint's training replay, thinned to the points the view shows; None without one."""
    path = checkpoint / REPLAY_FILE
    try:
        return load_replay(path).thin(REPLAY_POINTS) if path.is_file() else None
    except (OSError, ValueError, KeyError):
        log.warning("could not read %s; the 'How it learned' tab stays empty", path)
        return None


# ---------------------------------------------------------------- links that open a view
TAB_IDS = [tab_id for _, tab_id, _ in TABS] + ["about"]
DEFAULT_TAB = "steps"
COPY_LINK_JS = """(q) => { if (!q || !q.startsWith('?')) return q;
  const u = window.location.origin + window.location.pathname + q;
  if (navigator.clipboard) navigator.clipboard.writeText(u).catch(() => {});
  return u; }"""
BLUR_JS = "() => { if (document.activeElement) document.activeElement.blur(); }"


def link_controls(tabs: list[TabView]) -> list[tuple[str, str, object]]:
    """(tab id, URL key, control) for every control a link can set or report."""
    return [(tab_id, key, c) for (_, tab_id, _), tab in zip(TABS, tabs) for key, c in tab.link.items()]


def link_updates(page: Page, q: links.ViewQuery, tab_link: dict, trace) -> tuple[dict, list[str], Optional[int]]:
    """The updates that show the view a link asks for: {control: update}, notes, and the step to show."""
    kind = q.kind if "kind" in tab_link and q.kind else tab_link["kind"].value if "kind" in tab_link else "cross"
    head = tab_link.get("head")
    mean_ok = head is not None and any(str(v).startswith(links.MEAN) for _, v in head.choices)
    q, notes = links.fit_ranges(q, views.n_steps(trace), page.n_layers(kind), page.cfg.n_heads, mean_ok)
    out = {}
    if "kind" in tab_link and q.kind:
        out[tab_link["kind"]] = q.kind
    if "layer" in tab_link and q.layer:
        out[tab_link["layer"]] = slider_update(page.n_layers(kind), q.layer)
    if head is not None and q.head:
        out[head] = "mean over heads" if q.head == links.MEAN else q.head
    return out, notes, q.step


def link_loader(translator: Translator, page: Page, tabs: list[TabView]):
    """At page load: translate the link's sentence (or the first example) and open the view it names."""
    run = translate_callback(translator)   # Translator.trace's cache: a class opening one link translates once
    controls = [(tab_id, c) for tab_id, key, c in link_controls(tabs) if key != "step"]

    def load(request: gr.Request):
        params = dict(request.query_params) if request is not None else {}
        q, notes = links.parse_query(params, TAB_IDS, examples.EVERYDAY[0], DEFAULT_TAB)
        trace, french, info, pieces, step = run(q.text)
        updates = {}
        if trace is not None:
            tab_link = next((tab.link for (_, tid, _), tab in zip(TABS, tabs) if tid == q.tab), {})
            updates, more, step_v = link_updates(page, q, tab_link, trace)
            notes += more
            step = slider_update(len(trace.steps), step_v or 1) if step_v else step
        for note in notes:
            gr.Warning(note)
        return (q.text, trace, french, info, pieces, step, gr.Tabs(selected=q.tab), q.tab,
                *[updates.get(c, c.value) for _, c in controls])   # the page's own value: no gr.update to rebuild
    return load, [c for _, c in controls]


def wire_links(page: Page, tabs: list[TabView], text, current_tab, link_btn, link_box) -> None:
    """The button that copies the link of what is on screen (and shows it, for phones)."""
    controls = link_controls(tabs)

    def make_link(trace, text_v, tab_v, *values):
        view = {key: v for (tab_id, key, _), v in zip(controls, values) if tab_id == tab_v}
        shown = trace.source.text if trace is not None else str(text_v or "")
        return gr.update(value=links.query_string(shown, tab_v, **view), visible=True)

    link_btn.click(make_link, [page.trace, text, current_tab, *[c for *_, c in controls]], link_box,
                   api_visibility="undocumented", queue=False).then(
        None, link_box, link_box, js=COPY_LINK_JS, api_visibility="undocumented", queue=False)


def drawn_for(trace, *look) -> tuple:
    """What the figures on screen were drawn from: this trace (by its text and run) and this look."""
    return (trace.source.text, trace.seconds, len(trace.steps)) if trace is not None else None, look


def cleared(tab: TabView) -> list:
    """A tab off screen after a new trace or look: its outputs emptied (``drawn`` says it is not drawn, so it
    draws when opened). Emptied, not ``gr.skip()``: Gradio rebuilds a component for every skip (~0.4 ms
    each, against ~0.08 ms for an empty value), and a Translate has some 30 outputs off screen."""
    return [None] * len(tab.outputs)


def redraw_visible(page: Page, tabs: list[TabView], visible: gr.State, drawn: gr.State):
    """One callback that draws only the tab on screen (a change of look, a tab opened while a Translate
    waited): NewTraceViews without the fits. ``drawn`` remembers what that tab was drawn from, and the
    others draw when opened (``draw_on_select``)."""
    views = NewTraceViews.of(page, tabs, visible, with_fits=False)

    def draw_visible(trace, current, *values):
        drawn_v, out = views.views(trace, {}, current, *values)
        return (drawn_v, *out)
    return draw_visible, [page.trace, *views.inputs], [drawn, *views.outputs]


@dataclass
class NewTraceViews:
    """What every new trace brings, in the same event that made the trace (one request per Translate):
    each tab's fits (slider ranges, pickers), then the visible tab drawn. ``inputs`` and ``outputs``
    follow the event's own; ``views(trace, set_now, current, *values)`` gives the outputs, where
    ``set_now`` holds the values the event itself sets ({control: update}), e.g. the step slider's 1."""

    fits: list
    controls: list
    inputs: list
    outputs: list
    tabs: list
    look: list

    @classmethod
    def of(cls, page: Page, tabs: list[TabView], visible: gr.State, after_branch: bool = False,
           with_fits: bool = True) -> "NewTraceViews":
        fits = [f for tab in tabs for f in tab.fits if with_fits and (f.after_branch or not after_branch)]
        controls = [c for tab in tabs for c in tab.controls]
        inputs = [visible, *controls, *page.look, *[c for f in fits for c in f.inputs]]
        outputs = [o for f in fits for o in f.outputs] + [o for tab in tabs for o in tab.outputs]
        return cls(fits, controls, inputs, outputs, tabs, page.look)

    def views(self, trace, set_now: dict, current, *values) -> tuple:
        """(what the tabs were drawn from, for `drawn`), then the outputs."""
        n_c, n_l = len(self.controls), len(self.look)
        controls, look, rest = values[:n_c], values[n_c:n_c + n_l], values[n_c + n_l:]
        now = {c: update_value(set_now[c], v) if c in set_now else v for c, v in zip(self.controls, controls)}
        out, i = [], 0
        for f in self.fits:
            args = [update_value(set_now[c], v) if c in set_now else v for c, v in zip(f.inputs, rest[i:i + len(f.inputs)])]
            i += len(f.inputs)
            updates = f.fn(trace, *args) if len(f.outputs) > 1 else (f.fn(trace, *args),)
            for c, u in zip(f.outputs, updates):
                if c in now:
                    now[c] = update_value(u, now[c])
            out += updates
        for tab in self.tabs:
            if tab.tab_id == current:
                try:
                    out += tab.draw(trace, *[now[c] for c in tab.controls], *look)
                except gr.Error as e:          # the translation still shows; this view says what failed
                    gr.Warning(e.message)
                    out += [gr.skip()] * len(tab.outputs)
            else:
                out += cleared(tab)
        return (drawn_for(trace, *look), frozenset({current})), tuple(out)


def draw_on_select(page: Page, tab: TabView, gr_tab: gr.Tab, visible: gr.State, drawn: gr.State) -> None:
    """Opening a tab makes it the visible one and draws it, unless it is already drawn from this trace and look."""
    @safe_view
    def draw_if_stale(trace, drawn_v, *values):
        now = drawn_for(trace, *values[-len(page.look):])
        was, tab_ids = drawn_v or (None, frozenset())
        # Nothing translated and nothing drawn yet: the first tab's select at page mount, racing the page's own
        # translation (which draws this tab itself); drawing empty figures now could land after it.
        if trace is None and drawn_v is None:      # (nor is it the tab on screen: a link may have opened another)
            return (gr.skip(), gr.skip(), *[gr.skip()] * len(tab.outputs))
        if was == now and tab.tab_id in tab_ids:
            return (tab.tab_id, gr.skip(), *[gr.skip()] * len(tab.outputs))
        return (tab.tab_id, (now, (tab_ids if was == now else frozenset()) | {tab.tab_id}), *tab.draw(trace, *values))

    gr_tab.select(draw_if_stale, [page.trace, drawn, *tab.controls, *page.look], [visible, drawn, *tab.outputs],
                  api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")


def build_tabs(page: Page, translator: Translator, checkpoint: Path, current_tab: gr.State, drawn: gr.State):
    """Every tab; opening one records it as the tab on screen (for the link and the redraws) and draws it."""
    tabs = []
    with gr.Tabs(selected=DEFAULT_TAB, overflow_behavior="wrap", elem_id="tabs") as tabs_box:
        for title, tab_id, build in TABS:
            with gr.Tab(title, id=tab_id) as gr_tab:
                tabs.append(build(page))
            tabs[-1].tab_id = tab_id
            draw_on_select(page, tabs[-1], gr_tab, current_tab, drawn)
        with gr.Tab("About", id="about") as tab:
            build_about_tab(page, translator.model.num_parameters(), checkpoint)
        tab.select(lambda: "about", None, current_tab, api_visibility="undocumented", queue=False)
    return tabs, tabs_box


def build_demo(translator: Translator, checkpoint: Path, concurrency: int = APP_CONCURRENCY) -> gr.Blocks:
    with gr.Blocks(title="Transformer, step by step: English → French", delete_cache=delete_cache_setting()) as demo:
        trace_state = gr.State(None)   # this user's trace: every redraw reads it, none re-runs the model
        current_tab = gr.State(DEFAULT_TAB)   # the tab on this user's screen: the only one a Translate draws
        drawn = gr.State(None)                # (what they were drawn from, the tabs drawn from it): see drawn_for
        look, large, example = build_header()
        text, go_btn, results, (link_btn, link_box), look = build_input_section(
            lambda: build_display_section(translator.cfg, trace_state, look, large))
        picker = gr.Dropdown([], label="Your text has several sentences", visible=False, elem_id="sentence-picker")
        page = Page(translator.cfg, trace_state, look, replay_of(checkpoint), translator, english=text,
                    original=gr.State(None), text=text, french=results[0], pieces=results[2])
        tabs, tabs_box = build_tabs(page, translator, checkpoint, current_tab, drawn)

        draw_all, all_in, all_out = redraw_visible(page, tabs, current_tab, drawn)
        demo.perf_tabs = (page, tabs, current_tab, drawn)     # for bench/redraw_cost.py
        step = next(tab.step_slider for tab in tabs if tab.step_slider is not None)
        result_outputs = [trace_state, *results, step]
        model = dict(concurrency_id="model",   # with the batcher, waiting requests are decoded together
                     concurrency_limit=APP_TRANSLATE_WAITING if getattr(translator, "batcher", None) else concurrency)

        # A new trace (Translate, a picked sentence or example, a link at page load) comes with its views in the
        # same event: the tabs' fits and the visible tab's figures (NewTraceViews), one request per Translate.
        fresh = NewTraceViews.of(page, tabs, current_tab)
        run = translate_callback(translator)

        def translated(text_v, values) -> tuple:
            """The trace and what shows it (French, info, pieces, step), then `drawn` and the views."""
            trace, *shown, step_v = run(text_v)
            drawn_v, views_out = fresh.views(trace, {step: step_v}, *values)
            return (trace, *shown, step_v), (drawn_v, *views_out)

        def translate(text_v, *values):
            result, views_out = translated(text_v, values)
            return (*result, sentence_choices(text_v), *views_out)
        translate.__doc__ = run.__doc__
        typed = gr.on([go_btn.click, text.submit], translate, [text, *fresh.inputs],
                      [*result_outputs, picker, drawn, *fresh.outputs], api_name="translate_and_draw",
                      api_visibility="undocumented", **model)
        moved = gr.State(None)   # set when the user opened another tab while a Translate waited: that tab redraws

        def moved_on(current, drawn_v):
            return gr.skip() if drawn_v is None or current in drawn_v[1] else (current, time.monotonic())
        moved.change(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
        typed.then(moved_on, [current_tab, drawn], moved, api_visibility="undocumented", queue=False)
        # The API's /translate: the French, the run's details, the pieces and the step range (and this session's
        # trace, for /step_view and the other endpoints), without the figures.
        gr.Button(visible=False).click(run, text, result_outputs, api_name="translate", **model)

        def pick(choice, *values):
            if not choice:
                return (gr.update(),) * (len(result_outputs) + 2) + (gr.skip(),) * len(fresh.outputs)
            result, views_out = translated(choice, values)
            return (choice, *result, *views_out)
        for chooser in (picker, example):
            chooser.input(pick, [chooser, *fresh.inputs], [text, *result_outputs, drawn, *fresh.outputs],
                          api_visibility="undocumented", **model).then(
                moved_on, [current_tab, drawn], moved, api_visibility="undocumented", queue=False)
        example.input(None, None, None, js=BLUR_JS, api_visibility="undocumented", queue=False)
        # A what-if branch, going back, your French: a new trace, redrawn as after Translate, except the step
        # tab's fit (it would take the branch for the original).
        branched = NewTraceViews.of(page, tabs, current_tab, after_branch=True)

        def redraw_branch(trace, *values):
            drawn_v, views_out = branched.views(trace, {}, *values)
            return (drawn_v, *views_out)
        for ev in page.model_events:
            ev.then(redraw_branch, [trace_state, *branched.inputs], [drawn, *branched.outputs],
                    api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
        for c in page.look:
            c.change(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
        load, link_outs = link_loader(translator, page, tabs)

        def open_page(request: gr.Request, *values):
            loaded = load(request)             # text, trace, French, info, pieces, step, tabs, tab, link controls
            trace, step_v, tab_v, link_v = loaded[1], loaded[5], loaded[7], loaded[8:]
            set_now = {step: step_v, **dict(zip(link_outs, link_v))}
            drawn_v, views_out = fresh.views(trace, set_now, tab_v, *values[1:])
            return (*loaded, drawn_v, *views_out)
        # A link sets controls (kind, layer, head) whose change events redraw from values the browser may not
        # have settled yet; one last redraw from the settled values, after them, leaves the view the link names.
        demo.load(open_page, fresh.inputs, [text, *result_outputs, tabs_box, current_tab, *link_outs, drawn, *fresh.outputs],
                  api_visibility="undocumented", **model).then(
            draw_all, all_in, all_out, api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
        wire_links(page, tabs, text, current_tab, link_btn, link_box)
    return demo


def parse_args(argv=None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=env("TRANSFORMER_CHECKPOINT", str(DEFAULT_CHECKPOINT)),
                   help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default=env("TRANSFORMER_DEVICE", "auto"), help="auto, cpu or cuda")
    p.add_argument("--host", default=env("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to bind (default 127.0.0.1; 0.0.0.0 to serve a network)")
    p.add_argument("--port", type=int, default=int(env("GRADIO_SERVER_PORT", str(APP_PORT))))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--concurrency", type=int, default=int(env("APP_CONCURRENCY", str(APP_CONCURRENCY))),
                   help="translations run at once (the model is shared read-only)")
    p.add_argument("--torch-threads", type=int, default=int(env("APP_TORCH_THREADS", str(APP_TORCH_THREADS))),
                   help="intra-op threads per translation (default 1: concurrent requests share the cores)")
    p.add_argument("--queue-size", type=int, default=int(env("APP_QUEUE_SIZE", str(APP_QUEUE_SIZE))),
                   help="requests that may wait in the queue before new ones are turned away")
    return p.parse_args(argv)


def main(argv=None) -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    t0 = time.perf_counter()
    if args.torch_threads > 0:
        import torch
        torch.set_num_threads(args.torch_threads)
    try:
        # Concurrent Translate requests wait in the batcher and are decoded together, `concurrency` batches at once.
        translator = Translator(args.checkpoint, args.device, batch_workers=args.concurrency)
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Warm-up: the first request should not pay for the model's lazy initialisation. (Drawing the
    # figures here too would save the first visitor ~0.3 s, but app processes started that way were
    # far more often in a slow mode, ~135 ms per Translate request instead of ~85 ms: see
    # bench/RESULTS.md, section 4. Not understood, so not done.)
    translator.trace("Hello.")
    log.info("model loaded on %s in %.1fs", translator.device, time.perf_counter() - t0)
    demo = build_demo(translator, Path(args.checkpoint), args.concurrency)
    sweep_reports(delete_cache_setting()[0])
    demo.queue(default_concurrency_limit=APP_REDRAW_CONCURRENCY, max_size=args.queue_size)
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, theme=gr.themes.Soft(),
                max_threads=APP_MAX_THREADS,
                css=CSS, js=JS, footer_links=["api", "gradio"], show_error=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
