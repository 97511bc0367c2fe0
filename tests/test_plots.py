"""Plot functions and view helpers work from arrays and token lists alone (no model, no torch),
and every figure is valid for Plotly."""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from conftest import ROOT
from transformer.positional import sinusoidal_encoding
from transformer.trace import AttentionMaps, Source, Step, TranslationTrace
from transformer.viz import analysis, figure, inside_plots, narrow, plots, positional_plots, views
from transformer.viz.style import QUERY_OUTLINE


def rand_attn(L, H, Tq, Tk, causal=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((L, H, Tq, Tk))
    if causal:
        a = a * np.tril(np.ones((Tq, Tk)))
    return a / a.sum(-1, keepdims=True)


def validated(fig: go.Figure) -> go.Figure:
    """The figure rebuilt with Plotly's own validation: raises on any property outside its schema."""
    return go.Figure(fig.to_plotly_json())


def synthetic_trace(S=5, T=4, L=2, H=3) -> TranslationTrace:
    """A trace made of random numbers (no model): what the views draw from."""
    src = [f"▁s{i}" for i in range(S - 1)] + ["</s>"]
    tgt = [f"▁t{i}" for i in range(T - 1)] + ["</s>"]
    tgt_in = ["<s>"] + tgt[:-1]
    steps = [Step(t, tgt_in[: t + 1], 10 + t, tgt[t], 0.6, [10 + t, 99], [tgt[t], "<b>x</b>"], [0.6, 0.1])
             for t in range(T)]
    dec_scores = np.where(np.tril(np.ones((T, T), bool)), np.random.default_rng(1).normal(size=(L, H, T, T)),
                          np.nan)
    maps = lambda kind, probs, scores, q, k: AttentionMaps(kind, probs.astype(np.float32),
                                                           scores.astype(np.float32), q, k)
    return TranslationTrace(
        source=Source("s0 s1 s2 s3", list(range(10, 10 + S)), src), translation="t0 t1 t2",
        tgt_ids=list(range(T)), tgt_pieces=tgt, steps=steps, d_k=8, stop="end",
        encoder=maps("encoder", rand_attn(L, H, S, S), np.random.default_rng(2).normal(size=(L, H, S, S)),
                     src, src),
        decoder=maps("decoder", rand_attn(L, H, T, T, causal=True), dec_scores, tgt_in, tgt_in),
        cross=maps("cross", rand_attn(L, H, T, S), np.random.default_rng(3).normal(size=(L, H, T, S)), tgt_in,
                   src))


def test_plot_modules_import_neither_torch_nor_gradio():
    code = ("import sys\nimport transformer.trace, transformer.positional, transformer.config\n"
            "import transformer.viz.analysis, transformer.viz.plots, transformer.viz.views, "
            "transformer.viz.report\nprint(sorted(m for m in ('torch', 'gradio') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_plotly_validation_catches_schema_errors_and_the_fast_path_skips_it():
    """figure_from_dicts relies on Plotly's private `_validate=False`: if Plotly stops honouring it,
    this fails (instead of every redraw silently becoming ten times slower)."""
    bad = dict(data=[dict(type="heatmap", z=[[1]], colour="red")], layout=dict(xaxis=dict(bogus=1)))
    with pytest.raises(ValueError):
        go.Figure(bad)
    fig = figure.figure_from_dicts(bad["data"], bad["layout"])
    assert fig.to_plotly_json()["data"][0]["colour"] == "red"
    with pytest.raises(ValueError):
        validated(fig)


def test_heatmap_escapes_markup_and_keeps_repeated_tokens():
    toks = ["<script>alert(1)</script>", "▁the", "▁the", "</s>"]
    fig = validated(plots.attention_heatmap(rand_attn(1, 1, 4, 4)[0, 0], toks, toks, "t"))
    text = fig.to_json()
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert list(fig.layout.xaxis.tickvals)[1:3] == ["2 ▁the", "3 ▁the"]   # numbered from 1: both "▁the" stay
    assert len(set(fig.data[0].x)) == 4 and "query %{y} · key %{x}" in fig.data[0].hovertemplate


def test_masked_cells_are_empty():
    a = rand_attn(1, 1, 4, 4, causal=True)[0, 0]
    masked = ~np.tril(np.ones((4, 4), dtype=bool))
    fig = plots.attention_heatmap(a, list("abcd"), list("abcd"), masked=masked)
    validated(fig)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[masked]).all() and not np.isnan(z[~masked]).any()


def test_grid_has_every_layer_and_head_and_shared_scale():
    a = rand_attn(3, 8, 5, 6)
    fig = validated(plots.attention_grid(a, list("abcde"), list("uvwxyz"), shared_scale=True))
    assert len({t.xaxis for t in fig.data}) == 24 and fig.layout.coloraxis.cmax == round(1000 * a.max())
    fig = validated(plots.attention_grid(a, list("abcde"), list("uvwxyz"), shared_scale=False))
    assert all(t.coloraxis is None for t in fig.data)


def test_other_figures_are_valid_plotly():
    pe = sinusoidal_encoding(40, 32)
    figs = [plots.topk_bar(["a", "<b>", "c"], [0.5, 0.3, 0.2]),
            plots.source_attention_bar(list("abc"), [0.2, 0.5, 0.3]),
            plots.summary_heatmap(np.random.rand(2, 4), [["x"] * 4] * 2),
            positional_plots.positional_heatmap(pe, 5), positional_plots.positional_curves(pe, [0, 1, 99]),
            positional_plots.positional_similarity(pe, 5), figure.empty_figure("<i>nothing</i>")]
    steps = analysis.inside_head(np.random.randn(4, 4), 16, causal=True)
    figs.append(inside_plots.inside_head_figure(steps, list("abcd"), list("abcd"), 16))
    figs.append(inside_plots.softmax_temperature_figure(steps.scaled[3], steps.softmax_unscaled[3],
                                                        steps.softmax[3], list("abcd")))
    figs = [validated(f) for f in figs]
    assert "<b>" not in figs[0].to_json() and "<i>" not in figs[-3].to_json()


def test_every_view_of_a_trace_is_valid_plotly():
    trace, lk = synthetic_trace(), views.Look(dark=True, large=True)
    figs = [*views.step_view(trace, 2, 1, "mean over heads", lk)[1:],
            *views.positional_views(trace, 32, ["3"], lk)]
    for kind in ("encoder", "decoder", "cross"):
        for mode, head in (("head", "2"), ("mean", "mean"), ("rollout", "1")):
            figs.append(views.explorer_figure(trace, kind, 2, head, mode, mode == "head", lk))
        figs += [views.grid_figure(trace, kind, False, lk), views.summary_view(trace, kind, lk)[0],
                 *views.inside_view(trace, kind, 1, "3", 2, True, lk)[:2]]
    for f in figs:
        validated(f)
        assert figure.figure_json(f) == f.to_json()      # the app's quick JSON is Plotly's own, to the byte


def test_the_quick_json_is_plotlys_own_and_leaves_the_figure_as_it_was():
    """figure_json (what the app sends) against Plotly's to_json: the same string for figures with arrays of
    every kind (float32, uint8/uint16 grids, text, lists of lists), a phone's figure and an empty one; the
    figure keeps its arrays (base64 is made on copies of the dicts)."""
    trace, lk = synthetic_trace(), views.Look(dark=False, large=False, narrow=True)
    figs = [*views.step_view(trace, 3, 2, "2", lk)[1:], views.cross_steps_figure(trace, 3, 2, "2", lk),
            narrow.for_narrow(views.grid_figure(trace, "decoder", True, lk)),
            figure.empty_figure("<i>nothing</i>"),
            plots.attention_grid(rand_attn(2, 3, 4, 5), list("abcd"), list("vwxyz"), shared_scale=True)]
    def arrays(obj):        # every numpy array in a figure's own properties, with where it is
        if isinstance(obj, dict):
            return [(k, *a) for k, v in obj.items() for a in arrays(v)]
        if isinstance(obj, (list, tuple)):
            return [(i, *a) for i, v in enumerate(obj) for a in arrays(v)]
        return [(obj,)] if isinstance(obj, np.ndarray) else []
    for f in figs:
        for trace in f._data:
            trace["uid"] = "u1"                            # to_json leaves uids out: so must figure_json
        before, held = f.to_json(), arrays([f._data, f._layout])
        copies = [a[-1].copy() for a in held]
        assert figure.figure_json(f) == before
        # the figure keeps its arrays (not base64) and its uid
        after = arrays([f._data, f._layout])
        assert [a[:-1] for a in after] == [a[:-1] for a in held] and all(t["uid"] == "u1" for t in f._data)
        # (masked cells: NaN)
        same = lambda x, y: np.array_equal(x, y, equal_nan=x.dtype.kind == "f")   # noqa: E731
        assert all(a[-1] is b[-1] and same(a[-1], c) for a, b, c in zip(after, held, copies))
    assert sum(len(arrays([f._data])) for f in figs) >= 5 and any('"bdata"' in f.to_json() for f in figs)


def test_dark_and_large_styles():
    dark, light = pio.templates["plotly_dark"], pio.templates["plotly_white"]
    assert dark.layout.paper_bgcolor != light.layout.paper_bgcolor   # the check below can tell them apart
    f = plots.topk_bar(["a"], [1.0], dark=True, font_size=20)
    assert f.layout.font.size == 20 and f.layout.template.layout.paper_bgcolor == dark.layout.paper_bgcolor
    f = plots.topk_bar(["a"], [1.0], dark=False)
    assert f.layout.template.layout.paper_bgcolor == light.layout.paper_bgcolor


def test_inside_head_steps_and_scaling():
    rng = np.random.default_rng(0)
    scaled = rng.normal(size=(5, 5))
    s = analysis.inside_head(scaled, 64, causal=True)
    np.testing.assert_allclose(s.raw, scaled * 8)                      # every score, the future ones included
    assert np.isnan(s.masked[~s.mask]).all() and not np.isnan(s.masked[s.mask]).any()
    np.testing.assert_allclose(s.softmax.sum(-1), 1.0)
    assert (s.softmax[~s.mask] == 0).all()
    # without the scaling the softmax is sharper (lower entropy) on average
    ent = lambda p: -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1).mean()
    assert ent(s.softmax_unscaled) < ent(s.softmax)


