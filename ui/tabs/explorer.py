"""Attention explorer: one large map (a head, the mean over heads or rollout) and every layer × head.
"""
from __future__ import annotations

import gradio as gr

from transformer.model.attention import scaled_dot_product_attention
from transformer.viz import views

from ..page import KIND_CHOICES, Page, TabView, caption, code_panel, look_of, no_trace, safe_view
from ..inputs import ChoiceDropdown, RequiredDropdown, RequiredRadio, WholeSlider

ROLLOUT_NOTE = ("*Rollout* (Abnar & Zuidema, 2020) multiplies each self-attention layer's head-mean, mixed "
                "with the residual path, through the layers. For cross-attention this app extends it (not in "
                "the paper): each decoder layer's head-mean cross-attention times the encoder's rollout, "
                "mapping steps to input pieces rather than encoder states; it is blurrier than raw "
                "cross-attention.")


def build_explorer_tab(page: Page) -> TabView:
    with gr.Row(elem_id="explorer-controls"):     # one row: the map stays on a laptop's first screen
        kind = RequiredRadio(KIND_CHOICES, value="encoder", label="Attention kind", elem_id="explorer-kind",
                             scale=3, min_width=330)
        mode = RequiredDropdown([("One head", "head"), ("Mean over heads", "mean"),
                                 ("Rollout across layers", "rollout")],
                           value="head", label="Show", scale=1, min_width=230, elem_id="explorer-mode",
                           filterable=False)
        layer = WholeSlider(1, page.cfg.n_encoder_layers, value=1, step=1, label="Layer",
                            elem_id="explorer-layer", scale=2, min_width=180)
        head = ChoiceDropdown(page.head_choices[1:], value="1", label="Head", elem_id="explorer-head",
                              scale=1, min_width=90, filterable=False)
        scaling = RequiredDropdown([("shared", "shared across heads"), ("per head", "per head")],
                              value="shared across heads", label="Colour scale", scale=1, min_width=150,
                              elem_id="explorer-scaling", filterable=False)
    caption("each row is one query piece and sums to 1; a bright cell is the key it reads most. Encoder "
            "heads often look at the previous or next piece, cross-attention runs roughly along the diagonal "
            "and bends where French reorders the words.")
    rollout_note = gr.Markdown(ROLLOUT_NOTE, visible=False, elem_id="rollout-note")
    ex_plot = gr.Plot(show_label=False, label="Attention map", elem_id="explorer-plot")
    gr.Markdown("**All heads** (layers × heads, like BertViz's model view). Hover for values; pick a "
                "layer and head above to enlarge one.")
    grid_plot = gr.Plot(show_label=False, label="All heads", elem_id="grid-plot")
    code_panel(scaled_dot_product_attention)

    @safe_view
    def draw_explorer(trace, kind_v, layer_v, head_v, mode_v, scaling_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if trace is None:
            return no_trace(lk, 2)
        shared = scaling_v.startswith("shared")
        return (views.explorer_figure(trace, kind_v, int(layer_v), head_v, mode_v, shared, lk),
                views.grid_figure(trace, kind_v, shared, lk))

    tab = TabView(draw_explorer, [kind, layer, head, mode, scaling], [ex_plot, grid_plot])
    # "Show" chooses the mean: one way to average
    tab.link = dict(kind=kind, layer=layer, head=head, mode=mode)
    tab.redraw_on_kind(page, kind, layer)
    mode.change(lambda m: (gr.update(visible=m == "head"), gr.update(visible=m == "rollout")), mode,
                [head, rollout_note], api_visibility="undocumented", queue=False)
    head.change(tab.draw, tab.inputs(page), tab.outputs, api_name="explorer", show_progress="hidden",
                trigger_mode="always_last", concurrency_id="draw")
    tab.redraw_on(page, [layer, mode, scaling], show_progress="hidden", trigger_mode="always_last")
    return tab
