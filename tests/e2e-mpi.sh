#!/bin/sh
# End-to-end data-parallel pretraining under Open MPI (mpirun -np 2, train/dist.h):
#   equivalence: 2 ranks x batch B == 1 process x batch 2B for 5 steps with dropout on, in
#     GDES/decoupled and in ES/joint: parameters within 1e-6 (float) / 1e-12 (double) of each
#     other and the same logged losses (both precisions; the tolerances are explained below);
#   the multi-machine launch (a hostfile, the TCP transport over loopback) == shared memory bit for bit;
#   ZeRO-1 (--zero 1: moments sharded, reduce-scatter + allgather) == plain 2-rank data parallel bit
#     for bit (parameters, moments, metrics), also across a stop and --resume (both precisions);
#   faults (both precisions): rank 1 SIGKILLed mid-run -> every rank gone within seconds with a
#     non-zero exit and rank 0's one-line error; --resume then continues exactly (bit-identical to
#     an uninterrupted 2-rank run); resuming with another number of processes is refused;
#   bad launch: ranks given different flags, or different data -> one error line on every rank.
# Skips (exit 77) when mpirun, an MPI build or python3 with h5py/numpy is missing.
set -u
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
D=$BIN
PRECISION=${PRECISION:-float}
e2e_need_mpi "$D"
e2e_need_h5py
W=$(mktemp -d /tmp/deberta-e2e-mpi.XXXXXX)
MPIRUN_PID=""
trap '[ -n "$MPIRUN_PID" ] && kill -KILL $MPIRUN_PID 2>/dev/null; rm -rf "$W"' EXIT
# one thread per rank; OMP_WAIT_POLICY set so that the binary does not re-execute itself
MPI="mpirun --allow-run-as-root --oversubscribe -np 2 -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x ASAN_OPTIONS=detect_leaks=0"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE

e2e_corpus 7 300 5 1 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 320 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }

# Compares two runs: every parameter tensor of checkpoint.h5 and every number of metrics.jsonl.
# Parameters: per tensor, max |a - b| / max |a| <= tol.  Float: the two runs sum the gradient in a
# different order (one GEMM over 2B rows vs two over B rows plus the allreduce), so they differ by
# rounding (~1e-7 relative per element); five AdamW steps amplify that where the update divides a
# tiny gradient by its own size (zero-initialised biases and E_delta), measured up to ~8e-6 of a
# tensor's largest entry, while the whole parameter vector agrees to ~5e-9 (norm of the difference /
# norm).  So float checks the whole vector against 1e-6 and each tensor against 1e-4; double checks
# each tensor against 1e-12 (measured ~5e-15).  Logged numbers: relative 1e-5 (float; printed with
# 9 digits) or 1e-12 (double), counts exactly; in float the evaluation's RTD AUC gets 1e-3: two
# near-equal logits that swap order move it by one pair in pos x neg (~3e-5, seen with --accum 2).
cat > "$W/compare.py" <<'EOF'
import h5py, json, math, numpy as np, sys
a_dir, b_dir, prec = sys.argv[1], sys.argv[2], sys.argv[3]
tol_tensor, tol_all, tol_log = (1e-4, 1e-6, 1e-5) if prec == "float" else (1e-12, 1e-12, 1e-12)
fa, fb = h5py.File(a_dir + "/checkpoint.h5", "r"), h5py.File(b_dir + "/checkpoint.h5", "r")
names = []
fa["params"].visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
worst, worst_name, dd, xx = 0.0, "", 0.0, 0.0
for n in names:
    x, y = fa["params"][n][()].astype(np.float64), fb["params"][n][()].astype(np.float64)
    r = np.abs(x - y).max() / max(np.abs(x).max(), 1e-30)
    if not r <= worst: worst, worst_name = (r if r == r else math.inf), n  # NaN counts as the worst
    dd += ((x - y) ** 2).sum(); xx += (x ** 2).sum()
rel_all = math.sqrt(dd / xx)
print("params: %d tensors, worst tensor %.2g (%s), whole vector %.2g" % (len(names), worst, worst_name, rel_all))
bad = not (worst <= tol_tensor and rel_all <= tol_all)  # NaN-safe
la = [json.loads(l) for l in open(a_dir + "/metrics.jsonl")]
lb = [json.loads(l) for l in open(b_dir + "/metrics.jsonl")]
if len(la) != len(lb): print("metrics: %d lines vs %d" % (len(la), len(lb))); sys.exit(1)
worst_log = 0.0
for x, y in zip(la, lb):
    if set(x) != set(y): print("metrics: keys differ", x, y); sys.exit(1)
    for k in x:
        u, v = x[k], y[k]
        if isinstance(u, float) or isinstance(v, float):
            tol = 1e-3 if (k == "rtd_auc" and prec == "float") else tol_log
            if u is None or v is None or not (abs(u - v) <= tol * max(abs(u), abs(v), 1e-30)):
                print("metrics step %s: %s %r vs %r" % (x["step"], k, u, v)); sys.exit(1)
            if k != "rtd_auc": worst_log = max(worst_log, abs(u - v) / max(abs(u), abs(v), 1e-30))
        elif u != v:
            print("metrics step %s: %s %r vs %r" % (x["step"], k, u, v)); sys.exit(1)
