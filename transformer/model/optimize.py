"""Faster CPU inference, same numbers: ``optimize_for_inference(model)``.

The model code (attention.py, layers.py, transformer.py) is written for reading; this module
holds the one speed-up that changes how the weights are laid out in memory. The Translator
applies it explicitly after loading a checkpoint; training never does.

Why it helps: decoding one sentence multiplies a single row by every weight matrix at every
step. Those matrix-vector products are bound by reading the weights (about 19 MB per step for
the bundled model, more than the CPU keeps in cache), and MKL reads a matrix stored column by
column (Wᵀ contiguous) about twice as fast for one row as PyTorch's usual row-major (out, in)
layout (bench/RESULTS.md, "What dominates"). So every ``nn.Linear`` weight and the tied
embedding are stored column-major here: the same values, shapes and parameter names (a
checkpoint still loads into the model unchanged), other strides. ``nn.Linear`` and
``F.linear`` accept any strides, so no model code changes and no per-call check is needed.
"""
from __future__ import annotations

import torch
from torch import nn

from .transformer import Transformer


def column_major(w: torch.Tensor) -> torch.Tensor:
    """The same (out, in) matrix stored column by column: Wᵀ is contiguous."""
    return w.t().contiguous().t()


def is_column_major(w: torch.Tensor) -> bool:
    return w.dim() == 2 and w.t().is_contiguous()


@torch.no_grad()
def optimize_for_inference(model: Transformer) -> Transformer:
    """Prepare a loaded model for serving, in place; returns it. Eval mode, no gradients (the
    model is read-only from here on, and safe to share between threads), and on CPU every
    weight matrix stored column-major. Numbers are those of the model as it was (tests/test_model.py)."""
    model.eval().requires_grad_(False)
    if model.device.type != "cpu":   # GPUs gain nothing from the layout
        return model
    for module in model.modules():
        if isinstance(module, (nn.Linear, nn.Embedding)) and not is_column_major(module.weight):
            module.weight = nn.Parameter(column_major(module.weight), requires_grad=False)
    return model
