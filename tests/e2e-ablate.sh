#!/bin/sh
# End-to-end ablation driver (scripts/ablate.sh) on the test preset and a small generated corpus:
#   a 2-variant x 1-seed grid (GDES vs ES) of a few steps -> run dirs, tables (Markdown, CSV), plots;
#   re-running the grid skips the finished runs; an unfinished run is resumed to its step count;
#   a run dir made with other flags is refused; the cosine command reads the checkpoints.
# Float build only (the double build would repeat the same logic).
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-ablate: float build only (the double run has nothing of its own to check here)"; exit 77; fi
PY=/usr/bin/python3
if ! "$PY" -c 'import numpy, h5py' 2>/dev/null; then echo "e2e-ablate: needs python3-numpy and python3-h5py"; exit 77; fi
D=$BUILD/deberta
A="sh scripts/ablate.sh"
W=$(mktemp -d /tmp/deberta-e2e-ablate.XXXXXX)
trap 'rm -rf "$W"' EXIT

e2e_corpus 11 120 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 300 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }

BASE="--preset test --max_seq_len 32 --batch 2 --steps 4 --eval-every 2 --eval-batches 1 --save-every 2 --log-every 1"
GRID="--out $W/abl --data $W/shards --deberta $D --sharing gdes,es --seeds 1 --parallel 2 --threads 1"
$A run $GRID -- $BASE > "$W/run1.log" 2>&1 || { cat "$W/run1.log"; fail "grid run"; }
for v in gdes es-joint; do
    R=$W/abl/$v-seed1
    [ -f "$R/checkpoint.h5" ] && [ -f "$R/metrics.jsonl" ] && [ -f "$R/ablate-timing.jsonl" ] && [ -f "$R/pretrain.log" ] || fail "$R: run files missing"
    [ "$(grep -c '"kind":"eval"' "$R/metrics.jsonl")" = 2 ] || fail "$R: expected 2 eval lines"
done
grep -q '^training_mode = joint' "$W/abl/es-joint-seed1/config.txt" || fail "es did not run in joint mode"
grep -q '^training_mode = decoupled' "$W/abl/gdes-seed1/config.txt" || fail "gdes did not run in decoupled mode"
grep -q 'es runs with --training_mode joint' "$W/run1.log" || fail "the driver did not say that es runs in joint mode"
ok "2-variant grid: run dirs with checkpoint, metrics, timing; es forced to joint mode and said so"

$A run $GRID -- $BASE > "$W/run2.log" 2>&1 || { cat "$W/run2.log"; fail "grid re-run"; }
[ "$(grep -c 'finished (step 4), skipped' "$W/run2.log")" = 2 ] || { cat "$W/run2.log"; fail "re-run did not skip both finished runs"; }
[ "$(wc -l < "$W/abl/gdes-seed1/ablate-timing.jsonl")" = 1 ] || fail "re-run started a finished run again"
ok "re-running the grid skips finished runs"

# an unfinished run (stopped at step 2) is resumed to step 4 with --resume, and matches the uninterrupted one
mkdir -p "$W/abl2"
$D pretrain --data "$W/shards" --out "$W/abl2/gdes-seed1" --threads 1 $BASE --seed 1 --embedding_sharing gdes --stop-after 2 > "$W/stop.log" 2>&1 || { cat "$W/stop.log"; fail "partial run"; }
$A run --out "$W/abl2" --data "$W/shards" --deberta $D --sharing gdes --seeds 1 --threads 1 -- $BASE > "$W/run3.log" 2>&1 || { cat "$W/run3.log"; fail "grid with an unfinished run"; }
grep -q '"invocation": "resume", "utc_start": "[^"]*", "start_step": 2, "end_step": 4' "$W/abl2/gdes-seed1/ablate-timing.jsonl" || { cat "$W/abl2/gdes-seed1/ablate-timing.jsonl"; fail "unfinished run not resumed from step 2"; }
cmp -s "$W/abl/gdes-seed1/metrics.jsonl" "$W/abl2/gdes-seed1/metrics.jsonl" || fail "resumed run's metrics differ from the uninterrupted run"
ok "an unfinished run is resumed (deberta pretrain --resume) and equals the uninterrupted run"

