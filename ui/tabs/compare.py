"""Compare designs: the sentence through a small baseline and a variant that differs in one of the paper's
design choices (``transformer/variants.py``, ``checkpoints/variants/``), side by side.
"""
from __future__ import annotations

import functools
import threading

import gradio as gr
import numpy as np

from transformer import variants
from transformer.model.attention import scaled_dot_product_attention
from transformer.model.layers import LearnedPositionalEmbedding, residual
from transformer.serving.translator import Translator
from transformer.viz import compare, views
from transformer.viz.analysis import head_entropy
from transformer.viz.figure import empty_figure

from ..page import KIND_CHOICES, NO_TRACE, Page, TabView, caption, code_panel, look_of, safe_view
from ..train_live import CHOICE_LIST, build_train_live
from ..inputs import ChoiceDropdown, ChoiceRadio, WholeSlider

NOT_BUNDLED = ("The companion models are not in checkpoints/variants/: train them with "
               "`python tools/train_variants.py`.")
_LOADING = threading.Lock()


@functools.lru_cache(maxsize=None)
def _load(name: str, device: str) -> Translator:
    return Translator(variants.variant_dir(name), device)


def companion(name: str, device: str) -> Translator:
    """A companion model, loaded once for every user (a few MB each)."""
    with _LOADING:   # two users opening the view at once load it once
        return _load(name, device)


def side(name: str, text: str, device: str, color: str) -> tuple[compare.Side, object, Translator]:
    """One model's part of the comparison: what the view shows of it, its trace of `text`, the model."""
    tr = companion(name, device)
    trace = tr.trace(text)
    steps, losses = variants.loss_curve(name)
    scores = variants.load_scores(name)
    return compare.Side(name, variants.VARIANTS[name].title, trace.translation, scores, steps, losses, color), trace, tr


def head_for(trace, head_v):
    """The picked head, or this model's only head when it has fewer (the one-head variant)."""
    h = views.head_choice(head_v)
    return head_v if h is None or h < trace.encoder.heads else "1"


def build_compare_tab(page: Page) -> TabView:
    names = [n for n in variants.available() if n != "baseline"]
    choices = [(variants.VARIANTS[n].title, n) for n in names]
    layers = variants.BASELINE_SIZES["n_encoder_layers"]
    toy_choice, toy_outputs, show_shipped = build_train_live(page)
    gr.Markdown("### The same choices in English → French models\nSmall companions trained for 900 steps on a CPU: "
                "they translate poorly (the baseline's Tatoeba test BLEU is 6.6), so their maps show where each "
                "choice sits in the model, not what it does to a translation: the runs above show the effects.",
                elem_id="compare-companions")
    with gr.Row(elem_id="compare-controls"):
        variant = ChoiceDropdown(choices, value=names[0] if names else None, label="Against the baseline", scale=3,
                              min_width=260, elem_id="compare-variant", filterable=False)
        kind = ChoiceRadio(KIND_CHOICES, value="cross", label="Attention kind", scale=3, min_width=330)
        layer = WholeSlider(1, layers, value=layers, step=1, label="Layer", scale=2, min_width=160)
        heads = [str(h) for h in range(1, variants.BASELINE_SIZES["n_heads"] + 1)]
        head = ChoiceDropdown([("mean", "mean over heads"), *heads], value="mean over heads", label="Head", scale=1,
                           min_width=120, filterable=False)
    caption("two small models (d_model 128, 3 + 3 layers) trained alike except for one choice: read the "
            "paragraph for what that choice should change, then compare the translations, the scores, the "
            "loss curves and the same map from each.")
    with gr.Row():
        left = gr.Plot(show_label=False, label="Baseline's map", elem_id="compare-left")
        right = gr.Plot(show_label=False, label="Variant's map", elem_id="compare-right")
    about = gr.Markdown(elem_id="compare-about")
    choice = gr.Plot(show_label=False, label="What the choice changes", elem_id="compare-choice")
    loss = gr.Plot(show_label=False, label="Training loss", elem_id="compare-loss")
    # where each choice lives in the model: post- or pre-norm (residual), learned positions, ÷√d_k or not
    code_panel(residual, LearnedPositionalEmbedding.forward, scaled_dot_product_attention)

    @safe_view
    def draw_compare(trace, variant_v, kind_v, layer_v, head_v, toy_v, look, large, scale, narrow=False):
        lk = look_of(look, large, scale, narrow)
        toy = show_shipped(toy_v if toy_v in toy_names else toy_names[0], look, large, scale, narrow)
        if not names:
            return (NOT_BUNDLED, *[empty_figure(NOT_BUNDLED, lk.dark, lk.font) for _ in range(4)], *toy)
        if trace is None:
            return (NO_TRACE, *[empty_figure(NO_TRACE, lk.dark, lk.font) for _ in range(4)], *toy)
        return (*compare_view(trace.source.text, variant_v if variant_v in names else names[0], kind_v,
                              int(layer_v or 1), head_v, lk, str(page.translator.device)), *toy)

    toy_names = [name for _, name in CHOICE_LIST]
    tab = TabView(draw_compare, [variant, kind, layer, head, toy_choice],
                  [about, left, right, choice, loss, *toy_outputs])
    tab.link = dict(variant=variant, kind=kind, layer=layer, head=head)
    tab.layers = lambda kind_v: layers     # every companion model has this many layers a side, not the page's model
    tab.redraw_on(page, [variant, kind, layer, head], show_progress="hidden", trigger_mode="always_last")
    return tab


def compare_view(text: str, name: str, kind: str, layer: int, head, lk: views.Look, device: str):
    """The paragraph and table, the two maps, what the choice changes, and the loss curves."""
    colors = compare.sides_colors()
    (a, ta, ma), (b, tb, mb) = (side(n, text, device, c) for n, c in zip(("baseline", name), colors))
    maps = [views.explorer_figure(t, kind, layer, head_for(t, head), "head", False, lk) for t in (ta, tb)]
    for fig, s in zip(maps, (a, b)):
        fig.layout.title.text = f"{s.title}<br>{fig.layout.title.text}"
        fig.layout.margin.t = (fig.layout.margin.t or 0) + int(1.4 * lk.font)
    longest = int(b.scores.get("longest_training_positions", 0))
    if name == "learned-positions":
        n = max(len(ta.source.ids), len(ta.tgt_ids), len(tb.tgt_ids))     # positions the input fills, either side
        tables = [(s.title.split(" (")[0], m.positional_table()) for s, m in
                  ((a, ma), (b, mb))]
        span = min(len(tables[0][1]), max(2 * longest, n + 8))
        extra = compare.positions_figure([(t, pe[:span]) for t, pe in tables], longest, n, lk.dark, lk.font, lk.narrow)
        positions = (n, longest)
    else:
        maps_of = [t.attention(kind) for t in (ta, tb)]
        extra = compare.entropy_figure(
            [(s.title, head_entropy(np.asarray(m.probs), m.causal), s.color) for s, m in zip((a, b), maps_of)],
            views.KIND_TITLES[kind], lk.dark, lk.font)
        positions = None
    text_md = compare.scores_markdown((a, b), variants.VARIANTS[name].look_for, positions)
    return (text_md, *maps, extra, compare.loss_figure((a, b), lk.dark, lk.font))
