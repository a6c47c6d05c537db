#!/bin/sh
# The yardsticks end to end (train/eval/yardstick.h) on the synthetic Brown-format corpus: prep with the
# hold-out, scripts/rtd_fixed.py (twice: the same bytes; the count detector's attributes in range) and
# prep-task pos into DATA/probe-pos/; a 3-step pretraining whose evaluations write the fx_* and probe_*
# keys; deberta eval prints both beside the count detector; a corrupt fixed file is one error line
# naming it; a model of shorter sequences goes without them, with a note.  Needs /usr/bin/python3
# with h5py and numpy (else exit 77).  Exit 0 pass, anything else fail.
cd "$(dirname "$0")/.." || exit 1
. tests/lib-e2e.sh
BUILD=${BUILD:-build}
BIN=$BUILD/deberta
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built"; exit 1; }
PY=/usr/bin/python3
"$PY" -c "import h5py, numpy" 2>/dev/null || { echo "SKIPPED: $PY cannot import h5py and numpy"; exit 77; }
TMP=$(mktemp -d /tmp/deberta-e2e-yardstick-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }

C=$TMP/corpus
. tests/lib-brown.sh
make_brown_corpus "$C"
D=$TMP/data
"$BIN" prep --input "$C/brown.txt" "$C/other.txt" --out "$D" --vocab-size 400 --holdout-brown "$C/brown-tagged" >"$TMP/prep.out" 2>&1 ||
    { cat "$TMP/prep.out"; fail "prep"; }
"$PY" scripts/rtd_fixed.py "$D" --seq-len 32 --n-seq 24 --deberta "$BIN" >"$TMP/fx.out" 2>&1 || { cat "$TMP/fx.out"; fail "rtd_fixed.py"; }
cp "$D/rtd-fixed.h5" "$TMP/first.h5"
"$PY" scripts/rtd_fixed.py "$D" --seq-len 32 --n-seq 24 --deberta "$BIN" >/dev/null 2>&1 || fail "rtd_fixed.py again"
cmp -s "$D/rtd-fixed.h5" "$TMP/first.h5" || fail "rtd_fixed.py twice: the files differ"
"$PY" - "$D/rtd-fixed.h5" <<'EOF' || fail "rtd-fixed.h5's contents"
import sys, h5py, numpy as np
h = h5py.File(sys.argv[1], "r")
a = h.attrs
ids, orig, sc, rep = (h[k][:] for k in ("input_ids", "original_ids", "scored", "replaced"))
assert ids.shape == (24, 32) and a["n_seq"] == 24 and a["seq_len"] == 32, ids.shape
assert ((ids != orig) == (rep == 1)).all() and (rep <= sc).all()
assert 0 < a["n_replaced"] < a["n_scored"] == sc.sum() and a["n_replaced"] == rep.sum()
assert 0.5 < a["counter_auc"] <= 1 and 0 <= a["counter_flagged"] <= a["n_scored"], dict(a)
assert (orig[:, 0] == 1).all()  # every sequence starts with [CLS]
EOF
echo "ok   rtd_fixed.py: deterministic, consistent ($(tail -c 160 "$TMP/fx.out"))"
"$BIN" prep-task --task pos --brown "$C/brown-tagged" --shards "$D" --out "$D/probe-pos" --seq-len 32 >/dev/null 2>&1 || fail "prep-task"

# ---- in-run evaluations and deberta eval
"$BIN" pretrain --preset test --max_seq_len 32 --data "$D" --out "$TMP/run" --steps 3 --eval-every 2 --eval-batches 1 --batch 4 \
    >"$TMP/pre.out" 2>&1 || { cat "$TMP/pre.out"; fail "pretrain"; }
n=$(grep '"kind":"eval"' "$TMP/run/metrics.jsonl" | grep '"fx_auc":' | grep '"fx_counter_auc":' | grep '"probe_acc":' | grep -c '"probe_best_layer":')
[ "$n" -eq 2 ] || { cat "$TMP/run/metrics.jsonl"; fail "metrics.jsonl: $n eval lines with the fx_*/probe_* keys, expected 2"; }
grep -q "fixed AUC .* probe " "$TMP/pre.out" || { cat "$TMP/pre.out"; fail "the evaluation note has no fixed AUC / probe"; }
echo "ok   pretrain: both evaluations write fx_* and probe_* keys"
"$BIN" eval "$TMP/run/checkpoint.h5" --data "$D" --batches 1 --batch 4 >"$TMP/eval.out" 2>&1 || { cat "$TMP/eval.out"; fail "eval"; }
grep -q "^  discriminator  AUC " "$TMP/eval.out" && grep -q "^  count detector AUC " "$TMP/eval.out" && grep -q "^  last layer .* best layer" "$TMP/eval.out" ||
    { cat "$TMP/eval.out"; fail "deberta eval does not print the fixed corruption and the probe"; }
auc=$(sed -n 's/^  discriminator  AUC \([0-9.]*\) .*/\1/p' "$TMP/eval.out")
last=$(grep '"kind":"eval"' "$TMP/run/metrics.jsonl" | tail -n 1 | sed 's/.*"fx_auc":\([0-9.]*\).*/\1/')
"$PY" -c "import sys; sys.exit(0 if abs($auc - $last) < 1e-4 else 1)" || fail "deberta eval's fixed AUC $auc is not the last evaluation's $last"
if command -v gnuplot >/dev/null 2>&1; then
    sh scripts/plot-run.sh "$TMP/run" "$TMP/curves.png" >/dev/null 2>"$TMP/plot.err" && [ -s "$TMP/curves.png" ] ||
        { cat "$TMP/plot.err"; fail "plot-run.sh on a run with the fx_*/probe_* keys"; }
else
    e2e_skip_part "plot-run.sh on a run with the fx_*/probe_* keys: gnuplot not installed (apt-get install gnuplot-nox)"
fi
echo "ok   deberta eval: fixed AUC $auc (the run's last evaluation: $last), the count detector, the probe"

# ---- bad and unsuitable files
cp "$D/rtd-fixed.h5" "$TMP/good.h5"
printf 'XXXX' | dd of="$D/rtd-fixed.h5" bs=1 seek=4000 conv=notrunc 2>/dev/null
E2E_DIR=$TMP
e2e_bad "^error: .*rtd-fixed.h5" -- "$BIN" eval "$TMP/run/checkpoint.h5" --data "$D" --batches 1 --batch 4
echo "ok   corrupt rtd-fixed.h5: $(cut -c1-150 "$TMP/err")"
cp "$TMP/good.h5" "$D/rtd-fixed.h5"
"$BIN" pretrain --preset test --max_seq_len 16 --data "$D" --out "$TMP/run16" --steps 1 --eval-batches 1 --batch 4 >"$TMP/p16.out" 2>&1 ||
    { cat "$TMP/p16.out"; fail "pretrain at 16 tokens"; }
grep -q "note: .*rtd-fixed.h5: seq_len 32 is above the model's max_seq_len 16" "$TMP/p16.out" && grep -q "note: .*probe-pos/train.h5: seq_len 32" "$TMP/p16.out" ||
    { cat "$TMP/p16.out"; fail "no note for the files of longer sequences"; }
if grep -q '"fx_auc"\|"probe_acc"' "$TMP/run16/metrics.jsonl"; then fail "a 16-token run wrote fixed/probe keys"; fi
echo "ok   a model of 16 tokens goes without them, with notes"
e2e_end e2e-yardstick
