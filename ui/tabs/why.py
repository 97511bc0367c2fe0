"""Why this word: Lines (BertViz's head view), Attribution (gradients beside cross-attention) and Vectors
(the query and key behind one score).
"""
from __future__ import annotations

import contextvars
import queue
import threading
import time

import gradio as gr

from transformer import params

from transformer.probes import attribution, vectors
from transformer.probes import lens as lens_module
from transformer.model.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.model.transformer import Transformer
from transformer.serving.translator import Translator
from transformer.viz import views
from transformer.viz import why as why_views
from transformer.viz.figure import empty_figure

from ..page import (KIND_CHOICES, NO_TRACE, Fit, Page, TabView, code_panel, drawn_once, look_of, no_trace,
                    one_head_row, safe_view, slider_update)
from ..settings import APP_ATTRIBUTION_CONCURRENCY
from ..inputs import ChoiceDropdown, ChoiceRadio, RequiredRadio, TextInput, WholeSlider


def build_why_tab(page: Page) -> TabView:
    gr.Markdown("Three more ways to read attention: as lines between pieces, beside a gradient-based "
                "attribution, and as the vectors behind one score.", elem_classes="view-caption")
    with gr.Tabs():
        with gr.Tab("Lines", id="why-lines"):
            lines = build_lines_view(page)
        with gr.Tab("Attribution", id="why-attribution"):
            contrast_fits = build_attribution_view(page)
        with gr.Tab("Vectors", id="why-vectors"):
            vec = build_vectors_view(page)
        with gr.Tab("Layer by layer", id="why-lens"):
            lens = build_lens_view(page)
    subs = (lines, vec, lens)
    cuts = [0]
    for v in subs:
        cuts.append(cuts[-1] + len(v.controls))

    def draw_why(trace, *values):      # every sub-view from the trace (all are drawn when the tab is opened)
        *controls, look, large, scale, narrow = values
        return tuple(out for v, a, b in zip(subs, cuts, cuts[1:])
                     for out in v.draw(trace, *controls[a:b], look, large, scale, narrow))
    tab = TabView(draw_why, [c for v in subs for c in v.controls], [o for v in subs for o in v.outputs],
                  [*(f for v in subs for f in v.fits), *contrast_fits])
    tab.link = lines.link
    return tab


def build_lines_view(page: Page) -> TabView:
    with gr.Row():
        kind = ChoiceRadio(KIND_CHOICES, value="cross", label="Attention kind", scale=4, min_width=330)
        layer = WholeSlider(1, page.cfg.n_decoder_layers, value=1, step=1, label="Layer", scale=2,
                            min_width=160)
        heads = gr.CheckboxGroup(page.head_choices[1:], value=page.head_choices[1:], label="Heads", scale=4,
                                 min_width=300)
    caption = gr.Markdown(elem_id="lines-caption")
    lines = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="lines-html")
    # the softmax that makes the lines
    code_panel(MultiHeadAttention.forward, scaled_dot_product_attention)

    @safe_view
    def draw_lines(trace, kind_v, layer_v, heads_v, look, large, scale, narrow=False):
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


def attribution_json(trace, attrs) -> dict:
    out = {"translation": trace.translation, **attrs[0].to_dict()}
    if len(attrs) > 1:
        out["also"] = {a.method: a.to_dict() for a in attrs[1:]}
    return out


def progress_bar(progress):
    """The translator's progress reports as Gradio's progress bar (None: no bar, e.g. an API call without
    one)."""
    if progress is None:
        return None
    return lambda done, total, what: progress((done, total), desc=what, unit="target × point rows")


def computed(translator: Translator, english, method, step=None, rival="", progress=None, estimate=None):
    """(trace, attributions) from the translator's shared cache, or a gr.Error with the reason."""
    try:
        english = params.text(english, "English sentence")
        if not english.strip():
            raise gr.Error("Type an English sentence first.", print_exception=False)
        return translator.attribution(english, params.text(method, "method") or "both", step,
                                      params.text(rival, "rival piece"), progress=progress_bar(progress),
                                      estimate=estimate)
    except ValueError as e:
        # the user's mistake (a limit, a wrong piece): no traceback in the log
        raise gr.Error(str(e), print_exception=False)


def attribution_endpoint(translator: Translator):
    def attribution_api(english: str, method: str) -> dict:
        """Attribution of each target piece's probability to the source pieces: JSON with the matrix
        (target pieces × source pieces) and the completeness gap; method: integrated_gradients,
        gradient_x_input or both."""
        return attribution_json(*computed(translator, english, method))
    return attribution_api


