#!/bin/sh
# Fine-tuning end to end on a small synthetic tagged corpus in the Brown format (two genres, five
# texts each: ..2 dev, ..3 test): prep without --holdout-brown -> prep-task refuses (the test texts
# are in the train shards); prep with it -> prep-task pos and genre; a 4-step pretraining; finetune
# from its discriminator (pos) and from scratch (genre), each printing test accuracy beside the
# baselines; an interrupted + resumed run equal byte for byte to an uninterrupted one (checkpoint,
# best model, metrics, results); bad input, each one error line and exit status 1: task windows
# longer than the model's positions, a checkpoint whose tokenizer differs from the task files', task
# labels out of range; --pooler mean on genre (resumed exactly, export refused); export of the
# fine-tuned model as a DebertaV2ForTokenClassification folder.
# Exit 0 pass, 77 a part skipped (the reason printed), anything else fail.
cd "$(dirname "$0")/.." || exit 1
. tests/lib-e2e.sh
BUILD=${BUILD:-build}
BIN=$BUILD/deberta
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built"; exit 1; }
TMP=$(mktemp -d /tmp/deberta-e2e-finetune-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
export OMP_NUM_THREADS=1
fail() { echo "FAIL: $*"; exit 1; }
# one error line, status 1:  expect_error WHAT NEEDLE cmd... (lib-e2e.sh's e2e_bad)
E2E_DIR=$TMP
expect_error() {
    what=$1 needle=$2; shift 2
    e2e_bad "$needle" -- "$@"
    echo "ok   $what: $(cut -c1-150 "$TMP/err")"
}

# ---- a synthetic tagged corpus and its plain text
C=$TMP/corpus
. tests/lib-brown.sh
make_brown_corpus "$C"

# ---- the hold-out rule
"$BIN" prep --input "$C/brown.txt" "$C/other.txt" --out "$TMP/leaky" --vocab-size 400 --val-fraction 0 >/dev/null 2>&1 ||
    fail "prep (without hold-out)"
expect_error "prep-task on shards that hold test texts" "is the Brown text c.0[23], a dev/test text" \
    "$BIN" prep-task --task pos --brown "$C/brown-tagged" --shards "$TMP/leaky" --out "$TMP/x"
"$BIN" prep --input "$C/brown.txt" "$C/other.txt" --out "$TMP/data" --vocab-size 400 --holdout-brown "$C/brown-tagged" \
    >"$TMP/prep.out" 2>&1 || { cat "$TMP/prep.out"; fail "prep --holdout-brown"; }
grep -q "^prep: 4 documents are dev/test texts of the Brown tasks .*: 4 of them were in the inputs, now in val" "$TMP/prep.out" ||
    { cat "$TMP/prep.out"; fail "prep did not report the 4 held-out texts"; }
# the hold-out marker: written by prep --holdout-brown, absent (and removed) without the flag
[ ! -e "$TMP/leaky/holdout-brown.txt" ] || fail "prep without --holdout-brown wrote holdout-brown.txt"
grep -q "^holdout_in_inputs = 4$" "$TMP/data/holdout-brown.txt" && grep -q "^holdout_texts = 4$" "$TMP/data/holdout-brown.txt" &&
    grep -q "^tokenizer_hash = $(sed -n 's/.*tokenizer \([0-9a-f]\{16\}\) (trained.*/\1/p' "$TMP/prep.out")$" "$TMP/data/holdout-brown.txt" ||
    { cat "$TMP/data/holdout-brown.txt"; fail "holdout-brown.txt content"; }
cp "$TMP/data/holdout-brown.txt" "$TMP/leaky/"
"$BIN" prep --input "$C/brown.txt" "$C/other.txt" --out "$TMP/leaky" --vocab-size 400 --val-fraction 0 >/dev/null 2>&1 || fail "prep again"
[ ! -e "$TMP/leaky/holdout-brown.txt" ] || fail "prep without --holdout-brown left an old holdout-brown.txt"
echo "ok   holdout-brown.txt: written by prep --holdout-brown (texts, found, tokenizer), removed by a prep without it"
for t in pos genre; do
    "$BIN" prep-task --task $t --brown "$C/brown-tagged" --shards "$TMP/data" --out "$TMP/task-$t" --seq-len 24 \
        >"$TMP/pt-$t.out" 2>&1 || { cat "$TMP/pt-$t.out"; fail "prep-task $t"; }
    grep -q "none of the dev/test texts is among" "$TMP/pt-$t.out" || { cat "$TMP/pt-$t.out"; fail "prep-task $t summary"; }
done
echo "ok   prep --holdout-brown + prep-task: $(sed -n 3p "$TMP/pt-pos.out" | sed 's/^ *//')"

# ---- pretrain 4 steps, fine-tune its discriminator on pos
"$BIN" pretrain --data "$TMP/data" --out "$TMP/pre" --preset test --steps 4 --batch 4 --max_seq_len 32 \
    --hidden_dropout_prob 0 --attention_probs_dropout_prob 0 >/dev/null 2>&1 || fail "pretrain"
F="--task pos --data $TMP/task-pos --steps 12 --batch 4 --eval-every 4 --lr 1e-3"
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --out "$TMP/ft" >"$TMP/ft.out" 2>"$TMP/ft.err" ||
    { cat "$TMP/ft.err"; fail "finetune from the pretrained discriminator"; }
grep -q "^pos test (best dev step [0-9]*, dev acc [01]\.[0-9]*): acc [01]\.[0-9]*  macro-F1 [01]\.[0-9]* .* | baselines: majority class '[A-Z.]*' [01]\.[0-9]*, most frequent tag per word [01]\.[0-9]* | init .*discriminator$" \
    "$TMP/ft.out" || { cat "$TMP/ft.out"; fail "finetune result line"; }
cmp -s "$TMP/ft.out" "$TMP/ft/results.txt" || fail "results.txt differs from the printed result line"
grep -q '"kind":"test"' "$TMP/ft/metrics.jsonl" || fail "no test line in metrics.jsonl"
[ "$(grep -c '"kind":"eval"' "$TMP/ft/metrics.jsonl")" -eq 3 ] || fail "expected 3 dev evaluations (steps 4, 8, 12)"
[ -s "$TMP/ft/best.h5" ] || fail "no best.h5"
echo "ok   finetune (pretrained): $(cat "$TMP/ft.out")"
# head_grad_norm: the head's part of grad_norm (the encoder has the rest), so positive and below it, on every train line
awk -F'"head_grad_norm":' '/"kind":"train"/ { n++; split($2, h, /[,}]/); g = $0; sub(/.*"grad_norm":/, "", g); split(g, gg, /[,}]/);
    if (!(h[1] + 0 > 0 && h[1] + 0 < gg[1] * 0.9999)) bad++ } END { exit !(n > 0 && bad == 0) }' "$TMP/ft/metrics.jsonl" ||
    { grep '"kind":"train"' "$TMP/ft/metrics.jsonl"; fail "metrics.jsonl: head_grad_norm missing, not positive or not below grad_norm"; }
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" --init-model generator $F --steps 4 --out "$TMP/ftg" >"$TMP/ftg.out" 2>&1 ||
    { cat "$TMP/ftg.out"; fail "finetune from the generator"; }
