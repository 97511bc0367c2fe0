"""Knock-out and patching (issue 40) against the model's own algebra and against an independent computation:
the same change made by editing the weights of a copy of the model (weight surgery), run through Transformer's
own forward pass."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from transformer.causal import KnockOut
from transformer.config import ModelConfig
from transformer.model.decoding import greedy_decode
from transformer.model.transformer import Transformer
from transformer.probes.knockout import (EditedRun, all_heads, chosen_log_probs, head_importance, knock_out,
                                         knockout_edits, means_of, original_run)
from transformer.probes.patching import patching
from transformer.probes.vectors import layer_inputs

from conftest import random_batch


def ids_of(model, seed=0, S=9, T=7):
    src = random_batch(model.cfg, B=1, S=S, seed=seed)[0].tolist()
    g = torch.Generator().manual_seed(seed + 100)
    tgt = torch.randint(4, model.cfg.vocab_size, (T,), generator=g).tolist() + [model.cfg.eos_id]
    return src, tgt


def edited_logits(model, src_ids, tgt_ids, ko):
    src, tgt_in, tgt_out, logp, seen = original_run(model, src_ids, tgt_ids)
    with torch.inference_mode():
        return EditedRun(model, knockout_edits(model, ko, means_of(seen)))(src, tgt_in)


def plain_logits(model, src_ids, tgt_ids):
    src = torch.tensor([src_ids])
    tgt_in = torch.tensor([[model.cfg.bos_id, *tgt_ids[:-1]]])
    with torch.inference_mode():
        return model(src, tgt_in).logits


def attention_module(model, kind, layer):
    if kind == "encoder":
        return model.encoder_layers[layer - 1].self_attn
    lay = model.decoder_layers[layer - 1]
    return lay.self_attn if kind == "decoder" else lay.cross_attn


@pytest.mark.parametrize("norm", ["post", "pre"])
def test_no_edit_is_the_model(tiny_cfg, norm):
    torch.manual_seed(1)
    model = Transformer(ModelConfig(**{**tiny_cfg.__dict__, "norm": norm})).eval()
    src = random_batch(model.cfg, B=3, S=9)          # a padded row included
    tgt_in = torch.randint(4, model.cfg.vocab_size, (3, 6), generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        ref = model(src, tgt_in).logits
        mine = EditedRun(model)(src, tgt_in)
    torch.testing.assert_close(mine, ref, atol=1e-5, rtol=1e-5)


def test_knocking_out_nothing_changes_nothing(tiny_model):
    src, tgt = ids_of(tiny_model)
    greedy = greedy_decode(tiny_model, torch.tensor([src]), max_new_tokens=10)[0]
    tgt = greedy + [tiny_model.cfg.eos_id] if len(greedy) < 10 else greedy
    r = knock_out(tiny_model, src, tgt, KnockOut(), 10, lambda ids: [str(i) for i in ids], str)
    np.testing.assert_allclose(r.p_knocked, r.p_original, rtol=1e-6)
    assert not r.changed and r.first_change is None
    assert [int(p) for p in r.pieces] == tgt[:len(r.pieces)]


@pytest.mark.parametrize("method", ["zero", "mean"])
@pytest.mark.parametrize("kind,sub",
                         [("cross", "cross"), ("encoder", "encoder-self"), ("decoder", "decoder-self")])
def test_every_head_of_a_sublayer_is_the_sublayer(tiny_model, method, kind, sub):
    src, tgt = ids_of(tiny_model)
    H = tiny_model.cfg.n_heads
    heads = edited_logits(tiny_model, src, tgt,
                          KnockOut(heads=tuple((kind, 2, h) for h in range(1, H + 1)), method=method))
    whole = edited_logits(tiny_model, src, tgt, KnockOut(sublayers=((sub, 2),), method=method))
    torch.testing.assert_close(heads, whole, atol=1e-5, rtol=1e-5)
    assert (heads - plain_logits(tiny_model, src, tgt)).abs().max() > 1e-3     # and it did change something


def zero_head_surgery(model, kind, layer, head):
    """A copy whose W^O ignores the head's columns and keeps (h−1)/h of the bias: the head's share is zero."""
    m = copy.deepcopy(model)
    attn = attention_module(m, kind, layer)
    d_k, H = attn.d_k, attn.n_heads
    with torch.no_grad():
        attn.w_o.weight[:, (head - 1) * d_k: head * d_k] = 0
        attn.w_o.bias.mul_((H - 1) / H)
    return m


@pytest.mark.parametrize("part", [("encoder", 1, 2), ("decoder", 2, 4), ("cross", 1, 1)])
def test_zeroed_head_matches_weight_surgery(tiny_model, part):
    src, tgt = ids_of(tiny_model, seed=4)
    torch.testing.assert_close(edited_logits(tiny_model, src, tgt, KnockOut(heads=(part,))),
                               plain_logits(zero_head_surgery(tiny_model, *part), src, tgt), atol=1e-5,
                               rtol=1e-5)


def test_mean_head_matches_weight_surgery(tiny_model):
    """Mean knock-out of one cross-attention head: the head's share replaced by its average over the
    translation's positions, computed here from the model's own attention weights and value vectors."""
    kind, layer, head = "cross", 2, 3
    src_ids, tgt = ids_of(tiny_model, seed=5)
    src = torch.tensor([src_ids])
    tgt_in = torch.tensor([[tiny_model.cfg.bos_id, *tgt[:-1]]])
    with torch.inference_mode():
        out = tiny_model(src, tgt_in, output_attentions=True)
        attn, _, kv_in = layer_inputs(tiny_model, src, tgt_in, kind, layer)
        probs = out.cross_attentions[layer - 1].probs[0, head - 1]                    # (T, S)
        v = attn.split_heads(attn.w_v(kv_in))[0, head - 1]                            # (S, d_k)
        d_k, H = attn.d_k, attn.n_heads
        w_h = attn.w_o.weight[:, (head - 1) * d_k: head * d_k]                        # (d_model, d_k)
        mean_share = ((probs @ v) @ w_h.T).mean(0) + attn.w_o.bias / H                # (d_model,)
    m = zero_head_surgery(tiny_model, kind, layer, head)
    with torch.no_grad():
        attention_module(m, kind, layer).w_o.bias.add_(mean_share)
    torch.testing.assert_close(edited_logits(tiny_model, src_ids, tgt,
                                             KnockOut(heads=((kind, layer, head),), method="mean")),
                               plain_logits(m, src_ids, tgt), atol=1e-5, rtol=1e-5)


def test_zeroed_sublayers_and_positions_match_weight_surgery(tiny_model):
    src, tgt = ids_of(tiny_model, seed=6)
    m = copy.deepcopy(tiny_model)
    with torch.no_grad():
        ff = m.encoder_layers[0].feed_forward.w_2
        ff.weight.zero_(), ff.bias.zero_()
        m.positional.pe.zero_()                                                       # both sides' positions
    ko = KnockOut(sublayers=(("encoder-ffn", 1),), positions=("source", "target"))
    torch.testing.assert_close(edited_logits(tiny_model, src, tgt, ko), plain_logits(m, src, tgt), atol=1e-5,
                               rtol=1e-5)


def test_greedy_with_a_knockout_is_the_surgical_models_greedy(tiny_model):
    src, tgt = ids_of(tiny_model, seed=7)
    part = ("cross", 2, 1)
    r = knock_out(tiny_model, src, tgt, KnockOut(heads=(part,)), 12, lambda ids: [str(i) for i in ids], str)
    ref = greedy_decode(zero_head_surgery(tiny_model, *part), torch.tensor([src]), max_new_tokens=12)[0]
    assert [int(p) for p in r.pieces if p != str(tiny_model.cfg.eos_id)] == ref


@pytest.mark.parametrize("method", ["zero", "mean"])
def test_head_importance_is_each_head_alone(tiny_model, method, monkeypatch):
    import transformer.probes.knockout as K
    # several passes, the last one short, as the real model's
    monkeypatch.setattr(K, "ROWS_PER_PASS", 5)
    src, tgt = ids_of(tiny_model, seed=8)
    hi = head_importance(tiny_model, src, tgt, method, [str(t) for t in tgt])
    _, _, tgt_out, logp, _ = original_run(tiny_model, src, tgt)
    assert sum(v.size for v in hi.per_step.values()) == len(all_heads(tiny_model)) * len(tgt)
    for kind, layer, head in [("encoder", 2, 3), ("decoder", 1, 1), ("cross", 2, 4)]:
        alone = chosen_log_probs(edited_logits(tiny_model, src, tgt,
                                               KnockOut(heads=((kind, layer, head),), method=method)),
                                 tgt_out)[0] - logp
        np.testing.assert_allclose(hi.per_step[kind][layer - 1, head - 1], alone.numpy(), atol=1e-5)
    ranked = hi.ranked()
    assert ranked[0][3] == min(r[3] for r in ranked) and len(ranked) == len(all_heads(tiny_model))
    step = hi.ranked(step=2)
    assert [r[3] for r in step] == sorted(r[3] for r in step)


def test_knockout_refuses_parts_the_model_lacks(tiny_model):
    src, tgt = ids_of(tiny_model)
    for ko, said in [(KnockOut(heads=(("cross", 3, 1),)), "no layer 3"),
                     (KnockOut(heads=(("encoder", 1, 5),)), "no head 5"),
                     (KnockOut(heads=(("sideways", 1, 1),)), "Unknown attention kind"),
                     (KnockOut(sublayers=(("decoder-ffn", 0),)), "no layer 0"),
                     (KnockOut(positions=("left",)), "Unknown side"),
                     (KnockOut(method="half"), "Unknown knock-out method")]:
        with pytest.raises(ValueError, match=said):
            knock_out(tiny_model, src, tgt, ko, 5, list, str)


def pair(model, seed=9):
    src_a, tgt = ids_of(model, seed=seed)
    src_b = list(src_a)
    src_b[3] = 4 if src_a[3] != 4 else 5                                               # one piece differs
    return src_a, src_b, tgt


def run_patching(model, src_a, src_b, tgt, step=4):
    return patching(model, src_a, src_b, tgt, step, tgt[step - 1], ("a", "b"), list(map(str, src_a)),
                    list(map(str, src_b)), list(map(str, tgt)), str(tgt[step - 1]))


def test_patching_a_sentence_into_itself_changes_nothing(tiny_model):
    """Every site's own output copied back in (as the patching maps copy B's): the numbers stay the same."""
    src_a, _, tgt = pair(tiny_model)
    src = torch.tensor([src_a])
    tgt_in = torch.tensor([[tiny_model.cfg.bos_id, *tgt[:3]]])
    with torch.inference_mode():
        rec = EditedRun(tiny_model, record=True)
        ref = rec(src, tgt_in)
        assert len(rec.seen) > 20
        for key, value in rec.seen.items():
            torch.testing.assert_close(EditedRun(tiny_model, {key: (torch.tensor(0.0), value)})(src, tgt_in),
                                       ref, atol=1e-6, rtol=1e-6)


def test_patching_the_whole_residual_stream_gives_the_second_sentence(tiny_model):
    src_a, src_b, tgt = pair(tiny_model)
    a, b = torch.tensor([src_a]), torch.tensor([src_b])
    tgt_in = torch.tensor([[tiny_model.cfg.bos_id, *tgt[:-1]]])
    with torch.inference_mode():
        rec_b = EditedRun(tiny_model, record=True)
        ref_b = rec_b(b, tgt_in)
        keys = [("layer", "encoder", n) for n in range(tiny_model.cfg.n_encoder_layers + 1)]
        # (an earlier decoder layer's is not all:
        keys.append(("layer", "decoder", tiny_model.cfg.n_decoder_layers))
        for key in keys:                 # the layers above it read A's memory) every position: B's numbers
            torch.testing.assert_close(
                EditedRun(tiny_model, {key: (torch.tensor(0.0), rec_b.seen[key])})(a, tgt_in),
                ref_b, atol=1e-5, rtol=1e-5)
    pm = run_patching(tiny_model, src_a, src_b, tgt)
    assert pm.differing == (3,)
    # the map patches one position a row: at the input, a position whose piece A and B share changes nothing
    same = [s for s in range(len(src_a)) if s not in pm.differing]
    np.testing.assert_allclose(pm.layer_positions_p[0, same], pm.p_a, atol=1e-6)
    np.testing.assert_allclose(pm.restored([pm.p_a, pm.p_b]), [0.0, 1.0])


def test_patching_maps_match_single_patches(tiny_model, monkeypatch):
    """Each map's batched rows (several passes, as the real model's) against one patch at a time."""
    import transformer.probes.knockout as K
    monkeypatch.setattr(K, "ROWS_PER_PASS", 4)
    src_a, src_b, tgt = pair(tiny_model, seed=11)
    pm = run_patching(tiny_model, src_a, src_b, tgt, step=5)
    a, b = torch.tensor([src_a]), torch.tensor([src_b])
    tgt_in = torch.tensor([[tiny_model.cfg.bos_id, *tgt[:4]]])

    def p_with(key, keep, seen_b):
        with torch.inference_mode():
            logits = EditedRun(tiny_model, {key: (keep, seen_b[key])})(a, tgt_in)
        return float(torch.softmax(logits[0, -1].double(), -1)[tgt[4]])

    with torch.inference_mode():
        rec_b = EditedRun(tiny_model, record=True)
        rec_b(b, tgt_in)
    H = tiny_model.cfg.n_heads
    keep = torch.ones(1, H, 1, 1)
    keep[0, 2] = 0
    assert p_with(("head", "cross", 2), keep, rec_b.seen) == pytest.approx(pm.head_p["cross"][1, 2], abs=1e-6)
    assert p_with(("sublayer", "encoder-ffn", 1), torch.tensor(0.0), rec_b.seen) == pytest.approx(
        pm.sublayer_p["encoder"][0, 1], abs=1e-6)
    keep = torch.ones(1, len(src_a), 1)
    keep[0, 3] = 0
    assert p_with(("layer", "encoder", 1), keep, rec_b.seen) == \
        pytest.approx(pm.layer_positions_p[1, 3], abs=1e-6)


def test_patching_refuses_sentences_it_cannot_compare(tiny_model):
    src_a, src_b, tgt = pair(tiny_model)
    with pytest.raises(ValueError, match="same number of pieces"):
        run_patching(tiny_model, src_a, src_b[:-2] + src_b[-1:], tgt)
    with pytest.raises(ValueError, match="the same, piece for piece"):
        run_patching(tiny_model, src_a, list(src_a), tgt)


def test_translator_facade(tiny_translator):
    text = "one two three"
    r = tiny_translator.knock_out(text, KnockOut(heads=(("cross", 1, 1),)))
    assert r.original_text == tiny_translator.trace(text).translation
    hi = tiny_translator.head_importance(text, "mean")
    assert set(hi.per_step) == {"encoder", "decoder", "cross"}
    with pytest.raises(ValueError, match="Unknown knock-out method"):
        tiny_translator.head_importance(text, "sideways")


def test_the_page_computes_an_experiment_once_for_everyone_asking_at_once(tiny_translator, monkeypatch):
    """A room's followers (four looks) and the presenter's redraws ask for the same knock-out at the same
    moment: one computation, the others wait for it; a part list that cannot run is answered
    with its reason."""
    import threading
    import time as _time
    from ui.tabs.knockout import CausalCache
    calls = []
    real = tiny_translator.knock_out

    def slow(text, ko):
        calls.append(text)
        _time.sleep(0.2)
        return real(text, ko)
    monkeypatch.setattr(tiny_translator, "knock_out", slow)
    cache = CausalCache(tiny_translator)
    out = []
    threads = [threading.Thread(target=lambda: out.append(cache.knock_out("one two", "cross L1 H1", "zero")))
               for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(calls) == 1 and len(out) == 4 and all(r is out[0][0] for r, _ in out)
    result, error = cache.knock_out("one two", "cross L9 H1", "zero")
    assert result is None and "no layer 9" in error
