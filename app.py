"""See a Transformer translate English to French, step by step and head by head.

Run: ``python app.py [--checkpoint DIR] [--device auto|cpu|cuda] [--host 127.0.0.1] [--port 7860] [--share]``.
The same file runs unchanged as a Hugging Face Space. Layout and thin callbacks only: the model
runs once per Translate (``transformer.translator``); every other control redraws from the trace
kept in ``gr.State`` (``transformer.viz.views``), so sliders and pickers never re-run the model.
"""
from __future__ import annotations

import argparse
import functools
import logging
import os
import sys
import tempfile
import time
from pathlib import Path

import gradio as gr

from transformer.viz import views
from transformer.io.checkpoint import CheckpointError, DEFAULT_CHECKPOINT
from transformer.viz.plots import COLORSCALES, empty_figure
from transformer.viz.report import build_report
from transformer.translator import MAX_INPUT_CHARS, Translator

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
    return views.Look(dark=(look == "Dark"), large=bool(large), colorscale=scale if scale in COLORSCALES else "Viridis")


def model_card(checkpoint: Path) -> str:
    card = checkpoint / "MODEL_CARD.md"
    if card.is_file():
        text = card.read_text(encoding="utf-8")
        text = "\n".join(line for line in text.splitlines() if not line.startswith("![")) + "\n"  # no relative images
        return text.split("\n", 1)[1] if text.startswith("# ") else text
    return "_This checkpoint has no MODEL_CARD.md._"


