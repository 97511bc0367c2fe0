"""Typed results of the "Why this word" views (numpy only, no torch, no gradio), like trace.py.

``Attribution``: how much each source piece's embedding moved each target piece's probability
(probes/attribution.py writes it). ``HeadVectors``: the query and key vectors of one head
(probes/vectors.py writes it). ``InputParts``: a piece's embedding × √d_model and its positional
encoding, the model's input to layer 1. ``Lens``: what each decoder layer would predict (probes/lens.py).
``LayerParts``: the residual stream, LayerNorm and feed-forward inside one layer (probes/inside_layer.py).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, Optional

import numpy as np

AttributionMethod = Literal["integrated_gradients", "gradient_x_input"]
METHODS: tuple[AttributionMethod, ...] = ("integrated_gradients", "gradient_x_input")
# a completeness gap this small counts as met whatever the change (float32 rounding: ~1e-6)
GAP_FLOOR = 1e-4
METHOD_TITLES = {"integrated_gradients": "Integrated Gradients", "gradient_x_input": "Gradient × input"}


@dataclass(frozen=True)
class Attribution:
    """Attribution of each target piece's probability to the source pieces' token embeddings."""

    method: AttributionMethod
    scores: np.ndarray          # (targets, sources): Σ over d_model of gradient × (input − baseline)
    f_input: np.ndarray         # (targets,) p(y_t | source, y_<t) at the input
    f_baseline: np.ndarray      # (targets,) the same with every source token embedding replaced by zeros
    steps: int                  # points on the path: the most any target took (1 for gradient × input)
    baseline: str               # in words
    src_pieces: tuple[str, ...]
    tgt_pieces: tuple[str, ...]  # y1 ... y_n, the pieces whose probability is explained (contrastive: y_step)
    target_steps: tuple[int, ...] = ()   # points each target took (IG refines each until its gap is small)
    tolerance: float = 0.0      # the completeness IG aimed at, as a share of |f(input) − f(baseline)|
    step: Optional[int] = None  # contrastive: the step (1-based) whose choice is explained ...
    rival: Optional[str] = None  # ... against this piece: f = log p(chosen) − log p(rival)
    final: bool = True           # False: a first estimate, shown while Integrated Gradients refines it

    def __post_init__(self) -> None:
        if self.scores.shape != (len(self.tgt_pieces), len(self.src_pieces)):
            raise ValueError(f"attribution scores {self.scores.shape} do not match {len(self.tgt_pieces)} "
                             f"targets × {len(self.src_pieces)} source pieces")
        for name in ("src_pieces", "tgt_pieces", "target_steps"):
            object.__setattr__(self, name, tuple(getattr(self, name)))
        # shared by everyone asking for the sentence
        for arr in (self.scores, self.f_input, self.f_baseline):
            arr.setflags(write=False)

    @property
    def contrastive(self) -> bool:
        return self.rival is not None

    @property
    def quantity(self) -> str:
        """What f is, in words."""
        if self.contrastive:
            return f"log p({self.tgt_pieces[0]}) − log p({self.rival}) at step {self.step}"
        return "p(each target piece)"

    @property
    def gap(self) -> np.ndarray:
        """Completeness: Σ_s attribution − (f(input) − f(baseline)), per target piece."""
        return self.scores.sum(1) - (self.f_input - self.f_baseline)

    @property
    def relative_gap(self) -> float:
        """The largest |gap| as a share of the largest |f(input) − f(baseline)| (0 = complete)."""
        delta = np.abs(self.f_input - self.f_baseline).max(initial=0.0)
        return float(np.abs(self.gap).max(initial=0.0) / delta) if delta > 0 else 0.0

    @property
    def target_gaps(self) -> np.ndarray:
        """Each target's |gap| as a share of its own |f(input) − f(baseline)| (inf where that change is 0)."""
        delta = np.abs(self.f_input - self.f_baseline)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(delta > 0, np.abs(self.gap) / delta, np.where(np.abs(self.gap) > 0, np.inf, 0.0))

    @property
    def converged(self) -> bool:
        """Integrated Gradients met its tolerance for every target (a gap of GAP_FLOOR or less always
        counts)."""
        return self.method == "integrated_gradients" and bool(
            np.all((np.abs(self.gap) <= GAP_FLOOR) | (self.target_gaps <= self.tolerance)))

    @property
    def unsettled(self) -> tuple[int, ...]:
        """Targets (0-based) whose strongest source piece is not settled: the two largest |attributions|
        differ by less than the target's remaining completeness gap, the size of the error the
        path's points leave."""
        out = []
        for t, row in enumerate(np.abs(self.scores)):
            if row.size > 1:
                a, b = np.sort(row)[-2:][::-1]
                if a - b < abs(self.gap[t]):
                    out.append(t)
        return tuple(out)

    def to_dict(self) -> dict:
        """For the API: the matrix (target pieces × source pieces) and the completeness check."""
        return {"method": self.method, "baseline": self.baseline, "quantity": self.quantity,
                "steps": self.steps, "target_steps": list(self.target_steps), "tolerance": self.tolerance,
                "converged": self.converged, "step": self.step, "rival": self.rival,
                "source_pieces": list(self.src_pieces), "target_pieces": list(self.tgt_pieces),
                "matrix": np.round(self.scores, 6).tolist(), "f_input": np.round(self.f_input, 6).tolist(),
                "f_baseline": np.round(self.f_baseline, 6).tolist(), "gap": np.round(self.gap, 6).tolist(),
                "relative_gap": round(self.relative_gap, 6), "final": self.final,
                "unsettled_targets": [self.step if self.contrastive else t + 1 for t in self.unsettled]}

    @classmethod
    def from_dict(cls, d: dict) -> "Attribution":
        arr = lambda k: np.asarray(d[k], dtype=np.float64)
        return cls(d["method"], arr("matrix").reshape(len(d["target_pieces"]), len(d["source_pieces"])),
                   arr("f_input"), arr("f_baseline"), int(d["steps"]), d["baseline"], d["source_pieces"],
                   d["target_pieces"], tuple(d.get("target_steps", ())), float(d.get("tolerance", 0.0)),
                   d.get("step"), d.get("rival"))


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