def test_head_patterns_are_recognised():
    T = 6
    prev = np.zeros((1, 2, T, T))
    for i in range(T):
        prev[0, 0, i, max(i - 1, 0)] = 1.0
        prev[0, 1, i, :] = 1.0 / T
    rows = analysis.head_summary(prev, "encoder")
    assert rows[0].label == "previous token" and rows[0].entropy < 0.05
    assert rows[1].label.startswith("broad") and rows[1].entropy > 0.99
    diag = np.zeros((1, 1, 5, 7))
    for i in range(5):
        diag[0, 0, i, i + 1] = 1.0
    assert analysis.head_summary(diag, "cross")[0].label == "diagonal / monotonic"


def test_heads_are_ranked_by_how_far_they_are_from_the_average_head():
    T = 5
    attn = np.full((2, 2, T, T), 1.0 / T)                 # three uniform heads...
    attn[1, 0] = np.eye(T)                                  # ...and one that reads only itself
    rows = analysis.head_summary(attn, "encoder")
    mean = attn.mean(axis=(0, 1))
    js = analysis.head_distinctiveness(attn).ravel()
    assert rows[2].rank == 1 and sorted(r.rank for r in rows) == [1, 2, 3, 4]
    assert js[2] > 0.3 and np.allclose(js[[0, 1, 3]], js[0]) and js[0] < js[2]
    mixture = 0.5 * (attn + mean)                            # JS = ½ KL(p‖m) + ½ KL(q‖m), m the mixture
    kl = lambda a, b: np.where(a > 0, a * np.log2(np.where(a > 0, a, 1) / b), 0).sum(-1)
    expected = (0.5 * kl(attn, mixture) + 0.5 * kl(np.broadcast_to(mean, attn.shape), mixture)).mean(-1)
    np.testing.assert_allclose(analysis.head_distinctiveness(attn), expected, atol=1e-9)
    assert np.allclose(analysis.head_distinctiveness(np.full((1, 3, T, T), 1.0 / T)), 0)   # all alike: 0


