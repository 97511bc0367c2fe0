"""Tokenizer round trip and special ids; checkpoint save/load and clear errors for bad folders."""
from __future__ import annotations

import json
import shutil

import pytest
import torch

from transformer.config import BOS_ID, EOS_ID, PAD_ID, UNK_ID, ModelConfig
from transformer.io.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from transformer.io.tokenizer import BOS_PIECE, EOS_PIECE, PAD_PIECE, UNK_PIECE, detokenize
from transformer.model.transformer import Transformer


def test_tokenizer_round_trip_and_special_ids(tokenizer, pairs):
    assert (tokenizer.pad_id, tokenizer.unk_id, tokenizer.bos_id, tokenizer.eos_id) == \
        (PAD_ID, UNK_ID, BOS_ID, EOS_ID)
    assert tokenizer.pieces([0, 1, 2, 3]) == [PAD_PIECE, UNK_PIECE, BOS_PIECE, EOS_PIECE] == \
        ["<pad>", "<unk>", "<s>", "</s>"]
    for en, fr in pairs[:20]:
        for text in (en, fr):
            ids = tokenizer.encode(text)
            assert tokenizer.decode(ids) == text
            assert tokenizer.decode([BOS_ID] + ids + [EOS_ID, PAD_ID]) == text
            assert detokenize(tokenizer.pieces([BOS_ID] + ids + [EOS_ID])) == text
    batch = tokenizer.encode([pairs[0][0], pairs[1][1]])
    assert batch == [tokenizer.encode(pairs[0][0]), tokenizer.encode(pairs[1][1])]


def make_checkpoint(tmp_path, tokenizer, dtype=None):
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, n_encoder_layers=1,
                      n_decoder_layers=1, d_ff=64, max_len=64)
    torch.manual_seed(0)
    model = Transformer(cfg).eval()
    return model, save_checkpoint(model, tokenizer.path, tmp_path / "ck", dtype=dtype)


@pytest.mark.parametrize("dtype", [None, torch.float16])
def test_save_load_round_trip(tmp_path, tokenizer, dtype):
    model, folder = make_checkpoint(tmp_path, tokenizer, dtype)
    loaded, tok = load_checkpoint(folder)
    assert loaded.cfg == model.cfg and tok.vocab_size == tokenizer.vocab_size
    for (k, a), (_, b) in zip(model.state_dict().items(), loaded.state_dict().items()):
        assert b.dtype == torch.float32
        torch.testing.assert_close(a.to(dtype or a.dtype).float(), b, msg=k)
    assert json.loads((folder / "config.json").read_text())["d_model"] == 32


def expect_error(folder, *words):
    with pytest.raises(CheckpointError) as e:
        load_checkpoint(folder)
    msg = str(e.value)
    for w in words:
        assert w in msg, msg
    assert "--checkpoint" in msg     # every message says what to do


def test_missing_folder_and_files(tmp_path, tokenizer):
    expect_error(tmp_path / "nope", "does not exist")
    _, folder = make_checkpoint(tmp_path, tokenizer)
    for name in ("model.safetensors", "config.json", "tokenizer.model"):
        broken = tmp_path / f"no-{name}"
        shutil.copytree(folder, broken)
        (broken / name).unlink()
        expect_error(broken, name)


