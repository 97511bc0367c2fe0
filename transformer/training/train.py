"""Train the Transformer: ``python -m transformer.cli.train [options]`` (see --help).

Trains the SentencePiece tokenizer first if the output folder has none, then the model:
length-bucketed batches by token count, label smoothing, Adam with warmup, gradient
clipping, bf16 autocast on CPUs that support it and AMP on CUDA, validation loss and dev
BLEU at intervals, best-checkpoint selection on dev, checkpoint averaging, resumable
training state, a CSV log and a loss-curve plot, and a replay of how attention learned.
Runs unchanged under ``torchrun`` (DistributedDataParallel over GPUs, or gloo over CPUs).

Reading order: ``TrainState`` (what a run has done), ``lr_at`` (the schedule), ``train_step``
(one optimisation step), ``train_loop``, then ``main``.
"""
from __future__ import annotations

import argparse
import csv
import json
import math
import os
import random
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import sacrebleu
import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file
from tqdm import tqdm

from .augment import AugmentConfig, augment
from .vocab_transfer import transfer_embedding
from ..config import MAX_SOURCE_PIECES, PAD_ID, ModelConfig
from .data import SHARED_DATA, ParallelData, parse_spec, read_corpus
from ..io.checkpoint import (PIECE_COUNTS_FILE, REPLAY_FILE, RUN_CONFIG_FILE, TOKENIZER_FILE, load_checkpoint,
                             save_checkpoint)
from ..io.tokenizer import Tokenizer, train_tokenizer
from ..model.decoding import trace_greedy, translate_batch
from ..model.transformer import Transformer
from ..trace import Source
from ..replay import EXAMPLES, KINDS, Replay, ReplayPoint, ReplayRecord, load_replay, replay_steps, save_replay

DEFAULT_TRAIN = [str(SHARED_DATA / "tatoeba-eng-fra" / "train.tsv.gz"), str(SHARED_DATA / "multi30k" / "train")]
DEFAULT_DEV = [str(SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz"), str(SHARED_DATA / "multi30k" / "val")]
SIZE_FIELDS = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "dropout", "max_len")
STATE_FILE = "train_state.pt"
LOG_FIELDS = ["step", "epoch", "tokens", "lr", "train_loss", "val_loss", "dev_bleu", "extra", "tokens_per_s", "elapsed_min"]
LOG_EVERY = 100          # steps between training-loss rows in log.csv


# --- command line ----------------------------------------------------------------------------------
def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--train", nargs="+", default=DEFAULT_TRAIN,
                   help="training corpora: FILE.tsv[.gz] or PREFIX (PREFIX.en[.gz] + PREFIX.fr[.gz]); suffix @W "
                        "weights a corpus (@2: twice per epoch; @0.3: a fresh 30 %% of it each epoch)")
    d.add_argument("--dev", nargs="+", default=DEFAULT_DEV, help="dev corpora for validation and model selection")
    d.add_argument("--augment", action="store_true",
                   help="add generated pairs: other names and places, numbers, dates, times, prices, "
                        "and multi-sentence concatenations (transformer/training/augment.py)")
    d.add_argument("--augment-from", nargs="+", default=None, metavar="CORPUS",
                   help="with --augment: the corpora the generated pairs are made from (default: every --train "
                        "corpus; name them as in --train, weights ignored)")
    d.add_argument("--name-copies", type=int, default=AugmentConfig.name_copies,
                   help="with --augment: copies of each pair naming Tom/Mary/John, with other people")
    d.add_argument("--concatenations", type=int, default=AugmentConfig.concatenations,
                   help="with --augment: multi-sentence pairs made by joining pairs")
    d.add_argument("--concat-sizes", type=int, nargs="+", default=list(AugmentConfig.concat_sizes),
                   help="with --augment: how many pairs each concatenation joins, drawn from these "
                        "(repeat a size to draw it more often)")
    d.add_argument("--out", default="runs/en-fr", help="output folder (checkpoints, logs, training state)")
    d.add_argument("--vocab-size", type=int, default=ModelConfig.vocab_size)
    d.add_argument("--max-pieces", type=int, default=MAX_SOURCE_PIECES, help="drop training pairs longer than this (pieces)")
    m = p.add_argument_group("model (the fields of ModelConfig; ignored with --init-from)")
    defaults = ModelConfig()
    for f in fields(ModelConfig):
        if f.name in SIZE_FIELDS:
            m.add_argument("--" + f.name.replace("_", "-"), type=type(getattr(defaults, f.name)),
                           default=getattr(defaults, f.name), help=f.metadata.get("help"))
    o = p.add_argument_group("optimization")
    o.add_argument("--max-tokens", type=int, default=6000, help="padded tokens per side per batch (per process)")
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
    e = p.add_argument_group("evaluation, checkpoints, pausing")
    e.add_argument("--eval-every", type=int, default=500, help="validate every N steps")
    e.add_argument("--bleu-sentences", type=int, default=800, help="dev sentences per corpus for dev BLEU (0 = all)")
    e.add_argument("--save-every-min", type=float, default=5.0, help="write resumable training state every N minutes")
    e.add_argument("--average-last", type=int, default=5, help="try averaging the last N evaluated checkpoints")
    e.add_argument("--resume", action="store_true", help="continue from OUT/train_state.pt, exactly")
    e.add_argument("--session-minutes", type=float, default=0,
                   help="pause this invocation after N minutes of training (state saved; continue with --resume)")
    e.add_argument("--session-steps", type=int, default=0,
                   help="pause this invocation after N steps (state saved; continue with --resume)")
    e.add_argument("--init-from", default=None, metavar="CHECKPOINT",
                   help="start from this checkpoint folder's weights, config and tokenizer (a new learning-rate "
                        "schedule and optimizer: a further training cycle); the model options are ignored")
    e.add_argument("--new-tokenizer", action="store_true",
                   help="with --init-from: train a new SentencePiece vocabulary (--vocab-size) on this run's data "
                        "and carry the embeddings over to it (training/vocab_transfer.py)")
    return p.parse_args(argv)


