"""Our layers against PyTorch's own, masks, attention weights, positional encoding, KV cache."""
from __future__ import annotations

import math

import pytest
import torch
from torch import nn

from conftest import random_batch
from transformer.model.attention import MultiHeadAttention
from transformer.config import ModelConfig
from transformer.model.decoding import greedy_decode
from transformer.model.transformer import DecoderLayer, EncoderLayer, Transformer, sinusoidal_encoding


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
    out, w, _ = ours(q, kv, mask=(~pad)[:, None, None, :], need_weights=True)
    ref_out, ref_w = ref(q, kv, kv, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
    torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(w.probs, ref_w, atol=1e-6, rtol=1e-5)


def test_encoder_layer_matches_pytorch(tiny_cfg):
    torch.manual_seed(2)
    ours = EncoderLayer(tiny_cfg).eval()
    ref = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=False).eval()
    copy_attention(ours.self_attn, ref.self_attn)
    copy_ffn_norms(ours, ref, 2)
    x = torch.randn(2, 6, 32)
    pad = torch.zeros(2, 6, dtype=torch.bool)
    pad[1, 4:] = True
    for need_weights in (False, True):
        out, _ = ours(x, (~pad)[:, None, None, :], need_weights=need_weights)
        ref_out = ref(x, src_key_padding_mask=pad)
        torch.testing.assert_close(out[~pad], ref_out[~pad], atol=1e-5, rtol=1e-5)


def test_decoder_layer_matches_pytorch(tiny_cfg):
    torch.manual_seed(3)
    ours = DecoderLayer(tiny_cfg).eval()
    ref = nn.TransformerDecoderLayer(32, 4, 64, dropout=0.0, batch_first=True, norm_first=False).eval()
    copy_attention(ours.self_attn, ref.self_attn)
    copy_attention(ours.cross_attn, ref.multihead_attn)
    copy_ffn_norms(ours, ref, 3)
    y, mem = torch.randn(2, 5, 32), torch.randn(2, 7, 32)
    pad = torch.zeros(2, 7, dtype=torch.bool)
    pad[0, 5:] = True
    causal = nn.Transformer.generate_square_subsequent_mask(5)
    ref_out = ref(y, mem, tgt_mask=causal, tgt_is_causal=True, memory_key_padding_mask=pad)
    for need_weights in (False, True):
        out, _, _ = ours(y, mem, (~pad)[:, None, None, :], need_weights=need_weights)
        torch.testing.assert_close(out, ref_out, atol=1e-5, rtol=1e-5)


def test_positional_encoding_formula():
    pe = sinusoidal_encoding(50, 16)
    assert pe[1, 0].item() == pytest.approx(math.sin(1.0), abs=1e-6)          # PE(1, 0) = sin 1 = 0.8415
    assert pe[1, 0].item() == pytest.approx(0.8415, abs=1e-4)
    assert pe[0, 1].item() == pytest.approx(1.0)                              # cos 0
    pos, i, d = 7, 3, 16
    assert pe[pos, 2 * i].item() == pytest.approx(math.sin(pos / 10000 ** (2 * i / d)), abs=1e-6)
    assert pe[pos, 2 * i + 1].item() == pytest.approx(math.cos(pos / 10000 ** (2 * i / d)), abs=1e-6)


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


def test_weights_are_not_stored_on_modules(tiny_model):
    src = random_batch(tiny_model.cfg)
    before = {k for m in tiny_model.modules() for k in vars(m)}
    tiny_model(src, src[:, :4], output_attentions=True)
    after = {k for m in tiny_model.modules() for k in vars(m)}
    assert before == after


def test_cached_equals_uncached_decoding(tiny_model):
    src = random_batch(tiny_model.cfg, B=4, S=10, seed=5)
    assert greedy_decode(tiny_model, src, 20, use_cache=True) == greedy_decode(tiny_model, src, 20, use_cache=False)


def test_cached_logits_equal_full_recompute(tiny_model):
    cfg = tiny_model.cfg
    src = random_batch(cfg)
    tgt = torch.randint(4, cfg.vocab_size, (3, 7))
    full = tiny_model(src, tgt).logits
    enc = tiny_model.encode(src)
    cache = tiny_model.new_cache(enc)
    steps = [tiny_model.decode(tgt[:, t:t + 1], enc, cache=cache).logits for t in range(7)]
    torch.testing.assert_close(torch.cat(steps, 1), full, atol=1e-5, rtol=1e-5)


def test_inference_fast_path_matches_training_path_and_follows_weight_updates(tiny_cfg):
    """At inference on CPU the products read cached transposed copies of the weights (and a fused
    Q/K/V); they must give the training path's numbers and be rebuilt when the parameters change."""
    torch.manual_seed(3)
    model = Transformer(tiny_cfg).eval()
    src = random_batch(tiny_cfg)
    tgt = torch.randint(4, tiny_cfg.vocab_size, (3, 6))

    def both():
        slow = model(src, tgt).logits.detach()             # grad enabled: the parameters themselves
        with torch.inference_mode():
            fast = model(src, tgt).logits
            enc = model.encode(src)
            cache = model.new_cache(enc)
            steps = torch.cat([model.decode(tgt[:, t:t + 1], enc, cache=cache).logits for t in range(6)], 1)
        return slow, fast, steps

    slow, fast, steps = both()
    torch.testing.assert_close(fast, slow, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps, slow, atol=1e-5, rtol=1e-5)
    opt = torch.optim.SGD(model.parameters(), lr=0.5)       # an in-place update of every parameter
    model(src, tgt).logits.square().mean().backward()
    opt.step()
    slow2, fast2, steps2 = both()
    assert not torch.allclose(slow2, slow, atol=1e-3)
    torch.testing.assert_close(fast2, slow2, atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(steps2, slow2, atol=1e-5, rtol=1e-5)


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
