"""Train the Compare view's companion models and bundle them: ``python tools/train_variants.py``.

The baseline and each variant of ``transformer/variants.py`` are trained by the training CLI with
``--variant NAME`` and the same data, data order, steps, seed and tokenizer (the baseline's, copied
to each run before it starts), so that the one design choice is the only difference. Each run is
resumable: run this again after an interruption and it continues where it stopped (``--resume``).

Then every best checkpoint is exported in fp16 to ``checkpoints/variants/NAME/`` with its training
log, and scored greedily on the Tatoeba dev and test sets, and on the test sentences joined six at a time
(``scores.json``: BLEU, chrF, the training
steps and tokens, and the longest training sentence in positions, which the learned-positions view marks).
"""
from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from transformer.training.data import SHARED_DATA  # noqa: E402
from transformer.variants import VARIANTS, VARIANTS_DIR  # noqa: E402

TATOEBA = SHARED_DATA / "tatoeba-eng-fra"
# One recipe for all: what makes the runs comparable (the log of each run shows the same steps and tokens).
RECIPE = ["--train", str(TATOEBA / "train.tsv.gz"), "--dev", str(TATOEBA / "dev.tsv.gz"), "--vocab-size", "8000",
          "--max-pieces", "64", "--max-tokens", "2000", "--lr", "1e-3", "--warmup", "150", "--schedule", "cosine",
          "--seed", "1", "--eval-every", "300", "--bleu-sentences", "400", "--average-last", "3",
          "--save-every-min", "3", "--amp", "none"]
RECIPE = [a.replace(str(ROOT.parent) + "/", "../") for a in RECIPE]   # as a user types it, from the repository


def train(name: str, runs: Path, steps: int, threads: int) -> Path:
    out = runs / name
    if (out / "best" / "model.safetensors").exists() and json.loads((out / "run_config.json").read_text())["max_steps"] == steps \
            and _finished(out, steps):
        print(f"{name}: already trained ({out})")
        return out
    out.mkdir(parents=True, exist_ok=True)
    base_tok = runs / "baseline" / "tokenizer.model"
    if name != "baseline":
        (out / "tokenizer.model").write_bytes(base_tok.read_bytes())
    cmd = [sys.executable, "-m", "transformer.cli.train", "--variant", name, "--out", str(out),
           "--max-steps", str(steps), "--threads", str(threads), *RECIPE]
    if (out / "train_state.pt").exists():
        cmd.append("--resume")
    print("$", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, cwd=ROOT)
    return out


def _finished(out: Path, steps: int) -> bool:
    log = (out / "log.csv").read_text().splitlines()
    return any(line.startswith(f"{steps},") for line in log[1:])


def longest_positions(tokenizer: Path) -> int:
    """The most positions a training sentence fills (pieces + </s> on the source, <s> + pieces on the target)."""
    from transformer.io.tokenizer import Tokenizer
    from transformer.training.data import read_corpus
    tok = Tokenizer(tokenizer)
    pairs = read_corpus(str(TATOEBA / "train.tsv.gz"))
    lengths = [len(ids) + 1 for side in zip(*pairs) for ids in tok.encode(list(side))]
    return max(n for n in lengths if n <= 64 + 1)   # --max-pieces drops longer pairs


JOINED = 6   # test sentences joined into one line: a third of them reach past the longest training sentence


def joined_test(runs: Path) -> Path:
    """The Tatoeba test pairs joined six at a time (in order): where a learned positional table runs out."""
    from transformer.training.data import read_corpus
    pairs = read_corpus(str(TATOEBA / "test.tsv.gz"))
    groups = [pairs[i:i + JOINED] for i in range(0, len(pairs) - JOINED + 1, JOINED)]
    path, tmp = runs / "test_long.tsv", runs / "test_long.tsv.tmp"
    tmp.write_text("".join(" ".join(p[0] for p in g) + "\t" + " ".join(p[1] for p in g) + "\n" for g in groups),
                   encoding="utf-8")
    tmp.replace(path)          # whole or not at all: another run may be reading it
    return path


def score(folder: Path, split: str, runs: Path, data: Path = None) -> dict:
    data = data or TATOEBA / f"{split}.tsv.gz"
    out = subprocess.run([sys.executable, "-m", "transformer.cli.evaluate", "--data", str(data),
                          "--checkpoint", str(folder), "--hyp-out", str(runs / f"{folder.name}.{split}.hyp")],
                         check=True, cwd=ROOT, capture_output=True, text=True).stdout
    res = json.loads(out.strip().splitlines()[-1])
    return {"bleu": res["bleu"], "chrf": res["chrf"], "sentences": res["sentences"]}


