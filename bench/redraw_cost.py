"""What a Translate's redraw costs the server: every tab (before issue 14) against the visible tab only.

``python bench/redraw_cost.py [--reps 10]``: builds the app's page in this process (no server),
runs the translation once, then times, interleaved, the page's old "redraw every tab" callback
(``redraw_all``, kept here) and the new "redraw the visible tab" one (``ui.events.redraw_visible``) on the same
trace and controls, and measures the JSON Gradio would send for their outputs (figures as
``Plot.postprocess`` gives them). Ratios from one process, so machine noise hits both alike.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

SENTENCE = ("When the rain finally stopped in the late afternoon, the children ran outside to play in the "
            "puddles while their parents watched from the kitchen window.")


def payload_bytes(outputs, values) -> int:
    """Bytes of the JSON for these output values, as Gradio's components postprocess them."""
    import gradio as gr
    total = 0
    for comp, v in zip(outputs, values):
        if isinstance(v, dict) and v.get("__type__") == "update":
            total += len(json.dumps(v, default=str))
        elif isinstance(comp, gr.Plot):
            total += len(comp.postprocess(v).model_dump_json()) if v is not None else 4
        elif not isinstance(comp, gr.State):
            total += len(json.dumps(v, default=str))
    return total


def build_page(tr, checkpoint: Path):
    """The app's page and tabs as ui/demo.py builds them (without the rest of the page's events)."""
    import gradio as gr
    from ui.demo import build_page as app_page
    with gr.Blocks():
        parts = app_page(tr, checkpoint)
    return parts.page, parts.tabs, parts.current_tab, parts.drawn


def redraw_all(page, tabs):
    """One callback that redraws every tab (after Translate, a change of look, and at page load)."""
    inputs = [page.trace, *[c for tab in tabs for c in tab.controls], *page.look]
    outputs = [o for tab in tabs for o in tab.outputs]

    def draw_all(trace, *values):
        *controls, look, large, scale = values
        out, i = [], 0
        for tab in tabs:
            out += tab.draw(trace, *controls[i:i + len(tab.controls)], look, large, scale)
            i += len(tab.controls)
        return tuple(out)
    return draw_all, inputs, outputs


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--reps", type=int, default=10)
    args = p.parse_args(argv)
    import torch
    torch.set_num_threads(1)
    from transformer.serving.translator import Translator
    from ui.events import redraw_visible
    tr = Translator(None, "cpu")
    page, tabs, visible, drawn = build_page(tr, ROOT / "checkpoints" / "en-fr-base")
    trace = tr.trace(SENTENCE)
    controls = [c.value for tab in tabs for c in tab.controls]
    look = [c.value for c in page.look]
    all_fn, _, all_out = redraw_all(page, tabs)
    vis_fn, _, vis_out = redraw_visible(page, tabs, visible, drawn)
    cases = {"every tab (before)": (lambda: all_fn(trace, *controls, *look), all_out),
             "visible tab only (after)": (lambda: vis_fn(trace, tabs[0].tab_id, *controls, *look), vis_out)}
    times = {k: [] for k in cases}
    for rep in range(args.reps + 1):
        for k in (list(cases) if rep % 2 else list(cases)[::-1]):
            t0 = time.perf_counter()
            out = cases[k][0]()
            payload_bytes(cases[k][1], out)             # the JSON is part of the server's work
            if rep:
                times[k].append((time.perf_counter() - t0) * 1000)
    print(f"30-word sentence ({len(trace.src_pieces)} source pieces, {len(trace.steps)} steps), "
          f"{len(tabs)} tabs, {args.reps} interleaved repetitions")
    for k, (fn, outs) in cases.items():
        print(f"{k:26} {statistics.median(times[k]):8.1f} ms  {payload_bytes(outs, fn()) / 1024:8.1f} KB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
