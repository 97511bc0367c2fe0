"""Design choices trained live (the top of the Compare tab): the presenter picks a choice and presses Train, and two
small models that differ only in it train side by side on a toy task (``transformer/training/toy.py``), their
curves and attention maps redrawn as they learn (``transformer/viz/toy.py``).

Training runs in a process of its own, on one CPU thread, one run at a time per app (Gradio's queue, concurrency 1,
shows a waiting page its place): the app's other users keep the rest of the machine and its interpreter. A run
ends when it is done, or when its page leaves (the process is stopped). Each choice also ships a longer run of the
same models (``checkpoints/toy-runs/NAME.json``, written by ``tools/toy_runs.py``), shown at once.
"""
from __future__ import annotations

import json
import multiprocessing
import queue
from pathlib import Path
from typing import Iterator, Optional

import gradio as gr

from transformer.training import toy
from transformer.viz import toy as toy_views
from transformer.viz.figure import for_narrow

from .inputs import ChoiceDropdown
from .page import caption, look_of

RUNS = Path(__file__).resolve().parent.parent / "checkpoints" / "toy-runs"
SEED = 0                      # the live runs' seed: the tests check each choice's effect on it
POLL_S = 0.5                  # how often the page's generator looks for the worker's next snapshot
START_S = 60.0                # a worker that says nothing for this long (its start included) is stopped
CHOICE_LIST = [(c.title, name) for name, c in toy.CHOICES.items()]


def shipped(name: str) -> Optional[dict]:
    """The choice's longer run, as shipped (None when it is not there)."""
    path = RUNS / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def train(name: str, seed: int = SEED, steps: Optional[int] = None) -> Iterator[dict]:
    """The choice's live run, snapshot by snapshot, from a worker process (stopped when the caller stops asking)."""
    if name not in toy.CHOICES:
        raise ValueError(f"no design choice {name!r}")
    ctx = multiprocessing.get_context("spawn")      # a fresh interpreter: no lock of this process's threads copied
    out = ctx.Queue()
    proc = ctx.Process(target=toy.run_into, args=(name, seed, out, steps), daemon=True)
    proc.start()
    try:
        while True:
            try:
                snap = out.get(timeout=START_S)
            except queue.Empty:
                raise RuntimeError("the training worker stopped answering") from None
            if snap is None:
                return
            if "error" in snap:
                raise RuntimeError(snap["error"])
            yield snap
    finally:
        if proc.is_alive():
            proc.terminate()
        proc.join(5)


def figures(snap: Optional[dict], look: str, large: bool, scale: str, narrow: bool = False) -> tuple:
    """(status, loss, what the choice is about, the two attention maps, the paragraph) for a snapshot."""
    lk = look_of(look, large, scale, narrow)
    if snap is None:
        return ("", None, None, None, "Press **Train** to train the two models here (about a minute).")
    done = snap["step"] >= snap["steps"]
    status = (f"**{snap['title']}** · step {snap['step']} of {snap['steps']} · {snap['seconds']:.0f} s"
              + (" · done" if done else " · training…"))
    figs = (toy_views.loss_figure(snap, lk.dark, lk.font), toy_views.choice_figure(snap, lk.dark, lk.font),
            toy_views.attention_figure(snap, lk.dark, lk.font, lk.colorscale))
    return (status, *(for_narrow(f) if narrow else f for f in figs), toy_views.paragraph(snap))


def build_train_live(page) -> None:
    """The section's controls and figures, and its events."""
    gr.Markdown("### Design choices, trained live", elem_id="toy-intro")
    caption("two small Transformers that differ in one choice learn a toy task side by side, on this machine's CPU, "
            "in about a minute: the paper's choice in blue, the other in red. A longer run of the same two models "
            "shows first; press Train live to watch them learn.")
    with gr.Row(elem_id="toy-controls", equal_height=True):
        choice = ChoiceDropdown(CHOICE_LIST, value=CHOICE_LIST[0][1], label="Design choice", scale=3, min_width=260,
                                filterable=False, elem_id="toy-choice")
        go = gr.Button("Train live (≈ 1 min)", variant="primary", scale=1, min_width=160, elem_id="toy-train")
    status = gr.Markdown(elem_id="toy-status")
    with gr.Row():
        loss = gr.Plot(show_label=False, label="Training loss", elem_id="toy-loss")
        effect = gr.Plot(show_label=False, label="What the choice changes", elem_id="toy-effect")
    maps = gr.Plot(show_label=False, label="Attention, both models", elem_id="toy-maps")
    text = gr.Markdown(elem_id="toy-text")
    outputs = [status, loss, effect, maps, text]
    look = list(page.look)          # light/dark, presenter, colour scale, narrow

    def show_shipped(name, look_v, large, scale, narrow=False):
        snap = shipped(name)
        out = figures(snap, look_v, large, scale, narrow)
        if snap is not None:
            out = (out[0].replace(" · done", " · the shipped longer run: press Train to watch one learn"), *out[1:])
        return out

    def run(name, look_v, large, scale, narrow):
        try:
            for snap in train(name):
                yield figures(snap, look_v, large, scale, narrow)
        except (RuntimeError, ValueError) as e:
            raise gr.Error(f"The training stopped: {e}", print_exception=False)

    quiet = dict(api_visibility="private")
    choice.change(show_shipped, [choice, *look], outputs, show_progress="hidden", **quiet)
    # one run at a time per app: a second page waits in Gradio's queue, its place shown on the status line
    go.click(run, [choice, *look], outputs, concurrency_limit=1, concurrency_id="train-live",
             show_progress="full", show_progress_on=[status], **quiet)
    return choice, outputs, show_shipped