def position_loss(folder: Path, long_test: Path, longest: int) -> dict:
    """Teacher-forced cross-entropy (nats a piece) on the joined test lines, for the target positions the training
    sentences reached and for those past them: where a learned positional table has nothing trained to give."""
    import torch
    import torch.nn.functional as F
    from transformer.io.checkpoint import load_checkpoint
    from transformer.training.data import read_corpus
    model, tok = load_checkpoint(folder, "cpu")
    model.eval()
    sums, counts = [0.0, 0.0], [0, 0]
    with torch.inference_mode():
        for en, fr in read_corpus(str(long_test)):
            src = torch.tensor([tok.encode(en)[: model.cfg.max_len]])
            tgt = tok.encode(fr)[: model.cfg.max_len - 1]           # y1 ... </s>
            tin = torch.tensor([[model.cfg.bos_id, *tgt[:-1]]])
            loss = F.cross_entropy(model(src, tin).logits[0], torch.tensor(tgt), reduction="none")
            for side, part in ((0, loss[:longest]), (1, loss[longest:])):
                sums[side] += float(part.sum())
                counts[side] += part.numel()
    return {"within": round(sums[0] / max(1, counts[0]), 3), "beyond": round(sums[1] / max(1, counts[1]), 3),
            "pieces_within": counts[0], "pieces_beyond": counts[1]}


def bundle(name: str, run: Path, longest: int, long_test: Path) -> None:
    dst = VARIANTS_DIR / name
    old = json.loads((dst / "scores.json").read_text()) if (dst / "scores.json").is_file() else {}
    subprocess.run([sys.executable, "-m", "transformer.cli.export", str(run / "best"), str(dst), "--dtype", "fp16"],
                   check=True, cwd=ROOT)
    config = (dst / "run_config.json").read_text()                     # the run's options, paths from the repository
    (dst / "run_config.json").write_text(config.replace(str(ROOT) + "/", "").replace(str(ROOT.parent) + "/", "../"))
    for extra in ("replay.npz", "piece_counts.json", "loss_curve.png"):   # the Compare view needs none of them
        (dst / extra).unlink(missing_ok=True)
    (dst / "log.csv").write_bytes((run / "log.csv").read_bytes())
    rows = (run / "log.csv").read_text().splitlines()
    last = rows[-1].split(",")
    best = json.loads((run / "best" / "config.json").read_text())
    same = old.get("weights") == (run / "best" / "model.safetensors").stat().st_mtime_ns   # scored already
    scores = {"variant": name, "changes": VARIANTS[name].changes, "config": best,
              "weights": (run / "best" / "model.safetensors").stat().st_mtime_ns,
              **{split: old[split] if same and split in old else score(dst, split, run.parent)
                 for split in ("dev", "test")},
              "test_long": old["test_long"] if same and "test_long" in old else score(dst, "test_long", run.parent,
                                                                                      long_test),
              "position_loss": position_loss(dst, long_test, longest),
              "steps": int(last[0]), "tokens": int(last[2]), "longest_training_positions": longest,
              "recipe": "python tools/train_variants.py (python -m transformer.cli.train --variant "
                        f"{name} {' '.join(RECIPE)})"}
    (dst / "scores.json").write_text(json.dumps(scores, indent=1) + "\n", encoding="utf-8")
    print(f"{name}: dev BLEU {scores['dev']['bleu']}, test BLEU {scores['test']['bleu']} -> {dst}")


CARD_HEAD = """# The Compare view's companion models

Five small encoder-decoders (d_model 128, 8 heads of d_k 16, 3 encoder + 3 decoder layers, d_ff 512, 8,000
shared SentencePiece pieces; about 2.4 M parameters, {size} in fp16 together): a **baseline** with the
paper's choices and four **variants**, each differing from it in one design choice. Made by
`python tools/train_variants.py` (which calls `python -m transformer.cli.train --variant NAME`); every run
read the same data in the same order with the same seed, tokenizer, steps and schedule, and started from the
same initial weights wherever the shapes agree (`tests/test_variants.py` checks both). Each folder holds the
config, the fp16 weights, the tokenizer, the training `log.csv` and `scores.json`.

**Data**: Tatoeba English-French train split (tatoeba.org via manythings.org/anki, CC-BY 2.0 France), pairs of
at most 64 pieces; dev = Tatoeba dev (model selection: the best of the checkpoints and their average on 400 dev
sentences), test = Tatoeba test, reported only. **Trained** on this repository's 2-core CPU (fp32), about
{minutes} minutes each.

| model | the choice | dev BLEU / chrF | test BLEU / chrF | joined test: BLEU | joined test: loss a piece, positions ≤ {longest} / past | steps | tokens |
|---|---|---:|---:|---:|---:|---:|---:|
"""

