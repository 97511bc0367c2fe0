"""What a run measures and records: dev loss and BLEU with best-checkpoint keeping (``run_eval``), the CSV
log and loss curve, the training replay, and checkpoint averaging."""
from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import sacrebleu
import torch
import torch.nn.functional as F
from safetensors.torch import load_file

from ..config import PAD_ID
from ..io.checkpoint import REPLAY_FILE
from ..io.tokenizer import Tokenizer
from ..model.decoding import cut_source, source_limit, trace_greedy, translate_batch
from ..replay import EXAMPLES, KINDS, ReplayPoint, ReplayRecord, save_replay
from ..trace import Source
from .run import Run, TrainState, write_checkpoint

LOG_FIELDS = ["step", "epoch", "tokens", "lr", "train_loss", "val_loss", "dev_bleu", "extra", "tokens_per_s",
              "elapsed_min"]


LOG_EVERY = 100          # steps between training-loss rows in log.csv


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
    write_checkpoint(run, f"ckpts/step{state.step:07d}", state=state)
    for old in sorted((run.out / "ckpts").glob("step*"))[: -max(run.args.average_last, 1)]:
        for f in old.iterdir():
            f.unlink()
        old.rmdir()
    if res["dev_bleu"] > state.best:
        state.best, state.best_step = res["dev_bleu"], state.step
        write_checkpoint(run, "best", metadata={"step": state.step, **res}, state=state)
    run.log(f"{label} {state.step}: {json.dumps(res)} (best {state.best} @ {state.best_step})")
    log_row(run, state, val_loss=res["val_loss"], dev_bleu=res["dev_bleu"], extra=json.dumps(res))
    return res


def log_row(run: Run, state: TrainState, **values) -> None:
    row = dict.fromkeys(LOG_FIELDS, "")
    row.update(step=state.step, epoch=state.epoch, tokens=state.tokens, elapsed_min=round(state.minutes, 2),
               **values)
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
        src_ids, _ = cut_source(tok.encode(en), model.cfg.eos_id, source_limit(model))
        trace = trace_greedy(model, tok, Source(en, src_ids, tok.pieces(src_ids)), top_k=1)
        ref = torch.tensor([[model.cfg.bos_id] + tok.encode(fr) + [model.cfg.eos_id]], device=device)
        logits = model(torch.tensor([src_ids], device=device), ref[:, :-1]).logits.float()
        point.records.append(ReplayRecord(
            translation=trace.translation, src_pieces=trace.src_pieces, tgt_in_pieces=trace.tgt_in_pieces,
            tgt_out_pieces=trace.tgt_pieces,
            reference_loss=round(F.cross_entropy(logits[0], ref[0, 1:]).item(), 4),
            maps={kind: trace.attention(kind).probs for kind in KINDS}))
    model.train(was_training)
    return point


def add_replay_point(run: Run, state: TrainState, train_loss: float) -> None:
    if run.main_proc:
        rng = torch.get_rng_state()     # decoding draws nothing, but keep resumed runs exact regardless
        run.replay.points.append(record_replay(run.model, run.tok, run.device, state.step, state.tokens,
                                               train_loss))
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
