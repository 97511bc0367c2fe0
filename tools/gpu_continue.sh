#!/usr/bin/env bash
# One continued-training cycle on a lent GPU, in one call of under 10 minutes (issue 39, cycle 21): run from the
# repository root with the cleaned data pack in runs/pack (tools/pack_gpu_cycle.sh makes it and says how to carry
# and unpack it). Unlike tools/gpu_cycle.sh there is no back-translation (cycle 19's A/B: it did not pay) and no
# pause: two runs go on from the bundled weights at once, for the whole call, as an A/B of the project's lecture
# corpus (transformer/training/corpora/lecture-ml.train.tsv, written after cycle 19):
#     c21      the mix + the generated pairs + the lecture corpus @LECTURE_W
#     c21ctl   the same without the lecture corpus (the control)
# Both stop at DEADLINE seconds after the start (SIGINT: the trainer saves its state) if their MINUTES of training
# have not ended by then; each comes back in fp16 in two parts of at most 15 MiB, with one archive of every log.
set -u
shopt -s nullglob
OUT=${OUT:-runs/gpu-out}
P=${PACK:-runs/pack}
MIN=${MINUTES:-5.5}; THREADS=${THREADS:-4}; DEADLINE=${DEADLINE:-520}
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
LECTURE=("$P/corpora-lecture-ml.train.tsv.gz@${LECTURE_W:-40}")
[ -f "${LECTURE[0]%@*}" ] || { say "no lecture corpus in $P"; exit 1; }
AUG=(runs/gpu/augmented.tsv.gz)
COMMON=(--init-from checkpoints/en-fr-base --dev "${DEV[@]}" --max-tokens 12000 --eval-every 400
        --bleu-sentences ${BLEU_SENTENCES:-300} --save-every-min 1 --average-last 3 --threads "$THREADS"
        --label-smoothing 0.1 --clip 1.0 --lr ${LR:-2e-4} --warmup 200 --max-steps 100000 --max-minutes "$MIN")
until_deadline() {   # SIGINT at the deadline (the trainer saves its state), SIGKILL 20 s later if it is still there
  local left=$(( DEADLINE - ($(date +%s) - t0) )); [ "$left" -ge 1 ] || left=1
  timeout -k 20 --signal=INT "$left" python3 -m transformer.cli.train "$@"; }

say "generated pairs"
python3 - "$P/tatoeba-eng-fra-train.tsv.gz" "$P/multi30k-train.tsv.gz" "$P/corpora-classroom.train.tsv.gz" \
    > runs/gpu/augment.log 2>&1 <<'PY'
import dataclasses, gzip, json, sys
from transformer.training.augment import AugmentConfig, augment
from transformer.training.run import load_corpora
cfg = AugmentConfig(name_copies=8, number_copies=8, templates=100000, concatenations=20000,
                    concat_sizes=(2, 3, 4, 5, 6, 6), coreference=20000, large_numbers=20000)
pairs = augment(load_corpora(sys.argv[1:])[0], 21, cfg, print)
with gzip.open("runs/gpu/augmented.tsv.gz", "wt", encoding="utf-8") as f:
    f.writelines(f"{en}\t{fr}\n" for en, fr in pairs)
with open("runs/gpu/augmented.json", "w", encoding="utf-8") as f:       # how it was made: run_config.json's "generated"
    json.dump({"made_by": "transformer.training.augment.augment", "from": sys.argv[1:], "seed": 21,
               "config": dataclasses.asdict(cfg)}, f)
PY
[ -f runs/gpu/augmented.tsv.gz ] || { say "the generated pairs failed:"; cat runs/gpu/augment.log; exit 1; }
say "$(head -1 runs/gpu/augment.log)"

until_deadline --train "${MIX[@]}" "${LECTURE[@]}" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/c21 --seed 21 \
    > runs/gpu/c21.log 2>&1 &
A=$!
until_deadline --train "${MIX[@]}" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/c21ctl --seed 21 > runs/gpu/c21ctl.log 2>&1 &
B=$!
pack_logs() {
  tar czf "$OUT/logs.tar.gz" runs/gpu/*.log runs/gpu/*/log.csv runs/gpu/*/run_config.json \
      runs/gpu/*/best/config.json runs/gpu/*/piece_counts.json 2>/dev/null
}
bring_back() {   # bring_back NAME FOLDER: the checkpoint in fp16, split in parts of 15 MiB, into $OUT
  rm -rf runs/gpu/$1-fp16 && python3 -m transformer.cli.export "$2" runs/gpu/$1-fp16 > /dev/null || return
  rm -f "$OUT/$1".safetensors.part* && split -b 15M -d runs/gpu/$1-fp16/model.safetensors "$OUT/$1.safetensors.part"
}
wait $A; say "c21 done"; wait $B; say "c21ctl done"
for run in c21 c21ctl; do      # the best on dev, else the last saved (a run stopped at the deadline)
  for src in runs/gpu/$run/best runs/gpu/$run/last; do
    [ -f $src/model.safetensors ] && { bring_back $run $src; break; }
  done
done
pack_logs
grep -h "done:\|average of\|^data:\|initialised" runs/gpu/*.log
for run in c21 c21ctl; do echo "$run:"; grep -h "^step" runs/gpu/$run.log | tail -4 | cut -c1-400; done
say "end"; ls -la "$OUT"