ESTIMATE_EVERY_S = 1.5      # a first estimate at once, then at most one redraw this often while IG refines


def progressive_attribution(translator: Translator, draw):
    """The page's Compute: the attribution drawn as soon as a first estimate of every piece exists (Integrated
    Gradients' first pass; seconds for a 30-word sentence), redrawn in place as it refines, then the final
    result. The computation runs in a thread of its own (with this event's context: its progress bar) and
    hands each estimate over; the answer is a generator, which Gradio streams to the page."""
    def attribution_on_page(english, method, layer_v, look, large, scale, narrow, progress=gr.Progress()):
        results: queue.Queue = queue.Queue()
        last = [-1e9]

        def estimate(attrs):
            now = time.monotonic()
            if now - last[0] >= ESTIMATE_EVERY_S:
                last[0] = now
                results.put(("estimate", attrs))

        def work():
            try:
                results.put(("final",
                             computed(translator, english, method, progress=progress, estimate=estimate)))
            except BaseException as e:  # noqa: BLE001 - handed to the event, which raises it for the user
                results.put(("error", e))
        threading.Thread(target=contextvars.copy_context().run, args=(work,), daemon=True,
                         name="attribution").start()
        trace = None
        while True:
            kind, value = results.get()
            if kind == "error":
                raise value
            if kind == "final":
                trace, attrs = value
            else:
                trace, attrs = trace or translator.trace(english), value
            res = {"trace": trace, "attributions": attrs}
            yield (res, attribution_json(trace, attrs), *draw(res, layer_v, look, large, scale, narrow))
            if kind == "final":
                return
    return attribution_on_page


def contrast_api(translator: Translator):
    def contrast(english: str, step: int, rival: str, method: str = "both") -> dict:
        """Why the model chose its piece at `step` (1-based) and not `rival` (a piece, ▁ optional): the
        attribution of log p(chosen) − log p(rival) to the source pieces (method: integrated_gradients,
        gradient_x_input or both), with the completeness check."""
        if step is None:                    # (None asks the translator for the plain attribution)
            raise gr.Error("The step must be a whole number from 1 to the translation's number of steps; "
                           "none was given.", print_exception=False)
        return attribution_json(*computed(translator, english, method, step, rival))
    return contrast


def run_contrast(translator: Translator):
    def contrast_on_page(english, step, candidate, typed, method, progress=gr.Progress()):
        """The contrastive attribution, and the plain one of the same sentence when it is already computed."""
        trace, attrs = computed(translator, english, method, step, typed or candidate or "",
                                progress=progress)
        return {"trace": trace, "contrasts": attrs}, attribution_json(trace, attrs)
    return contrast_on_page


