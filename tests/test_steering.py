"""Steering the decoder (model/steering.py) against the plain forward pass: teacher forcing, what-if
branches and beam search, on a tiny random model and on the bundled one."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from transformer.config import ModelConfig
from transformer.model.decoding import greedy_decode, trace_greedy
from transformer.model.optimize import optimize_for_inference
from transformer.model.steering import beam_search, branch, forced_pass
from transformer.model.transformer import Transformer
from transformer.steering import length_penalty
from transformer.trace import Source

SENTENCES = ["I have seven apples.", "Twenty-two cats.", "I have fifty-nine apples."]


@pytest.fixture(scope="module")
def model(tokenizer):
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, dropout=0.0, max_len=64)
    torch.manual_seed(0)
    return optimize_for_inference(Transformer(cfg))


def source(tokenizer, text, eos=3):
    ids = tokenizer.encode(text) + [eos]
    return Source(text, ids, tokenizer.pieces(ids))


def full_log_probs(model, src_ids, tgt_ids):
    """log_softmax of one teacher-forced forward over <s> + tgt_ids[:-1]: (T, vocab)."""
    with torch.inference_mode():
        out = model(torch.tensor([src_ids]), torch.tensor([[model.cfg.bos_id] + list(tgt_ids[:-1])]),
                    output_attentions=True)
    return torch.log_softmax(out.logits[0].float(), -1), out


def test_forced_probabilities_equal_log_softmax_of_a_full_forward(model, tokenizer):
    src = source(tokenizer, "I have seven apples.")
    french = tokenizer.encode("J'ai neuf chats.") + [model.cfg.eos_id]
    result = forced_pass(model, tokenizer, src, french, top_k=5)
    logp, out = full_log_probs(model, src.ids, french)
    assert [p.token_id for p in result.pieces] == french
    for t, p in enumerate(result.pieces):
        assert p.log_prob == pytest.approx(float(logp[t, french[t]]), abs=1e-5)
        assert p.probability == pytest.approx(math.exp(float(logp[t, french[t]])), rel=1e-5)
        assert p.rank == int((logp[t] > logp[t, french[t]]).sum()) + 1
        assert p.top_piece == tokenizer.pieces([int(logp[t].argmax())])[0]
    assert result.mean_loss == pytest.approx(-float(sum(logp[t, i] for t, i in enumerate(french)))
                                             / len(french), 1e-5)
    assert result.perplexity == pytest.approx(math.exp(result.mean_loss))
    # every attention map of the forced pass is the forward's (future cells of decoder self-attention: their
    # scores before the mask, and probability 0)
    tr = result.trace
    assert len({id(s.decoder_input) for s in tr.steps}) == 1 and tr.steps[2].prefix == tr.tgt_in_pieces[:3]
    stack = lambda ws, a: torch.stack([getattr(w, a)[0] for w in ws]).numpy()
    np.testing.assert_allclose(tr.encoder.probs, stack(out.encoder_attentions, "probs"), atol=1e-5)
    np.testing.assert_allclose(tr.decoder.probs, stack(out.decoder_self_attentions, "probs"), atol=1e-5)
    np.testing.assert_allclose(tr.cross.probs, stack(out.cross_attentions, "probs"), atol=1e-5)
    np.testing.assert_allclose(tr.decoder.scores, stack(out.decoder_self_attentions, "scores"), atol=1e-5)
    future = np.triu(np.ones((len(french),) * 2, bool), 1)
    assert np.isfinite(tr.decoder.scores).all() and (tr.decoder.probs[..., future] == 0).all()
    assert list(tr.tgt_ids) == french and [s.token_id for s in tr.steps] == french


def test_forcing_the_greedy_output_gives_rank_one_everywhere(model, tokenizer):
    src = source(tokenizer, "Twenty-two cats.")
    greedy = trace_greedy(model, tokenizer, src, max_new_tokens=12)
    result = forced_pass(model, tokenizer, src, greedy.tgt_ids)
    assert all(p.rank == 1 for p in result.pieces[: len(greedy.tgt_ids)])
    # (a random model may stop at the length limit: the </s> appended after it is then not its choice)
    assert result.first_divergence == (None if greedy.finished else len(greedy.tgt_ids))
    wrong = list(greedy.tgt_ids)
    wrong[1] = result.pieces[1].token_id + 1 if result.pieces[1].token_id + 1 < tokenizer.vocab_size else 4
    bad = forced_pass(model, tokenizer, src, wrong)
    assert bad.first_divergence == 1 and bad.pieces[1].rank > 1


def test_a_branch_taking_the_greedy_piece_gives_the_greedy_translation(model, tokenizer):
    src = source(tokenizer, "I have fifty-nine apples.")
    greedy = trace_greedy(model, tokenizer, src)
    for step in (0, len(greedy.steps) // 2, len(greedy.steps) - 1):
        same = branch(model, tokenizer, src, step, greedy.tgt_ids[step])
        assert same.tgt_ids == greedy.tgt_ids and same.translation == greedy.translation
    other = greedy.steps[1].topk_ids[1]
    b = branch(model, tokenizer, src, 1, other)
    assert b.tgt_ids[:2] == (greedy.tgt_ids[0], other) and b.steps[1].token_id == other
    # after the branch the decoding is greedy: every later step takes the model's top choice
    assert all(s.token_id == s.topk_ids[0] for s in b.steps[2:])
    # its probabilities are those of a forward pass over the branch's own pieces
    logp, _ = full_log_probs(model, src.ids, b.tgt_ids)
    assert b.steps[1].prob == pytest.approx(math.exp(float(logp[1, other])), rel=1e-4)
    with pytest.raises(ValueError, match="no step"):
        branch(model, tokenizer, src, len(greedy.steps) + 5, other)


@pytest.mark.parametrize("text", SENTENCES)
def test_beam_one_is_greedy(model, tokenizer, text):
    src = source(tokenizer, text)
    greedy = greedy_decode(model, torch.tensor([src.ids]))[0]
    assert [i for i in beam_search(model, tokenizer, src, 1).best.ids if i != model.cfg.eos_id] == greedy


@pytest.mark.parametrize("beam", [2, 4])
def test_beam_scores_are_sums_of_log_probabilities(model, tokenizer, beam):
    src = source(tokenizer, "I have seven apples.")
    result = beam_search(model, tokenizer, src, beam, max_new_tokens=10)
    assert len(result.hypotheses) >= 1 and \
        result.best.normalized == max(h.normalized for h in result.hypotheses)
    for h in result.hypotheses:
        logp, _ = full_log_probs(model, src.ids, h.ids + [model.cfg.eos_id] if not h.finished else h.ids)
        assert h.score == pytest.approx(float(sum(logp[t, i] for t, i in enumerate(h.ids))), abs=1e-4)
        assert h.normalized == pytest.approx(h.score / length_penalty(len(h.ids), result.alpha))
        path = result.path(h.node)
        assert [result.nodes[n].token_id for n in path] == h.ids
        assert result.nodes[path[-1]].score == pytest.approx(h.score)
    kept = [n for n in result.nodes if n.status == "kept"]
    assert all(sum(1 for n in kept if n.step == s) <= beam for s in {n.step for n in kept})


def test_beam_never_scores_below_greedy(model, tokenizer):
    """The sum of log-probabilities of beam 4's hypotheses includes greedy's or beats it (α = 0)."""
    src = source(tokenizer, "Twenty-two cats.")
    g = beam_search(model, tokenizer, src, 1, alpha=0.0)
    b = beam_search(model, tokenizer, src, 4, alpha=0.0)
    if g.best.finished and b.best.finished:
        assert b.best.score >= g.best.score - 1e-5


# ------------------------------------------------------------------ the bundled model, through the Translator
@pytest.fixture(scope="module")
def translator(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu")


def test_translator_steering_on_the_bundled_model(translator):
    en = "The cat is sleeping on the sofa."
    greedy = translator.trace(en)
    forced = translator.forced(en, greedy.translation)
    assert all(p.rank == 1 for p in forced.pieces) and forced.first_divergence is None
    assert translator.what_if(en, 2, greedy.steps[1].piece).translation == greedy.translation
    assert translator.beam(en, 1).translation == greedy.translation


@pytest.mark.parametrize("call, message", [
    (lambda tr: tr.forced("The cat.", ""), "Type a French sentence"),
    (lambda tr: tr.forced("The cat.", "   \n"), "Type a French sentence"),
    (lambda tr: tr.forced("The cat.", "le chat " * 100), "limit"),
    (lambda tr: tr.forced("The cat.", "x" * 1001), "limit"),
    (lambda tr: tr.what_if("The cat.", 99, "▁chat"), "no step 99"),
    (lambda tr: tr.what_if("The cat.", 0, "▁chat"), "whole number from 1 to"),
    (lambda tr: tr.what_if("The cat.", 1, "qqzzxx"), "not a piece"),
    (lambda tr: tr.what_if("The cat.", 1, ""), "not a piece"),
    (lambda tr: tr.what_if("", 1, "▁Le"), "nothing to translate"),
    (lambda tr: tr.beam("The cat.", 0), "from 1 to"),
    (lambda tr: tr.beam("The cat.", 99), "from 1 to"),
])
def test_bad_input_gives_a_clear_message(translator, call, message):
    with pytest.raises(ValueError, match=message):
        call(translator)


def test_cli_beam_one_equals_batched_greedy(translator, capsys, monkeypatch):
    import io

    from transformer.cli import translate
    lines = ["The cat is sleeping on the sofa.", "Where is the nearest train station?", "Hello.",
             "We will meet tomorrow morning in front of the museum."]
    outs = {}
    for beam in (1, 2):
        monkeypatch.setattr("sys.stdin", io.StringIO("\n".join(lines) + "\n"))
        assert translate.main(["--beam", str(beam)]) == 0
        outs[beam] = capsys.readouterr().out.splitlines()
    assert outs[1] == translator.translate(lines)
    assert translate.translate_lines(translator, lines, 1) == translator.translate_beam(lines, 1)
    assert len(outs[2]) == len(lines)


# ------------------------------------------------------------------ the pictures of steering
def validated(fig):
    import plotly.graph_objects as go
    return go.Figure(fig.to_dict())   # Plotly's own validation (the app's fast path skips it)


def test_steering_results_and_figures_import_neither_torch_nor_gradio():
    import subprocess
    import sys
    from pathlib import Path
    code = ("import sys\nimport transformer.steering, transformer.viz.steering\n"
            "print(sorted(m for m in ('torch', 'gradio') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], cwd=Path(__file__).resolve().parent.parent,
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"


def test_every_view_draws_the_forced_pass_a_branch_and_the_beam_tree(model, tokenizer):
    from transformer.viz import steering as sv
    from transformer.viz import views
    src = source(tokenizer, "I have seven apples.")
    forced = forced_pass(model, tokenizer, src, tokenizer.encode("J'ai sept pommes.") + [3])
    greedy = trace_greedy(model, tokenizer, src, max_new_tokens=8)
    other = branch(model, tokenizer, src, 1, greedy.steps[1].topk_ids[2])
    lk = views.Look(dark=True, large=True)
    for trace in (forced.trace, other):
        figs = list(views.step_view(trace, 2, 1, "mean over heads", lk)[1:])
        for kind in ("encoder", "decoder", "cross"):
            figs += [views.explorer_figure(trace, kind, 1, "2", "head", True, lk),
                     views.grid_figure(trace, kind, True, lk), views.summary_view(trace, kind, lk)[0],
                     views.inside_view(trace, kind, 1, "1", 2, False, lk)[0]]
        for f in figs:
            validated(f)
    # the step view highlights the piece the trace took, not the model's top choice
    topk = views.step_view(other, 2, 1, "mean over heads", lk)[1]
    colours = topk.data[0].marker.color
    assert colours[2] == "#E69F00" and colours[0] != "#E69F00"
    fp = forced.pieces
    bars = sv.forced_figure([p.piece for p in fp], [p.probability for p in fp], [p.rank for p in fp],
                            [p.top_piece for p in fp], "t", True, 19)
    validated(bars)
    np.testing.assert_allclose(np.asarray(bars.data[0].y, float), [p.probability for p in fp], atol=1e-4)
    import dataclasses
    marked = dataclasses.replace(forced, french="<i>x</i>",
                                 pieces=[dataclasses.replace(fp[0], piece="<i>")] + fp[1:])
    html_out = sv.forced_html(marked, "<script>")
    assert "<i>x" not in html_out and "<script>" not in html_out and "&lt;i&gt;" in html_out
    beam = beam_search(model, tokenizer, src, 3, max_new_tokens=6)
    tree = validated(sv.beam_tree_figure(beam, False, 14))
    n_markers = sum(len(t.x) for t in tree.data if t.mode == "markers+text") - 1   # minus the <s> root
    assert n_markers == len(beam.nodes)
    assert sv.beam_html(beam).count("<tr>") == len(beam.hypotheses) + 1
    assert "This branch" in sv.branch_html(greedy, other, 2)
