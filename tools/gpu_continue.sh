#!/usr/bin/env bash
# One continued-training cycle on a lent GPU, in one call of under 10 minutes (issue 39, cycle 21): run from the
# repository root with the cleaned data pack in runs/pack (tools/pack_gpu_cycle.sh makes it and says how to carry
# and unpack it). Unlike tools/gpu_cycle.sh there is no back-translation (cycle 19's A/B: it did not pay) and no
# pause: two runs go on from the bundled weights at once, for the whole call, as an A/B of the project's lecture
# corpus (transformer/training/corpora/lecture-ml.train.tsv, written after cycle 19):
#     c21      the mix + the generated pairs + the lecture corpus @LECTURE_W
#     c21ctl   the same without the lecture corpus (the control)
# Both fit their schedule to end, checkpoint averaging included, 30 s before DEADLINE seconds after the start
# (--end-by; a SIGINT at the deadline is the safety net: the trainer saves its state); each comes back in fp16 in
# two parts of at most 15 MiB with its schedule.json, and one archive of every log.
source tools/gpu_common.sh
MIN=${MINUTES:-5.5}; DEADLINE=${DEADLINE:-520}
[ -f "${LECTURE%@*}" ] || { say "no lecture corpus in $P"; exit 1; }
# From the bundled weights with a fresh warm-up, or, with CONTINUE_FROM=FOLDER (a checkpoint brought back with
# its schedule.json, unpacked into the tree), on with that schedule: Adam's moments rebuilt from 200 batches
# (MINUTES is then this call's share, added to that checkpoint's training minutes). A checkpoint comes
# back as NAME.safetensors.part* and NAME.schedule.json; to go on from it, in a folder of the tree:
#   cat NAME.safetensors.part* > F/model.safetensors; cp NAME.schedule.json F/schedule.json;
#   cp checkpoints/en-fr-base/{config.json,tokenizer.model} F/        (then CONTINUE_FROM=F)
if [ -n "${CONTINUE_FROM:-}" ]; then
  # the schedule's total: the checkpoint's own training minutes and this call's MINUTES (5.5 by default)
  MIN=$(python3 -c "import json, sys; print(round(json.load(open(sys.argv[1]))['train_seconds'] / 60 + $MIN, 2))" \
        "$CONTINUE_FROM/schedule.json") || { say "no $CONTINUE_FROM/schedule.json"; exit 1; }
  COMMON+=(--continue-from "$CONTINUE_FROM" --moment-steps ${MOMENT_STEPS:-200} --lr ${LR:-2e-4} --warmup 200 --max-steps 100000 --max-minutes "$MIN")
else
  COMMON+=(--init-from checkpoints/en-fr-base --lr ${LR:-2e-4} --warmup 200 --max-steps 100000 --max-minutes "$MIN")
fi
say "generated pairs"
generate_pairs 21
[ -f runs/gpu/augmented.tsv.gz ] || { say "the generated pairs failed:"; cat runs/gpu/augment.log; exit 1; }
say "$(head -1 runs/gpu/augment.log)"

until_deadline --train "${MIX[@]}" "$LECTURE" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/c21 --seed 21 \
    > runs/gpu/c21.log 2>&1 &
A=$!
until_deadline --train "${MIX[@]}" "${AUG[@]}" "${COMMON[@]}" --out runs/gpu/c21ctl --seed 21 > runs/gpu/c21ctl.log 2>&1 &
B=$!
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
