"""Shared fixtures: tiny models and a tokenizer trained on synthetic text (no corpus lines)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from transformer.config import ModelConfig  # noqa: E402
from transformer.model.transformer import Transformer  # noqa: E402

EN_UNITS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
            "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen", "nineteen"]
EN_TENS = {20: "twenty", 30: "thirty", 40: "forty", 50: "fifty"}
FR_UNITS = ["zéro", "un", "deux", "trois", "quatre", "cinq", "six", "sept", "huit", "neuf", "dix", "onze",
            "douze", "treize", "quatorze", "quinze", "seize", "dix-sept", "dix-huit", "dix-neuf"]
FR_TENS = {20: "vingt", 30: "trente", 40: "quarante", 50: "cinquante"}


def number_words(n: int) -> tuple[str, str]:
    """English and French words for 0..59 (a synthetic translation task made up for the tests)."""
    if n < 20:
        return EN_UNITS[n], FR_UNITS[n]
    t, u = n - n % 10, n % 10
    if u == 0:
        return EN_TENS[t], FR_TENS[t]
    fr = f"{FR_TENS[t]} et un" if u == 1 else f"{FR_TENS[t]}-{FR_UNITS[u]}"
    return f"{EN_TENS[t]}-{EN_UNITS[u]}", fr


def synthetic_pairs(n_max: int = 60) -> list[tuple[str, str]]:
    pairs = []
    for n in range(n_max):
        en, fr = number_words(n)
        pairs.append((f"I have {en} apples.", f"J'ai {fr} pommes."))
        pairs.append((f"{en.capitalize()} cats.", f"{fr.capitalize()} chats."))
    return pairs


@pytest.fixture(scope="session")
def pairs():
    return synthetic_pairs()


@pytest.fixture(scope="session")
def tokenizer(tmp_path_factory, pairs):
    from transformer.io.tokenizer import train_tokenizer
    out = tmp_path_factory.mktemp("tok") / "tokenizer"
    return train_tokenizer([s for p in pairs for s in p], out, vocab_size=120, model_type="unigram")


@pytest.fixture
def tiny_cfg():
    return ModelConfig(vocab_size=40, d_model=32, n_heads=4, n_encoder_layers=2, n_decoder_layers=2, d_ff=64,
                       dropout=0.0, max_len=64)


@pytest.fixture
def tiny_model(tiny_cfg):
    torch.manual_seed(0)
    return Transformer(tiny_cfg).eval()


def random_batch(cfg, B=3, S=9, seed=0):
    g = torch.Generator().manual_seed(seed)
    src = torch.randint(4, cfg.vocab_size, (B, S), generator=g)
    src[:, -1] = cfg.eos_id
    if B > 1:  # a shorter, padded sentence
        src[1, S - 3] = cfg.eos_id
        src[1, S - 2:] = cfg.pad_id
    return src


from harness.app import free_port, start_app, stop_app  # noqa: E402,F401  (shared with the benchmarks)
from harness.redis_server import start_redis, stop_redis  # noqa: E402


@pytest.fixture(scope="session")
def app_url(bundled_checkpoint):
    proc, url = start_app()
    yield url
    stop_app(proc)


@pytest.fixture(scope="module")
def tiny_translator(tmp_path_factory, tokenizer):
    """A Translator over a tiny random model and the synthetic tokenizer: the app's code paths in
    milliseconds."""
    from transformer.io.checkpoint import save_checkpoint
    from transformer.serving.translator import Translator
    cfg = ModelConfig(vocab_size=tokenizer.vocab_size, d_model=32, n_heads=4, n_encoder_layers=2,
                      n_decoder_layers=2, d_ff=64, max_len=64)
    torch.manual_seed(0)
    folder = save_checkpoint(Transformer(cfg), tokenizer.path, tmp_path_factory.mktemp("ck") / "tiny")
    tr = Translator(folder, "cpu")
    tr.max_src_tokens = 24          # keep decoding short for the property test
    return tr


@pytest.fixture(scope="session")
def bundled_checkpoint():
    from transformer.io.checkpoint import DEFAULT_CHECKPOINT
    if not (DEFAULT_CHECKPOINT / "model.safetensors").is_file():
        pytest.fail(f"the bundled checkpoint {DEFAULT_CHECKPOINT} is missing")
    return DEFAULT_CHECKPOINT


@pytest.fixture(scope="module")
def browser():
    """Debian's Chromium driven by playwright (never a downloaded browser); CI must have it. Per module:
    playwright's sync API keeps an event loop running while it is open, which later asyncio tests refuse."""
    import os
    from harness.browser import CHROMIUM, FLAGS, IdleBrowser
    if not os.path.exists(CHROMIUM):
        if os.environ.get("CI"):
            pytest.fail("chromium is not installed (CI must run the browser test: apt-get install chromium)")
        pytest.skip("chromium is not installed (apt-get install chromium); CI runs this test")
    from playwright.sync_api import sync_playwright
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        yield IdleBrowser(b)      # every page it opens can wait until it has settled (harness.browser.settle)
        b.close()


# Markers (issue 42): `pytest -m "not slow"` runs the tests that need no browser, no app server and no
# training run; the README's command runs them all. A test is slow when it, or a fixture it uses (at any
# depth), starts a browser, an app process, a Redis server or a training run: found from their source, so a
# new test is marked without anyone remembering to.
SLOW_SIGNS = ("start_app(", "sync_playwright", "redis_server", "transformer.cli.train",
              "training.train import main", "torchrun", "start_redis", '"app.py"', "APP_PY", ".launch(",
              "serve(", "load_test", "Popen(", "train_pair(", "train(name")


def _starts_something(fn, depth: int = 2) -> bool:
    """Does `fn`'s source, or that of a function of its module it calls (two levels down), start something?"""
    import inspect
    try:
        src = inspect.getsource(fn)
    except (OSError, TypeError):
        return False
    if any(sign in src for sign in SLOW_SIGNS):
        return True
    module = sys.modules.get(getattr(fn, "__module__", ""), None)
    if depth and module is not None and hasattr(fn, "__code__"):
        for name in fn.__code__.co_names:
            helper = getattr(module, name, None)
            if inspect.isfunction(helper) and helper.__module__ == module.__name__ and helper is not fn:
                if _starts_something(helper, depth - 1):
                    return True
    return False


def pytest_collection_modifyitems(config, items):
    for item in items:
        fixtures = getattr(item, "_fixtureinfo", None)
        defs = [d for ds in (fixtures.name2fixturedefs.values() if fixtures else ()) for d in ds]
        if _starts_something(getattr(item, "function", None)) or any(_starts_something(d.func) for d in defs):
            item.add_marker(pytest.mark.slow)


@pytest.fixture(scope="module")
def redis_url():
    """A throwaway redis-server for a test module (the live rooms' and the votes' Redis stores)."""
    proc = start_redis(port := free_port())
    yield f"redis://127.0.0.1:{port}/0"
    stop_redis(proc)
