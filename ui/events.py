"""How a new translation reaches the screen: the Translate callback, then in the same event each tab's
fits and the visible tab's figures (``NewTraceViews``); the other tabs draw when opened (``draw_on_select``).
"""
from __future__ import annotations

from dataclasses import dataclass

import gradio as gr

from transformer.sentences import split_sentences
from transformer.translator import Translator
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
        for note in trace.notes:
            gr.Info(note)
        return trace, trace.translation, views.run_info(trace), views.pieces_html(trace), slider_update(len(trace.steps))
    return run_translate


def sentence_choices(text):
    """The picker of sentences, shown only when the text holds more than one."""
    sentences = split_sentences(str(text or ""))
    if len(sentences) < 2:
        return gr.update(visible=False)
    return gr.update(choices=sentences, value=None, visible=True,
                     label=f"{len(sentences)} sentences: the model learned mostly from single ones; pick one to "
                           "translate it alone")


def drawn_for(trace, *look) -> tuple:
    """What the figures on screen were drawn from: this trace (by its text and run) and this look."""
    return (trace.source.text, trace.seconds, len(trace.steps)) if trace is not None else None, look


def cleared(tab: TabView) -> list:
    """A tab off screen after a new trace or look: its outputs emptied (``drawn`` says it is not drawn, so it
    draws when opened). Emptied, not ``gr.skip()``: Gradio rebuilds a component for every skip (~0.4 ms
    each, against ~0.08 ms for an empty value), and a Translate has some 30 outputs off screen."""
    return [None] * len(tab.outputs)


def redraw_visible(page: Page, tabs: list[TabView], visible: gr.State, drawn: gr.State):
    """One callback that draws only the tab on screen (a change of look, a tab opened while a Translate
    waited): NewTraceViews without the fits. ``drawn`` remembers what that tab was drawn from, and the
    others draw when opened (``draw_on_select``)."""
    views = NewTraceViews.of(page, tabs, visible, with_fits=False)

    def draw_visible(trace, current, *values):
        drawn_v, out = views.views(trace, {}, current, *values)
        return (drawn_v, *out)
    return draw_visible, [page.trace, *views.inputs], [drawn, *views.outputs]


@dataclass
class NewTraceViews:
    """What every new trace brings, in the same event that made the trace (one request per Translate):
    each tab's fits (slider ranges, pickers), then the visible tab drawn. ``inputs`` and ``outputs``
    follow the event's own; ``views(trace, set_now, current, *values)`` gives the outputs, where
    ``set_now`` holds the values the event itself sets ({control: update}), e.g. the step slider's 1."""

    fits: list
    controls: list
    inputs: list
    outputs: list
    tabs: list
    look: list

    @classmethod
    def of(cls, page: Page, tabs: list[TabView], visible: gr.State, after_branch: bool = False,
           with_fits: bool = True) -> "NewTraceViews":
        fits = [f for tab in tabs for f in tab.fits if with_fits and (f.after_branch or not after_branch)]
        controls = [c for tab in tabs for c in tab.controls]
        inputs = [visible, *controls, *page.look, *[c for f in fits for c in f.inputs]]
        outputs = [o for f in fits for o in f.outputs] + [o for tab in tabs for o in tab.outputs]
        return cls(fits, controls, inputs, outputs, tabs, page.look)

    def views(self, trace, set_now: dict, current, *values) -> tuple:
        """(what the tabs were drawn from, for `drawn`), then the outputs."""
        n_c, n_l = len(self.controls), len(self.look)
        controls, look, rest = values[:n_c], values[n_c:n_c + n_l], values[n_c + n_l:]
        now = {c: update_value(set_now[c], v) if c in set_now else v for c, v in zip(self.controls, controls)}
        out, i = [], 0
        for f in self.fits:
            args = [update_value(set_now[c], v) if c in set_now else v for c, v in zip(f.inputs, rest[i:i + len(f.inputs)])]
            i += len(f.inputs)
            updates = f.fn(trace, *args) if len(f.outputs) > 1 else (f.fn(trace, *args),)
            for c, u in zip(f.outputs, updates):
                if c in now:
                    now[c] = update_value(u, now[c])
            out += updates
        for tab in self.tabs:
            if tab.tab_id == current:
                try:
                    out += tab.draw(trace, *[now[c] for c in tab.controls], *look)
                except gr.Error as e:          # the translation still shows; this view says what failed
                    gr.Warning(e.message)
                    out += [gr.skip()] * len(tab.outputs)
            else:
                out += cleared(tab)
        return (drawn_for(trace, *look), frozenset({current})), tuple(out)


def draw_on_select(page: Page, tab: TabView, gr_tab: gr.Tab, visible: gr.State, drawn: gr.State) -> None:
    """Opening a tab makes it the visible one and draws it, unless it is already drawn from this trace and look."""
    @safe_view
    def draw_if_stale(trace, drawn_v, *values):
        now = drawn_for(trace, *values[-len(page.look):])
        was, tab_ids = drawn_v or (None, frozenset())
        # Nothing translated and nothing drawn yet: the first tab's select at page mount, racing the page's own
        # translation (which draws this tab itself); drawing empty figures now could land after it.
        if trace is None and drawn_v is None:      # (nor is it the tab on screen: a link may have opened another)
            return (gr.skip(), gr.skip(), *[gr.skip()] * len(tab.outputs))
        if was == now and tab.tab_id in tab_ids:
            return (tab.tab_id, gr.skip(), *[gr.skip()] * len(tab.outputs))
        return (tab.tab_id, (now, (tab_ids if was == now else frozenset()) | {tab.tab_id}), *tab.draw(trace, *values))

    gr_tab.select(**one_hop(draw_if_stale, [page.trace, drawn, *tab.controls, *page.look],
                            [visible, drawn, *tab.outputs]),
                  api_visibility="undocumented", show_progress="hidden", concurrency_id="draw")
