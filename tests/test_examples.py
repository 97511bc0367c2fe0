"""The Examples: the classics of the attention literature, where they come from, and that none is trained
on."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from transformer import examples
from transformer.io.checkpoint import DEFAULT_CHECKPOINT, RUN_CONFIG_FILE
from transformer.training.data import SHARED_DATA, parse_spec, read_corpus
from transformer.viz import links
from transformer.viz.views import classic_line


def test_every_classic_names_a_view_a_link_can_open():
    from transformer.config import ModelConfig
    cfg = ModelConfig.from_json(DEFAULT_CHECKPOINT / "config.json")
    for c in examples.CLASSICS:
        params = dict(kv.split("=") for kv in c.view.split("&"))
        q, notes = links.parse_query({"text": c.text, **params}, ["steps", "explorer"], "x", "steps")
        assert notes == [] and q.tab == params["tab"] and q.kind == params["kind"], c.text
        layers = cfg.n_encoder_layers if q.kind == "encoder" else cfg.n_decoder_layers
        fitted, notes = links.fit_ranges(q, 10, layers, cfg.n_heads, True)
        assert notes == [] and fitted.layer == q.layer, c.text                   # the layer exists


def test_the_page_says_what_to_look_at():
    c = examples.CLASSICS[0]
    line = classic_line(c.text)
    assert "A classic" in line and "zone économique européenne" in line and "Open that view" in line
    assert classic_line("The cat is sleeping on the sofa.") == ""


def test_the_dropdown_offers_the_classics():
    values = [v for _, v in examples.dropdown_choices()]
    assert values[: len(examples.EVERYDAY)] == examples.EVERYDAY
    assert all(c.text in values for c in examples.CLASSICS)


def _key(s: str) -> str:
    return " ".join("".join(ch.lower() for ch in s if ch.isalnum() or ch.isspace()).split())


RUN_CONFIGS = sorted((DEFAULT_CHECKPOINT.parent).glob(f"**/{RUN_CONFIG_FILE}"))


@pytest.mark.skipif(not RUN_CONFIGS or not SHARED_DATA.is_dir(),
                    reason="needs a checkpoint with run_config.json and the corpora in ../shared/data")
@pytest.mark.parametrize("config_file", RUN_CONFIGS, ids=lambda p: p.parent.name)
def test_no_classic_is_in_a_models_training_data(config_file):
    """Every checkpoint that records its training run (the bundled one, the candidates): no classic sentence
    is in any corpus it was trained on."""
    config = json.loads(config_file.read_text(encoding="utf-8"))
    classics = {_key(c.text): c for c in examples.CLASSICS}
    root = Path(__file__).resolve().parent.parent
    for spec in config["train"]:
        name, _ = parse_spec(spec)
        # made in the run from the corpora (how: recorded beside it)
        if name in config.get("generated", {}):
            continue
        name = config.get("cleaned_from", {}).get(name, name)   # a cleaned copy: read the corpus it came from
        path = name if Path(name).exists() or Path(name + ".en.gz").exists() else str(root / name)
        for en, _ in read_corpus(path):
            assert _key(en) not in classics, (name, en)