def test_rollout_rows_sum_to_one():
    a = rand_attn(3, 4, 6, 6)
    r = analysis.attention_rollout(a)
    assert r.shape == (3, 6, 6)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-9)
    c = analysis.cross_rollout(rand_attn(2, 4, 3, 6), a)
    assert c.shape == (2, 3, 6)
    np.testing.assert_allclose(c.sum(-1), 1.0, atol=1e-9)


def test_step_view_shows_the_prefix_and_the_french_so_far():
    trace = synthetic_trace()
    info, _, _ = views.step_view(trace, 3, 1, "1", views.Look())
    assert "Step 3 of 4" in info and info.count('class="piece tgt"') == 2 and "&lt;s&gt;" in info
    assert "French so far: <b>t0 t1 t2</b>" in info
    assert "(nothing yet)" in views.step_view(trace, 1, 1, "1", views.Look())[0]


# ---------------------------------------------------------------- issue 10: figures a lecture can trust
def plotlyjs_scale_names() -> set[str]:
    """The colour scale names plotly.js itself knows, read from the plotly.js bundled with Plotly."""
    import re
    from pathlib import Path
    js = (Path(go.__file__).parent.parent / "package_data" / "plotly.min.js").read_text(encoding="utf-8")
    names = set(re.findall(r'([A-Z][A-Za-z]+):\[\[0,"(?:rgb|#)', js))
    assert {"Viridis", "Cividis", "RdBu", "Greys"} <= names and "Magma" not in names   # the parse works
    return names


def scales_in(fig_json) -> list:
    """Every colorscale value anywhere in a figure's JSON (traces, coloraxes)."""
    found = []
    def walk(x):
        if isinstance(x, dict):
            for key, v in x.items():
                if key == "template":   # the theme's defaults: every trace here sets its own scale
                    continue
                if key == "colorscale":
                    found.append(v)
                walk(v)
        elif isinstance(x, list):
            for v in x:
                walk(v)
    walk(fig_json)
    return found


def every_view(trace, lk):
    figs = [*views.step_view(trace, 2, 1, "mean over heads", lk)[1:],
            views.cross_steps_figure(trace, 2, 1, "1", lk), *views.positional_views(trace, 32, ["3"], lk)]
    for kind in ("encoder", "decoder", "cross"):
        for mode, head in (("head", "2"), ("mean", "mean"), ("rollout", "1")):
            figs.append(views.explorer_figure(trace, kind, 2, head, mode, mode == "head", lk))
        figs += [views.grid_figure(trace, kind, True, lk), views.grid_figure(trace, kind, False, lk),
                 views.summary_view(trace, kind, lk)[0],
                 *views.inside_view(trace, kind, 1, "3", 2, True, lk)[:2]]
    return figs


@pytest.mark.parametrize("dark", [False, True])
def test_every_offered_scale_is_one_plotlyjs_draws_as_named(dark):
    names = plotlyjs_scale_names()
    trace = synthetic_trace()
    for offered in figure.COLORSCALES:
        for fig in every_view(trace, views.Look(dark=dark, colorscale=offered)):
            for scale in scales_in(fig.to_plotly_json()):
                if isinstance(scale, str):
                    assert scale in names, f"plotly.js has no colour scale named {scale!r}"
                else:   # an explicit list of [position, colour], from 0 to 1
                    assert scale[0][0] == 0 and scale[-1][0] == 1 and all(len(s) == 2 for s in scale)
        if offered not in ("Viridis", "Cividis"):
            # sent as colours: plotly.js lacks or reverses them
            assert not isinstance(figure.COLORSCALES[offered], str)


def luminance(colour: str) -> float:
    import plotly.colors as pc
    r, g, b = pc.unlabel_rgb(pc.convert_colors_to_same_type(colour, "rgb")[0][0])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


@pytest.mark.parametrize("name", ["Blues", "Greys"])
def test_strong_attention_is_the_most_salient_colour_in_both_looks(name):
    light, dark = figure.colorscale_for(name, False), figure.colorscale_for(name, True)
    assert luminance(light[-1][1]) < luminance(light[0][1]) - 150    # dark on the white page
    assert luminance(dark[-1][1]) > luminance(dark[0][1]) + 150      # bright on the dark page


