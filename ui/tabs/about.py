"""About: the architecture diagram built from the config, and the model card.
"""
from __future__ import annotations

from pathlib import Path

import gradio as gr

from transformer.viz import views

from ..page import Page, code_panel


def model_card(checkpoint: Path) -> str:
    card = checkpoint / "MODEL_CARD.md"
    if card.is_file():
        text = card.read_text(encoding="utf-8")
        # no relative images
        text = "\n".join(line for line in text.splitlines() if not line.startswith("![")) + "\n"
        return text.split("\n", 1)[1] if text.startswith("# ") else text
    return "_This checkpoint has no MODEL_CARD.md._"


def build_about_tab(page: Page, n_params: int, checkpoint: Path) -> None:
    gr.HTML(views.architecture_html(page.cfg, n_params))
    # the sizes, and the diagram drawn from them
    code_panel("transformer.config:ModelConfig", views.architecture_html)
    gr.Markdown(model_card(checkpoint))
