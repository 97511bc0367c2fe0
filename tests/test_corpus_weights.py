"""Corpus weights (@W) and carrying a model over to a new vocabulary."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from transformer.training.data import ParallelData, parse_spec
from transformer.training.vocab_transfer import old_pieces_for, transfer_embedding


def test_parse_spec_reads_whole_and_fractional_weights():
    assert parse_spec("a.tsv") == ("a.tsv", 1.0)
    assert parse_spec("a.tsv@3") == ("a.tsv", 3.0)
    assert parse_spec("news.tsv.gz@0.35") == ("news.tsv.gz", 0.35)
    assert parse_spec("user@host.tsv") == ("user@host.tsv", 1.0)       # not a weight: part of the name
    with pytest.raises(ValueError):
        parse_spec("a.tsv@0")


def test_an_epoch_follows_the_weights():
    n = 400
    src = [[5 + i % 7] * (1 + i % 5) for i in range(2 * n)]
    weights = [2.0] * n + [0.25] * n                # the first corpus twice, a fresh quarter of the second
    data = ParallelData(src, src, 50, weights)
    epochs = []
    for seed in (1, 2):
        idx = np.concatenate(data.batches(10_000, seed=seed))
        counts = np.bincount(idx, minlength=2 * n)
        assert (counts[:n] == 2).all()
        assert set(counts[n:]) <= {0, 1} and 0.15 * n < counts[n:].sum() < 0.35 * n
        epochs.append(set(np.flatnonzero(counts[n:])))
    assert epochs[0] != epochs[1]                   # another quarter each epoch
    assert sorted(np.concatenate(data.batches(10_000, seed=0, shuffle=False))) == list(range(2 * n))
    # (x </s>) + (y </s>)
    assert data.num_tokens() == pytest.approx(sum(w * (2 * len(s) + 2) for s, w in zip(src, weights)))


def test_piece_counts_follow_the_weights(tmp_path):
    import json
    from transformer.training.run import write_piece_counts
    data = ParallelData([[5, 6], [7]], [[8], [9, 9]], 50, [3.0, 1.0])
    write_piece_counts(data, 12, tmp_path / "counts.json")
    counts = json.loads((tmp_path / "counts.json").read_text())
    assert counts["pairs"] == 4 and counts["source"][5] == 3 and counts["source"][7] == 1 and \
        counts["source"][3] == 4
    assert counts["target"][8] == 3 and counts["target"][9] == 2


def test_whole_weights_keep_the_unweighted_batches():
    src = [[5 + i % 7] * (1 + i % 5) for i in range(100)]
    plain, ones = ParallelData(src, src, 50), ParallelData(src, src, 50, [1.0] * 100)
    for a, b in zip(plain.batches(64, seed=3), ones.batches(64, seed=3)):
        assert a.tolist() == b.tolist()


def test_new_vocabulary_starts_from_the_old_rows(tokenizer, pairs, tmp_path):
    from transformer.io.tokenizer import train_tokenizer
    new = train_tokenizer([s for p in pairs for s in p], tmp_path / "new", vocab_size=90, model_type="bpe")
    old_emb = torch.randn(tokenizer.vocab_size, 8)
    moved = transfer_embedding(old_emb, tokenizer, new)
    assert moved.embedding.shape == (new.vocab_size, 8)
    # specials; pad = 0
    assert torch.equal(moved.embedding[1:4], old_emb[1:4]) and not moved.embedding[0].any()
    for i in range(4, new.vocab_size):
        piece = new.sp.id_to_piece(i)
        ids = old_pieces_for(piece, tokenizer)
        assert torch.allclose(moved.embedding[i], old_emb[ids].mean(0)), piece
        if tokenizer.sp.piece_to_id(piece) != tokenizer.unk_id:
            assert ids == [tokenizer.sp.piece_to_id(piece)]
        else:   # spelled by the old pieces: the same text
            assert "".join(tokenizer.pieces(ids)).lstrip("▁") == piece.lstrip("▁")
    assert moved.copied + moved.composed == new.vocab_size and moved.copied > 4 and moved.composed > 0
