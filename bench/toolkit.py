"""What the benchmark scripts share: the checkout's path (and on ``sys.path``, so that a script run as
``python3 bench/NAME.py`` imports the package, ``harness`` and its neighbours as ``bench.NAME``), candidates
timed round-robin in one process, the percentiles every figure quotes, and results printed (and saved) as
JSON.

Each script starts with ``from toolkit import ROOT`` (Python puts the script's own folder, bench/, first on
the path), then imports the package. Starting the app and driving pages live in ``harness/`` (shared with
tests/ and tools/)."""
from __future__ import annotations

import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def interleaved(fns: dict[str, Callable[[], object]], reps: int, warmup: int = 2) -> dict[str, float]:
    """Run candidates round-robin, so that the machine's noise hits all of them alike; medians in ms."""
    for _ in range(warmup):
        for f in fns.values():
            f()
    times: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(reps):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k].append((time.perf_counter() - t0) * 1000)
    return {k: statistics.median(v) for k, v in times.items()}


def percentile(xs: Sequence[float], q: float) -> float:
    """The nearest-rank percentile (q in 0..1): the smallest value with at least q of them at or under it."""
    if not xs:
        return float("nan")
    s = sorted(xs)
    return s[max(0, math.ceil(q * len(s)) - 1)]


def spread(xs: Sequence[float], unit: str = "s", digits: int = 2) -> str:
    """'p50 …, p95 …, max …' of a list of durations, as the figures in RESULTS.md quote them."""
    if not xs:
        return "no values"
    f = lambda v: f"{v:.{digits}f} {unit}"   # noqa: E731
    return f"p50 {f(statistics.median(xs))}, p95 {f(percentile(xs, 0.95))}, max {f(max(xs))}"


def emit(result: dict, path: Optional[str | Path] = None) -> None:
    """The result as one JSON line on stdout (and, with `path`, saved there, indented)."""
    print(json.dumps(result, ensure_ascii=False, default=str))
    if path:
        Path(path).write_text(json.dumps(result, indent=1, ensure_ascii=False, default=str) + "\n",
                              encoding="utf-8")
