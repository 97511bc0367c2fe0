"""The whole page: the header, the sentence box, the tabs (in the order of ``ui/tabs/__init__.py``) and the
page's events (``build_demo``); ``serve`` launches it with its look.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import gradio as gr
from starlette.middleware import Middleware

from transformer.serving.translator import Translator
from transformer.viz.figure import COLORSCALES

from .inputs import ChoiceDropdown
from .events import NewTraceViews, draw_on_select, redraw_visible, sentence_choices, translate_callback
from .fast_events import one_hop
from .header import build_display_section, build_header, build_input_section
from .links import BLUR_JS, link_controls, link_loader, wire_links
from .follow import FollowerViews, FollowPage, ViewFrames
from .live import wire_live
from .live_routes import live_routes
from .page import Page
from .reports import delete_cache_setting, sweep_reports
from .room_limits import RoomLimits
from .room_watch import RoomWatch
from .rooms import MemoryRooms, RoomStore
from .sessions import use_lean_sessions
from .settings import (APP_CONCURRENCY, APP_GRADIO_ANALYTICS, APP_MAX_SESSIONS, APP_MAX_THREADS,
                       APP_REDRAW_CONCURRENCY, APP_STATUS_UPDATE_RATE, APP_TRANSLATE_WAITING)
from .tabs import DEFAULT_TAB, TABS
from .tabs.about import build_about_tab
from .tabs.learning import replay_of
from .theme import CSS, page_js, theme
from .tour import tour_json
from .votes import VotePanel, build_vote_panel, known_piece_of, wire_votes


def build_tabs(page: Page, translator: Translator, checkpoint: Path, current_tab: gr.State, drawn: gr.State):
    """Every tab; opening one records it as the tab on screen (for the link and the redraws) and draws it."""
    tabs, gr_tabs = [], []
    with gr.Tabs(selected=DEFAULT_TAB, overflow_behavior="wrap", elem_id="tabs") as tabs_box:
        for title, tab_id, build in TABS:
            with gr.Tab(title, id=tab_id) as gr_tab:
                tabs.append(build(page))
            tabs[-1].tab_id = tab_id
            gr_tabs.append(gr_tab)
        with gr.Tab("About", id="about") as tab:
            build_about_tab(page, translator.num_parameters(), checkpoint)
        tab.select(lambda: "about", None, current_tab, api_visibility="undocumented", queue=False)
    for tab, gr_tab in zip(tabs, gr_tabs):      # (after every tab: the fits still due are numbered page-wide)
        draw_on_select(page, tabs, tab, gr_tab, current_tab, drawn)
    return tabs, tabs_box


@dataclass
class PageParts:
    """The page's components as ``build_page`` lays them out (the events come after, in ``build_demo``)."""

    page: Page
    tabs: list
    tabs_box: gr.Tabs
    current_tab: gr.State     # the tab on this user's screen: the only one a Translate draws
    drawn: gr.State           # (what they were drawn from, the tabs drawn from it, fits due): see drawn_parts
    example: gr.Dropdown
    picker: gr.Dropdown
    go_btn: gr.Button
    results: list             # French, run info, pieces
    link: tuple               # Copy link button, link box
    live: tuple               # live session: start, end, the room panel, its status line
    votes: VotePanel          # the room answers: ask, count, reveal (ui/votes.py)


def build_page(translator: Translator, checkpoint: Path) -> PageParts:
    """Header, sentence box, sentence picker and the tabs, in a Blocks context the caller opened."""
    trace_state = gr.State(None)   # this user's trace: every redraw reads it, none re-runs the model
    current_tab, drawn = gr.State(DEFAULT_TAB), gr.State(None)
    look, large, example = build_header()
    text, go_btn, results, link, look, live = build_input_section(
        lambda: build_display_section(translator.cfg, trace_state, look, large))
    picker = ChoiceDropdown([], label="Your text has several sentences", visible=False,
                            elem_id="sentence-picker")
    page = Page(translator.cfg, trace_state, look, replay_of(checkpoint), translator, english=text,
                original=gr.State(None), text=text, french=results[0], pieces=results[2])
    # shown (style.css) only while it has something to say
    with gr.Row(elem_id="viewing-row", equal_height=True):
        page.viewing.render()
        page.back.render()
    votes = build_vote_panel()       # presenter mode, during a live session: above the tabs, folded to a line
    tabs, tabs_box = build_tabs(page, translator, checkpoint, current_tab, drawn)
    return PageParts(page, tabs, tabs_box, current_tab, drawn, example, picker, go_btn, results, link, live,
                     votes)


