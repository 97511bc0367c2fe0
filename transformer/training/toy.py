"""Design choices trained live: two small Transformers that differ in one choice, trained side by side on a
toy task where that choice shows its effect, in about a minute on a CPU core.

The tasks are sequences of digits (10 symbols after the four special ids): ``copy`` (the source again),
``reverse`` (backwards), ``sort`` (ascending) and ``diff`` (each next digit minus the one before it, mod 10: a
target piece needs two source positions at once). Each design choice (``CHOICES``) fixes a task, the models'
sizes, the optimiser and what to measure, and names the two sides (A: the paper's choice, B: the other);
``train_pair`` trains both on the same batches, step by step, and hands a ``Snapshot`` to the caller every few
steps (loss curves, accuracy, one attention map each, and what the choice is about: accuracy by length,
softmax entropy, gradient size). Seeded: the same choice and seed give the same curves.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Iterator, Optional

import numpy as np
import torch
import torch.nn.functional as F

from ..config import BOS_ID, EOS_ID, PAD_ID, ModelConfig
from ..model.transformer import Transformer

N_SYMBOLS = 10                      # the digits 0-9, ids 4..13
FIRST = 4
VOCAB = FIRST + N_SYMBOLS


def make_pairs(task: str, rng: np.random.Generator, n: int,
               lengths: tuple[int, int]) -> list[tuple[list, list]]:
    """`n` (source, target) digit lists of lengths drawn uniformly from `lengths` (inclusive)."""
    out = []
    for _ in range(n):
        x = rng.integers(0, N_SYMBOLS, size=int(rng.integers(lengths[0], lengths[1] + 1))).tolist()
        if task == "copy":
            y = list(x)
        elif task == "reverse":
            y = x[::-1]
        elif task == "sort":
            y = sorted(x)
        elif task == "diff":
            y = [x[0]] + [(b - a) % N_SYMBOLS for a, b in zip(x, x[1:])]
        else:
            raise ValueError(f"unknown toy task {task!r}")
        out.append((x, y))
    return out


def batch(pairs: list[tuple[list, list]]) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """(src, decoder input, decoder target), padded: src ends in </s>, the target is <s> y … / y … </s>."""
    S = max(len(x) for x, _ in pairs) + 1
    T = max(len(y) for _, y in pairs) + 1
    src = torch.full((len(pairs), S), PAD_ID, dtype=torch.long)
    tin = torch.full((len(pairs), T), PAD_ID, dtype=torch.long)
    tout = torch.full((len(pairs), T), PAD_ID, dtype=torch.long)
    for i, (x, y) in enumerate(pairs):
        src[i, :len(x) + 1] = torch.tensor([FIRST + v for v in x] + [EOS_ID])
        tin[i, :len(y) + 1] = torch.tensor([BOS_ID] + [FIRST + v for v in y])
        tout[i, :len(y) + 1] = torch.tensor([FIRST + v for v in y] + [EOS_ID])
    return src, tin, tout


@dataclass(frozen=True)
class Choice:
    """One design choice, isolated: the task and setting where its effect shows, and the two sides."""

    name: str
    title: str
    task: str
    a: dict                         # the paper's side: changes to the base config
    b: dict                         # the other side
    a_label: str
    b_label: str
    steps: int
    lr: float
    warmup: int = 0                 # steps of linear warm-up (0: the full rate from the first step)
    train_lengths: tuple[int, int] = (3, 8)
    test_lengths: tuple[int, int] = (3, 8)
    base: dict = field(default_factory=dict)
    batch_size: int = 64
    every: int = 25                 # a snapshot every this many steps

    def config(self, side: str) -> ModelConfig:
        cfg = dict(vocab_size=VOCAB, d_model=64, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=128,
                   dropout=0.0, max_len=32)
        cfg.update(self.base)
        cfg.update(self.a if side == "a" else self.b)
        return ModelConfig(**cfg)


CHOICES = {
    "positions": Choice("positions", "Sinusoidal or learned positions", "copy",
                        dict(positions="sinusoidal"), dict(positions="learned"), "sinusoidal", "learned",
                        steps=700, lr=1e-3, warmup=50, train_lengths=(3, 8), test_lengths=(3, 12)),
    "scale": Choice("scale", "Scaling the scores by √d_k", "reverse",
                    dict(scale_scores=True), dict(scale_scores=False), "÷ √d_k", "not scaled",
                    steps=350, lr=1e-3, warmup=50,
                    base=dict(d_model=256, n_heads=1, d_ff=256, n_encoder_layers=1,
                             n_decoder_layers=1)),
    "norm": Choice("norm", "Pre-norm or post-norm, no warm-up", "reverse",
                   dict(norm="pre"), dict(norm="post"), "pre-norm", "post-norm",
                   steps=450, lr=1e-2, warmup=0, base=dict(n_encoder_layers=4, n_decoder_layers=4)),
    "heads": Choice("heads", "Several heads or one", "diff",
                    dict(n_heads=4), dict(n_heads=1), "4 heads", "1 head",
                    steps=1000, lr=1e-3, warmup=50, base=dict(n_encoder_layers=1, n_decoder_layers=1)),
    "nopos": Choice("nopos", "Positions or none at all", "reverse",
                    dict(positions="sinusoidal"), dict(positions="none"), "sinusoidal", "no positions",
                    steps=450, lr=1e-3, warmup=50),
}


@dataclass
class Side:
    """One of the two models at a snapshot."""

    loss: list[float]               # training loss at each snapshot so far
    # fresh random strings of the trained lengths fully right (greedy) at each snapshot
    accuracy: list[float]
    by_length: dict[int, float]     # fresh random strings fully right, by length, now
    # one cross-attention map, now: (target steps, source pieces), the last layer's mean
    attention: np.ndarray
    entropy: list[float]            # mean normalised entropy of the encoder's softmax rows at each snapshot
    # the gradient through the encoder's softmax (RMS of ∂loss/∂scores), mean since the last
    grad_norm: list[float]
    at: list[int] = field(default_factory=list)   # the step of each snapshot (0: the untrained models)

    def copy(self) -> "Side":
        return Side(list(self.loss), list(self.accuracy), dict(self.by_length), self.attention,
                    list(self.entropy), list(self.grad_norm), list(self.at))


@dataclass
class Snapshot:
    choice: Choice
    step: int
    steps: int
    seconds: float
    a: Side
    b: Side
    example: tuple[list, list]      # the source and target the attention maps show

    def to_dict(self) -> dict:
        """Plain data (for another process, a JSON file and the figures of ``viz/toy.py``)."""
        def side(x: Side) -> dict:
            return dict(loss=x.loss, accuracy=x.accuracy,
                        by_length={str(k): v for k, v in x.by_length.items()},
                        attention=np.round(x.attention, 4).tolist(), entropy=x.entropy,
                        grad_norm=[float(f"{g:.4g}") for g in x.grad_norm], at=x.at)
        c = self.choice
        return dict(choice=c.name, title=c.title, task=c.task, a_label=c.a_label, b_label=c.b_label,
                    train_lengths=list(c.train_lengths), every=c.every, step=self.step, steps=self.steps,
                    seconds=round(self.seconds, 2), a=side(self.a), b=side(self.b),
                    example=list(self.example))


def softmax_gradient(attentions) -> float:
    """How much gradient passes back through the encoder's softmax: the root mean square of ∂loss/∂scores (the
    softmax's input) over every encoder self-attention map of the batch (a saturated softmax
    passes almost none)."""
    grads = [w.scores.grad for w in attentions if w.scores.grad is not None]
    if not grads:
        return 0.0
    return float(torch.cat([g.reshape(-1) for g in grads]).pow(2).mean().sqrt())


def _warm(step: int, warmup: int) -> float:
    return min(1.0, (step + 1) / warmup) if warmup else 1.0


@torch.no_grad()
def greedy(model: Transformer, src: torch.Tensor, n: int) -> torch.Tensor:
    """Greedy decoding of `n` pieces (the toy targets' length is known: no stopping rule to learn)."""
    enc = model.encode(src)
    ys = torch.full((src.size(0), 1), BOS_ID, dtype=torch.long)
    for _ in range(n):
        logits = model.decode(ys, enc).logits[:, -1]
        ys = torch.cat([ys, logits.argmax(-1, keepdim=True)], dim=1)
    return ys[:, 1:]


def accuracy_by_length(model: Transformer, pairs: list) -> dict[int, float]:
    """The share of fresh random strings (drawn apart from the training batches) fully right, by source
    length."""
    model.eval()
    out: dict[int, list] = {}
    by_len: dict[int, list] = {}
    for x, y in pairs:
        by_len.setdefault(len(x), []).append((x, y))
    for n, group in sorted(by_len.items()):
        src, _, tout = batch(group)
        pred = greedy(model, src, len(group[0][1]))
        want = tout[:, :len(group[0][1])]
        out[n] = float((pred == want).all(dim=1).float().mean())
    model.train()
    return {n: round(v, 4) for n, v in out.items()}


@torch.no_grad()
def looks(model: Transformer, example: tuple[list, list]) -> tuple[np.ndarray, float]:
    """The example's last-layer cross-attention (mean over heads) and the encoder's mean softmax entropy (0:
    each row on one piece, 1: spread evenly)."""
    model.eval()
    src, tin, _ = batch([example])
    out = model(src, tin, output_attentions=True)
    model.train()
    cross = out.cross_attentions[-1].probs[0].mean(0).numpy()                      # (T, S)
    ent = []
    for w in out.encoder_attentions:
        p = w.probs[0].clamp_min(1e-12)                                            # (H, S, S)
        ent.append(float((-(p * p.log()).sum(-1) / math.log(p.size(-1))).mean()))
    return cross, float(np.mean(ent))


def train_pair(choice: Choice, seed: int = 0, steps: Optional[int] = None) -> Iterator[Snapshot]:
    """Train the choice's two models side by side on the same batches; yield a Snapshot of the untrained
    models, then every `choice.every` steps and at the end (the caller stops it by no longer asking)."""
    steps = steps or choice.steps
    rng = np.random.default_rng(seed)
    test = make_pairs(choice.task, np.random.default_rng(seed + 10_000), 40 * (choice.test_lengths[1] -
                                                                            choice.test_lengths[0] + 1),
                      choice.test_lengths)
    test.sort(key=lambda p: len(p[0]))
    example = make_pairs(choice.task, np.random.default_rng(seed + 20_000), 1,
                         (choice.train_lengths[1], choice.train_lengths[1]))[0]
    models, opts, sides = {}, {}, {}
    for s in ("a", "b"):
        torch.manual_seed(seed)                 # both start from the same weights where their shapes agree
        models[s] = Transformer(choice.config(s))
        opts[s] = torch.optim.Adam(models[s].parameters(), lr=choice.lr, betas=(0.9, 0.98), eps=1e-9)
        sides[s] = Side([], [], {}, np.zeros((0, 0)), [], [])
    t0 = time.perf_counter()
    grads: dict[str, list] = {"a": [], "b": []}
    losses: dict[str, list] = {"a": [], "b": []}

    def snapshot(step: int) -> Snapshot:
        for s in ("a", "b"):
            by_len = accuracy_by_length(models[s], test)
            attn, ent = looks(models[s], example)
            side = sides[s]
            side.loss.append(float(np.nanmean(losses[s][-choice.every:])) if losses[s] else float("nan"))
            trained = [v for n, v in by_len.items()
                       if choice.train_lengths[0] <= n <= choice.train_lengths[1]]
            side.accuracy.append(float(np.mean(trained)))
            side.by_length, side.attention = by_len, attn
            side.entropy.append(ent)
            side.grad_norm.append(float(np.mean(grads[s])) if grads[s] else 0.0)
            side.at.append(step)
            grads[s] = []
        return Snapshot(choice, step, steps, time.perf_counter() - t0, sides["a"].copy(), sides["b"].copy(),
                        example)

    yield snapshot(0)                            # the untrained models: where each starts
    for step in range(steps):
        src, tin, tout = batch(make_pairs(choice.task, rng, choice.batch_size, choice.train_lengths))
        for s in ("a", "b"):
            model, opt = models[s], opts[s]
            for g in opt.param_groups:
                g["lr"] = choice.lr * _warm(step, choice.warmup)
            out = model(src, tin, output_attentions=True)
            for w in out.encoder_attentions:
                w.scores.retain_grad()
            loss = F.cross_entropy(out.logits.reshape(-1, VOCAB), tout.reshape(-1), ignore_index=PAD_ID)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            grads[s].append(softmax_gradient(out.encoder_attentions))
            opt.step()
            value = float(loss.detach())
            losses[s].append(value if math.isfinite(value) else float("nan"))
        if (step + 1) % choice.every == 0 or step == steps - 1:
            yield snapshot(step + 1)


def main(argv=None) -> int:
    """``python -m transformer.training.toy NAME [--seed 0] [--steps N]``: the choice's live run on one CPU
    thread, one snapshot per line as JSON (the app's worker process: ui/train_live.py reads it)."""
    import argparse
    import json
    import sys
    ap = argparse.ArgumentParser(description=main.__doc__)
    ap.add_argument("name", choices=list(CHOICES))
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--steps", type=int, default=None)
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    for snap in train_pair(CHOICES[args.name], args.seed, args.steps):
        sys.stdout.write(json.dumps(snap.to_dict(), separators=(",", ":")) + "\n")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
