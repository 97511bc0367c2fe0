"""Plot functions and view helpers work from arrays and token lists alone (no model, no torch)."""
from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import plotly.graph_objects as go
import pytest

from transformer.viz import analysis, plots

ROOT = Path(__file__).resolve().parent.parent


def rand_attn(L, H, Tq, Tk, causal=False, seed=0):
    rng = np.random.default_rng(seed)
    a = rng.random((L, H, Tq, Tk))
    if causal:
        a = a * np.tril(np.ones((Tq, Tk)))
    return a / a.sum(-1, keepdims=True)


def test_plot_modules_import_neither_torch_nor_gradio():
    for name in ("plots.py", "analysis.py", "views.py", "report.py"):
        tree = ast.parse((ROOT / "transformer" / "viz" / name).read_text())
        mods = {a.name.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.Import) for a in n.names}
        mods |= {n.module.split(".")[0] for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module}
        assert not mods & {"torch", "gradio"}, (name, mods)


def test_heatmap_escapes_markup_and_keeps_repeated_tokens():
    toks = ["<script>alert(1)</script>", "▁the", "▁the", "</s>"]
    fig = plots.attention_heatmap(rand_attn(1, 1, 4, 4)[0, 0], toks, toks, "t")
    assert isinstance(fig, go.Figure)
    text = fig.to_json()
    assert "<script>" not in text and "&lt;script&gt;" in text
    assert list(fig.layout.xaxis.tickvals) == [0, 1, 2, 3]        # numeric axis: both "▁the" stay


def test_masked_cells_are_empty():
    a = rand_attn(1, 1, 4, 4, causal=True)[0, 0]
    masked = ~np.tril(np.ones((4, 4), dtype=bool))
    fig = plots.attention_heatmap(a, list("abcd"), list("abcd"), masked=masked)
    z = np.asarray(fig.data[0].z, dtype=float)
    assert np.isnan(z[masked]).all() and not np.isnan(z[~masked]).any()


def test_grid_has_every_layer_and_head_and_shared_scale():
    a = rand_attn(3, 8, 5, 6)
    fig = plots.attention_grid(a, list("abcde"), list("uvwxyz"), shared_scale=True)
    assert len(fig.data) == 24 and fig.layout.coloraxis.cmax == pytest.approx(a.max())
    fig = plots.attention_grid(a, list("abcde"), list("uvwxyz"), shared_scale=False)
    assert all(t.coloraxis is None for t in fig.data)


def test_other_figures_build():
    pe = analysis.sinusoidal_matrix(40, 32)
    figs = [plots.topk_bar(["a", "<b>", "c"], [0.5, 0.3, 0.2]), plots.source_attention_bar(list("abc"), [0.2, 0.5, 0.3]),
            plots.summary_heatmap(np.random.rand(2, 4), [["x"] * 4] * 2), plots.positional_heatmap(pe, 5),
            plots.positional_curves(pe, [0, 1, 99]), plots.positional_similarity(pe, 5),
            plots.empty_figure("<i>nothing</i>")]
    steps = analysis.inside_head(np.random.randn(4, 4), 16, causal=True)
    figs.append(plots.inside_head_figure(steps, list("abcd"), list("abcd"), 16))
    figs.append(plots.softmax_temperature_figure(steps["scaled"][3], steps["softmax_unscaled"][3], steps["softmax"][3], list("abcd")))
    for f in figs:
        assert isinstance(f, go.Figure)
        json.loads(f.to_json())
    assert "<b>" not in figs[0].to_json() and "<i>" not in figs[-3].to_json()


def test_dark_and_large_styles():
    f = plots.topk_bar(["a"], [1.0], dark=True, font_size=20)
    assert f.layout.font.size == 20 and f.layout.template.layout.paper_bgcolor is not None


def test_inside_head_steps_and_scaling():
    rng = np.random.default_rng(0)
    scaled = rng.normal(size=(5, 5))
    s = analysis.inside_head(scaled, 64, causal=True)
    np.testing.assert_allclose(s["raw"][~np.isnan(s["raw"])], (scaled * 8)[np.tril(np.ones((5, 5), bool))])
    np.testing.assert_allclose(s["softmax"].sum(-1), 1.0)
    assert (s["softmax"][~s["mask"]] == 0).all()
    # without the scaling the softmax is sharper (lower entropy) on average
    ent = lambda p: -(np.where(p > 0, p * np.log(np.where(p > 0, p, 1)), 0)).sum(-1).mean()
    assert ent(s["softmax_unscaled"]) < ent(s["softmax"])


def test_head_patterns_are_recognised():
    T = 6
    prev = np.zeros((1, 2, T, T))
    for i in range(T):
        prev[0, 0, i, max(i - 1, 0)] = 1.0
        prev[0, 1, i, :] = 1.0 / T
    rows = analysis.head_summary(prev, "encoder")
    assert rows[0]["label"] == "previous token" and rows[0]["entropy"] < 0.05
    assert rows[1]["label"].startswith("broad") and rows[1]["entropy"] > 0.99
    diag = np.zeros((1, 1, 5, 7))
    for i in range(5):
        diag[0, 0, i, i + 1] = 1.0
    assert analysis.head_summary(diag, "cross")[0]["label"] == "diagonal / monotonic"


def test_rollout_rows_sum_to_one():
    a = rand_attn(3, 4, 6, 6)
    r = analysis.attention_rollout(a)
    assert r.shape == (3, 6, 6)
    np.testing.assert_allclose(r.sum(-1), 1.0, atol=1e-9)
    c = analysis.cross_rollout(rand_attn(2, 4, 3, 6), a)
    assert c.shape == (2, 3, 6)
    np.testing.assert_allclose(c.sum(-1), 1.0, atol=1e-9)


def test_sinusoidal_matrix_matches_model():
    pytest.importorskip("torch")
    from transformer.model.transformer import sinusoidal_encoding
    np.testing.assert_allclose(analysis.sinusoidal_matrix(30, 16), sinusoidal_encoding(30, 16).numpy(), atol=1e-6)
