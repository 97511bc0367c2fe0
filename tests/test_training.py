"""Training end to end on a synthetic task: it must overfit to exact outputs, resume, and load."""
from __future__ import annotations

import csv
import json
import subprocess
import sys

import pytest
import torch

from conftest import ROOT, synthetic_pairs
from transformer.io.checkpoint import load_checkpoint
from transformer.serving.translator import Translator


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("train")
    pairs = synthetic_pairs(40)
    tsv = tmp / "numbers.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    out = tmp / "run"
    from transformer.training.train import main
    args = ["--train", str(tsv), "--dev", str(tsv), "--out", str(out), "--vocab-size", "100",
            "--d-model", "64", "--n-heads", "4", "--n-encoder-layers", "2", "--n-decoder-layers", "2",
            "--d-ff", "128", "--dropout", "0.0", "--label-smoothing", "0.0", "--max-tokens", "600", "--lr",
            "3e-3", "--warmup", "30", "--max-steps", "350", "--eval-every", "350", "--bleu-sentences", "0",
            "--amp", "none", "--seed", "3"]
    assert main(args) == 0
    return dict(out=out, pairs=pairs, tsv=tsv, args=args)


def test_overfits_to_exact_outputs(trained):
    tr = Translator(trained["out"] / "best", "cpu")
    src = [a for a, _ in trained["pairs"]]
    hyps = tr.translate(src)
    exact = sum(h == b for h, (_, b) in zip(hyps, trained["pairs"]))
    assert exact >= 0.95 * len(src), list(zip(hyps, trained["pairs"]))[:5]


def test_log_shows_falling_loss_and_files(trained):
    out = trained["out"]
    rows = list(csv.DictReader(open(out / "log.csv")))
    losses = [float(r["train_loss"]) for r in rows if r["train_loss"]]
    assert losses[-1] < 0.3 * losses[0]
    for f in ("train_state.pt", "best/model.safetensors", "best/config.json", "best/tokenizer.model",
              "last/model.safetensors", "tokenizer.model"):
        assert (out / f).is_file(), f


def test_resume_continues_from_state(trained):
    from transformer.training.train import main
    args = list(trained["args"])
    args[args.index("--max-steps") + 1] = "360"
    assert main(args + ["--resume"]) == 0
    rows = list(csv.DictReader(open(trained["out"] / "log.csv")))
    assert int(rows[-1]["step"]) == 360
    assert sum(1 for r in rows if r["train_loss"]) == 3   # steps 100, 200, 300 kept; no restart from 0


def test_init_from_starts_a_new_cycle_from_a_checkpoint(trained, tmp_path):
    """--init-from: the checkpoint's config, weights and tokenizer, a fresh schedule from step 0."""
    from transformer.training.train import main
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(tmp_path / "cycle2")
    args[args.index("--max-steps") + 1] = "20"
    args[args.index("--eval-every") + 1] = "20"
    args[args.index("--d-model") + 1] = "32"        # ignored: the checkpoint's sizes are kept
    assert main(args + ["--init-from", str(trained["out"] / "best")]) == 0
    assert (tmp_path / "cycle2" / "tokenizer.model").read_bytes() == \
        (trained["out"] / "tokenizer.model").read_bytes()
    start, _ = load_checkpoint(trained["out"] / "best")
    model, _ = load_checkpoint(tmp_path / "cycle2" / "last")
    assert model.cfg == start.cfg
    rows = list(csv.DictReader(open(tmp_path / "cycle2" / "log.csv")))
    assert int(rows[-1]["step"]) == 20
    # it starts where the first cycle ended: after 20 more steps it still translates the task
    tr = Translator(tmp_path / "cycle2" / "best", "cpu")
    src = [a for a, _ in trained["pairs"]]
    exact = sum(h == b for h, (_, b) in zip(tr.translate(src), trained["pairs"]))
    assert exact >= 0.9 * len(src)


