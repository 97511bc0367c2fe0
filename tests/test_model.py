"""Our layers against PyTorch's own, masks, attention weights, positional encoding, KV cache, and
the inference optimisation (same numbers, nothing stored on modules)."""
from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from torch import nn

from conftest import random_batch
from transformer.config import ModelConfig
from transformer.model.attention import MultiHeadAttention, scaled_dot_product_attention
from transformer.model.decoding import greedy_decode, trace_greedy
from transformer.model.layers import DecoderLayer, EncoderLayer
from transformer.model.optimize import is_column_major, optimize_for_inference
from transformer.model.transformer import Transformer, causal_mask
from transformer.positional import sinusoidal_encoding
from transformer.trace import Source


def copy_attention(ours: MultiHeadAttention, ref: nn.MultiheadAttention) -> None:
    with torch.no_grad():
        ref.in_proj_weight.copy_(torch.cat([ours.w_q.weight, ours.w_k.weight, ours.w_v.weight]))
        ref.in_proj_bias.copy_(torch.cat([ours.w_q.bias, ours.w_k.bias, ours.w_v.bias]))
        ref.out_proj.weight.copy_(ours.w_o.weight)
        ref.out_proj.bias.copy_(ours.w_o.bias)


def copy_ffn_norms(ours, ref, n_norms: int) -> None:
    ref.linear1.load_state_dict(ours.feed_forward.w_1.state_dict())
    ref.linear2.load_state_dict(ours.feed_forward.w_2.state_dict())
    for i in range(1, n_norms + 1):
        getattr(ref, f"norm{i}").load_state_dict(getattr(ours, f"norm{i}").state_dict())


def test_attention_matches_nn_multiheadattention(tiny_cfg):
    torch.manual_seed(1)
    ours = MultiHeadAttention(32, 4).eval()
    ref = nn.MultiheadAttention(32, 4, batch_first=True).eval()
    copy_attention(ours, ref)
    q, kv = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[1, 4:] = True
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
    for need_weights in (False, True):
        out, w, _ = ours(q, kv, mask=(~pad)[:, None, None, :], need_weights=need_weights)
        torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.probs, ref_w, atol=1e-6, rtol=1e-5)


MASKS = {
    "none": lambda Tq, Tk: None,
    "causal": lambda Tq, Tk: causal_mask(Tq, Tk),
    "padding": lambda Tq, Tk: (torch.arange(Tk) < Tk - 2)[None, None, None, :].expand(2, 1, 1, Tk),
    # a square 2-D mask that is not causal: the fused path once replaced such a mask by is_causal=True
    "square, not causal": lambda Tq, Tk: torch.ones(Tq, Tk, dtype=torch.bool).triu(-1),
}


@pytest.mark.parametrize("mask_name", list(MASKS))
def test_fused_kernel_and_written_out_attention_agree(mask_name):
    """Attention(Q, K, V) without weights (PyTorch's fused kernel) = with weights (written out) = a
    reference built from the formula, for the caller's mask whatever its shape."""
    torch.manual_seed(4)
    q, k, v = torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8), torch.randn(2, 4, 6, 8)
    mask = MASKS[mask_name](6, 6)
    fused, none = scaled_dot_product_attention(q, k, v, mask)
    written, w = scaled_dot_product_attention(q, k, v, mask, need_weights=True)
    scores = q @ k.transpose(-2, -1) / math.sqrt(8)
    if mask is not None:
        scores = scores.masked_fill(~mask, float("-inf"))
    expected = torch.softmax(scores, -1) @ v
    assert none is None and w.probs.shape == (2, 4, 6, 6)
    torch.testing.assert_close(fused, expected, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(written, expected, atol=1e-5, rtol=1e-5)


def encoder_layer_and_reference(cfg, norm_first: bool = False):
    """Our encoder layer and PyTorch's with the same weights (`norm_first`: pre-norm, for cfg.norm ==
    "pre")."""
    torch.manual_seed(2)
    ours = EncoderLayer(cfg).eval()
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    copy_attention(ours.self_attn, ref.self_attn)
    copy_ffn_norms(ours, ref, 2)
    return ours, ref


def test_encoder_layer_matches_pytorch(tiny_cfg):
    ours, ref = encoder_layer_and_reference(tiny_cfg)
    x = torch.randn(2, 6, 32)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    ref_out = ref(x, src_key_padding_mask=pad)
    for need_weights in (False, True):
        out, _ = ours(x, (~pad)[:, None, None, :], need_weights=need_weights)
        torch.testing.assert_close(out[~pad], ref_out[~pad], atol=1e-5, rtol=1e-5)


def decoder_layer_and_reference(tiny_cfg, norm_first: bool = False):
    torch.manual_seed(3)
    ours = DecoderLayer(tiny_cfg).eval()
    ref = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=norm_first).eval()
    copy_attention(ours.self_attn, ref.self_attn)
    copy_attention(ours.cross_attn, ref.multihead_attn)
    copy_ffn_norms(ours, ref, 3)
    return ours, ref


