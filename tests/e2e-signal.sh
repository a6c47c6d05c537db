#!/bin/sh
# SIGTERM / SIGINT during `deberta pretrain`: the run finishes its step, writes a checkpoint of that
# step, says so on one line and exits 0; --resume then continues exactly (the checkpoint and
# metrics.jsonl equal those of an uninterrupted run); a second signal exits at once with no .tmp left.
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
D=$BUILD/deberta
[ -x "$D" ] || { echo "FAIL: $D is not built"; exit 1; }
W=$(mktemp -d /tmp/deberta-e2e-signal.XXXXXX)
[ -n "${KEEP:-}" ] || trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1

e2e_corpus 7 300 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 320 --val-fraction 0.1 > /dev/null 2>&1 || fail "prep"

# A run far too long to end by itself; the signal comes once it has logged 3 steps.
RUN="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps 1000000 --eval-every 0 --eval-batches 1 --save-every 0 --log-every 1"
# start_run NAME: starts the run in the background (PID), returns once 3 train lines are logged
start_run() {
    $D pretrain $RUN --out "$W/$1" > /dev/null 2> "$W/$1.log" &
    PID=$!
    e2e_wait_logged "$W/$1/metrics.jsonl" 3 $PID "$W/$1.log"
}
ckpt_step() { h5dump -a /step "$1" | sed -n 's/^ *(0): \([0-9]*\).*/\1/p'; }

for sig in TERM INT; do
    start_run "$sig"
    kill -$sig $PID
    wait $PID; rc=$?
    [ $rc -eq 0 ] || { cat "$W/$sig.log"; fail "SIG$sig: exit $rc, expected 0"; }
    grep -q "^stopped by SIG$sig after step [0-9]*: checkpoint written to .*--resume" "$W/$sig.log" || { cat "$W/$sig.log"; fail "SIG$sig: no 'stopped by' line"; }
    n=$(sed -n "s/^stopped by SIG$sig after step \([0-9]*\):.*/\1/p" "$W/$sig.log")
    [ "$(ckpt_step "$W/$sig/checkpoint.h5")" = "$n" ] || fail "SIG$sig: checkpoint.h5 is not of step $n"
    [ "$(grep -c '"kind":"train"' "$W/$sig/metrics.jsonl")" = "$n" ] || fail "SIG$sig: metrics.jsonl does not end at step $n"
    [ -z "$(find "$W/$sig" -name '*.tmp')" ] || fail "SIG$sig left a .tmp file"
    ok "SIG$sig: the run finished step $n, wrote its checkpoint, said so and exited 0"
    [ $sig = TERM ] && n_term=$n
done
n=$n_term

# exact continuation: stopped at n + --resume --stop-after 3 == one uninterrupted invocation of n + 3 steps
$D pretrain --resume "$W/TERM" --data "$W/shards" --stop-after 3 > "$W/resume.log" 2>&1 || { cat "$W/resume.log"; fail "--resume after SIGTERM"; }
$D pretrain $RUN --out "$W/ref" --stop-after $((n + 3)) > "$W/ref.log" 2>&1 || { cat "$W/ref.log"; fail "reference run"; }
cmp -s "$W/TERM/checkpoint.h5" "$W/ref/checkpoint.h5" || { h5diff "$W/TERM/checkpoint.h5" "$W/ref/checkpoint.h5" | head; fail "the resumed run's checkpoint differs from the uninterrupted run's"; }
cmp -s "$W/TERM/metrics.jsonl" "$W/ref/metrics.jsonl" || fail "the resumed run's metrics.jsonl differs from the uninterrupted run's"
ok "--resume after SIGTERM at step $n, 3 more steps == $((n + 3)) uninterrupted steps (checkpoint.h5 and metrics.jsonl byte-identical)"

# a second signal: exit at once (128 + signal, one error line), never a .tmp left behind.  Runs 1
# and 2 are stopped (SIGSTOP, waited for) while both signals are sent: both are delivered before it
# runs again, so it must exit 130 or 143 (Linux delivers the lower-numbered SIGINT first, unless
# SIGTERM came in before the stop took hold).  Run 3 gets them while running: 130 or 143, or 0 (as
# after one signal) if the checkpoint was already written when the second came.
stopped() { [ "$(sed 's/^.*) \(.\).*/\1/' /proc/$1/stat 2>/dev/null)" = T ]; }
for k in 1 2 3; do
    start_run "twice$k"
    if [ $k -lt 3 ]; then
        kill -STOP $PID
        n=0; until stopped $PID; do n=$((n + 1)); [ $n -lt 100 ] || fail "SIGSTOP did not stop the run"; sleep 0.05; done
        kill -TERM $PID; kill -INT $PID; kill -CONT $PID
    else
        kill -TERM $PID; kill -INT $PID
    fi
    wait $PID; rc=$?
    case $k:$rc in
    3:0) grep -q "^stopped by SIGTERM" "$W/twice$k.log" || { cat "$W/twice$k.log"; fail "two signals, exit 0 without the 'stopped by' line"; } ;;
    *:130|*:143) grep -q "^error: interrupted a second time" "$W/twice$k.log" || { cat "$W/twice$k.log"; fail "second signal: no error line"; } ;;
    *) cat "$W/twice$k.log"; fail "two signals (run $k): exit $rc, expected 130 or 143$([ $k = 3 ] && echo ', or 0 if the checkpoint was done first')" ;;
    esac
    [ -z "$(find "$W/twice$k" -name '*.tmp')" ] || fail "two signals left a .tmp file"
    [ ! -e "$W/twice$k/checkpoint.h5" ] || $D eval "$W/twice$k/checkpoint.h5" --data "$W/shards" --batches 1 > /dev/null 2>&1 || fail "two signals left a bad checkpoint.h5"
    echo "     two signals (run $k): exit $rc"
done
ok "a second signal exits at once (status 128 + signal) with no .tmp left"
echo "e2e-signal: all checks passed"
