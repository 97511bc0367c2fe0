"""The page's look: CSS, the keyboard script and the glossary (static files in ``ui/static/``), and the
theme."""
from __future__ import annotations

from pathlib import Path

import gradio as gr

STATIC = Path(__file__).resolve().parent / "static"
# presenter.css after style.css: presenter mode's projector rules win over the page's own; phone.css last: a
# phone's touch targets keep their size in every mode
CSS = "\n".join((STATIC / name).read_text(encoding="utf-8")
                for name in ("style.css", "presenter.css", "phone.css"))
# Keyboard: ← / → step through decoding, only while the Step-by-step tab is on screen and never while
# typing (text fields, dropdowns, sliders keep their keys). Enter in the sentence box translates and
# leaves the box, so that the arrows step right after a translation.
# Live lecture (live.js): a follower's page listens to its room and hands each new view to the page.
# A phone turned to or from landscape (screen.js): figures are redrawn for the new width.
# One figure full screen (fullscreen.js): a button on each figure, Escape or the button leaves it.
# The guided tour (tour.js) plays the stops of ui/tour.py, given as its argument.
def page_js(tour_stops_json: str = "[]") -> str:
    def script(name: str, arg: str = "") -> str:
        return "(" + (STATIC / name).read_text(encoding="utf-8").strip() + f")({arg});"
    return ("() => { " + " ".join(script(n) for n in ("keys.js", "live.js", "screen.js", "fullscreen.js"))
            + " " + script("tour.js", tour_stops_json) + " }")


GLOSSARY = (STATIC / "glossary.md").read_text(encoding="utf-8")


def theme() -> gr.themes.Base:
    return gr.themes.Soft()
