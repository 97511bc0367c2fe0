"""The objects of one training run: its state (``TrainState``, saved for an exact ``--resume``), the data,
tokenizer and model it starts from (``start_run``), the random states, and its checkpoint files."""
from __future__ import annotations

import argparse
import json
import os
import random
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Callable, Optional

import numpy as np
import torch
import torch.distributed as dist
from tqdm import tqdm

from ..config import ModelConfig
from ..io.checkpoint import (PIECE_COUNTS_FILE, REPLAY_FILE, RUN_CONFIG_FILE, SCHEDULE_FILE, TOKENIZER_FILE,
                             load_checkpoint, save_checkpoint)
from ..io.tokenizer import Tokenizer, train_tokenizer
from ..model.transformer import Transformer
from ..replay import EXAMPLES, Replay
from .augment import AugmentConfig, augment
from .budget import read_schedule, write_schedule
from .data import ParallelData, epoch_counts, parse_spec, read_corpus
from .vocab_transfer import transfer_embedding

MODEL_FIELDS = ("d_model", "n_heads", "n_encoder_layers", "n_decoder_layers", "d_ff", "dropout", "max_len",
                "positions", "norm", "scale_scores")
STATE_FILE = "train_state.pt"


@dataclass
class TrainState:
    """Everything a run has done that is not a tensor; saved with the weights for --resume."""

    step: int = 0
    epoch: int = 0
    batch: int = 0                 # the next batch of this epoch
    tokens: int = 0                # source + target tokens seen (all processes)
    train_seconds: float = 0.0     # time in training steps (evaluation excluded)
    best: float = -1.0             # best mean dev BLEU so far
    best_step: int = 0
    evals: list = field(default_factory=list)   # [step, dev BLEU] pairs

    @property
    def minutes(self) -> float:
        return self.train_seconds / 60


def pick_amp(kind: str, device: torch.device) -> Optional[torch.dtype]:
    """bf16 autocast on GPUs that have it (else fp16) and on CPUs with AVX-512 bf16 or AMX; else none."""
    if kind == "none":
        return None
    if kind in ("bf16", "fp16"):
        return torch.bfloat16 if kind == "bf16" else torch.float16
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.bfloat16 if cpu_has_fast_bf16() else None


def cpu_has_fast_bf16() -> bool:
    try:
        flags = Path("/proc/cpuinfo").read_text()
    except OSError:
        return False
    return " avx512_bf16" in flags or " amx_bf16" in flags


def rng_states() -> dict:
    """Python, numpy and torch (CPU and CUDA) random states, as tensors and plain lists."""
    py = random.getstate()
    npy = np.random.get_state()
    return {"python": [py[0], list(py[1]), py[2]], "numpy": [npy[0], npy[1].tolist(), *npy[2:]],
            "torch": torch.get_rng_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else []}


def set_rng_states(s: dict) -> None:
    random.setstate((s["python"][0], tuple(s["python"][1]), s["python"][2]))
    np.random.set_state((s["numpy"][0], np.array(s["numpy"][1], dtype=np.uint32), *s["numpy"][2:]))
    torch.set_rng_state(s["torch"])
    if s["cuda"] and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(s["cuda"])


@dataclass
class Run:
    args: argparse.Namespace
    out: Path
    device: torch.device
    rank: int
    world: int
    tok: Tokenizer
    train: ParallelData
    dev_sets: list
    model: Transformer
    opt: torch.optim.Optimizer
    scaler: torch.amp.GradScaler
    amp_dtype: Optional[torch.dtype]
    log: Callable[..., None]
    rows: list = field(default_factory=list)
    replay: Replay = field(default_factory=lambda: Replay(EXAMPLES))
    ddp_model: Optional[torch.nn.Module] = None
    recent_loss: float = float("nan")      # mean training loss of the last steps (for the replay)
    rebuild_moments: bool = False          # --continue-from a checkpoint: Adam's moments start empty

    @property
    def main_proc(self) -> bool:
        return self.rank == 0


def setup_distributed() -> tuple[int, int, int]:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world > 1:
        dist.init_process_group("nccl" if torch.cuda.is_available() else "gloo")
        rank, local = dist.get_rank(), int(os.environ.get("LOCAL_RANK", "0"))
        if torch.cuda.is_available():
            torch.cuda.set_device(local)
        return rank, world, local
    return 0, 1, 0


