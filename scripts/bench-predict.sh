#!/bin/sh
# bench-predict.sh — `deberta predict`'s forward throughput at batch 32 × 128 tokens beside a plain torch.nn
# forward of the SAME fine-tuned model, exported with `deberta export` (sequence classification head), in
# one run on one machine.  A measurement, never an assertion.  Numbers: docs/PERFORMANCE.md, "Inference".
#
# usage: [BUILD=build] [SHARDS=data/shards] [WORK=runs/bench-predict] [TORCH_CORETYPE=X|none] scripts/bench-predict.sh
#            [--run RUN/best.h5] [--rounds N (3)] [--threads N (2)] [--batches N (16)] [--warmup N (2)] [--reps N (3)]
# (after make; the corpus and the default shards are made when missing, as make demo makes them)
#
# The records: --batches × 32 windows of 200 words of the Brown genre dev and test texts (held out of make
# demo's shards), so that every record fills the 128 tokens: no padding on either side (the torch side
# refuses a padded sequence; predict's tokens/s without padding must equal its tokens/s).  Both sides see
# the same token batches: predict tokenizes the JSONL with its readers and the checkpoint's tokenizer, and
# the torch side reads the input_ids that `deberta prep-task` wrote for the same file with the same readers
# and the tokenizer of SHARDS (its test split), in the same order, 32 per batch; the outputs then agree
# record by record (checked: same label, probability within 1e-4).
#
# The model: --run RUN/best.h5, a `deberta finetune` run of a single-text classification task with
# sequence length 128 and the tokenizer of SHARDS; without it WORK/finetune/best.h5, made once: the tiny
# preset pretrained 4 steps on SHARDS, fine-tuned 8 steps on the Brown genre task (train/dev texts; its
# test split = the benchmark records).  Speed does not depend on the weights, only on the shape.
#
# Timed, on each side: the forward passes over all the records (32 per batch), softmax and argmax;
# not timed: process start, loading the model, reading and tokenizing the input, writing the output.
#   deberta  `deberta predict` as users run it (no OMP_* variables: it picks its own wait policy,
#            train/cli/omp_policy.c); its own printed tokens/s, which times exactly task_eval_run (one pass
#            over the batches; the first batch, which maps the tape's memory, included), and its printed
#            tokens/s of the batches after the first (a warm forward, as torch's timed passes after their
#            warm-up).  Twice per round, before and after the torch runs; the round's figures are from the
#            mean of the two times.  Both ratios are printed (with --batches 1, the first alone).
#   torch    scripts/bench_predict.py torch: eval(), torch.inference_mode(), torch.set_num_threads(--threads),
#            --warmup untimed passes, then the median of --reps timed passes; glibc malloc tuned as in
#            bench-vs-torch.sh.  Run with PyTorch's OpenMP default, OMP_WAIT_POLICY=PASSIVE and
#            GOMP_SPINCOUNT=10000.  Where OpenBLAS does not know the CPU and falls back to a generic kernel
#            set, those three run with OPENBLAS_CORETYPE=SkylakeX or Haswell (scripts/lib-bench.sh,
#            bench_torch_coretype; TORCH_CORETYPE=X|none as in bench-vs-torch.sh), and the default once
#            more with OpenBLAS's own choice.  The yardstick of a round is its FASTEST torch run.
# Also printed: CPU model, family/model, flags, the BLAS core and gemm kernel, the OpenMP policies and the
# 2048³ sgemm rate of `deberta bench` in the same run; last a RESULT {json} line.
set -e
cd "$(dirname "$0")/.."
. scripts/lib-bench.sh
RUN=; ROUNDS=3; TH=2; NB=16; WARM=2; REPS=3
while [ $# -gt 0 ]; do
    [ $# -ge 2 ] || { echo "error: $1 needs a value (see the usage at the top of $0)" >&2; exit 2; }
    case $1 in
        --run) RUN=$2 ;;
        --rounds) ROUNDS=$2 ;;
        --threads) TH=$2 ;;
        --batches) NB=$2 ;;
        --warmup) WARM=$2 ;;
        --reps) REPS=$2 ;;
        *) echo "error: unknown option '$1' (see the usage at the top of $0)" >&2; exit 2 ;;
    esac
    shift 2
done
for v in "$ROUNDS" "$TH" "$NB" "$REPS"; do
    case $v in '' | *[!0-9]* | 0) echo "error: --rounds, --threads, --batches, --reps need a positive integer (got '$v')" >&2; exit 2 ;; esac