print("metrics: %d lines, worst relative difference %.2g (AUC aside)" % (len(la), worst_log))
sys.exit(1 if bad else 0)
EOF

COMMON="--preset test --max_seq_len 32 --data $W/shards --steps 5 --eval-every 5 --eval-batches 3 --save-every 5 --log-every 1 --lr 1e-3 --hidden_dropout_prob 0.1 --attention_probs_dropout_prob 0.1"
for mode in "gdes decoupled" "es joint"; do
    set -- $mode
    M="--embedding_sharing $1 --training_mode $2"
    $D pretrain $COMMON $M --batch 8 --out "$W/one-$1" > "$W/one-$1.log" 2>&1 || { cat "$W/one-$1.log"; fail "$1/$2: 1 process x batch 8"; }
    $MPI $D pretrain $COMMON $M --batch 4 --out "$W/two-$1" > "$W/two-$1.log" 2>&1 || { cat "$W/two-$1.log"; fail "$1/$2: 2 ranks x batch 4"; }
    grep -q " x 2 ranks" "$W/two-$1.log" || { cat "$W/two-$1.log"; fail "$1/$2: the 2-rank run did not report 2 ranks"; }
    "$PY" "$W/compare.py" "$W/one-$1" "$W/two-$1" "$PRECISION" > "$W/cmp-$1.txt" 2>&1 || { cat "$W/cmp-$1.txt"; fail "$1/$2: 2 ranks x 4 differ from 1 x 8"; }
    ok "$1/$2 ($PRECISION): 2 ranks x batch 4 == 1 process x batch 8 over 5 steps with dropout: $(tr '\n' ';' < "$W/cmp-$1.txt")"
done
# ZeRO-1: with 2 ranks each gradient element is the same one addition, and the norm's per-chunk
# partial sums are the same numbers, so the result must be bit-identical to plain data parallel
$MPI $D pretrain $COMMON --batch 4 --zero 1 --out "$W/zero" > "$W/zero.log" 2>&1 || { cat "$W/zero.log"; fail "ZeRO-1 run"; }
grep -q "ZeRO-1: rank 0 keeps" "$W/zero.log" || { cat "$W/zero.log"; fail "ZeRO-1 run did not report its moments"; }
cmp -s "$W/two-gdes/metrics.jsonl" "$W/zero/metrics.jsonl" || { diff "$W/two-gdes/metrics.jsonl" "$W/zero/metrics.jsonl" | head -4; fail "ZeRO-1 metrics differ from plain data parallel"; }
h5diff -q "$W/two-gdes/checkpoint.h5" "$W/zero/checkpoint.h5" /params /params || fail "ZeRO-1 parameters differ from plain data parallel"
h5diff -q "$W/two-gdes/checkpoint.h5" "$W/zero/checkpoint.h5" /optim /optim || fail "ZeRO-1 moments (gathered for the checkpoint) differ from plain data parallel"
$MPI $D pretrain $COMMON --batch 4 --zero 1 --stop-after 2 --out "$W/zr" > "$W/zr1.log" 2>&1 || { cat "$W/zr1.log"; fail "ZeRO-1 run, part 1"; }
$MPI $D pretrain --resume "$W/zr" --data "$W/shards" > "$W/zr2.log" 2>&1 || { cat "$W/zr2.log"; fail "ZeRO-1 resume"; }
cmp -s "$W/zero/metrics.jsonl" "$W/zr/metrics.jsonl" && h5diff -q "$W/zero/checkpoint.h5" "$W/zr/checkpoint.h5" /params /params &&
    h5diff -q "$W/zero/checkpoint.h5" "$W/zr/checkpoint.h5" /optim /optim || fail "ZeRO-1: 2 steps + --resume differ from 5 uninterrupted steps"
