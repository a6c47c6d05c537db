#!/bin/sh
# scripts/finetune-table.sh and `ablate.sh finetune` end to end, with tiny budgets on the synthetic
# tagged corpus of tests/lib-brown.sh: a 4-step pretraining -> 2 tasks x 2 seeds x (scratch, the
# checkpoint), and a JSONL task prepared beforehand -> Markdown tables whose means and sds are those of the runs' metrics; a re-run skips
# every finished run; a run interrupted mid-way (--stop-after) is resumed and ends equal to an
# uninterrupted one; SIGTERM to the script stops the running fine-tune at a checkpoint (exit 143);
# another budget in the same table directory is refused (one error line, exit 1); a checkpoint newer
# than its runs makes them stale (moved aside, run again); an ablation grid's runs fine-tuned and the
# downstream column in its summary.  Float build only.
cd "$(dirname "$0")/.." || exit 1
. tests/lib-e2e.sh
BUILD=${BUILD:-build}
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-finetune-table: float build only (the double run has nothing of its own to check here)"; exit 77; fi
BIN=$BUILD/deberta
[ -x "$BIN" ] || { echo "FAIL: $BIN is not built"; exit 1; }
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIPPED: $PY not found"; exit 77; }
TMP=$(mktemp -d /tmp/deberta-e2e-finetune-table-XXXXXX) || exit 1
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
ok() { echo "ok   $*"; }
export OMP_NUM_THREADS=1
T="sh scripts/finetune-table.sh"
E2E_DIR=$TMP

. tests/lib-brown.sh
make_brown_corpus "$TMP/corpus"
"$BIN" prep --input "$TMP/corpus/brown.txt" "$TMP/corpus/other.txt" --out "$TMP/shards" --vocab-size 400 \
    --holdout-brown "$TMP/corpus/brown-tagged" >/dev/null 2>&1 || fail "prep"
"$BIN" pretrain --data "$TMP/shards" --out "$TMP/pre" --preset test --steps 4 --batch 4 --max_seq_len 32 >/dev/null 2>&1 || fail "pretrain"

export FT_STEPS=6 FT_BATCH=4 FT_LR=1e-3 FT_SEQ_LEN=24 FT_EVAL_EVERY=3 FT_PRESET=test FT_SEEDS="1 2" THREADS=1 \
    SHARDS=$TMP/shards BROWN=$TMP/corpus/brown-tagged FT_TASK_DATA=$TMP/tasks FT_TABLE_DIR=$TMP/tab DEBERTA=$BIN
$T pre=$TMP/pre/checkpoint.h5 >"$TMP/t1.out" 2>"$TMP/t1.err" || { cat "$TMP/t1.err"; fail "finetune-table"; }
[ "$(grep -c '^\[[1-8]/8\] .*: test acc [01]\.[0-9]*, best dev' "$TMP/t1.err")" = 8 ] || { cat "$TMP/t1.err"; fail "expected 8 finished-run progress lines"; }
for x in scratch pre; do for t in pos genre; do for s in 1 2; do
    [ -s "$TMP/tab/$x/$t-seed$s/results.txt" ] || fail "no results in $TMP/tab/$x/$t-seed$s"
done; done; done
cmp -s "$TMP/t1.out" "$TMP/tab/table.md" || fail "table.md differs from the printed tables"
grep -q '^| baseline: majority class (DET) | – | 0\.3000 | |$' "$TMP/t1.out" || { cat "$TMP/t1.out"; fail "pos majority baseline row"; }
grep -q '^| baseline: most frequent tag per word (train split) | – | 1\.0000 | |$' "$TMP/t1.out" || fail "pos word-tag baseline row"
grep -q '^| scratch (test preset, random init) | 2 | [01]\.[0-9]* ± [01]\.[0-9]* | [01]\.[0-9]* ± [01]\.[0-9]* |$' "$TMP/t1.out" ||
    { cat "$TMP/t1.out"; fail "pos scratch row"; }