def build_attribution_view(page: Page) -> list:
    gr.Markdown("Is attention an explanation? Beside the cross-attention, how much each source piece's "
                "embedding moved the probability of each target piece (red: up, blue: down), and how well "
                "the two agree (Jain & Wallace 2019; Wiegreffe & Pinter 2019). Computed on request, once for "
                "everyone asking for the same sentence: a bar shows each pass over the path as it runs, and "
                "your place in the queue while others' run.")
    with gr.Row():
        method = RequiredRadio([("Both", "both"), ("Integrated Gradients", "integrated_gradients"),
                           ("Gradient × input", "gradient_x_input")], value="both", label="Method")
        layer = WholeSlider(1, page.cfg.n_decoder_layers, value=page.cfg.n_decoder_layers, step=1,
                          label="Cross-attention layer to compare")
        btn = gr.Button("Compute attribution for the sentence above", variant="primary", elem_id="attr-btn")
    result = gr.State(None)
    gap = gr.Markdown(elem_id="attr-gap")
    with gr.Row():
        plots = [gr.Plot(show_label=False, label="Integrated Gradients", elem_id="attr-ig"),
                 gr.Plot(show_label=False, label="Cross-attention", elem_id="attr-cross")]
    with gr.Row():
        plots += [gr.Plot(show_label=False, label="Gradient × input", elem_id="attr-gx"),
                  gr.Plot(show_label=False, label="Agreement", elem_id="attr-agree")]
    with gr.Accordion("Numbers (JSON)", open=False):
        numbers = gr.JSON(elem_id="attr-json")
    code_panel(attribution.target_function, attribution.point_scores, attribution.integrated_scores)

    @safe_view
    def draw_attribution(res, layer_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if res is None:
            return ("", *[empty_figure("Press “Compute attribution”.", lk.dark, lk.font) for _ in plots])
        # the translator's cached objects: a room's 50 pages draw them once
        attrs = res["attributions"]
        return drawn_once("attribution", attrs[0], (tuple(a.method for a in attrs), int(layer_v or 1), look,
                                                    large, scale, narrow),
                          lambda: why_views.attribution_views(res["trace"], attrs, int(layer_v or 1), lk))

    ins = [result, layer, *page.look]
    # then the layer
    btn.click(progressive_attribution(page.translator, draw_attribution),
              [page.english, method, layer, *page.look], [result, numbers, gap, *plots],
              api_name="attribution_on_page", api_visibility="undocumented", concurrency_id="attribution",
              concurrency_limit=APP_ATTRIBUTION_CONCURRENCY, show_progress="full",
              # the queue position, then the bar, over the maps;
              show_progress_on=[plots[0], plots[1]]).then(
        draw_attribution, ins, [gap, *plots], api_visibility="undocumented", concurrency_id="draw")
    # and look as they are now (the estimates were drawn with those of the click; drawn_once:
    # no second drawing)
    gr.api(attribution_endpoint(page.translator), api_name="attribution", concurrency_id="attribution",
           concurrency_limit=APP_ATTRIBUTION_CONCURRENCY)
    for c in (layer, *page.look):
        c.change(draw_attribution, ins, [gap, *plots], api_visibility="undocumented", concurrency_id="draw")
    return build_contrast_view(page, method, layer, result, numbers)


def rival_choices(trace, step_v):
    """The step's other candidates, most probable first: the rivals offered."""
    if trace is None or not trace.steps:
        return gr.update(choices=[], value=None)
    s = trace.steps[views.clamp(step_v or 1, 1, len(trace.steps)) - 1]
    rivals = [(f"{p}  ({q:.1%})", p) for p, q in zip(s.topk_pieces[1:], s.topk_probs[1:])]
    return gr.update(choices=rivals, value=rivals[0][1] if rivals else None)


def build_contrast_view(page: Page, method, layer, plain, numbers) -> list:
    """Why this piece and not that one: a step, a rival, and the attribution of the difference. Returns its
    Fit."""
    gr.Markdown("**Why this piece and not another?** Pick a step and a rival piece: the bars show which "
                "source pieces made the model prefer its choice to the rival (log p(chosen) − log p(rival)).")
    with gr.Row():
        step = WholeSlider(1, 2, value=1, step=1, label="Step", elem_id="contrast-step", scale=2)
        cand = ChoiceDropdown([], label="Rival: one of the step's candidates", elem_id="contrast-rival",
                              scale=2)
        typed = TextInput(label="…or type a rival piece", elem_id="contrast-typed", max_length=100, scale=2)
        btn = gr.Button("Why this and not that?", variant="primary", elem_id="contrast-btn", scale=1)
    caption = gr.Markdown(elem_id="contrast-caption")
    plot = gr.Plot(show_label=False, label="Why this piece and not the rival", elem_id="contrast-plot")
    result = gr.State(None)

    @safe_view
    def draw_contrast(res, plain_v, layer_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if res is None:
            return "", empty_figure("Pick a step and a rival, then press “Why this and not that?”.", lk.dark,
                                    lk.font)
        trace = res["trace"]
        same = plain_v is not None and plain_v["trace"].source.text == trace.source.text
        return (why_views.contrast_caption(res["contrasts"], trace),
                why_views.contrast_figure(trace, res["contrasts"], plain_v["attributions"] if same else [],
                                          int(layer_v or 1), lk))

    def fit(trace, step_v=1):
        if trace is None:
            return gr.update(), gr.update()
        return slider_update(len(trace.steps), int(step_v or 1)), rival_choices(trace, step_v)

    step.change(rival_choices, [page.trace, step], cand, api_visibility="undocumented", queue=False)
    ins = [result, plain, layer, *page.look]
    gr.api(contrast_api(page.translator), api_name="contrast", concurrency_id="attribution",
           concurrency_limit=APP_ATTRIBUTION_CONCURRENCY)
    btn.click(run_contrast(page.translator), [page.english, step, cand, typed, method], [result, numbers],
              api_name="contrast_on_page", api_visibility="undocumented", concurrency_id="attribution",
              concurrency_limit=APP_ATTRIBUTION_CONCURRENCY, show_progress="full",
              show_progress_on=[plot]).then(
        draw_contrast, ins, [caption, plot], api_visibility="undocumented", concurrency_id="draw")
    for c in (layer, *page.look):
        c.change(draw_contrast, ins, [caption, plot], api_visibility="undocumented", concurrency_id="draw")
    return [Fit(fit, [step], [step, cand], after_branch=False)]   # the rivals of the greedy translation


def build_lens_view(page: Page) -> TabView:
    gr.Markdown("**A lens through the decoder's layers**: what the decoder would predict if it stopped after "
                "layer 1, 2, …: the model's own output projection applied to each layer's output. Look for "
                "the layer where the piece the model chose comes to the top and stays there.")
    step = WholeSlider(1, 2, value=1, step=1, label="Step", elem_id="lens-step")
    table = gr.HTML(f"<i>{NO_TRACE}</i>", elem_id="lens-html")
    plot = gr.Plot(show_label=False, label="Layer by layer", elem_id="lens-plot")
    code_panel(lens_module.logit_lens)

    @safe_view
    def draw_lens(trace, step_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if trace is None or not trace.steps:
            return f"<i>{NO_TRACE}</i>", *no_trace(lk, 1)
        lens = page.translator.logit_lens(trace)
        return (why_views.lens_html(lens, int(step_v or 1)),
                why_views.lens_figure(lens, int(step_v or 1), lk.dark, lk.font, lk.colorscale))

    def fit(trace, step_v=1):
        return gr.update() if trace is None else slider_update(len(trace.steps), int(step_v or 1))

    tab = TabView(draw_lens, [step], [table, plot], [Fit(fit, [step], [step])])
    tab.redraw_on(page, [step], trigger_mode="always_last", show_progress="hidden")
    return tab


def piece_picker(labels, value) -> dict:
    """A dropdown of pieces by position ("3 ▁sleeping"), keeping the position picked when it still exists."""
    choices = [(f"{i} {label}", i) for i, label in enumerate(labels, start=1)]
    v = int(value or 1)
    return gr.update(choices=choices, value=v if 1 <= v <= len(choices) else 1)


def build_vectors_view(page: Page) -> TabView:
    gr.Markdown("The vectors behind one score: a query vector and a key vector of one head, their "
                "element-wise product, and its sum, the score before ÷√d_k. Below, a piece's input to layer "
                "1.")
    kind, layer, head = one_head_row(page)
    with gr.Row():
        query = ChoiceDropdown([("1", 1)], value=1, label="Query piece", filterable=False,
                               elem_id="vectors-query")
        key = ChoiceDropdown([("1", 1)], value=1, label="Key piece", filterable=False, elem_id="vectors-key")
        piece = ChoiceDropdown([("1", 1)], value=1, label="Source piece for the input to layer 1",
                               filterable=False, elem_id="vectors-piece")
    numbers = gr.Markdown(elem_id="vectors-text")
    vec_plot = gr.Plot(show_label=False, label="Query, key and their product", elem_id="vectors-plot")
    input_plot = gr.Plot(show_label=False, label="Embedding × √d_model + positional encoding",
                         elem_id="input-plot")
    code_panel(vectors.layer_inputs, vectors.head_vectors, Transformer.embed)

    @safe_view
    def draw_vectors(trace, kind_v, layer_v, head_v, q_v, k_v, piece_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if trace is None:
            return (NO_TRACE, *no_trace(lk, 2))
        maps = trace.attention(kind_v)
        layer_v, head_v = views.clamp(layer_v or 1, 1, maps.layers), views.clamp(head_v or 1, 1, maps.heads)
        hv = page.translator.head_vectors(trace, kind_v, layer_v, head_v, views.query_labels(trace, maps),
                                          maps.keys)
        parts = page.translator.input_parts(trace)
        return why_views.vectors_view(hv, parts, maps, int(q_v or 1), int(k_v or 1), int(piece_v or 1),
                                      lk.dark, lk.font, trace.scaled)

    def fit(trace, kind_v, q_v=1, k_v=1, piece_v=1):
        if trace is None:
            return gr.update(), gr.update(), gr.update()
        maps = trace.attention(kind_v)
        return (piece_picker(views.query_labels(trace, maps), q_v), piece_picker(maps.keys, k_v),
                piece_picker(trace.src_pieces, piece_v))

    tab = TabView(draw_vectors, [kind, layer, head, query, key, piece], [numbers, vec_plot, input_plot],
                  [Fit(fit, [kind, query, key, piece], [query, key, piece])])
    tab.redraw_on_kind(page, kind, layer, *tab.fits)
    tab.redraw_on(page, [layer, head, query, key, piece], trigger_mode="always_last", show_progress="hidden")
    return tab
