#!/bin/sh
# `make demo-finetune`: a brief part-of-speech fine-tune of `make demo`'s tiny encoder beside the same
# model from random initialisation with the same budget, both printed next to the baselines.
#
# The pretrained encoder is `make demo`'s checkpoint (DEMO_DIR/checkpoint.h5) when it exists; without
# it this demo pretrains its own tiny model with the demo's recipe (the tiny preset's defaults: 16 x
# 128-token sequences after a first half of the steps at 64 x 32; about DEMO_MINUTES minutes) in
# FT_DIR/pretrain.  Both are pretrained on data/shards, which
# scripts/demo-prep.sh makes with the tasks' dev/test texts held out of the train split.  The
# fine-tuning is scripts/finetune-table.sh's: pos task files of 64 tokens (data/tasks/pos-T64), FT_STEPS
# steps of 32 examples, lr 2e-4 (10 % warm-up, linear decay), dev every 100 steps, the best dev model
# tested; runs in FT_DIR/<model>/pos-seed<s>/, and a re-run skips the finished ones.
#
# Environment knobs (all optional): DEMO_DIR (default runs/demo), FT_DIR (default runs/demo-ft),
# DEMO_MINUTES (default 10) or DEMO_STEPS (a fixed step count) for the fallback pretraining,
# FT_STEPS (fine-tuning steps, default 300), FT_SEED (default 1; several, e.g. "1 2 3", give mean ± sd),
# THREADS (default: all cores).
set -e
cd "$(dirname "$0")/.."
. scripts/lib-demo.sh
FT_DIR=${FT_DIR:-runs/demo-ft}
FT_STEPS=${FT_STEPS:-300}
FT_SEED=${FT_SEED:-1}
BIN=./build/deberta

demo_build

echo "== corpus"
sh scripts/fetch-corpus.sh data/corpus

echo "== prep (the tasks' dev/test texts held out of the train split)"
sh scripts/demo-prep.sh "$DEMO_DIR" "$FT_DIR/pretrain"

if [ -f "$DEMO_DIR/checkpoint.h5" ]; then
    echo "== pretrained encoder: $DEMO_DIR/checkpoint.h5 (make demo's)"
    MODEL="demo=$DEMO_DIR/checkpoint.h5"
else
    echo "== pretrain (no $DEMO_DIR/checkpoint.h5: tiny preset, ${DEMO_STEPS:-about $DEMO_MINUTES minutes})"
    demo_pretrain "$FT_DIR/pretrain"
    MODEL="pretrained=$FT_DIR/pretrain/checkpoint.h5"
fi

echo "== finetune pos (scratch and pretrained, $FT_STEPS steps, seed $FT_SEED)"
FT_TASKS=pos FT_SEEDS="$FT_SEED" FT_STEPS=$FT_STEPS FT_BATCH=32 FT_LR=2e-4 FT_SEQ_LEN=64 FT_EVAL_EVERY=100 FT_PRESET=tiny \
    FT_TABLE_DIR="$FT_DIR" SHARDS=data/shards BROWN=data/corpus/brown-tagged FT_TASK_DATA=data/tasks THREADS=$THREADS \
    FT_PARALLEL=1 DEBERTA=$BIN sh scripts/finetune-table.sh "$MODEL"