ok "ZeRO-1 == plain data parallel bit for bit (metrics.jsonl, /params, /optim), also across --stop-after 2 + --resume; $(grep -o 'ZeRO-1: .*' "$W/zero.log")"
# LAMB under ZeRO-1: bit-identical to plain data parallel too.  (Its trust ratio needs each tensor's
# norms over all of its chunks; with this preset no tensor is cut by a shard boundary, so the sum of
# those norms over the ranks is checked where one is: tests/test_optim.c lamb_sharded_equals_unsharded.)
$MPI $D pretrain $COMMON --batch 4 --optimizer lamb --out "$W/lamb" > "$W/lamb.log" 2>&1 || { cat "$W/lamb.log"; fail "--optimizer lamb on 2 ranks"; }
$MPI $D pretrain $COMMON --batch 4 --optimizer lamb --zero 1 --out "$W/lambz" > "$W/lambz.log" 2>&1 || { cat "$W/lambz.log"; fail "--optimizer lamb --zero 1"; }
grep -qx "train_optimizer = lamb" "$W/lambz/config.txt" || fail "--optimizer lamb: config.txt does not say train_optimizer = lamb"
cmp -s "$W/lamb/metrics.jsonl" "$W/lambz/metrics.jsonl" && h5diff -q "$W/lamb/checkpoint.h5" "$W/lambz/checkpoint.h5" /params /params &&
    h5diff -q "$W/lamb/checkpoint.h5" "$W/lambz/checkpoint.h5" /optim /optim || fail "--optimizer lamb: ZeRO-1 differs from plain data parallel"
! h5diff -q "$W/two-gdes/checkpoint.h5" "$W/lamb/checkpoint.h5" /params /params >/dev/null 2>&1 || fail "--optimizer lamb gave adamw's parameters"
ok "--optimizer lamb: ZeRO-1 == plain data parallel bit for bit (metrics.jsonl, /params, /optim), and not adamw's result"

# --minutes on 2 ranks: the run ends (a timeout catches a hang) at the steps rank 0 chose.  (Rank 0's clock
# also says how many steps each calibration times; the ranks stay in step through the allreduce, so a
# missing broadcast of that decision would rarely show here.)
timeout 300 $MPI $D pretrain $COMMON --batch 4 --minutes 0.05 --out "$W/min" > "$W/min.log" 2>&1 || { cat "$W/min.log"; fail "--minutes on 2 ranks"; }
chosen=$(sed -n 's/^calibration: .*-> \([0-9]*\) steps in .* minutes$/\1/p' "$W/min.log" | head -n 1)
[ -n "$chosen" ] || { cat "$W/min.log"; fail "--minutes on 2 ranks: no calibration line"; }
[ "$chosen" -ge 20 ] || chosen=20
grep -qx "train_steps = $chosen" "$W/min/config.txt" || fail "--minutes on 2 ranks: config.txt does not hold the $chosen steps chosen"
ok "--minutes on 2 ranks: $(grep -o '^calibration: .*' "$W/min.log" | head -n 1)"

# the several-machines form (README): a hostfile, and Open MPI's TCP transport -- what ranks on
# different machines talk over; here over the loopback interface -- instead of shared memory
echo "localhost slots=2" > "$W/hosts"
mpirun --allow-run-as-root --oversubscribe --hostfile "$W/hosts" -np 2 --mca btl tcp,self --mca btl_tcp_if_include lo \
    -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x ASAN_OPTIONS=detect_leaks=0 \
    $D pretrain $COMMON --batch 4 --out "$W/tcp" > "$W/tcp.log" 2>&1 || { cat "$W/tcp.log"; fail "2 ranks over TCP with a hostfile"; }
cmp -s "$W/two-gdes/metrics.jsonl" "$W/tcp/metrics.jsonl" && h5diff -q "$W/two-gdes/checkpoint.h5" "$W/tcp/checkpoint.h5" /params /params ||
    fail "2 ranks over TCP (hostfile) differ from 2 ranks over shared memory"
ok "2 ranks launched with a hostfile over TCP (loopback) == over shared memory, bit for bit (metrics.jsonl, /params)"

# the comparison can fail: a different seed must be told apart
$D pretrain $COMMON --seed 99 --batch 8 --out "$W/other" > /dev/null 2>&1 || fail "seed-99 run"
"$PY" "$W/compare.py" "$W/one-gdes" "$W/other" "$PRECISION" > /dev/null 2>&1 && fail "the comparison accepted a run with another seed"
ok "the comparison rejects a run with another seed"

