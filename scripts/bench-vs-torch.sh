#!/bin/sh
# The full pretraining step (generator fwd/bwd, sampling, discriminator fwd/bwd, both AdamW updates;
# decoupled, GDES, dropout 0.1, no padding, float32) of deberta.c (`deberta bench`) next to two PyTorch
# implementations of the identical step: the reference (`deberta_ref.py bench --part step`, functional,
# the parity oracle) and a plain torch.nn program (`plain_step.py bench`: fused QKV Linear, nn.LayerNorm,
# nn.Dropout, AdamW; `plain_step.py check` shows it computes the reference's step).  Each PyTorch
# one runs with its default OpenMP settings and with OMP_WAIT_POLICY=PASSIVE, the torch.nn one also
# with GOMP_SPINCOUNT=10000 (the short spin build/deberta chooses on an idle machine, see
# train/cli/omp_policy.c); all with glibc malloc set to reuse freed memory (their --malloc tuned;
# TORCH_MALLOC=default to leave it).  All six alternate in every round of one run, at the same thread
# count; deberta.c runs before and after the PyTorch runs of each round, and its figure of the round is the mean of the two step times (the summary also prints the
# ratio of the two: the VM's drift during the round).  Shapes: tiny (seq 128, batch 16) and the xsmall
# shape (seq 256, batch 8).  Prints every measurement, then per shape the medians over the rounds, the ratios
# deberta.c / each PyTorch run, and deberta.c / the FASTEST PyTorch run of each round (the yardstick:
# median and range over the rounds), in tokens/s (higher is better) and in peak RSS.
# usage: [WARMUP=3] [BUILD=build] [TORCH_MALLOC=tuned] scripts/bench-vs-torch.sh [rounds (2)] [steps (10)] [threads (2)] [shapes ("tiny:128:16 xsmall:256:8")]
# deberta.c is run as users run it (its first printed line names its gemm kernel: oneDNN, own AVX-512 or
# OpenBLAS): no OMP_* variables (it sets its own wait policy, see
# train/cli/omp_policy.c).  OPENBLAS_* variables of the environment are passed through unchanged.
# Where OpenBLAS does not know the CPU and falls back to a generic kernel set (Prescott on an Intel family
# 6 model 207), every PyTorch run gets OPENBLAS_CORETYPE=SkylakeX (avx512f) or Haswell (avx2), so that
# the yardstick stays a fast PyTorch (scripts/lib-bench.sh, bench_torch_coretype).  TORCH_CORETYPE=X
# forces a kernel set for the PyTorch runs, TORCH_CORETYPE=none leaves OpenBLAS's choice.
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
MALLOC=${TORCH_MALLOC:-tuned}
. scripts/lib-bench.sh
bench_torch_coretype "$BIN"   # CORE (OpenBLAS's kernel set here) and TCORE (the PyTorch runs' OPENBLAS_CORETYPE)
bench_machine                 # the '#' lines: CPU, family/model, flags, OPENBLAS_* variables, CORE, TCORE
echo "# load $(cut -d' ' -f1-3 /proc/loadavg), threads $TH, $ROUNDS rounds x $STEPS steps (+$WARM warm-up), PyTorch malloc $MALLOC, commit $(git rev-parse --short HEAD 2>/dev/null || echo '?')"
# deberta.c runs twice per round, before and after the four PyTorch runs: the VM's speed drifts by
# up to 25 % within minutes, and the mean of the two brackets the PyTorch runs in time.
run_c() {
    echo "[deberta.c $1]"
    env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT -u OMP_NUM_THREADS "$BIN" bench --preset "$preset" --seq "$seq" \
        --batch "$batch" --steps "$STEPS" --warmup "$WARM" --threads "$TH" --profile 0 \
        | sed "s/^RESULT /RESULT $1 $preset-T$seq-B$batch $r /" | tee -a "$OUT" | sed -n '1,5p'
}
for shape in $SHAPES; do
    preset=${shape%%:*}; rest=${shape#*:}; seq=${rest%%:*}; batch=${rest#*:}
    r=1
    while [ "$r" -le "$ROUNDS" ]; do
        echo "## $preset T=$seq B=$batch round $r, load $(cut -d' ' -f1 /proc/loadavg)"
        run_c C
        for impl in ref plain; do
            if [ $impl = ref ]; then script=deberta_ref.py; tag=T; else script=plain_step.py; tag=P; fi
            # torch.nn also runs with the short spin deberta.c picks on an idle machine (omp_policy.c)
            pols="default PASSIVE"; [ $impl = plain ] && pols="default PASSIVE spin"
            for pol in $pols; do
                case $pol in
                    default) set -- env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT ;;
                    PASSIVE) set -- env -u GOMP_SPINCOUNT OMP_WAIT_POLICY=PASSIVE ;;
                    spin) set -- env -u OMP_WAIT_POLICY GOMP_SPINCOUNT=10000 ;;
                esac
                [ -n "$TCORE" ] && set -- "$@" OPENBLAS_CORETYPE="$TCORE"
                "$@" "$PY" scripts/reference/$script bench --preset "$preset" --seq "$seq" --batch "$batch" \
                    --steps "$STEPS" --warmup "$WARM" --threads "$TH" --malloc "$MALLOC" \
                    | sed "s/^RESULT /RESULT ${tag}_$pol $preset-T$seq-B$batch $r /" | tee -a "$OUT" | grep -v RESULT \
                    | sed "s/^/[$impl $pol] /"
            done
        done
        run_c C2
        r=$((r + 1))
    done
