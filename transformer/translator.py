"""High-level use of a checkpoint: translate many sentences, or trace one for the app."""
from __future__ import annotations

import time
import unicodedata
from pathlib import Path
from typing import Optional, Sequence

import torch

from .io.checkpoint import load_checkpoint, resolve_device
from .model.decoding import TranslationTrace, greedy_decode, pad_batch, trace_greedy

MAX_INPUT_CHARS = 1000      # longer input is cut here before tokenizing (and the user is told)
TRACE_DEADLINE_S = 10.0     # one traced translation may hold the model this long at most


def clean_text(text: str) -> str:
    """Drop control characters and lone surrogates, collapse whitespace."""
    text = text.encode("utf-8", "replace").decode("utf-8")  # lone surrogates -> '?'
    text = "".join(" " if unicodedata.category(c) in ("Cc", "Zl", "Zp") else c
                   for c in text if unicodedata.category(c) not in ("Cf", "Cs", "Co", "Cn") or c == "\u200d")
    return " ".join(text.split())


@torch.inference_mode()
def translate_batch(model, tokenizer, texts: Sequence[str], batch_tokens: int = 6000, max_src_tokens: int = 128,
                    use_cache: bool = True) -> list[str]:
    """Greedy translation of many texts: length-sorted batches of at most `batch_tokens` padded
    source tokens (and 256 sentences), returned in input order. Used by training and evaluation.
    The caller puts the model in eval mode (a shared model is never switched here)."""
    device = next(model.parameters()).device
    eos, pad = model.cfg.eos_id, model.cfg.pad_id
    encoded = [ids[: max_src_tokens - 1] + [eos] for ids in tokenizer.encode(list(texts))]
    order = sorted(range(len(encoded)), key=lambda i: len(encoded[i]))
    out: list[str] = [""] * len(encoded)
    i = 0
    while i < len(order):
        j = i + 1                      # lengths ascend, so the last one added is the longest
        while j < len(order) and (j - i + 1) * len(encoded[order[j]]) <= batch_tokens and j - i < 256:
            j += 1
        idx = order[i:j]
        src = pad_batch([encoded[k] for k in idx], pad, device)
        for k, ids in zip(idx, greedy_decode(model, src, use_cache=use_cache)):
            out[k] = tokenizer.decode(ids)
        i = j
    return out


class Translator:
    """A loaded model and tokenizer on one device. Read-only after loading: safe to share
    between threads, since every call keeps its state in local variables."""

    def __init__(self, checkpoint: Optional[str | Path] = None, device: str = "auto") -> None:
        self.device = resolve_device(device)
        self.model, self.tokenizer = load_checkpoint(checkpoint, self.device)
        self.cfg = self.model.cfg
        # Longest source in pieces (EOS included), leaving room for positions on the target side.
        self.max_src_tokens = min(self.cfg.max_len, 128)

    def encode_source(self, text: str) -> tuple[list[int], bool]:
        """Source ids ending in EOS, cut to the model's limit; and whether they were cut."""
        ids = self.tokenizer.encode(text)
        return ids[: self.max_src_tokens - 1] + [self.cfg.eos_id], len(ids) > self.max_src_tokens - 1

    def translate(self, sentences: Sequence[str], batch_tokens: int = 6000, use_cache: bool = True) -> list[str]:
        """Batched greedy translation, sorted by length for speed, returned in input order."""
        texts = [clean_text(s) for s in sentences]
        out = translate_batch(self.model, self.tokenizer, texts, batch_tokens, self.max_src_tokens, use_cache)
        return [o if t else "" for o, t in zip(out, texts)]

    def trace(self, text: str, top_k: int = 10, max_new_tokens: Optional[int] = None,
              deadline_s: float = TRACE_DEADLINE_S) -> TranslationTrace:
        """Translate one sentence and record every step and attention map.

        Raises ValueError with a message for the user when there is nothing to translate."""
        t0 = time.perf_counter()
        notes = []
        if len(text) > MAX_INPUT_CHARS:
            text = text[:MAX_INPUT_CHARS]
            notes.append(f"The input was cut to its first {MAX_INPUT_CHARS} characters.")
        text = clean_text(text)
        if not text:
            raise ValueError("There is nothing to translate: type an English sentence.")
        src_ids, truncated = self.encode_source(text)
        if truncated:
            notes.append(f"The input is longer than the model's limit of {self.max_src_tokens - 1} pieces; "
                         f"only the first {self.max_src_tokens - 1} were translated.")
        known = [p for p in self.tokenizer.pieces(src_ids[:-1]) if p not in ("▁", "<unk>")]
        if not known and self.tokenizer.unk_id in src_ids:
            notes.append("None of these characters are in the model's vocabulary (it knows English and French "
                         "text); they all became <unk>.")
        raw = trace_greedy(self.model, src_ids, self.tokenizer.pieces, max_new_tokens=max_new_tokens, top_k=top_k,
                           deadline_s=deadline_s)
        if raw["timed_out"]:
            notes.append(f"Decoding stopped at the time limit of {deadline_s:.0f} s.")
        elif not raw["finished"]:
            notes.append("Decoding stopped at the output length limit before the end-of-sentence token. The model "
                         "learned from single sentences: a long paragraph can make it repeat itself; try one "
                         "sentence at a time.")
        tgt_ids = raw.pop("tgt_ids")
        out_pieces = self.tokenizer.pieces(tgt_ids)
        trace = TranslationTrace(
            source_text=text,
            translation=self.tokenizer.decode(tgt_ids),
            src_ids=src_ids,
            src_pieces=self.tokenizer.pieces(src_ids),
            tgt_in_pieces=["<s>"] + out_pieces[:-1],
            tgt_out_pieces=out_pieces,
            tgt_ids=tgt_ids,
            truncated_source=truncated,
            device=str(self.device),
            notes=notes,
            **raw,
        )
        trace.seconds = time.perf_counter() - t0
        return trace
