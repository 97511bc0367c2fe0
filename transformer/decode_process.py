"""Greedy decoding in processes of their own, so the web server's Python and the decoding loop do not share a GIL.

Why: every torch call in the decoding loop lets go of the GIL and must win it back; beside busy Python threads
(Gradio's, the views' drawing) a batch of 16 sentences took 8.8 s instead of 0.17 s (``bench/gil_convoy.py``),
and 100 students translating at once waited ~2 s while the cores sat 20-40 % idle (bench/RESULTS.md). A process
has its own GIL: the app's batcher hands each batch to one of these processes and waits on a pipe.

``DecodeProcesses(checkpoint, device, processes, threads)``: ``trace_batch(items)`` decodes (Source, settings)
items exactly as ``Translator._trace_batch`` does in the app's own process (``trace_items``, shared by both), in a
process that loaded the same checkpoint on the same device. Traces travel back pickled (numpy arrays and tuples,
tens of kB) and are made read-only again here. A process that dies (killed, out of memory) is replaced, and the
batch it held is decoded once more in a new one. No gradio.
"""
from __future__ import annotations

import logging
import multiprocessing
import queue
import threading
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path
from typing import Optional, Sequence

from .trace import Source
from .trace_cache import freeze

log = logging.getLogger(__name__)

_model = _tokenizer = None      # in a decoding process: its own copy, loaded once by `_load`


def trace_items(model, tokenizer, items: Sequence[tuple[Source, tuple]]) -> list:
    """Items (a Source, its settings as sorted (name, value) pairs) decoded in one batch per settings. A batch
    that fails is retried one sentence at a time, so one bad input fails only its own request: its result is
    then the exception, handed to that request's caller."""
    from .model.decoding import trace_greedy, trace_greedy_batch
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
                    traces.append(e)
        for i, t in zip(idx, traces):
            out[i] = t
    return out


def _load(checkpoint: Optional[str], device: str, threads: int) -> None:
    """A decoding process's start: it ends when the app's process ends, however that ends (a killed app must not
    leave its decoders behind); then its torch threads, and the model, loaded as the app's process loads it."""
    global _model, _tokenizer
    import os
    import torch
    parent = multiprocessing.parent_process()
    if parent is not None:
        threading.Thread(target=lambda: (parent.join(), os._exit(0)), name="parent-watch", daemon=True).start()
    from .io.checkpoint import load_checkpoint
    from .model.optimize import optimize_for_inference
    if threads > 0:
        torch.set_num_threads(threads)
    model, _tokenizer = load_checkpoint(checkpoint, device)
    _model = optimize_for_inference(model)


def _run(items: Sequence[tuple[Source, tuple]]) -> list:
    return trace_items(_model, _tokenizer, items)


def _pid() -> int:
    import os
    return os.getpid()


class DecodeProcesses:
    """`processes` decoding processes with `threads` torch threads each (0: torch's default), each behind a pool
    of one so that a batch goes to a process that is free. Started with "spawn" (a fork of a process already
    running torch's thread pools can hang), each loads the model itself, here, before the first request: about
    2 s and 150-250 MB of memory per process."""

    def __init__(self, checkpoint: Optional[str | Path], device: str = "cpu", processes: int = 1,
                 threads: int = 1) -> None:
        self._args = (str(checkpoint) if checkpoint is not None else None, str(device), threads)
        self._free: queue.SimpleQueue = queue.SimpleQueue()
        self._pools = [self._start() for _ in range(max(1, processes))]
        for pool in self._pools:
            self._free.put(pool)
        self.restarts = 0

    def _start(self) -> ProcessPoolExecutor:
        pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"), initializer=_load,
                                   initargs=self._args)
        pool.submit(_pid).result()          # started and loaded now, not on a user's first request
        return pool

    def trace_batch(self, items: Sequence[tuple[Source, tuple]]) -> list:
        """One result per item, in order: a read-only TranslationTrace, or the exception its decoding raised."""
        pool = self._free.get()
        try:
            try:
                out = pool.submit(_run, list(items)).result()
            except BrokenProcessPool:       # the process died (killed, out of memory): a new one decodes it again
                log.warning("a decoding process died; starting a new one")
                pool.shutdown(wait=False, cancel_futures=True)
                self._pools[self._pools.index(pool)] = pool = self._start()
                self.restarts += 1
                out = pool.submit(_run, list(items)).result()
        finally:
            self._free.put(pool)
        return [r if isinstance(r, Exception) else freeze(r) for r in out]

    def pids(self) -> list[int]:
        """The decoding processes' ids, e.g. to add up the app's memory."""
        return sorted(pool.submit(_pid).result() for pool in list(self._pools))

    def close(self) -> None:
        for pool in self._pools:
            pool.shutdown(wait=True, cancel_futures=True)
