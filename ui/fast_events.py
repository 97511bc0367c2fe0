"""A speed trick for the page's big events, applied explicitly where an event is wired (``one_hop``).

Gradio preprocesses every input and postprocesses every output of an event in a worker thread of its own:
one thread hop per component. A Translate has 50 inputs and 51 outputs (each tab's controls, each tab's
figures), so under a lecture's load (100 students pressing Translate within a second) the hops cost more
than the model: ``python bench/gradio_floor.py`` measures it on a page that does nothing else.

``one_hop(fn, inputs, outputs)`` gives the keyword arguments of the same event with that work done in the
one thread the function already runs in: the components' own ``preprocess`` and ``postprocess``, on this
session's copies of the components (so a picker's new choices are the ones a value is checked against),
registered with ``preprocess=False, postprocess=False``. Gradio still applies ``gr.update(...)`` and
``gr.skip()`` itself (their values are serialised here), except an update that sets only properties the
component already has: that is sent as its plain value, which Gradio does not rebuild a component for.
tests/test_fast_events.py checks that the page receives the same values either way.
"""
from __future__ import annotations

import inspect
from typing import Callable

import gradio as gr
from gradio.blocks import Block
from gradio.context import LocalContext
from gradio.data_classes import GradioModel, GradioRootModel
from gradio.utils import is_prop_update

from .inputs import refused_briefly


def _session_block(block):
    """This session's copy of `block` (a gr.update replaces it there), or the block as built."""
    config = LocalContext.blocks_config.get(None)
    return config.blocks.get(block._id, block) if config is not None else block


def preprocessed(block, raw):
    """What Gradio's preprocessing hands the function for `raw`, the value the page sent."""
    if block.stateful:
        return raw                       # Gradio passes a State's own value even without preprocessing
    block = _session_block(block)
    model = getattr(block, "data_model", None)
    if model is not None and raw is not None:
        raw = model.model_validate(raw, context={"validate_meta": True})
    return refused_briefly(lambda: block.preprocess(raw))


def serialised(block, value):
    """What Gradio's postprocessing sends the page for `value` (an update's value serialised the same way)."""
    if block.stateful:
        return value
    if isinstance(value, Block):         # e.g. gr.Tabs(selected=...): an update of the block's arguments
        value = {**value.constructor_args, "__type__": "update"}
    if is_prop_update(value):
        if "value" in value and _changes_nothing(_session_block(block), value):
            return serialised(block, value["value"])      # the same component: its value is all that is new
        if "value" in value:
            value = {**value, "value": serialised(block, value["value"])}
        return value
    out = _session_block(block).postprocess(value)
    return out.model_dump() if isinstance(out, (GradioModel, GradioRootModel)) else out


# compared as they are kept
_PROPS = ("visible", "interactive", "minimum", "maximum", "step", "label", "choices")


def _changes_nothing(block, update: dict) -> bool:
    """True when every property `update` sets (but its value) is already `block`'s: Gradio would rebuild the
    component for nothing (a slider's range, a picker's choices, a hidden box hidden again)."""
    for key, v in update.items():
        if key in ("__type__", "value"):
            continue
        if key not in _PROPS or not hasattr(block, key):
            return False
        if key == "choices":                # as gr.Dropdown / gr.Radio keep them: (label, value) pairs
            v = [tuple(c) if isinstance(c, (tuple, list)) else (str(c), c) for c in v or []]
        if getattr(block, key) != v:
            return False
    return True


def one_hop(fn: Callable, inputs: list, outputs: list) -> dict:
    """``fn``, ``inputs``, ``outputs``, ``preprocess=False`` and ``postprocess=False`` for an event listener:
    `fn` gets and gives what it would with Gradio's processing. A `fn` whose first parameter is a
    ``gr.Request`` gets the request, as Gradio would give it."""
    wants_request = _wants_request(fn)
    single = len(outputs) == 1

    def run(request: gr.Request, *raw):
        args = [preprocessed(block, v) for block, v in zip(inputs, raw)]
        result = fn(request, *args) if wants_request else fn(*args)
        if single:
            return serialised(outputs[0], result)
        if is_prop_update(result):           # one gr.skip() / gr.update() for every output
            return result
        return tuple(serialised(block, v) for block, v in zip(outputs, result))
    run.__name__ = getattr(fn, "__name__", "run")
    run.__doc__ = fn.__doc__
    # the function as Gradio would call it with its own processing (tests)
    run.plain = fn
    return dict(fn=run, inputs=inputs, outputs=outputs, preprocess=False, postprocess=False)


def _wants_request(fn: Callable) -> bool:
    params = list(inspect.signature(fn).parameters.values())
    return bool(params) and params[0].annotation in (gr.Request, "gr.Request", "Request")

