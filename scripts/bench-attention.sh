#!/bin/sh
# Forward + backward time of one disentangled attention block and of one full post-LN layer at the
# tiny shape (B 16, T 128, H 256, 4 heads of 64, FFN 1024, 128 table rows, dropout 0.1): deberta.c
# (`deberta bench attention`) next to the PyTorch reference (`deberta_ref.py bench --part ...`) in
# the same run, same thread count; prints the medians and the ratio C / PyTorch (lower is better).
# usage: scripts/bench-attention.sh [threads (default 2)] [steps (default 20)] [build dir (default build)]
# A ratio, never an assertion.  Numbers: docs/HISTORY.md ("Model", moved from docs/PERFORMANCE.md).
set -e
cd "$(dirname "$0")/.."
TH=${1:-2}; STEPS=${2:-20}; BUILD=${3:-build}
PY=/usr/bin/python3
BIN=$BUILD/deberta
[ -x "$BIN" ] || { echo "error: $BIN not built (run make)" >&2; exit 1; }
"$PY" -c "import torch" 2>/dev/null || { echo "error: $PY cannot import torch (apt-get install python3-torch)" >&2; exit 1; }
OUT=$(mktemp /tmp/bench-attention-XXXXXX)
trap 'rm -f "$OUT"' EXIT
echo "# $(date -u +%Y-%m-%dT%H:%MZ) $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), threads $TH, $STEPS steps"
OMP_NUM_THREADS=$TH "$BIN" bench attention --part both --batch 16 --seq 128 --steps "$STEPS" --warmup 3 | tee -a "$OUT" | grep -v RESULT
for part in attention layer; do
    "$PY" scripts/reference/deberta_ref.py bench --preset tiny --part $part --batch 16 --seq 128 --steps "$STEPS" \
        --warmup 3 --threads "$TH" | sed "s/^RESULT /RESULT_REF /" | tee -a "$OUT" | grep -v RESULT
done
"$PY" - "$OUT" <<'PYEOF'
import json, sys
c, r = {}, {}
for line in open(sys.argv[1]):
    if line.startswith("RESULT_REF "):
        j = json.loads(line[11:]); r[j["part"]] = j["ms_median"]
    elif line.startswith("RESULT "):
        j = json.loads(line[7:]); c[j["part"]] = j["ms_median"]
for p in ("attention", "layer"):
    if p in c and p in r:
        print("%-9s deberta.c %8.2f ms   PyTorch %8.2f ms   ratio C/PyTorch %.2f" % (p, c[p], r[p], c[p] / r[p]))
PYEOF