grep -q "^| pre: \`.*/pre/checkpoint.h5\` (pretrained 4 steps) | 2 | [01]\.[0-9]* ± [01]\.[0-9]* | [01]\.[0-9]* ± [01]\.[0-9]* | [01]\.[0-9]* ± [01]\.[0-9]* |$" "$TMP/t1.out" ||
    { cat "$TMP/t1.out"; fail "genre row of the checkpoint (accuracy, macro-F1, dev)"; }
# the table's numbers are the mean and sample sd of the runs' test records
"$PY" - "$TMP/tab" "$TMP/t1.out" <<'EOF' || fail "table values"
import json, statistics, sys
tab, out = sys.argv[1], open(sys.argv[2]).read()
for task in ("pos", "genre"):
    for label, head in (("scratch", "| scratch (test preset"), ("pre", "| pre: ")):
        rec = [[json.loads(l) for l in open("%s/%s/%s-seed%d/metrics.jsonl" % (tab, label, task, s)) if '"kind":"test"' in l][-1] for s in (1, 2)]
        for key in ("acc", "macro_f1", "dev_acc") if task == "genre" else ("acc", "dev_acc"):
            xs = [r[key] for r in rec]
            cell = "%.4f ± %.4f" % (statistics.mean(xs), statistics.stdev(xs))
            block = out.split("**%s**" % task)[1].split("**")[0]
            row = [l for l in block.splitlines() if l.startswith(head)][0]
            assert cell in row, (task, label, key, cell, row)
EOF
ok "2 tasks x 2 seeds x (scratch, checkpoint): tables with the baselines, n, mean ± sd of the runs' test records ($(grep -c . "$TMP/t1.out") lines)"

# a task prepared beforehand (JSONL, its own name in the files): fine-tuned under that name, with the naive-Bayes
# baseline row and macro-F1; a task folder that is not there is one error line
awk -v d="$TMP" 'NF { n++; f = d "/mood-" (n % 5 == 1 ? "dev" : n % 5 == 2 ? "test" : "train") ".jsonl"
    printf "{\"text\": \"%s\", \"label\": \"%s\"}\n", $0, (/ dog| cat| house/ ? "land" : "sky") > f }' \
    "$TMP/corpus/other.txt" "$TMP/corpus/brown.txt"
"$BIN" prep-task --format jsonl --name mood --train "$TMP/mood-train.jsonl" --dev "$TMP/mood-dev.jsonl" --test "$TMP/mood-test.jsonl" \
    --text-field text --label-field label --shards "$TMP/shards" --out "$TMP/tasks/feel-T24" --seq-len 24 >/dev/null 2>&1 || fail "prep-task mood"
FT_TASKS=feel FT_SEEDS=1 FT_TABLE_DIR=$TMP/tabm $T pre=$TMP/pre/checkpoint.h5 >"$TMP/tm.out" 2>"$TMP/tm.err" || { cat "$TMP/tm.err"; fail "a prepared task"; }
grep -q '^ft_task = mood$' "$TMP/tabm/pre/feel-seed1/config.txt" || fail "the prepared task was not fine-tuned under its files' name"
"$PY" - "$TMP/tabm" "$TMP/tm.out" <<'EOF' || { cat "$TMP/tm.out"; fail "the prepared task's table"; }
import json, sys
tab, out = sys.argv[1], open(sys.argv[2]).read()
rec = [json.loads(l) for l in open(tab + "/pre/feel-seed1/metrics.jsonl") if '"kind":"test"' in l][-1]
assert "| baseline: naive Bayes (bag of tokens, train split) | – | %.4f | |" % rec["baseline_naive_bayes_acc"] in out, out
row = [l for l in out.splitlines() if l.startswith("| pre: ")][0]
assert row.endswith("| 1 | %.4f | %.4f | %.4f |" % (rec["acc"], rec["macro_f1"], rec["dev_acc"])), row
EOF
e2e_bad "^error: finetune-table: FT_TASKS: $TMP/tasks/nothing-T24 has no train/dev/test.h5 " -- env FT_TASKS=nothing $T
FT_SCRATCH=0 FT_TASKS=feel FT_SEEDS=1 FT_TABLE_DIR=$TMP/tabn $T pre=$TMP/pre/checkpoint.h5 >"$TMP/tn.out" 2>"$TMP/tn.err" &&
    [ ! -e "$TMP/tabn/scratch" ] && [ -s "$TMP/tabn/pre/feel-seed1/results.txt" ] && ! grep -q '^| scratch' "$TMP/tn.out" ||
    { cat "$TMP/tn.err" "$TMP/tn.out"; fail "FT_SCRATCH=0: a scratch run or row"; }
