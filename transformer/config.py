"""One dataclass holds every size of the model; it is saved as JSON beside the weights."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, fields
from pathlib import Path

# Special token ids, fixed for every tokenizer this project trains (see tokenizer.py).
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


@dataclass
class ModelConfig:
    vocab_size: int = 8000
    d_model: int = 256          # model width (the paper's d_model)
    n_heads: int = 8            # attention heads per layer (h)
    n_encoder_layers: int = 3   # N on the encoder side
    n_decoder_layers: int = 3   # N on the decoder side
    d_ff: int = 1024            # inner width of the position-wise feed-forward network
    dropout: float = 0.1        # P_drop, on sub-layer outputs, embeddings and attention
    max_len: int = 256          # longest sequence the positional encoding covers
    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")

    @property
    def d_head(self) -> int:
        return self.d_model // self.n_heads

    def to_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(asdict(self), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def from_dict(cls, data: dict) -> "ModelConfig":
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown config keys: {sorted(unknown)}")
        return cls(**data)

    @classmethod
    def from_json(cls, path: str | Path) -> "ModelConfig":
        return cls.from_dict(json.loads(Path(path).read_text(encoding="utf-8")))
