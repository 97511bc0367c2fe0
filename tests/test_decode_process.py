"""Decoding in processes of their own (transformer/serving/decode_process.py): the same traces as decoding
here, each request its own result, a dead process replaced, the app serving without them, and no process left
behind when the app's process dies."""
from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import psutil
import pytest

from transformer.serving.decode_process import trace_items
from transformer.trace import KINDS, Source

ROOT = Path(__file__).resolve().parent.parent
SENTENCES = ["The agreement on the European Economic Area was signed in August 1992.", "I like tea.",
             "Where are you going tonight?", "The children are playing in the snow.",
             "He bought a new car last week, but he still takes the bus to work every morning."]


@pytest.fixture(scope="module")
def here(bundled_checkpoint):
    from transformer.serving.translator import Translator
    return Translator(bundled_checkpoint, "cpu", cache_size=0)


@pytest.fixture(scope="module")
def apart(bundled_checkpoint):
    from transformer.serving.translator import Translator
    import torch
    tr = Translator(bundled_checkpoint, "cpu", cache_size=0, batch_workers=1, max_batch=8, decode_processes=1,
                    decode_threads=torch.get_num_threads())    # as many threads as here: the same sums' order
    yield tr
    tr.decoders.close()


def test_a_decoding_process_gives_the_traces_decoded_here(apart):
    """The same batch decoded there (pickled back) and here (``trace_items`` on the app's own model):
    equal."""
    items = [(apart.source(t), ()) for t in SENTENCES]
    there, here = apart.decoders.trace_batch(items), trace_items(apart.model, apart.tokenizer, items)
    for a, b in zip(here, there):
        assert b.source == a.source and b.translation == a.translation and b.tgt_ids == a.tgt_ids
        assert [s.topk_ids for s in b.steps] == [s.topk_ids for s in a.steps]
        np.testing.assert_allclose([s.topk_probs for s in b.steps], [s.topk_probs for s in a.steps],
                                   rtol=1e-4)
        for kind in KINDS:
            ma, mb = a.attention(kind), b.attention(kind)
            assert (mb.queries, mb.keys) == (ma.queries, ma.keys)
            np.testing.assert_allclose(mb.probs, ma.probs, rtol=1e-4, atol=1e-6)
            np.testing.assert_allclose(mb.scores, ma.scores, rtol=1e-4, atol=1e-5)
            # shared traces stay read-only
            assert not mb.probs.flags.writeable and not mb.scores.flags.writeable


def test_concurrent_requests_each_get_their_own_trace(here, apart):
    with ThreadPoolExecutor(len(SENTENCES)) as pool:       # arriving together: decoded there, batched
        got = list(pool.map(apart.trace, SENTENCES))
    assert [t.source.text for t in got] == SENTENCES
    assert [t.translation for t in got] == [here.trace(t).translation for t in SENTENCES]


def test_a_bad_item_fails_only_its_own_request(apart):
    good = apart.source("I like tea.")
    # no such piece: the model fails
    bad = Source("x", (apart.cfg.vocab_size + 5, apart.cfg.eos_id), ("x", "</s>"))
    out = apart.decoders.trace_batch([(good, ()), (bad, ()), (good, ())])
    assert isinstance(out[1], Exception)
    assert out[0].translation == out[2].translation == apart.trace("I like tea.").translation


def test_a_killed_decoding_process_is_replaced(apart):
    before, restarts = apart.decoders.pids(), apart.decoders.restarts
    os.kill(before[0], signal.SIGKILL)
    assert apart.trace("Where are you going tonight?").translation     # decoded again in a new process
    assert apart.decoders.restarts == restarts + 1 and apart.decoders.pids() != before


def test_the_app_still_serves_when_its_decoding_processes_cannot_start(bundled_checkpoint, monkeypatch):
    from transformer.serving import decode_process
    from transformer.serving.translator import Translator

    def broken(*a, **k):
        raise OSError("no semaphores here")
    monkeypatch.setattr(decode_process.ProcessPoolExecutor, "__init__", broken)
    tr = Translator(bundled_checkpoint, "cpu", cache_size=0, batch_workers=1, decode_processes=1)
    assert tr.decoders is None and tr.trace("I like tea.").translation   # decoded in its own process


def test_no_decoding_process_outlives_the_app(bundled_checkpoint):
    """The app killed outright (no clean shutdown): its decoding process ends too, within seconds."""
    script = textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from transformer.serving.decode_process import DecodeProcesses
        if __name__ == "__main__":
            d = DecodeProcesses({str(bundled_checkpoint)!r}, "cpu", 1, 1)
            print(d.pids()[0], flush=True)
            time.sleep(600)
    """)
    app = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        ready, _, _ = select.select([app.stdout], [], [], 120)
        assert ready, "the decoding process did not start within 2 minutes"
        child = int(app.stdout.readline())
        assert psutil.pid_exists(child)
    finally:
        app.kill()
        app.wait()
    deadline = time.time() + 15
    while time.time() < deadline and alive(child):
        time.sleep(0.2)
    assert not alive(child)


def alive(pid: int) -> bool:
    """Running (an orphan's zombie, waiting for a container's init to reap it, has ended)."""
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False
