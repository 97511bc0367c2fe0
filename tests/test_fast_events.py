"""ui/fast_events.py: an event wired with ``one_hop`` sends the page the same JSON as Gradio's own
per-component processing, and checks its inputs the same way (the reference: the same function, the same
event, wired the plain way)."""
from __future__ import annotations

import asyncio
import json

import gradio as gr
import plotly.graph_objects as go
import pytest
from gradio.components.plot import PlotData
from gradio.state_holder import SessionState

from ui.fast_events import one_hop


def run_event(demo: gr.Blocks, block_fn, inputs: list, state: SessionState) -> list:
    out = asyncio.run(demo.process_api(block_fn=block_fn, inputs=inputs, state=state))
    return json.loads(json.dumps(out["data"], default=str))


def same_effect(plain, fast, block) -> bool:
    """The page ends the same: the same JSON, or (one_hop's shortcut) the plain value of an update that set
    only properties the component already had."""
    if fast == plain:
        return True
    if not (isinstance(plain, dict) and plain.get("__type__") == "update") or "value" not in plain:
        return False
    had = json.loads(json.dumps(block.get_config(), default=str))
    return fast == plain["value"] and all(had.get(k) == v for k, v in plain.items()
                                          if k not in ("__type__", "value"))


def fn_named(demo: gr.Blocks, name: str):
    return next(f for f in demo.fns.values() if f.api_name == name)


def build_pair(fn, make_inputs, make_outputs):
    """The same event twice in one page: plain (Gradio's processing) and through one_hop."""
    with gr.Blocks() as demo:
        inputs, outputs = make_inputs(), make_outputs()
        btn = gr.Button()
        btn.click(fn, inputs, outputs, api_name="plain")
        btn.click(**one_hop(fn, inputs, outputs), api_name="fast")
    return demo, inputs, outputs


def test_every_kind_of_value_the_page_uses_is_sent_the_same_way():
    fig = go.Figure(go.Heatmap(z=[[1, 2], [3, 4]]))

    def fn(text, n, head, kind, flag, picked, trace):
        return (text.upper(), gr.update(maximum=n + 3, value=n),
                gr.update(choices=["a", "b", head], value=head), fig,
                PlotData(type="plotly", plot=fig.to_json()), None, f"<b>{kind}</b>", f"**{flag}**",
                [[1, "x"], [2, "y"]], gr.Tabs(selected="two"), {"trace": trace, "picked": picked}, gr.skip())

    def make_inputs():
        return [gr.Textbox(), gr.Slider(1, 9, step=1), gr.Dropdown(["1", "2", "3"], value="1"),
                gr.Radio(["encoder", "cross"], value="encoder"), gr.Checkbox(), gr.CheckboxGroup(["p", "q"]),
                gr.State("kept")]

    def make_outputs():
        with gr.Tabs() as tabs:
            with gr.Tab("one", id="one"):
                outs = [gr.Textbox(), gr.Slider(1, 9), gr.Dropdown(["1", "2", "3"]), gr.Plot(), gr.Plot(),
                        gr.Plot(), gr.HTML(), gr.Markdown(), gr.Dataframe(headers=["n", "s"])]
            with gr.Tab("two", id="two"):
                pass
        return [*outs, tabs, gr.State(), gr.Textbox()]

    demo, inputs, outputs = build_pair(fn, make_inputs, make_outputs)
    raw = ["hello", 4, "3", "cross", True, ["q"], None]
    plain = run_event(demo, fn_named(demo, "plain"), raw, SessionState(demo))
    state = SessionState(demo)
    fast = run_event(demo, fn_named(demo, "fast"), raw, state)
    assert fast == plain
    assert fast[0] == "HELLO" and fast[1]["maximum"] == 7 and fast[9]["selected"] == "two"
    assert state[outputs[10]._id] == {"trace": "kept", "picked": ["q"]}    # a State output is kept, not sent

    # Values the page could not have offered are refused the same way (a picker's choices, a slider's range).
    for bad in (["hello", 4, "7", "cross", True, [], None], ["hello", 40, "1", "cross", True, [], None],
                ["hello", 4, "1", "self", True, [], None]):
        for name in ("plain", "fast"):
            with pytest.raises(gr.Error):
                run_event(demo, fn_named(demo, name), bad, SessionState(demo))


