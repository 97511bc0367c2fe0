"""Typed results of the "Why this word" views (numpy only, no torch, no gradio), like trace.py.

``Attribution``: how much each source piece's embedding moved each target piece's probability
(model/attribution.py writes it). ``HeadVectors``: the query and key vectors of one head
(model/vectors.py writes it). ``InputParts``: a piece's embedding × √d_model and its positional
encoding, the model's input to layer 1.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

AttributionMethod = Literal["integrated_gradients", "gradient_x_input"]
METHODS: tuple[AttributionMethod, ...] = ("integrated_gradients", "gradient_x_input")
METHOD_TITLES = {"integrated_gradients": "Integrated Gradients", "gradient_x_input": "Gradient × input"}


@dataclass(frozen=True)
class Attribution:
    """Attribution of each target piece's probability to the source pieces' token embeddings."""

    method: AttributionMethod
    scores: np.ndarray          # (targets, sources): Σ over d_model of gradient × (input − baseline)
    f_input: np.ndarray         # (targets,) p(y_t | source, y_<t) at the input
    f_baseline: np.ndarray      # (targets,) the same with every source token embedding replaced by zeros
    steps: int                  # points on the path (1 for gradient × input)
    baseline: str               # in words
    src_pieces: list[str]
    tgt_pieces: list[str]       # y1 ... y_n, the pieces whose probability is explained

    @property
    def gap(self) -> np.ndarray:
        """Completeness: Σ_s attribution − (f(input) − f(baseline)), per target piece."""
        return self.scores.sum(1) - (self.f_input - self.f_baseline)

    @property
    def relative_gap(self) -> float:
        """The largest |gap| as a share of the largest |f(input) − f(baseline)| (0 = complete)."""
        delta = np.abs(self.f_input - self.f_baseline).max(initial=0.0)
        return float(np.abs(self.gap).max(initial=0.0) / delta) if delta > 0 else 0.0

    def to_dict(self) -> dict:
        """For the API: the matrix (target pieces × source pieces) and the completeness check."""
        return {"method": self.method, "baseline": self.baseline, "steps": self.steps,
                "source_pieces": self.src_pieces, "target_pieces": self.tgt_pieces,
                "matrix": np.round(self.scores, 6).tolist(), "f_input": np.round(self.f_input, 6).tolist(),
                "f_baseline": np.round(self.f_baseline, 6).tolist(), "gap": np.round(self.gap, 6).tolist(),
                "relative_gap": round(self.relative_gap, 6)}

    @classmethod
    def from_dict(cls, d: dict) -> "Attribution":
        arr = lambda k: np.asarray(d[k], dtype=np.float64)
        return cls(d["method"], arr("matrix").reshape(len(d["target_pieces"]), len(d["source_pieces"])),
                   arr("f_input"), arr("f_baseline"), int(d["steps"]), d["baseline"], list(d["source_pieces"]),
                   list(d["target_pieces"]))


@dataclass(frozen=True)
class HeadVectors:
    """Query and key vectors of one head in one layer: score[i, j] = q_i · k_j / √d_k."""

    kind: str                   # "encoder", "decoder" or "cross"
    layer: int                  # 1-based
    head: int                   # 1-based
    q: np.ndarray               # (queries, d_k)
    k: np.ndarray               # (keys, d_k)
    queries: list[str]
    keys: list[str]


@dataclass(frozen=True)
class InputParts:
    """The model's input to layer 1 for each piece: token embedding × √d_model + positional encoding."""

    pieces: list[str]
    token: np.ndarray           # (T, d_model) embedding × √d_model
    position: np.ndarray        # (T, d_model) positional encoding
    total: np.ndarray           # (T, d_model) what the model computed (model.embed)
