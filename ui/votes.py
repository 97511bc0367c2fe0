"""The room answers: in a live session the presenter asks the room about the view on screen, the students
answer on their phones, the projector shows the room's count live, and Reveal shows the model's own answer
beside it.

The questions and their rules are ``transformer/votes.py``; the room's store keeps them and counts the answers
(``rooms.py``, ``rooms_redis.py``: one answer per student, checked open in the same step that stores it); the
students' answers come in by ``POST /live/rooms/CODE/answer`` (``live_routes.py``) and their page draws the
question (``static/vote.js``). Here: the presenter's panel "Ask the room" (presenter mode, while a live
session runs): ask, stop answers, reveal, clear, and download every question of the room with its counts (CSV
and JSON). Only the room's secret, kept in the presenter's browser, asks, closes and reveals.
"""
from __future__ import annotations

import os
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import gradio as gr

from transformer.votes import (KINDS, PATTERNS, Question, VoteError, choice_question, export_csv, export_json,
                               head_question, next_question, piece_of, piece_question)
from transformer.viz.votes import status_html, votes_figure

from .inputs import ChoiceDropdown, ChoiceRadio, TextInput, WholeSlider
from .live import LiveRooms, held, view_state
from .page import KIND_CHOICES, Page, log, look_of
from .reports import report_folder
from .rooms import RoomError, StoreDown

LAST_ROOM_KEY = "transformer-live-last-room"
STORE_DOWN = "The lecture room store does not answer just now: try again in a moment."
# the projector's count, while answers are open (the issue asks for at least once a second)
COUNT_EVERY_S = 0.7
QUESTION_CHOICES = [(words, kind) for kind, words in KINDS.items()]
# the view on the presenter's screen is blurred while the room answers (a figure would give the answer away):
# the page's body carries "vote-hiding" while the panel shows an open or closed question and the box is ticked
HIDING_JS = ("() => { setTimeout(() => { const s = document.querySelector('#vote-status .vote-status');"
             " const st = s ? s.dataset.status : 'none';"
             " const hide = document.querySelector('#vote-hide input');"
             " document.body.classList.toggle('vote-hiding', (st === 'open' || st === 'closed') && !!(hide "
             "&& hide.checked)); document.body.classList.toggle('vote-shown', st !== 'none');"
             " if (st !== 'none') document.body.classList.add('voted'); }, 0); }")


def stage(q: Optional[Question]) -> Optional[tuple]:
    """Which question, and how far it has gone (open, closed, revealed)."""
    return (q.id, q.status) if q is not None else None


def pattern_choices(kind: str) -> list:
    return [(words, name) for name, words in PATTERNS.get(kind, {}).items()]


@dataclass
class VotePanel:
    kind: gr.Dropdown
    ask: gr.Button
    stop: gr.Button
    reveal: gr.Button
    done: gr.Button
    head_row: gr.Row
    attention: gr.Radio
    pattern: gr.Dropdown
    choice_row: gr.Row
    prompt: gr.Textbox
    options: gr.Textbox
    right: gr.Slider
    status: gr.HTML
    plot: gr.Plot
    hide: gr.Checkbox
    export: gr.Button
    files: gr.File


def build_vote_panel() -> VotePanel:
    """The presenter's panel above the tabs: hidden (no height taken from the figures) until "Ask the room"
    beside "End live session" opens it, and open while a question is on the students' pages."""
    with gr.Column(elem_id="vote-panel", elem_classes="presenter-only"):
        with gr.Row(elem_id="vote-ask-row", equal_height=True):
            kind = ChoiceDropdown(QUESTION_CHOICES, value="piece", label="Question", scale=4, min_width=260,
                                  filterable=False, elem_id="vote-kind")
            ask = gr.Button("Ask", variant="primary", scale=1, min_width=90, elem_id="vote-ask")
            stop = gr.Button("Stop answers", scale=1, min_width=130, elem_id="vote-stop")
            reveal = gr.Button("Reveal", variant="primary", scale=1, min_width=100, elem_id="vote-reveal")
            done = gr.Button("Done", scale=1, min_width=90, elem_id="vote-done")
        with gr.Row(visible=False, elem_id="vote-head-row") as head_row:
            attention = ChoiceRadio(KIND_CHOICES, value="encoder", label="Attention kind",
                                    elem_id="vote-attention")
            pattern = ChoiceDropdown(pattern_choices("encoder"), value="previous token", label="The pattern",
                                     filterable=False, elem_id="vote-pattern")
        with gr.Row(visible=False, elem_id="vote-choice-row") as choice_row:
            prompt = TextInput(label="Your question", max_length=200, scale=3, elem_id="vote-prompt")
            options = TextInput(label="Options, one per line (2 to 6)", lines=3, max_lines=6, max_length=600,
                                scale=3, elem_id="vote-options")
            right = WholeSlider(1, 6, value=1, step=1, label="The right option", scale=1,
                                elem_id="vote-right")
        status = gr.HTML(status_html(None, {}, 0), elem_id="vote-status", padding=False)
        plot = gr.Plot(show_label=False, label="The room's answers", visible=False, elem_id="vote-plot")
        with gr.Row(equal_height=True):
            hide = gr.Checkbox(True,
                               label="Blur the view on this screen until Reveal (it may show the answer)",
                               elem_id="vote-hide")
            export = gr.Button("Download the room's questions (CSV, JSON)", size="sm", elem_id="vote-export")
        files = gr.File(label="The room's questions and counts (no student is named)", file_count="multiple",
                        visible=False, interactive=False, height=90, elem_id="vote-files")
    return VotePanel(kind, ask, stop, reveal, done, head_row, attention, pattern, choice_row, prompt, options,
                     right, status, plot, hide, export, files)


