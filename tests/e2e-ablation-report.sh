#!/bin/sh
# The fourth study's report (scripts/ablation_report.py, through scripts/ablation-study.sh report) on
# synthetic run files whose differences and intervals are worked out by hand below: paired intervals
# (Student t with n - 1 df), Welch's interval (--unpaired), fine-tuning seeds averaged inside each
# pretraining seed, the verdicts (reproduced, contradicted, unresolved with the seeds that would resolve
# it, an open question's "lower"/"higher", identical, no claim), the tables and the forest plot; add-seed
# --unresolved gives the unresolved variants and the full model one more seed.  Then the same checks on
# three planted bugs (a z quantile instead of t, the sd instead of the standard error, the first
# fine-tuning seed instead of their mean) must FAIL.  Needs /usr/bin/python3 (and gnuplot for the plot).
set -u
. "$(dirname "$0")/lib-e2e.sh"
if [ "${PRECISION:-float}" = "double" ]; then echo "SKIPPED: e2e-ablation-report: no binary involved (the float run checks it)"; exit 77; fi
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIPPED: e2e-ablation-report: $PY not found"; exit 77; }
e2e_tmpdir W deberta-e2e-ablation-report
T=$W
S=$W/study
mkdir -p "$S/results"

# run FILE VARIANT SEED FX_AUC MLM_ACC [POS ACCS ...]: one synthetic run file (the queue's format)
run() {
    f=$1 v=$2 s=$3 fx=$4 mlm=$5; shift 5
    pos=""; i=1
    for a in "$@"; do pos="$pos${pos:+, }\"$i\": $a"; i=$((i + 1)); done
    printf '{"variant": "%s", "seed": %s, "steps": 100, "tokens": 204800, "build": "deberta test", "cpu": "test cpu",
  "yardsticks": {"fx_auc": %s, "mlm_acc": %s}, "finetune": {"pos": {%s}, "genre": {}}}\n' "$v" "$s" "$fx" "$mlm" "$pos" > "$S/results/$f"
}
# full: fixed AUC 0.70 0.72 0.71; POS per fine-tuning seed -> means 0.91 0.92 0.92
run full-seed1.json full 1 0.70 0.30 0.90 0.91 0.92
run full-seed2.json full 2 0.72 0.31 0.92 0.92 0.92
run full-seed3.json full 3 0.71 0.32 0.93 0.91 0.92
# no-c2p: AUC d = -0.04 -0.03 -0.05; POS means 0.89 0.903333 0.91 -> d = -0.02 -0.016667 -0.01; MLM identical
run no-c2p-seed1.json no-c2p 1 0.66 0.30 0.89 0.89 0.89
run no-c2p-seed2.json no-c2p 2 0.69 0.31 0.90 0.91 0.90
run no-c2p-seed3.json no-c2p 3 0.66 0.32 0.92 0.90 0.91
# no-p2c: AUC 0.67 0.66 0.68 -> d = -0.03 -0.06 -0.03 (paired: unresolved; Welch: excludes 0)
run no-p2c-seed1.json no-p2c 1 0.67 0.30
run no-p2c-seed2.json no-p2c 2 0.66 0.31
run no-p2c-seed3.json no-p2c 3 0.68 0.32
# es: AUC d = +0.04 +0.03 +0.04 (against the paper: contradicted)
run es-seed1.json es 1 0.74 0.29
run es-seed2.json es 2 0.75 0.30
run es-seed3.json es 3 0.75 0.31
# nes: AUC d = +0.01 -0.01 +0.03 (unresolved); MLM the full model's (decoupled: the same generator)
run nes-seed1.json nes 1 0.71 0.30
run nes-seed2.json nes 2 0.71 0.31
run nes-seed3.json nes 3 0.74 0.32
# pb16 (open question), two seeds: AUC d = -0.02 -0.04; POS in one seed only (too few for an interval)
run pb16-seed1.json pb16 1 0.68 0.30 0.90 0.90 0.90
run pb16-seed2.json pb16 2 0.68 0.31

