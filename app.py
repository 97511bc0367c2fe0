"""See a Transformer translate English to French, step by step and head by head.

Run: ``python app.py [--checkpoint DIR] [--device auto|cpu|cuda] [--host 127.0.0.1] [--port 7860] [--share]``.
The same file runs unchanged as a Hugging Face Space. It reads the options, loads the model once
(``transformer.serving.translator``) and serves the page built by ``ui.demo.build_demo``: the model runs once
per Translate (and on request in a few views), every other control redraws from the trace kept per user.
"""
from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from pathlib import Path

from transformer.doubt import load_language_identifier
from transformer.io.checkpoint import DEFAULT_CHECKPOINT, CheckpointError
from transformer.serving.translator import Translator
from ui.settings import (APP_ATTRIBUTION_THREADS, APP_CONCURRENCY, APP_DECODE_PROCESSES, APP_PORT,
                         APP_QUEUE_SIZE, APP_STATUS_UPDATE_RATE, APP_TORCH_THREADS, status_update_rate)

log = logging.getLogger("app")


def cores() -> int:
    """The cores this process may run on (a container's limit where the system tells it), at most 8."""
    return min(8, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1)


def parse_args(argv=None) -> argparse.Namespace:
    env = os.environ.get
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--checkpoint", default=env("TRANSFORMER_CHECKPOINT", str(DEFAULT_CHECKPOINT)),
                   help="checkpoint folder (default: the bundled model)")
    p.add_argument("--device", default=env("TRANSFORMER_DEVICE", "auto"), help="auto, cpu or cuda")
    p.add_argument("--host", default=env("GRADIO_SERVER_NAME", "127.0.0.1"),
                   help="address to bind (default 127.0.0.1; 0.0.0.0 to serve a network)")
    p.add_argument("--port", type=int, default=int(env("GRADIO_SERVER_PORT", str(APP_PORT))))
    p.add_argument("--share", action="store_true", help="create a public gradio.live link")
    p.add_argument("--redis", default=env("APP_REDIS_URL", "") or None, metavar="URL",
                   help="keep live lecture rooms in Redis (redis://host:6379/0), shared by several app "
                        "processes behind a sticky load balancer (default: in this process)")
    p.add_argument("--concurrency", type=int, default=int(env("APP_CONCURRENCY", str(APP_CONCURRENCY))),
                   help="translations run at once (the model is shared read-only)")
    p.add_argument("--torch-threads", type=int, default=int(env("APP_TORCH_THREADS", str(APP_TORCH_THREADS))),
                   help="intra-op threads per translation (default 1: concurrent requests share the cores)")
    p.add_argument("--decode-processes", type=int,
                   default=int(env("APP_DECODE_PROCESSES", str(APP_DECODE_PROCESSES))),
                   help="processes of their own that decode the translations, each loading the model (~215 "
                        "MB); default 0: in the app's process, sharing Python's GIL with the web server (as "
                        "fast on 2 cores, bench/RESULTS.md; more cores may gain from them)")
    p.add_argument("--attribution-threads", type=int,
                   default=int(env("APP_ATTRIBUTION_THREADS", str(APP_ATTRIBUTION_THREADS))),
                   help="intra-op threads for an attribution, run one at a time (default 0: one per core)")
    p.add_argument("--queue-size", type=int, default=int(env("APP_QUEUE_SIZE", str(APP_QUEUE_SIZE))),
                   help="requests that may wait in the queue before new ones are turned away")
    p.add_argument("--status-update-rate", type=status_update_rate,
                   default=env("APP_STATUS_UPDATE_RATE", str(APP_STATUS_UPDATE_RATE)),
                   help="seconds between the queue positions sent to waiting requests (each gets its own on "
                        "joining), or 'auto': Gradio's default, to every waiting request as each one starts")
    return p.parse_args(argv)


def main(argv=None) -> int:
    # The page's modules (gradio) are imported here, not above: each decoding process imports this file again
    # (multiprocessing's spawn runs the main module's imports) and needs only the model's.
    from ui.demo import build_demo, serve
    from ui.rooms import room_store
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    args = parse_args(argv)
    t0 = time.perf_counter()
    if args.torch_threads > 0:
        import torch
        torch.set_num_threads(args.torch_threads)
    try:
        # Concurrent Translates wait in the batcher and are decoded together, `concurrency` batches at once.
        translator = Translator(args.checkpoint, args.device, batch_workers=args.concurrency,
                                decode_processes=args.decode_processes, decode_threads=args.torch_threads,
                                attribution_threads=args.attribution_threads or cores())
    except CheckpointError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    # Warm-up: the first request should not pay for the model's lazy initialisation (drawing figures here too
    # put app processes more often in a slow mode, bench/RESULTS.md, section 4: not understood, not done).
    translator.trace("Hello.")
    load_language_identifier()        # "Hello." is too short to ask py3langid
    log.info("model loaded on %s in %.1fs", translator.device, time.perf_counter() - t0)
    try:
        rooms = room_store(args.redis)
    except Exception as e:  # noqa: BLE001  redis missing or not answering: say so, do not start half a server
        print(f"error: the room store at {args.redis} does not answer: {e}", file=sys.stderr)
        return 2
    demo = build_demo(translator, Path(args.checkpoint), args.concurrency, rooms)
    serve(demo, args.host, args.port, args.share, args.queue_size, status_update_rate=args.status_update_rate)
    return 0


if __name__ == "__main__":
    sys.exit(main())
