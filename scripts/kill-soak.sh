#!/bin/sh
# kill-soak.sh — kills a tiny pretraining again and again and resumes it each time; its final
# checkpoint must equal an uninterrupted run's.
#   sh scripts/kill-soak.sh [--np 1|2] [--kills N] [--seed S] [--steps T]   (defaults: 2, 20, 1, 4000)
# With --np 2 the run is `mpirun -np 2` (as tests/e2e-mpi.sh launches it) and each kill picks the
# launcher, rank 0 or rank 1; with --np 1 it is the one process.  Each kill sends SIGKILL or SIGTERM
# either at a random moment (0 to 0.8 s after the run has logged a new step) or while a checkpoint
# is being written (the moment RUN/checkpoint.h5.tmp appears).  After each kill: every process of
# the job gone within 60 s (else a hang), an existing RUN/checkpoint.h5 intact (deberta seal
# --check); then --resume (a fresh start when no checkpoint was written yet).  At the end the run
# is resumed to step T (no .tmp may be left) and compared with an uninterrupted run of T steps: checkpoint.h5 and
# metrics.jsonl byte-identical with --np 1; with --np 2 /params and /optim bit-identical (h5diff)
# and metrics.jsonl identical, the same result as the resumed 2-rank run of tests/e2e-mpi.sh.
# Prints one line per kill and a summary; exit 0 when every check held.  BUILD=build-double for
# the double build; KEEP=1 keeps the work directory.
set -u
. "$(dirname "$0")/../tests/lib-e2e.sh"  # changes to the repository root
NP=2 KILLS=20 SEED=1 STEPS=4000
while [ $# -gt 0 ]; do
    case $1 in
    --np) NP=$2; shift 2 ;;
    --kills) KILLS=$2; shift 2 ;;
    --seed) SEED=$2; shift 2 ;;
    --steps) STEPS=$2; shift 2 ;;
    *) echo "error: kill-soak.sh: unknown option '$1' (--np, --kills, --seed, --steps)" >&2; exit 2 ;;
    esac
done
BUILD=${BUILD:-build}
D=$BUILD/deberta
PY=/usr/bin/python3
fail() { echo "FAIL: kill-soak: $*"; exit 1; }
[ -x "$D" ] || fail "$D is not built"
[ -x "$PY" ] || { echo "SKIPPED: kill-soak: $PY not found (the kill timing and the rank lookup use it)"; exit 77; }
if [ "$NP" = 2 ]; then
    command -v mpirun > /dev/null 2>&1 || { echo "SKIPPED: kill-soak: mpirun not found"; exit 77; }
    ldd "$D" | grep -q libmpi || { echo "SKIPPED: kill-soak: $D was built without MPI"; exit 77; }
fi
W=$(mktemp -d /tmp/deberta-kill-soak.XXXXXX)
JOB=""
cleanup() { [ -n "$JOB" ] && kill -KILL $JOB 2>/dev/null; [ -n "${KEEP:-}" ] && echo "kept $W" || rm -rf "$W"; }
trap cleanup EXIT
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
MPI="mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x ASAN_OPTIONS=detect_leaks=0"
# exec: run in the background, $! is the launcher itself (not a subshell around it)
launch() { if [ "$NP" = 2 ]; then exec $MPI $D "$@"; else exec $D "$@"; fi; }
# rnd N K: a number in [0, N), the K-th draw of this attempt, from the soak's seed
rnd() { awk -v s="$SEED" -v a="$attempt" -v k="$2" -v n="$1" 'BEGIN { srand(s * 7919 + a * 16 + k); print int(rand() * n) }'; }

e2e_corpus 7 300 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 320 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }
# dropout on (its masks are keyed by position: a resume must draw the same ones); a checkpoint every
# 3 steps, so that many kills fall near one
ARGS="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps $STEPS --save-every 3 --eval-every 0 --eval-batches 1 --log-every 1 --lr 1e-3 --hidden_dropout_prob 0.1 --attention_probs_dropout_prob 0.1"

