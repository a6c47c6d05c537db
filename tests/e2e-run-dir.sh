#!/bin/sh
# The run directory: --resume compares the checkpoint with the directory's config.txt, so another
# run's checkpoint.h5 copied in is refused (one error line naming the first differing key, exit 1,
# nothing changed); a directory whose run stopped before its first checkpoint is reused by a fresh
# run, and --resume there says there is nothing to resume and how to start again.
set -u
. "$(dirname "$0")/lib-e2e.sh"
BUILD=${BUILD:-build}
D=$BUILD/deberta
[ -x "$D" ] || { echo "FAIL: $D is not built"; exit 1; }
W=$(mktemp -d /tmp/deberta-e2e-run-dir.XXXXXX)
trap 'rm -rf "$W"' EXIT
export OMP_NUM_THREADS=1
E2E_DIR=$W
expect_err() { _p=$1; shift; e2e_bad "^error: .*$_p" -- "$@"; } # PATTERN COMMAND...: exit 1, one error line matching PATTERN (lib-e2e.sh)

e2e_corpus 7 200 > "$W/corpus.txt"
$D prep --input "$W/corpus.txt" --out "$W/shards" --vocab-size 300 --val-fraction 0.1 > /dev/null 2>&1 || fail "prep"
RUN="--preset test --max_seq_len 32 --batch 2 --steps 4 --eval-every 0 --eval-batches 1 --data $W/shards"

# another preset's checkpoint in a run directory
$D pretrain $RUN --out "$W/a" --stop-after 1 > /dev/null 2>&1 || fail "run a"
$D pretrain $RUN --num_hidden_layers 3 --hidden_size 24 --out "$W/b" --stop-after 1 > /dev/null 2>&1 || fail "run b"
cp "$W/b/checkpoint.h5" "$W/a/checkpoint.h5"
cp "$W/a/metrics.jsonl" "$W/metrics.before"
expect_err "--resume .*checkpoint.h5 and .*config.txt disagree: 'hidden_size' is 24 in the checkpoint but 16 now (is the checkpoint from another run" \
    $D pretrain --resume "$W/a" --data "$W/shards"
cmp -s "$W/a/checkpoint.h5" "$W/b/checkpoint.h5" && cmp -s "$W/a/metrics.jsonl" "$W/metrics.before" || fail "a refused resume changed the run directory"
ok "--resume refuses another run's checkpoint.h5 in the run directory (config.txt names the first differing key), nothing changed"

# a run killed before its first checkpoint: the directory is reusable, --resume says how
$D pretrain $RUN --steps 100000 --save-every 0 --log-every 1 --out "$W/k" > /dev/null 2>&1 &
pid=$!
i=0
while c=$(grep -c '"kind":"train"' "$W/k/metrics.jsonl" 2>/dev/null); [ "${c:-0}" -lt 1 ]; do
    i=$((i + 1)); [ $i -lt 600 ] || { kill -9 $pid; fail "run k did not start"; }
    sleep 0.1
done
kill -9 $pid; wait $pid 2>/dev/null
[ -f "$W/k/config.txt" ] && [ ! -e "$W/k/checkpoint.h5" ] || fail "run k: expected config.txt and no checkpoint"
expect_err "no checkpoint.h5 there, nothing to resume .*--out $W/k" $D pretrain --resume "$W/k" --data "$W/shards"
$D pretrain $RUN --out "$W/k" > "$W/k.log" 2>&1 || { cat "$W/k.log"; fail "a fresh run in a directory without a checkpoint"; }
$D pretrain $RUN --out "$W/ref" > /dev/null 2>&1 || fail "reference run"
cmp -s "$W/k/metrics.jsonl" "$W/ref/metrics.jsonl" && cmp -s "$W/k/checkpoint.h5" "$W/ref/checkpoint.h5" || fail "the reused directory's run differs from a run in a new directory"
expect_err "already holds a run (checkpoint.h5)" $D pretrain $RUN --out "$W/k"
ok "a directory whose run died before its first checkpoint: --resume explains, a fresh run reuses it (same result as a new directory); with a checkpoint it is refused"
# memory refused up front: one error line with the estimate and MemAvailable, no run directory
for flags in "--preset test --hidden_size 16384 --intermediate_size 65536" "--preset test --attention_head_size 1000000" \
             "--preset test --max_position_embeddings 2000000000" "--preset tiny --max_seq_len 512 --batch 4096"; do
    expect_err "this run needs about .* GiB.*but only .* GiB is available (MemAvailable" $D pretrain $flags --data "$W/shards" --out "$W/mem"
    [ ! -e "$W/mem" ] || fail "'$flags': a run refused for its memory created its directory"
done
ok "runs that cannot fit in memory are refused before anything is created (estimate and MemAvailable on one line)"
echo "e2e-run-dir: all checks passed"
