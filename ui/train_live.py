"""Design choices trained live (the top of the Compare tab): the presenter picks a choice and presses Train,
and two small models that differ only in it train side by side on a toy task
(``transformer/training/toy.py``), their curves and attention maps redrawn as they learn
(``transformer/viz/toy.py``).

Training runs in a process of its own (``python -m transformer.training.toy``, JSON lines on its output), on
one CPU thread, one run at a time per app (Gradio's queue, concurrency 1, shows a waiting page its place): the
app's other users keep the rest of the machine and its interpreter. A run ends when it is done, or when its
page leaves (the process is stopped). Each choice also ships a longer run of the
same models (``checkpoints/toy-runs/NAME.json``, written by ``tools/toy_runs.py``), shown at once.
"""
from __future__ import annotations

import functools
import json
import os
import queue
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Iterator, Optional

import gradio as gr

from transformer.training import toy
from transformer.viz import toy as toy_views
from transformer.viz.narrow import for_narrow

from .inputs import ChoiceDropdown
from .page import caption, look_of

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "checkpoints" / "toy-runs"
SEED = 0                      # the live runs' seed: the tests check each choice's effect on it
# how often the page's generator looks at the worker (a dead one is said within this)
POLL_S = 0.5
QUIET_S = 60.0                # a worker that says nothing for this long (its start included) is stopped
CHOICE_LIST = [(c.title, name) for name, c in toy.CHOICES.items()]


@functools.lru_cache(maxsize=None)
def shipped(name: str) -> Optional[dict]:
    """The choice's longer run, as shipped (None when it is not there): read once (the files do not change
    while the app runs; every redraw of the tab, one per Translate, read one again); never change it."""
    path = RUNS / f"{name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else None


def train(name: str, seed: int = SEED, steps: Optional[int] = None) -> Iterator[dict]:
    """The choice's live run, snapshot by snapshot, from a worker process of its own (``python -m
    transformer.training.toy``: its own interpreter, one CPU thread; stopped when the caller stops asking, and
    killed if it will not stop)."""
    if name not in toy.CHOICES:
        raise ValueError(f"no design choice {name!r}")
    cmd = [sys.executable, "-m", "transformer.training.toy", name, "--seed", str(int(seed))]
    if steps:
        cmd += ["--steps", str(int(steps))]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    lines: "queue.Queue[Optional[str]]" = queue.Queue()

    # the worker's lines, handed over as they come (None: it closed its output)
    def read():
        for line in proc.stdout:
            lines.put(line)
        lines.put(None)
    threading.Thread(target=read, daemon=True, name="train-live-reader").start()
    quiet_since = time.monotonic()
    try:
        while True:
            try:
                line = lines.get(timeout=POLL_S)
            except queue.Empty:
                # died without a word (killed, out of memory)
                if proc.poll() is not None and lines.empty():
                    raise RuntimeError(f"the training worker stopped (exit code {proc.returncode})") from None
                if time.monotonic() - quiet_since > QUIET_S:
                    raise RuntimeError("the training worker stopped answering") from None
                continue
            quiet_since = time.monotonic()
            if line is None:
                if proc.wait(10) != 0:
                    raise RuntimeError(f"the training worker failed: {proc.stderr.read()[-300:].strip()}")
                return
            yield json.loads(line)
    finally:
        if proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(5)


def figures(snap: Optional[dict], look: str, large: bool, scale: str, narrow: bool = False) -> tuple:
    """(status, loss, what the choice is about, the two attention maps, the paragraph) for a snapshot."""
    lk = look_of(look, large, scale, narrow)
    if snap is None:
        return ("", None, None, None, "Press **Train** to train the two models here (about a minute).")
    done = snap["step"] >= snap["steps"]
    status = (f"**{snap['title']}** · step {snap['step']} of {snap['steps']} · {snap['seconds']:.0f} s"
              + (" · done" if done else " · training…"))
    figs = (toy_views.loss_figure(snap, lk.dark, lk.font), toy_views.choice_figure(snap, lk.dark, lk.font),
            toy_views.attention_figure(snap, lk.dark, lk.font, lk.colorscale, narrow))
    return (status, *(for_narrow(f) if narrow else f for f in figs), toy_views.paragraph(snap))


