"""Two checkpoints timed side by side in one process: greedy translation and the app's traced
translation of the 5-, 12- and 30-word sentences of bench/run.py, one CPU thread, interleaved.

``python bench/ab_checkpoints.py --a OLD_DIR --b NEW_DIR [--reps 30]`` prints medians (ms) and the ratio
b / a, and each folder's size on disk: what a model change costs at translation time.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import toolkit  # noqa: E402,F401  (the checkout on sys.path: bench/toolkit.py)

import torch  # noqa: E402

from bench.run import SENTENCES  # noqa: E402
from transformer.serving.translator import Translator  # noqa: E402


def folder_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) / 1e6


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--a", required=True, help="the reference checkpoint folder")
    p.add_argument("--b", required=True, help="the checkpoint folder to compare")
    p.add_argument("--reps", type=int, default=30)
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    models = {"a": Translator(args.a, "cpu", cache_size=0), "b": Translator(args.b, "cpu", cache_size=0)}
    print(f"a = {args.a} ({folder_mb(Path(args.a)):.1f} MB), b = {args.b} ({folder_mb(Path(args.b)):.1f} "
          f"MB); 1 thread, {args.reps} interleaved repetitions after one warm-up, medians in ms")
    print("| sentence | what | a | b | b / a |\n|---|---|---:|---:|---:|")
    for label, text in SENTENCES.items():
        for what in ("greedy", "trace"):
            times = {"a": [], "b": []}
            for rep in range(args.reps + 1):
                for k in ("a", "b") if rep % 2 else ("b", "a"):
                    tr = models[k]
                    t0 = time.perf_counter()
                    tr.translate([text]) if what == "greedy" else tr.trace(text)
                    if rep:
                        times[k].append((time.perf_counter() - t0) * 1000)
            a, b = statistics.median(times["a"]), statistics.median(times["b"])
            print(f"| {label} | {what} | {a:.1f} | {b:.1f} | {b / a:.2f} |", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
