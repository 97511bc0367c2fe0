"""Training replay: how attention learned (torch-free; numpy and JSON only).

During training, at log-spaced steps, the trainer translates a few fixed example sentences
and records, for each: the greedy translation, the loss of a reference translation, and
every attention map (encoder self, decoder masked self, cross; all layers and heads). This
module defines that record and its file (``replay.npz`` in the checkpoint folder: the maps
as float16 arrays, everything else as one JSON string), and reads it back for the app.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from .trace import KINDS  # noqa: F401  (the attention kinds a replay records: the trace's own)

# The fixed examples: sentences and reference translations written for this project.
EXAMPLES: list[tuple[str, str]] = [
    ("The cat is sleeping on the sofa.", "Le chat dort sur le canapé."),
    ("Where is the nearest train station?", "Où est la gare la plus proche ?"),
    ("The model learns which words to pay attention to.", "Le modèle apprend à quels mots prêter attention."),
    ("Professor Smith will give the next lecture.", "Le professeur Smith donnera le prochain cours."),
    ("I bought twelve apples on May 12.", "J'ai acheté douze pommes le 12 mai."),
    ("She did not go to school yesterday because she was sick.",
     "Elle n'est pas allée à l'école hier parce qu'elle était malade."),
    ("Each layer has eight attention heads.", "Chaque couche a huit têtes d'attention."),
    ("We are going to the beach tomorrow.", "Nous allons à la plage demain."),
]


@dataclass
class ReplayRecord:
    """One example at one training step."""

    translation: str
    src_pieces: list[str]             # with the final </s>
    tgt_in_pieces: list[str]          # decoder inputs: <s> y1 ... y_{n-1}
    tgt_out_pieces: list[str]         # decoder outputs: y1 ... y_n
    reference_loss: float             # mean cross-entropy (nats/piece) of the reference translation
    maps: dict[str, np.ndarray] = field(default_factory=dict, repr=False)  # kind -> (L, H, Tq, Tk)


@dataclass
class ReplayPoint:
    step: int
    tokens: int
    train_loss: float                 # label-smoothed training loss, mean over the last steps
    records: list[ReplayRecord] = field(default_factory=list)


@dataclass
class Replay:
    examples: list[tuple[str, str]]
    points: list[ReplayPoint] = field(default_factory=list)

    def steps(self) -> list[int]:
        return [p.step for p in self.points]

    def thin(self, n: int = 12) -> "Replay":
        """At most n points, log-spaced over the recorded steps (the first and last always kept)."""
        if len(self.points) <= n:
            return self
        logs = np.log1p(np.array(self.steps(), dtype=float))
        keep = {0, 1, len(logs) - 1}                    # the untrained model, the first record, the last
        for t in np.linspace(logs[1], logs[-1], n - 1)[1:-1]:
            free = [i for i in range(len(logs)) if i not in keep]
            keep.add(min(free, key=lambda i: abs(logs[i] - t)))
        return Replay(self.examples, [self.points[i] for i in sorted(keep)])


def save_replay(replay: Replay, path: str | Path) -> None:
    arrays = {}
    meta = {"examples": replay.examples, "points": []}
    for i, point in enumerate(replay.points):
        recs = []
        for j, rec in enumerate(point.records):
            for kind, arr in rec.maps.items():
                arrays[f"p{i}_e{j}_{kind}"] = np.asarray(arr, dtype=np.float16)
            d = asdict(rec)
            d.pop("maps")
            recs.append(d)
        meta["points"].append({"step": point.step, "tokens": point.tokens, "train_loss": point.train_loss,
                               "records": recs})
    arrays["meta"] = np.array(json.dumps(meta, ensure_ascii=False))
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(tmp, **arrays)
    tmp.replace(path)


def load_replay(path: str | Path) -> Replay:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        points = []
        for i, p in enumerate(meta["points"]):
            records = []
            for j, r in enumerate(p["records"]):
                maps = {k: z[f"p{i}_e{j}_{k}"].astype(np.float32) for k in KINDS if f"p{i}_e{j}_{k}" in z}
                records.append(ReplayRecord(maps=maps, **r))
            points.append(ReplayPoint(p["step"], p["tokens"], p["train_loss"], records))
    return Replay([tuple(e) for e in meta["examples"]], points)


def replay_steps(first: int = 20, factor: float = 1.6, until: int = 10_000_000) -> list[int]:
    """The steps at which training records the examples: first, first*factor, ... (log-spaced)."""
    out, s = [], float(first)
    while s <= until:
        if not out or int(round(s)) != out[-1]:
            out.append(int(round(s)))
        s *= factor
    return out