@pytest.mark.parametrize("tgt_mask_name", ["causal", "square, not causal"])
def test_decoder_layer_matches_pytorch_and_uses_tgt_mask(tiny_cfg, tgt_mask_name):
    ours, ref = decoder_layer_and_reference(tiny_cfg)
    y, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[0, 5:] = True
    tgt_mask = MASKS[tgt_mask_name](5, 5)
    # PyTorch: True = may NOT attend
    ref_out = ref(y, mem, tgt_mask=~tgt_mask, memory_key_padding_mask=pad)
    for need_weights in (False, True):
        out = ours(y, mem, (~pad)[:, None, None, :], tgt_mask, need_weights=need_weights)
        torch.testing.assert_close(out.x, ref_out, atol=1e-5, rtol=1e-5)


def test_positional_encoding_formula_and_buffer(tiny_model):
    pe = sinusoidal_encoding(50, 16)
    assert pe[1, 0] == pytest.approx(math.sin(1.0), abs=1e-12)                 # PE(1, 0) = sin 1 = 0.8415
    assert pe[0, 1] == pytest.approx(1.0)                                      # cos 0
    pos, i, d = 7, 3, 16
    assert pe[pos, 2 * i] == pytest.approx(math.sin(pos / 10000 ** (2 * i / d)), abs=1e-12)
    assert pe[pos, 2 * i + 1] == pytest.approx(math.cos(pos / 10000 ** (2 * i / d)), abs=1e-12)
    cfg = tiny_model.cfg                                                        # the model adds these numbers
    np.testing.assert_array_equal(tiny_model.positional.pe.numpy(),
                                  sinusoidal_encoding(cfg.max_len, cfg.d_model).astype(np.float32))


def test_embeddings_scaled_and_tied(tiny_model):
    ids = torch.tensor([[5, 6]])
    x = tiny_model.embed(ids)
    expected = tiny_model.embedding(ids) * math.sqrt(tiny_model.cfg.d_model) + tiny_model.positional.pe[:2]
    torch.testing.assert_close(x, expected)
    h = torch.randn(1, 2, tiny_model.cfg.d_model)
    torch.testing.assert_close(tiny_model.output_logits(h), h @ tiny_model.embedding.weight.t())


def test_attention_rows_sum_to_one_and_masks_hold(tiny_model):
    cfg = tiny_model.cfg
    src = random_batch(cfg)
    tgt = torch.randint(4, cfg.vocab_size, (3, 6))
    out = tiny_model(src, tgt, output_attentions=True)
    L, H = cfg.n_encoder_layers, cfg.n_heads
    assert len(out.encoder_attentions) == L and out.encoder_attentions[0].probs.shape == (3, H, 9, 9)
    assert out.decoder_self_attentions[0].probs.shape == (3, H, 6, 6)
    assert out.cross_attentions[0].probs.shape == (3, H, 6, 9)
    pad = src == cfg.pad_id
    for kind in (out.encoder_attentions, out.decoder_self_attentions, out.cross_attentions):
        for w in kind:
            torch.testing.assert_close(w.probs.sum(-1), torch.ones(w.probs.shape[:-1]), atol=1e-5, rtol=0)
    for w in out.encoder_attentions + out.cross_attentions:   # padding keys get exactly 0
        assert (w.probs.masked_select(pad[:, None, None, :]) == 0).all()
    future = torch.ones(6, 6, dtype=torch.bool).triu(1)
    for w in out.decoder_self_attentions:                     # causal: future keys get exactly 0
        assert (w.probs[..., future] == 0).all()


def test_returned_weights_do_not_change_outputs(tiny_model):
    src = random_batch(tiny_model.cfg)
    tgt = torch.randint(4, tiny_model.cfg.vocab_size, (3, 6))
    fast = tiny_model(src, tgt).logits
    slow = tiny_model(src, tgt, output_attentions=True)
    torch.testing.assert_close(fast, slow.logits, atol=1e-5, rtol=1e-5)
    assert slow.encoder_attentions is not None and tiny_model(src, tgt).encoder_attentions is None


def module_state(model: nn.Module):
    """Every attribute of every module (name and object) and the values of every tensor."""
    attrs = {(name, key, id(value)) for name, m in model.named_modules() for key, value in vars(m).items()}
    members = {(name, key, id(value)) for name, m in model.named_modules()
               for key, value in [*m.named_parameters(recurse=False), *m.named_buffers(recurse=False),
                                  *m.named_children()]}
    tensors = {k: v.clone() for k, v in model.state_dict(keep_vars=True).items()}
    return attrs | members, tensors


