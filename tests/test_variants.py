"""The design-choice variants (transformer/variants.py): each choice against a reference (PyTorch's pre-norm
layers, the unscaled formula, one head), the same start as the baseline, the training CLI's --variant, the
bundled companion models (trained alike, scored, small), and the Compare view's numbers."""
from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
import torch
from torch import nn

from conftest import random_batch
from test_model import decoder_layer_and_reference, encoder_layer_and_reference
from transformer import variants
from transformer.config import ModelConfig
from transformer.model.attention import scaled_dot_product_attention
from transformer.model.layers import LearnedPositionalEmbedding, PositionalEncoding
from transformer.model.transformer import Transformer, causal_mask
from transformer.training.train import parse_args
from transformer.viz import compare
from transformer.viz.analysis import head_entropy

ROOT = Path(__file__).resolve().parents[1]


def variant_cfg(tiny_cfg, name: str) -> ModelConfig:
    return dataclasses.replace(tiny_cfg, **variants.VARIANTS[name].changes)


def test_config_checks_the_choices(tiny_cfg):
    with pytest.raises(ValueError, match="positions"):
        dataclasses.replace(tiny_cfg, positions="rotary")
    with pytest.raises(ValueError, match="norm"):
        dataclasses.replace(tiny_cfg, norm="sandwich")
    old = {k: v for k, v in dataclasses.asdict(tiny_cfg).items() if k not in ("positions", "norm", "scale_scores")}
    assert ModelConfig.from_dict(old) == tiny_cfg          # a config.json from before the variants loads as the paper's


def test_pre_norm_layers_match_pytorch_norm_first(tiny_cfg):
    cfg = dataclasses.replace(tiny_cfg, norm="pre")
    enc, ref = encoder_layer_and_reference(cfg, norm_first=True)
    x = torch.randn(2, 6, 32)
    torch.testing.assert_close(enc(x)[0], ref(x), atol=1e-5, rtol=1e-5)
    dec, ref = decoder_layer_and_reference(cfg, norm_first=True)
    y, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    for need_weights in (False, True):
        out = dec(y, mem, None, causal_mask(5, 5), need_weights=need_weights)
        torch.testing.assert_close(out.x, ref(y, mem, tgt_mask=~causal_mask(5, 5)), atol=1e-5, rtol=1e-5)


def test_pre_norm_model_closes_each_stack_with_a_layernorm(tiny_cfg):
    post, pre = Transformer(tiny_cfg), Transformer(dataclasses.replace(tiny_cfg, norm="pre"))
    assert isinstance(post.encoder_norm, nn.Identity) and isinstance(post.decoder_norm, nn.Identity)
    assert set(pre.state_dict()) - set(post.state_dict()) == {"encoder_norm.weight", "encoder_norm.bias",
                                                             "decoder_norm.weight", "decoder_norm.bias"}
    with torch.no_grad():
        pre.encoder_norm.weight.mul_(3.0)
    src = random_batch(tiny_cfg)
    memory = pre.encode(src).memory
    assert memory.std(-1).mean().item() == pytest.approx(3.0, rel=0.05)   # the final LayerNorm's output


@pytest.mark.parametrize("scaled", [True, False])
def test_unscaled_attention_is_the_formula_without_sqrt_dk(scaled):
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 3, 5, 16) * 3, torch.randn(2, 3, 6, 16) * 3, torch.randn(2, 3, 6, 16)
    scores = q @ k.transpose(-2, -1) / (4.0 if scaled else 1.0)
    expected = torch.softmax(scores, -1) @ v
    fused, _ = scaled_dot_product_attention(q, k, v, scaled=scaled)
    written, w = scaled_dot_product_attention(q, k, v, need_weights=True, scaled=scaled)
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(written, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.scores, scores)


def test_learned_positions_are_a_trained_table(tiny_cfg):
    model = Transformer(variant_cfg(tiny_cfg, "learned-positions"))
    assert isinstance(model.positional, LearnedPositionalEmbedding)
    assert model.positional.pe.requires_grad and model.positional.pe.shape == (tiny_cfg.max_len, tiny_cfg.d_model)
    assert isinstance(Transformer(tiny_cfg).positional, PositionalEncoding)
    x = torch.zeros(1, 4, tiny_cfg.d_model)
    model.eval()
    torch.testing.assert_close(model.positional(x, start=3)[0], model.positional.pe[3:7])
    with pytest.raises(ValueError, match="max_len"):
        model.positional(x, start=tiny_cfg.max_len - 2)


@pytest.mark.parametrize("name", [n for n in variants.VARIANTS if n != "baseline"])
def test_a_variant_starts_where_the_baseline_starts(tiny_cfg, name):
    """Same seed, same initial weights wherever the shapes agree: the choice is the only difference."""
    torch.manual_seed(7)
    base = Transformer(tiny_cfg).state_dict()
    torch.manual_seed(7)
    other = Transformer(variant_cfg(tiny_cfg, name)).state_dict()
    shared = [k for k in base if k in other and base[k].shape == other[k].shape]
    assert len(shared) == len(base)
    for k in shared:
        torch.testing.assert_close(other[k], base[k], msg=k)


