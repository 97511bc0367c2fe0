"""Checkpoint folders: ``config.json`` + ``model.safetensors`` + ``tokenizer.model``.

Weights are read only through safetensors (no pickle). Anything wrong with a folder
raises one ``CheckpointError`` whose message says what is wrong and what to do.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from ..config import ModelConfig
from ..model.transformer import Transformer
from .tokenizer import Tokenizer

CONFIG_FILE = "config.json"
WEIGHTS_FILE = "model.safetensors"
TOKENIZER_FILE = "tokenizer.model"
PIECE_COUNTS_FILE = "piece_counts.json"   # optional: training counts per piece (written by train)
REPLAY_FILE = "replay.npz"                # optional: attention of fixed examples during training
RUN_CONFIG_FILE = "run_config.json"       # optional: the training run's options and corpus weights
# where a checkpoint's training schedule stands (--continue-from); never copied on by export or interpolate (a
# mixed model's schedule is neither parent's); tools/gpu_common.sh brings it back beside the exported weights
SCHEDULE_FILE = "schedule.json"
OPTIONAL_FILES = (PIECE_COUNTS_FILE, REPLAY_FILE, RUN_CONFIG_FILE, "log.csv", "loss_curve.png")
REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_CHECKPOINT = REPO_ROOT / "checkpoints" / "en-fr-base"
HINT = ("Pass --checkpoint with a folder made by `python -m transformer.cli.train` "
        "(it holds config.json, model.safetensors and tokenizer.model), or restore the bundled "
        "one with `git checkout -- checkpoints/`.")


class CheckpointError(RuntimeError):
    """A checkpoint folder that cannot be used; the message says why and what to do."""


def save_checkpoint(model: Transformer, tokenizer_path: str | Path, out_dir: str | Path,
                    dtype: Optional[torch.dtype] = None, metadata: Optional[dict] = None) -> Path:
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to("cpu", dtype=dtype or v.dtype).contiguous()
             for k, v in model.state_dict().items()}
    meta = {k: str(v) for k, v in (metadata or {}).items()}
    tmp = out / (WEIGHTS_FILE + ".tmp")
    save_file(state, str(tmp), metadata=meta)
    tmp.replace(out / WEIGHTS_FILE)
    model.cfg.to_json(out / CONFIG_FILE)
    src_tok = Path(tokenizer_path).resolve()
    dst_tok = (out / TOKENIZER_FILE).resolve()
    if src_tok != dst_tok:
        dst_tok.write_bytes(src_tok.read_bytes())
    return out


def copy_optional_files(src: str | Path, dst: str | Path) -> None:
    """The piece counts, training replay, run config, log and loss curve of `src`, copied as they are to
    `dst`."""
    for name in OPTIONAL_FILES:
        if (Path(src) / name).is_file():
            (Path(dst) / name).write_bytes((Path(src) / name).read_bytes())


def checkpoint_identity(checkpoint: Optional[str | Path], device) -> tuple:
    """Which weights a trace came from: the folder, its weights file's size and time, the device."""
    folder = Path(checkpoint) if checkpoint is not None else DEFAULT_CHECKPOINT
    st = (folder / WEIGHTS_FILE).stat()
    return str(folder.resolve()), st.st_size, st.st_mtime_ns, str(device)


def load_piece_counts(path: str | Path | None = None) -> Optional[dict]:
    """The checkpoint's training counts per piece ({"pairs", "source", "target"}), or None without the
    file."""
    folder = Path(path) if path is not None else DEFAULT_CHECKPOINT
    file = folder / PIECE_COUNTS_FILE
    if not file.is_file():
        return None
    try:
        counts = json.loads(file.read_text(encoding="utf-8"))
        return counts if isinstance(counts.get("source"), list) else None
    except (ValueError, AttributeError):
        return None


def load_checkpoint(path: str | Path | None = None,
                    device: str | torch.device = "cpu") -> tuple[Transformer, Tokenizer]:
    """Load model (fp32, eval mode) and tokenizer from a checkpoint folder."""
    folder = Path(path) if path is not None else DEFAULT_CHECKPOINT
    if not folder.is_dir():
        raise CheckpointError(f"Checkpoint folder '{folder}' does not exist. {HINT}")
    for name in (CONFIG_FILE, WEIGHTS_FILE, TOKENIZER_FILE):
        if not (folder / name).is_file():
            raise CheckpointError(f"Checkpoint folder '{folder}' has no {name}. {HINT}")
    try:
        cfg = ModelConfig.from_dict(json.loads((folder / CONFIG_FILE).read_text(encoding="utf-8")))
    except (ValueError, TypeError, UnicodeDecodeError) as e:
        raise CheckpointError(f"'{folder / CONFIG_FILE}' is not a valid model config ({e}). {HINT}") from None
    try:
        tokenizer = Tokenizer(folder / TOKENIZER_FILE)
    except (OSError, RuntimeError, ValueError) as e:
        raise CheckpointError(f"'{folder / TOKENIZER_FILE}' is not a usable SentencePiece model ({e}). "
                              f"{HINT}") from None
    if tokenizer.vocab_size != cfg.vocab_size:
        raise CheckpointError(
            f"Tokenizer in '{folder}' has {tokenizer.vocab_size} pieces but config.json says vocab_size="
            f"{cfg.vocab_size}: the files come from different models. {HINT}")
    try:
        state = load_file(str(folder / WEIGHTS_FILE), device="cpu")
    except (SafetensorError, OSError, ValueError, RuntimeError) as e:
        raise CheckpointError(f"'{folder / WEIGHTS_FILE}' is truncated or corrupt ({e}). {HINT}") from None
    model = Transformer(cfg)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [f"{k}: file {tuple(state[k].shape)} vs config {tuple(v.shape)}"
             for k, v in expected.items() if k in state and state[k].shape != v.shape]
    if missing or unexpected or wrong:
        detail = "; ".join(filter(None, [
            f"missing {missing[:3]}{'...' if len(missing) > 3 else ''}" if missing else "",
            f"unexpected {unexpected[:3]}{'...' if len(unexpected) > 3 else ''}" if unexpected else "",
            f"shape mismatch {wrong[:2]}" if wrong else ""]))
        raise CheckpointError(f"Weights in '{folder}' do not match its config.json ({detail}). {HINT}")
    model.load_state_dict({k: v.float() for k, v in state.items()})
    for k, v in model.state_dict().items():
        if v.is_floating_point() and not torch.isfinite(v).all():
            raise CheckpointError(f"Weights in '{folder}' contain NaN or infinite values ({k}). {HINT}")
    return model.to(device).eval(), tokenizer


def resolve_device(name: str = "auto") -> torch.device:
    name = (name or "auto").lower()
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name.startswith("cuda") and not torch.cuda.is_available():
        raise CheckpointError("--device cuda was asked for but no CUDA GPU is available; use --device cpu or "
                              "auto.")
    if name not in ("cpu",) and not name.startswith("cuda"):
        raise CheckpointError(f"Unknown device '{name}': use auto, cpu or cuda.")
    return torch.device(name)
