"""Greedy decoding in processes of their own, so the web server's Python and the decoding loop do not share a
GIL. Optional: the app decodes in its own process unless started with ``--decode-processes N``
(``APP_DECODE_PROCESSES`` is 0: on 2 cores the processes did not make 100 students' translations faster,
bench/RESULTS.md, seventh round).

Why: every torch call in the decoding loop lets go of the GIL and must win it back; beside busy Python threads
(Gradio's, the views' drawing) a batch of 16 sentences took 8.8 s instead of 0.17 s (``bench/gil_convoy.py``),
and 100 students translating at once waited ~2 s while the cores sat 20-40 % idle (bench/RESULTS.md). A
process has its own GIL: the app's batcher hands each batch to one of these processes and waits on a pipe.

``DecodeProcesses(checkpoint, device, processes, threads)``: ``trace_batch(items)`` decodes (Source, settings)
items exactly as ``Translator._trace_batch`` does in the app's own process (``trace_items``, shared by both),
in a process that loaded the same checkpoint on the same device. Traces travel back pickled (numpy arrays and
tuples: about 150 kB for a 20-piece sentence, up to ~25 MB at the input and output limits) and are made
read-only again here. A process that dies (killed, out of memory) is replaced and the batch it held decoded
again one sentence at a time, so a sentence that kills its process fails only its own request; one that hangs
past the time limit is killed and replaced. No gradio.
"""
from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
from concurrent.futures import ProcessPoolExecutor, TimeoutError as FutureTimeout
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Optional, Sequence

from ..config import TRACE_DEADLINE_S
from ..io.checkpoint import checkpoint_identity
from ..trace import Source
from .trace_cache import freeze

log = logging.getLogger(__name__)

_model = _tokenizer = _identity = None      # in a decoding process: its own copy, loaded once by `_load`
# a decoding process that has not loaded the model by then has failed
START_TIMEOUT_S = 120.0
BATCH_TIMEOUT_S = TRACE_DEADLINE_S + 30.0   # a batch ends by its deadline; one that has not by then is stuck


def trace_items(model, tokenizer, items: Sequence[tuple[Source, tuple]]) -> list:
    """Items (a Source, its settings as sorted (name, value) pairs) decoded in one batch per settings. A batch
    that fails is retried one sentence at a time, so one bad input fails only its own request: its result is
    then the exception, handed to that request's caller."""
    from ..model.decoding import trace_greedy, trace_greedy_batch
    out: list = [None] * len(items)
    groups: dict[tuple, list[int]] = {}
    for i, (_, settings) in enumerate(items):
        groups.setdefault(settings, []).append(i)
    for settings, idx in groups.items():
        kw = dict(settings)
        try:
            traces = trace_greedy_batch(model, tokenizer, [items[i][0] for i in idx], **kw)
        except Exception:  # noqa: BLE001
            traces = []
            for i in idx:
                try:
                    traces.append(trace_greedy(model, tokenizer, items[i][0], **kw))
                except Exception as e:  # noqa: BLE001
                    log.exception("decoding %r failed", items[i][0].text[:80])
                    traces.append(e)
        for i, t in zip(idx, traces):
            out[i] = t
    return out


def _load(checkpoint: Optional[str], device: str, threads: int) -> None:
    """A decoding process's start: it ends when the app's process ends, however that ends (a killed app must
    not leave its decoders behind), and leaves Ctrl-C to the app; then its torch threads, and the model,
    loaded as the app's process loads it and run once (its first decoding is slower)."""
    global _model, _tokenizer, _identity
    import os
    import signal
    import torch
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=lambda: (parent.join(), os._exit(0)), name="parent-watch",
                         daemon=True).start()
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s decoding process: %(message)s")
    from ..io.checkpoint import load_checkpoint
    from ..model.optimize import optimize_for_inference
    if threads > 0:
        torch.set_num_threads(threads)
    model, _tokenizer = load_checkpoint(checkpoint, device)
    _model = optimize_for_inference(model)
    _identity = checkpoint_identity(checkpoint, _model.device)
    ids = _tokenizer.encode("Hello.") + [_model.cfg.eos_id]
    trace_items(_model, _tokenizer, [(Source("Hello.", ids, _tokenizer.pieces(ids)), ())])


