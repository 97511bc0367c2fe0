"""Export a training checkpoint for bundling: ``python -m transformer.cli.export SRC DST [--dtype fp16]``.

Weights are stored in half precision to halve the folder (the model still runs in fp32);
config.json and tokenizer.model are copied. Training state and optimizer are never included.
"""
from __future__ import annotations

import argparse
import sys

import torch

from ..io.checkpoint import copy_optional_files, load_checkpoint, save_checkpoint


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m transformer.cli.export", description=__doc__)
    p.add_argument("src", help="checkpoint folder (e.g. runs/en-fr/best)")
    p.add_argument("dst", help="output folder (e.g. checkpoints/en-fr-base)")
    p.add_argument("--dtype", choices=["fp16", "bf16", "fp32"], default="fp16")
    args = p.parse_args(argv)
    model, tok = load_checkpoint(args.src)
    dtype = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[args.dtype]
    save_checkpoint(model, tok.path, args.dst, dtype=dtype, metadata={"exported_from": args.src})
    copy_optional_files(args.src, args.dst)
    print(f"exported {args.src} -> {args.dst} ({args.dtype}, {model.num_parameters():,} parameters)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
