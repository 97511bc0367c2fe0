"""Write the longer runs of the design choices trained live (``transformer/training/toy.py``) into
``checkpoints/toy-runs/NAME.json``: the same two models and seed as the live run, trained ``--times`` as many
steps, their last snapshot (curves, accuracy by length, attention maps) as plain JSON of a few KB, which the
Compare tab shows at once (a Space on a shared CPU teaches without training live).

``python3 tools/toy_runs.py [--times 4] [--only positions scale …]`` (one CPU thread per run; about 3–5
minutes a choice at ``--times 4`` on this project's 2-core VM).
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import replace
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from transformer.training.toy import CHOICES, train_pair  # noqa: E402

OUT = ROOT / "checkpoints" / "toy-runs"
SEED = 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--times", type=int, default=4, help="this many times the live run's steps")
    ap.add_argument("--only", nargs="+", choices=list(CHOICES), default=list(CHOICES))
    ap.add_argument("--out", default=str(OUT))
    args = ap.parse_args(argv)
    torch.set_num_threads(1)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for name in args.only:
        # as many points as a live run
        choice = replace(CHOICES[name], every=CHOICES[name].every * args.times)
        t0 = time.time()
        last = None
        for snap in train_pair(choice, SEED, choice.steps * args.times):
            last = snap
        data = last.to_dict()
        data["shipped"] = dict(times=args.times, seed=SEED, seconds=round(time.time() - t0, 1),
                               torch=torch.__version__, made=time.strftime("%Y-%m-%d"))
        (out / f"{name}.json").write_text(json.dumps(data, separators=(",", ":")), encoding="utf-8")
        print(f"{name}: {last.step} steps in {time.time() - t0:.0f} s; accuracy {data['a_label']} "
              f"{data['a']['accuracy'][-1]:.2f}, {data['b_label']} {data['b']['accuracy'][-1]:.2f}",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
