"""Three ways to compute one attention sub-layer (transformer/probes/attention_forms.py), timed side by side
on the bundled model's weights: a per-head Python loop, the batched tensors, PyTorch's fused SDPA.

``python3 bench/attention_forms.py [--threads 1] [--repeats 200]``

For 10 and 50 pieces, encoder self-attention of layer 1 (random pieces of the vocabulary), one process, the
three forms interleaved; medians and their ratio to the batched form, and the largest difference.
"""
from __future__ import annotations

import argparse
import sys

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

import torch  # noqa: E402

from transformer.probes.attention_forms import compare  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--repeats", type=int, default=200)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    tr = Translator(cache_size=0)
    g = torch.Generator().manual_seed(0)
    mha = tr.model.encoder_layers[0].self_attn
    print(f"{args.threads} thread(s), {args.repeats} interleaved runs each, torch {torch.__version__}")
    for n in (10, 50):
        src = torch.randint(4, tr.cfg.vocab_size, (1, n), generator=g)
        with torch.inference_mode():
            x = tr.model.embed(src)
        compare(mha, x, x, None, repeats=10)                                    # warm-up
        result = compare(mha, x, x, None, repeats=args.repeats)
        base = result["batched"]["seconds"]
        for name, r in result.items():
            print(f"{n:3d} pieces  {name:22s} median {1e6 * r['seconds']:8.1f} µs  "
                  f"×{r['seconds'] / base:5.2f} of batched  largest difference {r['max_diff']:.1e}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
