#!/bin/sh
# The fine-tuning metrics (train/eval/task_metrics.c) against an independent computation: the cmocka suite
# writes 100 seeded random cases (classification with 2-5 labels, regression with and without ties,
# BIO entities over several sequences with stray I- tags) and its C results; scripts/check_metrics.py
# recomputes each value with plain Python formulas (conlleval's chunk state machine for entities).
# Exit 0 pass, 77 skipped (no python3), 1 fail.
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
PY=${REF_PYTHON:-/usr/bin/python3}
[ -x "$PY" ] || { echo "SKIPPED: $PY not found"; exit 77; }
T=$BUILD/tests/test_task_metrics
[ -x "$T" ] || { echo "FAIL: $T is not built"; exit 1; }
e2e_tmpdir TMP deberta-task-metrics
"$T" --dump "$TMP/cases.jsonl" || { echo "FAIL: $T --dump"; exit 1; }
[ "$(wc -l < "$TMP/cases.jsonl")" -eq 100 ] || { echo "FAIL: expected 100 cases"; exit 1; }
"$PY" scripts/check_metrics.py "$TMP/cases.jsonl" || { echo "FAIL: the C metrics differ from scripts/check_metrics.py"; exit 1; }
echo "ok: task metrics agree with scripts/check_metrics.py"
