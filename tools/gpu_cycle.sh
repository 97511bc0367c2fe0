#!/usr/bin/env bash
# One training cycle on a lent GPU, in one call of under 10 minutes (issue 39): run from the repository root
# with the cleaned data pack in runs/pack (tools/pack_gpu_cycle.sh makes it here, with its dev sets, and packs it
# for the device tool's carry; it says how to unpack it there).
#
#   phase 1 (all at once, on one GPU):
#     fren   French→English from the bundled weights (--reverse), the model of back-translation
#     g1     English→French from the bundled model on the cleaned mix; pauses after P1 minutes (state saved)
#     g1raw  the same on the unfiltered mix (cleaned + runs/pack/filtered/*): what the filters did, on dev
#   then   fren back-translates runs/pack/mono-*.txt.gz (tagged pairs)
#   phase 2 (both at once): g2bt and g2 go on from g1's state (weights, optimizer, schedule) for P2 minutes,
#           with and without the tagged back-translations: what they add, on dev
#
# Everything comes back in $OUT (at most 8 files of 16 MiB): the two phase-2 models split in halves, the
# back-translated pairs, and one archive of every log. Times are training minutes (evaluation excluded).
set -u
shopt -s nullglob
OUT=${OUT:-runs/gpu-out}
P=${PACK:-runs/pack}
F=${FREN_MIN:-2.0}; P1=${P1_MIN:-3.0}; P2=${P2_MIN:-2.5}; THREADS=${THREADS:-4}
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
# the project's lecture corpus (written after cycle 19 ran; not in its mix): the field's words, drilled
[ -f "$P/corpora-lecture-ml.train.tsv.gz" ] && MIX+=("$P/corpora-lecture-ml.train.tsv.gz@${LECTURE_W:-40}")
RAW=("${MIX[@]}")          # the control: every filtered pair back, with its corpus's weight
for spec in "${MIX[@]}"; do
  f=${spec%@*}; w=${spec#"$f"}; g="$P/filtered/$(basename "$f")"
  [ -f "$g" ] && RAW+=("$g$w")
done
AUG_SOURCES=("$P/tatoeba-eng-fra-train.tsv.gz" "$P/multi30k-train.tsv.gz" "$P/corpora-classroom.train.tsv.gz")
AUG=(runs/gpu/augmented.tsv.gz)     # the generated pairs (training/augment.py), made once below, weight 1
COMMON=(--dev "${DEV[@]}" --max-tokens 12000 --eval-every 400 --bleu-sentences ${BLEU_SENTENCES:-300} --save-every-min 1
        --average-last 3 --threads "$THREADS" --label-smoothing 0.1 --clip 1.0)
DEADLINE=${DEADLINE:-540}          # seconds after the start by which phase 2 must have stopped
train() { python3 -m transformer.cli.train "$@"; }
until_deadline() {   # SIGINT at the deadline (the trainer saves its state), SIGKILL 20 s later if it is still there
  local left=$(( DEADLINE - ($(date +%s) - t0) )); [ "$left" -ge 1 ] || left=1
  timeout -k 20 --signal=INT "$left" python3 -m transformer.cli.train "$@"; }

say "phase 1"
python3 - "${AUG_SOURCES[@]}" > runs/gpu/augment.log 2>&1 <<'PY' &
import dataclasses, gzip, json, sys
from transformer.training.augment import AugmentConfig, augment
from transformer.training.run import load_corpora
cfg = AugmentConfig(name_copies=8, number_copies=8, templates=100000, concatenations=20000,
                    concat_sizes=(2, 3, 4, 5, 6, 6), coreference=20000, large_numbers=20000)
pairs = augment(load_corpora(sys.argv[1:])[0], 19, cfg, print)
with gzip.open("runs/gpu/augmented.tsv.gz", "wt", encoding="utf-8") as f:
    f.writelines(f"{en}\t{fr}\n" for en, fr in pairs)
with open("runs/gpu/augmented.json", "w", encoding="utf-8") as f:       # how it was made: run_config.json's "generated"
    json.dump({"made_by": "transformer.training.augment.augment", "from": sys.argv[1:], "seed": 19,
               "config": dataclasses.asdict(cfg)}, f)
print(cfg)
PY
AUGMENT=$!
train --reverse --init-from checkpoints/en-fr-base --train "${MIX[@]}" "${COMMON[@]}" --out runs/gpu/fren \
      --lr 5e-4 --warmup 200 --max-steps 100000 --max-minutes "$F" --seed 21 > runs/gpu/fren.log 2>&1 &
FREN=$!
wait $AUGMENT; say "augmented: $(head -1 runs/gpu/augment.log)"
[ -f runs/gpu/augmented.tsv.gz ] || { say "the generated pairs failed:"; cat runs/gpu/augment.log; exit 1; }
train --init-from checkpoints/en-fr-base --train "${MIX[@]}" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/g1 \
      --lr 2e-4 --warmup 200 --max-steps 100000 --max-minutes "$(python3 -c "print($P1 + $P2)")" \
      --session-minutes "$P1" --seed 19 > runs/gpu/g1.log 2>&1 &
G1=$!
train --init-from checkpoints/en-fr-base --train "${RAW[@]}" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/g1raw \
      --lr 2e-4 --warmup 200 --max-steps 100000 --max-minutes "$(python3 -c "print($P1 + $P2)")" \
      --session-minutes "$P1" --seed 19 > runs/gpu/g1raw.log 2>&1 &
G1RAW=$!
wait $FREN; say "fren done: $(grep -h 'done:' runs/gpu/fren.log)"
python3 -m transformer.cli.backtranslate --checkpoint runs/gpu/fren/best --mono "$P"/mono-sentences.txt.gz \
        --out runs/gpu/bt.tsv.gz > runs/gpu/bt.log 2>&1
say "back-translation: $(tail -1 runs/gpu/bt.log)"
cp runs/gpu/bt.tsv.gz "$OUT/bt.tsv.gz"
wait $G1; say "g1 paused: $(grep -h 'step' runs/gpu/g1.log | grep -v it/s | tail -2)"
bring_back() {   # bring_back NAME FOLDER: the checkpoint in fp16, split in parts of 15 MiB, into $OUT
  rm -rf runs/gpu/$1-fp16 && python3 -m transformer.cli.export "$2" runs/gpu/$1-fp16 > /dev/null || return
  rm -f "$OUT/$1".safetensors.part* && split -b 15M -d runs/gpu/$1-fp16/model.safetensors "$OUT/$1.safetensors.part"
}
bring_back g2 runs/gpu/g1/last       # phase 1's model, in case phase 2 never ends

say "phase 2"
until_deadline --continue-from runs/gpu/g1 --train "${MIX[@]}" runs/gpu/bt.tsv.gz "${AUG[@]}" "${COMMON[@]}" \
      --out runs/gpu/g2bt --lr 2e-4 --warmup 200 --max-steps 100000 --max-minutes "$(python3 -c "print($P1 + $P2)")" \
      --seed 20 > runs/gpu/g2bt.log 2>&1 &
G2BT=$!
until_deadline --continue-from runs/gpu/g1 --train "${MIX[@]}" "${AUG[@]}" "${COMMON[@]}" \
      --out runs/gpu/g2 --lr 2e-4 --warmup 200 --max-steps 100000 --max-minutes "$(python3 -c "print($P1 + $P2)")" \
      --seed 20 > runs/gpu/g2.log 2>&1 &
G2=$!
wait $G1RAW; say "g1raw paused"
pack_logs() {
  tar czf "$OUT/logs.tar.gz" runs/gpu/*.log runs/gpu/*/log.csv runs/gpu/*/run_config.json \
      runs/gpu/*/best/config.json runs/gpu/g2*/piece_counts.json 2>/dev/null
}
pack_logs
wait $G2BT; say "g2bt done"
wait $G2; say "g2 done"
for run in g2bt g2; do      # the best on dev, else the last saved (a run stopped at the deadline)
  for src in runs/gpu/$run/best runs/gpu/$run/last; do
    [ -f $src/model.safetensors ] && { bring_back $run $src; break; }
  done
done
pack_logs
grep -h "done:\|average of\|continuing\|paused at\|^data:" runs/gpu/*.log
say "end"; ls -la "$OUT"
