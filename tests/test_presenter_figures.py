"""Presenter mode's figures (Look.large), checked from their JSON without a browser: every text at the
projector's least size, titles that fit, piece axes that Plotly thins to their length, at most two panels side
by side. tests/test_browser_projector.py measures the same figures as Chromium draws them at 1920×1080."""
from __future__ import annotations

import html
import json
import re

import pytest

from test_plots import rand_attn, validated
from transformer.probes import inside_layer, lens as lens_module, vectors
from transformer.replay import load_replay
from transformer.viz import figure, layer as layer_views, learning, plots, presenter, steering, toy, views
from transformer.viz import why as why_views
from transformer.viz.style import BASE_FONT, PRESENTER_FONT

LEAST = 28          # px: the least a projector's back row reads at 1920×1080 (issue 43)
TEXT = "I have five apples."


def font_sizes(obj, path=""):
    """(where, size) of every font size a figure's JSON sets, hover labels and the template aside."""
    if isinstance(obj, dict):
        for key, value in obj.items():
            if key in ("hoverlabel", "template"):
                continue
            if key in presenter.FONT_KEYS and isinstance(value, dict) and "size" in value:
                yield f"{path}.{key}", value["size"]
            yield from font_sizes(value, f"{path}.{key}")
    elif isinstance(obj, list):
        for i, value in enumerate(obj):
            yield from font_sizes(value, f"{path}[{i}]")


@pytest.fixture(scope="module")
def large_figures(tiny_translator, bundled_checkpoint):
    """Every figure the app draws, in presenter mode, from a real (tiny) model's results."""
    tr, lk = tiny_translator, views.Look(large=True)
    trace = tr.trace(TEXT)
    figs = {"step": views.step_view(trace, 2, 1, "mean over heads", lk)[1:],
            "cross steps": [views.cross_steps_figure(trace, 2, 1, "1", lk)],
            "positional": list(views.positional_views(trace, tr.cfg.d_model, ["3"], lk)),
            "empty": [figure.empty_figure("Press Run beam search.", lk.dark, lk.font)]}
    for kind in ("encoder", "decoder", "cross"):
        figs[kind] = [views.explorer_figure(trace, kind, 2, head, mode, True, lk)
                      for mode, head in (("head", "2"), ("mean", "mean"), ("rollout", "1"))]
        figs[kind] += [views.grid_figure(trace, kind, True, lk), views.summary_view(trace, kind, lk)[0],
                       *views.inside_view(trace, kind, 1, "3", 2, True, lk)[:2]]
    model, bos = tr.model, tr.cfg.bos_id
    figs["layer"] = [layer_views.layer_figure(inside_layer.layer_parts(
        model, trace.source.ids, [bos, *trace.tgt_ids[:-1]], "decoder", 1, 0, trace.decoder.queries), lk.dark,
                                              lk.font)]
    lens = lens_module.logit_lens(model, trace.source.ids, trace.tgt_ids, tr.tokenizer.pieces)
    hv = vectors.head_vectors(model, trace.source.ids, [bos, *trace.tgt_ids[:-1]], "cross", 1, 1,
                              views.query_labels(trace, trace.cross), trace.cross.keys)
    parts = vectors.input_parts(model, trace.source.ids, trace.src_pieces)
    _, attrs = tr.attribution(TEXT, "gradient_x_input")
    _, contrast = tr.attribution(TEXT, "gradient_x_input", step=1, rival=trace.steps[0].topk_pieces[1])
    figs["why"] = [why_views.lens_figure(lens, 1, lk.dark, lk.font), *why_views.vectors_view(
        hv, parts, trace.cross, 1, 1, 1, lk.dark, lk.font)[1:],
                   *why_views.attribution_views(trace, attrs, 1, lk)[1:],
                   why_views.contrast_figure(trace, contrast, attrs, 1, lk)]
    forced = tr.forced(TEXT, "J'ai cinq pommes.")
    figs["steer"] = [steering.forced_figure([p.piece for p in forced.pieces],
                                            [p.probability for p in forced.pieces],
                                            [p.rank for p in forced.pieces],
                                            [p.top_piece for p in forced.pieces],
                                            "Probability of each of your pieces (rank when not the top "
                                            "choice)", lk.dark, lk.font),
                     steering.beam_tree_figure(tr.beam(TEXT, 3), lk.dark, lk.font)]
    replay = load_replay(bundled_checkpoint / "replay.npz").thin(12)
    figs["learned"] = list(learning.learning_view(replay, 0, 5, "cross", 1, "mean over heads", lk)[1:])
    figs["compare"] = []
    # each design choice's shipped run
    for run in sorted((bundled_checkpoint.parent / "toy-runs").glob("*.json")):
        snap = json.loads(run.read_text(encoding="utf-8"))
        figs["compare"] += [toy.loss_figure(snap, lk.dark, lk.font),
                            toy.choice_figure(snap, lk.dark, lk.font),
                            toy.attention_figure(snap, lk.dark, lk.font)]
    assert len(figs["compare"]) == 3 * 5
    return figs


def test_every_presenter_figure_writes_every_text_at_the_projectors_least_size(large_figures):
    """Titles, ticks, axis titles, legends, colour bars, annotations, cell values: none under 28 px, none left
    to Plotly's automatic size (a heatmap's cell values shrink to their cells); a bar's value
    is never shrunk."""
    assert PRESENTER_FONT >= LEAST
    for view, figs in large_figures.items():
        for fig in figs:
            spec = validated(fig).to_plotly_json()
            assert spec["layout"]["font"]["size"] >= LEAST, view
            small = [(where, size) for where, size in font_sizes(spec) if size < LEAST]
            assert not small, (view, small)
            for trace in spec["data"]:
                if trace.get("texttemplate"):
                    assert trace.get("textfont", {}).get("size", 0) >= LEAST, (view, trace["type"])
                if trace["type"] == "bar" and trace.get("text") is not None:
                    assert trace.get("constraintext") == "none", view


