"""Design choices trained live (transformer/training/toy.py, transformer/viz/toy.py, ui/train_live.py): the
toy tasks are what they say; a model without positions sees a bag of pieces; the figures show what the
snapshot holds (both maps on one colour scale); the caption's numbers are the run's; and, for every choice,
the live run on its shipped seed shows the effect its paragraph states, in the stated direction and by a
margin, in the worker process the page uses, within about a minute (the seconds printed, never asserted)."""
from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from transformer.config import ModelConfig
from transformer.model.transformer import Transformer
from transformer.training.toy import CHOICES, FIRST, VOCAB, batch, make_pairs
from transformer.viz import toy as toy_views


def test_the_toy_tasks_are_what_they_say():
    rng = np.random.default_rng(0)
    for task, rule in (("copy", lambda x: x), ("reverse", lambda x: x[::-1]), ("sort", sorted),
                       ("diff", lambda x: [x[0]] + [(b - a) % 10 for a, b in zip(x, x[1:])])):
        pairs = make_pairs(task, rng, 50, (3, 8))
        assert all(y == list(rule(x)) and 3 <= len(x) <= 8 for x, y in pairs), task
    src, tin, tout = batch([([1, 2, 3], [3, 2, 1]), ([4], [4])])
    assert src.tolist() == [[FIRST + 1, FIRST + 2, FIRST + 3, 3], [FIRST + 4, 3, 0, 0]]
    assert tin[:, 0].tolist() == [2, 2] and tout.tolist()[1] == [FIRST + 4, 3, 0, 0]


def test_without_positions_the_encoder_sees_a_bag_of_pieces():
    """positions='none': permuting the source permutes the encoder's output the same way (nothing tells the
    order), unlike the sinusoids."""
    torch.manual_seed(0)
    src = torch.tensor([[FIRST + 1, FIRST + 5, FIRST + 2, FIRST + 7, 3]])
    perm = torch.tensor([3, 0, 2, 1, 4])
    for positions, bag in (("none", True), ("sinusoidal", False)):
        model = Transformer(ModelConfig(vocab_size=VOCAB, d_model=32, n_heads=4, n_encoder_layers=2,
                                        n_decoder_layers=1, d_ff=64, dropout=0.0, max_len=16,
                                        positions=positions))
        model.eval()
        with torch.no_grad():
            out, out_perm = model.encode(src).memory[0], model.encode(src[:, perm]).memory[0]
        assert torch.allclose(out[perm], out_perm, atol=1e-5) is bag, positions


def snapshot(choice: str = "positions") -> dict:
    side = lambda acc, by, z: dict(loss=[2.0, 1.0], accuracy=[0.2, acc], by_length=by,   # noqa: E731
                                   attention=z,
                                   entropy=[0.9, 0.5], grad_norm=[1.0, 2.0])
    return dict(choice=choice, title="T", task="copy", a_label="sinusoidal", b_label="learned",
                train_lengths=[3, 8], every=25, step=50, steps=100, seconds=3.0, example=[[1, 2], [1, 2]],
                a=side(0.9, {"8": 0.9, "9": 0.7, "10": 0.3, "11": 0.0}, [[0.9, 0.1, 0.0]] * 3),
                b=side(0.8, {"8": 0.8, "9": 0.1, "10": 0.0, "11": 0.0}, [[0.2, 0.5, 0.3]] * 3))


def test_the_figures_show_the_snapshot_and_the_caption_reads_its_numbers():
    snap = snapshot()
    maps = toy_views.attention_figure(snap, False, 16)
    assert [(t.zmin, t.zmax) for t in maps.data] == [(0, 1), (0, 1)]        # one colour scale for both models
    assert np.allclose(maps.data[0].z, snap["a"]["attention"]) and \
        np.allclose(maps.data[1].z, snap["b"]["attention"])
    bars = toy_views.choice_figure(snap, False, 16)
    assert list(bars.data[0].y) == [0.9, 0.7, 0.3, 0.0] and list(bars.data[1].x) == [8, 9, 10, 11]
    text = toy_views.outcome(snap)
    assert "lengths 3–8, sinusoidal 90% and learned 80%" in text and \
        "length 9, sinusoidal 70% and learned 10%" in text
    assert "from 10 on, sinusoidal 15% and learned 0%" in text
    assert toy_views.effect(snap) == pytest.approx(min(0.9 - 0.15, 0.8 - 0.0))
    loss = toy_views.loss_figure(snapshot("nopos"), True, 16)
    assert [list(t.y) for t in loss.data] == [[2.0, 1.0], [2.0, 1.0]] and list(loss.data[0].x) == [25, 50]
    for name in CHOICES:
        assert name in toy_views.PARAGRAPHS and name in toy_views.EFFECTS
        paragraph = toy_views.paragraph({**snapshot(name), "choice": name})
        assert paragraph.count("**") == 6 and "**This run.** After 50 steps" in paragraph


@pytest.mark.parametrize("name", list(CHOICES))
def test_each_live_run_shows_the_effect_its_paragraph_states(name):
    """The live run the page starts (the worker process, seed 0, the choice's steps): the paper's side ahead
    by the margin of EFFECTS at the end, and the shipped longer run too."""
    from ui.train_live import shipped, train
    snaps = list(train(name))
    last = snaps[-1]
    assert last["step"] == CHOICES[name].steps and len(snaps) >= 10 and snaps[0]["step"] == 0
    for said, holds in toy_views.claims(last):
        assert holds, (name, said, toy_views.outcome(last))
    print(f"{name}: {last['seconds']:.0f} s, {toy_views.outcome(last)}")
    longer = shipped(name)
    assert longer is not None and longer["step"] > last["step"], \
        f"checkpoints/toy-runs/{name}.json is missing"
    for said, holds in toy_views.claims(longer):
        assert holds, (name, "the shipped run", said, toy_views.outcome(longer))
    if name == "heads":                                              # "the longer run shows it gets there"
        assert toy_views.first_step(longer, "b") is not None
    assert len(json.dumps(longer)) < 60_000                                   # shipped small