# The hand computation (t quantiles from a table: t(.975; 1) 12.706205, 2: 4.302653, 4: 2.776445,
# 16: 2.119905, 17: 2.109816):
#  no-c2p AUC: mean -0.04, sd 0.01, se 0.01/sqrt3 = 0.0057735, half 4.302653 se = 0.0248414 -> [-0.0648414, -0.0151586]
#  no-c2p POS: mean -0.0155556, sd 0.0050918, se 0.0029397, half 0.0126487 -> [-0.0282043, -0.0029069]
#  no-p2c AUC: mean -0.04, sd 0.0173205, se 0.01, half 0.0430265 -> [-0.0830265, 0.0030265]; seeds: t(n-1) sd/sqrt n < 0.04
#              at n = 4 (3.182446/2 * 0.0173205 = 0.02756), not at n = 3 (0.04303) -> 4
#  no-p2c AUC, Welch: means 0.67 / 0.71, both variances 1e-4 -> se sqrt(2e-4/3) = 0.0081650, df 4, half 2.776445 se
#              = 0.0226696 -> [-0.0626696, -0.0173304]
#  es AUC:     mean 0.0366667, sd 0.0057735, se 0.0033333, half 0.0143422 -> [0.0223245, 0.0510088]
#  nes AUC:    mean 0.01, sd 0.02, se 0.0115470, half 0.0496827 -> [-0.0396827, 0.0596827]; width 0.0993654; seeds: t/sqrt n < 0.5
#              first at n = 18 (2.109816/sqrt18 = 0.49729; n = 17: 2.119905/sqrt17 = 0.51415)
#  pb16 AUC:   mean -0.03, sd 0.0141421, se 0.01, half 0.1270620 -> [-0.1570620, 0.0970620]; seeds: n = 4 (1.5912 sd... < 0.03)
check() {  # check OUTDIR [paired|welch]: exit 0 when OUTDIR/differences.csv has the hand-computed values
    "$PY" - "$1/differences.csv" "$2" <<'EOF'
import csv, sys
rows = {(r["variant"], r["yardstick"]): r for r in csv.DictReader(open(sys.argv[1]))}
bad = []
def near(key, col, want, tol=2e-6):
    have = rows.get(key, {}).get(col, "")
    try:
        ok = abs(float(have) - want) <= tol
    except ValueError:
        ok = False
    if not ok:
        bad.append("%s %s: %s, want %.7f" % (key, col, have, want))
def same(key, col, want):
    if rows.get(key, {}).get(col) != want:
        bad.append("%s %s: %s, want %s" % (key, col, rows.get(key, {}).get(col), want))
if sys.argv[2] == "paired":
    for key, lo, hi, word, need in ((("no-c2p", "fx_auc"), -0.0648414, -0.0151586, "reproduced", ""),
                                    (("no-c2p", "pos_acc"), -0.0282043, -0.0029069, "reproduced", ""),
                                    (("no-p2c", "fx_auc"), -0.0830265, 0.0030265, "unresolved", "4"),
                                    (("es", "fx_auc"), 0.0223245, 0.0510088, "contradicted", ""),
                                    (("nes", "fx_auc"), -0.0396827, 0.0596827, "unresolved", "18"),
                                    (("pb16", "fx_auc"), -0.1570620, 0.0970620, "unresolved", "4")):
        near(key, "lo", lo)
        near(key, "hi", hi)
        same(key, "verdict", word)
        same(key, "seeds_needed", need)
    near(("no-c2p", "pos_acc"), "mean", -0.0155556)
    same(("no-c2p", "mlm_acc"), "verdict", "identical")
    same(("nes", "mlm_acc"), "verdict", "no claim")
    same(("es", "pos_acc"), "verdict", "–")
    same(("pb16", "pos_acc"), "verdict", "too few seeds")
    near(("pb16", "pos_acc"), "mean", -0.01)
else:
    near(("no-p2c", "fx_auc"), "lo", -0.0626696)
    near(("no-p2c", "fx_auc"), "hi", -0.0173304)
    near(("no-p2c", "fx_auc"), "df", 4.0)
    same(("no-p2c", "fx_auc"), "verdict", "reproduced")
    near(("no-c2p", "pos_acc"), "mean", -0.0155556)
if bad:
    print("\n".join(bad))
    sys.exit(1)
EOF
}

# the scratch floor (the queue's scratch.json): pos 0.80 0.82 0.84 -> 0.8200 ± 0.0200 (3)
echo '{"finetune": {"pos": {"1": 0.80, "2": 0.82, "3": 0.84}, "genre": {}}}' > "$S/scratch.json"
# the script's t quantile against a printed table of t(0.975; df)
"$PY" - <<'EOF' || fail "t quantiles differ from the table"
import sys
sys.path.insert(0, "scripts")
from ablation_report import t_quantile
table = {1: 12.706205, 2: 4.302653, 3: 3.182446, 4: 2.776445, 5: 2.570582, 9: 2.262157, 17: 2.109816, 20: 2.085963, 30: 2.042272}
bad = ["df %d: %.6f, table %.6f" % (df, t_quantile(0.975, df), t) for df, t in table.items() if not abs(t_quantile(0.975, df) - t) <= 1e-6]
if bad:
    sys.exit("; ".join(bad))
EOF
ok "t(0.975; df) equals the table at df 1, 2, 3, 4, 5, 9, 17, 20, 30 (to 1e-6)"

