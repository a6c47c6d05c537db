#!/bin/sh
# ablate.sh — grids of `deberta pretrain` runs (attention terms, EMD, embedding sharing, position
# buckets, λ, seeds), their summary tables and plots, the embedding cosine analysis, and fine-tuning
# of every run's checkpoint on the Brown tasks for a downstream column (through scripts/finetune_table.py).
# The work is done by scripts/ablate.py (Python standard library + numpy + h5py, run with
# /usr/bin/python3); this wrapper only finds the interpreter.  Usage: scripts/ablate.sh --help,
# docs/ABLATIONS.md.
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "error: ablate: python3 not found (apt-get install python3 python3-numpy python3-h5py)" >&2; exit 1; }
exec "$PY" "$(dirname "$0")/ablate.py" "$@"
