"""Plot functions and view helpers work from arrays and token lists alone (no model, no torch),
and every figure is valid for Plotly."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import plotly.graph_objects as go
import plotly.io as pio
import pytest

from conftest import ROOT
from transformer.positional import sinusoidal_encoding
from transformer.trace import AttentionMaps, Source, Step, TranslationTrace
from transformer.viz import analysis, plots, views


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
    dec_scores = np.where(np.tril(np.ones((T, T), bool)), np.random.default_rng(1).normal(size=(L, H, T, T)), np.nan)
    maps = lambda kind, probs, scores, q, k: AttentionMaps(kind, probs.astype(np.float32), scores.astype(np.float32), q, k)
    return TranslationTrace(
        source=Source("s0 s1 s2 s3", list(range(10, 10 + S)), src), translation="t0 t1 t2", tgt_ids=list(range(T)),
        tgt_pieces=tgt, steps=steps, d_head=8, stop="end",
        encoder=maps("encoder", rand_attn(L, H, S, S), np.random.default_rng(2).normal(size=(L, H, S, S)), src, src),
        decoder=maps("decoder", rand_attn(L, H, T, T, causal=True), dec_scores, tgt_in, tgt_in),
        cross=maps("cross", rand_attn(L, H, T, S), np.random.default_rng(3).normal(size=(L, H, T, S)), tgt_in, src))


def test_plot_modules_import_neither_torch_nor_gradio():
    code = ("import sys\nimport transformer.trace, transformer.positional, transformer.config\n"
            "import transformer.viz.analysis, transformer.viz.plots, transformer.viz.views, transformer.viz.report\n"
            "print(sorted(m for m in ('torch', 'gradio') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_plotly_validation_catches_schema_errors_and_the_fast_path_skips_it():
    """figure_from_dicts relies on Plotly's private `_validate=False`: if Plotly stops honouring it,
    this fails (instead of every redraw silently becoming ten times slower)."""
    bad = dict(data=[dict(type="heatmap", z=[[1]], colour="red")], layout=dict(xaxis=dict(bogus=1)))
    with pytest.raises(ValueError):
        go.Figure(bad)
    fig = plots.figure_from_dicts(bad["data"], bad["layout"])
    assert fig.to_plotly_json()["data"][0]["colour"] == "red"
    with pytest.raises(ValueError):
        validated(fig)


def test_heatmap_escapes_markup_and_keeps_repeated_tokens():
    toks = ["<script>alert(1)</script>", "▁the", "▁the", "</s>"]
    fig = validated(plots.attention_heatmap(rand_attn(1, 1, 4, 4)[0, 0], toks, toks, "t"))
    text = fig.to_json()
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3]        # numeric axis: both "▁the" stay


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
    assert len(fig.data) == 24 and fig.layout.coloraxis.cmax == round(1000 * a.max())
    fig = validated(plots.attention_grid(a, list("abcde"), list("uvwxyz"), shared_scale=False))
    assert all(t.coloraxis is None for t in fig.data)


def test_other_figures_are_valid_plotly():
    pe = sinusoidal_encoding(40, 32)
    figs = [plots.topk_bar(["a", "<b>", "c"], [0.5, 0.3, 0.2]), plots.source_attention_bar(list("abc"), [0.2, 0.5, 0.3]),
            plots.summary_heatmap(np.random.rand(2, 4), [["x"] * 4] * 2), plots.positional_heatmap(pe, 5),
            plots.positional_curves(pe, [0, 1, 99]), plots.positional_similarity(pe, 5),
            plots.empty_figure("<i>nothing</i>")]
    steps = analysis.inside_head(np.random.randn(4, 4), 16, causal=True)
    figs.append(plots.inside_head_figure(steps, list("abcd"), list("abcd"), 16))
    figs.append(plots.softmax_temperature_figure(steps.scaled[3], steps.softmax_unscaled[3], steps.softmax[3], list("abcd")))
    figs = [validated(f) for f in figs]
    assert "<b>" not in figs[0].to_json() and "<i>" not in figs[-3].to_json()


def test_every_view_of_a_trace_is_valid_plotly():
    trace, lk = synthetic_trace(), views.Look(dark=True, large=True)
    figs = [*views.step_view(trace, 2, 1, "mean over heads", lk)[1:], *views.positional_views(trace, 32, ["3"], lk)]
    for kind in ("encoder", "decoder", "cross"):
        for mode, head in (("head", "2"), ("mean", "mean"), ("rollout", "1")):
            figs.append(views.explorer_figure(trace, kind, 2, head, mode, mode == "head", lk))
        figs += [views.grid_figure(trace, kind, False, lk), views.summary_view(trace, kind, lk)[0],
                 *views.inside_view(trace, kind, 1, "3", 2, True, lk)[:2]]
    for f in figs:
        validated(f)


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
    np.testing.assert_allclose(s.raw[~np.isnan(s.raw)], (scaled * 8)[np.tril(np.ones((5, 5), bool))])
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


def typed(v) -> np.ndarray:
    """An array as the browser gets it: Plotly's typed-array JSON ({dtype, bdata, shape}) decoded."""
    import base64
    if isinstance(v, dict):
        arr = np.frombuffer(base64.b64decode(v["bdata"]), dtype=np.dtype(v["dtype"]))
        return arr.reshape([int(n) for n in str(v["shape"]).split(",")]) if "shape" in v else arr
    return np.asarray(v)


def test_grid_sends_exact_thousandths_in_two_bytes_a_cell():
    import json
    a = rand_attn(2, 3, 7, 9, seed=4)
    fig = json.loads(plots.attention_grid(a, list("abcdefg"), list("uvwxyzpqr")).to_json())
    for n, tr in enumerate(fig["data"]):
        z = typed(tr["z"])
        assert z.dtype == np.uint16 and tr["z"]["dtype"] == "u2"
        np.testing.assert_array_equal(z / 1000, np.round(a[n // 3, n % 3], 3))   # what the hover shows, /1000
        assert "%{z}/1000" in tr["hovertemplate"]


def test_masked_grid_sends_only_computed_cells():
    import json
    a = rand_attn(1, 2, 6, 6, causal=True, seed=5)
    masked = ~np.tril(np.ones((6, 6), bool))
    fig = json.loads(plots.attention_grid(a, list("abcdef"), list("abcdef"), masked=masked).to_json())
    for h, tr in enumerate(fig["data"]):
        x, y, z = typed(tr["x"]), typed(tr["y"]), typed(tr["z"])
        assert len(z) == 21 and (x <= y).all()                        # the lower triangle only
        np.testing.assert_array_equal(z / 1000, np.round(a[0, h][y, x], 3))


def test_templates_are_trimmed_but_keep_the_look():
    import json
    f = json.loads(plots.topk_bar(["a"], [1.0], dark=True).to_json())
    assert set(f["layout"]["template"]["data"]) <= {"bar"}
    assert f["layout"]["template"]["layout"] == pio.templates["plotly_dark"].to_plotly_json()["layout"]
