"""The page around the tabs: the title, the examples and the look; the sentence box, the French, the pieces;
the glossary, the colour scale and the HTML report.
"""
from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Callable

import gradio as gr

from transformer import examples
from transformer.config import ModelConfig
from transformer.viz.figure import COLORSCALES, DEFAULT_SCALE
from transformer.viz.report import build_report, report_filename

from .page import look_of, safe_view
from .reports import report_folder
from .settings import TEXTBOX_MAX_CHARS
from .theme import GLOSSARY
from .inputs import ChoiceDropdown, ChoiceRadio, TextInput

TITLE_HTML = ('<div id="title-line"><h1>Transformer, step by step: English → French</h1><span '
              'class="tagline">A Transformer written from scratch after <i>Attention Is All You Need</i> '
              'translates with greedy decoding.</span></div>')


def build_header():
    """The title on one line; beside it the examples, the look and the presenter-mode switch."""
    with gr.Row(equal_height=True, elem_id="header"):
        with gr.Column(scale=3, min_width=480):
            gr.HTML(TITLE_HTML)
        example = ChoiceDropdown([("Examples…", "")] + examples.dropdown_choices(), value="",
                                 label="Examples", show_label=False, container=False, scale=1, min_width=220,
                                 elem_id="examples", filterable=False)
        with gr.Column(scale=0, min_width=440, elem_id="look-col"):
            with gr.Row(elem_id="look-row"):
                look = ChoiceRadio(["Light", "Dark"], value="Light", label="Look", show_label=False,
                                   container=False, elem_id="look", min_width=150)
                large = gr.Checkbox(label="Presenter mode", value=False, container=False, elem_id="presenter",
                                    min_width=120)
                # ui/static/tour.js
                gr.Button("? Tour", size="sm", elem_id="tour-btn", scale=0, min_width=80)
    look.change(None, look, None, js="(v) => { document.body.classList.toggle('dark', v === 'Dark'); }")
    large.change(None, large, None, js="(v) => { document.body.classList.toggle('presenter', !!v); }")
    return look, large, example


def build_input_section(extras: Callable[[], list]):
    """English → French on one line; then the pieces and run info, and beside them the link button and
    what ``extras()`` lays out (the glossary and the display settings)."""
    with gr.Row(equal_height=True, elem_id="io-row"):
        text = TextInput(label="English", placeholder="Type an English sentence and press Enter", max_lines=3,
                          scale=5, max_length=TEXTBOX_MAX_CHARS, elem_id="src-text", autofocus=True,
                          show_label=False, container=False)
        go_btn = gr.Button("Translate →", variant="primary", scale=1, min_width=120, elem_id="translate-btn")
        french = gr.Textbox(label="French", interactive=False, scale=5, elem_id="fr-text", buttons=["copy"],
                            show_label=False, container=False, placeholder="French translation")
        link_btn = gr.Button("Copy link", size="sm", scale=0, min_width=120, elem_id="link-btn")
    with gr.Row(elem_id="pieces-row"):
        with gr.Column(scale=3, min_width=300, elem_id="pieces-col"):
            pieces = gr.HTML(elem_id="pieces")
            info = gr.Textbox(label="Run", show_label=False, container=False, interactive=False,
                              elem_id="run-info")
        with gr.Column(scale=1, min_width=260, elem_id="extras"):
            # one line, scrolls
            link_box = gr.Textbox(label="Link to this view (copied)", visible=False, interactive=False,
                                  elem_id="link-box", buttons=["copy"], lines=1, max_lines=1)
            live = live_controls()
            look = extras()
    return text, go_btn, [french, info, pieces], (link_btn, link_box), look, live


# A student types the code the presenter projects: a plain form (no Gradio event), answered by
# the follower's page.
JOIN_HTML = ('<form class="join-form" action="/" method="get" autocomplete="off"><label for="join-code">Join '
             'a lecture</label><input id="join-code" name="follow" placeholder="code" maxlength="12" '
             'autocapitalize="characters" spellcheck="false" required pattern="\\s*[A-Za-z0-9]{4,12}\\s*" '
             'title="the code on the lecture\'s screen: 4 to 12 letters and digits"><button '
             'type="submit">Join</button></form>')


VOTE_TOGGLE_JS = ("() => { const on = document.body.classList.toggle('vote-panel-open');"
                  " document.getElementById('vote-toggle').setAttribute('aria-pressed', String(on)); }")


def live_controls() -> tuple:
    """Presenter mode: start and end a live session (ui/live.py); on other pages, the box that joins a
    lecture."""
    with gr.Row(elem_classes="presenter-only", elem_id="live-row"):
        start = gr.Button("Start live session", size="sm", elem_id="live-start")
        end = gr.Button("End live session", size="sm", elem_id="live-end", visible=False)
        # the room answers (ui/votes.py): opens the panel above the tabs (in the browser: no request)
        ask = gr.Button("Ask the room", size="sm", elem_id="vote-toggle")
    ask.click(None, None, None, js=VOTE_TOGGLE_JS, queue=False, api_visibility="private")
    panel = gr.HTML(visible=False, elem_id="live-panel")
    # outages, a resume
    note = gr.HTML("", elem_id="live-status", elem_classes="presenter-only", padding=False)
    gr.HTML(JOIN_HTML, elem_id="join", elem_classes="not-presenter", padding=False)
    return start, end, panel, note, ask


def build_display_section(cfg: ModelConfig, trace_state: gr.State, look, large) -> list:
    """The symbols explained, the colour scale and the HTML report; returns the look controls."""
    with gr.Accordion("Symbols: ▁ <s> </s> …", open=False, elem_id="glossary"):
        gr.Markdown(GLOSSARY)
    with gr.Accordion("Colours & report", open=False, elem_id="display"):
        scale = ChoiceDropdown(list(COLORSCALES), value=DEFAULT_SCALE,
                            label="Colour scale (Viridis and Cividis are colour-blind safe)")
        report_btn = gr.Button("Build HTML report of this translation", elem_id="report-btn")
        report_file = gr.File(label="Standalone HTML report (opens offline)", interactive=False, height=90,
                              elem_id="report-file")

    @safe_view
    def make_report(trace, look_v, large_v, scale_v):
        if trace is None:
            gr.Warning("Translate a sentence first; the report holds its figures.")
            return None
        body = build_report(trace, cfg, look_of(look_v, False, scale_v))
        # the folder is made once the report is built, so its age (what the sweep reads) starts when Gradio
        # can copy it
        out = (Path(tempfile.mkdtemp(prefix="trace-report-", dir=report_folder()))
               / report_filename(trace.source.text))
        out.write_text(body, encoding="utf-8")
        return str(out)

    report_btn.click(make_report, [trace_state, look, large, scale], report_file,
                     api_visibility="undocumented", concurrency_id="draw")
    # a phone's width (set by ui/static/screen.js at load and when the screen turns): figures
    # stack their panels
    narrow = gr.Checkbox(False, label="Narrow screen", elem_id="narrow-screen", elem_classes="offscreen",
                         container=False)
    return [look, large, scale, narrow]