def run_figures(prefix: str) -> list:
    """A status line and the four figures and text of a run (the shipped one, or the live one beside it)."""
    with gr.Row():
        loss = gr.Plot(show_label=False, label="Training loss", elem_id=f"{prefix}-loss")
        effect = gr.Plot(show_label=False, label="What the choice changes", elem_id=f"{prefix}-effect")
    maps = gr.Plot(show_label=False, label="Attention, both models", elem_id=f"{prefix}-maps")
    text = gr.Markdown(elem_id=f"{prefix}-text")
    return [loss, effect, maps, text]


def build_train_live(page) -> tuple:
    """The section's controls and figures, and its events: (the choice, the shipped run's outputs, their
    drawing)."""
    gr.Markdown("### Design choices, trained live", elem_id="toy-intro")
    caption("two small Transformers that differ in one choice learn a toy task side by side, on this "
            "machine's CPU, in about a minute: the paper's choice in blue, the other in orange, scored on "
            "fresh random strings. A longer run of the same two models shows first; press Train live to "
            "watch them learn (a constant learning rate: the curves wobble).")
    with gr.Row(elem_id="toy-controls", equal_height=True):
        choice = ChoiceDropdown(CHOICE_LIST, value=CHOICE_LIST[0][1], label="Design choice", scale=3,
                                min_width=260, filterable=False, elem_id="toy-choice")
        go = gr.Button("Train live (≈ 1 min)", variant="primary", scale=1, min_width=160, elem_id="toy-train")
    # the queue's place, then the live run's step
    live_status = gr.Markdown(elem_id="toy-live-status")
    # The shipped run (drawn with the tab, as every view is) and the live one in boxes of their own: a redraw
    # of the tab (a new sentence) never paints the shipped run over a live one.
    with gr.Column(elem_id="toy-shipped") as shipped_box:
        status = gr.Markdown(elem_id="toy-status")
        outputs = [status, *run_figures("toy")]
    with gr.Column(visible=False, elem_id="toy-live") as live_box:
        live_outputs = run_figures("toy-live")
    look = list(page.look)          # light/dark, presenter, colour scale, narrow

    def show_shipped(name, look_v, large, scale, narrow=False):
        snap = shipped(name)
        out = figures(snap, look_v, large, scale, narrow)
        if snap is not None:
            out = (out[0]
                   .replace(" · done", " · the shipped longer run: press Train live to watch one learn"),
                   *out[1:])
        return out

    def picked(name, look_v, large, scale, narrow):
        return (gr.update(visible=True), gr.update(visible=False), "",
                *show_shipped(name, look_v, large, scale, narrow))

    def run(name, look_v, large, scale, narrow):
        boxes = (gr.update(visible=False), gr.update(visible=True))
        try:
            for snap in train(name):
                yield (*boxes, *figures(snap, look_v, large, scale, narrow))
        except (RuntimeError, ValueError) as e:
            gr.Warning(f"The training stopped: {e}")
            yield (*[gr.skip()] * 2, f"**The training stopped**: {e}. Press Train live to try again.",
                   *[gr.skip()] * len(live_outputs))

    quiet = dict(api_visibility="private")
    choice.change(picked, [choice, *look], [shipped_box, live_box, live_status, *outputs],
                  show_progress="hidden", **quiet)
    # one run at a time per app: a second page waits in Gradio's queue, its place shown on the status line
    go.click(run, [choice, *look], [shipped_box, live_box, live_status, *live_outputs], concurrency_limit=1,
             concurrency_id="train-live", show_progress="full", show_progress_on=[live_status], **quiet)
    return choice, outputs, show_shipped