def test_evaluate_and_translate_cli_load_the_checkpoint(trained):
    ck = str(trained["out"] / "best")
    r = subprocess.run([sys.executable, "-m", "transformer.cli.evaluate", "--data", str(trained["tsv"]),
                        "--checkpoint", ck, "--device", "cpu", "--hyp-out", str(trained["out"] / "hyp.txt")],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    last = json.loads(r.stdout.strip().splitlines()[-1])
    assert last["bleu"] > 90 and last["chrf"] > 90 and "nrefs:1" in last["bleu_signature"]
    r = subprocess.run([sys.executable, "-m", "transformer.cli.translate", "--checkpoint", ck,
                        "I have seven apples."],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0 and r.stdout.strip().splitlines()[-1] == "J'ai sept pommes.", r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "transformer.cli.translate", "--checkpoint", ck],
                       input="Three cats.\nI have one apples.\n\nTwelve cats.\n", capture_output=True,
                       text=True, cwd=ROOT, timeout=120)
    assert r.stdout.splitlines() == ["Trois chats.", "J'ai un pommes.", "", "Douze chats."], \
        r.stdout + r.stderr


def test_loaded_model_runs_fp32(trained):
    model, tok = load_checkpoint(trained["out"] / "best")
    assert all(p.dtype.is_floating_point and p.dtype.itemsize == 4 for p in model.parameters())
    assert tok.vocab_size == model.cfg.vocab_size


def test_torchrun_ddp_on_cpu(tmp_path):
    """Two processes under torchrun (gloo, CPU): DistributedDataParallel with no code change."""
    pairs = synthetic_pairs(20)
    tsv = tmp_path / "numbers.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    out = tmp_path / "ddp"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2",
           "-m", "transformer.cli.train", "--train", str(tsv), "--dev", str(tsv), "--out", str(out),
           "--vocab-size", "80", "--d-model", "32", "--n-heads", "4", "--n-encoder-layers", "1",
           "--n-decoder-layers", "1", "--d-ff", "64", "--max-tokens", "300", "--max-steps", "12",
           "--eval-every", "12", "--bleu-sentences", "10", "--amp", "none", "--threads", "1"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "world size 2" in r.stdout + r.stderr
    load_checkpoint(out / "best")
    rows = list(csv.DictReader(open(out / "log.csv")))
    assert int(rows[-1]["step"]) == 12


def test_paused_and_resumed_run_gives_the_same_weights_as_one_that_did_not_stop(tmp_path):
    """--session-steps pauses a run; --resume restores weights, optimizer, every random state and the data
    order, so the result is bit for bit the run that never stopped (dropout on, so the RNG matters)."""
    from safetensors.torch import load_file

    from transformer.training.train import main
    pairs = synthetic_pairs(30)
    tsv = tmp_path / "numbers.tsv"
    tsv.write_text("".join(f"{a}\t{b}\n" for a, b in pairs), encoding="utf-8")
    common = ["--train", str(tsv), "--dev", str(tsv), "--vocab-size", "80", "--d-model", "32", "--n-heads",
              "4", "--n-encoder-layers", "1", "--n-decoder-layers", "1", "--d-ff", "64", "--dropout", "0.2",
              "--max-tokens", "200", "--max-steps", "40", "--warmup", "5", "--eval-every", "15",
              "--bleu-sentences", "5", "--amp", "none", "--threads", "1", "--seed", "4"]
    assert main(common + ["--out", str(tmp_path / "straight")]) == 0
    assert main(common + ["--out", str(tmp_path / "paused"), "--session-steps", "23"]) == 0
    state = torch.load(tmp_path / "paused" / "train_state.pt", weights_only=True)
    assert json.loads(state["state"])["step"] == 23            # it really stopped half way, inside an epoch
    assert main(common + ["--out", str(tmp_path / "paused"), "--resume"]) == 0
    a = load_file(str(tmp_path / "straight" / "last" / "model.safetensors"))
    b = load_file(str(tmp_path / "paused" / "last" / "model.safetensors"))
    assert a.keys() == b.keys()
    assert all(torch.equal(a[k], b[k]) for k in a)
    # and the difference is not vacuous: a run with another seed ends elsewhere
    assert main(common[:-1] + ["5", "--out", str(tmp_path / "other")]) == 0
    c = load_file(str(tmp_path / "other" / "last" / "model.safetensors"))
    assert not all(torch.equal(a[k], c[k]) for k in a)


