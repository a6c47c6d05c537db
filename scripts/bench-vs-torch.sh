#!/bin/sh
# The full pretraining step (generator fwd/bwd, sampling, discriminator fwd/bwd, both AdamW updates;
# decoupled, GDES, dropout 0.1, no padding, float32) of deberta.c (`deberta bench`) next to the
# PyTorch reference's identical step (`deberta_ref.py bench --part step`), PyTorch both with its
# default OpenMP settings and with OMP_WAIT_POLICY=PASSIVE (the tuned figure), alternating the three
# in every round of one run, at the same thread count.  Shapes: tiny (seq 128, batch 16) and the
# xsmall shape (seq 256, batch 8).  Prints every measurement, then per shape the medians over the
# rounds and the ratios deberta.c / PyTorch in tokens/s (higher is better) and in peak RSS.
# usage: [WARMUP=3] [BUILD=build] scripts/bench-vs-torch.sh [rounds (2)] [steps (10)] [threads (2)] [shapes ("tiny:128:16 xsmall:256:8")]
# deberta.c is run as users run it: no OMP_* variables (it sets its own wait policy, see
# train/cli/omp_policy.c).  OPENBLAS_* variables of the environment are passed through unchanged.
# A measurement, never an assertion.  Numbers: docs/PERFORMANCE.md, "Training step".
set -e
cd "$(dirname "$0")/.."
ROUNDS=${1:-2}; STEPS=${2:-10}; TH=${3:-2}; SHAPES=${4:-"tiny:128:16 xsmall:256:8"}
BUILD=${BUILD:-build}
PY=/usr/bin/python3
BIN=$BUILD/deberta
[ -x "$BIN" ] || { echo "error: $BIN not built (run make)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "error: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
OUT=$(mktemp /tmp/bench-vs-torch-XXXXXX)
trap 'rm -f "$OUT"' EXIT
WARM=${WARMUP:-3}
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $TH, $ROUNDS rounds x $STEPS steps (+$WARM warm-up)"
for shape in $SHAPES; do
    preset=${shape%%:*}; rest=${shape#*:}; seq=${rest%%:*}; batch=${rest#*:}
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        echo "## $preset T=$seq B=$batch round $r, load $(cut -d' ' -f1 /proc/loadavg)"
        env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS "$BIN" bench --preset "$preset" --seq "$seq" \
            --batch "$batch" --steps "$STEPS" --warmup "$WARM" --threads "$TH" --profile 0 \
            | sed "s/^RESULT /RESULT C $preset /" | tee -a "$OUT" | sed -n '2,4p'
        for pol in default PASSIVE; do
            if [ $pol = default ]; then set -- env -u OMP_WAIT_POLICY; else set -- env OMP_WAIT_POLICY=PASSIVE; fi
            "$@" "$PY" scripts/reference/deberta_ref.py bench --preset "$preset" --seq "$seq" --batch "$batch" \
                --steps "$STEPS" --warmup "$WARM" --threads "$TH" \
                | sed "s/^RESULT /RESULT T_$pol $preset /" | tee -a "$OUT" | grep -v RESULT | sed "s/^/[torch $pol] /"
        done
        r=$((r + 1))
    done
done
"$PY" - "$OUT" <<'PYEOF'
import json, statistics, sys
res = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        _, who, preset, js = line.split(" ", 3)
        res.setdefault((preset, who), []).append(json.loads(js))
print()
print("%-8s %-16s %10s %12s %9s %10s" % ("shape", "implementation", "ms/step", "tokens/s", "GFLOP/s", "RSS MB"))
for preset in dict.fromkeys(p for p, _ in res):
    med = {}
    for who, name in (("C", "deberta.c"), ("T_default", "torch default"), ("T_PASSIVE", "torch PASSIVE")):
        rs = res.get((preset, who))
        if not rs:
            continue
        m = {k: statistics.median(r[k] for r in rs) for k in ("ms_median", "tokens_per_s", "peak_rss_mb")}
        # one FLOP count for all (deberta.c's, docs/PERFORMANCE.md; the reference's own formula differs)
        fl = statistics.median(r["model_gflop"] for r in res.get((preset, "C"), rs))
        m["gflops"] = fl / (m["ms_median"] / 1e3)
        med[who] = m
        print("%-8s %-16s %10.1f %12.0f %9.1f %10.0f" % (preset, name, m["ms_median"], m["tokens_per_s"], m["gflops"],
                                                         m["peak_rss_mb"]))
    c = med.get("C")
    if c:
        if True:
            pk = statistics.median(r["gemm_peak_gflops"] for r in res[(preset, "C")])
            print("%-8s deberta.c model GFLOP/s = %.0f%% of the raw sgemm peak %.1f GFLOP/s of the same runs"
                  % (preset, 100 * c["gflops"] / pk, pk))
        for who in ("T_default", "T_PASSIVE"):
            if who in med:
                t = med[who]
                print("%-8s deberta.c / %-14s tokens/s %.2fx   peak RSS %.2fx" % (
                    preset, "torch " + who[2:], c["tokens_per_s"] / t["tokens_per_s"], c["peak_rss_mb"] / t["peak_rss_mb"]))
PYEOF