CARD_TAIL = """
BLEU and chrF: sacreBLEU defaults, greedy decoding (`python -m transformer.cli.evaluate --checkpoint
checkpoints/variants/NAME --data ...`). "6 sentences joined": the Tatoeba test pairs joined six at a time
({joined} lines), long enough that about a third of them reach past the longest training sentence ({longest}
positions); past it is where a learned positional table, whose rows past the training lengths were never trained, might fail where the
sinusoids do not (the Observed lines above say whether it did: its untrained rows start small, N(0, 0.1), beside
the scaled token embeddings, and no model saw a position that far in training). Their BLEU is near zero for every model at this size, so the teacher-forced loss a target
piece (nats, `position_loss` in `scores.json`) is given too, within the first {longest} positions and past them.

**Limits, said plainly**: 900 steps (about 3 M tokens, less than one epoch of Tatoeba) on 2 CPU cores is all
these models had, and it shows: Tatoeba BLEU between 3 and 11, so they translate only very short sentences and
get most others wrong. They are here to show how one design choice changes training and attention when
everything else is equal, not to translate; compare them with each other, never with the bundled model
(Tatoeba test BLEU about 49). One difference besides the choice, found after training: the bundled
learned-positions run drew its table's initial values from the shared random stream, so its dropout masks
differed from the baseline's (its starting weights did not); the code now draws the table aside, so a rerun
keeps the masks too. On a GPU, `python tools/train_variants.py --steps 20000 --runs runs/variants-long`
would train all five for far longer in well under an hour. The other views of the app assume the paper's design; only the
Compare view loads these.
"""


def observed(scores: dict) -> str:
    """What the table says, in words (numbers from the scores; written anew with every bundle)."""
    b = scores["baseline"]
    lines = ["**Observed** (test BLEU; loss a piece on the joined test lines past the longest training sentence):"]
    for name, s in scores.items():
        if name == "baseline":
            continue
        lines.append(f"- {VARIANTS[name].title}: test BLEU {s['test']['bleu']:.1f} against the baseline's "
                     f"{b['test']['bleu']:.1f}; past {s['longest_training_positions']} positions "
                     f"{s['position_loss']['beyond']:.2f} against {b['position_loss']['beyond']:.2f}.")
    return "\n".join(lines) + "\n"


def write_card(names: list[str], minutes: float) -> None:
    rows = []
    for name in names:
        s = json.loads((VARIANTS_DIR / name / "scores.json").read_text())
        choice = ", ".join(f"{k} = {v}" for k, v in VARIANTS[name].changes.items()) or "the paper's"
        rows.append(f"| {name} | {choice} | {s['dev']['bleu']:.1f} / {s['dev']['chrf']:.1f} | "
                    f"{s['test']['bleu']:.1f} / {s['test']['chrf']:.1f} | {s['test_long']['bleu']:.1f} | "
                    f"{s['position_loss']['within']:.2f} / {s['position_loss']['beyond']:.2f} | "
                    f"{s['steps']:,} | {s['tokens']:,} |")
    size = sum(f.stat().st_size for n in names for f in (VARIANTS_DIR / n).iterdir()) / 2 ** 20
    s = json.loads((VARIANTS_DIR / names[0] / "scores.json").read_text())
    (VARIANTS_DIR / "README.md").write_text(
        CARD_HEAD.format(size=f"{size:.1f} MB", minutes=round(minutes), longest=s["longest_training_positions"])
        + "\n".join(rows) + "\n\n" + observed({n: json.loads((VARIANTS_DIR / n / "scores.json").read_text())
                                                for n in names})
        + CARD_TAIL.format(joined=s["test_long"]["sentences"], longest=s["longest_training_positions"]),
        encoding="utf-8")


def training_minutes(run: Path) -> float:
    rows = (run / "log.csv").read_text().splitlines()
    return float(rows[-1].split(",")[-1] or 0)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--runs", default="runs/variants", help="where the training runs live (resumable)")
    p.add_argument("--steps", type=int, default=900, help="training steps of every run")
    p.add_argument("--threads", type=int, default=0, help="CPU threads (0 = all)")
    p.add_argument("--only", nargs="+", choices=list(VARIANTS), default=list(VARIANTS))
    p.add_argument("--card-only", action="store_true", help="only write checkpoints/variants/README.md anew")
    args = p.parse_args(argv)
    runs = ROOT / args.runs
    if args.card_only:
        bundled = [n for n in VARIANTS if (VARIANTS_DIR / n / "scores.json").is_file()]
        write_card(bundled, max(training_minutes(runs / n) for n in bundled))
        return 0
    for name in ["baseline"] + [n for n in args.only if n != "baseline"]:
        train(name, runs, args.steps, args.threads)
    longest = longest_positions(runs / "baseline" / "tokenizer.model")
    long_test = joined_test(runs)
    for name in args.only:
        bundle(name, runs / name, longest, long_test)
    bundled = [n for n in VARIANTS if (VARIANTS_DIR / n / "scores.json").is_file()]
    write_card(bundled, max(training_minutes(runs / n) for n in bundled))
    return 0


if __name__ == "__main__":
    sys.exit(main())