# ---- a rank SIGKILLed mid-run ----
LONG="--preset test --max_seq_len 32 --data $W/shards --batch 4 --steps 3000 --save-every 10 --log-every 1 --eval-every 0 --lr 1e-3"
$MPI $D pretrain $LONG --out "$W/K" > "$W/K1.log" 2>&1 &
MPIRUN_PID=$!
e2e_wait_logged "$W/K/metrics.jsonl" 25 $MPIRUN_PID "$W/K1.log"  # (a checkpoint at step 20 by then)
R1=""
for p in $(ps -o pid= --ppid $MPIRUN_PID); do
    tr '\0' '\n' < /proc/$p/environ 2>/dev/null | grep -qx OMPI_COMM_WORLD_RANK=1 && R1=$p
done
[ -n "$R1" ] || fail "rank 1's process not found among mpirun's children"
t0=$(date +%s)
kill -KILL "$R1"
e2e_wait_end $MPIRUN_PID 30 "rank 1 SIGKILLed: the job"
rc=$E2E_RC MPIRUN_PID=""
[ $rc -ne 0 ] || fail "rank 1 SIGKILLed: mpirun exited 0"
grep -q "rank 0: stopped by the launcher" "$W/K1.log" || { cat "$W/K1.log"; fail "rank 0 did not say why it stopped"; }
ok "rank 1 SIGKILLed at step >= 25: every rank gone within $(( $(date +%s) - t0 + 1 )) s, exit $rc, rank 0: '$(grep -o 'rank 0: stopped by the launcher[^;]*' "$W/K1.log")'"
$MPI $D pretrain --resume "$W/K" --data "$W/shards" --stop-after 10 > "$W/K2.log" 2>&1 || { cat "$W/K2.log"; fail "resume after the SIGKILL"; }
s0=$(sed -n 's/^resuming .* at step \([0-9]*\) of .*/\1/p' "$W/K2.log")
[ -n "$s0" ] || { cat "$W/K2.log"; fail "resume did not say where it resumed"; }
$MPI $D pretrain $LONG --out "$W/R" --stop-after $((s0 + 10)) > "$W/R.log" 2>&1 || { cat "$W/R.log"; fail "uninterrupted reference run"; }
cmp -s "$W/K/metrics.jsonl" "$W/R/metrics.jsonl" || { diff "$W/K/metrics.jsonl" "$W/R/metrics.jsonl" | head -5; fail "resumed metrics differ from the uninterrupted run's"; }
h5diff -q "$W/K/checkpoint.h5" "$W/R/checkpoint.h5" /params /params || fail "resumed weights differ from the uninterrupted run's"
h5diff -q "$W/K/checkpoint.h5" "$W/R/checkpoint.h5" /optim /optim || fail "resumed optimizer moments differ"
ok "exact resume after the SIGKILL: from step $s0 for 10 steps == an uninterrupted 2-rank run (metrics.jsonl identical, /params and /optim bit-identical)"
# (a resume on another number of ranks: tests/e2e-mpi-reshape.sh)

# ---- ranks launched differently ----
C="--preset test --max_seq_len 32 --steps 5 --batch 4 --out $W/X"
MPI1="mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x ASAN_OPTIONS=detect_leaks=0 -np 1"
$MPI1 $D pretrain $C --data "$W/shards" --lr 1e-3 : -np 1 $D pretrain $C --data "$W/shards" --lr 2e-3 > "$W/X1.log" 2>&1 && fail "ranks with different --lr ran"
[ "$(grep -c '^error: rank [01]: the ranks disagree on the options' "$W/X1.log")" = 2 ] || { cat "$W/X1.log"; fail "different flags: not one error line on each rank"; }
grep -q "rank 0 has 'train_lr = 0.001', this rank 'train_lr = 0.002'" "$W/X1.log" || { cat "$W/X1.log"; fail "different flags: the differing option is not named"; }
ok "different flags on two ranks -> one error line on each rank, e.g. '$(grep '^error: rank 1' "$W/X1.log")'"
rm -rf "$W/X"
head -c 20000 "$W/corpus.txt" > "$W/small.txt"
$D prep --input "$W/small.txt" --out "$W/shards2" --vocab-size 320 --val-fraction 0.1 > /dev/null 2>&1 || fail "prep of the second data set"
$MPI1 $D pretrain $C --data "$W/shards" : -np 1 $D pretrain $C --data "$W/shards2" > "$W/X2.log" 2>&1 && fail "ranks with different data ran"
[ "$(grep -c '^error: rank [01]: the ranks disagree on the data' "$W/X2.log")" = 2 ] || { cat "$W/X2.log"; fail "different data: not one error line on each rank"; }
ok "different --data on two ranks -> one error line each: '$(grep '^error: rank 0' "$W/X2.log")'"
echo "e2e-mpi: all checks passed"