def test_presenter_titles_fit_a_half_width_figure_and_axes_of_pieces_are_thinned_by_plotly(large_figures):
    shown = lambda line: len(html.unescape(re.sub(r"<[^>]+>", "", line)))   # noqa: E731
    for view, figs in large_figures.items():
        for fig in figs:
            layout = fig.to_plotly_json()["layout"]
            title = (layout.get("title") or {}).get("text") or ""
            assert all(shown(line) <= presenter.TITLE_CHARS for line in title.split("<br>")), (view, title)
            for key, axis in layout.items():
                if key.startswith(("xaxis", "yaxis")) and axis.get("type") == "category" \
                        and axis.get("showticklabels", True):
                    # a fixed list would overprint at this size
                    assert "tickvals" not in axis, (view, key)
                if key.startswith("xaxis") and axis.get("showticklabels", True):
                    assert "tickangle" not in axis, (view, key)       # level, 45° or upright: as they fit


def panels_side_by_side(fig) -> int:
    """The most subplots whose y ranges overlap (drawn side by side), from the layout's axis domains."""
    layout = fig.to_plotly_json()["layout"]
    boxes = []
    for key, axis in layout.items():
        if re.fullmatch(r"xaxis\d*", key):
            y = layout.get("yaxis" + key[5:], {})
            boxes.append((axis.get("domain", [0, 1]), y.get("domain", [0, 1])))
    return max((sum(1 for _, (b0, b1) in boxes if b0 < y1 - 1e-6 and y0 < b1 - 1e-6)
                for _, (y0, y1) in boxes),
               default=1)


def test_presenter_figures_put_at_most_two_panels_side_by_side(large_figures):
    """Inside one head (four steps: two by two) and inside one layer (three panels: two, then one below). (The
    all-heads grid is small multiples by design, a row of heads a layer: it is left out.)"""
    inside = large_figures["encoder"][-2]
    assert len([k for k in inside.to_plotly_json()["layout"] if k.startswith("xaxis")]) == 4
    for view, figs in large_figures.items():
        for fig in figs:
            if "every layer × head" not in (fig.layout.title.text or "").replace("<br>", " "):   # the grid
                assert panels_side_by_side(fig) <= 2, (view, fig.layout.title.text)
    layer = large_figures["layer"][0]
    assert panels_side_by_side(layer) == 2
    # the feed-forward's panel the whole width
    assert layer.layout.xaxis3.domain == (0, 1)


def test_the_beam_tree_grows_downwards_on_a_projector(tiny_translator):
    """Steps a line of type apart, the candidates of a step side by side: every piece whole at 28 px."""
    result = tiny_translator.beam(TEXT, 3)
    fig = steering.beam_tree_figure(result, font_size=PRESENTER_FONT)
    assert fig.layout.yaxis.title.text == "decoding step" and \
        fig.layout.yaxis.range[0] > fig.layout.yaxis.range[1]
    steps = max(n.step for n in result.nodes) + 1
    assert fig.layout.height >= steps * 1.5 * PRESENTER_FONT
    assert {t.textposition for t in fig.data if t.text is not None} == {"middle right"}
    normal = steering.beam_tree_figure(result)
    assert normal.layout.xaxis.title.text == "decoding step"              # the page's own tree is unchanged


def test_a_long_title_is_wrapped_from_the_top_and_the_figure_grows_by_its_lines():
    title = "Cross-attention through the encoder's rollout (this app's extension), decoder layer 3"
    fig = plots.attention_heatmap(rand_attn(1, 1, 5, 5)[0, 0], list("abcde"), list("abcde"), title,
                                  font_size=PRESENTER_FONT)
    same = plots.attention_heatmap(rand_attn(1, 1, 5, 5)[0, 0], list("abcde"), list("abcde"), "short",
                                   font_size=PRESENTER_FONT)
    lines = fig.layout.title.text.split("<br>")
    assert len(lines) == 2 and " ".join(lines) == title
    assert abs(len(lines[0]) - len(lines[1])) < 20                         # balanced, no line of one word
    grown = int(1.3 * (PRESENTER_FONT + 1))
    assert fig.layout.height == same.layout.height + grown and \
        fig.layout.margin.t == same.layout.margin.t + grown
    assert fig.layout.title.yanchor == "top" and fig.layout.title.yref == "container"


def test_an_upright_axis_title_longer_than_its_plot_is_wrapped():
    layout = dict(height=400, margin=dict(t=80, b=10), font=dict(size=PRESENTER_FONT),
                  yaxis=dict(title=dict(text="entropy (0 = one key, 1 = even) of every head")),
                  yaxis2=dict(title=dict(text="short")))
    presenter.for_large([], layout)
    assert layout["yaxis"]["title"]["text"].count("<br>") >= 1
    assert layout["yaxis2"]["title"]["text"] == "short"


def test_normal_figures_are_left_as_they_were():
    """Presenter mode's rules apply at its type size only: the page's own figures keep their labels and
    sizes."""
    assert figure.grow(520, BASE_FONT) == 520
    fig = plots.attention_heatmap(rand_attn(1, 1, 30, 30)[0, 0], ["x"] * 30, ["x"] * 30, "t")
    assert len(fig.layout.xaxis.tickvals) == 30 and fig.layout.xaxis.tickangle == -45
    trace = views.Look()
    assert trace.font == BASE_FONT