def load_corpora(specs) -> tuple[list[tuple[str, str]], list[float]]:
    """Every pair of the corpora once, and each pair's corpus weight (the @W of its spec)."""
    pairs, weights = [], []
    for spec in specs:
        name, weight = parse_spec(spec)
        corpus = read_corpus(name)
        pairs += corpus
        weights += [weight] * len(corpus)
    return pairs, weights


def weighted_sample(pairs, weights, seed: int) -> list[tuple[str, str]]:
    """One epoch's worth of pairs drawn by the corpus weights (what the tokenizer is trained on)."""
    counts = epoch_counts(weights, np.random.default_rng(seed))
    return [p for p, c in zip(pairs, counts) for _ in range(c)]


def turned(pairs, reverse: bool) -> list[tuple[str, str]]:
    """The pairs as (source, target): (English, French), or (French, English) for a --reverse run."""
    return [(b, a) for a, b in pairs] if reverse else list(pairs)


def tokenize(tok: Tokenizer, pairs, max_pieces: int, weights=None) -> ParallelData:
    return ParallelData(tok.encode([p[0] for p in pairs]), tok.encode([p[1] for p in pairs]), max_pieces,
                        weights)


def cleaned_sources(names) -> dict:
    """{cleaned copy: the corpus it was made from} for the corpora that ``python -m transformer.cli.clean``
    wrote (its report.json beside them says which), so that a run's data can be traced back to
    the shared corpora."""
    reports, found = {}, {}
    for name in names:
        folder = Path(name).parent
        if folder not in reports:          # one report per folder, read once
            report = folder / "report.json"
            reports[folder] = json.loads(report.read_text(encoding="utf-8")).get("corpora", {}) \
                if report.is_file() else {}
        found.update({name: src for src, row in reports[folder].items()
                      if row.get("file") == Path(name).name})
    return found


def generated_sources(names) -> dict:
    """{generated corpus: how it was made} for the corpora that carry a JSON note beside them (NAME.json for
    NAME.tsv.gz, as tools/gpu_cycle.sh writes for its generated pairs)."""
    found = {}
    for name in names:
        note = Path(name.replace(".tsv.gz", ".json").replace(".tsv", ".json"))
        if note != Path(name) and note.is_file():
            found[name] = json.loads(note.read_text(encoding="utf-8"))
    return found


def save_run_config(args, out: Path) -> None:
    """run_config.json: every option of this run, the corpus weights spelled out, and the corpora that cleaned
    copies were made from (export copies it on)."""
    names = [name for name, _ in map(parse_spec, args.train)]
    config = dict(vars(args), corpus_weights={name: w for name, w in map(parse_spec, args.train)},
                  cleaned_from=cleaned_sources(names), generated=generated_sources(names))
    (out / RUN_CONFIG_FILE).write_text(json.dumps(config, indent=1) + "\n", encoding="utf-8")


def prepare_tokenizer(args, out: Path, extra, rank: int, world: int, log) -> Tokenizer:
    """The run's tokenizer: the --continue-from run's or --init-from checkpoint's, the one in OUT, or a new
    one."""
    tok_path = out / TOKENIZER_FILE
    start = getattr(args, "continue_from", None) or args.init_from
    if start and not args.new_tokenizer and rank == 0:
        init_tok = (Path(start) / TOKENIZER_FILE).read_bytes()
        if tok_path.exists() and tok_path.read_bytes() != init_tok:
            raise SystemExit(f"error: {tok_path} differs from {start}'s tokenizer; use a new --out folder")
        tok_path.write_bytes(init_tok)
    if not tok_path.exists() and rank == 0:
        log(f"training SentencePiece ({args.vocab_size} pieces) on {', '.join(args.train)}"
            + (" and the augmented pairs" if extra else ""))
        pairs = weighted_sample(*load_corpora(args.train), seed=args.seed) + extra
        train_tokenizer([s for p in pairs for s in p], out / "tokenizer", vocab_size=args.vocab_size,
                        seed=args.seed)
    if world > 1:
        dist.barrier()
    return Tokenizer(tok_path)


def prepare_data(args, tok: Tokenizer, extra, log) -> tuple[ParallelData, list]:
    t0 = time.time()
    pairs, weights = load_corpora(args.train)
    reverse = getattr(args, "reverse", False)
    train = tokenize(tok, turned(pairs + extra, reverse), args.max_pieces,
                     weights + [args.augment_weight] * len(extra))
    dev_sets = []
    for spec in args.dev:
        pairs = turned(read_corpus(spec), reverse)
        dev_sets.append((Path(spec).name.split(".")[0], tokenize(tok, pairs, 10_000), pairs))
    log(f"data: {len(train):,} training pairs ({train.num_tokens():,} tokens, {train.dropped} dropped as too "
        f"long), dev {[len(d) for _, d, _ in dev_sets]}, in {time.time() - t0:.1f}s")
    return train, dev_sets


