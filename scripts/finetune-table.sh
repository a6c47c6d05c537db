#!/bin/sh
# finetune-table.sh — POS and genre test accuracy of pretraining checkpoints vs scratch, several seeds
# each, as Markdown tables:  sh scripts/finetune-table.sh [--table-only] demo=runs/demo/checkpoint.h5 ...
# The work is done by scripts/finetune_table.py (Python standard library, run with /usr/bin/python3);
# this wrapper only finds the interpreter.  Budgets and paths are environment variables (FT_STEPS,
# FT_BATCH, FT_LR, FT_SEQ_LEN, THREADS, ...): scripts/finetune-table.sh --help, README "Fine-tuning".
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "error: finetune-table: python3 not found (apt-get install python3)" >&2; exit 1; }
exec "$PY" "$(dirname "$0")/finetune_table.py" "$@"