done
case $WARM in '' | *[!0-9]*) echo "error: --warmup needs an integer >= 0 (got '$WARM')" >&2; exit 2 ;; esac
BUILD=${BUILD:-build}
SHARDS=${SHARDS:-data/shards}
WORK=${WORK:-runs/bench-predict}
BIN=$BUILD/deberta
PY=/usr/bin/python3
B=32
T=128
[ -x "$BIN" ] || { echo "error: $BIN not built (run make)" >&2; exit 1; }
"$PY" -c "import torch, h5py, numpy" 2>/dev/null || { echo "error: $PY cannot import torch, h5py, numpy (apt-get install python3-torch python3-h5py)" >&2; exit 1; }
# the corpus (npm) and, by default, make demo's shards, made when missing as make demo makes them
sh scripts/fetch-corpus.sh data/corpus > /dev/null
[ "$SHARDS" != data/shards ] || sh scripts/demo-prep.sh > /dev/null
[ -f "$SHARDS/tokenizer.bin" ] || [ -f "$SHARDS/spm.model" ] || { echo "error: $SHARDS holds no shards" >&2; exit 1; }
[ -z "$RUN" ] || [ -f "$RUN" ] || { echo "error: --run $RUN: no such file" >&2; exit 1; }
mkdir -p "$WORK"
OUT=$WORK/results.txt
: > "$OUT"
PB="$PY scripts/bench_predict.py"

bench_torch_coretype "$BIN"   # CORE (OpenBLAS's kernel set here) and TCORE (the torch runs' OPENBLAS_CORETYPE, or none)
bench_machine                 # the '#' lines: CPU, family/model, flags, OPENBLAS_* variables, CORE, TCORE
echo "# $("$BIN" --version)"
echo "# load $(cut -d' ' -f1-3 /proc/loadavg), $TH threads, $ROUNDS rounds, $NB batches of $B x $T tokens, torch $WARM warm-up + $REPS timed passes, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"

echo "== the records and their token ids"
"$PY" scripts/brown-task-files.py data/corpus/brown-tagged "$WORK/brown" > /dev/null
$PB input --records $((NB * B)) --out "$WORK/bench.jsonl" "$WORK/brown/genre-test.jsonl" "$WORK/brown/genre-dev.jsonl"
"$BIN" prep-task --format jsonl --train "$WORK/brown/genre-train.jsonl" --dev "$WORK/brown/genre-dev.jsonl" --test "$WORK/bench.jsonl" \
    --text-field text --label-field label --name genre --shards "$SHARDS" --out "$WORK/task" --seq-len $T > "$WORK/prep-task.log" 2>&1 ||
    { cat "$WORK/prep-task.log"; exit 1; }
grep "test:" "$WORK/prep-task.log" || true

if [ -z "$RUN" ]; then
    RUN=$WORK/finetune/best.h5
    if [ ! -f "$RUN" ]; then
        echo "== the model: tiny preset, 4 pretraining steps, 8 fine-tuning steps (genre)"
        rm -rf "$WORK/pretrain" "$WORK/finetune"
        "$BIN" pretrain --preset tiny --data "$SHARDS" --out "$WORK/pretrain" --steps 4 --batch 8 --eval-every 4 --eval-batches 1 \
            --save-every 4 --threads "$TH" > "$WORK/pretrain.log" 2>&1 || { tail -n 5 "$WORK/pretrain.log"; exit 1; }
        "$BIN" finetune --init "$WORK/pretrain/checkpoint.h5" --task genre --data "$WORK/task" --out "$WORK/finetune" --steps 8 --pooler cls \
            --batch 32 --eval-every 8 --save-every 8 --threads "$TH" > "$WORK/finetune.log" 2>&1 || { tail -n 5 "$WORK/finetune.log"; exit 1; }
    fi
fi
echo "== the model: $RUN, exported to $WORK/hf"
rm -rf "$WORK/hf"
"$BIN" export "$RUN" "$WORK/hf" | sed 's/^/   /'

echo "== the same-run sgemm rate and OpenMP policy of deberta.c (deberta bench, one small step)"
env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS "$BIN" bench --preset tiny --seq 32 --batch 1 --steps 1 --warmup 0 \
    --profile 0 --threads "$TH" > "$WORK/sgemm.log"
grep -E "GFLOP/s|wait policy" "$WORK/sgemm.log" | sed 's/^ */   /'
sed -n 's/^RESULT /RESULT sgemm 0 /p' "$WORK/sgemm.log" >> "$OUT"

# the torch settings (with TCORE: the three with it, and the default once more with OpenBLAS's own choice)
SETTINGS="default PASSIVE spin"
if [ -n "$TCORE" ]; then SETTINGS="default core-PASSIVE core-default core-spin"; fi

