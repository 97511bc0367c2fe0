"""Train the Transformer: ``python -m transformer.cli.train [options]`` (see --help).

Trains the SentencePiece tokenizer first if the output folder has none, then the model:
length-bucketed batches by token count, label smoothing, Adam with warmup, gradient
clipping, bf16 autocast on CPUs that support it and AMP on CUDA, validation loss and dev
BLEU at intervals, best-checkpoint selection on dev, checkpoint averaging, resumable
training state, a CSV log and a loss-curve plot, and a replay of how attention learned.
Runs unchanged under ``torchrun`` (DistributedDataParallel over GPUs, or gloo over CPUs).

Reading order: ``lr_at`` (the schedule), ``train_step`` (one optimisation step), ``train_loop``, then
``main``. What a run is and keeps (``TrainState``, ``start_run``, checkpoints) is in ``run.py``; what it
measures and records (dev BLEU, the log, the replay, averaging) in ``evaluation.py``.
"""
from __future__ import annotations

import argparse
import json
import math
import time
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
import torch.nn.functional as F
from tqdm import tqdm

from ..config import MAX_SOURCE_PIECES, PAD_ID, ModelConfig
from ..io.checkpoint import PIECE_COUNTS_FILE, REPLAY_FILE, RUN_CONFIG_FILE, SCHEDULE_FILE
from ..replay import load_replay, replay_steps
from .augment import AugmentConfig
from .budget import Deadline, estimate_moments, refit, share_budget
from .data import SHARED_DATA, ParallelData
from .evaluation import (LOG_EVERY, add_replay_point, average_weights, evaluate_dev, log_row, read_log,
                         run_eval)
from .run import (MODEL_FIELDS, Run, TrainState, continue_training_state, continued_checkpoint,
                  load_training_state, save_training_state, start_run, write_checkpoint)

DEFAULT_TRAIN = [str(SHARED_DATA / "tatoeba-eng-fra" / "train.tsv.gz"),
                 str(SHARED_DATA / "multi30k" / "train")]