# same OUTDIR, other flags for an existing run dir -> refused
$A run --out "$W/abl" --data "$W/shards" --deberta $D --sharing gdes --seeds 1 --threads 1 -- $BASE --lr 1e-3 > "$W/run4.log" 2>&1
[ $? -ne 0 ] && grep -q 'made with other flags' "$W/run4.log" || { cat "$W/run4.log"; fail "a run dir with other flags was not refused"; }
ok "a run directory made with other flags is refused"

$A summary "$W/abl" --data "$W/shards" --min-count 1 > "$W/sum.log" 2>&1 || { cat "$W/sum.log"; fail "summary"; }
for f in summary.md summary.csv runs.csv curves.png curves-gdes.png curves-es-joint.png; do [ -s "$W/abl/$f" ] || fail "summary: $f missing"; done
grep -q '^| gdes | 1 | [0-9.]* | [0-9.]* |' "$W/abl/summary.md" || { cat "$W/abl/summary.md"; fail "summary.md has no gdes row with numbers"; }
grep -q '^| es-joint | 1 |' "$W/abl/summary.md" || fail "summary.md has no es-joint row"
grep -q 'tokens per run 256 ' "$W/abl/summary.md" || { head -3 "$W/abl/summary.md"; fail "summary.md does not state the token budget (4 x 2 x 32 = 256)"; }
"$PY" - "$W/abl/summary.csv" <<'EOF' || fail "summary.csv content"
import csv, sys
rows = list(csv.DictReader(open(sys.argv[1])))
assert [r["variant"] for r in rows] == ["gdes", "es-joint"], rows
for r in rows:
    assert r["n_finished"] == "1"
    for k in ("mlm_loss_mean", "mlm_acc_mean", "rtd_loss_mean", "rtd_acc_mean", "rtd_auc_mean", "tokens_per_s_mean", "cos_G_mean", "cos_D_mean"):
        float(r[k])
    assert int(r["params"]) > 0
es = rows[1]
assert es["cos_G_mean"] == es["cos_D_mean"], "ES: one shared table, so G and D must have the same cosine"
EOF
ok "summary: Markdown and CSV tables (token budget, mean/sd columns, params, cosine) and PNG plots"

$A summary "$W/abl" --name pair --baseline gdes --no-plots > "$W/pair.log" 2>&1 || { cat "$W/pair.log"; fail "summary --baseline"; }
grep -q '^| es-joint | 1 | [-+]' "$W/abl/pair-summary.md" || { cat "$W/abl/pair-summary.md"; fail "no paired-difference row for es-joint"; }
grep -q '^es-joint,gdes,1,' "$W/abl/pair-paired.csv" || { cat "$W/abl/pair-paired.csv"; fail "pair-paired.csv"; }
ok "summary --baseline: paired per-seed differences (Markdown and CSV)"

$A cosine "$W/abl/gdes-seed1/checkpoint.h5" "$W/abl/es-joint-seed1/checkpoint.h5" > "$W/cos.log" 2>&1 || { cat "$W/cos.log"; fail "cosine"; }
grep -q 'gdes  G [-0-9.]*  D [-0-9.]*' "$W/cos.log" || { cat "$W/cos.log"; fail "cosine output"; }
# the closed form equals the explicit mean over all pairs
"$PY" - "$W/abl/gdes-seed1/checkpoint.h5" <<'EOF' || fail "cosine closed form vs explicit pairs"
import sys, numpy as np
sys.path.insert(0, "scripts")
import ablate
sharing, G, D = ablate.embedding_tables(sys.argv[1])
ids = np.arange(5, G.shape[0])
for E in (G, D):
    U = E[ids] / np.linalg.norm(E[ids], axis=1, keepdims=True)
    C = U @ U.T
    n = len(ids)
    explicit = (C.sum() - np.trace(C)) / (n * (n - 1))
    assert abs(explicit - ablate.mean_pairwise_cos(E, ids)) < 1e-12, (explicit, ablate.mean_pairwise_cos(E, ids))
EOF
ok "cosine command reads G and D tables from checkpoints; closed form == explicit mean over all pairs"
