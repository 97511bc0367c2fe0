"""Back-translation (Sennrich et al. 2016; Edunov et al. 2018): French sentences translated into English by a
French→English model of this project, and trained on as English→French pairs whose English is *tagged* as
synthetic (Caswell et al. 2019, "Tagged Back-Translation"): the model learns to tell machine-made English from
real English, so the synthetic pairs teach it French without teaching it to expect translationese.

The tag is ``BT_TAG`` and a space before the English: the pieces ``▁`` and ``⊽``. ``⊽`` (NOR, U+22BD) is a piece
of the vocabulary that no kept training text holds (``clean.py`` drops the one line of gnome-help that had it),
so the tag says one thing only. The app never adds it.
"""
from __future__ import annotations

from typing import Sequence

import torch

from ..config import BOS_ID, EOS_ID, PAD_ID
from ..model.decoding import cut_source, greedy_decode, pad_batch, source_limit
from .clean import BT_TAG, reason


def tagged(english: str) -> str:
    return f"{BT_TAG} {english}"


@torch.no_grad()
def backtranslate(model, tok, french: Sequence[str], batch_tokens: int = 60_000,
                  max_sentences: int = 2048) -> list[tuple[str, str]]:
    """(tagged English, French) pairs for the French sentences a fr→en model translates, in input order; pairs
    whose sides disagree (empty, lengths, numbers: ``clean.reason``) are left out."""
    model.eval()
    limit = source_limit(model)
    encoded = [cut_source(ids, EOS_ID, limit)[0] for ids in tok.encode(list(french))]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    english = [""] * len(encoded)
    i = 0
    while i < len(order):
        j = i + 1
        while j < len(order) and (j - i + 1) * len(encoded[order[j]]) <= batch_tokens and j - i < max_sentences:
            j += 1
        idx = order[i:j]
        src = pad_batch([encoded[k] for k in idx], PAD_ID, model.device)
        with torch.autocast(model.device.type, dtype=torch.bfloat16, enabled=model.device.type == "cuda"):
            outs = greedy_decode(model, src)
        for k, ids in zip(idx, outs):
            english[k] = tok.decode([t for t in ids if t not in (BOS_ID, EOS_ID, PAD_ID)])
        i = j
    return [(tagged(en), fr) for en, fr in zip(english, french) if reason(en, fr, None, None) is None]
