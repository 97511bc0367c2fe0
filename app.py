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
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

import gradio as gr

from transformer.config import (APP_CACHE_CLEAN_S, APP_CONCURRENCY, APP_PORT, APP_QUEUE_SIZE, APP_REDRAW_CONCURRENCY,
                                APP_MAX_THREADS, APP_REPORT_KEEP_S, APP_TORCH_THREADS, APP_TRANSLATE_WAITING, PE_DEFAULT_DIMS, PLAY_INTERVAL_S,
                                TEXTBOX_MAX_CHARS, ModelConfig)
from transformer.io.checkpoint import DEFAULT_CHECKPOINT, CheckpointError
from transformer.translator import Translator
from transformer.viz import views
from transformer.viz.plots import COLORSCALES, DEFAULT_SCALE, empty_figure
from transformer.viz.report import build_report

log = logging.getLogger("app")

EXAMPLES = [
    "The cat is sleeping on the sofa.",
    "I would like a cup of coffee, please.",
    "Where is the nearest train station?",
    "Two children are playing football in the park.",
    "She has been learning to play the piano for three years.",
    "We will meet tomorrow morning in front of the museum.",
]
KIND_CHOICES = [("Encoder self-attention", "encoder"), ("Decoder masked self-attention", "decoder"),
                ("Cross-attention", "cross")]
NO_TRACE = "Translate a sentence to see this view."

CSS = """
.piece{display:inline-block;border:1px solid var(--border-color-primary);border-radius:6px;padding:1px 6px;margin:2px;
 font-family:var(--font-mono);white-space:pre}
.piece.src{background:rgba(230,159,0,.15)} .piece.tgt{background:rgba(86,180,233,.18)}
.piece.chosen{background:rgba(230,159,0,.45);font-weight:bold}
.pieces div,.stepinfo div{margin:4px 0} .note{color:#b45309;font-weight:600}
.arch{display:flex;gap:18px;align-items:center;flex-wrap:wrap}.arch-col{flex:1;min-width:260px}
.arch-head{font-weight:700;font-size:1.1em;margin-bottom:6px}
.arch-box{border:2px solid var(--border-color-primary);border-radius:8px;padding:6px 10px;margin:6px 0}
.arch-box.enc{border-color:#E69F00}.arch-box.dec{border-color:#56B4E9}.arch-box.emb{border-style:dashed}
.arch-box.out{border-color:#009E73}.arch-title{font-weight:700}.arch-arrow{text-align:center;font-weight:600}
body.presenter .gradio-container{font-size:1.3em} body.presenter .prose{font-size:1.25em}
"""

# Keyboard: ← / → step through decoding (unless typing in a text field).
JS = """
() => {
  document.addEventListener('keydown', (e) => {
    const t = e.target; const tag = (t && t.tagName || '').toLowerCase();
    if (tag === 'textarea' || (tag === 'input' && t.type !== 'range')) return;
    if (e.key === 'ArrowRight' || e.key === 'ArrowLeft') {
      const id = e.key === 'ArrowRight' ? 'next-step' : 'prev-step';
      const b = document.querySelector('#' + id); if (b) { b.click(); e.preventDefault(); }
    }
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


@dataclass
class Page:
    """What every tab needs: the model's sizes, this user's trace, and the display controls."""

    cfg: ModelConfig
    trace: gr.State
    look: list           # Look, presenter mode, colour scale: every figure follows them

    @property
    def head_choices(self) -> list[str]:
        return ["mean over heads"] + [str(h) for h in range(1, self.cfg.n_heads + 1)]

    def layer_range(self, kind: str):
        return slider_update(self.cfg.n_encoder_layers if kind == "encoder" else self.cfg.n_decoder_layers)


@dataclass
class TabView:
    """A tab's redraw from the trace: ``draw(trace, *controls, look, large, scale)`` gives its outputs."""

    draw: Callable
    controls: list
    outputs: list
    after_translate: Optional[Callable] = None   # called with the Translate event, to chain what must follow
    step_slider: Optional[gr.Slider] = None      # the slider over decoding steps: Translate sets its range
    tab_id: str = ""                             # set by build_demo: the gr.Tab it lives in

    def inputs(self, page: Page) -> list:
        return [page.trace, *self.controls, *page.look]

    def redraw_on(self, page: Page, components, **kw) -> None:
        for c in components:
            c.change(self.draw, self.inputs(page), self.outputs, api_visibility="undocumented", concurrency_id="draw",
                     **kw)