def same_state(a, b) -> bool:
    return a[0] == b[0] and a[1].keys() == b[1].keys() and all(torch.equal(a[1][k], b[1][k]) for k in a[1])


def test_inference_stores_nothing_on_modules(tiny_model, tokenizer):
    """The served path (optimised model, inference mode, KV cache, attention weights) leaves every
    module as it was: per-request results travel in return values, never on the shared model."""
    model = optimize_for_inference(tiny_model)
    before = module_state(model)
    src = random_batch(model.cfg)
    with torch.inference_mode():
        model(src, src[:, :4], output_attentions=True)
        greedy_decode(model, src, 6)
        ids = [5, 6, 7, model.cfg.eos_id]
        trace_greedy(model, tokenizer, Source("x", ids, tokenizer.pieces(ids)), max_new_tokens=6)
    assert same_state(before, module_state(model))
    model.decoder_layers[0].self_attn.__dict__["_w_cm"] = "a cached copy"   # the check sees such a write
    assert not same_state(before, module_state(model))


def test_cached_equals_uncached_decoding(tiny_model):
    src = random_batch(tiny_model.cfg, B=4, S=10, seed=5)
    assert greedy_decode(tiny_model, src, 20, use_cache=True) == \
        greedy_decode(tiny_model, src, 20, use_cache=False)


def test_cached_logits_equal_full_recompute(tiny_model):
    cfg = tiny_model.cfg
    src = random_batch(cfg)
    tgt = torch.randint(4, cfg.vocab_size, (3, 7))
    full = tiny_model(src, tgt).logits
    enc = tiny_model.encode(src)
    cache = tiny_model.new_cache(enc)
    steps = [tiny_model.decode(tgt[:, t:t + 1], enc, cache=cache).logits for t in range(7)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def outputs(model, src, tgt):
    """Teacher-forced logits and attention, cached step-by-step logits, and greedy tokens."""
    with torch.inference_mode():
        full = model(src, tgt, output_attentions=True)
        enc = model.encode(src)
        cache = model.new_cache(enc)
        steps = torch.cat(
            [model.decode(tgt[:, t:t + 1], enc, cache=cache).logits for t in range(tgt.size(1))], 1)
        probs = [w.probs
                 for w in full.encoder_attentions + full.decoder_self_attentions + full.cross_attentions]
        return full.logits, steps, probs, greedy_decode(model, src, 12)


def test_optimized_model_gives_the_same_numbers(tiny_cfg):
    torch.manual_seed(3)
    plain = Transformer(tiny_cfg).eval()
    fast = optimize_for_inference(copy.deepcopy(plain))
    assert list(fast.state_dict()) == list(plain.state_dict())             # checkpoints load unchanged
    assert all(torch.equal(a, b) for a, b in zip(fast.state_dict().values(), plain.state_dict().values()))
    assert is_column_major(fast.embedding.weight) and \
        is_column_major(fast.decoder_layers[0].self_attn.w_q.weight)
    src, tgt = random_batch(tiny_cfg), torch.randint(4, tiny_cfg.vocab_size, (3, 6))
    ref, got = outputs(plain, src, tgt), outputs(fast, src, tgt)
    for a, b in zip(ref[:2] + tuple(ref[2]), got[:2] + tuple(got[2])):
        torch.testing.assert_close(b, a, atol=1e-5, rtol=1e-5)
    assert got[3] == ref[3]
    # new weights loaded into the optimised model are used, still column-major
    opt = torch.optim.SGD(plain.parameters(), lr=0.5)
    plain.train()
    plain(src, tgt).logits.square().mean().backward()
    opt.step()
    plain.eval()
    fast.load_state_dict(plain.state_dict())
    assert is_column_major(fast.embedding.weight)
    torch.testing.assert_close(outputs(fast, src, tgt)[0], outputs(plain, src, tgt)[0], atol=1e-5, rtol=1e-5)


def test_batched_decoding_matches_one_by_one(tiny_model):
    src = random_batch(tiny_model.cfg, B=3, S=9, seed=7)
    batched = greedy_decode(tiny_model, src, 15)
    for i in range(3):
        row = src[i][src[i] != tiny_model.cfg.pad_id][None]
        assert greedy_decode(tiny_model, row, 15)[0] == batched[i]


def test_config_rejects_bad_sizes():
    with pytest.raises(ValueError):
        ModelConfig(d_model=30, n_heads=8)


def test_parameter_count_matches_formula(tiny_cfg):
    c = tiny_cfg
    d, f, V = c.d_model, c.d_ff, c.vocab_size
    mha = 4 * (d * d + d)
    ffn = d * f + f + f * d + d
    enc = mha + ffn + 2 * 2 * d
    dec = 2 * mha + ffn + 3 * 2 * d
    assert Transformer(c).num_parameters() == V * d + c.n_encoder_layers * enc + c.n_decoder_layers * dec
