#!/bin/sh
# The shards of `make demo` and `make demo-finetune`: data/shards (8,192-token vocabulary, 2 % val) made
# from data/corpus with the Brown tasks' dev/test texts held out of the train split (deberta prep
# --holdout-brown), so that the demo's checkpoint can be fine-tuned and tested on those texts.
# data/shards/holdout-brown.txt records the hold-out (docs/FORMATS.md); shards without it (an earlier
# demo's) are moved to data/shards-no-holdout and made again.  A run pretrained on other shards (its
# config.txt's tokenizer_hash is not data/shards') cannot continue on them: each RUNDIR given that holds
# such a run is moved to RUNDIR-no-holdout, with a message, so that the demo starts it again.  Beside the
# shards it makes data/shards/rtd-fixed.h5 (scripts/rtd_fixed.py) and data/shards/probe-pos/ (the POS
# task files of the probe), which every evaluation scores (train/eval/yardstick.h).
# Usage (by demo.sh and demo-finetune.sh, after the build and the corpus):  sh scripts/demo-prep.sh [RUNDIR...]
set -e
cd "$(dirname "$0")/.."
S=data/shards
aside() {  # a free name: $1-no-holdout, $1-no-holdout-2, ...
    n=$1-no-holdout k=2
    while [ -e "$n" ]; do n=$1-no-holdout-$k; k=$((k + 1)); done
    echo "$n"
}
if [ ! -f $S/holdout-brown.txt ]; then
    if [ -f $S/train-00000.h5 ]; then
        to=$(aside $S)
        echo "note: $S has no holdout-brown.txt (prepped without --holdout-brown, or before prep recorded it), so its train split may hold the dev/test texts of the fine-tuning tasks; moving it to $to and prepping again"
        mv $S "$to"
    fi
    ./build/deberta prep --input data/corpus --out $S --vocab-size 8192 --val-fraction 0.02 --holdout-brown data/corpus/brown-tagged
fi
# the yardsticks every evaluation scores when they are beside the shards (train/eval/yardstick.h): the fixed
# corruption of the val split (docs/FORMATS.md) and the POS probe's task files
if [ ! -f $S/rtd-fixed.h5 ]; then
    /usr/bin/python3 scripts/rtd_fixed.py $S || echo "note: scripts/rtd_fixed.py failed: evaluations go without the fixed-corruption figures"
fi
if [ ! -f $S/probe-pos/dev.h5 ]; then
    ./build/deberta prep-task --task pos --brown data/corpus/brown-tagged --shards $S --out $S/probe-pos --seq-len 128 >/dev/null
fi
hash=$(sed -n 's/^tokenizer_hash = //p' $S/holdout-brown.txt)
for run in "$@"; do
    [ -f "$run/checkpoint.h5" ] || continue
    h=$(sed -n 's/^tokenizer_hash = //p' "$run/config.txt" 2>/dev/null || true)
    if [ "$h" != "$hash" ]; then
        to=$(aside "$run")
        echo "note: $run was pretrained on other shards (tokenizer ${h:-not recorded}; $S has $hash) and cannot continue on $S; moving it to $to"
        mv "$run" "$to"
    fi
done
