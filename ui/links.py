"""Links that open a view (``?text=…&tab=…&kind=…``): what a link sets at page load, and Copy link.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Optional

import gradio as gr

from transformer import examples
from transformer.serving.translator import Translator
from transformer.viz import links, views

from .events import notes_html, translate_callback
from .page import Page, TabView, slider_update
from .tabs import DEFAULT_TAB, TAB_IDS, TABS

COPY_LINK_JS = """(q) => { if (!q || !q.startsWith('?')) return q;
  const u = window.location.origin + window.location.pathname + q;
  if (navigator.clipboard) navigator.clipboard.writeText(u).catch(() => {});
  return u; }"""


BLUR_JS = "() => { if (document.activeElement) document.activeElement.blur(); }"


def link_controls(tabs: list[TabView]) -> list[tuple[str, str, object]]:
    """(tab id, URL key, control) for every control a link can set or report."""
    return [(tab_id, key, c) for (_, tab_id, _), tab in zip(TABS, tabs) for key, c in tab.link.items()]


def link_updates(page: Page, q: links.ViewQuery, tab: Optional[TabView],
                 trace) -> tuple[dict, list[str], Optional[int]]:
    """The updates that show the view a link asks for: {control: update}, notes, and the step to show."""
    tab_link = tab.link if tab is not None else {}
    n_layers = tab.layers if tab is not None and tab.layers else page.n_layers
    if q.head == links.MEAN and "mode" in tab_link:       # the explorer averages with "Show", not with "Head"
        q = replace(q, head=None, mode=q.mode or "mean")
    kind = (q.kind if "kind" in tab_link and q.kind else tab_link["kind"].value if "kind" in tab_link
            else "cross")
    head = tab_link.get("head")
    mean_ok = head is not None and any(str(v).startswith(links.MEAN) for _, v in head.choices)
    q, notes = links.fit_ranges(q, views.n_steps(trace), n_layers(kind), page.cfg.n_heads, mean_ok)
    out = {}
    if "kind" in tab_link and q.kind:
        out[tab_link["kind"]] = q.kind
    if "layer" in tab_link and q.layer:
        out[tab_link["layer"]] = slider_update(n_layers(kind), q.layer)
    if head is not None and q.head:
        out[head] = "mean over heads" if q.head == links.MEAN else q.head
    if "mode" in tab_link and q.mode:
        out[tab_link["mode"]] = q.mode
    if "choice" in tab_link and q.choice:
        out[tab_link["choice"]] = q.choice
    for key in CAUSAL_KEYS:                               # Knock it out's: its states take them as they are
        if key in tab_link and getattr(q, key) is not None:
            out[tab_link[key]] = getattr(q, key)
    return out, notes, q.step


CAUSAL_KEYS = ("knockout", "method", "rank", "b", "at", "piece")


def link_loader(translator: Translator, page: Page, tabs: list[TabView]):
    """At page load: translate the link's sentence (or the first example) and open the view it names."""
    # Translator.trace's cache: a class opening one link translates once
    run = translate_callback(translator)
    controls = [(tab_id, c) for tab_id, key, c in link_controls(tabs) if key != "step"]

    def load(params: dict, notes: list):
        """`params`: the link's parameters; `notes`: what to tell the user already."""
        q, more = links.parse_query(params, TAB_IDS, examples.EVERYDAY[0], DEFAULT_TAB)
        notes = [*notes, *more]
        trace, french, info, pieces, step = run(q.text)
        updates = {}
        if trace is not None:
            tab = next((tab for (_, tid, _), tab in zip(TABS, tabs) if tid == q.tab), None)
            updates, more, step_v = link_updates(page, q, tab, trace)
            notes += more
            step = slider_update(len(trace.steps), step_v or 1) if step_v else step
        # under the pieces, as the translation's own notes: gone with the next Translate, no toasts
        if notes:
            pieces = f'{pieces}<div class="pieces link-notes">{notes_html(notes)}</div>'
        # the page's own value: no gr.update to rebuild
        return (q.text, trace, french, info, pieces, step, gr.Tabs(selected=q.tab), q.tab,
                *[updates.get(c, c.value) for _, c in controls])
    return load, [c for _, c in controls]


# The old link hidden in the browser: no request to the server (a lecture's 100 Translates,
# 100 fewer requests).
HIDE_LINK_JS = "() => ({__type__: 'update', value: '', visible: false})"


def wire_links(page: Page, tabs: list[TabView], text, current_tab, link_btn, link_box, new_text=()) -> None:
    """The button that copies the link of what is on screen (and shows it, for phones); `new_text`: the events
    of a new translation, which take the old sentence's link away (Copy link makes the new one)."""
    controls = link_controls(tabs)

    def make_link(trace, text_v, tab_v, scale_v, *values):
        view = {key: v for (tab_id, key, _), v in zip(controls, values) if tab_id == tab_v}
        shown = trace.source.text if trace is not None else str(text_v or "")
        return gr.update(value=links.query_string(shown, tab_v, scale=scale_v, **view), visible=True)

    link_btn.click(make_link, [page.trace, text, current_tab, page.look[2], *[c for *_, c in controls]],
                   link_box, api_visibility="undocumented", queue=False).then(
        None, link_box, link_box, js=COPY_LINK_JS, api_visibility="undocumented", queue=False)
    if new_text:
        gr.on(list(new_text), None, None, link_box, js=HIDE_LINK_JS, api_visibility="private", queue=False)