DEFAULT_DEV = [str(SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz"), str(SHARED_DATA / "multi30k" / "val")]


# --- command line ----------------------------------------------------------------------------------
def add_model_options(p: argparse.ArgumentParser) -> None:
    """One option per size field of ModelConfig, with the field's own help text."""
    m = p.add_argument_group("model (the fields of ModelConfig; ignored with --init-from)")
    defaults = ModelConfig()
    for f in fields(ModelConfig):
        if f.name not in MODEL_FIELDS:
            continue
        default, flag = getattr(defaults, f.name), "--" + f.name.replace("_", "-")
        if isinstance(default, bool):
            m.add_argument(flag, action=argparse.BooleanOptionalAction, default=default,
                           help=f.metadata.get("help"))
        else:
            m.add_argument(flag, type=type(default), default=default, help=f.metadata.get("help"),
                           choices=f.metadata.get("choices"))


def add_augment_options(d) -> None:
    """The generated pairs (training/augment.py): whether, from what, how many of each kind, how often."""
    d.add_argument("--augment", action="store_true",
                   help="add generated pairs: other names and places, numbers, dates, times, prices, "
                        "and multi-sentence concatenations (transformer/training/augment.py)")
    d.add_argument("--augment-from", nargs="+", default=None, metavar="CORPUS",
                   help="with --augment: the corpora the generated pairs are made from (default: every "
                        "--train corpus; name them as in --train, weights ignored)")
    d.add_argument("--name-copies", type=int, default=AugmentConfig.name_copies,
                   help="with --augment: copies of each pair naming Tom/Mary/John, with other people")
    d.add_argument("--number-copies", type=int, default=AugmentConfig.number_copies,
                   help="with --augment: copies of each pair holding a number, with other numbers")
    d.add_argument("--templates", type=int, default=AugmentConfig.templates,
                   help="with --augment: pairs made from the frames of dates, times, prices and counts")
    d.add_argument("--coreference", type=int, default=AugmentConfig.coreference,
                   help="with --augment: generated pairs 'The dog didn't cross the road because it was too "
                        "wide / tired.' whose French pronoun follows what 'it' is (training/coreference.py)")
    d.add_argument("--large-numbers", type=int, default=AugmentConfig.large_numbers,
                   help="with --augment: pairs with counts of 1,000 or more, '100,000' in English and '100 "
                        "000' in French (from the frames and from corpus pairs holding a number)")
    d.add_argument("--ongoing", type=int, default=AugmentConfig.ongoing,
                   help="with --augment: pairs 'She has been learning French for three years.' / "
                        "'Elle apprend le français depuis trois ans.' and contrasts (ongoing.py)")
    d.add_argument("--augment-weight", type=float, default=1.0,
                   help="with --augment: how often the generated pairs come per epoch, as a corpus's @W")
    d.add_argument("--concatenations", type=int, default=AugmentConfig.concatenations,
                   help="with --augment: multi-sentence pairs made by joining pairs")
    d.add_argument("--concat-sizes", type=int, nargs="+", default=list(AugmentConfig.concat_sizes),
                   help="with --augment: how many pairs each concatenation joins, drawn from these "
                        "(repeat a size to draw it more often)")


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--train", nargs="+", default=DEFAULT_TRAIN,
                   help="training corpora: FILE.tsv[.gz] or PREFIX (PREFIX.en[.gz] + PREFIX.fr[.gz]); suffix "
                        "@W weights a corpus (@2: twice per epoch; @0.3: a fresh 30 %% of it each epoch)")
    d.add_argument("--dev", nargs="+", default=DEFAULT_DEV,
                   help="dev corpora for validation and model selection")
    add_augment_options(d)
    d.add_argument("--reverse", action="store_true",
                   help="train French→English on the same corpora (every pair turned round): the model of "
                        "back-translation (python -m transformer.cli.backtranslate)")
    d.add_argument("--out", default="runs/en-fr", help="output folder (checkpoints, logs, training state)")
    d.add_argument("--vocab-size", type=int, default=ModelConfig.vocab_size)
    d.add_argument("--max-pieces", type=int, default=MAX_SOURCE_PIECES,
                   help="drop training pairs longer than this (pieces)")
    add_model_options(p)
    add_optimization_options(p.add_argument_group("optimization"))
    add_evaluation_options(p.add_argument_group("evaluation, checkpoints, pausing"))
    args = p.parse_args(argv)
    if args.continue_from and (args.init_from or args.resume or args.new_tokenizer):
        p.error("--continue-from goes on from a run's own state: leave out --init-from, --resume and "
                "--new-tokenizer")
    if args.continue_from:
        continued_checkpoint(args.continue_from)      # a run or a checkpoint with its schedule, else an error
    return args


def add_optimization_options(o) -> None:
    """The batches, the learning rate and its schedule, the loss, the device, the seed."""
    o.add_argument("--max-tokens", type=int, default=6000,
                   help="padded tokens per side per batch (per process)")
    o.add_argument("--max-steps", type=int, default=6000)
    o.add_argument("--max-minutes", type=float, default=0,
                   help="stop after this much training time (0 = no limit); the cosine schedule then follows "
                        "whichever of steps and minutes runs out first")
    o.add_argument("--lr", type=float, default=1e-3, help="peak learning rate")
    o.add_argument("--warmup", type=int, default=800)
    o.add_argument("--schedule", choices=["cosine", "inverse_sqrt"], default="cosine",
                   help="after warmup: cosine decay to 1%% of peak at --max-steps (best for a fixed budget), "
                        "or the paper's inverse square root")
    o.add_argument("--label-smoothing", type=float, default=0.1)
    o.add_argument("--clip", type=float, default=1.0)
    o.add_argument("--amp", choices=["auto", "bf16", "fp16", "none"], default="auto")
    o.add_argument("--device", default="auto")
    o.add_argument("--threads", type=int, default=0, help="CPU threads (0 = all cores)")
    o.add_argument("--seed", type=int, default=1)


def add_evaluation_options(e) -> None:
    """Validation, checkpoints and averaging, pausing and resuming, and where a further cycle starts from."""
    e.add_argument("--eval-every", type=int, default=500, help="validate every N steps")
    e.add_argument("--bleu-sentences", type=int, default=800,
                   help="dev sentences per corpus for dev BLEU (0 = all)")
    e.add_argument("--save-every-min", type=float, default=5.0,
                   help="write resumable training state every N minutes")
    e.add_argument("--average-last", type=int, default=5,
                   help="try averaging the last N evaluated checkpoints")
    e.add_argument("--resume", action="store_true", help="continue from OUT/train_state.pt, exactly")
    e.add_argument("--session-minutes", type=float, default=0,
                   help="pause this invocation after N minutes of training (state saved; continue with "
                        "--resume)")
    e.add_argument("--session-steps", type=int, default=0,
                   help="pause this invocation after N steps (state saved; continue with --resume)")
    e.add_argument("--init-from", default=None, metavar="CHECKPOINT",
                   help="start from this checkpoint folder's weights, config and tokenizer (a new "
                        "learning-rate schedule and optimizer: a further training cycle); the model options "
                        "are ignored")
    e.add_argument("--continue-from", default=None, metavar="RUN",
                   help="a further cycle that goes on from the run folder RUN's train_state.pt (or a "
                        "checkpoint folder's schedule.json, its moments rebuilt): its weights, "
                        "optimizer moments, step, tokens and training time, so the learning-rate schedule "
                        "goes on where RUN left it (no fresh warm-up), on this run's data; the model options "
                        "are ignored")
    e.add_argument("--moment-steps", type=int, default=200,
                   help="with --continue-from a checkpoint folder (no train_state.pt): batches that "
                        "rebuild Adam's moments at a learning rate of 0 before the schedule goes on "
                        "(training/budget.py)")
    e.add_argument("--end-by", type=float, default=0, metavar="SECONDS",
                   help="end this invocation, its last evaluation and checkpoint average included, "
                        "within SECONDS of wall-clock time from its start: the schedule's --max-minutes "
                        "shrinks to fit after each evaluation (a GPU call's deadline)")
    e.add_argument("--new-tokenizer", action="store_true",
                   help="with --init-from: train a new SentencePiece vocabulary (--vocab-size) on this run's "
                        "data and carry the embeddings over to it (training/vocab_transfer.py)")


def lr_at(step: int, args, minutes: float = 0.0) -> float:
    """Linear warmup, then cosine decay to 1 % of the peak (or the paper's inverse square root).
    With --max-minutes the cosine follows whichever of steps and minutes runs out first."""
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    if args.schedule == "inverse_sqrt":
        return args.lr * math.sqrt(args.warmup / (step + 1))
    progress = min(1.0, (step - args.warmup) / max(1, args.max_steps - args.warmup))
    if args.max_minutes:
        progress = max(progress, min(1.0, minutes / args.max_minutes))
    return args.lr * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * progress)))


