"""How it learned: the training replay (fixed sentences translated at log-spaced training steps).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import gradio as gr

from transformer.config import REPLAY_POINTS
from transformer.io.checkpoint import REPLAY_FILE
from transformer.replay import Replay, load_replay
from transformer.viz import learning

from ..page import KIND_CHOICES, Page, TabView, caption, code_panel, log, look_of, safe_view
from ..inputs import ChoiceDropdown, ChoiceRadio, WholeSlider


def replay_of(checkpoint: Path) -> Optional[Replay]:
    """The checkpoint's training replay, thinned to the points the view shows; None without one."""
    path = checkpoint / REPLAY_FILE
    try:
        return load_replay(path).thin(REPLAY_POINTS) if path.is_file() else None
    except (OSError, ValueError, KeyError):
        log.warning("could not read %s; the 'How it learned' tab stays empty", path)
        return None


def build_learning_tab(page: Page) -> TabView:
    n = len(page.replay.points) if page.replay else 1
    with gr.Row():
        example = ChoiceDropdown(learning.example_choices(page.replay) if page.replay
                                 else [("(no replay)", 0)],
                              value=0, label="Example sentence", scale=2, min_width=260)
        point = WholeSlider(1, max(n, 2), value=n, step=1, label="Training checkpoint (early → late)",
                            scale=2, min_width=260, elem_id="replay-slider")
        kind = ChoiceRadio(KIND_CHOICES, value="cross", label="Attention kind", scale=3, min_width=330)
        layer = WholeSlider(1, page.cfg.n_decoder_layers, value=1, step=1, label="Layer", scale=2,
                            min_width=180)
        head = ChoiceDropdown(page.head_choices, value="mean over heads", label="Head", scale=1,
                              min_width=150)
    caption("slide from early to late checkpoints: the translation moves towards the reference as the loss "
            "falls, and the attention sharpens from a blur into its pattern (colours on one 0–1 scale for "
            "every checkpoint).")
    with gr.Row():
        with gr.Column():
            own_scale = gr.Checkbox(False,
                                    label="Colour each map over its own range (off: 0–1 at every checkpoint, "
                                    "so that checkpoints compare)", elem_id="replay-own-scale",
                                    container=False)
            attn_plot = gr.Plot(show_label=False, label="Attention at this point of training",
                                elem_id="replay-plot")
        with gr.Column():
            gr.Markdown("During training, 8 fixed sentences were translated at log-spaced steps: move "
                        "through training and watch the translation, the loss and the attention take shape.")
            info = gr.HTML(elem_id="replay-info")
            loss_plot = gr.Plot(show_label=False, label="Loss", elem_id="replay-loss")
    # recorded, then drawn
    code_panel("transformer.training.evaluation:record_replay", learning.learning_view)

    @safe_view
    def draw_learning(trace, example_v, point_v, kind_v, layer_v, head_v, own_v, look, large, scale,
                      narrow=False):
        return learning.learning_view(page.replay, int(example_v or 0), int(point_v), kind_v, int(layer_v),
                                      head_v, look_of(look, large, scale, narrow), bool(own_v))

    tab = TabView(draw_learning, [example, point, kind, layer, head, own_scale], [info, attn_plot, loss_plot])
    tab.link = dict(kind=kind, layer=layer, head=head)
    tab.redraw_on_kind(page, kind, layer)
    tab.redraw_on(page, [example, point, layer, head, own_scale], show_progress="hidden",
                  trigger_mode="always_last")
    return tab