@pytest.mark.parametrize("name", list(figure.COLORSCALES))
def test_masked_cells_stay_distinct_from_low_values(name):
    trace = synthetic_trace()
    for dark in (False, True):
        lk = views.Look(dark=dark, colorscale=name)
        fig = views.explorer_figure(trace, "decoder", 1, "1", "head", True, lk)
        z = np.asarray(fig.data[0].z, dtype=float)
        future = trace.decoder.future
        assert np.isnan(z[future]).all() and not np.isnan(z[~future]).any()     # masked cells are not values
        bg = fig.layout.plot_bgcolor
        assert bg == figure.mask_color(name)
        scale = figure.colorscale_for(name, dark)
        low = (scale[0][1] if not isinstance(scale, str)
               else {"Viridis": "#440154", "Cividis": "rgb(0,32,76)"}[scale])
        assert abs(luminance(bg) - luminance(low)) > 40                          # unlike a low value
        assert fig.layout.shapes[0].type == "path"                              # and hatched
        assert "masked" in fig.data[0].colorbar.title.text                      # said in the colour bar
        grid = views.grid_figure(trace, "decoder", True, lk)
        assert grid.layout.plot_bgcolor == bg and "masked" in grid.layout.title.text


def test_hatch_covers_exactly_the_future_cells():
    T = 5
    path = figure.hatch_path(T, T)
    pts = [tuple(map(float, p.split(","))) for seg in path.split("M")[1:] for p in seg.split("L")]
    for x, y in pts:   # every end point on the border of a future cell: x - y >= 1 (column > row)
        assert x - y >= 1 - 1e-9 and -0.5 <= x <= T - 0.5 and -0.5 <= y <= T - 0.5


def test_cross_attention_bars_have_a_fixed_zero_to_one_axis():
    trace = synthetic_trace()
    for step, head in ((1, "1"), (3, "2"), (4, "mean over heads")):
        cross = views.step_view(trace, step, 1, head, views.Look())[2]
        assert list(cross.layout.yaxis.range) == [0, 1] and cross.layout.yaxis.autorange is False


def test_cross_attention_matrix_grows_with_the_steps():
    trace = synthetic_trace()
    for step in (1, 3):
        fig = views.cross_steps_figure(trace, step, 2, "mean", views.Look())
        z = np.asarray(fig.data[0].z, dtype=float)
        expected = trace.cross.probs[1].mean(0)
        # the model's numbers, rows 1..step
        np.testing.assert_allclose(z[:step], expected[:step], atol=1e-3)
        assert np.isnan(z[step:]).all()                                       # later steps not drawn yet
        shape = fig.layout.shapes[0]
        assert (shape.y0, shape.y1) == (step - 1.5, step - 0.5)               # the current row outlined


def test_long_source_pieces_are_cut_on_the_axis_and_whole_in_the_hover():
    fig = plots.source_attention_bar(["▁extraordinarily", "▁a", "</s>"], [0.5, 0.3, 0.2])
    assert fig.layout.xaxis.ticktext[0] == "1 ▁extraord…" and fig.data[0].x[0] == "1 ▁extraordinarily"


def test_a_lone_word_marker_is_named():
    fig = plots.topk_bar(["▁", "▁le"], [0.6, 0.4])
    assert fig.layout.yaxis.ticktext[0] == "▁ (space)"
    assert "▁ (space)" in views.chips(["▁"], "tgt")


def test_a_quote_in_a_piece_is_drawn_as_a_quote_and_markup_stays_escaped():
    """Plotly's SVG text decodes &lt; &gt; &amp; (and a few named entities more) and numeric entities, not
    &quot;: a piece holding a quote was drawn as "&quot;". Quotes now go to Plotly as they are (they mean
    nothing outside a tag), while < > & stay escaped: the top-10 chart, the beam tree, every tick
    label and hover."""
    from transformer.steering import BeamHypothesis, BeamNode, BeamResult
    from transformer.trace import Source
    from transformer.viz import steering
    pieces = ['▁"', '"', "▁l'", "<b>x</b>", "a&b"]
    assert figure.esc_all(pieces) == ['▁"', '"', "▁l'", "&lt;b&gt;x&lt;/b&gt;", "a&amp;b"]
    assert figure.short('3 ▁"quoted words"') == '3 ▁"quoted …' and figure.short("1 <&>") == "1 <&>"
    assert figure.short("1 &lt;&amp;&gt;" + "x" * 20) == "1 &lt;&amp;&gt;xxxxxx…"
    topk = plots.topk_bar(pieces, [0.4, 0.2, 0.2, 0.1, 0.1], chosen=0)
    bars = plots.source_attention_bar(pieces, [0.4, 0.2, 0.2, 0.1, 0.1])
    heat = plots.attention_heatmap(rand_attn(1, 1, 5, 5)[0, 0], pieces, pieces, 'title with "quotes"')
    nodes = [BeamNode(0, -1, 0, 5, '▁"', -0.1, -0.1, "kept"),
             BeamNode(1, -1, 0, 6, "<b>", -2.0, -2.0, "pruned"),
             BeamNode(2, 0, 1, 7, '"', -0.2, -0.3, "finished")]
    result = BeamResult(Source("x", (1,), ("▁x",)), 2, 0.6, nodes,
                        [BeamHypothesis([5, 7], ['▁"', '"'], '""', -0.3, -0.3, True, 2)])
    tree = steering.beam_tree_figure(result)
    forced = steering.forced_figure(pieces, [0.4, 0.2, 0.2, 0.1, 0.1], [1, 2, 3, 4, 5], pieces)
    for fig in (topk, bars, heat, tree, forced):
        text = validated(fig).to_json()
        assert "&quot;" not in text and "&#x27;" not in text and "&#34;" not in text, text
        assert "<b>" not in text and "&lt;b&gt;" in text
    assert list(topk.layout.yaxis.ticktext[:3]) == ['▁"', '"', "▁l'"] and topk.data[0].customdata[0] == '▁"'
    assert list(bars.data[0].x[:2]) == ['1 ▁"', '2 "']
    shown = [t for d in tree.data if d.mode == "markers+text" for t in d.text]
    assert '▁"' in shown and '"' in shown and "&lt;b&gt;" in shown and "&lt;s&gt;" in shown


