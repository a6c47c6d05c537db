#!/usr/bin/python3
"""Tables and curves of recipe runs (docs/RECIPE.md), from each run's metrics.jsonl eval lines and,
for runs made before the in-run yardsticks, RUNDIR/score-STEP.txt (`deberta eval` of the kept
checkpoint-STEP.h5: scripts/score-run.sh).

usage: scripts/recipe_report.py table LABEL=RUNDIR ...        a row per run (last evaluation) and a
                                                             mean ± sd row per recipe
       scripts/recipe_report.py steps LABEL=RUNDIR ...        a row per run and evaluation
       scripts/recipe_report.py plot OUT.png LABEL=RUNDIR ... fixed-corruption AUC, POS probe (last layer)
                                                             and MLM accuracy against training tokens: a
                                                             line per recipe (the mean) and the band
                                                             between its seeds
The recipe of a run is its LABEL without a trailing "-s<seed>".  Tokens per step: 2,048 (the tiny
preset's 16 x 128, and the curriculum's 64 x 32)."""
import json
import math
import os
import re
import statistics as st
import subprocess
import sys
import tempfile

TOKENS_PER_STEP = 2048


def parse_score(path):
    try:
        t = open(path).read()
    except OSError:
        return {}
    d = {}
    m = re.search(r"fixed corruption.*?\n  discriminator  AUC ([\d.]+)  accuracy ([\d.]+)  flagged (\d+)  precision ([\w.]+)", t, re.S)
    if m:
        d.update(fx_auc=float(m[1]), fx_acc=float(m[2]), fx_flagged=int(m[3]), fx_precision=float(m[4]))
    m = re.search(r"count detector AUC ([\d.]+)", t)
    if m:
        d["fx_counter_auc"] = float(m[1])
    m = re.search(r"last layer ([\d.]+)  best layer (\d+): ([\d.]+)", t)
    if m:
        d.update(probe_acc=float(m[1]), probe_best_layer=int(m[2]), probe_best_acc=float(m[3]))
    return d


def evals(run):
    out = {}
    with open(os.path.join(run, "metrics.jsonl")) as f:
        for line in f:
            try:
                o = json.loads(line)
            except ValueError:
                continue
            if o.get("kind") == "eval":
                out[o["step"]] = o
    for s, o in out.items():
        if "fx_auc" not in o:
            o.update(parse_score(os.path.join(run, "score-%d.txt" % s)))
    return out


def recipe(label):
    return re.sub(r"-s\d+$", "", label)


def fmt(o, k, f="%.3f"):
    v = o.get(k)
    return f % v if isinstance(v, (int, float)) and not (isinstance(v, float) and math.isnan(v)) else "-"


def table(runs, every):
    print("| run | step | MLM acc | live AUC | fixed AUC | fixed flagged (precision) | probe last | probe best (layer) |")
    print("|---|---|---|---|---|---|---|---|")
    last = {}
    for label, run in runs:
        ev = evals(run)
        for s in sorted(ev) if every else [max(ev)]:
            o = ev[s]
            print("| %s | %d | %s | %s | %s | %s (%s) | %s | %s (%s) |" % (label, s, fmt(o, "mlm_acc"), fmt(o, "rtd_auc"), fmt(o, "fx_auc"),
                  fmt(o, "fx_flagged", "%d"), fmt(o, "fx_precision", "%.2f"), fmt(o, "probe_acc"), fmt(o, "probe_best_acc"),
                  fmt(o, "probe_best_layer", "%d")))
        last.setdefault(recipe(label), []).append(ev[max(ev)])
    if every:
        return
    print()
    print("| recipe | seeds | MLM acc | fixed AUC | fixed flagged | probe last | probe best |")
    print("|---|---|---|---|---|---|---|")
    for g, os_ in last.items():
        def ms(k, f="%.3f"):
            v = [o[k] for o in os_ if isinstance(o.get(k), (int, float))]
            if not v:
                return "-"
            return f % st.mean(v) + (" ± " + f % st.stdev(v) if len(v) > 1 else "")
        print("| %s | %d | %s | %s | %s | %s | %s |" % (g, len(os_), ms("mlm_acc"), ms("fx_auc"), ms("fx_flagged", "%.0f"), ms("probe_acc"),
              ms("probe_best_acc")))


def plot(out, runs):
    groups = {}
    for label, run in runs:
        groups.setdefault(recipe(label), []).append(evals(run))
    keys = [("fx_auc", "fixed-corruption AUC"), ("probe_acc", "POS probe accuracy (last layer)"), ("mlm_acc", "MLM accuracy")]
    tmp = tempfile.mkdtemp(prefix="recipe-plot.")
    colours = ["#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b"]
    g = ["set terminal pngcairo size 1500,500 enhanced font 'sans,10'", "set output '%s'" % out.replace("'", "''"),
         "set multiplot layout 1,3", "set grid; set key bottom right; set xlabel 'training tokens (millions)'"]
    for k, title in keys:
        parts = []
        for i, (name, evs) in enumerate(groups.items()):
            steps = sorted(set.intersection(*[set(s for s, o in e.items() if isinstance(o.get(k), (int, float))) for e in evs]))
            if not steps:
                continue
            path = "%s/%s-%s.dat" % (tmp, k, i)
            with open(path, "w") as f:
                for s in steps:
                    v = [e[s][k] for e in evs]
                    f.write("%g %g %g %g\n" % (s * TOKENS_PER_STEP / 1e6, st.mean(v), min(v), max(v)))
            c = colours[i % len(colours)]
            parts.append("'%s' using 1:3:4 with filledcurves fs transparent solid 0.2 lc rgb '%s' notitle" % (path, c))
            parts.append("'%s' using 1:2 with linespoints pt 7 lw 2 lc rgb '%s' title '%s (%d seed%s)'" % (path, c, name.replace("_", "\\\\_"), len(evs), '' if len(evs) == 1 else 's'))
        if k == "fx_auc":
            cnt = [o.get("fx_counter_auc") for evs in groups.values() for e in evs for o in e.values() if o.get("fx_counter_auc")]
            if cnt:
                parts.append("%g with lines dt 2 lc rgb 'black' title 'count detector, same tokens'" % cnt[0])
        g.append("set title '%s'" % title)
        g.append("plot " + ", \\\n  ".join(parts) if parts else "plot [0:1] NaN notitle")
    g.append("unset multiplot")
    with open(tmp + "/p.gp", "w") as f:
        f.write("\n".join(g) + "\n")
    subprocess.run(["gnuplot", tmp + "/p.gp"], check=True)
    print("recipe_report: wrote %s" % out)


def main():
    a = sys.argv[1:]
    if not a or a[0] not in ("table", "steps", "plot") or (a[0] == "plot" and len(a) < 3):
        sys.exit(__doc__)
    mode = a.pop(0)
    out = a.pop(0) if mode == "plot" else None
    runs = []
    for x in a:
        if "=" not in x:
            sys.exit("error: recipe_report: '%s' is not LABEL=RUNDIR" % x)
        runs.append(tuple(x.split("=", 1)))
    if mode == "plot":
        plot(out, runs)
    else:
        table(runs, mode == "steps")


if __name__ == "__main__":
    main()
