#!/bin/sh
# score-run.sh BIN RUNDIR...: `BIN eval --data data/shards` (16 live batches, the fixed corruption and
# the POS probe: train/eval/yardstick.h) of each kept checkpoint-STEP.h5 (pretrain --keep-every) at steps
# 200, 400, ... of each RUNDIR, for runs made before the in-run yardsticks; a finished score is kept.
# Output: RUNDIR/score-STEP.txt (read by scripts/recipe_report.py).  SLOT (default /tmp/train.slot):
# the lock file the evaluations take turns on with training runs; THREADS (default 2).
set -u
BIN=$1; shift
SLOT=${SLOT:-/tmp/train.slot}
THREADS=${THREADS:-2}
cd "$(dirname "$0")/.."
for run in "$@"; do
    for s in $(seq 200 200 100000); do
        c=$(printf "%s/checkpoint-%07d.h5" "$run" $s)
        [ -f "$c" ] || break
        [ -s "$run/score-$s.txt" ] && continue
        flock "$SLOT" "$BIN" eval "$c" --data data/shards --batches 16 --threads "$THREADS" > "$run/score-$s.tmp" 2>&1 && mv "$run/score-$s.tmp" "$run/score-$s.txt"
    done
done
