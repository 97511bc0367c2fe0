"""The page's look: CSS, the keyboard script and the glossary (static files in ``ui/static/``), and the theme."""
from __future__ import annotations

from pathlib import Path

import gradio as gr

STATIC = Path(__file__).resolve().parent / "static"
CSS = (STATIC / "style.css").read_text(encoding="utf-8")
# Keyboard: ← / → step through decoding, only while the Step-by-step tab is on screen and never while
# typing (text fields, dropdowns, sliders keep their keys). Enter in the sentence box translates and
# leaves the box, so that the arrows step right after a translation.
# Live lecture (live.js): a follower's page polls its room and hands each new view to the page.
# A phone turned to or from landscape (screen.js): figures are redrawn for the new width.
JS = "() => { " + " ".join("(" + (STATIC / name).read_text(encoding="utf-8").strip() + ")();"
                           for name in ("keys.js", "live.js", "screen.js")) + " }"
GLOSSARY = (STATIC / "glossary.md").read_text(encoding="utf-8")


def theme() -> gr.themes.Base:
    return gr.themes.Soft()