def test_training_writes_the_replay_and_piece_counts(trained):
    """replay.npz: the fixed examples at log-spaced steps, maps shaped by the model; piece_counts.json:
    one epoch's counts per side (target side = one BOS and one EOS per pair + the pieces)."""
    from transformer.replay import EXAMPLES, load_replay, replay_steps
    out = trained["out"]
    rep = load_replay(out / "best" / "replay.npz")
    # 350, or 360 after the resume test
    last_step = int(list(csv.DictReader(open(out / "log.csv")))[-1]["step"])
    steps = rep.steps()
    assert steps[0] == 0 and steps == sorted(set(steps)) and steps[-1] == last_step
    # every log-spaced point recorded
    assert set(replay_steps(until=last_step - 1)) <= set(steps)
    assert len(rep.points[0].records) == len(EXAMPLES)
    model, tok = load_checkpoint(out / "best")
    rec = rep.points[-1].records[0]
    L, H = model.cfg.n_encoder_layers, model.cfg.n_heads
    assert rec.maps["encoder"].shape == (L, H, len(rec.src_pieces), len(rec.src_pieces))
    assert rec.maps["cross"].shape[-2:] == (len(rec.tgt_out_pieces), len(rec.src_pieces))
    counts = json.loads((out / "piece_counts.json").read_text())
    assert len(counts["source"]) == tok.vocab_size == len(counts["target"])
    assert counts["target"][model.cfg.bos_id] == counts["pairs"] == counts["target"][model.cfg.eos_id]


def test_continue_from_goes_on_with_the_optimizer_and_the_schedule(trained, tmp_path):
    """--continue-from: another run's weights, optimizer moments, step, tokens and training time, on new data;
    the learning rate goes on from where the first run's schedule was (no fresh warm-up)."""
    from transformer.training.train import lr_at, main, parse_args
    first = tmp_path / "first"
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(first)
    args[args.index("--max-steps") + 1] = "60"
    args[args.index("--eval-every") + 1] = "60"
    assert main(args + ["--session-steps", "25"]) == 0          # paused at step 25 of 60: its state is saved
    before = torch.load(first / "train_state.pt", weights_only=True)
    assert json.loads(before["state"])["step"] == 25
    reversed_tsv = tmp_path / "more.tsv"                          # other data: the cycle's own
    reversed_tsv.write_text("".join(f"{a}\t{b}\n" for a, b in synthetic_pairs(12)), encoding="utf-8")
    second = tmp_path / "second"
    args2 = list(args)
    args2[args2.index("--out") + 1] = str(second)
    args2[args2.index("--train") + 1] = str(reversed_tsv)
    assert main(args2 + ["--continue-from", str(first)]) == 0
    rows = list(csv.DictReader(open(second / "log.csv")))
    steps = [int(r["step"]) for r in rows]
    assert steps[0] > 25 and steps[-1] == 60                    # it counted on from 25, not from 0
    parsed = parse_args(args2)
    after = torch.load(second / "train_state.pt", weights_only=True)
    assert before["optimizer"]["param_groups"][0]["lr"] == pytest.approx(lr_at(24, parsed))
    # the schedule went on
    assert after["optimizer"]["param_groups"][0]["lr"] == pytest.approx(lr_at(59, parsed))
    # the optimizer's moments came along: Adam counts the first run's 25 steps and the second's 35
    steps_seen = [s["step"] for s in after["optimizer"]["state"].values()]
    assert min(float(s) for s in steps_seen) == 60