def build_model(args, tok: Tokenizer, device: torch.device, log) -> Transformer:
    """A new model from the size options, or the --init-from checkpoint's config and weights."""
    if getattr(args, "continue_from", None):        # the config of the run it goes on from (weights: later)
        saved, _ = load_checkpoint(continued_checkpoint(args.continue_from), "cpu")
        model = Transformer(replace(saved.cfg, dropout=args.dropout, vocab_size=tok.vocab_size))
    elif args.init_from:
        saved, saved_tok = load_checkpoint(args.init_from, "cpu")
        model = Transformer(replace(saved.cfg, dropout=args.dropout, vocab_size=tok.vocab_size))
        weights = saved.state_dict()
        if args.new_tokenizer:
            moved = transfer_embedding(weights["embedding.weight"], saved_tok, tok)
            weights["embedding.weight"] = moved.embedding
            log(f"new vocabulary of {tok.vocab_size:,} pieces: {moved.copied:,} kept from the old one, "
                f"{moved.composed:,} built from the old pieces that spell them")
        model.load_state_dict(weights)
        log(f"initialised from {args.init_from} (its config and weights)")
    else:
        fields_ = {name: getattr(args, name) for name in MODEL_FIELDS}
        model = Transformer(ModelConfig(vocab_size=tok.vocab_size, **fields_))
    log(f"model: {model.num_parameters():,} parameters, config {json.dumps(asdict(model.cfg))}")
    return model.to(device)


def write_piece_counts(data: ParallelData, vocab_size: int, path: Path) -> None:
    """How often each piece occurs in one epoch of training data, per side, the corpus weights applied (an @3
    corpus counts three times, an @0.35 one 35 %): the app marks rare pieces and tells French
    input by them."""
    w = data.weights if data.weights is not None else np.ones(len(data))

    def counts(seqs) -> list[int]:
        ids = np.concatenate([np.asarray(x) for x in seqs])
        # each piece weighs its pair's weight
        per_piece = np.repeat(w, [len(x) for x in seqs])
        return np.rint(np.bincount(ids, weights=per_piece, minlength=vocab_size)).astype(np.int64).tolist()
    pairs = int(round(float(w.sum())))
    path.write_text(json.dumps({"pairs": pairs, "source": counts(data.src), "target": counts(data.tgt)})
                    + "\n")


def save_training_state(run: Run, state: TrainState) -> None:
    """train_state.pt (weights, optimizer, scaler, state, every random state) and last/ (a checkpoint)."""
    if not run.main_proc:
        return
    tmp = run.out / (STATE_FILE + ".tmp")
    torch.save(dict(model=run.model.state_dict(), optimizer=run.opt.state_dict(),
                    scaler=run.scaler.state_dict(), state=json.dumps(asdict(state)), rng=rng_states()), tmp)
    tmp.replace(run.out / STATE_FILE)
    write_checkpoint(run, "last", state=state)


def write_checkpoint(run: Run, name: str, metadata: Optional[dict] = None,
                     state: Optional[TrainState] = None) -> None:
    """OUT/NAME: config.json, model.safetensors, tokenizer.model (and piece counts and replay if any), and
    where the schedule stands at `state` (schedule.json: what --continue-from needs of a checkpoint)."""
    folder = save_checkpoint(run.model, run.out / TOKENIZER_FILE, run.out / name, metadata=metadata)
    if state is not None:
        write_schedule(folder, state, run.args)
    for extra in (PIECE_COUNTS_FILE, REPLAY_FILE):
        if (run.out / extra).exists():
            (folder / extra).write_bytes((run.out / extra).read_bytes())


def load_training_state(run: Run) -> TrainState:
    path = run.out / STATE_FILE
    if not path.exists():
        run.log(f"--resume: no {path}; starting from scratch")
        return TrainState()
    ck = torch.load(path, map_location="cpu", weights_only=True)
    run.model.load_state_dict(ck["model"])
    run.opt.load_state_dict(ck["optimizer"])
    run.scaler.load_state_dict(ck["scaler"])
    set_rng_states(ck["rng"])
    state = TrainState(**json.loads(ck["state"]))
    run.log(f"resumed at step {state.step} (epoch {state.epoch}, batch {state.batch}, best dev BLEU "
            f"{state.best})")
    return state