e2e_bad "^error: finetune-table: FT_SCRATCH=0 and no LABEL=CHECKPOINT: nothing to fine-tune$" -- env FT_SCRATCH=0 $T
ok "a prepared task: fine-tuned under its files' name, naive Bayes and macro-F1 in its table; a missing one: one error line; FT_SCRATCH=0"

n_inv=$(cat "$TMP"/tab/*/*.log | grep -c '^== .* fresh')
$T pre=$TMP/pre/checkpoint.h5 >"$TMP/t2.out" 2>"$TMP/t2.err" || { cat "$TMP/t2.err"; fail "re-run"; }
[ "$(grep -c 'done earlier' "$TMP/t2.err")" = 8 ] || { cat "$TMP/t2.err"; fail "the re-run did not skip the 8 finished runs"; }
[ "$(cat "$TMP"/tab/*/*.log | grep -c '^== .* fresh')" = "$n_inv" ] || fail "the re-run started fine-tunes"
cmp -s "$TMP/t1.out" "$TMP/t2.out" || fail "the re-run printed other tables"
ok "a re-run skips the finished runs and prints the same tables"

# an interrupted run (the table's own command, stopped after 2 steps) is resumed and equals the uninterrupted one
"$BIN" finetune --init "$TMP/pre/checkpoint.h5" --task pos --data "$TMP/tasks/pos-T24" --out "$TMP/tab2/pre/pos-seed1" --steps 6 \
    --batch 4 --lr 1e-3 --seed 1 --eval-every 3 --save-every 3 --threads 1 --stop-after 2 >/dev/null 2>&1 || fail "the interrupted run"
FT_TABLE_DIR=$TMP/tab2 FT_TASKS=pos FT_SEEDS=1 $T pre=$TMP/pre/checkpoint.h5 >/dev/null 2>"$TMP/t3.err" || { cat "$TMP/t3.err"; fail "table with an interrupted run"; }
grep -q '^\[2/2\] pos pre seed 1: resuming at step 2 of 6' "$TMP/t3.err" || { cat "$TMP/t3.err"; fail "the interrupted run was not resumed at step 2"; }
for f in checkpoint.h5 best.h5 metrics.jsonl results.txt; do
    cmp -s "$TMP/tab/pre/pos-seed1/$f" "$TMP/tab2/pre/pos-seed1/$f" || fail "resumed run: $f differs from the uninterrupted run's"
done
ok "an interrupted run is resumed (deberta finetune --resume) and equals the uninterrupted one"

# SIGTERM to the script: the running fine-tune stops at a checkpoint, the script exits 128 + 15
FT_TABLE_DIR=$TMP/tab3 FT_TASKS=pos FT_SEEDS=1 FT_STEPS=1000000 FT_EVAL_EVERY=100000 $PY scripts/finetune_table.py >/dev/null 2>"$TMP/t4.err" &
pid=$!
i=0
while c=$(grep -c '"kind":"train"' "$TMP/tab3/scratch/pos-seed1/metrics.jsonl" 2>/dev/null); [ "${c:-0}" -lt 1 ]; do
    i=$((i + 1))
    [ $i -lt 600 ] || { kill $pid; fail "the table's first run logged nothing in 60 s"; }
    sleep 0.1
