"""Reading parallel corpora and making length-bucketed batches by token count.

A corpus is named either by a TSV file (``english<TAB>french`` per line, optionally gzip'd)
or by a prefix of two line-aligned files (``PREFIX.en[.gz]`` and ``PREFIX.fr[.gz]``).
A suffix ``@W`` weights a corpus in training: each epoch holds every pair ``floor(W)`` times plus a
fresh random share ``W - floor(W)`` of them (``@2`` repeats a corpus, ``@0.3`` draws 30 % of it anew
each epoch). The weights are kept in the run's ``run_config.json``.
"""
from __future__ import annotations

import gzip
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import torch

from ..config import BOS_ID, EOS_ID, PAD_ID

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"


def _open(path: Path):
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else open(path, encoding="utf-8")


def _find(prefix: str, lang: str) -> Path:
    for cand in (Path(f"{prefix}.{lang}"), Path(f"{prefix}.{lang}.gz")):
        if cand.is_file():
            return cand
    raise FileNotFoundError(f"neither {prefix}.{lang} nor {prefix}.{lang}.gz exists")


def read_corpus(spec: str, src_lang: str = "en", tgt_lang: str = "fr") -> list[tuple[str, str]]:
    """Pairs of (source, target) from a TSV file or a PREFIX of two aligned files."""
    path = Path(spec)
    if path.is_file():
        pairs = []
        with _open(path) as f:
            for n, line in enumerate(f, 1):
                parts = line.rstrip("\n").split("\t")
                if len(parts) < 2:
                    raise ValueError(f"{path}:{n}: expected 'source<TAB>target'")
                pairs.append((parts[0].strip(), parts[1].strip()))
        return pairs
    src, tgt = _find(spec, src_lang), _find(spec, tgt_lang)
    with _open(src) as fs, _open(tgt) as ft:
        s_lines, t_lines = fs.read().splitlines(), ft.read().splitlines()
    if len(s_lines) != len(t_lines):
        raise ValueError(f"{src} has {len(s_lines)} lines but {tgt} has {len(t_lines)}")
    return [(a.strip(), b.strip()) for a, b in zip(s_lines, t_lines)]


def parse_spec(spec: str) -> tuple[str, float]:
    """``PATH@W`` -> (PATH, W); a plain PATH has weight 1."""
    if "@" in spec:
        name, weight = spec.rsplit("@", 1)
        try:
            w = float(weight)
        except ValueError:
            return spec, 1.0
        if not (w > 0 and np.isfinite(w)):
            raise ValueError(f"{spec}: the weight after @ must be a positive number")
        return name, w
    return spec, 1.0


def epoch_counts(weights, rng: np.random.Generator) -> np.ndarray:
    """How many times each pair is in one epoch: floor(weight), plus once more with probability weight - floor
    (no draw when every weight is whole: the same batches as unweighted data)."""
    w = np.asarray(weights, dtype=np.float64)
    whole = np.floor(w).astype(np.int64)
    share = w - whole
    return whole + (rng.random(len(w)) < share) if share.any() else whole


class ParallelData:
    """Tokenized pairs held as id arrays: src = x + [EOS]; tgt = [BOS] + y + [EOS]."""

    def __init__(self, src_ids: Sequence[Sequence[int]], tgt_ids: Sequence[Sequence[int]], max_len: int = 200,
                 weights: Optional[Sequence[float]] = None):
        keep = [i for i in range(len(src_ids))
                if 0 < len(src_ids[i]) < max_len and 0 < len(tgt_ids[i]) < max_len - 1]
        self.src = [list(src_ids[i]) + [EOS_ID] for i in keep]
        self.tgt = [[BOS_ID] + list(tgt_ids[i]) + [EOS_ID] for i in keep]
        self.src_lens = np.array([len(s) for s in self.src], dtype=np.int64)
        self.tgt_lens = np.array([len(t) for t in self.tgt], dtype=np.int64)
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)[keep]
        self.dropped = len(src_ids) - len(keep)

    def __len__(self) -> int:
        return len(self.src)

    def num_tokens(self) -> int:
        """Source + target predictions of one epoch (weights applied: their expected count)."""
        per_pair = self.src_lens + self.tgt_lens - 1
        return int(per_pair.sum() if self.weights is None else (per_pair * self.weights).sum())

    def epoch_pairs(self, rng: np.random.Generator) -> np.ndarray:
        """The pairs of one epoch (``epoch_counts`` of each)."""
        if self.weights is None:
            return np.arange(len(self))
        return np.repeat(np.arange(len(self)), epoch_counts(self.weights, rng))

    def batches(self, max_tokens: int, seed: int, shuffle: bool = True) -> list[np.ndarray]:
        """Index arrays of similar-length pairs, each with at most max_tokens padded tokens per side.
        Shuffled epochs follow the corpus weights; unshuffled ones (evaluation) hold every pair once."""
        rng = np.random.default_rng(seed)
        pairs = self.epoch_pairs(rng) if shuffle else np.arange(len(self))
        longest = np.maximum(self.src_lens, self.tgt_lens)[pairs]
        noise = rng.random(len(pairs)) if shuffle else np.arange(len(pairs)) / max(1, len(pairs))
        order = pairs[np.lexsort((noise, longest))]
        longest = np.maximum(self.src_lens, self.tgt_lens)
        batches, start, cur_max = [], 0, 0
        for pos, idx in enumerate(order):
            cur_max = max(cur_max, longest[idx])
            if (pos - start + 1) * cur_max > max_tokens and pos > start:
                batches.append(order[start:pos])
                start, cur_max = pos, longest[idx]
        batches.append(order[start:])
        if shuffle:
            rng.shuffle(batches)
        return batches

    def collate(self, idx: np.ndarray, device=None) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(src, decoder input, decoder target), right-padded with PAD."""
        S = int(self.src_lens[idx].max())
        T = int(self.tgt_lens[idx].max()) - 1
        src = np.full((len(idx), S), PAD_ID, dtype=np.int64)
        tgt = np.full((len(idx), T + 1), PAD_ID, dtype=np.int64)
        for r, i in enumerate(idx):
            s, t = self.src[i], self.tgt[i]
            src[r, : len(s)] = s
            tgt[r, : len(t)] = t
        src, tgt_in, tgt_out = (torch.from_numpy(src), torch.from_numpy(tgt[:, :-1].copy()),
                                torch.from_numpy(tgt[:, 1:].copy()))
        tgt_in[tgt_in == EOS_ID] = PAD_ID        # EOS is never fed to the decoder
        if device is not None:
            src, tgt_in, tgt_out = src.to(device), tgt_in.to(device), tgt_out.to(device)
        return src, tgt_in, tgt_out
