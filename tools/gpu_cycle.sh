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
source tools/gpu_common.sh
F=${FREN_MIN:-2.0}; P1=${P1_MIN:-3.0}; P2=${P2_MIN:-2.5}
[ -f "${LECTURE%@*}" ] && MIX+=("$LECTURE")     # the lecture corpus, when the pack holds it
RAW=("${MIX[@]}")          # the control: every filtered pair back, with its corpus's weight
for spec in "${MIX[@]}"; do
  f=${spec%@*}; w=${spec#"$f"}; g="$P/filtered/$(basename "$f")"
  [ -f "$g" ] && RAW+=("$g$w")
done
DEADLINE=${DEADLINE:-540}          # seconds after the start by which phase 2 must have stopped
train() { python3 -m transformer.cli.train "$@"; }

say "phase 1"
generate_pairs 19 &
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
