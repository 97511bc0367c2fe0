"""The three ways to compute attention agree with each other and with the model's own sub-layer, on the
bundled model's weights, for every kind (the decoder's with its causal mask)."""
from __future__ import annotations

import pytest
import torch

from transformer.model.attention_forms import FORMS, compare
from transformer.model.transformer import causal_mask
from transformer.model.vectors import layer_inputs


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.translator import Translator
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
