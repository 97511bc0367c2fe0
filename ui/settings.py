"""The web app's server settings (no gradio here: the benchmarks read them too). The model's sizes and the
limits of one translation are in transformer/config.py; the shared caches' and the batcher's
sizes beside them."""
from __future__ import annotations

import logging
import math
import os

from transformer.config import MAX_INPUT_CHARS

APP_CONCURRENCY = 2         # translations at once (one per core on the 2-core machine it was tuned on)
APP_TORCH_THREADS = 1       # intra-op threads per translation: concurrent requests share the cores
APP_DECODE_PROCESSES = 0    # processes that decode the batched translations (APP_TORCH_THREADS threads each),
                            # so the decoding loop does not share a GIL with the web server; 0: in the app's
                            # process, as fast for 100 students on 2 cores and ~440 MB smaller
                            # (bench/RESULTS.md, 7th round)
APP_ATTRIBUTION_THREADS = 0 # intra-op threads for an attribution (run one at a time): 0 = one per core
APP_ATTRIBUTION_CONCURRENCY = 16   # attribution requests handled at once: one computes (the translator's
                                   # lock), the others wait for its result or find theirs cached
APP_CAUSAL_CONCURRENCY = 2  # knock-outs, head rankings and patchings at once (Knock it out; each ~0.2-1.2 s
                            # of every core): their own pool, so a class ranking heads does not hold
                            # back its Translates
APP_QUEUE_SIZE = 256        # requests that may wait before new ones are turned away
APP_REDRAW_CONCURRENCY = 4  # figure redraws at once
# drawn views kept for every user looking at the same trace the same way (page.DRAWS)
APP_DRAW_CACHE = 512
APP_PORT = 7860
# Translate requests Gradio hands to the batcher at once (they wait there, not in its queue)
APP_TRANSLATE_WAITING = 32
APP_MAX_THREADS = 80        # Gradio's worker threads: room for the waiting translations and the redraws
APP_MAX_SESSIONS = 1000     # sessions kept (Gradio's state_session_capacity; its default is 10,000): each
                            # keeps its last trace (10-25 MB for a 1,000-character input, its arrays dropped
                            # with the trace cache's copy: ui/sessions.py,
                            # transformer/serving/trace_cache.py); past this many, the least recently used
                            # session's state goes
# Gradio's event summary (for its monitoring page): once per 1,000 events, of the last 2,000
APP_GRADIO_ANALYTICS = {"GRADIO_ANALYTICS_CACHE_FREQUENCY": 1000,
                        "GRADIO_ANALYTICS_MAX_EVENTS": 2000}
APP_STATUS_UPDATE_RATE = 1.0   # seconds between Gradio's queue-position messages to the requests waiting
                               # (each gets its position at once on joining); Gradio's "auto" sends every
                               # waiting request one each time any request starts: thousands for a room of 100
                               # (bench/RESULTS.md, 8th round)
APP_CACHE_CLEAN_S = (120, 600)    # Gradio's delete_cache: every 2 min, delete its copies of users' files (the
                                  # HTML reports, 5-10 MB each) older than 10 min
APP_REPORT_KEEP_S = 120     # our own report files are deleted this long after (Gradio serves its copy)
TEXTBOX_MAX_CHARS = 4 * MAX_INPUT_CHARS   # the box takes more, so that the cut can be reported
PLAY_INTERVAL_S = 1.0       # seconds per step when the step-by-step view plays (the default speed)
# seconds per step
PLAY_SPEEDS = [("0.5 s/step", 0.5), ("1 s/step", 1.0), ("2 s/step", 2.0), ("3 s/step", 3.0)]


def forwarded_hops() -> int:
    """Proxies in front of the app whose X-Forwarded-For entries are trusted, to tell clients apart for the
    room limits (ui/room_limits.py): APP_FORWARDED_HOPS in the environment, else 1 on a Hugging Face Space
    (every request comes from its proxy, which appends the client's address), else 0 (the
    connection's own address)."""
    raw = os.environ.get("APP_FORWARDED_HOPS", "").strip()
    if raw.isdigit():
        return int(raw)
    return 1 if os.environ.get("SPACE_ID") else 0


def status_update_rate(raw) -> "float | str":
    """Gradio's ``status_update_rate`` from app.py's ``--status-update-rate`` (APP_STATUS_UPDATE_RATE): "auto"
    or seconds above 0; anything else (a typo, 0, which would make Gradio's queue loop without pause) is the
    default, with a warning."""
    text = str(raw if raw is not None else "").strip().lower()
    if not text:
        return APP_STATUS_UPDATE_RATE
    if text == "auto":
        return "auto"
    try:
        rate = float(text)
    except ValueError:
        rate = 0.0
    if rate > 0 and math.isfinite(rate):
        return rate
    logging.getLogger("app").warning("APP_STATUS_UPDATE_RATE=%r is not 'auto' or a number of seconds above "
                                     "0: using %s",
                                     raw, APP_STATUS_UPDATE_RATE)
    return APP_STATUS_UPDATE_RATE
