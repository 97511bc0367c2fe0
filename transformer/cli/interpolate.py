"""Interpolate two checkpoints of one lineage in weight space:
``python -m transformer.cli.interpolate A B --weight W --out DST``.

Every weight of DST is ``(1 - W) * A + W * B``. Meant for a model and a later fine-tuning of it (B trained on
from A's weights, the same config and tokenizer): the fine-tuning's gains are kept part-way while the
knowledge it wore away is partly given back (WiSE-FT, Wortsman et al. 2022, "Robust fine-tuning of zero-shot
models"; the paper's own checkpoint averaging is the same sum over the last checkpoints of one run). Choose W
on dev sets. The weights are written in fp32 (export for bundling); B's piece counts, replay, run config and
log are copied, and the weights file's metadata names both parents and W.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

from ..io.checkpoint import TOKENIZER_FILE, copy_optional_files, load_checkpoint, save_checkpoint


def interpolate_state(a: dict, b: dict, weight: float) -> dict:
    """``(1 - weight) * a + weight * b`` for every tensor of two state dicts with the same keys and shapes."""
    if a.keys() != b.keys():
        raise ValueError(f"the checkpoints hold different weights: {sorted(a.keys() ^ b.keys())[:5]}")
    for k in a:
        if a[k].shape != b[k].shape:
            raise ValueError(f"{k}: shape {tuple(a[k].shape)} in A, {tuple(b[k].shape)} in B")
    return {k: torch.lerp(a[k].float(), b[k].float(), weight) for k in a}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.interpolate", description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("a", help="checkpoint folder: the earlier model (weight 1 - W)")
    p.add_argument("b", help="checkpoint folder: its fine-tuning (weight W)")
    p.add_argument("--weight", type=float, required=True, help="W, from 0 (A) to 1 (B)")
    p.add_argument("--out", required=True, help="output checkpoint folder")
    args = p.parse_args(argv)
    if not 0.0 <= args.weight <= 1.0:
        p.error("--weight must be between 0 and 1")
    if Path(args.out).resolve() in (Path(args.a).resolve(), Path(args.b).resolve()):
        p.error("--out must be a new folder, not A or B (their weights would be overwritten)")
    model_a, _ = load_checkpoint(args.a)
    model_b, tok_b = load_checkpoint(args.b)
    if model_a.cfg != model_b.cfg:
        p.error(f"the configs differ: {model_a.cfg} vs {model_b.cfg}")
    if (Path(args.a) / TOKENIZER_FILE).read_bytes() != (Path(args.b) / TOKENIZER_FILE).read_bytes():
        p.error("the tokenizers differ: only checkpoints of one lineage can be interpolated")
    model_b.load_state_dict(interpolate_state(model_a.state_dict(), model_b.state_dict(), args.weight))
    save_checkpoint(model_b, tok_b.path, args.out, dtype=torch.float32,
                    metadata={"interpolated": f"(1 - {args.weight:g}) * {args.a} + {args.weight:g} * "
                                              f"{args.b}"})
    copy_optional_files(args.b, args.out)
    print(f"wrote {args.out}: (1 - {args.weight:g}) * {args.a} + {args.weight:g} * {args.b}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