def build_demo(translator: Translator, checkpoint: Path, concurrency: int = APP_CONCURRENCY,
               rooms: Optional[RoomStore] = None) -> gr.Blocks:
    """The whole page. `rooms`: where live sessions are kept (default: this process's memory); ``serve`` adds
    the followers' route for them (``demo.rooms``)."""
    rooms = rooms if rooms is not None else MemoryRooms()
    with gr.Blocks(title="Transformer, step by step: English → "
                         "French", delete_cache=delete_cache_setting()) as demo:
        parts = build_page(translator, checkpoint)
        page, tabs, tabs_box, current_tab, drawn = (parts.page, parts.tabs, parts.tabs_box, parts.current_tab,
                                                    parts.drawn)
        text, trace_state, example, picker, go_btn, results = (page.text, page.trace, parts.example,
                                                               parts.picker, parts.go_btn, parts.results)

        redraw = redraw_visible(page, tabs, current_tab, drawn)   # the tab on screen: an event's arguments
        result_outputs = [trace_state, *results, page.step_slider]
        model = dict(concurrency_id="model",   # with the batcher, waiting requests are decoded together
                     concurrency_limit=APP_TRANSLATE_WAITING if getattr(translator, "batcher", None)
                     else concurrency)

        # A new trace (Translate, a picked sentence or example, a link at page load) comes with its views in
        # the same event: the tabs' fits and the visible tab's figures (NewTraceViews), one
        # request per Translate.
        fresh = NewTraceViews.of(page, tabs, current_tab, drawn)
        translated, drawn_tab, moved_on = wire_translate(translator, parts, fresh, result_outputs, redraw,
                                                         model)

        wire_pickers((picker, example), translated, [text, *result_outputs, drawn_tab, drawn], fresh, model,
                     moved_on)
        wire_branches(page, tabs, current_tab, drawn)
        wire_look(page, redraw)
        wire_page_load(demo, translator, page, tabs, fresh, [text, *result_outputs, tabs_box, current_tab],
                       drawn, redraw, model, picker)
        watch, limits = RoomWatch(rooms), RoomLimits()
        live = wire_live(demo, page, tabs, current_tab, rooms, watch, *parts.live[:4], limits=limits)
        wire_votes(parts.votes, live, page, tabs, current_tab, [c for *_, c in link_controls(tabs)],
                   parts.live[0])
        wire_links(page, tabs, text, current_tab, *parts.link,
                   new_text=[go_btn.click, text.submit, example.input, picker.input])
    demo.rooms, demo.watch, demo.limits = rooms, watch, limits
    demo.frames = ViewFrames(FollowerViews(page, tabs, translator).build)   # what a follower's page is sent
    # a student's typed word (votes)
    demo.known_piece = known_piece_of(getattr(translator, "tokenizer", None))
    # the page's scripts, the tour's stops with the model's sizes
    demo.page_js = page_js(tour_json(translator.cfg))
    return demo


