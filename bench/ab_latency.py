"""Two versions of the code, one process, interleaved: ``python3 bench/ab_latency.py --before DIR``.

DIR holds an earlier checkout of this repository, for example the previous commit:
``git archive HEAD~1 | (mkdir -p /tmp/old && tar -x -C /tmp/old)``. Each version loads the
bundled checkpoint through its own Translator, and greedy decoding with the KV cache (no
trace, one thread: the app's setting) and the app's traced decoding are timed round-robin
(before, after, after, before, ...), so machine noise hits both alike. Prints medians in ms, the
ratio after/before, and whether both versions produced the same tokens.
"""
from __future__ import annotations

import argparse
import importlib
import inspect
import statistics
import sys
import time
from pathlib import Path

from toolkit import ROOT  # noqa: E402  (the checkout, on sys.path: bench/toolkit.py)

import torch  # noqa: E402

from bench.run import SENTENCES  # noqa: E402

PACKAGE = "transformer"


def take_package() -> dict:
    """Remove the loaded `transformer` package from sys.modules and return its modules."""
    return {k: sys.modules.pop(k) for k in list(sys.modules) if k == PACKAGE or k.startswith(PACKAGE + ".")}


def load_version(root: Path):
    """The Translator and greedy_decode / pad_batch of the checkout at `root`, imported on their own."""
    current = take_package()
    sys.path.insert(0, str(root))
    try:
        tr = importlib.import_module(f"{PACKAGE}.translator").Translator(None, "cpu")
        tr.cache = None      # time the model run, not the trace cache (versions without one ignore this)
        for name in ("model.decoding", "decoding"):          # the layout after and before issue 15
            try:
                decoding = importlib.import_module(f"{PACKAGE}.{name}")
                break
            except ModuleNotFoundError:
                continue
    finally:
        sys.path.remove(str(root))
        take_package()
        sys.modules.update(current)
    print(f"loaded {inspect.getfile(type(tr).trace)} and "
          f"{inspect.getfile(inspect.unwrap(decoding.greedy_decode))}")
    return tr, decoding.greedy_decode, decoding.pad_batch


def cases(tr, greedy_decode, pad_batch) -> dict:
    """name -> (callable, its output tokens)."""
    out = {}
    for name in ("short (5 words)", "medium (12 words)", "long (30 words)"):
        src = pad_batch([tr.encode_source(SENTENCES[name])[0]], tr.cfg.pad_id)
        out[f"greedy, {name}"] = (lambda s=src: greedy_decode(tr.model, s), greedy_decode(tr.model, src))
    text = SENTENCES["medium (12 words)"]
    out["trace, medium (12 words)"] = (lambda: tr.trace(text), tr.trace(text).tgt_ids)
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--before", required=True, help="a checkout of the earlier code")
    p.add_argument("--reps", type=int, default=40)
    p.add_argument("--threads", type=int, default=1)
    args = p.parse_args(argv)
    torch.set_num_threads(args.threads)
    versions = {"before": cases(*load_version(Path(args.before).resolve())),
                "after": cases(*load_version(ROOT))}
    print(f"{'case':28} {'before ms':>10} {'after ms':>9} {'after/before':>13}  same tokens")
    for case in versions["after"]:
        fns = {v: versions[v][case][0] for v in versions}
        times = {v: [] for v in versions}
        for _ in range(3):                                     # warm-up
            for f in fns.values():
                f()
        for rep in range(args.reps):
            # alternate who goes first
            for v in (("before", "after") if rep % 2 == 0 else ("after", "before")):
                t0 = time.perf_counter()
                fns[v]()
                times[v].append((time.perf_counter() - t0) * 1000)
        med = {v: statistics.median(ts) for v, ts in times.items()}
        same = versions["before"][case][1] == versions["after"][case][1]
        print(f"{case:28} {med['before']:10.2f} {med['after']:9.2f} {med['after'] / med['before']:12.3f}x  "
              f"{same}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
