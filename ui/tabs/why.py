"""Why this word: Lines (BertViz's head view), Attribution (gradients beside cross-attention) and Vectors
(the query and key behind one score).
"""
from __future__ import annotations

import gradio as gr

from transformer.config import ATTRIBUTION_MAX_PIECES
from transformer.model import attribution, vectors
from transformer.model.attention import MultiHeadAttention
from transformer.model.transformer import Transformer
from transformer.translator import Translator
from transformer.viz import views
from transformer.viz import why as why_views
from transformer.viz.figure import empty_figure
from transformer.why import METHODS

from ..page import (KIND_CHOICES, NO_TRACE, Fit, Page, TabView, code_panel, look_of, no_trace, one_head_row, safe_view,
                    slider_update)


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