def test_inside_one_head_shows_the_full_scores_one_range_and_values():
    T = 4
    trace = synthetic_trace(T=T)
    full = np.random.default_rng(5).normal(size=trace.decoder.scores.shape).astype(np.float32)
    trace = dataclasses.replace(trace, decoder=dataclasses.replace(trace.decoder, scores=full))
    fig = views.inside_view(trace, "decoder", 2, "2", 3, False, views.Look())[0]
    raw, scaled, masked, soft = (np.asarray(d.z, dtype=float) for d in fig.data)
    np.testing.assert_allclose(raw, full[1, 1] * np.sqrt(trace.d_k), atol=1e-2)   # QKᵀ, future cells included
    np.testing.assert_allclose(scaled, full[1, 1], atol=1e-3)
    future = trace.decoder.future
    assert np.isfinite(raw[future]).all() and np.isnan(masked[future]).all() and (soft[future] == 0).all()
    assert [d.coloraxis for d in fig.data] == ["coloraxis"] * 3 + ["coloraxis2"]   # one range for the scores
    ca = fig.layout.coloraxis
    assert ca.cmax == pytest.approx(np.abs(raw).max(), rel=1e-3) and ca.colorbar.title.text == "score"
    assert all(d.texttemplate for d in fig.data)                                # values in the cells
    # rows counted from 1, like the slider
    assert fig.data[0].y[0].startswith("1 ")
    outlines = [sh for sh in fig.layout.shapes if sh.line.color == QUERY_OUTLINE]
    # mask hatched in the last two panels
    assert len(fig.layout.shapes) - len(outlines) == 2
    # query 3's row
    assert len(outlines) == 4 and {(sh.y0, sh.y1, sh.x1) for sh in outlines} == {(1.5, 2.5, T - 0.5)}
    assert {sh.xref for sh in outlines} == {"x1", "x2", "x3", "x4"}


def test_inside_one_head_stacks_its_panels_on_a_phone():
    trace = synthetic_trace(T=6)
    wide = views.inside_view(trace, "encoder", 1, "1", 1, False, views.Look())[0]
    narrow = views.inside_view(trace, "encoder", 1, "1", 1, False, views.Look(narrow=True))[0]
    axes = lambda f, a: [f.layout[f"{a}axis{c}"].domain for c in range(1, 5)]
    assert sorted({d[0] for d in axes(wide, "x")}) == [0.0, pytest.approx(0.535)]      # two by two
    # one column, full width
    assert {tuple(d) for d in axes(narrow, "x")} == {(0.0, 1.0)}
    tops = [d[1] for d in axes(narrow, "y")]
    # panels 1 to 4 downwards
    assert tops == sorted(tops, reverse=True) and len(set(tops)) == 4
    assert all(a[0] >= b[1] for a, b in zip(axes(narrow, "y"), axes(narrow, "y")[1:]))  # never overlapping
    # encoder: nothing is masked
    assert "nothing masked" in narrow.layout.annotations[2].text
    # the same numbers
    assert all(np.array_equal(a.z, b.z, equal_nan=True) for a, b in zip(narrow.data, wide.data))
    assert narrow.layout.height > wide.layout.height


def test_a_figure_for_a_phone_wraps_its_title_and_lets_a_swipe_scroll():
    trace = synthetic_trace()
    fig = views.inside_view(trace, "encoder", 1, "1", 1, False, views.Look())[0]
    title, height, top = fig.layout.title.text, fig.layout.height, fig.layout.margin.t
    narrow.for_narrow(fig)
    lines = fig.layout.title.text.split("<br>")
    assert " ".join(lines) == title and all(len(line) <= narrow.NARROW_TITLE_CHARS for line in lines) and \
        len(lines) > 1
    assert fig.layout.height - height == fig.layout.margin.t - top > 0 and fig.layout.dragmode is False
    again = fig.layout.title.text
    narrow.for_narrow(fig)
    assert fig.layout.title.text == again                                # once only (figures are cached)
    short = plots.topk_bar(["▁a"], [1.0], title="Top pieces")
    assert narrow.for_narrow(short).layout.title.text == "Top pieces"


def test_figures_grow_with_the_type_size_and_the_pieces():
    trace = synthetic_trace()
    small, large = views.Look(), views.Look(large=True)
    for draw in (lambda lk: views.explorer_figure(trace, "encoder", 1, "1", "head", True, lk),
                 lambda lk: views.inside_view(trace, "encoder", 1, "1", 1, False, lk)[0],
                 lambda lk: views.summary_view(trace, "encoder", lk)[0],
                 lambda lk: views.positional_views(trace, 32, [], lk)[1]):
        assert draw(large).layout.height > draw(small).layout.height
    long = plots.attention_heatmap(rand_attn(1, 1, 30, 30)[0, 0], ["x"] * 30, ["x"] * 30, "t", font_size=19)
    row_px = (long.layout.height - long.layout.margin.t) / 30
    # every row labelled, a line each
    assert row_px >= 19 and len(long.layout.yaxis.tickvals) == 30


