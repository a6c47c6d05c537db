#!/bin/sh
# `make demo-finetune`: a brief part-of-speech fine-tune of a pretrained tiny encoder beside the same
# model from random initialisation with the same budget, each printed next to the baselines.
#
# The test texts of the task must not be in the pretraining data, and `make demo`'s shards
# (data/shards) were prepped without the hold-out, so this demo preps its own shards with
# --holdout-brown (data/shards-heldout) and pretrains its own tiny model on them with the demo's
# recipe (32-token sequences x 64, about DEMO_MINUTES minutes), then fine-tunes it and a scratch model.
#
# Environment knobs (all optional): FT_DIR (default runs/demo-ft), DEMO_MINUTES (default 10),
# DEMO_STEPS (a fixed pretraining step count instead), FT_STEPS (fine-tuning steps, default 300),
# FT_SEED (default 1), THREADS (default: all cores).
set -e
cd "$(dirname "$0")/.."
FT_DIR=${FT_DIR:-runs/demo-ft}
DEMO_MINUTES=${DEMO_MINUTES:-10}
FT_STEPS=${FT_STEPS:-300}
FT_SEED=${FT_SEED:-1}
THREADS=${THREADS:-$(nproc)}
BIN=./build/deberta

sh scripts/install-deps.sh
make -s -j"$THREADS" build/deberta

echo "== corpus"
sh scripts/fetch-corpus.sh data/corpus

echo "== prep (the tasks' dev/test texts held out of the train split)"
if [ ! -f data/shards-heldout/train-00000.h5 ]; then
    $BIN prep --input data/corpus --out data/shards-heldout --vocab-size 8192 --val-fraction 0.02 \
        --holdout-brown data/corpus/brown-tagged
fi
$BIN prep-task --task pos --brown data/corpus/brown-tagged --shards data/shards-heldout --out data/tasks-heldout/pos --seq-len 64

echo "== pretrain (tiny preset, 32-token sequences x 64, ${DEMO_STEPS:-about $DEMO_MINUTES minutes})"
if [ -n "$DEMO_STEPS" ]; then BUDGET="--steps $DEMO_STEPS"; else BUDGET="--minutes $DEMO_MINUTES"; fi
if [ -f "$FT_DIR/pretrain/checkpoint.h5" ]; then
    $BIN pretrain --resume "$FT_DIR/pretrain" --data data/shards-heldout --threads "$THREADS"
else
    $BIN pretrain --preset tiny --data data/shards-heldout --out "$FT_DIR/pretrain" --threads "$THREADS" \
        --max_seq_len 32 --batch 64 $BUDGET
fi

FT="--task pos --data data/tasks-heldout/pos --steps $FT_STEPS --batch 32 --lr 2e-4 --eval-every 100 --seed $FT_SEED --threads $THREADS"
for init in pretrained scratch; do
    out="$FT_DIR/pos-$init-seed$FT_SEED"
    echo "== finetune pos ($init, $FT_STEPS steps)"
    if [ -f "$out/results.txt" ]; then continue; fi
    if [ -f "$out/checkpoint.h5" ]; then
        $BIN finetune --resume "$out" --threads "$THREADS" >/dev/null
    elif [ $init = pretrained ]; then
        $BIN finetune --init "$FT_DIR/pretrain/checkpoint.h5" $FT --out "$out" >/dev/null
    else
        $BIN finetune --init scratch --preset tiny $FT --out "$out" >/dev/null
    fi
done
echo
echo "pretrained: $(cat "$FT_DIR/pos-pretrained-seed$FT_SEED/results.txt")"
echo "scratch:    $(cat "$FT_DIR/pos-scratch-seed$FT_SEED/results.txt")"
