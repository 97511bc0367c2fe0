"""Inside one head: QKᵀ, ÷√d_k, the mask and the softmax of one head.
"""
from __future__ import annotations

import gradio as gr

from transformer.model.attention import scaled_dot_product_attention
from transformer.viz import views

from ..page import Fit, Page, TabView, code_panel, look_of, no_trace, one_head_row, safe_view, slider_update


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