def test_head_summary_leaves_out_the_decoders_first_row():
    T = 5
    a = np.zeros((1, 1, T, T))
    a[0, 0, 0, 0] = 1.0
    for i in range(1, T):
        a[0, 0, i, : i + 1] = 1.0 / (i + 1)          # spread evenly over what it may see
    row = analysis.head_summary(a, "decoder")[0]
    # row 0 would add a 0 and "itself"
    assert row.entropy == pytest.approx(1.0) and row.label.startswith("broad")


def test_summary_cells_are_readable_labels():
    trace = synthetic_trace()
    fig = views.summary_view(trace, "encoder", views.Look())[0]
    notes = fig.layout.annotations
    assert len(notes) == trace.encoder.layers * trace.encoder.heads
    assert all(n.font.color in ("white", "black") and n.font.size >= 10 for n in notes)


@pytest.mark.parametrize("dark", [False, True])
def test_report_holds_the_views_and_reads_in_both_looks(dark):
    from transformer.config import ModelConfig
    from transformer.viz.report import build_report, report_filename
    trace = synthetic_trace()
    text = build_report(trace, ModelConfig(d_model=32, n_heads=4), views.Look(dark=dark))
    assert ("background:#111827" in text and "color:#eee" in text) == dark
    # inlined: offline
    assert "<script src=" not in text and "Plotly.newPlot" in text and len(text) > 3_000_000
    assert text.count("<h3 id='step-") == len(trace.steps) and "s0 s1 s2 s3" in text.split("</h1>")[0]
    assert text.count("Inside ") >= 3 and "every layer × head" in text
    assert report_filename("Le café <b>noir</b>!") == "transformer-trace-le-cafe-b-noir-b.html"
    # a table of contents that links every part and every step; each figure a placeholder drawn when seen
    toc = text.split("<nav class='toc'>")[1].split("</nav>")[0]
    for anchor in ["steps", "encoder", "decoder", "cross", "positional"] + \
            [f"step-{t + 1}" for t in range(len(trace.steps))]:
        assert f"href='#{anchor}'" in toc and f"id='{anchor}'" in text
    figs = json.loads(text.split("<script type='application/json' id='figures'>")[1].split("</script>")[0])
    assert text.count("<div class='fig' id='fig-") == len(figs) > 20 and \
        all("data" in f and "layout" in f for f in figs)


def test_a_long_prefix_shows_its_end_and_keeps_the_whole_on_hover():
    prefix = [f"▁w{i}" for i in range(30)]
    out = views.prefix_chips(prefix, shown=12)
    assert out.count('class="piece tgt"') == 12 and "… 18 earlier" in out and 'title="▁w0 ▁w1' in out
    assert views.prefix_chips([]) == "<i>(nothing yet)</i>"


def typed(v) -> np.ndarray:
    """An array as the browser gets it: Plotly's typed-array JSON ({dtype, bdata, shape}) decoded."""
    import base64
    if isinstance(v, dict):
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return arr.reshape([int(n) for n in str(v["shape"]).split(",")]) if "shape" in v else arr
    return np.asarray(v)