def finished(state: TrainState, args) -> bool:
    return state.step >= args.max_steps or bool(args.max_minutes and state.minutes >= args.max_minutes)


def paused(state: TrainState, args, start: TrainState) -> bool:
    """This invocation's budget (--session-steps / --session-minutes) is spent."""
    return bool((args.session_steps and state.step - start.step >= args.session_steps)
                or (args.session_minutes and state.minutes - start.minutes >= args.session_minutes))


def epoch_batches(data: ParallelData, args, epoch: int, rank: int, world: int) -> list[np.ndarray]:
    """This process's share of an epoch's batches, in an order fixed by the seed and the epoch."""
    batches = data.batches(args.max_tokens, seed=args.seed * 1000 + epoch)
    return batches[: len(batches) // world * world][rank::world]


def train_step(run: Run, state: TrainState, batch: np.ndarray, lr: float | None = None) -> float:
    """One step of the paper's recipe: forward, label-smoothed cross-entropy, backward, clip, Adam (at the
    schedule's learning rate unless `lr` is given)."""
    src, tin, tout = run.train.collate(batch, run.device)
    lr = lr_at(state.step, run.args, state.minutes) if lr is None else lr
    for g in run.opt.param_groups:
        g["lr"] = lr
    with torch.autocast(run.device.type, dtype=run.amp_dtype, enabled=run.amp_dtype is not None):
        logits = run.ddp_model(src, tin).logits                                  # (B, T, vocab)
    loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tout.reshape(-1),
                           ignore_index=PAD_ID, label_smoothing=run.args.label_smoothing)
    run.opt.zero_grad(set_to_none=True)
    run.scaler.scale(loss).backward()
    run.scaler.unscale_(run.opt)
    torch.nn.utils.clip_grad_norm_(run.model.parameters(), run.args.clip)
    run.scaler.step(run.opt)
    run.scaler.update()
    state.step += 1
    state.tokens += int((src != PAD_ID).sum() + (tout != PAD_ID).sum()) * run.world
    return loss.item()


