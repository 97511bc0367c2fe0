"""Inside one layer: the numbers are the layer's own (its output equals the layer's forward pass), and the
residual and LayerNorm figures are what they say."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.probes.inside_layer import layer_parts
from transformer.model.transformer import causal_mask


@pytest.mark.parametrize("stack, layer", [("encoder", 1), ("encoder", 2), ("decoder", 1), ("decoder", 2)])
def test_layer_parts_end_at_the_layers_output(tiny_model, stack, layer):
    src_ids, tgt_in = [5, 9, 11, 7, 3], [2, 6, 12, 8]
    pieces = [f"p{i}" for i in range(5)]
    with torch.inference_mode():
        src, tgt = torch.tensor([src_ids]), torch.tensor([tgt_in])
        enc = tiny_model.encode(src)
        if stack == "encoder":
            x = tiny_model.embed(src)
            for lay in tiny_model.encoder_layers[:layer]:
                x, _ = lay(x, enc.src_mask)
        else:
            x, mask = tiny_model.embed(tgt), causal_mask(4, 4)
            for lay in tiny_model.decoder_layers[:layer]:
                x = lay(x, enc.memory, enc.src_mask, mask).x
    pos = 2
    parts = layer_parts(tiny_model, src_ids, tgt_in, stack, layer, pos, pieces)
    np.testing.assert_allclose(parts.output, x[0, pos].double().numpy(), atol=1e-5)
    assert [s.name for s in parts.steps] == (["self-attention", "feed-forward"] if stack == "encoder" else
                                             ["masked self-attention", "cross-attention", "feed-forward"])
    for s in parts.steps:
        # a fresh LayerNorm (γ = 1, β = 0): mean 0 and spread 1 after it, whatever they were before
        assert s.mean_after == pytest.approx(0.0, abs=1e-5) and s.std_after == pytest.approx(1.0, abs=1e-3)
        assert s.norm_sum <= s.norm_in + s.norm_added + 1e-4                       # the triangle inequality
    assert parts.steps[-1].norm_out == pytest.approx(float(np.linalg.norm(parts.output)), rel=1e-5)
    assert parts.firing == int((parts.hidden > 0).sum()) and parts.top_values[0] == parts.hidden.max()
    assert parts.piece == "p2"
