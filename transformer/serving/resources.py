"""The process's resources around a computation: the memory its passes freed, handed back to the system, and
the intra-op threads it may use (the serving layer's; torch imported only when threads change)."""
from __future__ import annotations

import contextlib
import ctypes
import functools
from typing import Optional


@functools.lru_cache(maxsize=1)
def _libc():
    try:
        return ctypes.CDLL("libc.so.6")
    except OSError:
        return None


def release_freed_memory() -> None:
    """Hand the heap pages that freed tensors left behind back to the system (glibc keeps them otherwise, so
    the process's RSS would stay at the peak of the largest attribution ever computed); nothing elsewhere."""
    trim = getattr(_libc(), "malloc_trim", None)
    if trim is not None:
        trim(0)


@contextlib.contextmanager
def releasing():
    """The memory a computation's passes freed, handed back to the system after it (release_freed_memory)."""
    try:
        yield
    finally:
        release_freed_memory()


@contextlib.contextmanager
def intra_op_threads(n: Optional[int]):
    """Run the block with `n` intra-op threads in this thread (None: as set), then put the setting back. The
    app serves translations with one thread each (many at once share the cores) but runs attributions one at a
    time (a room's requests share one computation), so an attribution may use every core. Part of the setting
    is process-wide (MKL's): a translation running meanwhile may use the extra threads too,
    hence the reset."""
    import torch
    before = torch.get_num_threads()
    if not n or n == before:
        yield
        return
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)