def stop_now(run: Run, state: TrainState, start: TrainState) -> bool:
    done = finished(state, run.args) or paused(state, run.args, start)
    if run.world > 1:   # every process must stop at the same step, or the next all-reduce hangs
        flag = torch.tensor([int(done)], device=run.device)
        dist.all_reduce(flag, op=dist.ReduceOp.MAX)
        done = bool(flag.item())
    return done


def train_loop(run: Run, state: TrainState, deadline: Deadline | None = None) -> None:
    """Steps until the run is finished or this invocation's budget is spent (with a `deadline`, the
    schedule's budget shrinks after each evaluation so that the run and its finish end in time)."""
    start, replay_at = replace(state), set(replay_steps())
    if deadline:
        deadline.loop_started, deadline.train_seconds_at_loop = time.time(), state.train_seconds
        refit(run, state, deadline)
        share_budget(run)
    bar = tqdm(total=run.args.max_steps, initial=state.step, disable=(not run.main_proc) or None, unit="step",
               dynamic_ncols=True, smoothing=0.05)
    losses, t_window, tok_window, last_save = [], time.time(), state.tokens, time.time()
    epoch, batches = -1, []
    while not stop_now(run, state, start):
        if epoch != state.epoch:
            epoch, batches = state.epoch, epoch_batches(run.train, run.args, state.epoch, run.rank, run.world)
        if state.batch >= len(batches):
            state.epoch, state.batch = state.epoch + 1, 0
            continue
        t0 = time.time()
        losses.append(train_step(run, state, batches[state.batch]))
        state.batch += 1
        state.train_seconds += time.time() - t0
        bar.update(1)
        if state.step in replay_at:
            add_replay_point(run, state, float(np.mean(losses)))
        if state.step % LOG_EVERY == 0:
            tps = (state.tokens - tok_window) / max(1e-6, time.time() - t_window)
            log_row(run, state, lr=f"{lr_at(state.step, run.args, state.minutes):.3e}",
                    train_loss=round(float(np.mean(losses)), 4), tokens_per_s=round(tps))
            bar.set_postfix(loss=f"{np.mean(losses):.3f}", tok_s=f"{tps:,.0f}", ep=state.epoch)
            losses, t_window, tok_window = [], time.time(), state.tokens
        if state.step % run.args.eval_every == 0:
            if run.main_proc:
                t_eval = time.time()
                run_eval(run, state)
                if deadline:
                    deadline.eval_seconds = max(deadline.eval_seconds, time.time() - t_eval)
                    refit(run, state, deadline)
            if deadline:
                share_budget(run)
            t_window, tok_window = time.time(), state.tokens   # evaluation time is not training time
        if time.time() - last_save > run.args.save_every_min * 60:
            save_training_state(run, state)
            last_save = time.time()
    bar.close()
    if losses:
        run.recent_loss = float(np.mean(losses))


def finish(run: Run, state: TrainState) -> None:
    """Last evaluation and replay point, then try the average of the last checkpoints."""
    if not run.replay.points or run.replay.points[-1].step != state.step:
        add_replay_point(run, state, run.recent_loss)
    if not state.evals or state.evals[-1][0] != state.step:
        run_eval(run, state, label="final step")
    save_training_state(run, state)
    cks = sorted((run.out / "ckpts").glob("step*/model.safetensors"))[-run.args.average_last:]
    if len(cks) < 2:
        return
    keep = {k: v.clone() for k, v in run.model.state_dict().items()}
    run.model.load_state_dict(average_weights(cks))
    res = evaluate_dev(run.model, run.dev_sets, run.tok, run.device, run.amp_dtype, run.args.bleu_sentences,
                       run.args.max_tokens)
    run.log(f"average of last {len(cks)} checkpoints: {json.dumps(res)}")
    log_row(run, state, val_loss=res["val_loss"], dev_bleu=res["dev_bleu"],
            extra=json.dumps({"averaged": [c.parent.name for c in cks], **res}))
    if res["dev_bleu"] > state.best:
        state.best, state.best_step = res["dev_bleu"], state.step
        write_checkpoint(run, "best", metadata={"step": state.step, "averaged": len(cks), **res}, state=state)
        run.log("the averaged model is the best on dev: saved to best/")
    run.model.load_state_dict(keep)