def _run(items: Sequence[tuple[Source, tuple]]) -> list:
    return trace_items(_model, _tokenizer, items)


def _hello() -> tuple[int, tuple]:
    """This decoding process's id, and which weights it decodes with."""
    import os
    return os.getpid(), _identity


class DecodeProcesses:
    """`processes` decoding processes with `threads` torch threads each (0: torch's default), each behind a
    pool of one so that a batch goes to a process that is free. Started with "spawn" (a fork of a process
    already running torch's thread pools can hang), together, each loading the model itself before the first
    request: a few seconds and about 215 MB of memory per process. Raises if they cannot start, or if they
    loaded other weights than `identity` (``checkpoint_identity``: the app's own)."""

    def __init__(self, checkpoint: Optional[str | Path], device: str = "cpu", processes: int = 1,
                 threads: int = 1, identity: Optional[tuple] = None) -> None:
        self._args = (str(checkpoint) if checkpoint is not None else None, str(device), threads)
        self.identity = identity
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        self._pools: list[ProcessPoolExecutor] = []
        self.restarts = 0
        try:
            hellos = []
            for _ in range(max(1, processes)):
                pool, hello = self._spawn()
                self._pools.append(pool)
                hellos.append(hello)
            for hello in hellos:
                self._check(hello.result(timeout=START_TIMEOUT_S))
        except BaseException:
            self.close(wait=False)
            raise
        for i in range(len(self._pools)):
            self._free.put(i)

    def _spawn(self):
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_load,
                                   initargs=self._args)
        return pool, pool.submit(_hello)

    def _check(self, hello: tuple[int, tuple]) -> None:
        if self.identity is not None and hello[1] != self.identity:
            raise RuntimeError(f"a decoding process loaded other weights ({hello[1]}) than the app's "
                               f"({self.identity})")

    def trace_batch(self, items: Sequence[tuple[Source, tuple]]) -> list:
        """One result per item, in order: a read-only TranslationTrace, or the exception its decoding
        raised."""
        i = self._free.get()              # which process: a free one
        try:
            try:
                out = self._pools[i].submit(_run, list(items)).result(timeout=BATCH_TIMEOUT_S)
            # (a process that died or hangs, a pool shut down, a result that
            except Exception as e:  # noqa: BLE001
                # could not travel back: `_run` hands each sentence's own failure back as its
                # result, not raised)
                self._replace(i, e)
                out = []                  # one at a time: a sentence that kills its process fails only itself
                for item in items:
                    try:
                        out.append(self._pools[i].submit(_run, [item]).result(timeout=BATCH_TIMEOUT_S)[0])
                    except Exception as e2:  # noqa: BLE001
                        out.append(RuntimeError("the decoding process failed on this sentence"))
                        self._replace(i, e2)
        finally:
            self._free.put(i)
        return [r if isinstance(r, Exception) else freeze(r) for r in out]

    def _replace(self, i: int, why: BaseException) -> None:
        """A new process in place of process `i`, which died or hangs (killed first)."""
        log.warning("a decoding process %s; starting a new one",
                    "died" if isinstance(why, BrokenProcessPool) else
                    "hangs" if isinstance(why, FutureTimeout) else f"failed ({why})")
        self._stop(self._pools[i])
        self._pools[i], hello = self._spawn()
        self.restarts += 1
        try:
            hello = hello.result(timeout=START_TIMEOUT_S)
        except Exception:  # noqa: BLE001  (its next batch finds it broken and replaces it again)
            log.exception("the new decoding process did not start")
            return
        try:
            self._check(hello)
        except RuntimeError:
            # the checkpoint changed on disk: never decode with other weights than the app's
            self._stop(self._pools[i])
            raise

    @staticmethod
    def _stop(pool: ProcessPoolExecutor, wait: bool = False) -> None:
        for p in list((getattr(pool, "_processes", None) or {}).values()):
            if p.is_alive() and not wait:
                p.kill()
        pool.shutdown(wait=wait, cancel_futures=True)

    def pids(self) -> list[int]:
        """The decoding processes' ids (asked of each process: waits for a batch it is decoding)."""
        return sorted(pool.submit(_hello).result(timeout=BATCH_TIMEOUT_S)[0] for pool in list(self._pools))

    def close(self, wait: bool = True) -> None:
        for pool in self._pools:
            self._stop(pool, wait)
