"""Inside one head: QKᵀ, ÷√d_k, the mask and the softmax of one head; below, inside one layer (the residual
stream, LayerNorm, the feed-forward) at the query's piece, and three ways to compute attention side by side.
"""
from __future__ import annotations

import inspect
import textwrap

import gradio as gr

from transformer.probes import attention_forms, inside_layer
from transformer.model.attention import scaled_dot_product_attention
from transformer.viz import layer as layer_views
from transformer.viz import views
from transformer.viz.figure import empty_figure

from ..inputs import WholeSlider
from ..page import (NO_TRACE, Fit, Page, TabView, caption, code_panel, look_of, no_trace, one_head_row,
                    safe_view, slider_update)


def build_inside_tab(page: Page) -> TabView:
    kind, layer, head, query, unscaled = one_head_row(page, lambda: (   # the figure's title names the steps
        WholeSlider(1, 2, value=1, step=1, label="Query row", scale=2, min_width=160),
        gr.Checkbox(label="Softmax without ÷√d_k", value=False, scale=1, min_width=200)))
    caption("follow the outlined query row through the four panels: raw scores, the same scores shrunk by "
            "√d_k, the future masked (decoder only), then the softmax that turns them into weights that add "
            "up to 1. Tick 'without ÷√d_k' to see the softmax saturate.")
    plot = gr.Plot(show_label=False, label="Scaled dot-product attention, step by step",
                   elem_id="inside-plot")
    row = gr.Plot(show_label=False, label="One query: with and without scaling")
    text = gr.Markdown()
    code_panel(scaled_dot_product_attention)

    def fit_query(trace, kind_v, query_v=1):
        n = len(trace.attention(kind_v).queries) if trace is not None else 1
        return slider_update(n, int(query_v or 1))

    with gr.Accordion("Inside one layer: residual stream, LayerNorm, feed-forward (at the query's piece)",
                      open=False, elem_id="layer-acc"):
        layer_text = gr.Markdown(elem_id="layer-text")
        layer_plot = gr.Plot(show_label=False, label="Inside one layer", elem_id="layer-plot")
        code_panel(inside_layer.layer_parts)
    build_forms_panel(page, kind, layer)

    @safe_view
    def draw_inside(trace, kind_v, layer_v, head_v, query_v, unscaled_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if trace is None:
            return no_trace(lk, 2, "", "", empty_figure(NO_TRACE, lk.dark, lk.font))
        n_q = len(trace.attention(kind_v).queries)
        q = min(int(query_v or 1), n_q)
        parts = one_layer(page, trace, kind_v, int(layer_v or 1), q)
        return (*views.inside_view(trace, kind_v, int(layer_v), head_v, q, bool(unscaled_v), lk),
                layer_views.layer_text(parts), layer_views.layer_figure(parts, lk.dark, lk.font))

    tab = TabView(draw_inside, [kind, layer, head, query, unscaled],
                  [plot, row, text, layer_text, layer_plot], [Fit(fit_query, [kind, query], [query])])
    tab.link = dict(kind=kind, layer=layer, head=head)
    tab.redraw_on_kind(page, kind, layer, *tab.fits)
    tab.redraw_on(page, [layer, head, query, unscaled], show_progress="hidden", trigger_mode="always_last")
    return tab


def one_layer(page: Page, trace, kind: str, layer: int, query: int):
    """Inside the layer that holds this attention (the encoder's for encoder self-attention, else the
    decoder's), at the query's position."""
    stack = "encoder" if kind == "encoder" else "decoder"
    maps = trace.attention(kind)
    return page.translator.layer_parts(trace, stack, views.clamp(layer, 1, maps.layers), query - 1,
                                       maps.queries)


def build_forms_panel(page: Page, kind, layer) -> None:
    """Three ways to compute attention: their code side by side; opening the panel times them on this
    sentence."""
    with gr.Accordion("Three ways to compute attention (timed when "
                      "opened)", open=False, elem_id="forms-acc") as acc:
        result = gr.Markdown("Translate a sentence, then open this panel.", elem_id="forms-result")
        with gr.Row():
            for name, fn in attention_forms.FORMS.items():
                with gr.Column(min_width=300):
                    gr.Markdown(f"**{name}**")
                    gr.Code(textwrap.dedent(inspect.getsource(fn)), language="python", interactive=False)

    def measure(trace, kind_v, layer_v):
        if trace is None:
            return "Translate a sentence first."
        maps = trace.attention(kind_v)
        layer_v = views.clamp(layer_v or 1, 1, maps.layers)
        res, queries = page.translator.attention_forms(trace, kind_v, layer_v)
        return layer_views.forms_markdown(res, views.KIND_TITLES[kind_v], layer_v, queries)
    acc.expand(measure, [page.trace, kind, layer], result, api_visibility="undocumented",
               concurrency_id="model")