@pytest.mark.parametrize("name", list(variants.VARIANTS))
def test_every_variant_decodes_with_the_cache_as_without(tiny_cfg, name):
    torch.manual_seed(0)
    model = Transformer(variant_cfg(tiny_cfg, name)).eval()
    src, tgt = random_batch(tiny_cfg), torch.randint(4, tiny_cfg.vocab_size, (3, 7))
    full = model(src, tgt).logits
    enc = model.encode(src)
    cache = model.new_cache(enc)
    steps = [model.decode(tgt[:, t:t + 1], enc, cache=cache).logits for t in range(7)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("name", list(variants.VARIANTS))
def test_training_cli_makes_each_variant_with_a_flag(name):
    args = parse_args(["--variant", name])
    cfg = ModelConfig(vocab_size=100, **{f: getattr(args, f) for f in
                                        ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff",
                                         "positions", "norm", "scale_scores")})
    expected = dataclasses.replace(ModelConfig(vocab_size=100, **variants.BASELINE_SIZES),
                                   **variants.VARIANTS[name].changes)
    assert cfg == expected
    assert parse_args(["--no-scale-scores"]).scale_scores is False and parse_args([]).scale_scores is True


# --- the bundled companion models ----------------------------------------------------------------------
BUNDLED = variants.available()
needs_bundle = pytest.mark.skipif(len(BUNDLED) < len(variants.VARIANTS),
                                  reason="companion models not bundled (python tools/train_variants.py)")


@needs_bundle
def test_companions_were_trained_alike_and_are_scored():
    scores = {n: variants.load_scores(n) for n in BUNDLED}
    base = scores["baseline"]
    for name, s in scores.items():
        cfg = ModelConfig.from_json(variants.variant_dir(name) / "config.json")
        expected = dataclasses.replace(ModelConfig(vocab_size=cfg.vocab_size, **variants.BASELINE_SIZES),
                                       **variants.VARIANTS[name].changes)
        assert dataclasses.replace(cfg, dropout=expected.dropout) == expected, name
        assert (s["steps"], s["tokens"]) == (base["steps"], base["tokens"]), name   # the same steps and data
        for split in ("dev", "test"):
            assert 0 < s[split]["bleu"] < 100 and s[split]["sentences"] > 2000, (name, split)
        steps, losses = variants.loss_curve(name)
        assert steps == variants.loss_curve("baseline")[0] and len(losses) >= 5
        # the log's token counts agree step by step: the same batches in the same order
        log = [r.split(",")[:3] for r in (variants.variant_dir(name) / "log.csv").read_text().splitlines()[1:]]
        base_log = [r.split(",")[:3] for r in (variants.variant_dir("baseline") / "log.csv").read_text().splitlines()[1:]]
        assert log == base_log                          # step, epoch, tokens: row by row the same


def test_checkpoint_folders_stay_small():
    total = sum(f.stat().st_size for f in (ROOT / "checkpoints").rglob("*") if f.is_file())
    assert total <= 80 * 2 ** 20, f"checkpoints/ holds {total / 2 ** 20:.1f} MB"


# --- the Compare view's figures -----------------------------------------------------------------------------
def test_entropy_figure_shows_each_heads_entropy():
    rng = np.random.default_rng(0)
    a = rng.dirichlet(np.ones(6), size=(3, 8, 5))              # (L, H, Tq, Tk)
    b = rng.dirichlet(np.ones(6) * 0.05, size=(3, 1, 5))       # one peaky head a layer
    ea, eb = head_entropy(a), head_entropy(b)
    fig = compare.entropy_figure([("base", ea, "#000"), ("one", eb, "#f00")], "Cross-attention", False, 14)
    assert np.allclose(fig.data[0].y, np.round(ea.ravel(), 4)) and np.allclose(fig.data[1].y, np.round(eb.ravel(), 4))
    assert len(fig.data[0].y) == 24 and len(fig.data[1].y) == 3
    assert fig.data[1].text[2] == "layer 3, head 1"


def test_positions_figure_marks_the_longest_training_sentence():
    from transformer.positional import sinusoidal_encoding
    pe = sinusoidal_encoding(40, 16)
    fig = compare.positions_figure([("sinusoidal", pe), ("learned", np.random.default_rng(1).normal(size=(40, 16)))],
                                   longest=20, n_input=7, dark=True, font_size=14)
    sim = np.asarray(fig.data[0].z, dtype=float)
    unit = pe / np.linalg.norm(pe, axis=1, keepdims=True)
    assert np.allclose(sim, unit @ unit.T, atol=1e-3) and np.allclose(np.diag(sim), 1, atol=1e-3)
    dashed = [s for s in fig.layout.shapes if s.type == "line"]
    assert len(dashed) == 4 and {s.x0 for s in dashed if s.x0 == s.x1} == {19.5}
    assert "20 positions" in fig.layout.title.text


def test_scores_markdown_says_when_runs_differ():
    s = lambda name, steps: compare.Side(name, name.title(), "Le chat | dort.", {  # noqa: E731
        "dev": {"bleu": 30.0}, "test": {"bleu": 29.5}, "steps": steps, "tokens": 1000}, [100], [5.0], "#000")
    same = compare.scores_markdown([s("baseline", 900), s("pre-norm", 900)], "Look here.")
    assert same.startswith("Look here.") and "Both trained 900 steps" in same
    assert "**Pre-Norm**: “Le chat | dort.”" in same and "BLEU dev 30.0 · test 29.5\n" in same + "\n"
    learned = s("learned-positions", 900)
    learned.scores.update(position_loss={"within": 3.1, "beyond": 6.25}, longest_training_positions=64)
    text = compare.scores_markdown([s("baseline", 900), learned], "", positions=(12, 64))
    assert "3.10 at positions 1–64, **6.25 past 64**" in text and "fills **12 positions**" in text
    assert "⚠" in compare.scores_markdown([s("baseline", 900), s("pre-norm", 800)], "")