done
kill -TERM $pid
wait $pid; rc=$?
[ $rc -eq 143 ] || { cat "$TMP/t4.err"; fail "SIGTERM: the script exited $rc, expected 143"; }
grep -q '^stopped by SIGTERM after step [0-9]*: checkpoint written' "$TMP/tab3/scratch/pos-seed1.log" || { cat "$TMP/tab3/scratch/pos-seed1.log"; fail "SIGTERM did not reach the fine-tune"; }
grep -q '^\[1/1\] pos scratch seed 1: stopped at step [0-9]* (resumes on the next run)$' "$TMP/t4.err" || { cat "$TMP/t4.err"; fail "no 'stopped at step' line"; }
[ -s "$TMP/tab3/scratch/pos-seed1/checkpoint.h5" ] || fail "SIGTERM: no checkpoint"
ok "SIGTERM: the running fine-tune checkpoints and stops, the script exits 143"

# another budget in the same table directory: one error line, exit 1
e2e_bad "^error: finetune-table: .*/tab/scratch/pos-seed1 was made with other settings (ft_steps = 6, this table wants 7); use another FT_TABLE_DIR or remove it$" \
    -- env FT_STEPS=7 $T pre=$TMP/pre/checkpoint.h5
# FT_LAYER_DECAY is part of the budget: refused over runs made without it, passed to finetune in a new table
e2e_bad "^error: finetune-table: .* was made with other settings (ft_layer_decay = 0, this table wants 0.5)" -- env FT_LAYER_DECAY=0.5 $T pre=$TMP/pre/checkpoint.h5
FT_LAYER_DECAY=0.5 FT_TABLE_DIR=$TMP/tabd FT_TASKS=pos FT_SEEDS=1 $T pre=$TMP/pre/checkpoint.h5 >"$TMP/td.out" 2>"$TMP/td.err" ||
    { cat "$TMP/td.err"; fail "FT_LAYER_DECAY=0.5"; }
grep -q "^ft_layer_decay = 0.5$" "$TMP/tabd/pre/pos-seed1/config.txt" && grep -q "layer-wise rate decay 0.5" "$TMP/td.out" ||
    { cat "$TMP/td.out"; fail "FT_LAYER_DECAY=0.5: not in the run's config.txt or the table's budget line"; }
e2e_bad "^error: finetune-table: FT_LAYER_DECAY='2' must be a number in (0, 1\]$" -- env FT_LAYER_DECAY=2 $T
ok "FT_LAYER_DECAY: part of the budget (refused over other runs), passed to finetune, a bad value one error line"
for bad in "x" "scratch=$TMP/pre/checkpoint.h5" "a=$TMP/none.h5"; do
    e2e_bad '^error: finetune-table: ' -- $T "$bad"
done
e2e_bad "^error: finetune-table: FT_LR='abc' must be a number" -- env FT_LR=abc $T
"$BIN" prep --input "$TMP/corpus/brown.txt" "$TMP/corpus/other.txt" --out "$TMP/shards2" --vocab-size 350 \
    --holdout-brown "$TMP/corpus/brown-tagged" >/dev/null 2>&1 || fail "prep (another tokenizer)"
"$BIN" pretrain --data "$TMP/shards2" --out "$TMP/pre2" --preset test --steps 1 --batch 2 --max_seq_len 32 >/dev/null 2>&1 || fail "pretrain 2"
e2e_bad --late '^error: finetune-table: pos other seed 1: deberta finetune exited 1: checkpoint .*/pre2/checkpoint.h5 was pretrained with tokenizer [0-9a-f]*, but the task files .* (log: .*/tab4/other/pos-seed1.log)$' \
    -- env FT_TABLE_DIR=$TMP/tab4 FT_TASKS=pos FT_SEEDS=1 $T other=$TMP/pre2/checkpoint.h5
ok "another budget, a bad label, a missing checkpoint, a bad knob, a checkpoint of another tokenizer: one error line, exit 1"

