"""Private library APIs the project still relies on, for speed: each test fails when the library
changes under it, instead of the code silently losing its speed.

- Plotly's ``go.Figure(..., _validate=False)``: tested in test_plots.py (figure_from_dicts).
- ``torch.cpu._is_avx512_bf16_supported`` / ``_is_amx_tile_supported``: transformer/train.py's
  pick_amp reads them through getattr with a False default, so without this test a torch that
  renamed them would silently train in fp32 (1.4-1.7x slower, bench/RESULTS.md section 5).
"""
from __future__ import annotations

import torch


def test_torch_cpu_bf16_probes_still_exist():
    for name in ("_is_avx512_bf16_supported", "_is_amx_tile_supported"):
        probe = getattr(torch.cpu, name, None)
        assert callable(probe), f"torch.cpu.{name} is gone: update transformer/train.py's pick_amp"
        assert isinstance(probe(), bool)
