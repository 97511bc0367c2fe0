"""The special pieces' names and pieces back to text: what every layer that shows pieces needs, without
SentencePiece (the tokenizer itself is ``io/tokenizer.py``; the special ids are in ``config.py``)."""
from __future__ import annotations

from typing import Iterable

PAD_PIECE, UNK_PIECE, BOS_PIECE, EOS_PIECE = "<pad>", "<unk>", "<s>", "</s>"
WORD_MARKER = "▁"   # SentencePiece's "a word starts here", at the start of a piece


def detokenize(pieces: Iterable[str]) -> str:
    """Pieces to text, without <pad>, <s> and </s>: what a prefix of a translation reads as."""
    return ("".join(p for p in pieces if p not in (PAD_PIECE, BOS_PIECE, EOS_PIECE)).replace(WORD_MARKER, " ")
            .strip())
