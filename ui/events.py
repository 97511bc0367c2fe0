"""How a new translation reaches the screen: the Translate callback, then in the same event each tab's
fits and the visible tab's figures (``NewTraceViews``); the other tabs draw when opened (``draw_on_select``).
"""
from __future__ import annotations

import html
from dataclasses import dataclass
from typing import Optional

import gradio as gr

from transformer.config import MAX_INPUT_CHARS
from transformer.sentences import split_sentences
from transformer.serving.translator import Translator
from transformer.viz import views

from .fast_events import one_hop
from .page import Page, TabView, log, safe_view, slider_update, update_value


def translate_callback(translator: Translator):
    def run_translate(text):
        """The only callback that runs the model: this user's new trace, or a message."""
        if text is None or not str(text).strip():
            gr.Warning("Type an English sentence first.")
            return None, "", "Type an English sentence first.", "", gr.update()
        try:
            trace = translator.trace(str(text))
        except ValueError as e:
            gr.Warning(str(e))
            return None, "", str(e), "", gr.update()
        except Exception:  # a model failure is this user's, not the app's
            log.exception("translation failed")
            msg = "Sorry, the model failed on this input. Please try another sentence."
            gr.Warning(msg)
            return None, "", msg, "", gr.update()
        # Its notes (doubts on the input or the output) are in the pieces' HTML, under the translation they
        # are about, and go with it at the next Translate; a toast would cover the French, stack
        # and outlive them.
        return (trace, trace.translation, views.run_info(trace), views.pieces_html(trace),
                slider_update(len(trace.steps)))
    return run_translate


def notes_html(notes) -> str:
    """Notes shown inline, as the pieces' own notes are (views.pieces_html): escaped, one block each."""
    return "".join(f'<div class="note">{html.escape(str(n))}</div>' for n in notes)


def sentence_choices(text):
    """The picker of sentences, shown only when the text holds more than one: the sentences of the text the
    model reads, cut at MAX_INPUT_CHARS before any splitting (a 300 KB text would hold a worker for minutes
    and answer with every one of its sentences)."""
    sentences = split_sentences(str(text or "")[:MAX_INPUT_CHARS])
    if len(sentences) < 2:
        # (hidden already: sent as a plain None, ui/fast_events.py)
        return gr.update(visible=False, value=None)
    return gr.update(choices=sentences, value=None, visible=True,
                     label=f"{len(sentences)} sentences: the model learned mostly from single ones; pick one "
                           f"to "
                           "translate it alone")


def drawn_for(trace, *look) -> tuple:
    """What the figures on screen were drawn from: this trace (by its text and run) and this look."""
    return (trace.source.text, trace.seconds, len(trace.steps)) if trace is not None else None, look


def drawn_parts(drawn_v) -> tuple:
    """``drawn``'s parts: what the tabs were drawn from, the tabs drawn from it, and the fits still due (their
    numbers in NewTraceViews.fits: tabs that were off screen when the trace came, fitted when opened)."""
    return (None, frozenset(), frozenset()) if drawn_v is None else drawn_v


def cleared(tab: TabView) -> list:
    """A tab off screen after a new trace or look: its outputs emptied (``drawn`` says it is not drawn, so it
    draws when opened). Emptied, not ``gr.skip()``: Gradio rebuilds a component for every skip (~0.4 ms
    each, against ~0.08 ms for an empty value), and a Translate has some 30 outputs off screen."""
    return [None] * len(tab.outputs)


def redraw_visible(page: Page, tabs: list[TabView], visible: gr.State, drawn: gr.State) -> dict:
    """The event (``one_hop``'s arguments) that draws only the tab on screen (a change of look, a tab opened
    while a Translate waited), with its fits if they are still due: NewTraceViews in "redraw" mode. ``drawn``
    remembers what that tab was drawn from, and the others draw when opened (``draw_on_select``)."""
    views = NewTraceViews.of(page, tabs, visible, drawn, mode="redraw")

    def draw_visible(trace, *values):
        drawn_v, out = views.views(trace, {}, *values)
        return (drawn_v, *out)
    return one_hop(draw_visible, [page.trace, *views.inputs], [drawn, *views.outputs])


