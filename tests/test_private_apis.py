"""Private library APIs the project relies on, and the public replacements it uses instead.

- Plotly's ``go.Figure(..., _validate=False)``: kept for speed, tested in test_plots.py (figure_from_dicts).
- Plotly's figure properties ``fig._data``, ``fig._layout`` and ``fig._frame_objs``: read to make a figure's
  JSON without deep-copying its arrays (figure_json), tested in test_plots.py against ``fig.to_json()``.
- Gradio's ``GRADIO_ANALYTICS_CACHE_FREQUENCY`` and ``GRADIO_ANALYTICS_MAX_EVENTS`` (environment variables its
  queue reads, not in its docs): the app sets them so that Gradio sums up its events rarely (ui/demo.py
  ``serve``), tested in test_reliability.py; were they dropped, the app would still work, only slower under
  load.
- CPU bf16 support: training reads the CPU's flags (/proc/cpuinfo: avx512_bf16, amx_bf16), a public
  source, instead of ``torch.cpu._is_avx512_bf16_supported``.
"""
from __future__ import annotations

from pathlib import Path

import torch

from transformer.training.run import cpu_has_fast_bf16, pick_amp


def test_cpu_bf16_choice_follows_the_cpu_flags():
    flags = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    fast = " avx512_bf16" in flags or " amx_bf16" in flags
    assert cpu_has_fast_bf16() is fast
    assert pick_amp("auto", torch.device("cpu")) == (torch.bfloat16 if fast else None)
    assert pick_amp("none", torch.device("cpu")) is None
    assert pick_amp("bf16", torch.device("cpu")) == torch.bfloat16
