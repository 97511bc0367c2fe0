"""The trace written by traced decoding holds what the model computes: checked against one
teacher-forced forward pass of the same tokens."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.config import ModelConfig
from transformer.io.tokenizer import BOS_PIECE, EOS_PIECE
from transformer.model.decoding import trace_greedy
from transformer.model.optimize import optimize_for_inference
from transformer.model.transformer import Transformer
from transformer.trace import KINDS, Source


@pytest.fixture(scope="module")
def model_and_trace(tokenizer):
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64)
    torch.manual_seed(0)
    model = optimize_for_inference(Transformer(cfg))
    ids = tokenizer.encode("I have seven apples.") + [cfg.eos_id]
    trace = trace_greedy(model, tokenizer, Source("I have seven apples.", ids, tokenizer.pieces(ids)),
                         max_new_tokens=9, top_k=5)
    return model, trace


def test_trace_matches_a_teacher_forced_forward_pass(model_and_trace):
    model, trace = model_and_trace
    cfg = model.cfg
    src = torch.tensor([trace.source.ids])
    tgt_in = torch.tensor([[cfg.bos_id, *trace.tgt_ids[:-1]]])
    with torch.inference_mode():
        out = model(src, tgt_in, output_attentions=True)
    stack = lambda ws, attr: torch.stack([getattr(w, attr)[0] for w in ws]).numpy()
    T = len(trace.steps)
    future = np.triu(np.ones((T, T), dtype=bool), 1)
    close = dict(atol=1e-5, rtol=1e-4)
    np.testing.assert_allclose(trace.encoder.probs, stack(out.encoder_attentions, "probs"), **close)
    np.testing.assert_allclose(trace.encoder.scores, stack(out.encoder_attentions, "scores"), **close)
    np.testing.assert_allclose(trace.decoder.probs, stack(out.decoder_self_attentions, "probs"), **close)
    dec_scores = stack(out.decoder_self_attentions, "scores")
    # future cells included: the full QKᵀ/√d_k
    np.testing.assert_allclose(trace.decoder.scores, dec_scores, **close)
    assert np.isfinite(trace.decoder.scores).all() and (trace.decoder.probs[..., future] == 0).all()
    np.testing.assert_allclose(trace.cross.probs, stack(out.cross_attentions, "probs"), **close)
    np.testing.assert_allclose(trace.cross.scores, stack(out.cross_attentions, "scores"), **close)
    probs = torch.softmax(out.logits[0].float(), -1)
    for t, step in enumerate(trace.steps):
        top_p, top_i = probs[t].topk(5)
        assert list(step.topk_ids) == top_i.tolist() and step.token_id == int(probs[t].argmax())
        np.testing.assert_allclose(step.topk_probs, top_p.numpy(), **close)


def test_trace_pieces_steps_and_axes_agree(model_and_trace, tokenizer):
    model, trace = model_and_trace
    T, S = len(trace.steps), len(trace.source.ids)
    assert list(trace.tgt_pieces) == tokenizer.pieces(trace.tgt_ids) == [s.piece for s in trace.steps]
    assert trace.tgt_in_pieces == (BOS_PIECE, *trace.tgt_pieces[:-1])
    for t, step in enumerate(trace.steps):
        assert step.index == t and step.prefix == trace.tgt_in_pieces[: t + 1]
    # the steps share one tuple of pieces (one per step grew with the square of the length, in every session)
    assert len({id(step.decoder_input) for step in trace.steps}) == 1
    assert trace.finished == (trace.tgt_pieces[-1:] == (EOS_PIECE,)) and trace.stop in ("end", "length")
    assert trace.translation == tokenizer.decode(trace.tgt_ids)
    shapes = {"encoder": (S, S), "decoder": (T, T), "cross": (T, S)}
    for kind in KINDS:
        maps = trace.attention(kind)
        assert maps.kind == kind and maps.probs.shape == (2, 4, *shapes[kind]) == maps.scores.shape
        assert (len(maps.queries), len(maps.keys)) == shapes[kind]
    assert trace.decoder.future is not None and trace.encoder.future is None
    with pytest.raises(ValueError):
        trace.attention("sideways")



def test_decoder_scores_are_q_dot_k_of_the_model_future_cells_included(model_and_trace):
    """The full QKᵀ/√d_k that "inside one head" shows, recomputed from the first decoder layer's own
    projections W^Q, W^K of the decoder input: the future (masked) cells hold real numbers too."""
    model, trace = model_and_trace
    cfg = model.cfg
    tgt_in = torch.tensor([[cfg.bos_id, *trace.tgt_ids[:-1]]])
    attn = model.decoder_layers[0].self_attn
    with torch.inference_mode():
        x = model.embed(tgt_in, 0)
        q, k = attn.split_heads(attn.w_q(x)), attn.split_heads(attn.w_k(x))
        qk = (q @ k.transpose(-2, -1))[0].numpy() / np.sqrt(cfg.d_k)
    assert len(trace.steps) > 2
    np.testing.assert_allclose(trace.decoder.scores[0], qk, atol=1e-4, rtol=1e-4)
    future = trace.decoder.future
    assert future.any() and np.isfinite(trace.decoder.scores[0][:, future]).all()
    assert np.abs(trace.decoder.scores[0][:, future]).max() > 0


def test_attention_maps_check_their_labels_and_are_read_only():
    import numpy as np
    import pytest
    from transformer.trace import AttentionMaps
    probs = np.full((2, 4, 3, 5), 0.2, dtype=np.float32)
    maps = AttentionMaps("cross", probs, probs.copy(), ["<s>", "▁le", "▁chat"],
                         ["▁the", "▁cat", "▁is", "▁here", "</s>"])
    with pytest.raises(ValueError, match="read-only"):
        maps.probs[0, 0, 0, 0] = 1.0
    with pytest.raises(ValueError, match="does not match"):
        AttentionMaps("cross", probs.copy(), probs.copy(), ["<s>", "▁le"],
                      ["▁the", "▁cat", "▁is", "▁here", "</s>"])
    with pytest.raises(ValueError, match="differ"):
        AttentionMaps("cross", probs.copy(), probs[:1].copy(), ["<s>", "▁le", "▁chat"],
                      ["▁the", "▁cat", "▁is", "▁here", "</s>"])


def test_a_trace_holds_tuples_that_no_view_can_append_to(model_and_trace):
    """A cached trace is shared by every user who asks for its sentence: its piece lists are tuples, even when
    the code that built it passed lists."""
    _, trace = model_and_trace
    for seq in (trace.tgt_ids, trace.tgt_pieces, trace.steps, trace.source.ids, trace.source.pieces,
                trace.steps[0].prefix, trace.steps[0].topk_pieces, trace.cross.queries, trace.cross.keys):
        assert isinstance(seq, tuple)
    with pytest.raises(AttributeError):
        trace.steps.append(trace.steps[0])