@dataclass
class NewTraceViews:
    """What a new trace brings, in the same event that made the trace (one request per Translate): the fits
    (slider ranges, pickers) of the tab on screen and of the page, then that tab drawn; the fits of tabs off
    screen are noted in ``drawn`` as due and run when the tab is opened (``draw_on_select``).

    ``mode``: "fresh" (a new translation: every fit), "branch" (a what-if branch, going back, your French: the
    fits marked ``after_branch``), "redraw" (no new trace: only the fits still due of the tab on screen).
    ``inputs`` and ``outputs`` follow the event's own (``inputs`` starts with the tab on screen);
    ``views(trace, set_now, *values)`` gives (``drawn``, the outputs), where ``set_now`` holds the values the
    event itself sets ({control: update}), e.g. the step slider's 1. A fit not run sends its outputs' values
    back as they are (a plain value costs Gradio nothing; an update rebuilds the component)."""

    fits: list           # (number, tab id, Fit): every fit of the page, numbered in tab order
    inputs: list
    outputs: list
    tabs: list
    look: list
    mode: str
    visible: gr.State
    drawn: gr.State
    original: gr.State

    @classmethod
    def of(cls, page: Page, tabs: list[TabView], visible: gr.State, drawn: gr.State, mode: str = "fresh",
           only: Optional[TabView] = None) -> "NewTraceViews":
        """`only`: the views of that one tab (the tab being opened), with its fits only."""
        assert mode in ("fresh", "branch", "redraw"), mode
        fits = [(i, tab.tab_id, f) for i, (tab, f) in enumerate((tab, f) for tab in tabs for f in tab.fits)]
        shown = [only] if only is not None else tabs
        fits = [(i, t, f) for i, t, f in fits if only is None or t == only.tab_id]
        inputs = [visible, drawn, page.original]
        for c in [*(c for tab in shown for c in tab.controls), *page.look,
                  *(c for _, _, f in fits for c in (*f.inputs, *f.outputs))]:
            if c not in inputs:            # a fit's outputs too: what a fit not run sends back unchanged
                inputs.append(c)
        outputs = [o for _, _, f in fits for o in f.outputs] + [o for tab in shown for o in tab.outputs]
        return cls(fits, inputs, outputs, shown, page.look, mode, visible, drawn, page.original)

    def views(self, trace, set_now: dict, *values) -> tuple:
        """(what the tabs were drawn from and the fits still due, for `drawn`), then the outputs."""
        now = dict(zip(self.inputs, values))
        current, original = now[self.visible], now[self.original]
        _, _, due = drawn_parts(now[self.drawn])
        due = set() if self.mode == "fresh" else set(due)
        for c, u in set_now.items():
            if c in now:
                now[c] = update_value(u, now[c])
        out = []
        for i, tab_id, f in self.fits:
            comes_now = self.mode == "fresh" or (self.mode == "branch" and f.after_branch)
            if comes_now and f.deferrable and tab_id != current:
                due.add(i)                     # fitted when its tab is opened
            if (comes_now and (tab_id == current or not f.deferrable)) or (i in due and tab_id == current):
                due.discard(i)
                # a fit for the greedy translation reads it also when it runs later, behind a branch
                subject = trace if comes_now or f.after_branch or original is None else original
                updates = f.fn(subject, *[now[c] for c in f.inputs])
                updates = updates if len(f.outputs) > 1 else (updates,)
                for c, u in zip(f.outputs, updates):
                    now[c] = update_value(u, now.get(c))
                out += updates
            else:
                out += [set_now.get(c, now.get(c)) for c in f.outputs]
        look = [now[c] for c in self.look]
        for tab in self.tabs:
            if tab.tab_id == current:
                try:
                    out += tab.draw(trace, *[now[c] for c in tab.controls], *look)
                except gr.Error as e:          # the translation still shows; this view says what failed
                    gr.Warning(e.message)
                    out += [gr.skip()] * len(tab.outputs)
            else:
                out += cleared(tab)
        return (drawn_for(trace, *look), frozenset({current}), frozenset(due)), tuple(out)


def draw_on_select(page: Page, tabs: list[TabView], tab: TabView, gr_tab: gr.Tab, visible: gr.State,
                   drawn: gr.State) -> None:
    """Opening a tab makes it the visible one and draws it (with its fits still due), unless it is already
    drawn from this trace and look."""
    views = NewTraceViews.of(page, tabs, visible, drawn, mode="redraw", only=tab)

    @safe_view
    def draw_if_stale(request: gr.Request, trace, *values):
        values = (tab.tab_id, *values[1:])             # the tab opened is the tab on screen
        given = dict(zip(views.inputs, values))
        # a live room's followers get the tab now, as it will be drawn
        page.announce(request, trace, tab.tab_id,
                      view={**{key: given[c] for key, c in tab.link.items() if c in given},
                            "scale": given[page.look[2]]})
        drawn_v = given[drawn]
        was, tab_ids, due = drawn_parts(drawn_v)
        now = drawn_for(trace, *[given[c] for c in page.look])
        n_out = len(views.outputs)
        # Nothing translated and nothing drawn yet: the first tab's select at page mount, racing the page's
        # own translation (which draws this tab itself); drawing empty figures now could land after it.
        # (nor is it the tab on screen: a link may have opened another)
        if trace is None and drawn_v is None:
            return (gr.skip(), gr.skip(), *[gr.skip()] * n_out)
        if was == now and tab.tab_id in tab_ids and not any(i in due for i, _, _ in views.fits):
            return (tab.tab_id, gr.skip(), *[gr.skip()] * n_out)
        (_, _, still_due), out = views.views(trace, {}, *values)
        return (tab.tab_id, (now, (tab_ids if was == now else frozenset()) | {tab.tab_id}, still_due), *out)

    gr_tab.select(**one_hop(draw_if_stale, [page.trace, *views.inputs], [visible, drawn, *views.outputs]),
                  api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