def test_grid_sends_exact_thousandths_in_little_more_than_a_byte_a_cell():
    import json
    a = rand_attn(2, 3, 7, 9, seed=4)
    a[1, 2, 0] = 0.0
    a[1, 2, 0, 4] = 1.0                                                 # one head with a peak above 0.255
    fig = json.loads(plots.attention_grid(a, list("abcdefg"), list("uvwxyzpqr")).to_json())
    heads = {}
    for tr in fig["data"]:
        heads.setdefault(tr["xaxis"], []).append(tr)
        assert "%{z}/1000" in tr["hovertemplate"]
    assert len(heads) == 6
    for n, (axis, traces) in enumerate(heads.items()):
        base = typed(traces[0]["z"]).astype(int)
        assert traces[0]["z"]["dtype"] == "u1" and base.shape == (7, 9)
        for top in traces[1:]:                                          # the exact peaks, drawn on top
            base[typed(top["y"]).astype(int) - 1, typed(top["x"]).astype(int) - 1] = typed(top["z"])
        # what the hover shows, /1000
        np.testing.assert_array_equal(base / 1000, np.round(a[n // 3, n % 3], 3))


def test_masked_grid_sends_only_computed_cells():
    import json
    a = rand_attn(1, 2, 6, 6, causal=True, seed=5)
    masked = ~np.tril(np.ones((6, 6), bool))
    fig = json.loads(plots.attention_grid(a, list("abcdef"), list("abcdef"), masked=masked).to_json())
    for h, tr in enumerate(fig["data"]):
        x, y, z = typed(tr["x"]), typed(tr["y"]), typed(tr["z"])
        assert len(z) == 21 and (x <= y).all()                        # the lower triangle only
        assert x.min() == 1 and y.max() == 6                           # positions from 1, like every slider
        np.testing.assert_array_equal(z / 1000, np.round(a[0, h][y - 1, x - 1], 3))


def test_templates_are_trimmed_but_keep_the_look():
    import json
    f = json.loads(plots.topk_bar(["a"], [1.0], dark=True).to_json())
    assert set(f["layout"]["template"]["data"]) <= {"bar"}
    assert f["layout"]["template"]["layout"] == pio.templates["plotly_dark"].to_plotly_json()["layout"]


def test_a_figure_changed_later_leaves_the_shared_template_as_it_was():
    """Figures share one cached template (figure._template) without copying it first: go.Figure copies what it
    is given, so changing one figure's template, in place or through Plotly, never reaches the next figure."""
    fig = plots.topk_bar(["a"], [1.0], dark=True)
    fig.layout.template.layout.font.size = 99
    fig.layout.template.layout.paper_bgcolor = "red"
    fig._layout["template"]["layout"]["font"]["color"] = "red"
    narrow.for_narrow(fig)
    again = json.loads(plots.topk_bar(["a"], [1.0], dark=True).to_json())["layout"]["template"]["layout"]
    assert again == pio.templates["plotly_dark"].to_plotly_json()["layout"]


def test_grid_cells_give_back_every_thousandth_exactly():
    """The all-heads grid sends a head as one byte a cell (capped at 255) plus the exact peaks on top:
    reading the top trace where it has a cell, else the one below, gives every weight's thousandths."""
    rng = np.random.default_rng(3)
    for peaks in (0, 1, 7):
        z = rng.dirichlet(np.ones(9) * 2, size=7)                      # (Tq 7, Tk 9) rows summing to 1
        for i in range(peaks):
            z[i % 7] = 0.0
            z[i % 7, (2 * i) % 9] = 0.9                                # a sharp row: one cell above 0.255
        want = np.rint(z * figure.GRID_UNITS).astype(int)
        traces = plots.grid_cells(z, None)
        assert traces[0]["z"].dtype == np.uint8 and (len(traces) == 1) == (want.max() <= 255)
        got = traces[0]["z"].astype(int).copy()
        for top in traces[1:]:
            got[top["y"].astype(int) - 1, top["x"].astype(int) - 1] = top["z"]
        np.testing.assert_array_equal(got, want)
    fig = plots.attention_grid(rand_attn(2, 3, 7, 9), list("abcdefg"), list("abcdefghi"))
    assert len(fig.to_json()) < 40_000


def test_the_architecture_diagram_is_drawn_from_the_config():
    from transformer.config import ModelConfig
    cfg = ModelConfig(d_model=64, n_heads=4, n_encoder_layers=5, n_decoder_layers=2, d_ff=128, vocab_size=900)
    html_text = views.architecture_html(cfg, 12_345)
    # stacked, as in the paper
    assert "Encoder layer × 5" in html_text and "Decoder layer × 2" in html_text
    assert "d_model = 64" in html_text and "d_k = d_v = 16" in html_text and "12,345 parameters" in html_text
    assert "900 pieces × 64" in html_text


def test_the_steps_so_far_never_show_the_pieces_to_come_and_labels_never_overlap():
    import numpy as np
    from transformer.viz import plots
    T, S = 56, 20
    outs = [f"▁mot{t}" for t in range(T)]
    fig = plots.cross_steps_heatmap(np.full((T, S), 1 / S), 1, outs, [f"▁w{s}" for s in range(S)],
                                    "t").to_dict()
    y = fig["layout"]["yaxis"]
    shown = " ".join(y["ticktext"]) + " ".join(map(str, fig["data"][0]["y"]))
    # step 1: only its own piece
    assert "mot0" in shown and not any(f"mot{t}" in shown for t in range(1, T))
    font = fig["layout"]["font"]["size"]
    # one label per line of type
    assert len(y["tickvals"]) * 1.2 * font <= fig["layout"]["height"]


def test_a_title_with_lines_of_its_own_has_each_long_line_wrapped_on_a_phone():
    fig = plots.topk_bar(["▁a"], [1.0],
                         title="Baseline (the paper's choices)<br>Cross-attention (decoder → source): "
                                              "layer 3, mean over heads")
    height = fig.layout.height
    lines = narrow.for_narrow(fig).layout.title.text.split("<br>")
    assert lines[0] == "Baseline (the paper's choices)" and len(lines) == 3
    assert all(len(line) <= narrow.NARROW_TITLE_CHARS for line in lines) and fig.layout.height > height


# 29
LONG_PIECES = ("▁When ▁the ▁students ▁arrived ▁at ▁the ▁lecture ▁hall ▁this ▁morning , ▁the ▁professor ▁had "
               "▁already ▁written ▁the ▁e qu ations ▁of ▁the ▁attention ▁mechanism ▁on ▁the ▁board . "
               "</s>").split()


def test_a_long_sentences_map_on_a_phone_has_labels_that_never_overprint():
    """for_narrow on a 29 × 29 map: the labels cut to NARROW_LABEL_CHARS, the key labels upright and thinned
    to one a line of type across the plot a NARROW_WIDTH-px figure leaves (the colour bar laid across the top,
    not beside), the query labels one a line of type down the plot; the cells keep the whole numbered pieces,
    which the hover shows; and a second pass (a cached figure) changes nothing."""
    import html
    fig = plots.attention_heatmap(rand_attn(1, 1, 29, 29)[0, 0], LONG_PIECES, LONG_PIECES,
                                  "Encoder self-attention: "
                                  "layer 1, head 1", xaxis_title="source piece (key)",
                                  yaxis_title="source piece (query)")
    height = fig.layout.height
    narrow.for_narrow(fig)
    x, y, lay, font = fig.layout.xaxis, fig.layout.yaxis, fig.layout, fig.layout.font.size
    # across the top
    assert fig.data[0].colorbar.orientation == "h" and y.domain[1] < 1 and lay.height > height
    assert all(len(html.unescape(t)) <= narrow.NARROW_LABEL_CHARS for t in (*x.ticktext, *y.ticktext))
    # cut; whole in the cell
    assert "13 ▁profe…" in x.ticktext + y.ticktext and "13 ▁professor" in fig.data[0].x
    assert "%{x}" in fig.data[0].hovertemplate and "%{y}" in fig.data[0].hovertemplate
    cells = list(fig.data[0].x)
    k = cells.index(x.tickvals[1])
    assert x.tickangle == -90 and 5 <= len(x.tickvals) < 29 and list(x.tickvals) == cells[::k]   # every k-th
    pitch = lambda axis: narrow.LINE_EM * axis.tickfont.size + 3   # noqa: E731
    label_w = narrow.NARROW_LABEL_CHARS * narrow.CHAR_EM * y.tickfont.size
    # the y labels, title
    across = narrow.NARROW_WIDTH - lay.margin.l - lay.margin.r - label_w - narrow.LINE_EM * font
    assert len(x.tickvals) * pitch(x) <= across
    down = (lay.height - lay.margin.t - lay.margin.b) * (y.domain[1] - y.domain[0])
    assert len(y.tickvals) * pitch(y) <= down and len(y.tickvals) >= 10
    before = fig.to_plotly_json()
    assert narrow.for_narrow(fig).to_plotly_json() == before                         # once only
    validated(fig)


def test_a_bar_chart_over_a_long_sentence_on_a_phone_thins_its_labels_and_keeps_its_bar_numbers_clear():
    fig = narrow.for_narrow(plots.source_attention_bar(LONG_PIECES, np.full(29, 1 / 29),
                                                       "Cross-attention at step 1"))
    x = fig.layout.xaxis
    # clear of the y axis's 0
    assert x.tickangle == -90 and len(x.tickvals) < 29 and x.ticklabelstandoff > 0
    assert len(fig.data[0].x) == 29 and "▁professor" in " ".join(fig.data[0].x)


def test_the_head_summary_on_a_phone_is_turned_and_its_texts_fit_their_cells():
    """Six layers of eight heads: a column a layer (a row a head), every cell's lines narrower than its column
    in a NARROW_WIDTH-px figure, the whole label, the strongest pattern and the rank in the hover."""
    import html
    import re
    trace = synthetic_trace(S=12, T=6, L=6, H=8)
    fig, table = views.summary_view(trace, "encoder", views.Look(narrow=True))
    fig = narrow.for_narrow(fig)
    validated(fig)
    heat = fig.data[0]
    assert list(heat.x) == [f"layer {l}" for l in range(1, 7)] and \
        list(heat.y) == [f"head {h}" for h in range(1, 9)]
    assert np.asarray(heat.z).shape == (8, 6)
    assert list(fig.layout.xaxis.ticktext) == [f"L{l}" for l in range(1, 7)]
    notes = fig.layout.annotations
    assert len(notes) == 48
    label_w = 2 * narrow.CHAR_EM * fig.layout.yaxis.tickfont.size + 6                  # "H8"
    column = (narrow.NARROW_WIDTH - fig.layout.margin.l - fig.layout.margin.r - label_w) / 6 - 2
    for note in notes:
        lines = [re.sub(r"<[^>]+>", "", line) for line in note.text.split("<br>")]
        assert max(len(html.unescape(line)) for line in lines) * narrow.CHAR_EM * note.font.size <= column, \
            note.text
    rows = {(r[1], r[2]): r for r in table}                                             # (layer, head) -> row
    first = heat.customdata[0][0]                                                       # head 1, layer 1
    assert "layer 1, head 1" in first and rows[(1, 1)][5] in html.unescape(first)
    assert f"#{rows[(1, 1)][0]} most distinctive" in first and "entropy" in first
    wide = views.summary_view(trace, "encoder", views.Look())[0]
    # the desktop's stays as it was
    assert list(wide.data[0].x) == [f"head {h}" for h in range(1, 9)]


def test_notes_on_a_phone_wrap_to_the_column_and_keep_clear_of_the_title():
    """The positional map's note over the plot's top right ("outlined: your input…") wrapped from the plot's
    left edge, the top margin grown by its lines with the title kept where it stood; an empty
    figure's message wrapped."""
    fig = positional_plots.positional_heatmap(sinusoidal_encoding(64, 256), 29)
    top, height = fig.layout.margin.t, fig.layout.height
    narrow.for_narrow(fig)
    note = fig.layout.annotations[0]
    lines = note.text.split("<br>")
    assert len(lines) >= 2 and " ".join(lines).startswith("outlined: your input") and note.xanchor == "left"
    size = note.font.size or fig.layout.font.size
    # from the plot's left
    assert all(len(line) * narrow.CHAR_EM * size <= narrow.NARROW_WIDTH - 75 for line in lines)
    grown = fig.layout.margin.t - top
    assert grown >= len(lines) * narrow.LINE_EM * size and fig.layout.height - height == grown
    title = fig.layout.title
    assert title.yref == "container" and title.yanchor == "top" and \
        (1 - title.y) * fig.layout.height < top / 2
    assert narrow.for_narrow(fig).layout.margin.t == top + grown                        # once only
    empty = narrow.for_narrow(figure.empty_figure("Type your French and press Score my French to see the "
                                                  "model read it."))
    assert all(len(line) * narrow.CHAR_EM * empty.layout.annotations[0].font.size <= narrow.NARROW_WIDTH - 20
               for line in empty.layout.annotations[0].text.split("<br>"))