# The job's processes: the launcher and (with --np 2) its rank children, as "pid:what" words.
procs() {
    echo "$JOB:launcher"
    [ "$NP" = 2 ] || return 0
    for p in $(ps -o pid= --ppid "$JOB" 2>/dev/null); do
        r=$(tr '\0' '\n' < /proc/$p/environ 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
        [ -n "$r" ] && echo "$p:rank$r"
    done
}
logged() { c=$(grep -c '"kind":"train"' "$W/run/metrics.jsonl" 2>/dev/null); echo "${c:-0}"; }
ckpt_step() { h5dump -a /step "$1" 2>/dev/null | sed -n 's/^ *(0): \([0-9]*\).*/\1/p'; }

# A poller in python: sends SIG to PID the moment PATH exists (polled without sleeping), or gives
# up after 20 s; prints "hit" or "missed".
cat > "$W/at_write.py" <<'EOF'
import os, sys, time
path, pid, sig = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
end = time.time() + 20
while time.time() < end:
    if os.path.exists(path):
        os.kill(pid, sig); print("hit"); sys.exit(0)
    try: os.kill(pid, 0)
    except OSError: break
print("missed")
EOF

kills=0 during_write=0 hangs=0 attempt=0 tmps=0
summary=""
while [ $kills -lt "$KILLS" ]; do
    attempt=$((attempt + 1))
    [ $attempt -le $((KILLS * 3)) ] || fail "only $kills kills in $((attempt - 1)) attempts (the run ends too soon: raise --steps)"
    if [ -f "$W/run/checkpoint.h5" ]; then
        launch pretrain --resume "$W/run" --data "$W/shards" > "$W/job.log" 2>&1 &
    else
        rm -rf "$W/run"
        launch pretrain $ARGS --out "$W/run" > "$W/job.log" 2>&1 &
    fi
    JOB=$!
    base=$(logged)
    # wait for a new logged step (the job is past its start), at most 60 s
    n=0
    while [ "$(logged)" -le "$base" ]; do
        n=$((n + 1))
        if ! kill -0 $JOB 2>/dev/null; then wait $JOB; rc=$?; JOB=""; cat "$W/job.log"; fail "the job ended (exit $rc) before logging a step"; fi
        [ $n -lt 600 ] || { cat "$W/job.log"; fail "the job logged no step in 60 s"; }
        sleep 0.1
    done
    [ "$(logged)" -lt "$STEPS" ] || { wait $JOB; JOB=""; fail "the run reached step $STEPS during the kills (raise --steps)"; }
    # the victim and the signal
    if [ "$NP" = 2 ]; then
        sleep 0.2  # the ranks are children of mpirun by now
        set -- $(procs)
        [ $# -eq 3 ] || { echo "processes: $*"; fail "expected the launcher and two ranks"; }
        shift $(rnd 3 1)
        victim=$1
    else
        victim=$JOB:process
    fi
    vpid=${victim%%:*} what=${victim#*:}
    if [ "$(rnd 2 2)" = 0 ]; then sig=KILL; signum=9; else sig=TERM; signum=15; fi
    all=$(procs | sed 's/:.*//' | tr '\n' ' ')
    if [ "$(rnd 3 3)" = 0 ]; then
        how=$("$PY" "$W/at_write.py" "$W/run/checkpoint.h5.tmp" "$vpid" "$signum")
        [ "$how" = hit ] && { how="during a checkpoint write"; during_write=$((during_write + 1)); } || how="(no checkpoint write seen in 20 s: not killed)"
    else
        ms=$(rnd 800 4)
        sleep "$(awk -v m="$ms" 'BEGIN { printf "%.3f", m / 1000 }')"
        kill -$sig "$vpid" 2>/dev/null && how="after $ms ms" || how="after $ms ms (already gone)"
    fi
    at=$(logged)
    # every process of the job gone within 60 s
    n=0
    while :; do
        alive=""
        for p in $all; do kill -0 "$p" 2>/dev/null && [ "$(ps -o stat= -p "$p" | cut -c1)" != Z ] && alive="$alive $p"; done
        [ -z "$alive" ] && break
        n=$((n + 1))
        if [ $n -ge 600 ]; then
            hangs=$((hangs + 1))
            ps -o pid,stat,etime,args -p "$(echo $alive | tr ' ' ',')"
            kill -KILL $alive 2>/dev/null
            fail "SIG$sig to $what ($how): processes$alive still running after 60 s"
        fi
        sleep 0.1
    done
    wait $JOB; rc=$?
    JOB=""
    case $how in "(no checkpoint"*) echo "     attempt $attempt: $how"; continue ;; esac
    kills=$((kills + 1))
    ck="no checkpoint yet"
    if [ -f "$W/run/checkpoint.h5" ]; then
        $D seal --check "$W/run/checkpoint.h5" > "$W/seal.log" 2>&1 || { cat "$W/seal.log"; fail "after SIG$sig to $what ($how): checkpoint.h5 is damaged"; }
        ck="checkpoint intact at step $(ckpt_step "$W/run/checkpoint.h5")"
    fi
    left=""
    [ -e "$W/run/checkpoint.h5.tmp" ] && { left=", checkpoint.h5.tmp left behind"; tmps=$((tmps + 1)); }
    echo "kill $kills: SIG$sig to $what $how, at logged step $at: exit $rc, all gone, $ck$left"
    summary="$summary $sig/$what"
done

# the end: resume to step T, then an uninterrupted run of T steps
if [ -f "$W/run/checkpoint.h5" ]; then
    (launch pretrain --resume "$W/run" --data "$W/shards" > "$W/final.log" 2>&1) || { cat "$W/final.log"; fail "the final --resume"; }
else
    rm -rf "$W/run"; (launch pretrain $ARGS --out "$W/run" > "$W/final.log" 2>&1) || { cat "$W/final.log"; fail "the final run"; }
fi
(launch pretrain $ARGS --out "$W/ref" > "$W/ref.log" 2>&1) || { cat "$W/ref.log"; fail "the uninterrupted run"; }
[ "$(ckpt_step "$W/run/checkpoint.h5")" = "$STEPS" ] || fail "the soaked run's checkpoint is not of step $STEPS"
[ -z "$(find "$W/run" -name '*.tmp')" ] || { ls -la "$W/run"; fail "a .tmp is left in the run directory after the final run"; }
cmp -s "$W/run/metrics.jsonl" "$W/ref/metrics.jsonl" || { diff "$W/run/metrics.jsonl" "$W/ref/metrics.jsonl" | head -6; fail "metrics.jsonl differs from the uninterrupted run's"; }
if [ "$NP" = 1 ]; then
    cmp -s "$W/run/checkpoint.h5" "$W/ref/checkpoint.h5" || { h5diff "$W/run/checkpoint.h5" "$W/ref/checkpoint.h5" | head; fail "checkpoint.h5 differs from the uninterrupted run's"; }
    same="checkpoint.h5 and metrics.jsonl byte-identical"
else
    h5diff -q "$W/run/checkpoint.h5" "$W/ref/checkpoint.h5" /params /params || fail "/params differ from the uninterrupted 2-rank run's"
    h5diff -q "$W/run/checkpoint.h5" "$W/ref/checkpoint.h5" /optim /optim || fail "/optim differs from the uninterrupted 2-rank run's"
    if cmp -s "$W/run/checkpoint.h5" "$W/ref/checkpoint.h5"; then same="checkpoint.h5 and metrics.jsonl byte-identical"
    else same="/params and /optim bit-identical, metrics.jsonl byte-identical"; fi
fi
echo "kill-soak (np $NP, seed $SEED): $kills kills ($during_write during a checkpoint write; $(echo $summary | tr ' ' '\n' | sort | uniq -c | awk '{ printf "%s%s x%s", sep, $2, $1; sep = ", " }')), no hang, every checkpoint intact ($tmps kills left a .tmp, gone after the resume); resumed to step $STEPS: $same with an uninterrupted run"
