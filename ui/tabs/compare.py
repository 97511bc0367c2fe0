"""Compare design choices: two small Transformers that differ in one of the paper's choices, trained on a toy
task side by side (``transformer/training/toy.py``): the shipped longer run of each pair at once, a live run
on Train live (``ui/train_live.py``).

The view once held English → French companion models as well; at the size a CPU trains they could not
translate the app's first example, so they went (README: "Compare"). The toy tasks do not depend on the
sentence.
"""
from __future__ import annotations

from transformer.model.attention import scaled_dot_product_attention
from transformer.model.layers import LearnedPositionalEmbedding, NoPositions, residual

from ..page import Page, TabView, code_panel, safe_view
from ..train_live import CHOICE_LIST, build_train_live


def build_compare_tab(page: Page) -> TabView:
    toy_choice, toy_outputs, show_shipped = build_train_live(page)
    # where each choice lives in the model (post- or pre-norm, learned positions or none, ÷√d_k or not), then
    # the run that trains both models alike and measures them
    code_panel(residual, LearnedPositionalEmbedding.forward, NoPositions.forward,
               scaled_dot_product_attention, "transformer.training.toy:train_pair")
    names = [name for _, name in CHOICE_LIST]

    @safe_view
    def draw_compare(trace, toy_v, look, large, scale, narrow=False):
        return show_shipped(toy_v if toy_v in names else names[0], look, large, scale, narrow)

    tab = TabView(draw_compare, [toy_choice], list(toy_outputs))
    tab.link = dict(choice=toy_choice)
    return tab