def wire_translate(translator: Translator, parts, fresh: NewTraceViews, result_outputs: list, redraw: dict,
                   model: dict) -> tuple:
    """Translate (the button, Enter) and the API's /translate: the trace, what shows it and the views of the
    tab on screen in one event. Returns (translated: a sentence to its results and views, the box naming the
    tab a Translate drew, the browser's check that another tab is on screen by the time the answer comes)."""
    page, text, picker, go_btn, drawn = parts.page, parts.page.text, parts.picker, parts.go_btn, parts.drawn
    step = page.step_slider
    run = translate_callback(translator)

    def translated(text_v, values) -> tuple:
        """The trace and what shows it (French, info, pieces, step), then `drawn` and the views."""
        trace, *shown, step_v = run(text_v)
        drawn_v, views_out = fresh.views(trace, {step: step_v}, *values)
        return (trace, *shown, step_v), (drawn_v, *views_out)

    # The tab a Translate drew (the one on screen when it was sent), and a box the page sets when another tab
    # is on screen by the time the answer comes (opened while the Translate waited): that tab redraws. Both
    # compared in the browser (MOVED_JS), no request: a lecture's 100 Translates, 100 fewer.
    drawn_tab = gr.Textbox(visible=False, elem_id="drawn-tab")
    moved = gr.Textbox(visible=False, elem_id="moved")

    def translate(text_v, *values):
        if not str(text_v or "").strip():      # an empty box keeps what is on screen, and says why
            gr.Warning("Type an English sentence first: the translation and the views below stay as they "
                       "are.")
            return (gr.skip(),) * (len(result_outputs) + 3 + len(fresh.outputs))
        result, views_out = translated(text_v, values)
        return (*result, sentence_choices(text_v), values[0], *views_out)
    translate.__doc__ = run.__doc__
    typed = gr.on([go_btn.click, text.submit],
                  **one_hop(translate, [text, *fresh.inputs], [*result_outputs, picker, drawn_tab, drawn,
                                                               *fresh.outputs]),
                  api_name="translate_and_draw", api_visibility="undocumented", **model)
    moved_on = dict(fn=None, inputs=[drawn_tab], outputs=moved, js=MOVED_JS, queue=False,
                    api_visibility="undocumented")
    moved.change(**redraw, api_visibility="undocumented", concurrency_id="draw")
    typed.then(**moved_on)
    # The API's /translate: the French, the run's details, the pieces and the step range (and this session's
    # trace, for /step_view and the other endpoints), without the figures.
    gr.on([], run, text, result_outputs, api_name="translate", **model)   # no trigger on the page: the API's
    return translated, drawn_tab, moved_on


def wire_look(page: Page, redraw: dict) -> None:
    """The look, presenter mode and the colour scale redraw the tab on screen; so does a phone turned (the
    narrow-screen box, set by the page's script). The look and the narrow-screen box redraw on .input: the
    page-load event sets them too, and draws in them itself."""
    for c in page.look[1:3]:
        c.change(**redraw, api_visibility="undocumented", concurrency_id="draw")
    for c in (page.look[0], page.look[3]):
        c.input(**redraw, api_visibility="undocumented", concurrency_id="draw")


def wire_pickers(choosers, translated, outputs: list, fresh: NewTraceViews, model: dict,
                 after: tuple) -> None:
    """The sentence picker and the examples: a choice is translated as if typed (`translated`), and shown in
    the sentence box; `outputs`: the sentence box, the translation's outputs, the tab drawn and `drawn`; then
    the event `after` runs (its listener's arguments)."""
    def pick(choice, *values):
        if not choice:
            return (gr.update(),) * len(outputs) + (gr.skip(),) * len(fresh.outputs)
        result, views_out = translated(choice, values)
        # the sentence box, the results, the tab drawn, the views
        return (choice, *result, values[0], *views_out)
    for chooser in choosers:
        chooser.input(**one_hop(pick, [chooser, *fresh.inputs], [*outputs, *fresh.outputs]),
                      api_visibility="undocumented", **model).then(**after)
        # ← → step again
        chooser.input(None, None, None, js=BLUR_JS, api_visibility="undocumented", queue=False)


