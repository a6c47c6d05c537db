#!/bin/sh
# The README's main command (`make demo`): on a fresh Debian 12 machine, installs what is missing,
# builds, fetches a real English corpus, preps it into shards, pretrains the tiny preset for about
# ten minutes on the machine's cores, evaluates, plots, and prints where everything is.
#
# Environment knobs (all optional): DEMO_DIR (default runs/demo), DEMO_MINUTES (default 10),
# DEMO_STEPS (overrides the time budget with a fixed step count), THREADS (default: all cores),
# DEMO_FLAGS (extra `deberta pretrain` flags; default none: the preset's 16 x 128-token sequences with
# the default curriculum, 32-token sequences for the first half of the steps; docs/HISTORY.md part 8, docs/RECIPE.md).
set -e
cd "$(dirname "$0")/.."
. scripts/lib-demo.sh
DEMO_FLAGS=${DEMO_FLAGS-}

demo_build

echo "== corpus"
sh scripts/fetch-corpus.sh data/corpus

echo "== prep (the fine-tuning tasks' dev/test texts held out of the train split)"
sh scripts/demo-prep.sh "$DEMO_DIR"

echo "== pretrain (tiny preset${DEMO_FLAGS:+ $DEMO_FLAGS}, ${DEMO_STEPS:-about $DEMO_MINUTES minutes})"
# an earlier demo run in DEMO_DIR is continued if unfinished (a finished run just re-evaluates)
demo_pretrain "$DEMO_DIR" $DEMO_FLAGS

echo "== eval"
./build/deberta eval "$DEMO_DIR/checkpoint.h5" --data data/shards | tee "$DEMO_DIR/eval.txt"

echo "== plot"
sh scripts/plot-run.sh "$DEMO_DIR" "$DEMO_DIR/curves.png" || echo "plot skipped (gnuplot missing?)"

echo
echo "checkpoint: $DEMO_DIR/checkpoint.h5"
echo "metrics:    $DEMO_DIR/metrics.jsonl"
echo "eval:       $DEMO_DIR/eval.txt"
echo "plot:       $DEMO_DIR/curves.png"
