"""What Gradio spends on a Translate's outputs: ``python3 bench/gradio_output_cost.py``.

The Translate event returns the translation, the tabs' slider ranges and every tab's outputs (the tab
on screen drawn, the others not). Gradio's ``Blocks.postprocess_data`` rebuilds the component and its
config (JSON schema included) for every ``gr.skip()``/``gr.update()``, and sends a plain value through
the component's ``postprocess`` in a worker thread. This times both for the app's own Translate event
(all its outputs skipped, then all empty), and its ``preprocess_data`` on the page's starting values,
medians of 30 in one process.
"""
from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import gradio as gr  # noqa: E402
from gradio.state_holder import SessionState  # noqa: E402

from ui.demo import build_demo  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402


def median_ms(fn, n: int = 30) -> float:
    """Median of n calls of fn(state), each with a new session made beforehand (not timed)."""
    times = []
    for _ in range(n):
        state = SessionState(fn.demo)
        t0 = time.perf_counter()
        fn(state)
        times.append(time.perf_counter() - t0)
    return 1000 * statistics.median(times)


def main() -> int:
    demo = build_demo(Translator(None, "cpu"), ROOT / "checkpoints" / "en-fr-base")
    fn = next(f for f in demo.fns.values() if f.api_name == "translate_and_draw")
    n = len(fn.outputs)
    values = [getattr(b, "value", None) for b in fn.inputs]

    def post(outputs):
        run = lambda state: asyncio.run(demo.postprocess_data(fn, list(outputs), state))
        run.demo = demo
        return run
    pre = lambda state: asyncio.run(demo.preprocess_data(fn, list(values), state))
    pre.demo = demo
    print(f"Translate event: {len(fn.inputs)} inputs, {n} outputs")
    print(f"  postprocess, every output gr.skip(): {median_ms(post([gr.skip()] * n)):6.2f} ms")
    print(f"  postprocess, every output empty:     {median_ms(post([None] * n)):6.2f} ms")
    print(f"  preprocess of the inputs:            {median_ms(pre):6.2f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(main())
