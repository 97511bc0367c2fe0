"""ui/sessions.py: Gradio sessions without their copy of the page config, checked against the Gradio
installed."""
from __future__ import annotations

import tracemalloc

import gradio as gr
import pytest
from gradio import state_holder

from ui.sessions import LeanSessionState, use_lean_sessions

ORIGINAL = LeanSessionState.__mro__[1]          # Gradio's own SessionState


@pytest.fixture(scope="module")
def blocks():
    with gr.Blocks() as demo:
        kept = gr.State({"trace": None})
        boxes = [gr.Markdown("x" * 2000) for _ in range(100)]
        box = gr.Textbox()
        box.submit(lambda v, s: (v.upper(), {"trace": v}), [box, kept], [box, kept])
    demo.kept, demo.boxes, demo.box = kept, boxes, box
    return demo


def test_it_sets_what_gradios_own_session_state_sets(blocks):
    """Same attributes, same closed-session time to live: a Gradio upgrade that changes SessionState fails
    here."""
    theirs, ours = ORIGINAL(blocks), LeanSessionState(blocks)
    assert set(vars(theirs)) == set(vars(ours))
    assert theirs.STATE_TTL_WHEN_CLOSED == ours.STATE_TTL_WHEN_CLOSED
    assert theirs.blocks_config.blocks.keys() == ours.blocks_config.blocks.keys()
    for name in ("_update_config", "_update_value_in_config", "__setitem__", "__getitem__", "components"):
        assert hasattr(ORIGINAL, name), name        # what LeanSessionState relies on or replaces


def test_state_values_work_and_no_config_copy_is_kept(blocks):
    s = LeanSessionState(blocks)
    assert s[blocks.kept._id] == {"trace": None}                      # a State's default, copied per session
    s[blocks.kept._id] = {"trace": "mine"}
    assert s[blocks.kept._id] == {"trace": "mine"} and blocks.kept._id in s
    assert LeanSessionState(blocks)[blocks.kept._id] == {"trace": None}      # another session's is its own
    # what Gradio does after an event
    s._update_value_in_config(blocks.box._id, "A" * 100_000)
    s._update_config(blocks.box._id)
    s[blocks.box._id] = gr.Textbox(value="updated")
    assert len(s.config_values) == 0 and list(s.components) == []
    # a component update is still the session's
    assert s[blocks.box._id].value == "updated"
    theirs = ORIGINAL(blocks)
    theirs._update_value_in_config(blocks.box._id, "A" * 100_000)
    assert len(theirs.config_values) > 100                               # what is no longer kept


def test_a_lean_session_costs_a_small_part_of_gradios(blocks):
    def per_session(cls) -> float:
        tracemalloc.start()
        before = tracemalloc.take_snapshot()
        made = [cls(blocks) for _ in range(20)]
        after = tracemalloc.take_snapshot()
        tracemalloc.stop()
        assert len(made) == 20
        return sum(d.size_diff for d in after.compare_to(before, "filename")) / 20

    assert per_session(LeanSessionState) * 10 < per_session(ORIGINAL)


def test_use_lean_sessions_makes_every_new_session_lean(blocks, monkeypatch):
    monkeypatch.setattr(state_holder, "SessionState", ORIGINAL)
    holder = state_holder.StateHolder()
    holder.set_blocks(blocks)
    assert type(holder["before"]) is ORIGINAL
    use_lean_sessions()
    # kept as they were
    assert type(holder["after"]) is LeanSessionState and type(holder["before"]) is ORIGINAL
