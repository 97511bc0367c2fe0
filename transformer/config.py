"""Every size, special id, limit and default of the project, in one place (no torch, no gradio).

The model's sizes live in ``ModelConfig`` (saved as ``config.json`` beside the weights); the
limits that keep one request bounded, and the defaults of the views, are the constants below.
The server's settings are elsewhere: the web app's in ``ui/settings.py``, the shared caches' and the
batcher's sizes beside them (``trace_cache.py``, ``translator.py``); colours and type sizes in
``viz/style.py``.
"""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path

# ------------------------------------------------------------------ special token ids
# Fixed for every tokenizer this project trains (their pieces are named in io/tokenizer.py).
PAD_ID, UNK_ID, BOS_ID, EOS_ID = 0, 1, 2, 3


def _size(default, help: str, choices=None):
    """A ModelConfig field with its help text and allowed values (the training CLI's --help shows them)."""
    return field(default=default, metadata={"help": help, "choices": choices})


@dataclass
class ModelConfig:
    vocab_size: int = _size(8000, "SentencePiece pieces, shared by both languages (the tokenizer sets it)")
    d_model: int = _size(256, "model width (the paper's d_model)")
    n_heads: int = _size(8, "attention heads per layer (h); d_k = d_v = d_model / h")
    n_encoder_layers: int = _size(3, "N on the encoder side")
    n_decoder_layers: int = _size(3, "N on the decoder side")
    d_ff: int = _size(1024, "inner width of the position-wise feed-forward network")
    dropout: float = _size(0.1, "P_drop, on sub-layer outputs, embeddings and attention weights")
    max_len: int = _size(256, "longest sequence the positional encoding covers")
    # The design choices the Compare view's toy runs change one at a time (transformer/training/toy.py):
    positions: str = _size("sinusoidal", "positional encoding: 'sinusoidal' (the paper's, fixed), 'learned' "
                                         "(one trained vector per position) or 'none' (no position signal: "
                                         "the toy tasks' lesson)", choices=("sinusoidal", "learned", "none"))
    norm: str = _size("post",
                      "where LayerNorm sits: 'post' (the paper's: LayerNorm(x + Sublayer(x))) or 'pre' "
                              "(x + Sublayer(LayerNorm(x)), a final LayerNorm after each stack)",
                              choices=("post", "pre"))
    scale_scores: bool = _size(True, "divide the attention scores by √d_k (the paper's 'scaled' dot product)")
    pad_id: int = PAD_ID
    unk_id: int = UNK_ID
    bos_id: int = BOS_ID
    eos_id: int = EOS_ID

    def __post_init__(self) -> None:
        if self.d_model % self.n_heads:
            raise ValueError(f"d_model={self.d_model} is not divisible by n_heads={self.n_heads}")
        for f in fields(self):
            allowed = f.metadata.get("choices")
            if allowed and getattr(self, f.name) not in allowed:
                raise ValueError(f"{f.name}={getattr(self, f.name)!r}: choose one of {', '.join(allowed)}")

    @property
    def d_k(self) -> int:
        """d_k = d_v = d_model / h, each head's width (the paper's name)."""
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


# ------------------------------------------------------------------ limits of one translation
MAX_INPUT_CHARS = 1000      # longer input is cut here before tokenizing (and the user is told)
MAX_SOURCE_PIECES = 128     # longest source in pieces, </s> included (also capped by max_len)
TRACE_DEADLINE_S = 10.0     # one traced translation may hold the model this long at most
TOP_K = 10                  # next-piece candidates recorded at every traced step
OUTPUT_PIECES_PER_SOURCE_PIECE = 2   # translations are rarely more than twice as long as the source
OUTPUT_EXTRA_PIECES = 10


def max_output_pieces(src_len: int, max_len: int) -> int:
    """The output length rule: at most 2 x source + 10 pieces, and never past the positional encoding."""
    return max(1, min(max_len - 1, OUTPUT_PIECES_PER_SOURCE_PIECE * src_len + OUTPUT_EXTRA_PIECES))


# ------------------------------------------------------------------ steering the decoder (model/steering.py)
BEAM_MAX = 8                # widest beam the app and the CLI accept
BEAM_DEFAULT = 4            # the app's beam width at start
BEAM_ALPHA = 0.6            # GNMT length-penalty exponent for the final choice (Wu et al. 2016)
MAX_FORCED_PIECES = MAX_SOURCE_PIECES   # your French, in pieces with </s> (also capped by max_len)

# ------------------------------------------------------------------ batched translation (CLI, evaluation,
# training)
BATCH_TOKENS = 6000         # padded source tokens per batch
MAX_BATCH_SENTENCES = 256

# ------------------------------------------------------------------ the views
PE_MIN_POSITIONS = 64       # the positional-encoding view shows at least this many positions
PE_DEFAULT_DIMS = (0, 1, 8, 9, 64, 65)
REPLAY_POINTS = 12          # training-replay points the "How it learned" view offers (log-spaced)
RARE_PIECE_COUNT = 50       # a source piece seen fewer times than this in training is marked as rare
PATTERN_THRESHOLD = 0.4     # a head is labelled by a pattern that gets at least this much attention
BROAD_ENTROPY = 0.8         # ... or called "broad" above this normalised entropy
ROLLOUT_RESIDUAL = 0.5      # weight of attention against the residual path in attention rollout
REPORT_TOP_CANDIDATES = 5   # candidates per step in the HTML report's table
# longer axis labels (numbered: "3 ▁la") are cut with "…" (the full piece is in the hover)
LABEL_MAX_CHARS = 12
PREFIX_SHOWN_PIECES = 12    # the step view shows the last pieces of a long prefix (the full one on hover)
CELL_VALUES_MAX_PIECES = 14 # "inside one head" prints values in the cells up to this many pieces a side


# ------------------------------------------------------------------ "Why this word": attribution and vectors
# Integrated Gradients: equal intervals of the straight path from the baseline to start ...
IG_STEPS = 4
# ... the worst cut in three for each target until its gap is below IG_TOLERANCE, up to this
IG_MAX_STEPS = 1728
IG_TOLERANCE = 0.02         # |Σ attributions − (f(input) − f(baseline))| ≤ 2 % of |f(input) − f(baseline)|
# each round cuts a target's worst intervals holding this share of its intervals' gaps
IG_CUT_SHARE = 0.5
ATTRIBUTION_TOKENS = 4096   # target positions per forward/backward pass (rows × target length): bounds memory
ATTRIBUTION_MAX_PIECES = 48 # longest source or translation (pieces) the app attributes: bounds the time
LINES_MIN_WEIGHT = 0.02     # the lines view leaves out weights below this (invisible anyway)