A="sh scripts/ablation-study.sh"
$A report "$S" > "$W/r1.out" 2> "$W/r1.err" || { cat "$W/r1.err"; fail "report"; }
check "$S/report" paired || fail "paired intervals differ from the hand computation"
ok "paired intervals, verdicts and seeds-to-resolve equal the hand computation (t quantiles, fine-tuning seeds averaged)"
$A report "$S" --unpaired --out "$W/welch" --no-plot > /dev/null 2> "$W/r2.err" || { cat "$W/r2.err"; fail "report --unpaired"; }
check "$W/welch" welch || fail "Welch's interval differs from the hand computation"
ok "--unpaired: Welch's interval (df 4) equals the hand computation"

cmp -s "$W/r1.out" "$S/report/report.md" || fail "the printed report differs from report.md"
grep -q '^| no-c2p | 3 | \*\*-0\.0400 \[-0\.0648, -0\.0152\]\*\* |' "$S/report/report.md" || { cat "$S/report/report.md"; fail "report.md: no-c2p's difference row"; }
grep -q '^| ES | GDES beats ES .*| contradicted |.*| \*\*contradicted\*\* on fixed AUC' "$S/report/report.md" || fail "report.md: ES's verdict row"
grep -q '^| 16 position buckets | open question.*| either | unresolved |' "$S/report/report.md" || fail "report.md: the open question's row"
grep -q '^- nes, fixed-corruption AUC: unresolved (width 0\.0994; ~18 seeds' "$S/report/report.md" || fail "report.md: the unresolved list"
grep -q '^| full | 0\.7100 ± 0\.0100 (3) |' "$S/report/report.md" || fail "report.md: the full model's mean row"
grep -q '^Floor, .*: pos 0\.8200 ± 0\.0200 (3)\.$' "$S/report/report.md" || fail "report.md: the scratch floor"
[ "$(grep -c '^no-c2p,' "$S/report/runs.csv")" = 3 ] || fail "runs.csv: three rows of no-c2p"
if command -v gnuplot > /dev/null 2>&1; then
    [ "$(od -An -tx1 -N4 "$S/report/forest.png" | tr -d ' ')" = 89504e47 ] || fail "forest.png is not a PNG"
    ok "report.md (floor, means, differences, verdicts, unresolved list), runs.csv, forest.png"
else
    ok "report.md (means, differences, verdicts, unresolved list), runs.csv (gnuplot missing: no plot checked)"
fi

# add-seed --unresolved: one more seed (4) for the variants with an unresolved interval, and the full model
printf '{"variants": ["full", "no-c2p", "no-p2c", "es", "nes", "pb16"], "runs": [%s]}\n' \
    "$(for s in 1 2 3; do for v in full no-c2p no-p2c es nes; do printf '{"variant": "%s", "seed": %d}, ' $v $s; done; done)
{\"variant\": \"pb16\", \"seed\": 1}, {\"variant\": \"pb16\", \"seed\": 2}" > "$S/study.json"
$A add-seed "$S" --unresolved > /dev/null 2> "$W/add.err" || { cat "$W/add.err"; fail "add-seed --unresolved"; }
"$PY" -c "
import json, sys
runs = json.load(open('$S/study.json'))['runs']
new = [(r['variant'], r['seed']) for r in runs[17:]]
sys.exit(0 if new == [('full', 4), ('no-p2c', 4), ('nes', 4), ('pb16', 4)] else 'added %s' % new)" || fail "add-seed --unresolved added the wrong runs"
ok "add-seed --unresolved: seed 4 for full, no-p2c, nes and pb16 (not for no-c2p, reproduced, nor es, contradicted)"

# bad input: one error line, exit 1
mkdir -p "$W/empty"
e2e_bad "has no run files" -- $A report "$W/empty"
echo '{"variant": "full"' > "$S/results/broken.json"
e2e_bad "broken.json: not a run file" -- $A report "$S"
rm "$S/results/broken.json"
ok "a folder without run files and a broken run file: one error line each"

# planted bugs: the same checks must fail on each
for bug in "z quantile|s/tq = t_quantile(0.975, df)/tq = 1.959964/" "sd for se|s|se = sd / math.sqrt(n)|se = sd|" \
           "first fine-tuning seed|s|out\[k\] = sum(accs) / len(accs)|out[k] = accs[0]|"; do
    name=${bug%%|*} expr=${bug#*|}
    mkdir -p "$W/bug"
    sed "$expr" scripts/ablation_report.py > "$W/bug/ablation_report.py"
    ! cmp -s scripts/ablation_report.py "$W/bug/ablation_report.py" || fail "planted bug '$name': the sed changed nothing"
    rm -rf "$W/bug-out"
    "$PY" "$W/bug/ablation_report.py" "$S" --out "$W/bug-out" --no-plot > /dev/null 2>&1 || fail "planted bug '$name': the report did not run"
    if check "$W/bug-out" paired > "$W/bug.out"; then fail "planted bug '$name' was not caught"; fi
    ok "planted bug '$name' caught: $(head -n 1 "$W/bug.out")"
done
