"""Head summary: each head's entropy and the simple pattern it follows most.
"""
from __future__ import annotations

import gradio as gr

from transformer.viz import views
from transformer.viz.analysis import head_summary

from ..inputs import ChoiceRadio
from ..page import KIND_CHOICES, Page, TabView, caption, code_panel, look_of, no_trace, safe_view


def build_summary_tab(page: Page) -> TabView:
    with gr.Row(equal_height=True):
        gr.Markdown("Entropy of each head's attention (0 = looks at one piece, 1 = spread evenly) and the "
                    "simple pattern it follows most, to find interesting heads fast.")
        kind = ChoiceRadio(KIND_CHOICES, value="encoder", label="Attention kind", min_width=430)
    caption("dark cells are focused heads (they read one piece), light ones spread out; #1, #2… rank the "
            "heads by how much their attention differs from the average head: open #1 in the explorer first.")
    plot = gr.Plot(show_label=False, label="Heads at a glance", elem_id="summary-plot")
    gr.Markdown(views.summary_legend())
    table = gr.Dataframe(headers=["rank", "layer", "head", "distinctiveness", "entropy", "label",
                                  "strongest pattern", "its share"],
                         label="Per head", interactive=False, wrap=True)
    code_panel(head_summary)

    @safe_view
    def draw_summary(trace, kind_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        if trace is None:
            return no_trace(lk, 1, [])
        return views.summary_view(trace, kind_v, lk)

    tab = TabView(draw_summary, [kind], [plot, table])
    tab.link = dict(kind=kind)
    tab.redraw_on(page, [kind])
    return tab