# the checkpoint changed after its runs: they are moved aside and run again
touch "$TMP/pre/checkpoint.h5"
FT_TASKS=pos $T pre=$TMP/pre/checkpoint.h5 >/dev/null 2>"$TMP/t7.err" || { cat "$TMP/t7.err"; fail "stale runs"; }
[ "$(grep -c 'is newer than the run .*: moved to .*\.stale-1, starting again' "$TMP/t7.err")" = 2 ] || { cat "$TMP/t7.err"; fail "stale runs not moved aside"; }
[ -d "$TMP/tab/pre/pos-seed1.stale-1" ] && [ -s "$TMP/tab/pre/pos-seed1/results.txt" ] && [ "$(grep -c 'done earlier' "$TMP/t7.err")" = 2 ] ||
    { cat "$TMP/t7.err"; fail "stale runs: not redone, or scratch redone"; }
cmp -s "$TMP/tab/pre/pos-seed1.stale-1/results.txt" "$TMP/tab/pre/pos-seed1/results.txt" || fail "the same checkpoint gave another result"
ok "runs older than their checkpoint are moved aside (.stale-1) and redone; scratch is kept"

# the shards' tokenizer newer than the task files (copied or touched, the same bytes): the task files are made
# again, found identical and kept, and no run is redone; a task file that differs from a fresh one is replaced
touch "$TMP/shards/tokenizer.bin"
FT_TASKS=pos $T pre=$TMP/pre/checkpoint.h5 >/dev/null 2>"$TMP/t8.err" || { cat "$TMP/t8.err"; fail "a touched tokenizer"; }
grep -q "pos-T24: the same bytes as before: kept$" "$TMP/t8.err" && [ "$(grep -c 'done earlier' "$TMP/t8.err")" = 4 ] &&
    ! grep -q 'stale' "$TMP/t8.err" || { cat "$TMP/t8.err"; fail "a touched tokenizer: task files not kept, or runs redone"; }
cp "$TMP/tasks/pos-T24/dev.h5" "$TMP/dev.h5" && printf x >>"$TMP/tasks/pos-T24/dev.h5" && touch "$TMP/shards/tokenizer.bin"
FT_TASKS=pos $T pre=$TMP/pre/checkpoint.h5 >/dev/null 2>"$TMP/t9.err" || { cat "$TMP/t9.err"; fail "a changed task file"; }
grep -q "pos-T24: dev.h5 changed with the tokenizer: replaced$" "$TMP/t9.err" && cmp -s "$TMP/dev.h5" "$TMP/tasks/pos-T24/dev.h5" &&
    [ "$(grep -c 'is newer than the run' "$TMP/t9.err")" = 4 ] && [ ! -e "$TMP/tasks/pos-T24.new" ] ||
    { cat "$TMP/t9.err"; fail "a changed task file: not replaced, or its runs not redone"; }
