"""A run that must end by a wall-clock deadline, and a cycle that goes on without the last one's moments.

**Ending in time** (``--end-by SECONDS``). A lent GPU call ends at a hard deadline; a run stopped there by a
signal keeps its weights but never averages its last checkpoints (cycle 21 lost its averaging that way).
``fit_budget`` shrinks the cosine schedule's budget (``--max-minutes``) after every evaluation so that the
training, the evaluations still to come and the run's finish (a last evaluation, the averaged checkpoint's
evaluation and the saves) end by the deadline: the learning rate still decays to its end and the run ends
by itself, averaging included.

**Going on without the moments** (``--continue-from CHECKPOINT`` with a checkpoint folder instead of a run
folder). Adam's moments are 8 bytes a parameter (96 MB here), more than a GPU call can carry back beside the
model. They do not need to travel: with β₂ = 0.98 the second moment is an average whose weights halve every
34 steps (0.98²⁰⁰ = 1.8 % of a carried moment is left after 200 steps), so ``estimate_moments`` rebuilds
them from this run's first batches at a learning rate of 0 (the weights do not move), and the schedule goes
on from the checkpoint's ``schedule.json`` (step, tokens, training time) with no warm-up.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import torch
import torch.distributed as dist

from ..io.checkpoint import SCHEDULE_FILE   # beside a checkpoint's weights: where its schedule stands


@dataclass
class Deadline:
    """Wall-clock bookkeeping of one invocation with --end-by."""

    end_by: float                       # seconds after `started`
    started: float = field(default_factory=time.time)
    loop_started: float = 0.0           # when the training loop began (data and model ready)
    train_seconds_at_loop: float = 0.0  # the run's training time then
    eval_seconds: float = 0.0           # the last evaluation's duration

    def left(self, now: float | None = None) -> float:
        return self.end_by - ((now or time.time()) - self.started)


def fit_budget(max_minutes: float, minutes_now: float, wall_left: float, eval_seconds: float,
               train_share: float, margin: float = 15.0) -> float:
    """The training minutes the run may have in all (its --max-minutes, never raised) so that it ends
    `margin` seconds before the deadline: its finish costs two evaluations (the last step's and the averaged
    checkpoint's) and the margin; the rest of the wall time goes to training at the share seen so far in
    the loop (`train_share`: training time over wall time, the evaluations and saves on the way counted)."""
    spare = max(0.0, wall_left - 2 * eval_seconds - margin)
    budget = max(minutes_now + spare * min(1.0, max(train_share, 1e-3)) / 60, 1e-6)   # 0 would mean no limit
    return min(max_minutes, budget) if max_minutes else budget


def refit(run, state, deadline: Deadline) -> None:
    """At the start and after each evaluation (rank 0's, shared with the others: `share_budget`): shrink
    run.args.max_minutes to what `fit_budget` allows, and say so. Before the first evaluation, its cost is
    taken as 5 % of the time left."""
    now = time.time()
    wall = now - deadline.loop_started
    trained = state.train_seconds - deadline.train_seconds_at_loop
    share = trained / wall if wall > 1 and trained > 0 else 1.0
    eval_seconds = deadline.eval_seconds or 0.05 * max(0.0, deadline.left(now))
    new = fit_budget(run.args.max_minutes, state.minutes, deadline.left(now), eval_seconds, share)
    if not run.args.max_minutes or new < run.args.max_minutes - 0.01:
        run.log(f"--end-by: {deadline.left(now):.0f} s left; the schedule now ends at {new:.2f} training "
                f"minutes (was {run.args.max_minutes or 'no limit'})")
        run.args.max_minutes = new


def share_budget(run) -> None:
    """Every process of a distributed run takes rank 0's budget (the learning rate must agree across them)."""
    if run.world > 1:
        t = torch.tensor([float(run.args.max_minutes or 0.0)], dtype=torch.float64, device=run.device)
        dist.broadcast(t, 0)
        run.args.max_minutes = float(t.item())


def schedule_state(state, args) -> dict:
    """What a further cycle needs to go on with the schedule: the step, tokens and training time, and the
    schedule's options."""
    return {"step": state.step, "tokens": state.tokens, "train_seconds": round(state.train_seconds, 3),
            **{k: getattr(args, k) for k in ("lr", "warmup", "schedule", "max_steps", "max_minutes")}}


def write_schedule(folder: Path, state, args) -> None:
    text = json.dumps(schedule_state(state, args)) + "\n"
    (Path(folder) / SCHEDULE_FILE).write_text(text, encoding="utf-8")


def read_schedule(folder: Path) -> dict:
    return json.loads((Path(folder) / SCHEDULE_FILE).read_text(encoding="utf-8"))


def estimate_moments(run, state, batches, steps: int, train_step) -> float:
    """Adam's moments rebuilt from `steps` batches at a learning rate of 0: gradients flow and the moments
    fill, the weights stay (checked), and the run's step and tokens do not count them. Returns the mean loss
    seen."""
    before = next(run.model.parameters()).detach().clone()
    scratch, losses = replace(state), []
    for batch in batches[:steps]:
        losses.append(train_step(run, scratch, batch, lr=0.0))
    if not steps or not losses:
        return float("nan")
    if not bool((next(run.model.parameters()).detach() == before).all()):
        raise RuntimeError("the weights moved while the moments were estimated")
    return sum(losses) / len(losses)