grep -q "init .*generator$" "$TMP/ftg.out" || fail "finetune --init-model generator"
# fine-tuning's dropout is its own: 0 / 0 by default over a checkpoint pretrained with dropout, or the flags'
dropouts() { sed -n 's/^\(hidden_dropout_prob\|attention_probs_dropout_prob\) = //p' "$1/config.txt" | tr '\n' ' '; }
"$BIN" pretrain --data "$TMP/data" --out "$TMP/pred" --preset test --steps 1 --batch 4 --max_seq_len 32 \
    --hidden_dropout_prob 0.25 --attention_probs_dropout_prob 0.125 >/dev/null 2>&1 || fail "pretrain with dropout"
[ "$(dropouts "$TMP/pred")" = "0.25 0.125 " ] || fail "the pretraining's config.txt does not say dropout 0.25 0.125: '$(dropouts "$TMP/pred")'"
"$BIN" finetune --init "$TMP/pred/checkpoint.h5" $F --steps 2 --out "$TMP/ftd0" >/dev/null 2>&1 || fail "finetune over a checkpoint with dropout"
[ "$(dropouts "$TMP/ftd0")" = "0 0 " ] || fail "finetune took its dropout from the checkpoint: '$(dropouts "$TMP/ftd0")'"
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --steps 2 --dropout 0.25 --attention-dropout 0.125 --out "$TMP/ftd" >/dev/null 2>&1 ||
    fail "finetune --dropout --attention-dropout"
