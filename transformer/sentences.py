"""Splitting English text into sentences (pysbd, rule-based; no model download). Torch-free.

The model learned mostly from single sentences (and from 2-3 sentence concatenations): the app
offers each sentence of a paragraph on its own, and the command line translates a multi-sentence
line sentence by sentence, so a paragraph never makes the model repeat itself to the length limit.
"""
from __future__ import annotations

from functools import lru_cache

import pysbd


@lru_cache(maxsize=1)
def _segmenter() -> pysbd.Segmenter:
    return pysbd.Segmenter(language="en", clean=False)


def split_sentences(text: str) -> list[str]:
    """The sentences of `text`, stripped; one element for a single sentence ("Dr. Smith came." is one)."""
    parts = [s.strip() for s in _segmenter().segment(text)] if text.strip() else []
    return [s for s in parts if s]