# ---------------------------------------------------------------- the tabs, one function each
def build_steps_tab(page: Page) -> TabView:
    L = page.cfg.n_decoder_layers
    gr.Markdown("Greedy decoding picks the most probable next piece at every step. Use the slider, "
                "the buttons, **Play**, or the ← → keys.")
    with gr.Row():
        prev_btn = gr.Button("◀ Previous", elem_id="prev-step", scale=1)
        step = gr.Slider(1, 2, value=1, step=1, label="Decoding step", scale=4, elem_id="step-slider",
                         interactive=False)
        next_btn = gr.Button("Next ▶", elem_id="next-step", scale=1)
        play_btn = gr.Button("▶ Play", elem_id="play-step", scale=1)
    timer = gr.Timer(PLAY_INTERVAL_S, active=False)
    step_info = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="step-info")
    with gr.Row():
        layer = gr.Slider(1, L, value=L, step=1, label="Cross-attention layer")
        head = gr.Dropdown(page.head_choices, value="mean over heads", label="Head")
    with gr.Row():
        topk_plot = gr.Plot(label="Next-token probabilities", elem_id="topk-plot")
        cross_plot = gr.Plot(label="Cross-attention over the source", elem_id="cross-step-plot")

    @safe_view
    def draw_step(trace, step_v, layer_v, head_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return (f"<i>{NO_TRACE}</i>", *no_trace(lk, 2))
        return views.step_view(trace, int(step_v or 1), int(layer_v or 1), head_v, lk)

    tab = TabView(draw_step, [step, layer, head], [step_info, topk_plot, cross_plot], step_slider=step)
    step.change(draw_step, tab.inputs(page), tab.outputs, api_name="step_view", show_progress="hidden",
                trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [layer, head], show_progress="hidden")
    wire_step_buttons(page, step, prev_btn, next_btn, play_btn, timer)
    return tab


def wire_step_buttons(page: Page, step, prev_btn, next_btn, play_btn, timer) -> None:
    """Previous / Next (and the ← → keys, which click them), Play / Pause with a timer."""
    def shift(trace, step_v, delta):
        n = views.n_steps(trace)
        return max(1, min(n, int(step_v or 1) + delta)) if n else 1

    def tick(trace, step_v):
        n = views.n_steps(trace)
        if not n or int(step_v or 1) >= n:
            return gr.update(), gr.Timer(active=False), "▶ Play"
        return int(step_v) + 1, gr.update(), gr.update()

    def toggle_play(trace, step_v, label):
        n = views.n_steps(trace)
        if label.startswith("▶") and n > 1:
            start = 1 if int(step_v or 1) >= n else int(step_v or 1)
            return start, gr.Timer(active=True), "⏸ Pause"
        return gr.update(), gr.Timer(active=False), "▶ Play"

    quiet = dict(api_visibility="undocumented", show_progress="hidden")
    prev_btn.click(lambda t, s: shift(t, s, -1), [page.trace, step], step, queue=False, **quiet)
    next_btn.click(lambda t, s: shift(t, s, +1), [page.trace, step], step, queue=False, **quiet)
    play_btn.click(toggle_play, [page.trace, step, play_btn], [step, timer, play_btn], **quiet)
    timer.tick(tick, [page.trace, step], [step, timer, play_btn], **quiet)


def build_explorer_tab(page: Page) -> TabView:
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
        mode = gr.Radio([("One head", "head"), ("Mean over heads", "mean"), ("Rollout across layers", "rollout")],
                        value="head", label="Show")
        scaling = gr.Radio(["shared across heads", "per head"], value="shared across heads", label="Colour scaling")
    with gr.Row():
        layer = gr.Slider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer")
        head = gr.Dropdown(page.head_choices, value="1", label="Head")
    ex_plot = gr.Plot(label="Attention map", elem_id="explorer-plot")
    gr.Markdown("**All heads** (layers × heads, like BertViz's model view). Hover for values; pick a "
                "layer and head above to enlarge one.")
    grid_plot = gr.Plot(label="All heads", elem_id="grid-plot")

    @safe_view
    def draw_explorer(trace, kind_v, layer_v, head_v, mode_v, scaling_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 2)
        shared = scaling_v.startswith("shared")
        return (views.explorer_figure(trace, kind_v, int(layer_v), head_v, mode_v, shared, lk),
                views.grid_figure(trace, kind_v, shared, lk))

    tab = TabView(draw_explorer, [kind, layer, head, mode, scaling], [ex_plot, grid_plot])
    kind.change(page.layer_range, kind, layer, api_visibility="undocumented", queue=False)
    head.change(draw_explorer, tab.inputs(page), tab.outputs, api_name="explorer", show_progress="hidden",
                trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [kind, layer, mode, scaling], show_progress="hidden", trigger_mode="always_last")
    return tab


def build_summary_tab(page: Page) -> TabView:
    gr.Markdown("Entropy of each head's attention (0 = looks at one piece, 1 = spread evenly) and the "
                "simple pattern it follows most, to find interesting heads fast.")
    kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
    plot = gr.Plot(label="Heads at a glance", elem_id="summary-plot")
    table = gr.Dataframe(headers=["layer", "head", "entropy", "label", "strongest pattern", "score"],
                         label="Per head", interactive=False, wrap=True)

    @safe_view
    def draw_summary(trace, kind_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 1, [])
        return views.summary_view(trace, kind_v, lk)

    tab = TabView(draw_summary, [kind], [plot, table])
    tab.redraw_on(page, [kind])
    return tab


def build_positional_tab(page: Page) -> TabView:
    d_model = page.cfg.d_model
    gr.Markdown("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). "
                "The input's positions are outlined.")
    dims = gr.Dropdown([str(d) for d in range(d_model)], value=[str(d) for d in PE_DEFAULT_DIMS if d < d_model],
                       multiselect=True, label="Dimensions to plot as curves")
    heat = gr.Plot(label="Positional encoding matrix", elem_id="pe-heatmap")
    with gr.Row():
        curves = gr.Plot(label="Curves")
        similarity = gr.Plot(label="Similarity between positions")

    @safe_view
    def draw_positional(trace, dims_v, look, large, scale):   # drawn before any translation too
        return views.positional_views(trace, d_model, dims_v or [], look_of(look, large, scale))

    tab = TabView(draw_positional, [dims], [heat, curves, similarity])
    tab.redraw_on(page, [dims])
    return tab


def build_inside_tab(page: Page) -> TabView:
    gr.Markdown("The steps of scaled dot-product attention for one head: QKᵀ, ÷√d_k, mask, softmax.")
    with gr.Row():
        kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
        layer = gr.Slider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer")
        head = gr.Dropdown(page.head_choices[1:], value="1", label="Head")
    with gr.Row():
        query = gr.Slider(1, 2, value=1, step=1, label="Query row for the comparison")
        unscaled = gr.Checkbox(label="Show the softmax WITHOUT ÷√d_k", value=False)
    plot = gr.Plot(label="Scaled dot-product attention, step by step", elem_id="inside-plot")
    row = gr.Plot(label="One query: with and without scaling")
    text = gr.Markdown()

    @safe_view
    def draw_inside(trace, kind_v, layer_v, head_v, query_v, unscaled_v, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return no_trace(lk, 2, "")
        n_q = len(trace.attention(kind_v).queries)
        return views.inside_view(trace, kind_v, int(layer_v), head_v, min(int(query_v or 1), n_q), bool(unscaled_v), lk)

    def fit_query(trace, kind_v):
        return slider_update(len(trace.attention(kind_v).queries) if trace is not None else 1)

    def after_translate(event):
        return event.then(fit_query, [page.trace, kind], query, api_visibility="undocumented", queue=False)

    tab = TabView(draw_inside, [kind, layer, head, query, unscaled], [plot, row, text], after_translate)
    kind.change(page.layer_range, kind, layer, api_visibility="undocumented", queue=False).then(
        fit_query, [page.trace, kind], query, api_visibility="undocumented", queue=False)
    tab.redraw_on(page, [kind, layer, head, query, unscaled], show_progress="hidden", trigger_mode="always_last")
    return tab


def build_about_tab(page: Page, n_params: int, checkpoint: Path) -> None:
    gr.HTML(views.architecture_html(page.cfg, n_params))
    gr.Markdown(model_card(checkpoint))


TABS = [("Step by step", "steps", build_steps_tab), ("Attention explorer", "explorer", build_explorer_tab),
        ("Head summary", "summary", build_summary_tab), ("Positional encoding", "positional", build_positional_tab),
        ("Inside one head", "inside", build_inside_tab)]


# ---------------------------------------------------------------- the page around the tabs
def build_input_section():
    """The sentence box, examples, and where the translation, run info and pieces appear."""
    with gr.Row(equal_height=True):
        text = gr.Textbox(label="English sentence", placeholder="Type an English sentence and press Enter",
                          max_lines=4, scale=5, max_length=TEXTBOX_MAX_CHARS, elem_id="src-text", autofocus=True)
        go_btn = gr.Button("Translate", variant="primary", scale=1, elem_id="translate-btn")
    gr.Examples(EXAMPLES, inputs=text, label="Examples (click one, then Translate)")
    with gr.Row():
        french = gr.Textbox(label="French translation", interactive=False, scale=5, elem_id="fr-text", buttons=["copy"])
        info = gr.Textbox(label="Run", interactive=False, scale=2, elem_id="run-info")
    pieces = gr.HTML(elem_id="pieces")
    return text, go_btn, [french, info, pieces]


def build_display_section(cfg: ModelConfig, trace_state: gr.State) -> list:
    """Light/dark, presenter mode, colour scale, and the HTML report; returns the look controls."""
    with gr.Accordion("Display: light/dark, presenter mode, colours, report", open=False):
        with gr.Row():
            look = gr.Radio(["Light", "Dark"], value="Light", label="Look")
            large = gr.Checkbox(label="Presenter mode (large type)", value=False)
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
        out = Path(tempfile.mkdtemp(prefix="trace-report-", dir=report_folder())) / "transformer-trace.html"
        out.write_text(build_report(trace, cfg, look_of(look_v, False, scale_v)), encoding="utf-8")
        return str(out)

    look.change(None, look, None, js="(v) => { document.body.classList.toggle('dark', v === 'Dark'); }")
    large.change(None, large, None, js="(v) => { document.body.classList.toggle('presenter', !!v); }")
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


def drawn_for(trace, *look) -> tuple:
    """What the figures on screen were drawn from: this trace (by its text and run) and this look."""
    return (trace.source.text, trace.seconds, len(trace.steps)) if trace is not None else None, look


def redraw_visible(page: Page, tabs: list[TabView], visible: gr.State, drawn: gr.State):
    """One callback that draws only the tab on screen (after Translate, a change of look, at page load);
    ``drawn`` remembers what that tab was drawn from, and the others draw when opened (``draw_on_select``)."""
    inputs = [page.trace, visible, *[c for tab in tabs for c in tab.controls], *page.look]
    outputs = [drawn, *[o for tab in tabs for o in tab.outputs]]

    @safe_view
    def draw_visible(trace, current, *values):
        *controls, look, large, scale = values
        out, i = [], 0
        for tab in tabs:
            mine = controls[i:i + len(tab.controls)]
            out += tab.draw(trace, *mine, look, large, scale) if tab.tab_id == current else [gr.skip()] * len(tab.outputs)
            i += len(tab.controls)
        return ((drawn_for(trace, look, large, scale), frozenset({current})), *out)
    return draw_visible, inputs, outputs


def draw_on_select(page: Page, tab: TabView, gr_tab: gr.Tab, visible: gr.State, drawn: gr.State) -> None:
    """Opening a tab makes it the visible one and draws it, unless it is already drawn from this trace and look."""
    @safe_view
    def draw_if_stale(trace, drawn_v, *values):
        now = drawn_for(trace, *values[-len(page.look):])
        was, tab_ids = drawn_v or (None, frozenset())
        if was == now and tab.tab_id in tab_ids:
            return (tab.tab_id, gr.skip(), *[gr.skip()] * len(tab.outputs))
        return (tab.tab_id, (now, (tab_ids if was == now else frozenset()) | {tab.tab_id}), *tab.draw(trace, *values))

    gr_tab.select(draw_if_stale, [page.trace, drawn, *tab.controls, *page.look], [visible, drawn, *tab.outputs],
                  api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")


def build_demo(translator: Translator, checkpoint: Path, concurrency: int = APP_CONCURRENCY) -> gr.Blocks:
    with gr.Blocks(title="Transformer, step by step: English → French", delete_cache=delete_cache_setting()) as demo:
        trace_state = gr.State(None)   # this user's trace: every redraw reads it, none re-runs the model
        gr.Markdown(
            "# Transformer, step by step: English → French\n"
            "A Transformer written from scratch after *Attention Is All You Need* translates your sentence with "
            "greedy decoding. Watch every step and every attention head: encoder self-attention, decoder masked "
            "self-attention and cross-attention.")
        text, go_btn, results = build_input_section()
        page = Page(translator.cfg, trace_state, build_display_section(translator.cfg, trace_state))
        tabs = []
        visible = gr.State(TABS[0][1])     # the tab on this user's screen: the only one a Translate draws
        drawn = gr.State(None)             # (what they were drawn from, the tabs drawn from it): see drawn_for
        with gr.Tabs():
            for title, tab_id, build in TABS:
                with gr.Tab(title, id=tab_id) as gr_tab:
                    tabs.append(build(page))
                tabs[-1].tab_id = tab_id
                draw_on_select(page, tabs[-1], gr_tab, visible, drawn)
            with gr.Tab("About the model", id="about") as about_tab:
                build_about_tab(page, translator.model.num_parameters(), checkpoint)
            about_tab.select(lambda: "about", None, visible, api_visibility="undocumented", queue=False)

        draw_all, all_in, all_out = redraw_visible(page, tabs, visible, drawn)
        demo.perf_tabs = (page, tabs, visible, drawn)     # for bench/redraw_cost.py
        step = next(tab.step_slider for tab in tabs if tab.step_slider is not None)
        event = gr.on([go_btn.click, text.submit], translate_callback(translator), text, [trace_state, *results, step],
                      api_name="translate", concurrency_id="model",
                      concurrency_limit=APP_TRANSLATE_WAITING if getattr(translator, "batcher", None) else concurrency)
        for tab in tabs:
            event = tab.after_translate(event) if tab.after_translate else event
        event.then(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
        for c in page.look:
            c.change(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
        demo.load(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
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