def copy_extras(run: Run) -> None:
    """best/ gets the run's final replay, piece counts, log and loss curve (export copies them on)."""
    if (run.out / "best").is_dir():
        for name in (REPLAY_FILE, PIECE_COUNTS_FILE, RUN_CONFIG_FILE, "log.csv", "loss_curve.png"):
            if (run.out / name).is_file():
                (run.out / "best" / name).write_bytes((run.out / name).read_bytes())


SCHEDULE_OPTIONS = ("lr", "warmup", "schedule", "max_steps", "max_minutes")


def check_schedule(run: Run, state: TrainState) -> None:
    """--continue-from: stop if the run had already ended its schedule; say so if this run's schedule options
    differ from it (the learning rate then jumps where the two cosines differ)."""
    if finished(state, run.args):
        raise SystemExit(f"error: {run.args.continue_from} already ended its schedule (step {state.step}, "
                         f"{state.minutes:.1f} minutes); raise --max-steps or --max-minutes to go on")
    saved = Path(run.args.continue_from) / SCHEDULE_FILE       # a checkpoint's: the schedule as it ran
    if not saved.is_file():
        saved = Path(run.args.continue_from) / RUN_CONFIG_FILE
    if saved.is_file():
        before = json.loads(saved.read_text(encoding="utf-8"))
        changed = [f"--{k.replace('_', '-')} {before.get(k)} -> {getattr(run.args, k)}"
                   for k in SCHEDULE_OPTIONS
                   if k in before and before[k] != getattr(run.args, k)]
        if changed:
            run.log("note: the schedule differs from the run this one goes on from (" + ", ".join(changed)
                    + "): "
                    f"the learning rate at step {state.step} is now "
                    f"{lr_at(state.step, run.args, state.minutes):.2e}")


MOMENT_EPOCHS = 1_000_000     # the batch orders that rebuild Adam's moments: far from any training epoch


def rebuild_moments(run: Run, state: TrainState) -> None:
    """--continue-from a checkpoint: Adam's moments from --moment-steps batches (epochs of their own order,
    as many as needed) at a learning rate of 0."""
    if not len(run.train):
        raise SystemExit("error: no training pairs to rebuild Adam's moments from")
    batches, epoch = [], MOMENT_EPOCHS          # orders of their own (seeds never negative)
    while len(batches) < run.args.moment_steps:
        batches, epoch = batches + epoch_batches(run.train, run.args, epoch, run.rank, run.world), epoch + 1
    loss = estimate_moments(run, state, batches, run.args.moment_steps, train_step)
    run.log(f"Adam's moments rebuilt from {run.args.moment_steps} batches at a learning rate of 0 (mean loss "
            f"{loss:.3f}); the schedule goes on at {lr_at(state.step, run.args, state.minutes):.2e}")


def main(argv=None) -> int:
    args = parse_args(argv)
    deadline = Deadline(args.end_by) if args.end_by else None    # counted from here: data loading too
    run = start_run(args)
    state = load_training_state(run) if args.resume else \
        continue_training_state(run, args.continue_from) if args.continue_from else TrainState()
    if args.resume:
        run.rows = read_log(run.out / "log.csv", state.step)
        if (run.out / REPLAY_FILE).exists():
            run.replay = load_replay(run.out / REPLAY_FILE)
            run.replay.points = [p for p in run.replay.points if p.step <= state.step]
    (run.out / "ckpts").mkdir(exist_ok=True)
    run.model.train()
    if state.step == 0:
        add_replay_point(run, state, float("nan"))
    if args.continue_from:
        check_schedule(run, state)
    if run.rebuild_moments and args.moment_steps:
        rebuild_moments(run, state)
    try:
        train_loop(run, state, deadline)
    except KeyboardInterrupt:      # Ctrl-C, or a deadline's SIGINT: keep what was trained
        save_training_state(run, state)
        run.log(f"interrupted at step {state.step}: state saved in {run.out}; continue with --resume")
        return 130
    if not finished(state, args):
        save_training_state(run, state)
        run.log(f"paused at step {state.step}; continue with --resume")
    elif run.main_proc:
        finish(run, state)
        copy_extras(run)
        run.log(f"done: best dev BLEU {state.best} at step {state.best_step}; checkpoint in "
                f"{run.out / 'best'}")
    if run.world > 1:   # every process tears the group down together: one that leaves early can abort in gloo
        dist.barrier()
        dist.destroy_process_group()
    return 0