def build_demo(translator: Translator, checkpoint: Path, concurrency: int = 2) -> gr.Blocks:
    cfg = translator.cfg
    L_enc, L_dec, H = cfg.n_encoder_layers, cfg.n_decoder_layers, cfg.n_heads
    head_choices = ["mean over heads"] + [str(h) for h in range(1, H + 1)]
    n_params = translator.model.num_parameters()

    # ---------------------------------------------------------------- callbacks (thin)
    def run_translate(text):
        """The only callback that runs the model."""
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
        n = len(trace.steps)
        return (trace, trace.translation, views.run_info(trace), views.pieces_html(trace),
                slider_update(n))

    @safe_view
    def draw_step(trace, step, layer, head, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return f"<i>{NO_TRACE}</i>", empty_figure(NO_TRACE, lk.dark), empty_figure(NO_TRACE, lk.dark)
        return views.step_view(trace, int(step or 1), int(layer or 1), head, lk)

    @safe_view
    def draw_explorer(trace, kind, layer, head, mode, scaling, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return empty_figure(NO_TRACE, lk.dark), empty_figure(NO_TRACE, lk.dark)
        shared = scaling.startswith("shared")
        return (views.explorer_figure(trace, kind, int(layer), head, mode, shared, lk),
                views.grid_figure(trace, kind, shared, lk))

    @safe_view
    def draw_summary(trace, kind, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return empty_figure(NO_TRACE, lk.dark), []
        return views.summary_view(trace, kind, lk)

    @safe_view
    def draw_positional(trace, dims, look, large, scale):
        return views.positional_views(trace, cfg.d_model, dims or [], look_of(look, large, scale))

    @safe_view
    def draw_inside(trace, kind, layer, head, query, unscaled, look, large, scale):
        lk = look_of(look, large, scale)
        if trace is None:
            return empty_figure(NO_TRACE, lk.dark), empty_figure(NO_TRACE, lk.dark), ""
        n_q = len(views.kind_data(trace, kind)[2])
        return views.inside_view(trace, kind, int(layer), head, min(int(query or 1), n_q), bool(unscaled), lk)

    def fit_query(trace, kind):
        return slider_update(len(views.kind_data(trace, kind)[2]) if trace is not None else 1)

    def layer_range(kind):
        return slider_update(L_enc if kind == "encoder" else L_dec)

    def shift(trace, step, delta):
        n = views.n_steps(trace)
        return max(1, min(n, int(step or 1) + delta)) if n else 1

    def tick(trace, step):
        n = views.n_steps(trace)
        if not n or int(step or 1) >= n:
            return gr.update(), gr.Timer(active=False), "▶ Play"
        return int(step) + 1, gr.update(), gr.update()

    def toggle_play(trace, step, label):
        n = views.n_steps(trace)
        if label.startswith("▶") and n > 1:
            start = 1 if int(step or 1) >= n else int(step or 1)
            return start, gr.Timer(active=True), "⏸ Pause"
        return gr.update(), gr.Timer(active=False), "▶ Play"

    @safe_view
    def make_report(trace, look, large, scale):
        if trace is None:
            gr.Warning("Translate a sentence first; the report holds its figures.")
            return None
        text = build_report(trace, cfg, look_of(look, False, scale))
        out = Path(tempfile.mkdtemp(prefix="trace-report-")) / "transformer-trace.html"
        out.write_text(text, encoding="utf-8")
        return str(out)

    # ---------------------------------------------------------------- layout
    with gr.Blocks(title="Transformer, step by step: English → French") as demo:
        trace_state = gr.State(None)
        gr.Markdown(
            "# Transformer, step by step: English → French\n"
            "A Transformer written from scratch after *Attention Is All You Need* translates your sentence with "
            "greedy decoding. Watch every step and every attention head: encoder self-attention, decoder masked "
            "self-attention and cross-attention.")
        with gr.Row(equal_height=True):
            text = gr.Textbox(label="English sentence", placeholder="Type an English sentence and press Enter",
                              max_lines=4, scale=5, max_length=MAX_INPUT_CHARS * 4, elem_id="src-text",
                              autofocus=True)
            go_btn = gr.Button("Translate", variant="primary", scale=1, elem_id="translate-btn")
        gr.Examples(EXAMPLES, inputs=text, label="Examples (click one, then Translate)")
        with gr.Row():
            french = gr.Textbox(label="French translation", interactive=False, scale=5, elem_id="fr-text",
                                buttons=["copy"])
            info = gr.Textbox(label="Run", interactive=False, scale=2, elem_id="run-info")
        pieces = gr.HTML(elem_id="pieces")
        with gr.Accordion("Display: light/dark, presenter mode, colours, report", open=False):
            with gr.Row():
                look = gr.Radio(["Light", "Dark"], value="Light", label="Look")
                large = gr.Checkbox(label="Presenter mode (large type)", value=False)
                scale = gr.Dropdown(list(COLORSCALES), value="Viridis", label="Colour scale (Viridis and Cividis are colour-blind safe)")
                report_btn = gr.Button("Build HTML report of this translation", elem_id="report-btn")
                report_file = gr.File(label="Standalone HTML report (opens offline)", interactive=False, height=90,
                                      elem_id="report-file")
        look_inputs = [look, large, scale]

        with gr.Tabs():
            with gr.Tab("Step by step", id="steps"):
                gr.Markdown("Greedy decoding picks the most probable next piece at every step. Use the slider, "
                            "the buttons, **Play**, or the ← → keys.")
                with gr.Row():
                    prev_btn = gr.Button("◀ Previous", elem_id="prev-step", scale=1)
                    step = gr.Slider(1, 2, value=1, step=1, label="Decoding step", scale=4, elem_id="step-slider",
                                     interactive=False)
                    next_btn = gr.Button("Next ▶", elem_id="next-step", scale=1)
                    play_btn = gr.Button("▶ Play", elem_id="play-step", scale=1)
                timer = gr.Timer(0.9, active=False)
                step_info = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="step-info")
                with gr.Row():
                    step_layer = gr.Slider(1, L_dec, value=L_dec, step=1, label="Cross-attention layer")
                    step_head = gr.Dropdown(head_choices, value="mean over heads", label="Head")
                with gr.Row():
                    topk_plot = gr.Plot(label="Next-token probabilities", elem_id="topk-plot")
                    cross_plot = gr.Plot(label="Cross-attention over the source", elem_id="cross-step-plot")

            with gr.Tab("Attention explorer", id="explorer"):
                with gr.Row():
                    ex_kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
                    ex_mode = gr.Radio([("One head", "head"), ("Mean over heads", "mean"), ("Rollout across layers", "rollout")],
                                       value="head", label="Show")
                    ex_scaling = gr.Radio(["shared across heads", "per head"], value="shared across heads",
                                          label="Colour scaling")
                with gr.Row():
                    ex_layer = gr.Slider(1, L_enc, value=1, step=1, label="Layer")
                    ex_head = gr.Dropdown(head_choices, value="1", label="Head")
                ex_plot = gr.Plot(label="Attention map", elem_id="explorer-plot")
                gr.Markdown("**All heads** (layers × heads, like BertViz's model view). Hover for values; pick a "
                            "layer and head above to enlarge one.")
                grid_plot = gr.Plot(label="All heads", elem_id="grid-plot")

            with gr.Tab("Head summary", id="summary"):
                gr.Markdown("Entropy of each head's attention (0 = looks at one piece, 1 = spread evenly) and the "
                            "simple pattern it follows most, to find interesting heads fast.")
                sum_kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
                sum_plot = gr.Plot(label="Heads at a glance", elem_id="summary-plot")
                sum_table = gr.Dataframe(headers=["layer", "head", "entropy", "label", "strongest pattern", "score"],
                                         label="Per head", interactive=False, wrap=True)

            with gr.Tab("Positional encoding", id="positional"):
                gr.Markdown("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). "
                            "The input's positions are outlined.")
                pe_dims = gr.Dropdown([str(d) for d in range(cfg.d_model)], value=[str(d) for d in (0, 1, 8, 9, 64, 65) if d < cfg.d_model],
                                      multiselect=True, label="Dimensions to plot as curves")
                pe_heat = gr.Plot(label="Positional encoding matrix", elem_id="pe-heatmap")
                with gr.Row():
                    pe_curves = gr.Plot(label="Curves")
                    pe_sim = gr.Plot(label="Similarity between positions")

            with gr.Tab("Inside one head", id="inside"):
                gr.Markdown("The steps of scaled dot-product attention for one head: QKᵀ, ÷√d_k, mask, softmax.")
                with gr.Row():
                    in_kind = gr.Radio(KIND_CHOICES, value="encoder", label="Attention kind")
                    in_layer = gr.Slider(1, L_enc, value=1, step=1, label="Layer")
                    in_head = gr.Dropdown([str(h) for h in range(1, H + 1)], value="1", label="Head")
                with gr.Row():
                    in_query = gr.Slider(1, 2, value=1, step=1, label="Query row for the comparison")
                    in_unscaled = gr.Checkbox(label="Show the softmax WITHOUT ÷√d_k", value=False)
                in_plot = gr.Plot(label="Scaled dot-product attention, step by step", elem_id="inside-plot")
                in_row = gr.Plot(label="One query: with and without scaling")
                in_text = gr.Markdown()

            with gr.Tab("About the model", id="about"):
                gr.HTML(views.architecture_html(cfg, n_params))
                gr.Markdown(model_card(checkpoint))

        # ---------------------------------------------------------------- events
        step_in = [trace_state, step, step_layer, step_head, *look_inputs]
        step_out = [step_info, topk_plot, cross_plot]
        ex_in = [trace_state, ex_kind, ex_layer, ex_head, ex_mode, ex_scaling, *look_inputs]
        ex_out = [ex_plot, grid_plot]
        sum_in, sum_out = [trace_state, sum_kind, *look_inputs], [sum_plot, sum_table]
        pe_in, pe_out = [trace_state, pe_dims, *look_inputs], [pe_heat, pe_curves, pe_sim]
        in_in = [trace_state, in_kind, in_layer, in_head, in_query, in_unscaled, *look_inputs]
        in_out = [in_plot, in_row, in_text]

        @safe_view
        def draw_all(trace, step_v, sl, sh, exk, exl, exh, exm, exs, sk, dims, ik, il, ih, iq, iu, lk, lg, sc):
            return (*draw_step(trace, step_v, sl, sh, lk, lg, sc),
                    *draw_explorer(trace, exk, exl, exh, exm, exs, lk, lg, sc),
                    *draw_summary(trace, sk, lk, lg, sc),
                    *draw_positional(trace, dims, lk, lg, sc),
                    *draw_inside(trace, ik, il, ih, iq, iu, lk, lg, sc))

        all_in = [trace_state, step, step_layer, step_head, ex_kind, ex_layer, ex_head, ex_mode, ex_scaling,
                  sum_kind, pe_dims, in_kind, in_layer, in_head, in_query, in_unscaled, *look_inputs]
        all_out = step_out + ex_out + sum_out + pe_out + in_out
        tr_out = [trace_state, french, info, pieces, step]
        gr.on([go_btn.click, text.submit], run_translate, text, tr_out, api_name="translate",
              concurrency_id="model", concurrency_limit=concurrency).then(
            fit_query, [trace_state, in_kind], in_query, api_visibility="undocumented", queue=False).then(
            draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")

        step.change(draw_step, step_in, step_out, api_name="step_view", show_progress="hidden",
                    trigger_mode="always_last", concurrency_id="draw")
        for c in (step_layer, step_head):
            c.change(draw_step, step_in, step_out, api_visibility="undocumented", show_progress="hidden",
                     concurrency_id="draw")
        prev_btn.click(lambda t, s: shift(t, s, -1), [trace_state, step], step, api_visibility="undocumented",
                       show_progress="hidden", queue=False)
        next_btn.click(lambda t, s: shift(t, s, +1), [trace_state, step], step, api_visibility="undocumented",
                       show_progress="hidden", queue=False)
        play_btn.click(toggle_play, [trace_state, step, play_btn], [step, timer, play_btn],
                       api_visibility="undocumented", show_progress="hidden")
        timer.tick(tick, [trace_state, step], [step, timer, play_btn], api_visibility="undocumented",
                   show_progress="hidden")

        ex_kind.change(layer_range, ex_kind, ex_layer, api_visibility="undocumented", queue=False)
        for c in (ex_kind, ex_layer, ex_head, ex_mode, ex_scaling):
            c.change(draw_explorer, ex_in, ex_out, api_name="explorer" if c is ex_head else None,
                     api_visibility="public" if c is ex_head else "undocumented",
                     show_progress="hidden", trigger_mode="always_last", concurrency_id="draw")
        sum_kind.change(draw_summary, sum_in, sum_out, api_visibility="undocumented", concurrency_id="draw")
        pe_dims.change(draw_positional, pe_in, pe_out, api_visibility="undocumented", concurrency_id="draw")
        in_kind.change(layer_range, in_kind, in_layer, api_visibility="undocumented", queue=False).then(
            fit_query, [trace_state, in_kind], in_query, api_visibility="undocumented", queue=False)
        for c in (in_kind, in_layer, in_head, in_query, in_unscaled):
            c.change(draw_inside, in_in, in_out, api_visibility="undocumented", show_progress="hidden",
                     trigger_mode="always_last", concurrency_id="draw")
        for c in look_inputs:
            c.change(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
        look.change(None, look, None, js="(v) => { document.body.classList.toggle('dark', v === 'Dark'); }")
        large.change(None, large, None, js="(v) => { document.body.classList.toggle('presenter', !!v); }")
        report_btn.click(make_report, [trace_state, *look_inputs], report_file, api_visibility="undocumented",
                         concurrency_id="draw")
        demo.load(draw_all, all_in, all_out, api_visibility="undocumented", concurrency_id="draw")
    return demo


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=os.environ.get("TRANSFORMER_CHECKPOINT", str(DEFAULT_CHECKPOINT)),
                   help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default=os.environ.get("TRANSFORMER_DEVICE", "auto"), help="auto, cpu or cuda")
    p.add_argument("--host", default=os.environ.get("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to bind (default 127.0.0.1; 0.0.0.0 to serve a network)")
    p.add_argument("--port", type=int, default=int(os.environ.get("GRADIO_SERVER_PORT", "7860")))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--concurrency", type=int, default=int(os.environ.get("APP_CONCURRENCY", "2")),
                   help="translations run at once (the model is shared read-only)")
    p.add_argument("--torch-threads", type=int, default=int(os.environ.get("APP_TORCH_THREADS", "1")),
                   help="intra-op threads per translation (default 1: concurrent requests share the cores)")
    p.add_argument("--queue-size", type=int, default=int(os.environ.get("APP_QUEUE_SIZE", "256")),
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
        translator = Translator(args.checkpoint, args.device)
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
    demo.queue(default_concurrency_limit=4, max_size=args.queue_size)
    demo.launch(server_name=args.host, server_port=args.port, share=args.share, theme=gr.themes.Soft(),
                css=CSS, js=JS, footer_links=["api", "gradio"], show_error=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