def test_an_update_that_changes_nothing_is_sent_as_its_value():
    with gr.Blocks() as demo:
        box = gr.Slider(1, 5, step=1)
        picker = gr.Dropdown(["a", "b"], visible=False)
        btn = gr.Button()
        updates = {"same": (gr.update(minimum=1, maximum=5, value=3), gr.update(visible=False, value=None)),
                   "wider": (gr.update(minimum=1, maximum=9, value=3),
                             gr.update(choices=["a", "b"], value="b")),
                   "shown": (gr.update(value=3), gr.update(visible=True, value="a"))}
        for name, out in updates.items():
            fn = lambda out=out: out   # noqa: E731
            btn.click(**one_hop(fn, [], [box, picker]), api_name=name)
    assert run_event(demo, fn_named(demo, "same"), [], SessionState(demo)) == [3, None]
    wider = run_event(demo, fn_named(demo, "wider"), [], SessionState(demo))
    # the picker's choices are the same: its value only
    assert wider[0]["maximum"] == 9 and wider[1] == "b"
    shown = run_event(demo, fn_named(demo, "shown"), [], SessionState(demo))
    assert shown[0] == 3 and shown[1]["visible"] is True and shown[1]["value"] == "a"


def test_a_picker_is_checked_against_the_choices_an_update_gave_it():
    """After an update sets new choices in this session, a value among them passes, as with Gradio's own
    path."""
    with gr.Blocks() as demo:
        picker, out = gr.Dropdown(["a"], value="a"), gr.Textbox()
        btn = gr.Button()
        btn.click(**one_hop(lambda: gr.update(choices=["a", "z"]), [], [picker]), api_name="widen")
        btn.click(**one_hop(lambda v: f"got {v}", [picker], [out]), api_name="read")
    state = SessionState(demo)
    with pytest.raises(gr.Error):
        run_event(demo, fn_named(demo, "read"), ["z"], state)
    run_event(demo, fn_named(demo, "widen"), [], state)
    assert run_event(demo, fn_named(demo, "read"), ["z"], state) == ["got z"]


def test_a_function_that_takes_the_request_gets_it():
    seen = []

    def opened(request: gr.Request, text):
        seen.append(request)
        return text

    with gr.Blocks() as demo:
        box, out = gr.Textbox(), gr.Textbox()
        demo.load(**one_hop(opened, [box], [out]), api_name="opened")
    assert run_event(demo, fn_named(demo, "opened"), ["hi"], SessionState(demo)) == ["hi"]
    assert len(seen) == 1


def test_the_translate_event_sends_what_gradio_would(tiny_translator, tmp_path):
    """The page's own Translate (50 inputs, 51 outputs), fast against plain, for the tab on screen being each
    tab: the same French, fits, figures and emptied tabs."""
    from ui.demo import build_demo
    from ui.tabs import TABS

    fast_demo, plain_demo = build_demo(tiny_translator, tmp_path), build_demo(tiny_translator, tmp_path)
    fast_fn, plain_fn = fn_named(fast_demo, "translate_and_draw"), fn_named(plain_demo, "translate_and_draw")
    plain_fn.fn, plain_fn.preprocess, plain_fn.postprocess = plain_fn.fn.plain, True, True
    assert not fast_fn.preprocess and not fast_fn.postprocess
    tab_state = plain_fn.inputs[1]            # the tab on screen (gr.State), the first of the views' inputs
    assert isinstance(tab_state, gr.State)
    raw = [None if c.stateful else c.value for c in fast_fn.inputs]
    raw[0] = "The students are listening to the teacher."
    for _, tab_id, _ in TABS:
        sent = []
        for demo, block_fn in ((fast_demo, fast_fn), (plain_demo, plain_fn)):
            state = SessionState(demo)
            state[block_fn.inputs[1]._id] = tab_id
            sent.append(run_event(demo, block_fn, list(raw), state))
        assert all(same_effect(p, f, c) for p, f, c in zip(sent[1], sent[0], fast_fn.outputs)), tab_id
        assert any(f != p for p, f in zip(sent[1], sent[0])), "the hidden picker was rebuilt (an update sent)"
        assert sent[0][1], "no French"
        drawn = [o for o in sent[0] if isinstance(o, dict) and o.get("type") == "plotly"]
        assert drawn or tab_id in ("about",), f"{tab_id}: no figure drawn"
