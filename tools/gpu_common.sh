# Shared by tools/gpu_cycle.sh and tools/gpu_continue.sh (sourced, from the repository root): the data pack and what
# comes back, the dev sets and cycle 19's mix, the generated pairs, the call's deadline and bringing a model back.
set -u
shopt -s nullglob
OUT=${OUT:-runs/gpu-out}
P=${PACK:-runs/pack}
THREADS=${THREADS:-4}
mkdir -p "$OUT" runs/gpu
export PYTHONUNBUFFERED=1
t0=$(date +%s); say() { echo "[$(( $(date +%s) - t0 ))s] $*"; }
nvidia-smi -L 2>/dev/null || true

DEV=("$P/dev/tatoeba-dev.tsv.gz" "$P/dev/multi30k-val.tsv.gz" "transformer/training/corpora/classroom.dev.tsv"
     "$P/dev/newstest2013.tsv.gz" "$P/dev/cnp3-ebook.tsv.gz" "$P/dev/ml-courses-dev.tsv.gz")
MIX=("$P/tatoeba-eng-fra-train.tsv.gz@2" "$P/multi30k-train.tsv.gz@3" "$P/corpora-classroom.train.tsv.gz@6"
     "$P/corpora-coreference.train.tsv.gz@20" "$P/corpora-formal.train.tsv.gz@100"
     "$P/news-formal-news.train.tsv.gz@3" "$P/news-formal-hansard.train.tsv.gz" "$P/news-formal-europarl-first3k.train.tsv.gz@2"
     "$P/news-formal-diabla.train.tsv.gz" "$P/news-formal-tico19.train.tsv.gz" "$P/laws-canada-train.tsv.gz")
for f in "$P"/tech-docs-*.tsv.gz; do MIX+=("$f@0.3"); done
for f in "$P"/ml-courses-*.tsv.gz; do MIX+=("$f@6"); done
LECTURE="$P/corpora-lecture-ml.train.tsv.gz@${LECTURE_W:-40}"   # the project's lecture corpus (after cycle 19)
AUG_SOURCES=("$P/tatoeba-eng-fra-train.tsv.gz" "$P/multi30k-train.tsv.gz" "$P/corpora-classroom.train.tsv.gz")
AUG=(runs/gpu/augmented.tsv.gz)     # the generated pairs (training/augment.py, generate_pairs), weight 1
COMMON=(--dev "${DEV[@]}" --max-tokens 12000 --eval-every 400 --bleu-sentences ${BLEU_SENTENCES:-300} --save-every-min 1
        --average-last 3 --threads "$THREADS" --label-smoothing 0.1 --clip 1.0)

until_deadline() {   # the trainer fits its schedule to end (averaging included) 30 s before $DEADLINE s after
  # the start (--end-by); a SIGINT at the deadline itself (the trainer saves its state), SIGKILL 20 s later
  local left=$(( DEADLINE - ($(date +%s) - t0) )); [ "$left" -ge 1 ] || left=1
  # (the trainer's clock starts after its imports, a few seconds later: 45 s of margin, at least 1 s)
  timeout -k 20 --signal=INT "$left" python3 -m transformer.cli.train "$@" --end-by $(( left > 90 ? left - 45 : (left > 2 ? left - 2 : 1) ))
}

generate_pairs() {   # generate_pairs SEED: runs/gpu/augmented.tsv.gz from AUG_SOURCES, and how (run_config's "generated")
  python3 - "$1" "${AUG_SOURCES[@]}" > runs/gpu/augment.log 2>&1 <<'PY'
import dataclasses, gzip, json, sys
from transformer.training.augment import AugmentConfig, augment
from transformer.training.run import load_corpora
seed, sources = int(sys.argv[1]), sys.argv[2:]
cfg = AugmentConfig(name_copies=8, number_copies=8, templates=100000, concatenations=20000,
                    concat_sizes=(2, 3, 4, 5, 6, 6), coreference=20000, large_numbers=20000)
pairs = augment(load_corpora(sources)[0], seed, cfg, print)
with gzip.open("runs/gpu/augmented.tsv.gz", "wt", encoding="utf-8") as f:
    f.writelines(f"{en}\t{fr}\n" for en, fr in pairs)
with open("runs/gpu/augmented.json", "w", encoding="utf-8") as f:
    json.dump({"made_by": "transformer.training.augment.augment", "from": sources, "seed": seed,
               "config": dataclasses.asdict(cfg)}, f)
print(cfg)
PY
}

bring_back() {   # bring_back NAME FOLDER: the checkpoint in fp16, split in parts of 15 MiB, into $OUT, and where
  # its schedule stands (NAME.schedule.json: a further cycle goes on from it with --continue-from, its moments
  # rebuilt there, since Adam's 96 MB cannot come back beside the model)
  rm -rf runs/gpu/$1-fp16 && python3 -m transformer.cli.export "$2" runs/gpu/$1-fp16 > /dev/null || return
  rm -f "$OUT/$1".safetensors.part* && split -b 15M -d runs/gpu/$1-fp16/model.safetensors "$OUT/$1.safetensors.part"
  [ -f "$2/schedule.json" ] && cp "$2/schedule.json" "$OUT/$1.schedule.json"
}

pack_logs() {
  tar czf "$OUT/logs.tar.gz" runs/gpu/*.log runs/gpu/*/log.csv runs/gpu/*/run_config.json \
      runs/gpu/*/best/config.json runs/gpu/*/piece_counts.json 2>/dev/null
}