# --- state and pure functions -------------------------------------------------------------------
@dataclass
class TrainState:
    """Everything a run has done that is not a tensor; saved with the weights for --resume."""

    step: int = 0
    epoch: int = 0
    batch: int = 0                 # the next batch of this epoch
    tokens: int = 0                # source + target tokens seen (all processes)
    train_seconds: float = 0.0     # time in training steps (evaluation excluded)
    best: float = -1.0             # best mean dev BLEU so far
    best_step: int = 0
    evals: list = field(default_factory=list)   # [step, dev BLEU] pairs

    @property
    def minutes(self) -> float:
        return self.train_seconds / 60


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


def pick_amp(kind: str, device: torch.device) -> Optional[torch.dtype]:
    """bf16 autocast on GPUs that have it (else fp16) and on CPUs with AVX-512 bf16 or AMX; else none."""
    if kind == "none":
        return None
    if kind in ("bf16", "fp16"):
        return torch.bfloat16 if kind == "bf16" else torch.float16
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if cpu_has_fast_bf16() else None


def cpu_has_fast_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def rng_states() -> dict:
    """Python, numpy and torch (CPU and CUDA) random states, as tensors and plain lists."""
    py = random.getstate()
    npy = np.random.get_state()
    return {"python": [py[0], list(py[1]), py[2]], "numpy": [npy[0], npy[1].tolist(), *npy[2:]],
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(s: dict) -> None:
    random.setstate((s["python"][0], tuple(s["python"][1]), s["python"][2]))
    np.random.set_state((s["numpy"][0], np.array(s["numpy"][1], dtype=np.uint32), *s["numpy"][2:]))
    torch.set_rng_state(s["torch"])
    if s["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])


# --- the objects of one run ----------------------------------------------------------------------
@dataclass
class Run:
    args: argparse.Namespace
    out: Path
    device: torch.device
    rank: int
    world: int
    tok: Tokenizer
    train: ParallelData
    dev_sets: list
    model: Transformer
    opt: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    amp_dtype: Optional[torch.dtype]
    log: Callable[..., None]
    rows: list = field(default_factory=list)
    replay: Replay = field(default_factory=lambda: Replay(EXAMPLES))
    ddp_model: Optional[torch.nn.Module] = None
    recent_loss: float = float("nan")      # mean training loss of the last steps (for the replay)

    @property
    def main_proc(self) -> bool:
        return self.rank == 0


def setup_distributed() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
        return rank, world, local
    return 0, 1, 0


def load_corpora(specs) -> tuple[list[tuple[str, str]], list[float]]:
    """Every pair of the corpora once, and each pair's corpus weight (the @W of its spec)."""
    pairs, weights = [], []
    for spec in specs:
        name, weight = parse_spec(spec)
        corpus = read_corpus(name)
        pairs += corpus
        weights += [weight] * len(corpus)
    return pairs, weights


def weighted_sample(pairs, weights, seed: int) -> list[tuple[str, str]]:
    """One epoch's worth of pairs drawn by the corpus weights (what the tokenizer is trained on)."""
    rng = np.random.default_rng(seed)
    w = np.asarray(weights, dtype=np.float64)
    counts = np.floor(w).astype(np.int64) + (rng.random(len(w)) < w - np.floor(w))
    return [p for p, c in zip(pairs, counts) for _ in range(c)]


def tokenize(tok: Tokenizer, pairs, max_pieces: int, weights=None) -> ParallelData:
    return ParallelData(tok.encode([p[0] for p in pairs]), tok.encode([p[1] for p in pairs]), max_pieces, weights)


def save_run_config(args, out: Path) -> None:
    """run_config.json: every option of this run, the corpus weights spelled out (export copies it on)."""
    config = dict(vars(args), corpus_weights={name: w for name, w in map(parse_spec, args.train)})
    (out / RUN_CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def prepare_tokenizer(args, out: Path, extra, rank: int, world: int, log) -> Tokenizer:
    """The run's tokenizer: the --init-from checkpoint's, the one in OUT, or a new one trained here."""
    tok_path = out / TOKENIZER_FILE
    if args.init_from and not args.new_tokenizer and rank == 0:
        init_tok = (Path(args.init_from) / TOKENIZER_FILE).read_bytes()
        if tok_path.exists() and tok_path.read_bytes() != init_tok:
            raise SystemExit(f"error: {tok_path} differs from {args.init_from}'s tokenizer; use a new --out folder")
        tok_path.write_bytes(init_tok)
    if not tok_path.exists() and rank == 0:
        log(f"training SentencePiece ({args.vocab_size} pieces) on {', '.join(args.train)}"
            + (" and the augmented pairs" if extra else ""))
        pairs = weighted_sample(*load_corpora(args.train), seed=args.seed) + extra
        train_tokenizer([s for p in pairs for s in p], out / "tokenizer", vocab_size=args.vocab_size, seed=args.seed)
    if world > 1:
        dist.barrier()
    return Tokenizer(tok_path)


def prepare_data(args, tok: Tokenizer, extra, log) -> tuple[ParallelData, list]:
    t0 = time.time()
    pairs, weights = load_corpora(args.train)
    train = tokenize(tok, pairs + extra, args.max_pieces, weights + [1.0] * len(extra))
    dev_sets = []
    for spec in args.dev:
        pairs = read_corpus(spec)
        dev_sets.append((Path(spec).name.split(".")[0], tokenize(tok, pairs, 10_000), pairs))
    log(f"data: {len(train):,} training pairs ({train.num_tokens():,} tokens, {train.dropped} dropped as too long), "
        f"dev {[len(d) for _, d, _ in dev_sets]}, in {time.time() - t0:.1f}s")
    return train, dev_sets


def build_model(args, tok: Tokenizer, device: torch.device, log) -> Transformer:
    """A new model from the size options, or the --init-from checkpoint's config and weights."""
    if args.init_from:
        saved, saved_tok = load_checkpoint(args.init_from, "cpu")
        model = Transformer(replace(saved.cfg, dropout=args.dropout, vocab_size=tok.vocab_size))
        weights = saved.state_dict()
        if args.new_tokenizer:
            moved = transfer_embedding(weights["embedding.weight"], saved_tok, tok)
            weights["embedding.weight"] = moved.embedding
            log(f"new vocabulary of {tok.vocab_size:,} pieces: {moved.copied:,} kept from the old one, "
                f"{moved.composed:,} built from the old pieces that spell them")
        model.load_state_dict(weights)
        log(f"initialised from {args.init_from} (its config and weights)")
    else:
        sizes = {name: getattr(args, name) for name in SIZE_FIELDS}
        model = Transformer(ModelConfig(vocab_size=tok.vocab_size, **sizes))
    log(f"model: {model.num_parameters():,} parameters, config {json.dumps(asdict(model.cfg))}")
    return model.to(device)


def write_piece_counts(data: ParallelData, vocab_size: int, path: Path) -> None:
    """How often each piece occurs in one epoch of training data, per side (the app marks rare pieces)."""
    src = np.bincount(np.concatenate([np.asarray(s) for s in data.src]), minlength=vocab_size)
    tgt = np.bincount(np.concatenate([np.asarray(t) for t in data.tgt]), minlength=vocab_size)
    path.write_text(json.dumps({"pairs": len(data), "source": src.tolist(), "target": tgt.tolist()}) + "\n")


# --- checkpoints: one writer, one reader ---------------------------------------------------------
def save_training_state(run: Run, state: TrainState) -> None:
    """train_state.pt (weights, optimizer, scaler, state, every random state) and last/ (a checkpoint)."""
    if not run.main_proc:
        return
    tmp = run.out / (STATE_FILE + ".tmp")
    torch.save(dict(model=run.model.state_dict(), optimizer=run.opt.state_dict(), scaler=run.scaler.state_dict(),
                    state=json.dumps(asdict(state)), rng=rng_states()), tmp)
    tmp.replace(run.out / STATE_FILE)
    write_checkpoint(run, "last")


def write_checkpoint(run: Run, name: str, metadata: Optional[dict] = None) -> None:
    """OUT/NAME: config.json, model.safetensors, tokenizer.model (and piece counts and replay if any)."""
    folder = save_checkpoint(run.model, run.out / TOKENIZER_FILE, run.out / name, metadata=metadata)
    for extra in (PIECE_COUNTS_FILE, REPLAY_FILE):
        if (run.out / extra).exists():
            (folder / extra).write_bytes((run.out / extra).read_bytes())


def load_training_state(run: Run) -> TrainState:
    path = run.out / STATE_FILE
    if not path.exists():
        run.log(f"--resume: no {path}; starting from scratch")
        return TrainState()
    ck = torch.load(path, map_location="cpu", weights_only=True)
    run.model.load_state_dict(ck["model"])
    run.opt.load_state_dict(ck["optimizer"])
    run.scaler.load_state_dict(ck["scaler"])
    set_rng_states(ck["rng"])
    state = TrainState(**json.loads(ck["state"]))
    run.log(f"resumed at step {state.step} (epoch {state.epoch}, batch {state.batch}, best dev BLEU {state.best})")
    return state


# --- evaluation, log and replay ------------------------------------------------------------------
@torch.no_grad()
def evaluate_dev(model, dev_sets, tok, device, amp_dtype, bleu_sentences: int, max_tokens: int) -> dict:
    """Validation loss (no label smoothing) on all dev pairs, and greedy BLEU on each dev corpus."""
    model.eval()
    out = {}
    total_loss, total_tok = 0.0, 0
    for name, data, pairs in dev_sets:
        for idx in data.batches(max_tokens, seed=0, shuffle=False):
            src, tin, tout = data.collate(idx, device)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                logits = model(src, tin).logits
            total_loss += F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tout.reshape(-1),
                                          ignore_index=PAD_ID, reduction="sum").item()
            total_tok += int((tout != PAD_ID).sum())
        sub = pairs[:bleu_sentences] if bleu_sentences else pairs
        hyps = translate_batch(model, tok, [s for s, _ in sub], batch_tokens=max_tokens)
        out[f"bleu_{name}"] = round(sacrebleu.corpus_bleu(hyps, [[t for _, t in sub]]).score, 2)
    out["val_loss"] = round(total_loss / max(1, total_tok), 4)
    out["dev_bleu"] = round(float(np.mean([out[f"bleu_{n}"] for n, _, _ in dev_sets])), 2)
    model.train()
    return out


def run_eval(run: Run, state: TrainState, label: str = "step") -> dict:
    """Dev loss and BLEU now; keep the weights for averaging, and as best/ when they are the best."""
    res = evaluate_dev(run.model, run.dev_sets, run.tok, run.device, run.amp_dtype, run.args.bleu_sentences,
                       run.args.max_tokens)
    state.evals.append([state.step, res["dev_bleu"]])
    write_checkpoint(run, f"ckpts/step{state.step:07d}")
    for old in sorted((run.out / "ckpts").glob("step*"))[: -max(run.args.average_last, 1)]:
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    if res["dev_bleu"] > state.best:
        state.best, state.best_step = res["dev_bleu"], state.step
        write_checkpoint(run, "best", metadata={"step": state.step, **res})
    run.log(f"{label} {state.step}: {json.dumps(res)} (best {state.best} @ {state.best_step})")
    log_row(run, state, val_loss=res["val_loss"], dev_bleu=res["dev_bleu"], extra=json.dumps(res))
    return res


def log_row(run: Run, state: TrainState, **values) -> None:
    row = dict.fromkeys(LOG_FIELDS, "")
    row.update(step=state.step, epoch=state.epoch, tokens=state.tokens, elapsed_min=round(state.minutes, 2), **values)
    run.rows.append(row)
    if not run.main_proc:
        return
    with open(run.out / "log.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=LOG_FIELDS)
        w.writeheader()
        w.writerows(run.rows)
    write_plot(run.rows, run.out)


def read_log(path: Path, up_to_step: int) -> list[dict]:
    if not path.exists():
        return []
    with open(path) as f:
        return [r for r in csv.DictReader(f) if int(r["step"]) <= up_to_step]


def write_plot(rows, out: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    tr = [(int(r["step"]), float(r["train_loss"])) for r in rows if r.get("train_loss") not in (None, "")]
    va = [(int(r["step"]), float(r["val_loss"])) for r in rows if r.get("val_loss") not in (None, "")]
    fig, ax = plt.subplots(figsize=(7, 4))
    if tr:
        ax.plot(*zip(*tr), label="train loss (label-smoothed)")
    if va:
        ax.plot(*zip(*va), "o-", label="validation loss")
    ax.set_xlabel("step"), ax.set_ylabel("cross-entropy (nats/token)"), ax.grid(alpha=0.3)
    if tr or va:
        ax.legend()
    fig.tight_layout()
    fig.savefig(out / "loss_curve.png", dpi=110)
    plt.close(fig)


@torch.no_grad()
def record_replay(model, tok: Tokenizer, device, step: int, tokens: int, train_loss: float) -> ReplayPoint:
    """Translate the fixed examples with the model as it is now: translations, reference losses, all maps."""
    was_training = model.training
    model.eval()
    point = ReplayPoint(step, tokens, round(train_loss, 4))
    for en, fr in EXAMPLES:
        src_ids = tok.encode(en)[: MAX_SOURCE_PIECES - 1] + [model.cfg.eos_id]
        trace = trace_greedy(model, tok, Source(en, src_ids, tok.pieces(src_ids)), top_k=1)
        ref = torch.tensor([[model.cfg.bos_id] + tok.encode(fr) + [model.cfg.eos_id]], device=device)
        logits = model(torch.tensor([src_ids], device=device), ref[:, :-1]).logits.float()
        point.records.append(ReplayRecord(
            translation=trace.translation, src_pieces=trace.src_pieces, tgt_in_pieces=trace.tgt_in_pieces,
            tgt_out_pieces=trace.tgt_pieces, reference_loss=round(F.cross_entropy(logits[0], ref[0, 1:]).item(), 4),
            maps={kind: trace.attention(kind).probs for kind in KINDS}))
    model.train(was_training)
    return point


def add_replay_point(run: Run, state: TrainState, train_loss: float) -> None:
    if run.main_proc:
        rng = torch.get_rng_state()     # decoding draws nothing, but keep resumed runs exact regardless
        run.replay.points.append(record_replay(run.model, run.tok, run.device, state.step, state.tokens, train_loss))
        save_replay(run.replay, run.out / REPLAY_FILE)
        torch.set_rng_state(rng)


def average_weights(paths) -> dict:
    avg = None
    for p in paths:
        sd = load_file(str(p))
        if avg is None:
            avg = {k: v.float().clone() for k, v in sd.items()}
        else:
            for k in avg:
                avg[k] += sd[k].float()
    return {k: v / len(paths) for k, v in avg.items()}


# --- training ------------------------------------------------------------------------------------
def train_step(run: Run, state: TrainState, batch: np.ndarray) -> float:
    """One step of the paper's recipe: forward, label-smoothed cross-entropy, backward, clip, Adam."""
    src, tin, tout = run.train.collate(batch, run.device)
    lr = lr_at(state.step, run.args, state.minutes)
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


def train_loop(run: Run, state: TrainState) -> None:
    """Steps until the run is finished or this invocation's budget is spent."""
    start, replay_at = replace(state), set(replay_steps())
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
        if state.step % run.args.eval_every == 0 and run.main_proc:
            run_eval(run, state)
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
        write_checkpoint(run, "best", metadata={"step": state.step, "averaged": len(cks), **res})
        run.log("the averaged model is the best on dev: saved to best/")
    run.model.load_state_dict(keep)


def copy_extras(run: Run) -> None:
    """best/ gets the run's final replay, piece counts, log and loss curve (export copies them on)."""
    if (run.out / "best").is_dir():
        for name in (REPLAY_FILE, PIECE_COUNTS_FILE, RUN_CONFIG_FILE, "log.csv", "loss_curve.png"):
            if (run.out / name).is_file():
                (run.out / "best" / name).write_bytes((run.out / name).read_bytes())


def start_run(args) -> Run:
    """Device, tokenizer, data, model and optimizer of a run (nothing trained yet)."""
    rank, world, local = setup_distributed()
    device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu") if args.device == "auto" \
        else torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed), np.random.seed(args.seed), torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = (lambda *a: tqdm.write(" ".join(str(x) for x in a))) if rank == 0 else (lambda *a: None)
    if rank == 0:
        save_run_config(args, out)
    extra = augment(load_corpora(args.augment_from or args.train)[0], args.seed,
                    AugmentConfig(name_copies=args.name_copies, concatenations=args.concatenations,
                                  concat_sizes=tuple(args.concat_sizes)), log) if args.augment else []
    tok = prepare_tokenizer(args, out, extra, rank, world, log)
    train, dev_sets = prepare_data(args, tok, extra, log)
    if rank == 0:
        write_piece_counts(train, tok.vocab_size, out / PIECE_COUNTS_FILE)
    model = build_model(args, tok, device, log)
    amp_dtype = pick_amp(args.amp, device)
    run = Run(args, out, device, rank, world, tok, train, dev_sets, model,
              opt=torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9),
              scaler=torch.amp.GradScaler("cuda", enabled=(amp_dtype == torch.float16 and device.type == "cuda")),
              amp_dtype=amp_dtype, log=log)
    run.ddp_model = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[local] if device.type == "cuda" else None) if world > 1 else model
    log(f"device {device}, world size {world}, autocast {amp_dtype}, threads {torch.get_num_threads()}")
    return run


def main(argv=None) -> int:
    args = parse_args(argv)
    run = start_run(args)
    state = load_training_state(run) if args.resume else TrainState()
    if args.resume:
        run.rows = read_log(run.out / "log.csv", state.step)
        if (run.out / REPLAY_FILE).exists():
            run.replay = load_replay(run.out / REPLAY_FILE)
            run.replay.points = [p for p in run.replay.points if p.step <= state.step]
    (run.out / "ckpts").mkdir(exist_ok=True)
    run.model.train()
    if state.step == 0:
        add_replay_point(run, state, float("nan"))
    train_loop(run, state)
    if not finished(state, args):
        save_training_state(run, state)
        run.log(f"paused at step {state.step}; continue with --resume")
    elif run.main_proc:
        finish(run, state)
        copy_extras(run)
        run.log(f"done: best dev BLEU {state.best} at step {state.best_step}; checkpoint in {run.out / 'best'}")
    if run.world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