[ "$(dropouts "$TMP/ftd")" = "0.25 0.125 " ] || fail "finetune --dropout 0.25 --attention-dropout 0.125 gave '$(dropouts "$TMP/ftd")'"
echo "ok   fine-tuning's dropout: 0 / 0 over a checkpoint pretrained with 0.25 / 0.125; --dropout 0.25 --attention-dropout 0.125 kept"
# --reinit-layers: said in the result line and kept in config.txt; refused from scratch and beyond the depth
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --steps 2 --reinit-layers 1 --out "$TMP/ftr" >"$TMP/ftr.out" 2>&1 ||
    { cat "$TMP/ftr.out"; fail "finetune --reinit-layers 1"; }
grep -q "init .*discriminator, top 1 layer re-initialised$" "$TMP/ftr.out" && grep -q "^ft_reinit_layers = 1$" "$TMP/ftr/config.txt" ||
    { cat "$TMP/ftr.out"; fail "finetune --reinit-layers 1: result line or config.txt"; }
! grep -q "^ft_reinit_layers" "$TMP/ft/config.txt" || fail "a run without --reinit-layers wrote ft_reinit_layers"
# --layer-decay: said in the result line, kept in config.txt, and it changes the run (1 does not)
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --steps 2 --layer-decay 0.5 --out "$TMP/ftl" >"$TMP/ftl.out" 2>&1 ||
    { cat "$TMP/ftl.out"; fail "finetune --layer-decay 0.5"; }
grep -q "init .*discriminator, layer-wise rate decay 0.5$" "$TMP/ftl.out" && grep -q "^ft_layer_decay = 0.5$" "$TMP/ftl/config.txt" ||
    { cat "$TMP/ftl.out"; fail "finetune --layer-decay 0.5: result line or config.txt"; }
! grep -q "^ft_layer_decay" "$TMP/ft/config.txt" || fail "a run without --layer-decay wrote ft_layer_decay"
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --steps 2 --out "$TMP/ftl0" >/dev/null 2>&1 || fail "finetune (2 steps)"
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --steps 2 --layer-decay 1 --out "$TMP/ftl1" >/dev/null 2>&1 || fail "finetune --layer-decay 1"
losses() { grep '"kind":"train"' "$1/metrics.jsonl" | sed 's/.*"loss":\([^,]*\),.*/\1/' | tr '\n' ' '; }
[ -n "$(losses "$TMP/ftl0")" ] && [ "$(losses "$TMP/ftl1")" = "$(losses "$TMP/ftl0")" ] && [ "$(losses "$TMP/ftl")" != "$(losses "$TMP/ftl0")" ] ||
    fail "train losses: --layer-decay 1 '$(losses "$TMP/ftl1")' must equal none '$(losses "$TMP/ftl0")', 0.5 '$(losses "$TMP/ftl")' differ"
echo "ok   --layer-decay 0.5: result line, config.txt, a different run; --layer-decay 1 the same as none"
# a bad value is a usage error: one line, status 2, no run directory
expect_usage_error() { # FLAG VALUE NEEDLE
    e2e_bad --rc 2 "^error: finetune: $1 '$2' must be $3" -- "$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F "$1" "$2" --out "$TMP/bad0"
    [ ! -e "$TMP/bad0" ] || fail "$1 $2: a run directory was made"
    echo "ok   $1 $2: $(cat "$TMP/err")"
}
expect_usage_error --attention-dropout 1 "a number in \[0, 1)"
expect_usage_error --layer-decay 1.5 "a number in (0, 1\]"
expect_usage_error --layer-decay 0 "a number in (0, 1\]"   # 0 once meant "one rate" in silence
expect_error "--reinit-layers from scratch" "needs --init CHECKPOINT" "$BIN" finetune --init scratch --preset test $F --reinit-layers 1 --out "$TMP/bad0"
expect_error "--reinit-layers beyond the depth" "reinit-layers 9: checkpoint .* has 2 encoder layers, fewer than the 9 to re-initialise" \
    "$BIN" finetune --init "$TMP/pre/checkpoint.h5" $F --reinit-layers 9 --out "$TMP/bad0"

