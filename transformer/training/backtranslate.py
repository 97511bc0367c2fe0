"""Back-translation (Sennrich et al. 2016; Edunov et al. 2018): French sentences translated into English by a
French→English model of this project, and trained on as English→French pairs whose English is *tagged* as
synthetic (Caswell et al. 2019, "Tagged Back-Translation"): the model learns to tell machine-made English from
real English, so the synthetic pairs teach it French without teaching it to expect translationese.

The tag is ``BT_TAG`` and a space before the English: the pieces ``▁`` and ``⊽``. ``⊽`` (NOR, U+22BD) is a
piece of the vocabulary that no kept training text holds (``clean.py`` drops the one line of gnome-help that
had it), so the tag says one thing only. The app never adds it.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..model.decoding import translate_batch
from .clean import BT_TAG, reason


def tagged(english: str) -> str:
    return f"{BT_TAG} {english}"


@torch.no_grad()
def backtranslate(model, tok, french: Sequence[str], batch_tokens: int = 60_000,
                  max_sentences: int = 2048) -> list[tuple[str, str]]:
    """(tagged English, French) pairs for the French sentences a fr→en model translates, in input order; pairs
    whose sides disagree (empty, lengths, numbers: ``clean.reason``) are left out. Batched greedy decoding
    (``translate_batch``), in bf16 on a GPU."""
    model.eval()
    with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=model.device.type == "cuda"):
        english = translate_batch(model, tok, list(french), batch_tokens=batch_tokens,
                                  max_sentences=max_sentences)
    return [(tagged(en), fr) for en, fr in zip(english, french) if reason(en, fr, None, None) is None]