def known_piece_of(tokenizer):
    """A student's typed word as one piece of the model's vocabulary ("chat" → "▁chat"), or None (every typed
    word is refused where the translator has no tokenizer of its own)."""
    if tokenizer is None:
        return None
    return lambda word: piece_of(word, tokenizer.piece_id, lambda i: tokenizer.pieces([i])[0])


class RoomQuestions:
    """The presenter's side, over the live session's room store (``LiveRooms``): every action reads the room's
    current question from the store, so a reload of the presenter's page, or a second app process, acts on the
    same question."""

    def __init__(self, live: LiveRooms, page: Page, tabs: list) -> None:
        self.live, self.page, self.tabs = live, page, tabs
        self.rooms, self.watch = live.rooms, live.watch

    def room(self, room_v) -> tuple[str, str]:
        room = held(room_v, self.rooms.keys)
        if room is None:
            raise gr.Error("Start a live session first: the question goes to the students who follow it.")
        return room

    def current(self, code: str) -> Optional[Question]:
        view = self.rooms.read(code)
        return Question.of(view.question) if view is not None and view.question else None

    def build(self, trace, kind, step, layer, head, attention, pattern, prompt, options, right,
              view) -> Question:
        if kind == "choice":
            return choice_question(prompt, str(options or "").splitlines(), right, view)
        if trace is None:
            raise VoteError("Translate a sentence first: the question is about its translation.")
        if kind == "piece":
            return piece_question(trace, step or 1, int(layer or self.page.cfg.n_decoder_layers), head)
        if kind == "next":
            return next_question(trace, step or 1, int(layer or 0), head)
        if kind == "head":
            return head_question(trace, attention, pattern)
        raise VoteError("Pick a question.")

    def shown(self, code: str, q: Optional[Question], large: bool, look: str, scale: str) -> tuple:
        """The status line, the chart (hidden without a question) and what they show (for the count's
        skip)."""
        counts = (q.counts if q is not None and q.status != "open"
                  else (self.rooms.tally(code, q.id) if q else {}))
        followers = (q.followers if q is not None and q.status != "open" else self.rooms.followers(code))
        seen = (q.id, q.status, tuple(sorted(counts.items())), followers) if q else None
        if q is None:
            return status_html(None, {}, 0), gr.update(visible=False, value=None), seen
        lk = look_of(look, large, scale)
        fig = votes_figure(q, counts, lk.dark, lk.font, revealed=q.status == "revealed")
        return status_html(q, counts, followers), gr.update(visible=True, value=fig), seen

    def ask(self, room_v, trace, kind, step, layer, head, attention, pattern, prompt, options, right, text,
            tab, scale, look, large, *values):
        code, secret = room = self.room(room_v)
        try:
            q = self.build(trace, kind, step, layer, head, attention, pattern, prompt, options, right,
                           view_state(self.page, self.tabs, trace, text, tab, scale, values))
            previous = self.current(code)
            if previous is not None and previous.status == "open":
                self.rooms.close(*room, previous.id, self.rooms.followers(code), False)
            asked = Question.of(self.rooms.ask(*room, {**q.to_dict(), "asked": time.time()}))
        except VoteError as e:
            raise gr.Error(str(e), print_exception=False)
        except StoreDown:
            raise gr.Error("The question could not be asked: the lecture room store does not answer. Try "
                           "again in a moment.", print_exception=False)
        except RoomError as e:
            raise gr.Error(f"The question could not be asked: {e}.", print_exception=False)
        self.watch.poke(code)
        return (*self.shown(code, asked, large, look, scale), gr.Timer(active=True))

    def act(self, what: str, room_v, look, large, scale):
        """Stop answers, Reveal, or Done (the question off the students' pages) on the room's current
        question."""
        code, secret = room = self.room(room_v)
        try:
            q = self.current(code)
            if q is None:
                raise gr.Error("No question is on the students' pages: ask one first.", print_exception=False)
            if what in ("stop", "reveal") or q.status == "open":
                q = Question.of(self.rooms.close(*room, q.id, self.rooms.followers(code), what == "reveal"))
            if what == "done":
                self.rooms.dismiss(*room)
                q = None
        except StoreDown:
            raise gr.Error(STORE_DOWN, print_exception=False)
        except RoomError as e:
            raise gr.Error(f"{e}.", print_exception=False)
        self.watch.poke(code)
        return (*self.shown(code, q, large, look, scale),
                gr.Timer(active=q is not None and q.status == "open"))

    def count(self, room_v, seen, look, large, scale):
        """The timer's tick: the chart and the count again when either changed (a quiet room sends
        nothing)."""
        room = held(room_v, self.rooms.keys)
        if room is None:
            return gr.skip(), gr.skip(), gr.skip(), gr.Timer(active=False)
        try:
            q = self.current(room[0])
            status, plot, now = self.shown(room[0], q, large, look, scale)
            # a Stop, Reveal or Ask that landed meanwhile: its own answer shows it, and this older one must
            # not come after it (the projector would show the open count, blurred, until the next tick)
            moved = stage(self.current(room[0])) != stage(q)
        except StoreDown:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        if now == seen or moved:
            return gr.skip(), gr.skip(), gr.skip(), gr.skip()
        return status, plot, now, gr.Timer(active=q is not None and q.status == "open")

    def download(self, room_v, last_room):
        """Every question of the room (or of the last one this page ran, after its end) as CSV and JSON."""
        room = held(room_v, self.rooms.keys) or held(last_room, self.rooms.keys)
        if room is None:
            raise gr.Error("Start a live session and ask a question first.", print_exception=False)
        try:
            questions = [Question.of(q) for q in self.rooms.questions(*room)]
        except StoreDown:
            raise gr.Error(STORE_DOWN, print_exception=False)
        except RoomError:
            questions = []
        if not questions:
            raise gr.Error("This room has no questions yet (or they are no longer kept).",
                           print_exception=False)
        folder = Path(tempfile.mkdtemp(prefix="room-questions-", dir=report_folder()))
        stamp = time.strftime("%Y%m%d-%H%M", time.gmtime())
        out = []
        for ext, body in (("csv", export_csv(questions)), ("json", export_json(questions, room=room[0]))):
            path = folder / f"room-{room[0]}-{stamp}-questions.{ext}"
            path.write_text(body, encoding="utf-8")
            out.append(str(path))
        log.info("live room %s: %d questions downloaded", room[0], len(questions))
        return gr.update(value=out, visible=True)


