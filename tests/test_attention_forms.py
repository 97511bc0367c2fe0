"""The three ways to compute attention agree with each other and with the model's own sub-layer, on the
bundled model's weights, for every kind (the decoder's with its causal mask)."""
from __future__ import annotations

import pytest
import torch

from transformer.probes.attention_forms import FORMS, compare
from transformer.model.transformer import causal_mask
from transformer.probes.vectors import layer_inputs


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu")


@pytest.mark.parametrize("kind", ["encoder", "decoder", "cross"])
def test_three_forms_agree_on_the_bundled_weights(translator, kind):
    trace = translator.trace("The cat is sleeping on the sofa because it is tired.")
    src = torch.tensor([trace.source.ids])
    tgt_in = torch.tensor([[translator.cfg.bos_id, *trace.tgt_ids[:-1]]])
    for layer in (1, translator.cfg.n_decoder_layers):
        with torch.inference_mode():
            mha, q_in, kv_in = layer_inputs(translator.model, src, tgt_in, kind, layer)
            mask = causal_mask(q_in.size(1), q_in.size(1), q_in.device) if kind == "decoder" else None
            own, _, _ = mha(q_in, kv_in, mask=mask)
        result = compare(mha, q_in, kv_in, mask, repeats=2)
        assert set(result) == set(FORMS)
        for name, r in result.items():
            assert (r["output"] - own).abs().max() <= 1e-5, (name, kind, layer)
            assert r["max_diff"] <= 1e-5 and r["seconds"] > 0


def test_three_forms_agree_on_a_padded_batch(tiny_model, tiny_cfg):
    from conftest import random_batch
    src = random_batch(tiny_cfg, B=3, S=9)
    with torch.inference_mode():
        x = tiny_model.embed(src)
        mha, mask = tiny_model.encoder_layers[0].self_attn, tiny_model.padding_mask(src)   # (B, 1, 1, S)
        own, _, _ = mha(x, x, mask=mask)
    for name, r in compare(mha, x, x, mask, repeats=1).items():
        assert (r["output"] - own).abs().max() <= 1e-5, name


def test_a_model_without_the_division_everywhere(tiny_cfg, tmp_path):
    """One d_k, and whether the model divides by it, honoured everywhere (issue 42): the three forms agree
    with a no-√d_k model's own sub-layer, and Inside one head and the q · k text on its trace show that
    model's own weights and scores, not the paper's (the bundled weights in a model told not to divide, saved
    as a checkpoint of its own beside the bundled one)."""
    import dataclasses

    import numpy as np

    from transformer.io.checkpoint import DEFAULT_CHECKPOINT, TOKENIZER_FILE, load_checkpoint, save_checkpoint
    from transformer.model.transformer import Transformer
    from transformer.serving.translator import Translator
    from transformer.viz import analysis, views

    torch.manual_seed(0)
    model = Transformer(dataclasses.replace(tiny_cfg, scale_scores=False)).eval()
    x = model.embed(torch.randint(4, tiny_cfg.vocab_size, (2, 7)))
    mha = model.encoder_layers[0].self_attn
    assert mha.scaled is False and mha.d_k == tiny_cfg.d_k == tiny_cfg.d_model // tiny_cfg.n_heads
    with torch.inference_mode():
        own, _, _ = mha(x, x)
        for name, r in compare(mha, x, x, None, repeats=1).items():
            assert (r["output"] - own).abs().max() <= 1e-5, name

    paper, _ = load_checkpoint(DEFAULT_CHECKPOINT)
    unscaled = Transformer(dataclasses.replace(paper.cfg, scale_scores=False)).eval()
    unscaled.load_state_dict(paper.state_dict())
    save_checkpoint(unscaled, DEFAULT_CHECKPOINT / TOKENIZER_FILE, tmp_path / "unscaled")
    for folder, scales in ((tmp_path / "unscaled", False), (DEFAULT_CHECKPOINT, True)):
        translator = Translator(folder, "cpu")
        trace = translator.trace("The cat is sleeping on the sofa.")
        d_k = translator.cfg.d_model // translator.cfg.n_heads
        assert trace.scaled is scales and trace.d_k == d_k
        for kind in ("encoder", "cross"):
            maps = trace.attention(kind)
            steps = analysis.inside_head(maps.scores[0, 1], trace.d_k, causal=maps.causal,
                                         scaled=trace.scaled)
            # the model's own weights
            np.testing.assert_allclose(steps.weights, maps.probs[0, 1], atol=1e-5)
            np.testing.assert_allclose(steps.raw, maps.scores[0, 1] * (np.sqrt(d_k) if scales else 1),
                                       rtol=1e-5)
            _, _, text = views.inside_view(trace, kind, 1, "2", 1, False, views.Look())
            assert ("trained without the division" in text) is (not scales)
