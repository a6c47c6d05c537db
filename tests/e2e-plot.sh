#!/bin/sh
# e2e-plot.sh — scripts/plot-run.sh renders a synthetic metrics.jsonl (train + eval lines, nulls,
# a skipped step, a torn last line) to a PNG; bad input gives one error line and a non-zero exit.
# Exit 77 (skip) when gnuplot or python3 is missing.
set -u
cd "$(dirname "$0")/.."
. tests/lib-e2e.sh
if ! command -v gnuplot >/dev/null 2>&1; then echo "skip: gnuplot not installed (apt-get install gnuplot-nox)"; exit 77; fi
if [ ! -x /usr/bin/python3 ] && ! command -v python3 >/dev/null 2>&1; then echo "skip: python3 not installed"; exit 77; fi
T=$(mktemp -d "${TMPDIR:-/tmp}/e2e-plot.XXXXXX")
trap 'rm -rf "$T"' EXIT INT TERM
fail() { echo "FAIL: $*"; exit 1; }

# synthetic run: 200 steps, losses falling, accuracies rising, eval every 50 steps
awk 'BEGIN {
  for (s = 1; s <= 200; s++) {
    g = 9.0 * exp(-s / 80.0) + 2.5 + 0.2 * sin(s);  d = 0.25 + 0.4 * exp(-s / 40.0) + 0.02 * cos(3 * s);
    ma = 0.35 * (1 - exp(-s / 70.0));  ra = 0.85 + 0.1 * (1 - exp(-s / 60.0));
    if (s == 77) printf "{\"kind\":\"train\",\"step\":%d,\"g_loss\":null,\"d_loss\":null,\"mlm_acc\":null,\"rtd_acc\":null,\"skipped\":1}\n", s;
    else printf "{\"kind\":\"train\",\"step\":%d,\"g_loss\":%.9g,\"d_loss\":%.9g,\"mlm_acc\":%.9g,\"rtd_acc\":%.9g,\"g_lr\":1e-4,\"skipped\":0}\n", s, g, d, ma, ra;
    if (s % 50 == 0) printf "{\"kind\":\"eval\",\"step\":%d,\"g_loss\":%.9g,\"mlm_acc\":%.9g,\"d_loss\":%.9g,\"rtd_acc\":%.9g,\"rtd_auc\":%.9g}\n", s, g + 0.3, ma - 0.02, d + 0.03, ra - 0.01, 0.6 + 0.3 * (1 - exp(-s / 80.0));
  }
  printf "{\"kind\":\"train\",\"step\":201,\"g_lo";
}' > "$T/metrics.jsonl"

out=$(sh scripts/plot-run.sh "$T" 2>&1) || fail "plot-run.sh failed: $out"
echo "$out"
[ -s "$T/metrics.png" ] || fail "no $T/metrics.png"
magic=$(head -c 8 "$T/metrics.png" | od -An -tx1 | tr -d ' \n')
[ "$magic" = "89504e470d0a1a0a" ] || fail "metrics.png is not a PNG (magic $magic)"
size=$(wc -c < "$T/metrics.png")
[ "$size" -gt 20000 ] || fail "metrics.png is suspiciously small ($size bytes)"
[ -n "${KEEP_PLOT:-}" ] && cp "$T/metrics.png" "$KEEP_PLOT"

# explicit output path; a log with only train lines (no eval yet) still plots
grep '"train"' "$T/metrics.jsonl" | head -n 20 > "$T/only.jsonl"
mkdir "$T/r2" && mv "$T/only.jsonl" "$T/r2/metrics.jsonl"
sh scripts/plot-run.sh "$T/r2" "$T/r2.png" >/dev/null 2>&1 || fail "train-only log did not plot"
[ -s "$T/r2.png" ] || fail "no $T/r2.png"

# errors: one line, non-zero
mkdir "$T/empty"
e2e_bad --rc any '^error: plot-run: .*metrics.jsonl not found' -- sh scripts/plot-run.sh "$T/empty"
mkdir "$T/bad" && printf '{"kind":"train","step":1}\nnot json\n{"kind":"train","step":2}\n' > "$T/bad/metrics.jsonl"
e2e_bad --rc any '^error: plot-run: .*line 2 is not JSON' -- sh scripts/plot-run.sh "$T/bad"
echo "e2e-plot: ok"