done
"$PY" - "$OUT" <<'PYEOF'
import json, statistics, sys
res = {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT "):
        _, who, preset, rnd, js = line.split(" ", 4)
        res.setdefault((preset, who), {})[int(rnd)] = json.loads(js)
# deberta.c's figure of a round: the mean of its runs before (C) and after (C2) the PyTorch runs
drift = {}
for (preset, who), rs in list(res.items()):
    if who != "C":
        continue
    after = res.pop((preset, "C2"), {})
    for rnd, a in after.items():
        b = rs[rnd]
        drift.setdefault(preset, []).append(a["tokens_per_s"] / b["tokens_per_s"])
        ms = (b["ms_median"] + a["ms_median"]) / 2  # tokens/s from the mean step time
        rs[rnd] = dict(b, tokens_per_s=b["tokens_per_s"] * b["ms_median"] / ms, ms_median=ms, peak_rss_mb=max(b["peak_rss_mb"], a["peak_rss_mb"]),
                       gemm_peak_gflops=max(b["gemm_peak_gflops"], a["gemm_peak_gflops"]))
NAMES = {"C": "deberta.c", "T_default": "reference default", "T_PASSIVE": "reference PASSIVE",
         "P_default": "torch nn default", "P_PASSIVE": "torch nn PASSIVE", "P_spin": "torch nn spin 10000"}
TORCH = ("T_default", "T_PASSIVE", "P_default", "P_PASSIVE", "P_spin")
print()
print("%-16s %-19s %10s %12s %9s %10s" % ("shape", "implementation", "ms/step", "tokens/s", "GFLOP/s", "RSS MB"))
for preset in dict.fromkeys(p for p, _ in res):
    med = {}
    for who, name in NAMES.items():
        rs = list(res.get((preset, who), {}).values())
        if not rs:
            continue
        m = {k: statistics.median(r[k] for r in rs) for k in ("ms_median", "tokens_per_s", "peak_rss_mb")}
        # one FLOP count for all (deberta.c's, docs/PERFORMANCE.md; the reference's own formula differs)
        fl = statistics.median(r["model_gflop"] for r in (list(res[(preset, "C")].values()) if (preset, "C") in res else rs))
        m["gflops"] = fl / (m["ms_median"] / 1e3)
        med[who] = m
        print("%-16s %-19s %10.1f %12.0f %9.1f %10.0f" % (preset, name, m["ms_median"], m["tokens_per_s"], m["gflops"],
                                                         m["peak_rss_mb"]))
    best = lambda ws: max(ws, key=lambda w: med[w]["tokens_per_s"])
    ref = [w for w in ("T_default", "T_PASSIVE") if w in med]
    plain = [w for w in ("P_default", "P_PASSIVE", "P_spin") if w in med]
    if ref and plain:
        br, bp = best(ref), best(plain)
        print("%-16s torch nn / reference (the faster setting of each: %s, %s): tokens/s %.2fx   peak RSS %.2fx" % (
            preset, NAMES[bp], NAMES[br], med[bp]["tokens_per_s"] / med[br]["tokens_per_s"],
            med[bp]["peak_rss_mb"] / med[br]["peak_rss_mb"]))
    c = med.get("C")
    if not c:
        continue
    cr = res[(preset, "C")]
    pk = statistics.median(r["gemm_peak_gflops"] for r in cr.values())
    print("%-16s deberta.c model GFLOP/s = %.0f%% of the raw sgemm peak %.1f GFLOP/s of the same runs"
          % (preset, 100 * c["gflops"] / pk, pk))
    for who in TORCH:
        if who in med:
            t = med[who]
            print("%-16s deberta.c / %-19s tokens/s %.2fx   peak RSS %.2fx" % (
                preset, NAMES[who], c["tokens_per_s"] / t["tokens_per_s"], c["peak_rss_mb"] / t["peak_rss_mb"]))
    # the yardstick: per round, deberta.c against the fastest PyTorch run of that round
    per = []
    for rnd, rc in sorted(cr.items()):
        ts = [(res[(preset, w)][rnd], w) for w in TORCH if rnd in res.get((preset, w), {})]
        if ts:
            t, w = max(ts, key=lambda x: x[0]["tokens_per_s"])
            per.append((rc["tokens_per_s"] / t["tokens_per_s"], rc["peak_rss_mb"] / t["peak_rss_mb"], NAMES[w], rnd))
    if preset in drift:
        print("%-16s deberta.c after / before the PyTorch runs of each round (the VM's drift): %s" % (
            preset, ", ".join("%.2f" % d for d in drift[preset])))
    if per:
        print("%-16s deberta.c / the fastest PyTorch of each round: tokens/s %.2fx (range %.2f-%.2f)   peak RSS %.2fx;"
              " rounds: %s" % (preset, statistics.median(p[0] for p in per), min(p[0] for p in per),
                               max(p[0] for p in per), statistics.median(p[1] for p in per),
                               ", ".join("%d %.2fx vs %s" % (p[3], p[0], p[2]) for p in per)))
PYEOF