# ---- exact resume: 5 steps, stop, resume to 12 == 12 uninterrupted steps (from scratch; and from the
# checkpoint with --layer-decay, whose per-parameter rates a resume rebuilds from the saved ft_layer_decay)
resume_case() { # NAME FLAGS...
    n=$1; shift
    "$BIN" finetune "$@" $F --out "$TMP/$n-a" >/dev/null 2>&1 || fail "finetune $n (uninterrupted)"
    "$BIN" finetune "$@" $F --out "$TMP/$n-b" --stop-after 5 >/dev/null 2>"$TMP/b.err" || { cat "$TMP/b.err"; fail "finetune $n --stop-after"; }
    [ ! -e "$TMP/$n-b/results.txt" ] || fail "an interrupted run ($n) wrote results"
    "$BIN" finetune --resume "$TMP/$n-b" >/dev/null 2>"$TMP/b.err" || { cat "$TMP/b.err"; fail "finetune --resume ($n)"; }
    for f in checkpoint.h5 best.h5 metrics.jsonl results.txt; do
        cmp -s "$TMP/$n-a/$f" "$TMP/$n-b/$f" || fail "resumed run ($n): $f differs from the uninterrupted run's"
    done
    echo "ok   resume ($n): checkpoint.h5, best.h5, metrics.jsonl, results.txt identical to the uninterrupted run"
}
resume_case scratch --init scratch --preset test
resume_case layer-decay --init "$TMP/pre/checkpoint.h5" --layer-decay 0.5

# ---- SIGTERM / SIGINT: finish the step, checkpoint it, say so, exit 0; --resume continues exactly
LONG="--init scratch --preset test --task pos --data $TMP/task-pos --steps 1000000 --batch 4 --eval-every 2 --save-every 0 --log-every 1"
ckpt_step() { h5dump -a /step "$1" | sed -n 's/^ *(0): \([0-9]*\).*/\1/p'; }
for sig in TERM INT; do
    "$BIN" finetune $LONG --out "$TMP/sig$sig" >/dev/null 2>"$TMP/sig$sig.err" &
    pid=$!
    e2e_wait_logged "$TMP/sig$sig/metrics.jsonl" 3 $pid "$TMP/sig$sig.err"
    kill -$sig $pid
    wait $pid; rc=$?
    [ $rc -eq 0 ] || { cat "$TMP/sig$sig.err"; fail "SIG$sig: exit status $rc, expected 0"; }
    n=$(sed -n "s/^stopped by SIG$sig after step \([0-9]*\): checkpoint written to .*--resume .*/\1/p" "$TMP/sig$sig.err")
    [ -n "$n" ] || { cat "$TMP/sig$sig.err"; fail "SIG$sig: no 'stopped by SIG$sig after step N' line"; }
    [ "$(ckpt_step "$TMP/sig$sig/checkpoint.h5")" = "$n" ] || fail "SIG$sig: checkpoint.h5 is not of step $n"
    [ -z "$(find "$TMP/sig$sig" -name '*.tmp')" ] || fail "SIG$sig left a .tmp file"
    [ ! -e "$TMP/sig$sig/results.txt" ] || fail "SIG$sig: a stopped run wrote results"
done
"$BIN" finetune --resume "$TMP/sigTERM" --stop-after 3 >/dev/null 2>"$TMP/sig.err" || { cat "$TMP/sig.err"; fail "--resume after SIGTERM"; }
n=$(ckpt_step "$TMP/sigTERM/checkpoint.h5")
"$BIN" finetune $LONG --out "$TMP/sigref" --stop-after "$n" >/dev/null 2>"$TMP/sig.err" || { cat "$TMP/sig.err"; fail "reference run"; }
for f in checkpoint.h5 best.h5 metrics.jsonl; do
    cmp -s "$TMP/sigTERM/$f" "$TMP/sigref/$f" || fail "resumed after SIGTERM: $f differs from an uninterrupted run of $n steps"
done
echo "ok   SIGTERM/SIGINT: the step finished, its checkpoint written, exit 0; resumed + 3 steps == $n uninterrupted steps (checkpoint.h5, best.h5, metrics.jsonl)"

# ---- genre from scratch
"$BIN" finetune --init scratch --preset test --task genre --data "$TMP/task-genre" --steps 6 --batch 4 --pooler cls --out "$TMP/g" \
    >"$TMP/g.out" 2>"$TMP/g.err" || { cat "$TMP/g.err"; fail "finetune genre"; }
grep -q "^genre test .*macro-F1 [01]\.[0-9]* .* | baselines: majority class '[a-z-]*' [01]\.[0-9]*, naive Bayes (bag of tokens) [01]\.[0-9]* | init scratch$" "$TMP/g.out" ||
    { cat "$TMP/g.out"; fail "genre result line"; }
echo "ok   finetune genre (scratch): $(cat "$TMP/g.out")"

