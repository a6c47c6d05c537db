#!/bin/sh
# plot-run.sh RUNDIR [OUT.png] — renders RUNDIR/metrics.jsonl (written by `deberta pretrain`) to a PNG:
#   top:    losses vs step — generator MLM loss (left axis) and discriminator RTD loss (right axis),
#           train (lines) and eval (points)
#   bottom: accuracies vs step — MLM accuracy, RTD accuracy (train and eval), RTD AUC (eval), their
#           baselines (most frequent masked token; all tokens original), and when the run has them the
#           fixed-corruption AUC beside the count detector's, and the POS probe
#   both:   a dashed vertical line at the curriculum's switch to longer sequences (train `seq_len`)
# OUT defaults to RUNDIR/metrics.png.  Needs gnuplot (Debian: gnuplot-nox, installed by
# scripts/install-deps.sh) and /usr/bin/python3 (its json module parses the log).
# Keys read (docs/FORMATS.md, "Metrics log"): kind, step, g_loss, d_loss, mlm_acc, rtd_acc, rtd_auc,
# fx_auc, fx_counter_auc, probe_acc, probe_best_acc, baseline_mlm_acc, baseline_rtd_acc, seq_len;
# missing keys and nulls are gaps, and a series with no value at all is left out.
set -eu
if [ $# -lt 1 ] || [ $# -gt 2 ] || [ "$1" = "-h" ] || [ "$1" = "--help" ]; then
    echo "usage: scripts/plot-run.sh RUNDIR [OUT.png]" >&2
    exit 2
fi
RUNDIR=$1
OUT=${2:-$RUNDIR/metrics.png}
LOG=$RUNDIR/metrics.jsonl
[ -f "$LOG" ] || { echo "error: plot-run: $LOG not found (is $RUNDIR a run directory of deberta pretrain?)" >&2; exit 1; }
command -v gnuplot >/dev/null 2>&1 || { echo "error: plot-run: gnuplot not found (apt-get install gnuplot-nox, or run scripts/install-deps.sh)" >&2; exit 1; }
PY=/usr/bin/python3
[ -x "$PY" ] || PY=$(command -v python3 || true)
[ -n "$PY" ] || { echo "error: plot-run: python3 not found (apt-get install python3)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/plot-run.XXXXXX")
trap 'rm -rf "$TMP"' EXIT INT TERM

# jsonl -> two whitespace tables (train.dat, eval.dat; '?' = missing) and the gnuplot script.
"$PY" - "$LOG" "$TMP" "$OUT" <<'PYEOF'
import json, math, sys
log, tmp, out = sys.argv[1], sys.argv[2], sys.argv[3]
cols = ["step", "g_loss", "d_loss", "mlm_acc", "rtd_acc", "rtd_auc", "fx_auc", "fx_counter_auc", "probe_acc", "probe_best_acc",
        "baseline_mlm_acc", "baseline_rtd_acc", "seq_len"]
rows = {"train": [], "eval": []}
lines = open(log, encoding="utf-8", errors="replace").read().split("\n")
for n, line in enumerate(lines, 1):
    line = line.strip()
    if not line:
        continue
    try:
        o = json.loads(line)
    except ValueError as e:
        if not any(l.strip() for l in lines[n:]):
            continue  # a torn last line of a running or killed run
        sys.exit("error: plot-run: %s line %d is not JSON (%s)" % (log, n, e))
    if not isinstance(o, dict) or o.get("kind") not in rows or not isinstance(o.get("step"), (int, float)):
        continue
    rows[o["kind"]].append([o.get(c) for c in cols])
if not rows["train"] and not rows["eval"]:
    sys.exit("error: plot-run: %s has no train or eval lines" % log)

def num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

have = {}
for kind, rs in rows.items():
    rs.sort(key=lambda r: r[0])
    with open("%s/%s.dat" % (tmp, kind), "w") as f:
        for r in rs:
            f.write(" ".join(repr(float(v)) if num(v) else "?" for v in r) + "\n")
    for i, c in enumerate(cols):
        have[(kind, c)] = any(num(r[i]) for r in rs)

def series(specs):
    parts = []
    for kind, col, axes, title, style in specs:
        if have.get((kind, col)):
            parts.append("'%s/%s.dat' using 1:%d axes %s with %s title '%s'"
                         % (tmp, kind, cols.index(col) + 1, axes, style, title))
    return ", \\\n     ".join(parts)

L = "lines lw 1.5"
P = "linespoints pt 7 ps 0.9 lw 2"
loss = series([("train", "g_loss", "x1y1", "G MLM loss (train)", L + " lc rgb '#1f77b4'"),
               ("eval", "g_loss", "x1y1", "G MLM loss (eval)", P + " lc rgb '#0b3c68'"),
               ("train", "d_loss", "x1y2", "D RTD loss (train, right axis)", L + " lc rgb '#ff7f0e'"),
               ("eval", "d_loss", "x1y2", "D RTD loss (eval, right axis)", P + " lc rgb '#a34a00'")])
acc = series([("train", "mlm_acc", "x1y1", "MLM acc (train)", L + " lc rgb '#2ca02c'"),
              ("eval", "mlm_acc", "x1y1", "MLM acc (eval)", P + " lc rgb '#145214'"),
              ("train", "rtd_acc", "x1y1", "RTD acc (train)", L + " lc rgb '#d62728'"),
              ("eval", "rtd_acc", "x1y1", "RTD acc (eval)", P + " lc rgb '#7a1515'"),
              ("eval", "rtd_auc", "x1y1", "RTD AUC (eval)", P + " dt 2 lc rgb '#9467bd'"),
              ("eval", "baseline_mlm_acc", "x1y1", "MLM baseline: most frequent token", "lines dt 3 lw 1.5 lc rgb '#145214'"),
              ("eval", "baseline_rtd_acc", "x1y1", "RTD baseline: all original", "lines dt 3 lw 1.5 lc rgb '#7a1515'"),
              ("eval", "fx_auc", "x1y1", "fixed-corruption AUC", P + " lc rgb '#e377c2'"),
              ("eval", "fx_counter_auc", "x1y1", "count detector AUC (same tokens)", "lines dt 3 lw 1.5 lc rgb '#e377c2'"),
              ("eval", "probe_acc", "x1y1", "POS probe, last layer", P + " lc rgb '#17becf'"),
              ("eval", "probe_best_acc", "x1y1", "POS probe, best layer", P + " dt 2 lc rgb '#0e6f79'")])
g = []
g.append("set terminal pngcairo size 1100,900 enhanced font 'sans,10'")
g.append("set output '%s'" % out.replace("'", "''"))
g.append("set datafile missing '?'")
g.append("set multiplot layout 2,1 title '%s' noenhanced" % log.replace("'", "''"))
g.append("set grid; set key outside right top vertical; set xlabel 'step'")
g.append("set lmargin at screen 0.07; set rmargin at screen 0.70")  # same plot width in both panels
g.append("set ylabel 'G MLM loss'; set y2label 'D RTD loss'; set ytics nomirror; set y2tics")
# the curriculum's switch: the first train line at a longer sequence than the one before it
switch = None
sl = [(r[0], r[cols.index("seq_len")]) for r in rows["train"] if num(r[cols.index("seq_len")])]
for (s0, a), (s1, b) in zip(sl, sl[1:]):
    if b > a:
        switch = s0  # the last logged step of the short sequences
        break
if switch is not None:
    g.append("set arrow from %g, graph 0 to %g, graph 1 nohead dt 2 lc rgb '#555555'" % (switch, switch))
    g.append("set label 'curriculum: longer sequences after step %d' at %g, graph 0.04 offset 0.5,0 tc rgb '#555555'" % (switch, switch))
g.append("set title 'losses'")
g.append(("plot " + loss) if loss else "unset y2tics; set y2label ''; plot [0:1] NaN notitle")
g.append("unset y2tics; set y2label ''; set ytics mirror; unset label")
g.append("set title 'accuracies'; set ylabel 'accuracy / AUC'; set yrange [0:1]")
g.append(("plot " + acc) if acc else "plot [0:1] NaN notitle")
g.append("unset multiplot")
open(tmp + "/plot.gp", "w").write("\n".join(g) + "\n")
PYEOF

gnuplot "$TMP/plot.gp" 2>"$TMP/gnuplot.err" || { echo "error: plot-run: gnuplot failed: $(head -c 400 "$TMP/gnuplot.err")" >&2; exit 1; }
[ -s "$OUT" ] || { echo "error: plot-run: gnuplot wrote no $OUT" >&2; exit 1; }
echo "plot-run: wrote $OUT"