@dataclass(frozen=True)
class Lens:
    """The logit lens (probes/lens.py): what each decoder layer would predict at each step if it were the
    last."""

    top_ids: np.ndarray          # (layers, steps, k) the k most probable next pieces at that layer
    top_pieces: tuple            # [layer][step] -> k pieces
    top_probs: np.ndarray        # (layers, steps, k)
    chosen_rank: np.ndarray      # (layers, steps) rank of the piece the model chose (1 = top)
    chosen_prob: np.ndarray      # (layers, steps) its probability at that layer
    chosen: tuple[str, ...]      # the pieces the model chose, y1 ... y_n

    def __post_init__(self) -> None:
        L, T = self.chosen_rank.shape
        if self.top_probs.shape[:2] != (L, T) or self.chosen_prob.shape != (L, T) or len(self.chosen) != T:
            raise ValueError(f"lens arrays do not match {L} layers × {T} steps")
        for arr in (self.top_ids, self.top_probs, self.chosen_rank, self.chosen_prob):
            arr.setflags(write=False)

    @property
    def layers(self) -> int:
        return self.chosen_rank.shape[0]

    def decided_at(self, step: int) -> int:
        """The first layer (1-based) from which the chosen piece stays on top at this step (0-based step)."""
        top = self.chosen_rank[:, step] == 1
        for layer in range(self.layers):
            if top[layer:].all():
                return layer + 1
        return self.layers


@dataclass(frozen=True)
class SubLayerStep:
    """One sub-layer of a post-norm layer at one position: x → LayerNorm(x + Sublayer(x))."""

    name: str                   # "self-attention", "masked self-attention", "cross-attention", "feed-forward"
    norm_in: float              # |x|, the residual stream coming in
    norm_added: float           # |Sublayer(x)|, what the sub-layer adds
    norm_sum: float             # |x + Sublayer(x)|, before LayerNorm
    mean_before: float          # the sum's mean and spread (standard deviation) over d_model ...
    std_before: float
    norm_out: float             # ... and after LayerNorm (mean ≈ β's mean, spread ≈ γ's scale)
    mean_after: float
    std_after: float


@dataclass(frozen=True)
class LayerParts:
    """Inside one encoder or decoder layer at one position (probes/inside_layer.py)."""

    stack: str                  # "encoder" or "decoder"
    layer: int                  # 1-based
    position: int               # 0-based
    piece: str
    steps: tuple[SubLayerStep, ...]
    hidden: np.ndarray          # (d_ff,) the feed-forward's hidden units after ReLU
    top_units: tuple[int, ...]  # the strongest units, strongest first
    top_values: np.ndarray
    output: np.ndarray          # (d_model,) the layer's output at this position

    @property
    def firing(self) -> int:
        """Hidden units that fire (ReLU output above 0)."""
        return int((self.hidden > 0).sum())