# ---- --pooler mean (a sequence task): said in the result line, kept in config.txt, a different run from
# [CLS]'s; resumed exactly (a resume must not fall back to [CLS]); export refuses it in one line
G="--init $TMP/pre/checkpoint.h5 --task genre --data $TMP/task-genre --steps 6 --batch 4 --eval-every 3"
"$BIN" finetune $G --pooler mean --out "$TMP/gm" >"$TMP/gm.out" 2>"$TMP/gm.err" || { cat "$TMP/gm.err"; fail "finetune --pooler mean"; }
grep -q "^genre test .* | init .*discriminator, mean pooler$" "$TMP/gm.out" && grep -q "^ft_pooler = mean$" "$TMP/gm/config.txt" ||
    { cat "$TMP/gm.out"; fail "finetune --pooler mean: result line or config.txt"; }
"$BIN" finetune $G --pooler cls --out "$TMP/gc" >"$TMP/gc.out" 2>&1 || { cat "$TMP/gc.out"; fail "finetune --pooler cls"; }
grep -q "^ft_pooler = cls$" "$TMP/gc/config.txt" && ! grep -q "mean pooler" "$TMP/gc.out" || fail "finetune --pooler cls: config.txt or result line"
[ -n "$(losses "$TMP/gm")" ] && [ "$(losses "$TMP/gm")" != "$(losses "$TMP/gc")" ] || fail "--pooler mean and cls gave the same train losses '$(losses "$TMP/gm")'"
"$BIN" finetune $G --pooler mean --out "$TMP/gmr" --stop-after 4 >/dev/null 2>&1 || fail "finetune --pooler mean --stop-after 4"
"$BIN" finetune --resume "$TMP/gmr" >/dev/null 2>"$TMP/b.err" || { cat "$TMP/b.err"; fail "finetune --resume (mean pooler)"; }
for f in checkpoint.h5 best.h5 metrics.jsonl results.txt; do
    cmp -s "$TMP/gm/$f" "$TMP/gmr/$f" || fail "resumed run (mean pooler): $f differs from the uninterrupted run's"
done
echo "ok   --pooler mean: result line, config.txt, a different run from cls; resumed == uninterrupted"
# the defaults (docs/RECIPE.md, issue 59): mean pooler, lr 3e-4, no dropout
"$BIN" finetune $G --steps 2 --out "$TMP/gdef" >/dev/null 2>&1 || fail "finetune with the defaults (genre)"
[ "$(sed -n 's/^ft_\(pooler\|lr\|dropout\|attention_dropout\) = //p' "$TMP/gdef/config.txt" | tr '\n' ' ')" = "0.00029999999999999997 0 0 mean " ] ||
    { grep "^ft_" "$TMP/gdef/config.txt"; fail "finetune's defaults: expected lr 3e-4, dropout 0 and 0, pooler mean"; }
echo "ok   finetune's defaults: lr 3e-4, dropout 0 / 0, pooler mean"
expect_usage_error --pooler max "cls or mean"
expect_error "export of a mean-pooled head" "mean-pooling head (ft_pooler = mean), which no Hugging Face DebertaV2 class computes" \
    "$BIN" export "$TMP/gm/best.h5" "$TMP/hfm"
[ ! -e "$TMP/hfm" ] || fail "a refused export left $TMP/hfm"

# ---- scripts/cls_spread.py: the pretrained [CLS] per layer on genre windows (needs h5py and numpy)
if /usr/bin/python3 -c "import h5py, numpy" 2>/dev/null; then
    L=$(sed -n 's/^num_hidden_layers = //p' "$TMP/pre/config.txt")
    DEBERTA=$BIN /usr/bin/python3 scripts/cls_spread.py "$TMP/pre/checkpoint.h5" "$TMP/task-genre" 6 3 >"$TMP/cls.out" 2>"$TMP/cls.err" ||
        { cat "$TMP/cls.err"; fail "cls_spread.py"; }
    head -1 "$TMP/cls.out" | grep -q "^6 train / 3 dev windows of 24 tokens; majority class on dev [01]\.[0-9]*$" ||
        { cat "$TMP/cls.out"; fail "cls_spread.py header"; }
    num='[0-9]*\.[0-9]*' acc='[01]\.[0-9]*'
    [ "$(grep -c "^after layer [1-9][0-9]*: \[CLS\] spread / magnitude $num | L2 norm: \[CLS\] $num, tokens $num | probe dev accuracy: \[CLS\] $acc, mean-pooled $acc$" "$TMP/cls.out")" = "$L" ] &&
        [ "$(wc -l <"$TMP/cls.out")" = $((L + 1)) ] || { cat "$TMP/cls.out"; fail "cls_spread.py: expected one line per layer ($L)"; }
    e2e_bad "a tagging task" -- /usr/bin/python3 scripts/cls_spread.py "$TMP/pre/checkpoint.h5" "$TMP/task-pos" 6 3
    echo "ok   cls_spread.py: $L layers ($(sed -n 2p "$TMP/cls.out")); a tagging task refused"
