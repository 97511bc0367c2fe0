"""Train the Transformer: ``python -m transformer.train [options]`` (see --help).

Trains the SentencePiece tokenizer first if the output folder has none, then the model:
length-bucketed batches by token count, label smoothing, Adam with warmup, gradient
clipping, bf16 autocast on CPUs that support it and AMP on CUDA, validation loss and dev
BLEU at intervals, best-checkpoint selection on dev, checkpoint averaging, resumable
training state, a CSV log and a loss-curve plot. Runs unchanged under ``torchrun``
(DistributedDataParallel over GPUs, or gloo over CPU processes).
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
from dataclasses import asdict, replace
from pathlib import Path

import numpy as np
import sacrebleu
import torch
import torch.distributed as dist
import torch.nn.functional as F
from safetensors.torch import load_file, save_file
from tqdm import tqdm

from .io.checkpoint import TOKENIZER_FILE, load_checkpoint, save_checkpoint
from .config import PAD_ID, ModelConfig
from .data import SHARED_DATA, ParallelData, parse_spec, read_corpus
from .model.transformer import Transformer
from .io.tokenizer import Tokenizer, train_tokenizer
from .translator import translate_batch

DEFAULT_TRAIN = [str(SHARED_DATA / "tatoeba-eng-fra" / "train.tsv.gz"), str(SHARED_DATA / "multi30k" / "train")]
DEFAULT_DEV = [str(SHARED_DATA / "tatoeba-eng-fra" / "dev.tsv.gz"), str(SHARED_DATA / "multi30k" / "val")]


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m transformer.train", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    d = p.add_argument_group("data")
    d.add_argument("--train", nargs="+", default=DEFAULT_TRAIN,
                   help="training corpora: FILE.tsv[.gz] or PREFIX (PREFIX.en[.gz] + PREFIX.fr[.gz]); suffix @N repeats")
    d.add_argument("--dev", nargs="+", default=DEFAULT_DEV, help="dev corpora for validation and model selection")
    d.add_argument("--out", default="runs/en-fr", help="output folder (checkpoints, logs, training state)")
    d.add_argument("--vocab-size", type=int, default=8000)
    d.add_argument("--max-len", type=int, default=128, help="drop training pairs longer than this (pieces)")
    m = p.add_argument_group("model")
    m.add_argument("--d-model", type=int, default=256)
    m.add_argument("--heads", type=int, default=8)
    m.add_argument("--encoder-layers", type=int, default=3)
    m.add_argument("--decoder-layers", type=int, default=3)
    m.add_argument("--d-ff", type=int, default=1024)
    m.add_argument("--dropout", type=float, default=0.1)
    o = p.add_argument_group("optimization")
    o.add_argument("--max-tokens", type=int, default=6000, help="padded tokens per side per batch (per process)")
    o.add_argument("--max-steps", type=int, default=6000)
    o.add_argument("--max-minutes", type=float, default=0, help="stop after this much training time (0 = no limit)")
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
    e = p.add_argument_group("evaluation and checkpoints")
    e.add_argument("--eval-every", type=int, default=500, help="validate every N steps")
    e.add_argument("--bleu-sentences", type=int, default=800, help="dev sentences per corpus for dev BLEU (0 = all)")
    e.add_argument("--save-every-min", type=float, default=5.0, help="write resumable training state every N minutes")
    e.add_argument("--average-last", type=int, default=5, help="try averaging the last N evaluated checkpoints")
    e.add_argument("--resume", action="store_true", help="continue from OUT/train_state.pt")
    e.add_argument("--init-from", default=None, metavar="CHECKPOINT",
                   help="start from this checkpoint folder's weights, config and tokenizer (a new learning-rate "
                        "schedule and optimizer: a further training cycle); the model-size options are ignored")
    return p.parse_args(argv)


def setup_distributed():
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        dist.init_process_group(backend)
        rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
        return rank, world, local
    return 0, 1, 0


def pick_amp(kind: str, device: torch.device):
    if kind == "none":
        return None
    if device.type == "cuda":
        if kind == "bf16" or (kind == "auto" and torch.cuda.is_bf16_supported()):
            return torch.bfloat16
        return torch.float16
    if kind == "fp16":
        return torch.float16
    if kind == "bf16":
        return torch.bfloat16
    ok = getattr(torch.cpu, "_is_avx512_bf16_supported", lambda: False)() or getattr(torch.cpu, "_is_amx_tile_supported", lambda: False)()
    return torch.bfloat16 if ok else None


def lr_at(step: int, args) -> float:
    if step < args.warmup:
        return args.lr * (step + 1) / args.warmup
    if args.schedule == "inverse_sqrt":
        return args.lr * math.sqrt(args.warmup / (step + 1))
    progress = min(1.0, (step - args.warmup) / max(1, args.max_steps - args.warmup))
    return args.lr * (0.01 + 0.99 * 0.5 * (1 + math.cos(math.pi * progress)))


def load_corpora(specs, repeat: bool):
    pairs = []
    for spec in specs:
        name, times = parse_spec(spec)
        pairs += read_corpus(name) * (times if repeat else 1)
    return pairs


def tokenize(tok: Tokenizer, pairs, max_len: int) -> ParallelData:
    return ParallelData(tok.encode([p[0] for p in pairs]), tok.encode([p[1] for p in pairs]), max_len)


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
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tout.reshape(-1),
                                   ignore_index=PAD_ID, reduction="sum")
            total_loss += loss.item()
            total_tok += int((tout != PAD_ID).sum())
        sub = pairs[:bleu_sentences] if bleu_sentences else pairs
        hyps = translate_batch(model, tok, [s for s, _ in sub], batch_tokens=max_tokens)
        out[f"bleu_{name}"] = round(sacrebleu.corpus_bleu(hyps, [[t for _, t in sub]]).score, 2)
    out["val_loss"] = round(total_loss / max(1, total_tok), 4)
    out["dev_bleu"] = round(float(np.mean([out[f"bleu_{n}"] for n, _, _ in dev_sets])), 2)
    model.train()
    return out


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


def write_plot(log_rows, out: Path) -> None:
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    tr = [(r["step"], r["train_loss"]) for r in log_rows if r.get("train_loss") not in (None, "")]
    va = [(r["step"], r["val_loss"]) for r in log_rows if r.get("val_loss") not in (None, "")]
    fig, ax = plt.subplots(figsize=(7, 4))
    if tr:
        ax.plot(*zip(*tr), label="train loss (label-smoothed)")
    if va:
        ax.plot(*zip(*va), "o-", label="validation loss")
    ax.set_xlabel("step"), ax.set_ylabel("cross-entropy (nats/token)"), ax.legend(), ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(out / "loss_curve.png", dpi=110)
    plt.close(fig)


def main(argv=None) -> int:
    args = parse_args(argv)
    rank, world, local = setup_distributed()
    main_proc = rank == 0
    if args.device == "auto":
        device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu")
    else:
        device = torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed), np.random.seed(args.seed), torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = (lambda *a: tqdm.write(" ".join(str(x) for x in a))) if main_proc else (lambda *a: None)

    # --- tokenizer --------------------------------------------------------------------------
    tok_path = out / TOKENIZER_FILE
    init = Path(args.init_from) if args.init_from else None
    if init is not None and main_proc:
        init_tok = (init / TOKENIZER_FILE).read_bytes()
        if not tok_path.exists():
            tok_path.write_bytes(init_tok)
        elif tok_path.read_bytes() != init_tok:
            raise SystemExit(f"error: {tok_path} differs from {init / TOKENIZER_FILE}; use a new --out folder")
    if world > 1 and init is not None:
        dist.barrier()
    if not tok_path.exists():
        if main_proc:
            log(f"training SentencePiece ({args.vocab_size} pieces) on {', '.join(args.train)}")
            pairs = load_corpora(args.train, repeat=False)
            train_tokenizer([s for p in pairs for s in p], out / "tokenizer", vocab_size=args.vocab_size, seed=args.seed)
        if world > 1:
            dist.barrier()
    tok = Tokenizer(tok_path)

    # --- data -------------------------------------------------------------------------------
    t0 = time.time()
    train = tokenize(tok, load_corpora(args.train, repeat=True), args.max_len)
    dev_sets = []
    for spec in args.dev:
        pairs = read_corpus(spec)
        dev_sets.append((Path(spec).name.split(".")[0], tokenize(tok, pairs, 10_000), pairs))
    log(f"data: {len(train):,} training pairs ({train.num_tokens():,} tokens, {train.dropped} dropped as too long), "
        f"dev {[len(d) for _, d, _ in dev_sets]}, in {time.time() - t0:.1f}s")

    # --- model ------------------------------------------------------------------------------
    if init is not None:
        saved, _ = load_checkpoint(init, "cpu")
        cfg = replace(saved.cfg, dropout=args.dropout)
        model = Transformer(cfg)
        model.load_state_dict(saved.state_dict())
        model = model.to(device)
        log(f"initialised from {init} (its config and weights)")
    else:
        cfg = ModelConfig(vocab_size=tok.vocab_size, d_model=args.d_model, n_heads=args.heads,
                          n_encoder_layers=args.encoder_layers, n_decoder_layers=args.decoder_layers,
                          d_ff=args.d_ff, dropout=args.dropout, max_len=256)
        model = Transformer(cfg).to(device)
    log(f"model: {model.num_parameters():,} parameters, config {json.dumps(asdict(cfg))}")
    amp_dtype = pick_amp(args.amp, device)
    scaler = torch.amp.GradScaler("cuda", enabled=(amp_dtype == torch.float16 and device.type == "cuda"))
    opt = torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9)
    log(f"device {device}, world size {world}, autocast {amp_dtype}, threads {torch.get_num_threads()}")

    state = dict(step=0, epoch=0, batch=0, best=-1.0, best_step=0, tokens=0, train_seconds=0.0, evals=[])
    state_path = out / "train_state.pt"
    if args.resume:
        if not state_path.exists():
            log(f"--resume: no {state_path}; starting from scratch")
        else:
            ck = torch.load(state_path, map_location="cpu", weights_only=True)
            model.load_state_dict(ck["model"])
            opt.load_state_dict(ck["optimizer"])
            state.update(json.loads(ck["state"]))
            torch.set_rng_state(ck["rng"])
            log(f"resumed at step {state['step']} (epoch {state['epoch']}, batch {state['batch']}, best dev BLEU {state['best']})")
    ddp_model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[local] if device.type == "cuda" else None) if world > 1 else model

    def save_state():
        if not main_proc:
            return
        tmp = out / "train_state.pt.tmp"
        torch.save(dict(model=model.state_dict(), optimizer=opt.state_dict(), state=json.dumps(state),
                        rng=torch.get_rng_state()), tmp)
        tmp.replace(state_path)
        save_checkpoint(model, tok_path, out / "last")

    log_path = out / "log.csv"
    fields = ["step", "epoch", "tokens", "lr", "train_loss", "val_loss", "dev_bleu", "extra", "tokens_per_s", "elapsed_min"]
    rows = []
    if log_path.exists() and args.resume:
        with open(log_path) as f:
            rows = [r for r in csv.DictReader(f) if int(r["step"]) <= state["step"]]
            for r in rows:
                r["step"] = int(r["step"])
                for k in ("train_loss", "val_loss"):
                    r[k] = float(r[k]) if r[k] else ""

    def write_log():
        if not main_proc:
            return
        with open(log_path, "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=fields)
            w.writeheader()
            w.writerows(rows)
        write_plot(rows, out)

    ckdir = out / "ckpts"
    ckdir.mkdir(exist_ok=True)

    def run_eval():
        res = evaluate_dev(model, dev_sets, tok, device, amp_dtype, args.bleu_sentences, args.max_tokens)
        state["evals"].append([state["step"], res["dev_bleu"]])
        if main_proc:
            save_file({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()},
                      str(ckdir / f"step{state['step']:07d}.safetensors"))
            for old in sorted(ckdir.glob("step*.safetensors"))[: -max(args.average_last, 1)]:
                old.unlink()
            if res["dev_bleu"] > state["best"]:
                state["best"], state["best_step"] = res["dev_bleu"], state["step"]
                save_checkpoint(model, tok_path, out / "best", metadata={"step": state["step"], **res})
        return res

    # --- training loop ------------------------------------------------------------------------
    model.train()
    last_save = time.time()
    bar = tqdm(total=args.max_steps, initial=state["step"], disable=not main_proc, unit="step", dynamic_ncols=True,
               smoothing=0.05)
    running, run_n, win_tok, win_t = 0.0, 0, 0, time.time()
    stop = False
    while not stop:
        batches = train.batches(args.max_tokens, seed=args.seed * 1000 + state["epoch"])
        batches = batches[: len(batches) // world * world][rank::world]   # equal share per process
        for b in range(state["batch"], len(batches)):
            done = state["step"] >= args.max_steps or bool(args.max_minutes and state["train_seconds"] / 60 >= args.max_minutes)
            if world > 1:  # every process must stop at the same step, or the next all-reduce hangs
                flag = torch.tensor([int(done)], device=device)
                dist.all_reduce(flag, op=dist.ReduceOp.MAX)
                done = bool(flag.item())
            if done:
                stop = True
                break
            t_step = time.time()
            src, tin, tout = train.collate(batches[b], device)
            for g in opt.param_groups:
                g["lr"] = lr_at(state["step"], args)
            with torch.autocast(device.type, dtype=amp_dtype, enabled=amp_dtype is not None):
                logits = ddp_model(src, tin).logits
            loss = F.cross_entropy(logits.float().reshape(-1, logits.size(-1)), tout.reshape(-1),
                                   ignore_index=PAD_ID, label_smoothing=args.label_smoothing)
            opt.zero_grad(set_to_none=True)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            scaler.step(opt)
            scaler.update()
            ntok = int((src != PAD_ID).sum() + (tout != PAD_ID).sum())
            state["step"] += 1
            state["batch"] = b + 1
            state["tokens"] += ntok * world
            state["train_seconds"] += time.time() - t_step
            running += loss.item()
            run_n += 1
            win_tok += ntok * world
            bar.update(1)
            if state["step"] % 20 == 0:
                tps = win_tok / max(1e-6, time.time() - win_t)
                bar.set_postfix(loss=f"{running / run_n:.3f}", tok_s=f"{tps:,.0f}", lr=f"{lr_at(state['step'], args):.2e}",
                                ep=state["epoch"])
            if state["step"] % 100 == 0:
                rows.append(dict(step=state["step"], epoch=state["epoch"], tokens=state["tokens"],
                                 lr=f"{lr_at(state['step'], args):.3e}", train_loss=round(running / run_n, 4),
                                 val_loss="", dev_bleu="", extra="",
                                 tokens_per_s=round(win_tok / max(1e-6, time.time() - win_t)),
                                 elapsed_min=round(state["train_seconds"] / 60, 2)))
                running, run_n, win_tok, win_t = 0.0, 0, 0, time.time()
                write_log()
            if state["step"] % args.eval_every == 0:
                res = run_eval() if main_proc else None
                if main_proc:
                    log(f"step {state['step']}: " + json.dumps(res) + f" (best {state['best']} @ {state['best_step']})")
                    rows.append(dict(step=state["step"], epoch=state["epoch"], tokens=state["tokens"], lr="",
                                     train_loss="", val_loss=res["val_loss"], dev_bleu=res["dev_bleu"],
                                     extra=json.dumps(res), tokens_per_s="", elapsed_min=round(state["train_seconds"] / 60, 2)))
                    write_log()
                win_t, win_tok = time.time(), 0  # do not count evaluation time in tokens/s
            if time.time() - last_save > args.save_every_min * 60:
                save_state()
                last_save = time.time()
        else:
            state["epoch"] += 1
            state["batch"] = 0
    bar.close()

    if main_proc:
        if not state["evals"] or state["evals"][-1][0] != state["step"]:
            res = run_eval()
            log(f"final step {state['step']}: {json.dumps(res)}")
            rows.append(dict(step=state["step"], epoch=state["epoch"], tokens=state["tokens"], lr="", train_loss="",
                             val_loss=res["val_loss"], dev_bleu=res["dev_bleu"], extra=json.dumps(res),
                             tokens_per_s="", elapsed_min=round(state["train_seconds"] / 60, 2)))
        save_state()
        cks = sorted(ckdir.glob("step*.safetensors"))[-args.average_last:]
        if len(cks) > 1:
            keep = model.state_dict()
            keep = {k: v.clone() for k, v in keep.items()}
            model.load_state_dict(average_weights(cks))
            res = evaluate_dev(model, dev_sets, tok, device, amp_dtype, args.bleu_sentences, args.max_tokens)
            log(f"average of last {len(cks)} checkpoints: {json.dumps(res)}")
            rows.append(dict(step=state["step"], epoch=state["epoch"], tokens=state["tokens"], lr="", train_loss="",
                             val_loss=res["val_loss"], dev_bleu=res["dev_bleu"],
                             extra=json.dumps({"averaged": [c.name for c in cks], **res}), tokens_per_s="",
                             elapsed_min=round(state["train_seconds"] / 60, 2)))
            if res["dev_bleu"] > state["best"]:
                state["best"], state["best_step"] = res["dev_bleu"], state["step"]
                save_checkpoint(model, tok_path, out / "best",
                                metadata={"step": state["step"], "averaged": len(cks), **res})
                log("the averaged model is the best on dev: saved to best/")
            model.load_state_dict(keep)
        write_log()
        log(f"done: best dev BLEU {state['best']} at step {state['best_step']}; checkpoint in {out / 'best'}")
    if world > 1:
        dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