def wire_votes(panel: VotePanel, live: LiveRooms, page: Page, tabs: list, current_tab, controls: list,
               start_btn: gr.Button) -> None:
    votes = RoomQuestions(live, page, tabs)
    steps = next(t for t in tabs if t.tab_id == "steps")
    quiet = dict(api_visibility="private", show_progress="hidden")
    seen = gr.State(None)
    # the room this browser ran last: its questions download after its end too (and after a reload
    # of the page)
    last_room = gr.BrowserState(None, storage_key=LAST_ROOM_KEY,
                                secret=os.environ.get("APP_BROWSER_STATE_KEY", LAST_ROOM_KEY))
    timer = gr.Timer(COUNT_EVERY_S, active=False)
    look = [page.look[0], page.look[1], page.look[2]]        # light/dark, presenter, colour scale
    shown = [panel.status, panel.plot, seen, timer]
    panel.kind.change(lambda k: (gr.update(visible=k == "head"), gr.update(visible=k == "choice")),
                      panel.kind, [panel.head_row, panel.choice_row], queue=False, **quiet)
    panel.attention.change(lambda a: gr.update(choices=pattern_choices(a), value=pattern_choices(a)[0][1]),
                           panel.attention, panel.pattern, queue=False, **quiet)

    def ask(room_v, trace, kind, step, layer, head, attention, pattern, prompt, options, right, text, tab,
            look_v, large, scale, *values):
        out = votes.ask(room_v, trace, kind, step, layer, head, attention, pattern, prompt, options, right,
                        text, tab, scale, look_v, large, *values)
        return (*out, room_v)
    ask_inputs = [live.room, page.trace, panel.kind, steps.link["step"], steps.link["layer"],
                  steps.link["head"], panel.attention, panel.pattern, panel.prompt, panel.options,
                  panel.right, page.text, current_tab, *look, *controls]
    panel.ask.click(ask, ask_inputs, [*shown, last_room], concurrency_id="votes", **quiet).then(
        None, None, None, js=HIDING_JS, queue=False, **quiet)
    for button, what in ((panel.stop, "stop"), (panel.reveal, "reveal"), (panel.done, "done")):
        button.click(lambda r, lv, lg, sc, what=what: votes.act(what, r, lv, lg, sc), [live.room, *look],
                     shown, concurrency_id="votes", **quiet).then(None, None, None, js=HIDING_JS, queue=False,
                                                                  **quiet)
    timer.tick(votes.count, [live.room, seen, *look], shown, queue=False, **quiet).then(
        None, None, None, js=HIDING_JS, queue=False, **quiet)
    panel.hide.change(None, None, None, js=HIDING_JS, queue=False, **quiet)
    # a resumed session (the presenter's page reloaded, the app restarted) shows the room's question
    # as it stands
    start_btn.click(votes.count, [live.room, seen, *look], shown, queue=False, **quiet).then(
        None, None, None, js=HIDING_JS, queue=False, **quiet)
    panel.export.click(votes.download, [live.room, last_room], panel.files, concurrency_id="votes", **quiet)