else
    e2e_skip_part "scripts/cls_spread.py: /usr/bin/python3 lacks h5py or numpy"
fi

# ---- bad input
"$BIN" prep-task --task genre --brown "$C/brown-tagged" --shards "$TMP/data" --out "$TMP/task-long" --seq-len 64 >/dev/null 2>&1 ||
    fail "prep-task --seq-len 64"
expect_error "genre windows longer than max_position_embeddings" "sequences of 64 tokens are longer than the model's max_position_embeddings 32" \
    "$BIN" finetune --init scratch --preset test --task genre --data "$TMP/task-long" --out "$TMP/bad1"
"$BIN" prep --input "$C/brown.txt" "$C/other.txt" --out "$TMP/data2" --vocab-size 350 --holdout-brown "$C/brown-tagged" >/dev/null 2>&1 ||
    fail "prep (second tokenizer)"
"$BIN" pretrain --data "$TMP/data2" --out "$TMP/pre2" --preset test --steps 1 --batch 2 --max_seq_len 32 >/dev/null 2>&1 || fail "pretrain 2"
expect_error "checkpoint tokenizer differs from the task files'" "was pretrained with tokenizer [0-9a-f]*, but the task files .* use tokenizer" \
    "$BIN" finetune --init "$TMP/pre2/checkpoint.h5" $F --out "$TMP/bad2"
expect_error "task file of another task" "holds the task 'genre' (classification), not 'pos'" \
    "$BIN" finetune --init scratch --preset test --task pos --data "$TMP/task-genre" --out "$TMP/bad3"
if /usr/bin/python3 -c "import h5py, numpy" 2>/dev/null; then
    cp -r "$TMP/task-pos" "$TMP/task-bad"
    /usr/bin/python3 -c "
import h5py, numpy as np, sys
with h5py.File(sys.argv[1], 'r+') as f:
    y = f['labels'][()]; y[0, 1] = 12; f['labels'][...] = y" "$TMP/task-bad/train.h5"
    expect_error "task file changed by h5py (its seal no longer matches)" "train.h5: does not match its seal .*deberta seal " \
        "$BIN" finetune --init scratch --preset test --task pos --data "$TMP/task-bad" --out "$TMP/bad4"
    "$BIN" seal "$TMP/task-bad/train.h5" >/dev/null || fail "deberta seal of the changed task file"
    expect_error "task labels out of range" "labels\[0, 1\] = 12 is outside \[0, 12) and not the ignore value -100" \
        "$BIN" finetune --init scratch --preset test --task pos --data "$TMP/task-bad" --out "$TMP/bad4"
else
    e2e_skip_part "a task file changed by h5py, out-of-range labels: /usr/bin/python3 lacks h5py or numpy"
fi

# ---- export
"$BIN" export "$TMP/ft/best.h5" "$TMP/hf" >"$TMP/exp.out" 2>&1 || { cat "$TMP/exp.out"; fail "export of the fine-tuned model"; }
grep -q '"architectures": \["DebertaV2ForTokenClassification"\]' "$TMP/hf/config.json" || fail "export: architectures"
grep -q '"id2label": {"0": "ADJ", .*"10": ".", "11": "X"}' "$TMP/hf/config.json" || fail "export: id2label"
grep -q '"label2id": {"ADJ": 0, .*"X": 11}' "$TMP/hf/config.json" || fail "export: label2id"
[ -s "$TMP/hf/model.safetensors" ] && [ -s "$TMP/hf/tokenizer.json" ] || fail "export: files missing"
grep -q 'classifier.weight' "$TMP/hf/model.safetensors" || fail "export: no classifier.weight in model.safetensors"
"$BIN" export "$TMP/g/best.h5" "$TMP/hfg" >/dev/null 2>&1 || fail "export genre"
grep -q '"architectures": \["DebertaV2ForSequenceClassification"\]' "$TMP/hfg/config.json" || fail "export genre: architectures"
grep -q 'pooler.dense.weight' "$TMP/hfg/model.safetensors" || fail "export genre: no pooler in model.safetensors"
echo "ok   export: $(cat "$TMP/exp.out")"
e2e_end e2e-finetune
