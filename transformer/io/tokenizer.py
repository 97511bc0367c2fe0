"""A joint English+French SentencePiece vocabulary, wrapped for ids, pieces and text.

Special ids are fixed for every model this project trains (config.py); their pieces are named in
pieces.py: 0 = <pad>   1 = <unk>   2 = <s> (BOS, starts the decoder input)   3 = </s> (EOS).
SentencePiece marks the start of a word with "▁"; ``pieces.detokenize`` turns pieces back into text.
"""
from __future__ import annotations

import os
import random
import tempfile
from pathlib import Path
from typing import Iterable, Sequence

import sentencepiece as spm

from ..config import BOS_ID, EOS_ID, PAD_ID, UNK_ID
# (named here too)
from ..pieces import BOS_PIECE, EOS_PIECE, PAD_PIECE, UNK_PIECE, WORD_MARKER, detokenize  # noqa: F401


class Tokenizer:
    def __init__(self, model_path: str | Path) -> None:
        self.path = Path(model_path)
        self.sp = spm.SentencePieceProcessor(model_file=str(self.path))
        ids = (self.sp.pad_id(), self.sp.unk_id(), self.sp.bos_id(), self.sp.eos_id())
        if ids != (PAD_ID, UNK_ID, BOS_ID, EOS_ID):
            raise ValueError(f"{self.path}: special ids are {ids}, expected (pad, unk, bos, eos) = (0, 1, 2, "
                             f"3)")
        self.pad_id, self.unk_id, self.bos_id, self.eos_id = PAD_ID, UNK_ID, BOS_ID, EOS_ID

    @property
    def vocab_size(self) -> int:
        return self.sp.get_piece_size()

    def encode(self, text: str | Sequence[str]) -> list[int] | list[list[int]]:
        """Text to ids, without BOS/EOS. A list of texts is encoded in one (threaded) call."""
        return self.sp.encode(text if isinstance(text, str) else list(text), out_type=int)

    def pieces(self, ids: Iterable[int]) -> list[str]:
        return [self.sp.id_to_piece(int(i)) for i in ids]

    def piece_id(self, piece: str) -> int | None:
        """The id of a piece as typed ("chat" is also tried as "▁chat"); None when it is not in the
        vocabulary."""
        for p in (piece, piece.replace(" ", WORD_MARKER), WORD_MARKER + piece.strip()):
            i = self.sp.piece_to_id(p)
            if i != self.unk_id or p == UNK_PIECE:
                return i
        return None

    def decode(self, ids: Iterable[int]) -> str:
        """Ids to detokenized text; special ids (pad, bos, eos) are dropped."""
        specials = {self.pad_id, self.bos_id, self.eos_id}
        return self.sp.decode([int(i) for i in ids if int(i) not in specials])


def train_tokenizer(
    sentences: Iterable[str],
    model_prefix: str | Path,
    vocab_size: int = 8000,
    model_type: str = "unigram",
    max_sentences: int = 2_000_000,
    seed: int = 1,
) -> Tokenizer:
    """Train a SentencePiece model on the given sentences (both languages mixed)."""
    sentences = [s.strip() for s in sentences if s and s.strip()]
    random.Random(seed).shuffle(sentences)
    sentences = sentences[:max_sentences]
    prefix = Path(model_prefix)
    prefix.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False, encoding="utf-8") as f:
        f.write("\n".join(sentences) + "\n")
        corpus = f.name
    try:
        spm.SentencePieceTrainer.train(
            input=corpus,
            model_prefix=str(prefix),
            vocab_size=vocab_size,
            model_type=model_type,
            character_coverage=1.0,
            pad_id=PAD_ID, unk_id=UNK_ID, bos_id=BOS_ID, eos_id=EOS_ID,
            pad_piece=PAD_PIECE, unk_piece=UNK_PIECE, bos_piece=BOS_PIECE, eos_piece=EOS_PIECE,
            input_sentence_size=max_sentences,
            shuffle_input_sentence=True,
            num_threads=os.cpu_count() or 1,
            minloglevel=2,
        )
    finally:
        os.unlink(corpus)
    return Tokenizer(f"{prefix}.model")
