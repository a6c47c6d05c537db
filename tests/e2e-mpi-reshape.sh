#!/bin/sh
# --resume on another number of ranks (train/pretrain.c, reshape_ranks): a run stopped after 2 of 5
# steps by N ranks and continued by M ranks keeps the global batch (per-rank batch recomputed; ZeRO-1's
# moment shards cut anew from the full moments in the checkpoint) and ends where the uninterrupted
# N-rank run ends, within the data-parallel bounds of tests/e2e-mpi.sh (its compare.py): 2 -> 1 and
# 1 -> 2 ranks, with and without ZeRO-1.  A global batch that does not divide among M ranks is one
# error line naming the rank counts that do.  Under mpirun rank 0 holds the run directory's lock.  Skips (77) without mpirun, an MPI build or h5py/numpy.
set -u
. "$(dirname "$0")/lib-e2e.sh"
e2e_need_bin
D=$BIN
PRECISION=${PRECISION:-float}
e2e_need_mpi "$D"
e2e_need_h5py
W=$(mktemp -d /tmp/deberta-e2e-mpi-reshape.XXXXXX)
trap 'rm -rf "$W"' EXIT
MPIX="mpirun --allow-run-as-root --oversubscribe -x OMP_NUM_THREADS=1 -x OMP_WAIT_POLICY=PASSIVE -x ASAN_OPTIONS=detect_leaks=0"
export OMP_NUM_THREADS=1 OMP_WAIT_POLICY=PASSIVE
# ranks N CMD...: CMD as one process (N = 1) or under mpirun -np N
ranks() { _np=$1; shift; if [ "$_np" -eq 1 ]; then "$@"; else $MPIX -np "$_np" "$@"; fi; }

e2e_corpus 7 300 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 320 --val-fraction 0.1 > "$W/prep.log" 2>&1 || { cat "$W/prep.log"; fail "prep"; }
# the comparison of tests/e2e-mpi.sh (every parameter tensor and metrics.jsonl number, its bounds)
sed -n "/^cat > \"\$W\/compare.py\" <<'EOF'$/,/^EOF$/p" tests/e2e-mpi.sh | sed '1d;$d' > "$W/compare.py"
[ -s "$W/compare.py" ] || fail "compare.py not found in tests/e2e-mpi.sh"

COMMON="--preset test --max_seq_len 32 --data $W/shards --steps 5 --eval-every 5 --eval-batches 3 --save-every 5 --log-every 1 --lr 1e-3"
# case N M ZERO: the uninterrupted N-rank run vs 2 steps on N ranks + --resume on M ranks
case_() {
    n=$1 m=$2 z=$3 tag=$1to$2-z$3
    b=$((8 / n))
    ranks "$n" $D pretrain $COMMON --batch $b --zero $z --out "$W/ref-$tag" > "$W/ref-$tag.log" 2>&1 || { cat "$W/ref-$tag.log"; fail "$tag: uninterrupted run"; }
    ranks "$n" $D pretrain $COMMON --batch $b --zero $z --stop-after 2 --out "$W/$tag" > "$W/$tag-1.log" 2>&1 || { cat "$W/$tag-1.log"; fail "$tag: first 2 steps"; }
    ranks "$m" $D pretrain --resume "$W/$tag" --data "$W/shards" > "$W/$tag-2.log" 2>&1 || { cat "$W/$tag-2.log"; fail "$tag: --resume on $m rank(s)"; }
    grep -q "^resuming .* at step 2 of 5$" "$W/$tag-2.log" || { cat "$W/$tag-2.log"; fail "$tag: no resuming line"; }
    grep -q "now $m rank" "$W/$tag-2.log" || { cat "$W/$tag-2.log"; fail "$tag: the resume did not say how the batch was cut"; }
    [ "$z" -eq 0 ] || [ "$m" -eq 1 ] || grep -q "ZeRO-1: rank 0 keeps" "$W/$tag-2.log" || { cat "$W/$tag-2.log"; fail "$tag: ZeRO-1 not on after the resume"; }
    "$PY" "$W/compare.py" "$W/ref-$tag" "$W/$tag" "$PRECISION" > "$W/cmp-$tag.txt" 2>&1 ||
        { cat "$W/cmp-$tag.txt"; fail "$tag: the continuation on $m rank(s) differs from the uninterrupted $n-rank run"; }
    grep -q "^train_batch = $((8 / m))$" "$W/$tag/config.txt" && { [ "$m" -eq 1 ] || grep -q "^train_ranks = $m$" "$W/$tag/config.txt"; } ||
        { cat "$W/$tag/config.txt"; fail "$tag: config.txt does not follow the new ranks"; }
    ok "$n -> $m ranks, ZeRO-1 $z ($PRECISION): 2 steps + --resume == 5 uninterrupted steps on $n: $(tr '\n' ';' < "$W/cmp-$tag.txt")"
}
case_ 2 1 0
case_ 1 2 0
case_ 2 1 1
case_ 1 2 1

# and on once more: a run resumed on other ranks resumes again (config.txt agrees with its checkpoint)
$D pretrain --resume "$W/2to1-z0" --data "$W/shards" > "$W/again.log" 2>&1 || { cat "$W/again.log"; fail "a second --resume of a reshaped run"; }

# a global batch that does not divide: one error line naming the counts that do
$D pretrain $COMMON --batch 4 --stop-after 1 --out "$W/odd" > /dev/null 2>&1 || fail "odd: first step"
out=$($MPIX -np 3 $D pretrain --resume "$W/odd" --data "$W/shards" 2>&1); rc=$?
[ $rc -ne 0 ] && echo "$out" | grep -q "^error: .*global batch of 4 sequences .* does not divide among 3 ranks; resume it on 1, 2 or 4 ranks" ||
    { echo "$out"; fail "a global batch of 4 on 3 ranks was not refused clearly"; }
ok "a global batch of 4 on 3 ranks: $(echo "$out" | grep '^error:' | head -1 | cut -c1-160)"
# under mpirun rank 0 holds the run directory's lock (train/run.h): a one-process writer beside a
# running 2-rank run is refused with one line naming the holder, and the run goes on
$MPIX -np 2 $D pretrain $COMMON --batch 4 --steps 1000000 --save-every 1 --out "$W/busy" > "$W/busy.log" 2>&1 &
MPID=$!
i=0
while c=$(grep -c '"kind":"train"' "$W/busy/metrics.jsonl" 2>/dev/null); [ "${c:-0}" -lt 3 ]; do
    i=$((i + 1)); [ $i -lt 600 ] && kill -0 $MPID 2>/dev/null || { kill -9 $MPID 2>/dev/null; cat "$W/busy.log"; fail "the 2-rank run did not log 3 steps"; }
    sleep 0.1
done
E2E_DIR=$W
( e2e_bad "^error: run directory $W/busy is in use: pid [0-9]* on host" -- $D pretrain --resume "$W/busy" --data "$W/shards" ); refused=$?
n=$(grep -c '"kind":"train"' "$W/busy/metrics.jsonl")
kill -0 $MPID 2>/dev/null; alive=$?
kill -TERM $MPID 2>/dev/null; sleep 1; kill -9 $MPID 2>/dev/null; wait $MPID 2>/dev/null
[ $refused -eq 0 ] || fail "a writer beside a 2-rank run was not refused with one line"
[ $alive -eq 0 ] || fail "the 2-rank run ended when the second writer was refused"
ok "a writer beside a running 2-rank run: $(cut -c1-120 "$W/err")... (the run went on: $n steps logged)"
echo "all checks passed"