ok "a touched tokenizer keeps identical task files and their runs; a task file that differs is replaced and its runs redone"
# prep-task failing while the files are made again (a full disk, say): one error line, exit 1, the old files as they were
cp -r "$TMP/tasks/pos-T24" "$TMP/pos-before" && touch "$TMP/shards/tokenizer.bin"
cat >"$TMP/failing-prep" <<EOF
#!/bin/sh
# prep-task writes part of its output, then fails; every other command is the real binary
if [ "\$1" = prep-task ]; then
    while [ \$# -gt 0 ]; do [ "\$1" = --out ] && { mkdir -p "\$2" && echo partial >"\$2/dev.h5"; }; shift; done
    echo "error: no space left on device" >&2; exit 1
fi
exec $BIN "\$@"
EOF
chmod +x "$TMP/failing-prep"
FT_TASKS=pos DEBERTA=$TMP/failing-prep $T pre=$TMP/pre/checkpoint.h5 >/dev/null 2>"$TMP/t10.err"; rc=$?
[ $rc -eq 1 ] && [ "$(grep -c '^error:' "$TMP/t10.err")" = 1 ] && grep -q '^error: .*prep-task --task pos failed: error: no space left on device$' "$TMP/t10.err" &&
    diff -r "$TMP/pos-before" "$TMP/tasks/pos-T24" >/dev/null && [ ! -e "$TMP/tasks/pos-T24.new" ] ||
    { cat "$TMP/t10.err"; fail "prep-task failing on a re-check: exit $rc, or the old task files changed, or .new left"; }
ok "prep-task failing on a re-check: one error line, exit 1, the old task files untouched, nothing left beside them"

# ablate.sh finetune: every finished run of a grid, and the downstream column of the summary
if "$PY" -c 'import numpy, h5py' 2>/dev/null; then
    unset FT_SEEDS FT_TABLE_DIR SHARDS
    A="sh scripts/ablate.sh"
    $A run --out "$TMP/abl" --data "$TMP/shards" --deberta "$BIN" --sharing gdes,nes --seeds 1,2 --parallel 2 --threads 1 \
        -- --preset test --max_seq_len 32 --batch 2 --steps 4 --eval-every 2 --eval-batches 1 >"$TMP/a1.log" 2>&1 || { cat "$TMP/a1.log"; fail "ablate run"; }
    $A finetune "$TMP/abl" --deberta "$BIN" --threads 1 >"$TMP/a2.log" 2>&1 || { cat "$TMP/a2.log"; fail "ablate finetune"; }
    [ "$(grep -c ': test acc ' "$TMP/a2.log")" = 6 ] || { cat "$TMP/a2.log"; fail "ablate finetune: expected 6 runs (4 pretrained, 2 scratch)"; }
    for r in gdes-seed1 gdes-seed2 nes-seed1 nes-seed2 scratch; do [ -s "$TMP/abl/finetune/$r/pos-seed1/results.txt" ] || fail "ablate finetune: $r"; done
    $A finetune "$TMP/abl" --deberta "$BIN" --threads 1 >"$TMP/a3.log" 2>&1 && [ "$(grep -c 'done earlier' "$TMP/a3.log")" = 6 ] ||
        { cat "$TMP/a3.log"; fail "ablate finetune re-run did not skip"; }
    $A summary "$TMP/abl" --baseline gdes --no-plots >"$TMP/a4.log" 2>&1 || { cat "$TMP/a4.log"; fail "ablate summary"; }
    grep -q '^| variant | n | .* | pos test acc (fine-tuned) | pos best dev acc | params' "$TMP/abl/summary.md" || { cat "$TMP/abl/summary.md"; fail "no downstream column"; }
    grep -q '^| nes | 2 | .* | [01]\.[0-9]* ± [01]\.[0-9]* | [01]\.[0-9]* ± [01]\.[0-9]* | [0-9,]* | [0-9,]* |$' "$TMP/abl/summary.md" || { cat "$TMP/abl/summary.md"; fail "nes row without the downstream values"; }
    grep -q '^Downstream, pos (task files pos-T24; fine-tuning 6 steps × 4 examples, lr 0.001, dev every 3): .*Scratch .*: [01]\.[0-9]* ± [01]\.[0-9]* (n=2); baselines: majority class 0\.3000, most frequent tag per word 1\.0000\.$' "$TMP/abl/summary.md" ||
        { cat "$TMP/abl/summary.md"; fail "no scratch / budget line"; }
    grep -q 'Δ pos test acc (fine-tuned) (t)' "$TMP/abl/summary.md" || fail "no paired downstream difference"
    grep -q '^variant,.*,ft_pos_acc_mean,ft_pos_acc_sd,' "$TMP/abl/summary.csv" || fail "summary.csv: no downstream columns"
    ok "ablate.sh finetune: 4 grid runs + scratch fine-tuned (re-run skips them); summary: downstream column, scratch floor, paired difference, CSV"
else
    e2e_skip_part "ablate.sh finetune: $PY lacks numpy or h5py"
fi
e2e_end e2e-finetune-table