def test_truncated_and_corrupt_weights(tmp_path, tokenizer):
    _, folder = make_checkpoint(tmp_path, tokenizer)
    w = folder / "model.safetensors"
    data = w.read_bytes()
    w.write_bytes(data[: len(data) // 2])
    expect_error(folder, "truncated or corrupt")
    w.write_bytes(b"\x80\x04not a safetensors file, maybe a pickle")
    expect_error(folder, "truncated or corrupt")


def test_corrupt_config_and_tokenizer(tmp_path, tokenizer):
    _, folder = make_checkpoint(tmp_path, tokenizer)
    (folder / "config.json").write_text("{not json")
    expect_error(folder, "config")
    (folder / "config.json").write_text(json.dumps({"d_model": 32, "bogus": 1}))
    expect_error(folder, "bogus")
    _, folder = make_checkpoint(tmp_path / "b", tokenizer)
    (folder / "tokenizer.model").write_bytes(b"garbage")
    expect_error(folder, "SentencePiece")


def test_mismatched_config_and_vocab(tmp_path, tokenizer):
    _, folder = make_checkpoint(tmp_path, tokenizer)
    cfg = json.loads((folder / "config.json").read_text())
    cfg["d_ff"] = 128
    (folder / "config.json").write_text(json.dumps(cfg))
    expect_error(folder, "do not match", "shape")
    cfg["d_ff"], cfg["n_encoder_layers"] = 64, 2
    (folder / "config.json").write_text(json.dumps(cfg))
    expect_error(folder, "missing")
    cfg["n_encoder_layers"], cfg["vocab_size"] = 1, tokenizer.vocab_size + 5
    (folder / "config.json").write_text(json.dumps(cfg))
    expect_error(folder, "different models")


def test_nonfinite_weights_rejected(tmp_path, tokenizer):
    from safetensors.torch import load_file, save_file
    _, folder = make_checkpoint(tmp_path, tokenizer)
    sd = load_file(str(folder / "model.safetensors"))
    sd["embedding.weight"][5, 0] = float("nan")
    save_file(sd, str(folder / "model.safetensors"))
    expect_error(folder, "NaN")


def test_interpolation_of_two_checkpoints(tmp_path, tokenizer):
    """``cli.interpolate``: W=0 gives A, W=1 gives B, W=0.5 the mean of the two (what checkpoint averaging
    computes); checkpoints of another shape or tokenizer are refused with a message, not a traceback."""
    from transformer.cli import interpolate
    from transformer.training.evaluation import average_weights
    _, a = make_checkpoint(tmp_path / "a", tokenizer)
    cfg = load_checkpoint(a)[0].cfg
    torch.manual_seed(1)
    b = save_checkpoint(Transformer(cfg).eval(), tokenizer.path, tmp_path / "b" / "ck")
    (b / "log.csv").write_text("step,loss\n1,2.0\n")
    sd = {name: load_checkpoint(f)[0].state_dict() for name, f in (("a", a), ("b", b))}
    for w in (0.0, 0.5, 1.0):
        out = tmp_path / f"mix{w}"
        assert interpolate.main([str(a), str(b), "--weight", str(w), "--out", str(out)]) == 0
        got = load_checkpoint(out)[0].state_dict()
        want = {0.0: sd["a"], 1.0: sd["b"]}.get(w) or average_weights(
            [a / "model.safetensors", b / "model.safetensors"])
        for k in got:
            torch.testing.assert_close(got[k], want[k].float(), rtol=1e-6, atol=1e-7)
        assert (out / "log.csv").read_text() == (b / "log.csv").read_text()       # B's files come along
    other = ModelConfig(**{**cfg.__dict__, "d_ff": 32})
    c = save_checkpoint(Transformer(other).eval(), tokenizer.path, tmp_path / "c" / "ck")
    with pytest.raises(SystemExit):
        interpolate.main([str(a), str(c), "--weight", "0.5", "--out", str(tmp_path / "bad")])
    with pytest.raises(SystemExit):
        interpolate.main([str(a), str(b), "--weight", "1.5", "--out", str(tmp_path / "bad")])
    with pytest.raises(SystemExit):                                     # never over a parent
        interpolate.main([str(a), str(b), "--weight", "0.5", "--out", str(b)])
    assert not (tmp_path / "bad").exists()
    for k, v in load_checkpoint(b)[0].state_dict().items():                # B untouched
        torch.testing.assert_close(v, sd["b"][k], rtol=0, atol=0)


def test_bundled_vocabulary_cuts_thousands_at_their_comma(bundled_checkpoint, tmp_path):
    """The bundled vocabulary held the piece '0,000', so '20,000' was cut '▁2' '0,000' and every model wrote
    « 2 000 »; the piece is retired (tools/retire_pieces.py): every whole thousand up to a million is cut at
    its comma, as '12,000' always was, and a retired piece the model writes still decodes."""
    import shutil
    import subprocess
    import sys

    import sentencepiece as spm

    from conftest import ROOT
    model = bundled_checkpoint / "tokenizer.model"
    sp = spm.SentencePieceProcessor(model_file=str(model))
    for n in range(1_000, 1_000_000, 1_000):
        pieces = sp.encode(f"{n:,}", out_type=str)
        assert pieces[-1] == ",000" and "".join(pieces).replace("▁", "") == f"{n:,}", pieces
    zeros = sp.piece_to_id("0,000")
    assert sp.is_unused(zeros) and sp.decode([sp.piece_to_id("▁2"), zeros]) == "20,000"

    def retire(*args):     # the tool, as the README runs it
        return subprocess.run([sys.executable, str(ROOT / "tools" / "retire_pieces.py"), *args],
                              capture_output=True, text=True)
    copy = tmp_path / "tokenizer.model"
    shutil.copy(model, copy)
    assert "nothing (already retired)" in retire(str(copy), "0,000").stdout      # idempotent
    done = retire(str(copy), ",000", "--show", "20,000")
    assert "retired: [',000']" in done.stdout and "'20,000' -> ['▁20', ',', '000']" in done.stdout, done
    refused = retire(str(copy), "no such piece")
    assert refused.returncode != 0 and "not in the vocabulary" in refused.stderr
