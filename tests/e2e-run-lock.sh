#!/bin/sh
# One writer per run directory (train/run.h): while a pretraining or fine-tuning run writes RUNDIR, a
# second writer (--resume RUNDIR, or --out RUNDIR) is refused with one error line naming the holder
# (pid, host, since when) and the first run is unharmed (its metrics.jsonl and cmdline.txt hold only its
# own lines); a reader (eval) reads the checkpoint meanwhile; after the holder is killed with SIGKILL its
# lock file stays behind, but --resume continues the run.
set -u
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
e2e_tmpdir W deberta-e2e-run-lock
T=$W
export OMP_NUM_THREADS=1

. tests/lib-brown.sh
make_brown_corpus "$W/corpus"
$BIN prep --input "$W/corpus/brown.txt" "$W/corpus/other.txt" --out "$W/data" --vocab-size 400 --holdout-brown "$W/corpus/brown-tagged" \
    > /dev/null 2>&1 || fail "prep"
$BIN prep-task --task pos --brown "$W/corpus/brown-tagged" --shards "$W/data" --out "$W/task" --seq-len 24 > /dev/null 2>&1 || fail "prep-task"

# the train steps of a metrics.jsonl are 1, 2, 3, ... (a second writer's lines would repeat or skip)
steps_in_order() {
    # (awk runs END after an `exit` in a rule, and END's own exit sets the status: the flag carries it)
    sed -n 's/^{"kind":"train","step":\([0-9]*\),.*/\1/p' "$1" | awk 'BEGIN { n = 0 } $1 != n + 1 { bad = 1; exit } { n = $1 } END { exit bad || n < 3 }'
}
# the check itself: steps out of order, repeated or too few are told apart from 1, 2, 3
for s in "1 2 4 3" "1 2 3 3" "1 2 3 5 4" "2 3 4" "1 2"; do
    for k in $s; do echo "{\"kind\":\"train\",\"step\":$k,\"loss\":1}"; done > "$W/steps.jsonl"
    ! steps_in_order "$W/steps.jsonl" || fail "steps_in_order accepted the steps $s"
done
printf '{"kind":"train","step":%d,"loss":1}\n' 1 2 3 4 > "$W/steps.jsonl"
steps_in_order "$W/steps.jsonl" || fail "steps_in_order refused the steps 1 2 3 4"
# check_writer KIND RUN PID LOG SECOND...: the lock names PID; SECOND (a whole command) is refused with one
# line naming the holder; then PID is killed with SIGKILL and its logs hold its own lines only
check_writer() {
    kind=$1 run=$2 pid=$3 log=$4; shift 4
    e2e_wait_logged "$run/metrics.jsonl" 3 $pid "$log"
    grep -q "^pid = $pid$" "$run/lock" && grep -q "^host = $(hostname)$" "$run/lock" && grep -q "^since = 20[0-9-]* [0-9:]* UTC$" "$run/lock" ||
        { cat "$run/lock"; fail "$kind: RUN/lock does not name the holder"; }
    e2e_bad "run directory $run is in use: pid $pid on host $(hostname) has held $run/lock since 20" -- "$@"
    ok "$kind: a second writer is refused: $(cut -c1-160 "$T/err")"
    kill -0 $pid 2>/dev/null || fail "$kind: the first run ended while the second was refused"
    kill -9 $pid
    wait $pid 2>/dev/null
    steps_in_order "$run/metrics.jsonl" || { cat "$run/metrics.jsonl"; fail "$kind: metrics.jsonl holds lines that are not the first run's"; }
    [ "$(grep -vc '^#' "$run/cmdline.txt")" -eq 1 ] || { cat "$run/cmdline.txt"; fail "$kind: cmdline.txt holds another command"; }
    ok "$kind: the first run was unharmed (metrics.jsonl $(grep -c '"kind":"train"' "$run/metrics.jsonl") train lines in order, one command in cmdline.txt)"
}

# ---- pretraining
P="--data $W/data --preset test --max_seq_len 32 --batch 4 --steps 1000000 --eval-every 0 --save-every 1 --log-every 1"
$BIN pretrain $P --out "$W/pre" > /dev/null 2> "$W/pre.log" &
PID=$!
check_writer pretrain "$W/pre" $PID "$W/pre.log" $BIN pretrain --data "$W/data" --resume "$W/pre"
# (check_writer killed it; a second fresh run on the directory is refused by the checkpoint alone, see below)
[ -f "$W/pre/lock" ] || fail "the killed run's lock file is gone"
$BIN pretrain --data "$W/data" --resume "$W/pre" --stop-after 2 > /dev/null 2> "$W/resume.log" || { cat "$W/resume.log"; fail "--resume after SIGKILL"; }
grep -q "^resuming $W/pre at step [0-9]* of 1000000$" "$W/resume.log" || { cat "$W/resume.log"; fail "--resume after SIGKILL: no resuming line"; }
ok "pretrain: --resume after the holder's SIGKILL continues ($(grep '^resuming' "$W/resume.log"))"

# a fresh run on a directory in use: refused by the lock too (the first has no checkpoint yet, or has one)
$BIN pretrain $P --out "$W/pre2" > /dev/null 2> "$W/pre2.log" &
PID=$!
check_writer "pretrain --out" "$W/pre2" $PID "$W/pre2.log" $BIN pretrain $P --out "$W/pre2"

# a reader takes no lock: eval of a checkpoint of a running run
$BIN pretrain $P --out "$W/pre3" > /dev/null 2> "$W/pre3.log" &
PID=$!
e2e_wait_logged "$W/pre3/metrics.jsonl" 3 $PID "$W/pre3.log"
$BIN eval "$W/pre3/checkpoint.h5" --data "$W/data" > "$W/eval.out" 2>&1 || { cat "$W/eval.out"; kill -9 $PID; fail "eval while a run writes"; }
kill -9 $PID; wait $PID 2>/dev/null
ok "eval reads the checkpoint of a running run (readers take no lock)"

# ---- fine-tuning
F="--task pos --data $W/task --steps 1000000 --batch 4 --eval-every 0 --save-every 1 --log-every 1"
$BIN finetune --init "$W/pre/checkpoint.h5" $F --out "$W/ft" > /dev/null 2> "$W/ft.log" &
PID=$!
check_writer finetune "$W/ft" $PID "$W/ft.log" $BIN finetune --resume "$W/ft"
$BIN finetune --resume "$W/ft" --stop-after 2 > /dev/null 2> "$W/ftr.log" || { cat "$W/ftr.log"; fail "finetune --resume after SIGKILL"; }
grep -q "^resuming $W/ft at step [0-9]* of 1000000$" "$W/ftr.log" || { cat "$W/ftr.log"; fail "finetune --resume after SIGKILL: no resuming line"; }
ok "finetune: --resume after the holder's SIGKILL continues"
echo "all checks passed"
