"""Micro-batching: requests that arrive while the model is busy are decoded together.

``MicroBatcher(run_batch, max_batch, workers)``: ``submit(item)`` blocks until its own
result is ready. Each worker thread takes the oldest waiting item, then every other item
already waiting (up to ``max_batch``; after ``window_s`` more seconds if set), and calls
``run_batch(items)`` once, which must return one result per item, in order. With one user
there is nobody to wait for: the item runs at once, so a lone request is not slowed down.
No torch, no gradio.
"""
from __future__ import annotations

import logging
import queue
import threading
import time
from concurrent.futures import Future
from typing import Any, Callable, Sequence

log = logging.getLogger(__name__)


class MicroBatcher:
    def __init__(self, run_batch: Callable[[Sequence[Any]], Sequence[Any]], max_batch: int = 16,
                 workers: int = 1, window_s: float = 0.0, name: str = "batcher") -> None:
        self.run_batch, self.max_batch, self.window_s = run_batch, max(1, max_batch), max(0.0, window_s)
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._workers = [threading.Thread(target=self._work, name=f"{name}-{i}", daemon=True)
                         for i in range(max(1, workers))]
        self._started = False
        self._lock = threading.Lock()
        self.batches = self.items = 0
        self.largest = 0

    def submit(self, item: Any) -> Any:
        """The result for this item (its exception, re-raised, if its batch failed)."""
        self._start()
        future: Future = Future()
        self._queue.put((item, future))
        return future.result()

    def _start(self) -> None:
        with self._lock:
            if not self._started:
                for w in self._workers:
                    w.start()
                self._started = True

    def _take(self) -> list:
        batch = [self._queue.get()]
        deadline = time.perf_counter() + self.window_s
        while len(batch) < self.max_batch:
            try:
                wait = deadline - time.perf_counter()
                batch.append(self._queue.get(timeout=wait) if wait > 0 else self._queue.get_nowait())
            except queue.Empty:
                break
        return batch

    def _work(self) -> None:
        while True:
            batch = self._take()
            with self._lock:
                self.batches += 1
                self.items += len(batch)
                self.largest = max(self.largest, len(batch))
            try:
                results = self.run_batch([item for item, _ in batch])
                if len(results) != len(batch):
                    raise RuntimeError(f"run_batch gave {len(results)} results for {len(batch)} items")
            except Exception as e:  # noqa: BLE001  (each caller gets the exception; the worker lives on)
                log.exception("batch of %d failed", len(batch))
                for _, future in batch:
                    future.set_exception(e)
                continue
            for (_, future), result in zip(batch, results):
                future.set_result(result)

    def stats(self) -> dict:
        with self._lock:
            return dict(batches=self.batches, items=self.items, largest=self.largest)