def test_reverse_trains_french_to_english(trained, tmp_path):
    """--reverse turns every training and dev pair round: the model reads French and writes English."""
    from transformer.training.train import main
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(tmp_path / "fr-en")
    assert main(args + ["--reverse"]) == 0
    tr = Translator(tmp_path / "fr-en" / "best", "cpu")
    pairs = trained["pairs"]
    hyps = tr.translate([b for _, b in pairs])
    exact = sum(h == a for h, (a, _) in zip(hyps, pairs))
    assert exact >= 0.9 * len(pairs), list(zip(hyps, pairs))[:5]


def test_backtranslate_tags_the_machine_made_side(trained, tmp_path):
    """transformer.cli.backtranslate: each monolingual line becomes (⊽ + the model's translation, the line);
    a line whose translation disagrees with it (here: numbers written in digits) is left out."""
    from transformer.training.backtranslate import BT_TAG
    from transformer.training.data import read_corpus
    mono = tmp_path / "mono.txt"
    lines = [a for a, _ in trained["pairs"][:10]] + ["I have 12 apples."]
    mono.write_text("\n".join(lines) + "\n", encoding="utf-8")
    out = tmp_path / "bt.tsv.gz"
    r = subprocess.run([sys.executable, "-m", "transformer.cli.backtranslate", "--checkpoint",
                        str(trained["out"] / "best"), "--mono", str(mono), "--out", str(out), "--device",
                        "cpu"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 0, r.stderr
    got = read_corpus(str(out))
    expected = {a: b for a, b in trained["pairs"][:10]}
    assert [fr for _, fr in got] == lines[:10]                   # the digits line went: its output has no 12
    for en, fr in got:
        assert en == f"{BT_TAG} {expected[fr]}"
    assert json.loads(r.stdout.strip().splitlines()[-1])["pairs"] == 10


def test_an_interrupted_run_saves_its_state_and_a_finished_one_is_not_continued(
        trained, tmp_path, monkeypatch):
    """Ctrl-C or a deadline's SIGINT (tools/gpu_cycle.sh) ends a run with its state saved; --continue-from a
    run that already ended its schedule is refused (it would train nothing)."""
    from transformer.training import train as train_mod
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(tmp_path / "cut")
    real_step = train_mod.train_step

    def step_then_interrupt(run, state, batch):
        if state.step == 7:
            raise KeyboardInterrupt
        return real_step(run, state, batch)
    monkeypatch.setattr(train_mod, "train_step", step_then_interrupt)
    assert train_mod.main(args) == 130
    saved = torch.load(tmp_path / "cut" / "train_state.pt", weights_only=True)
    assert json.loads(saved["state"])["step"] == 7
    monkeypatch.undo()
    done = list(trained["args"])
    done[done.index("--out") + 1] = str(tmp_path / "again")
    with pytest.raises(SystemExit, match="already ended its schedule"):
        train_mod.main(done + ["--continue-from", str(trained["out"])])


def test_continue_from_a_checkpoint_rebuilds_the_moments(trained, tmp_path):
    """--continue-from a checkpoint folder (a model brought back from a GPU call: no train_state.pt): its
    weights and schedule.json place the schedule (no warm-up); Adam's moments are rebuilt from batches at a
    learning rate of 0, the weights unmoved."""
    from transformer.training import train as train_mod
    from transformer.training.budget import read_schedule
    first = tmp_path / "first"
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(first)
    args[args.index("--max-steps") + 1] = "180"
    args[args.index("--eval-every") + 1] = "180"
    assert train_mod.main(args + ["--session-steps", "160"]) == 0
    assert read_schedule(first / "last")["step"] == 160
    carried = torch.load(first / "train_state.pt", weights_only=True)["optimizer"]["state"]
    # the rebuilt moments, beside the carried ones (before any step of the second run)
    seen = {}
    real_loop = train_mod.train_loop

    def look_then_train(run, state, deadline=None):
        seen["state"] = {k: {n: t.clone() for n, t in v.items()}
                         for k, v in run.opt.state_dict()["state"].items()}
        seen["step"], seen["lr"] = state.step, train_mod.lr_at(state.step, run.args, state.minutes)
        seen["weights"] = {k: v.clone() for k, v in run.model.state_dict().items()}
        return real_loop(run, state, deadline)
    second = tmp_path / "second"
    args2 = list(args)
    args2[args2.index("--out") + 1] = str(second)
    train_mod.train_loop = look_then_train
    try:
        assert train_mod.main(args2 + ["--continue-from", str(first / "last"), "--moment-steps", "30"]) == 0
    finally:
        train_mod.train_loop = real_loop
    start, _ = load_checkpoint(first / "last")
    assert all(torch.equal(seen["weights"][k], v) for k, v in start.state_dict().items())   # unmoved
    assert seen["step"] == 160 and seen["lr"] < 3e-3 * 0.2          # the schedule went on: no warm-up
    rows = list(csv.DictReader(open(second / "log.csv")))
    assert int(rows[0]["step"]) > 160 and int(rows[-1]["step"]) == 180
    # every parameter's moments were filled (Adam counted the 30 batches), none from the carried state
    assert all(float(v["step"]) == 30 and bool((v["exp_avg_sq"] > 0).any()) for v in seen["state"].values())
    assert len(seen["state"]) == len(carried)
    with pytest.raises(SystemExit, match="neither train_state.pt"):
        out = args2.index("--out") + 1
        train_mod.main(args2[:out] + [str(tmp_path / "x")] + args2[out + 1:]
                       + ["--continue-from", str(tmp_path)])


def test_a_run_with_a_deadline_ends_in_time_with_its_average():
    """--end-by: the schedule's budget shrinks so that the run's training, the evaluations on the way and its
    finish (two evaluations and a margin) fit the wall time left; it is never raised."""
    from transformer.training.budget import fit_budget
    assert fit_budget(0, 1.0, wall_left=120, eval_seconds=10, train_share=0.5) == \
        pytest.approx(1 + 85 * 0.5 / 60)
    assert fit_budget(1.2, 1.0, wall_left=120, eval_seconds=10, train_share=0.5) == 1.2
    assert fit_budget(5.0, 2.0, wall_left=20, eval_seconds=10, train_share=0.9) == 2.0     # finish now
    assert fit_budget(0, 0.0, wall_left=-5, eval_seconds=0, train_share=1.0) > 0            # 0: no limit


def test_end_by_ends_the_run_by_itself_with_its_checkpoint_average(trained, tmp_path):
    """A run given --end-by and no other limit stops on its own (with max-steps of a million), runs its finish
    (the last step evaluated, the checkpoint average evaluated) and the cosine ends where the fitted budget
    ends. (On a loaded machine the setup can take most of the time: then fewer evaluations, same ending.)"""
    from transformer.training.train import main
    args = list(trained["args"])
    args[args.index("--out") + 1] = str(tmp_path / "timed")
    args[args.index("--max-steps") + 1] = "1000000"
    args[args.index("--eval-every") + 1] = "15"
    args[args.index("--warmup") + 1] = "3"
    assert main(args + ["--end-by", "30", "--average-last", "3"]) == 0
    rows = list(csv.DictReader(open(tmp_path / "timed" / "log.csv")))
    last = torch.load(tmp_path / "timed" / "train_state.pt", weights_only=True)
    state = json.loads(last["state"])
    assert 0 < state["step"] < 1_000_000 and state["evals"][-1][0] == state["step"]     # finish evaluated
    if len(state["evals"]) >= 2:
        assert any("averaged" in (r["extra"] or "") for r in rows)
    if state["step"] > 3:                                                    # past its warm-up
        assert last["optimizer"]["param_groups"][0]["lr"] < 3e-3 * 0.1      # decayed to its end
