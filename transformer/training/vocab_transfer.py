"""Carry a trained model over to a new vocabulary (a further training cycle with a retrained tokenizer).

Each piece of the new vocabulary starts from what the old model knew of the same text: the old
embedding row when the old vocabulary has the piece, else the mean of the rows of the old pieces the
old tokenizer cuts it into (Gee et al. 2022, "Fast Vocabulary Transfer"). The special ids (pad, unk,
<s>, </s>) are the same in every vocabulary of this project and keep their rows. The input embedding
is tied to the output projection, so this one matrix is all that changes.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from ..config import PAD_ID
from ..io.tokenizer import Tokenizer
from ..pieces import WORD_MARKER

N_SPECIAL = 4    # pad, unk, <s>, </s>


@dataclass
class Transfer:
    embedding: torch.Tensor     # (V_new, d_model)
    copied: int                 # new pieces found in the old vocabulary
    composed: int               # new pieces built from several old pieces (or one renamed)


def old_pieces_for(piece: str, old: Tokenizer) -> list[int]:
    """The old ids that spell `piece`: itself when the old vocabulary has it, else how the old tokenizer
    cuts its text (a piece without "▁" is word-internal: the old tokenizer's leading "▁" is dropped)."""
    own = old.sp.piece_to_id(piece)
    if own != old.unk_id:
        return [own]
    text = piece.replace(WORD_MARKER, " ")
    ids = old.encode(text)
    if not piece.startswith(WORD_MARKER) and ids and old.sp.id_to_piece(ids[0]) == WORD_MARKER:
        ids = ids[1:]
    return ids or [old.unk_id]


@torch.no_grad()
def transfer_embedding(old_embedding: torch.Tensor, old: Tokenizer, new: Tokenizer) -> Transfer:
    """The new vocabulary's embedding matrix, built from the old one (see the module docstring)."""
    rows, copied = [], 0
    for i in range(new.vocab_size):
        if i < N_SPECIAL:
            rows.append(old_embedding[i])
            copied += 1
            continue
        ids = old_pieces_for(new.sp.id_to_piece(i), old)
        copied += len(ids) == 1 and old.sp.id_to_piece(ids[0]) == new.sp.id_to_piece(i)
        rows.append(old_embedding[ids].mean(0))
    emb = torch.stack(rows)                                           # (V_new, d_model)
    emb[PAD_ID] = 0.0
    return Transfer(emb, copied, new.vocab_size - copied)