def wire_branches(page: Page, tabs: list, current_tab: gr.State, drawn: gr.State) -> None:
    """A what-if branch, going back, your French: a new trace, redrawn as after Translate, except the step
    tab's fit (it would take the branch for the original)."""
    branched = NewTraceViews.of(page, tabs, current_tab, drawn, mode="branch")

    def redraw_branch(trace, *values):
        drawn_v, views_out = branched.views(trace, {}, *values)
        return (drawn_v, *views_out)
    for ev in page.model_events:
        ev.then(**one_hop(redraw_branch, [page.trace, *branched.inputs], [drawn, *branched.outputs]),
                api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")


# After a Translate: another tab on screen than the one it drew (``#drawn-tab``) sets ``#moved``, which
# redraws it. (undefined: no output set, no change event; returning the same value would still fire one)
MOVED_JS = """(drawn) => {
  const tab = document.querySelector('#tabs [role="tab"][aria-selected="true"]');
  return tab && drawn && tab.dataset.tabId !== drawn ? String(Date.now()) : undefined;
}"""

LOAD_JS = """(...args) => {
  args[%d] = window.matchMedia('(max-width: 640px)').matches;
  args[%d] = document.body.classList.contains('dark') ? 'Dark' : 'Light';
  return args;
}"""


def wire_page_load(demo: gr.Blocks, translator: Translator, page: Page, tabs: list, fresh: NewTraceViews,
                   loaded_outputs: list, drawn: gr.State, redraw: dict, model: dict,
                   picker: gr.Dropdown) -> None:
    """At page load: the link's sentence (or the first example) translated and the view it names drawn, in one
    event. (A followed room's link, ``?follow=CODE``, opens the follower's page instead: ui/follow.py.)
    `loaded_outputs`: the sentence box, the translation's outputs, the tab bar and the tab on screen."""
    load, link_outs = link_loader(translator, page, tabs)
    step, look, scale, narrow = loaded_outputs[5], page.look[0], page.look[2], page.look[3]
    at_look, at_scale, at_narrow = (next(i for i, c in enumerate(fresh.inputs) if c is x)
                                    for x in (look, scale, narrow))

    def opened(params: dict, notes: list, values) -> tuple:
        loaded = load(params, notes)       # text, trace, French, info, pieces, step, tabs, tab, link controls
        trace, step_v, tab_v, link_v = loaded[1], loaded[5], loaded[7], loaded[8:]
        values = list(values)
        if params.get("scale") in COLORSCALES:   # the link's colour scale
            values[at_scale] = params["scale"]
        set_now = {step: step_v, **dict(zip(link_outs, link_v))}
        drawn_v, views_out = fresh.views(trace, set_now, tab_v, *values[1:])
        return (*loaded, values[at_look], values[at_scale], values[at_narrow], sentence_choices(loaded[0]),
                drawn_v, *views_out)

    def open_page(request: gr.Request, *values):
        params = dict(request.query_params) if request is not None else {}
        return opened({k: v for k, v in params.items() if k != "room"}, [], values)
    # A link sets controls (kind, layer, head) whose change events redraw from values the browser may not
    # have settled yet; one last redraw from the settled values, after them, leaves the view the link names.
    outputs = [*loaded_outputs, *link_outs, look, scale, narrow, picker, drawn, *fresh.outputs]
    # the first figures are drawn for the screen they land on (a phone's stack their panels) and in the look
    # the page opened in (Gradio darkens it for a browser that prefers dark, or for ?__theme=dark)
    demo.load(**one_hop(open_page, fresh.inputs, outputs), js=LOAD_JS % (at_narrow, at_look),
              api_visibility="undocumented",
              **model).then(**redraw, api_visibility="undocumented", show_progress="hidden",
                            concurrency_id="draw")


def serve(demo: gr.Blocks, host: str, port: int, share: bool, queue_size: int, block: bool = True,
          status_update_rate: "float | str" = APP_STATUS_UPDATE_RATE) -> None:
    """Queue and launch the page with its look, and the live rooms' route beside it; report files are swept
    on Gradio's cache schedule."""
    sweep_reports(delete_cache_setting()[0])
    use_lean_sessions()      # no per-session copy of the page config (0.5-1.5 MB a session): ui/sessions.py
    # Gradio's queue sums up every event it has recorded (a pandas table of up to 10,000) after each event,
    # for a monitoring page this app does not use: 3-10 ms holding the GIL per event, more as a lecture goes
    # on (bench/RESULTS.md, seventh round). Read when the queue is made; a value set in the environment wins.
    for name, value in APP_GRADIO_ANALYTICS.items():
        os.environ.setdefault(name, str(value))
    demo.queue(default_concurrency_limit=APP_REDRAW_CONCURRENCY, max_size=queue_size,
               status_update_rate=status_update_rate)   # "auto": Gradio's default
    demo.launch(server_name=host, server_port=port, share=share, theme=theme(), max_threads=APP_MAX_THREADS,
                state_session_capacity=APP_MAX_SESSIONS,
                css=CSS, js=demo.page_js, footer_links=["api", "gradio"], show_error=False,
                prevent_thread_lock=True,
                app_kwargs={"routes": live_routes(demo.rooms, demo.watch, demo.frames, demo.limits,
                                                  demo.known_piece),
                        "middleware": [Middleware(FollowPage)]})
    if block:
        demo.block_thread()