run_c() { # tag round
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS "$BIN" predict "$RUN" --input "$WORK/bench.jsonl" --format jsonl \
        --text-field text --output "$WORK/pred.jsonl" --batch $B --threads "$TH" 2> "$WORK/predict.log" || { cat "$WORK/predict.log"; exit 1; }
    line=$(grep '^predict: [0-9]* examples .* tokens/s' "$WORK/predict.log")
    echo "[deberta $1] $line"
    n=$(echo "$line" | sed -n 's/^predict: \([0-9]*\) examples .*/\1/p')
    seq=$(echo "$line" | sed -n 's/.* of \([0-9]*\) tokens in .*/\1/p')
    tps=$(echo "$line" | sed -n 's/.* examples\/s, \([0-9]*\) tokens\/s (.*/\1/p')
    tnp=$(echo "$line" | sed -n 's/.* tokens\/s (\([0-9]*\) without padding.*/\1/p')
    wait=$(echo "$line" | sed -n 's/.*OpenMP wait policy: \(.*\))$/\1/p')
    warm=$(sed -n 's/^predict: the first batch .* examples after it \([0-9]*\) tokens\/s$/\1/p' "$WORK/predict.log")
    first=$(sed -n 's/^predict: the first batch \([0-9.]*\) s; .*/\1/p' "$WORK/predict.log")
    if [ "$NB" -gt 1 ]; then
        [ -n "$warm" ] && [ -n "$first" ] || { echo "error: predict printed no figure after its first batch" >&2; cat "$WORK/predict.log"; exit 1; }
        echo "[deberta $1] the first batch $first s; after it $warm tokens/s"
    else
        warm=null first=null # one batch: nothing after it
    fi
    [ "$n" = $((NB * B)) ] && [ "$seq" = $T ] ||
        { echo "error: predict ran $n examples of $seq tokens, not $((NB * B)) of $T (is $RUN a model of sequence length $T?)" >&2; exit 1; }
    [ "$tps" = "$tnp" ] || { echo "error: predict's batches hold padding ($tnp of $tps tokens/s are real tokens)" >&2; exit 1; }
    echo "RESULT $1 $2 {\"tokens_per_s\": $tps, \"warm_tokens_per_s\": $warm, \"first_batch_s\": $first, \"seq\": $seq, \"records\": $n, \"batch\": $B, \"threads\": $TH, \"omp_wait\": \"$wait\"}" >> "$OUT"
}
run_torch() { # setting round
    case $1 in
        default) set -- "$1" "$2" env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT ;;
        PASSIVE) set -- "$1" "$2" env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE ;;
        spin) set -- "$1" "$2" env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000 ;;
        core-default) set -- "$1" "$2" env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT OPENBLAS_CORETYPE=$TCORE ;;
        core-PASSIVE) set -- "$1" "$2" env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE OPENBLAS_CORETYPE=$TCORE ;;
        core-spin) set -- "$1" "$2" env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000 OPENBLAS_CORETYPE=$TCORE ;;
    esac
    name=torch_$1 rnd=$2
    shift 2
    "$@" $PB torch --model "$WORK/hf" --ids "$WORK/task/test.h5" --batch $B --threads "$TH" --warmup "$WARM" --reps "$REPS" \
        --out "$WORK/torch-pred.json" > "$WORK/torch.log" || { cat "$WORK/torch.log"; exit 1; }
    grep -v '^RESULT' "$WORK/torch.log" | sed "s/^/[$name] /"
    sed -n "s/^RESULT /RESULT $name $rnd /p" "$WORK/torch.log" >> "$OUT"
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
    echo "== round $r, load $(cut -d' ' -f1 /proc/loadavg)"
    run_c deberta $r
    if [ $r = 1 ]; then cp "$WORK/pred.jsonl" "$WORK/pred-deberta.jsonl"; fi
    for s in $SETTINGS; do
        run_torch $s $r
        # the same model: predict's labels and probabilities against the torch forward's, every record
        if [ $r = 1 ]; then
            $PB check --predict "$WORK/pred-deberta.jsonl" --torch "$WORK/torch-pred.json" --tol 1e-4 > "$WORK/check.log" 2>&1 ||
                { cat "$WORK/check.log"; echo "error: not the same model's outputs (is $RUN's tokenizer that of $SHARDS?)" >&2; exit 1; }
            sed "s/^/[torch_$s] /" "$WORK/check.log"
        fi
    done
    run_c deberta_after $r
    r=$((r + 1))
done
echo
$PB summary "$OUT" --machine "$CPU (family $CPU_FAMILY model $CPU_MODEL)" --flags "$FLAGS" --blas-core "$CORE" \
    --torch-core-fix "${TCORE:-none}"
