"""The companion models of the "Compare" view: a small baseline and four variants, each differing from
it in one of the paper's design choices (no torch: the app's view, the training CLI and the tests read it).

Every variant is trained with the baseline's data, data order, steps and seed
(``python -m transformer.cli.train --variant NAME``; ``tools/train_variants.py`` trains them all); what
changes is one field of ``ModelConfig``. They live in ``checkpoints/variants/NAME/``.
"""
from __future__ import annotations

import csv
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

VARIANTS_DIR = Path(__file__).resolve().parent.parent / "checkpoints" / "variants"

# The baseline's sizes: much smaller than the bundled model (a few MB each in fp16), the paper's choices.
BASELINE_SIZES = dict(d_model=128, n_heads=8, n_encoder_layers=3, n_decoder_layers=3, d_ff=512)


@dataclass(frozen=True)
class Variant:
    name: str
    title: str                       # what the picker says
    changes: dict = field(default_factory=dict)   # the ModelConfig fields that differ from the baseline
    look_for: str = ""               # one paragraph: what the Compare view shows about this choice


VARIANTS: dict[str, Variant] = {v.name: v for v in (
    Variant("baseline", "Baseline (the paper's choices)", {},
            "The paper's choices at a small size: sinusoidal positions, post-norm (LayerNorm after each "
            "residual sum), scores divided by √d_k, 8 heads."),
    Variant("learned-positions", "Learned positional embeddings", {"positions": "learned"},
            "The paper found learned positional embeddings 'nearly identical' to sinusoids (Table 3, row E). "
            "The difference is past the longest training sentence: a learned table holds only what training "
            "reached, so its rows beyond are still the random values it started from, while the sinusoids give "
            "every position the same smooth pattern. The maps below show it: bands at every position for the "
            "sinusoids, noise after the dashed line for the learned table. Whether it matters is measured under "
            "the translations: the loss a piece past the longest training sentence, for both (neither model "
            "ever saw a position that far)."),
    Variant("pre-norm", "Pre-norm (LayerNorm before each sub-layer)", {"norm": "pre"},
            "The paper normalises after each residual sum (post-norm); most models since normalise the "
            "sub-layer's input and leave the residual path untouched (pre-norm, with one final LayerNorm per "
            "stack), which trains more stably and needs less warm-up. Compare the loss curves: which one "
            "learns faster in the same steps? Then the maps: do the heads find the same patterns?"),
    Variant("no-scaling", "No ÷√d_k (unscaled dot products)", {"scale_scores": False},
            "Without ÷√d_k the dot products grow with d_k, so the softmax saturates: nearly all of a head's "
            "weight on one key, and tiny gradients for the others (section 3.2.1). Pick Encoder self and look at "
            "the entropy of every head below, layer by layer: are the variant's dots lower (peakier, closer to "
            "one-hot attention)? The loss curve and the scores show what it costs."),
    Variant("one-head", "One head instead of eight (same d_model)", {"n_heads": 1},
            "One head of d_k = d_model instead of eight of d_model / 8: the same number of weights, but each "
            "position can take only one weighted average per layer. 'Multi-head attention allows the model to "
            "jointly attend to information from different representation subspaces' (section 3.2.2); the "
            "paper's Table 3 (row A) measures one head 0.9 BLEU worse than eight. Compare the maps (the single "
            "head has to mix the patterns eight heads keep apart) and the scores."),
)}


def variant_dir(name: str) -> Path:
    if name not in VARIANTS:
        raise ValueError(f"unknown variant {name!r}: choose one of {', '.join(VARIANTS)}")
    return VARIANTS_DIR / name


def available() -> list[str]:
    """The variants bundled (their folder holds weights and scores), the baseline first; none without the baseline
    (every comparison is against it)."""
    found = [n for n in VARIANTS if (VARIANTS_DIR / n / "model.safetensors").is_file()
             and (VARIANTS_DIR / n / "scores.json").is_file()]
    return found if "baseline" in found else []


@functools.lru_cache(maxsize=None)
def load_scores(name: str) -> dict:
    """The folder's scores.json: dev and test BLEU/chrF, steps, tokens, the longest training sentence (read once:
    the bundle does not change while the app runs; never change the dict)."""
    return json.loads((variant_dir(name) / "scores.json").read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=None)
def loss_curve(name: str) -> tuple[tuple[int, ...], tuple[float, ...]]:
    """The training loss the run logged every 100 steps: (steps, losses), read once."""
    steps, losses = [], []
    with open(variant_dir(name) / "log.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            if row.get("train_loss"):
                steps.append(int(row["step"]))
                losses.append(float(row["train_loss"]))
    return tuple(steps), tuple(losses)