def continued_checkpoint(folder) -> Path:
    """The weights --continue-from starts from: a run folder's last/, or a checkpoint folder itself."""
    folder = Path(folder)
    if (folder / STATE_FILE).exists():
        return folder / "last"
    if not (folder / SCHEDULE_FILE).exists():
        raise SystemExit(f"error: {folder} has neither {STATE_FILE} (a run) nor {SCHEDULE_FILE} (a "
                         "checkpoint that says where its schedule stands)")
    return folder


def continue_training_state(run: Run, folder: str) -> TrainState:
    """Go on from another run's train_state.pt with this run's data: its weights, optimizer moments and
    scaler, and the step, tokens and training time that place the learning-rate schedule; a new epoch,
    a new best. From a checkpoint folder (no train_state.pt: a model brought back from a GPU call), its
    weights and its schedule.json; the moments are then rebuilt (``budget.estimate_moments``, run by
    train.main: ``run.rebuild_moments``)."""
    if not (Path(folder) / STATE_FILE).exists():
        saved, _ = load_checkpoint(folder, "cpu")
        run.model.load_state_dict(saved.state_dict())
        s = read_schedule(folder)
        state = TrainState(step=s["step"], tokens=s["tokens"], train_seconds=s["train_seconds"])
        run.rebuild_moments = True
        run.log(f"continuing from the checkpoint {folder} at step {state.step} ({state.tokens:,} tokens, "
                f"{state.minutes:.1f} minutes): its weights and schedule; Adam's moments rebuilt")
        return state
    ck = torch.load(Path(folder) / STATE_FILE, map_location="cpu", weights_only=True)
    run.model.load_state_dict(ck["model"])
    run.opt.load_state_dict(ck["optimizer"])
    run.scaler.load_state_dict(ck["scaler"])
    old = TrainState(**json.loads(ck["state"]))
    state = TrainState(step=old.step, tokens=old.tokens, train_seconds=old.train_seconds)
    run.log(f"continuing from {folder} at step {state.step} ({state.tokens:,} tokens, {state.minutes:.1f} "
            f"minutes): "
            "its weights, optimizer and schedule, this run's data")
    return state


def start_run(args) -> Run:
    """Device, tokenizer, data, model and optimizer of a run (nothing trained yet)."""
    rank, world, local = setup_distributed()
    device = torch.device(f"cuda:{local}" if torch.cuda.is_available() else "cpu") if args.device == "auto" \
        else torch.device(args.device)
    if args.threads:
        torch.set_num_threads(args.threads)
    random.seed(args.seed), np.random.seed(args.seed), torch.manual_seed(args.seed)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = (lambda *a: tqdm.write(" ".join(str(x) for x in a))) if rank == 0 else (lambda *a: None)
    if rank == 0:
        save_run_config(args, out)
    extra = augment(load_corpora(args.augment_from or args.train)[0], args.seed,
                    AugmentConfig(name_copies=args.name_copies, number_copies=args.number_copies,
                                  templates=args.templates, concatenations=args.concatenations,
                                  concat_sizes=tuple(args.concat_sizes),
                                  coreference=getattr(args, "coreference", 0),
                                  large_numbers=getattr(args, "large_numbers", 0),
                                  ongoing=getattr(args, "ongoing", 0)),
                    log) if args.augment else []
    tok = prepare_tokenizer(args, out, extra, rank, world, log)
    train, dev_sets = prepare_data(args, tok, extra, log)
    if rank == 0:
        write_piece_counts(train, tok.vocab_size, out / PIECE_COUNTS_FILE)
    model = build_model(args, tok, device, log)
    amp_dtype = pick_amp(args.amp, device)
    run = Run(args, out, device, rank, world, tok, train, dev_sets, model,
              opt=torch.optim.Adam(model.parameters(), lr=args.lr, betas=(0.9, 0.98), eps=1e-9),
              scaler=torch.amp.GradScaler("cuda",
                                          enabled=(amp_dtype == torch.float16 and device.type == "cuda")),
              amp_dtype=amp_dtype, log=log)
    run.ddp_model = torch.nn.parallel.DistributedDataParallel(
        model, device_ids=[local] if device.type == "cuda" else None) if world > 1 else model
    log(f"device {device}, world size {world}, autocast {amp_dtype}, threads {torch.get_num_threads()}")
    return run
