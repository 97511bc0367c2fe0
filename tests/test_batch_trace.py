"""Batched traced decoding gives every sentence exactly its own single-sentence trace."""
from __future__ import annotations

import numpy as np
import pytest

from transformer.model.decoding import trace_greedy, trace_greedy_batch
from transformer.trace import KINDS

SENTENCES = ["The cat is sleeping on the sofa.", "Hello.",
             "When the rain finally stopped in the late afternoon, the children ran outside to play.",
             "Where is the nearest train station?", "The cat is sleeping on the sofa."]


@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu")


def assert_same_trace(a, b):
    assert a.tgt_ids == b.tgt_ids and a.tgt_pieces == b.tgt_pieces and a.translation == b.translation
    assert a.stop == b.stop and a.source == b.source
    for sa, sb in zip(a.steps, b.steps, strict=True):
        assert (sa.index, sa.prefix, sa.token_id, sa.piece, sa.topk_ids, sa.topk_pieces) == \
               (sb.index, sb.prefix, sb.token_id, sb.piece, sb.topk_ids, sb.topk_pieces)
        np.testing.assert_allclose(sa.topk_probs, sb.topk_probs, rtol=1e-4, atol=1e-6)
    for kind in KINDS:
        ma, mb = a.attention(kind), b.attention(kind)
        assert ma.queries == mb.queries and ma.keys == mb.keys
        assert ma.probs.shape == mb.probs.shape and ma.scores.shape == mb.scores.shape
        np.testing.assert_allclose(ma.probs, mb.probs, rtol=1e-4, atol=1e-5)
        # NaN where never computed, in both
        np.testing.assert_allclose(ma.scores, mb.scores, rtol=1e-4, atol=1e-4)
        np.testing.assert_array_equal(np.isnan(ma.scores), np.isnan(mb.scores))


def test_batch_equals_single_traces_with_padding(translator):
    sources = [translator.source(s) for s in SENTENCES]
    assert len({len(s.ids) for s in sources}) >= 3        # different lengths: padding is exercised
    batch = trace_greedy_batch(translator.model, translator.tokenizer, sources, top_k=10)
    assert len(batch) == len(sources)
    for src, got in zip(sources, batch):
        assert_same_trace(got, trace_greedy(translator.model, translator.tokenizer, src, top_k=10))


def test_batch_respects_each_sentence_output_limit(translator):
    sources = [translator.source(s) for s in SENTENCES[:3]]
    batch = trace_greedy_batch(translator.model, translator.tokenizer, sources, max_new_tokens=3)
    for src, got in zip(sources, batch):
        assert_same_trace(got, trace_greedy(translator.model, translator.tokenizer, src, max_new_tokens=3))
        assert len(got.steps) <= 3


def test_batch_with_a_tiny_random_model(tiny_model, tokenizer):
    """A model that rarely says </s>: sentences stop at different output limits."""
    from transformer.trace import Source
    sources = [Source(t, ids + [3], tokenizer.pieces(ids + [3])) for t, ids in
               (("a", [5, 6, 7, 8, 9, 10]), ("b", [11]), ("c", [12, 13, 14]))]
    batch = trace_greedy_batch(tiny_model, tokenizer, sources, top_k=4)
    for src, got in zip(sources, batch):
        assert_same_trace(got, trace_greedy(tiny_model, tokenizer, src, top_k=4))
