"""Positional encoding: the sinusoidal matrix, its curves and the similarity between positions.
"""
from __future__ import annotations

import gradio as gr

from transformer.config import PE_DEFAULT_DIMS
from transformer.model.layers import PositionalEncoding
from transformer.positional import sinusoidal_encoding
from transformer.viz import views

from ..inputs import ChoiceDropdown
from ..page import Page, TabView, caption, code_panel, look_of, safe_view


def build_positional_tab(page: Page) -> TabView:
    d_model = page.cfg.d_model
    gr.Markdown("PE(pos, 2i) = sin(pos / 10000^(2i/d_model)), PE(pos, 2i+1) = cos(pos / 10000^(2i/d_model)). "
                "The input's positions are outlined.")
    caption("low dimensions (left) change fast from one position to the next, high ones slowly: each "
            "position gets a unique pattern. On the right, the dot product of two positions' encodings: "
            "largest on the "
            f"diagonal (a position with itself, d_model/2 = {d_model // 2} here) and falling with the "
            f"distance between them.")
    heat = gr.Plot(show_label=False, label="Positional encoding matrix", elem_id="pe-heatmap")
    dims = ChoiceDropdown([str(d) for d in range(d_model)],
                          value=[str(d) for d in PE_DEFAULT_DIMS if d < d_model], multiselect=True,
                          label="Dimensions to plot as curves (below)")
    with gr.Row():
        curves = gr.Plot(show_label=False, label="Curves")
        similarity = gr.Plot(show_label=False, label="Similarity between positions")
    code_panel(sinusoidal_encoding, PositionalEncoding.forward)

    @safe_view
    def draw_positional(trace, dims_v, look, large, scale, narrow=False):   # drawn before any translation too
        return views.positional_views(trace, d_model, dims_v or [], look_of(look, large, scale, narrow))

    tab = TabView(draw_positional, [dims], [heat, curves, similarity])
    tab.redraw_on(page, [dims])
    return tab
