"""ui/events.py: a Translate fits only the tab on screen; a tab off screen gets its fits (slider ranges,
pickers) when it is opened, from the same trace, as if they had come with the Translate. Run through Gradio's
own event processing (process_api) on the page the app builds, with one session's state."""
from __future__ import annotations

import asyncio
import json

import gradio as gr
from gradio.state_holder import SessionState

from ui.events import drawn_parts


def send(demo, block_fn, state, raw):
    out = asyncio.run(demo.process_api(block_fn=block_fn, inputs=raw, state=state))
    return json.loads(json.dumps(out["data"], default=str))


def raw_inputs(block_fn, state, **by_label):
    """What the page would send: each input's value in this session (a State's is read by Gradio itself)."""
    raw = []
    for c in block_fn.inputs:
        if c.stateful:
            raw.append(None)
        else:
            config = state.config_values.get(c._id, {}).get("props", {})
            raw.append(by_label.get(getattr(c, "label", None), config.get("value", c.value)))
    return raw


def opening(demo, tab_id):
    """The select event of the tab `tab_id` (its draw)."""
    tab = next(b for b in demo.blocks.values() if isinstance(b, gr.Tab) and b.id == tab_id)
    return next(f for f in demo.fns.values()
                if f.name == "draw_if_stale" and any(t[0] == tab._id for t in f.targets))


def is_update(v):
    return isinstance(v, dict) and v.get("__type__") == "update"


def test_a_tab_off_screen_is_fitted_when_opened(tiny_translator, tmp_path):
    from ui.demo import build_demo
    demo = build_demo(tiny_translator, tmp_path)
    translate = next(f for f in demo.fns.values() if f.api_name == "translate_and_draw")
    state = SessionState(demo)
    text = "The cat is on the red chair."
    sent = send(demo, translate, state, [text, *raw_inputs(translate, state)[1:]])
    drawn_id = next(c._id for c in translate.outputs if c.stateful and c._id in state.state_data
                    and isinstance(state[c._id], tuple))
    _, drawn_tabs, due = drawn_parts(state[drawn_id])
    assert drawn_tabs == {"steps"} and due, "the other tabs' fits are not noted as due"

    # The Translate sent the inside tab's query slider no update (a plain value: nothing rebuilt)...
    query = next(c for c in translate.outputs if getattr(c, "label", None) == "Query row")
    assert not is_update(sent[translate.outputs.index(query)])
    # ...and opening the tab sends its range for this trace, then draws it.
    select = opening(demo, "inside")
    got = send(demo, select, state, raw_inputs(select, state))
    fitted = got[select.outputs.index(query)]
    trace = next(v for v in state.state_data.values() if hasattr(v, "attention"))
    n_queries = len(trace.attention("encoder").queries)
    assert is_update(fitted) and fitted["maximum"] == max(n_queries, 2)
    assert any(isinstance(o, dict) and o.get("type") == "plotly" for o in got), "the tab was not drawn"
    _, drawn_tabs, due_after = drawn_parts(state[drawn_id])
    assert drawn_tabs == {"steps", "inside"} and due_after < due
    # Opened again: drawn and fitted already, nothing is sent again.
    again = send(demo, select, state, raw_inputs(select, state))
    assert all(is_update(o) and set(o) == {"__type__"} for o in again[2:])   # (0, 1: the States)


def test_a_fit_of_the_greedy_translation_reads_it_behind_a_branch(tiny_translator, tmp_path):
    """The rivals offered in "Why this word" are the greedy translation's, also when that tab is first opened
    after a what-if branch (the branch is the trace on screen; the greedy one is kept as the original)."""
    from ui.demo import build_demo
    demo = build_demo(tiny_translator, tmp_path)
    translate = next(f for f in demo.fns.values() if f.api_name == "translate_and_draw")
    state = SessionState(demo)
    send(demo, translate, state, ["Where is the station?", *raw_inputs(translate, state)[1:]])
    greedy = next(v for v in state.state_data.values() if hasattr(v, "attention"))
    select = opening(demo, "why")
    trace_id = select.inputs[0]._id
    original_id = next(c._id for c in select.inputs if c is not select.inputs[0] and c.stateful
                       and state.state_data.get(c._id) is greedy)
    branch = tiny_translator.trace("Where is the bus?")
    # what a branch leaves: another trace, the greedy one behind it
    state[trace_id] = branch
    got = send(demo, select, state, raw_inputs(select, state))
    rival = next(c for c in select.outputs
                 if getattr(c, "label", None) == "Rival: one of the step's candidates")
    offered = [v for _, v in got[select.outputs.index(rival)]["choices"]]
    assert offered == list(greedy.steps[0].topk_pieces[1:])
    assert state.state_data[original_id] is greedy


def test_the_notes_of_a_translation_are_under_its_pieces_and_never_toasts(tiny_translator, monkeypatch):
    """Issue 43: every doubt note is shown once, in the pieces' HTML that the next Translate replaces; a toast
    covered the French, stacked and outlived its sentence. An empty box, the user's own action,
    keeps its toast."""
    import html

    from ui.events import translate_callback
    toasts = []
    monkeypatch.setattr(gr, "Info", lambda *a, **k: toasts.append(("info", *a)))
    monkeypatch.setattr(gr, "Warning", lambda *a, **k: toasts.append(("warning", *a)))
    run = translate_callback(tiny_translator)
    trace, _, _, pieces, _ = run("I HAVE SEVEN APPLES AND TWELVE CATS.")
    assert len(trace.notes) >= 3 and any("capitals" in n for n in trace.notes)
    assert pieces.count('<div class="note">') == len(trace.notes)
    assert all(html.escape(n) in pieces for n in trace.notes)
    assert toasts == []
    run("   ")
    assert toasts == [("warning", "Type an English sentence first.")]


def test_back_to_the_original_keeps_the_step(tiny_translator, tmp_path):
    """Both Back buttons (the banner's and the what-if accordion's) return to the original at the step on
    screen, the original's last when it is shorter, so that the next What if starts where you were (not at
    step 1)."""
    from ui.demo import build_demo
    demo = build_demo(tiny_translator, tmp_path)
    backs = [f for f in demo.fns.values() if f.name == "go_back"]
    assert len(backs) == 2
    original = tiny_translator.trace("I have seven cats.")
    n = len(original.steps)
    assert n >= 4
    for back in backs:
        state = SessionState(demo)
        state[back.inputs[0]._id] = original
        step = back.outputs[3]
        for shown, kept in ((3, 3), (n + 5, n), (1, 1)):
            # a branch longer than the original
            state[step._id] = gr.Slider(1, n + 6, value=1, step=1, render=False)
            out = send(demo, back, state, [None, shown])
            assert out[3]["value"] == kept and out[3]["maximum"] == max(n, 2), (shown, out[3])
            assert out[2] == original.translation and step is back.inputs[1]


def test_the_sentence_picker_splits_only_the_text_the_model_reads():
    """A 300 KB text is cut at MAX_INPUT_CHARS before it is split (issue 38: the uncut text held a worker for
    minutes and came back as a 780 KB picker of every sentence)."""
    from transformer.config import MAX_INPUT_CHARS
    from ui.events import sentence_choices
    text = " ".join(f"Sentence number {i} is here." for i in range(12_000))          # about 330 KB
    choices = sentence_choices(text)["choices"]
    shown = [c[0] if isinstance(c, (tuple, list)) else c for c in choices]
    assert 2 <= len(shown) and sum(len(c) + 1 for c in shown) <= MAX_INPUT_CHARS + 1
    assert shown[0] == "Sentence number 0 is here."
