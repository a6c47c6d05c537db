#!/usr/bin/python3
"""Markdown tables of the evaluations in pretraining runs' metrics.jsonl (docs/RECIPE.md).

usage: /usr/bin/python3 scripts/eval-table.py [--summary] LABEL=RUNDIR ...

Without --summary: one table per run, a row per evaluation (MLM and RTD accuracy with their
baselines, RTD AUC, flagged tokens and their precision, the discriminator's layer-0 attention mass
on the neighbours and within distance 3).  With --summary: one row per label (runs sharing a label
are seeds of one recipe) at the last evaluation: mean +- sd over the runs of RTD accuracy minus
its all-original baseline, AUC, flagged and precision, and how many runs flag anything.
"""
import json
import statistics
import sys


def evals(run):
    out = []
    with open(run + "/metrics.jsonl") as f:
        for line in f:
            r = json.loads(line)
            if r.get("kind") == "eval":
                out.append(r)
    if not out:
        sys.exit("error: %s/metrics.jsonl has no evaluation" % run)
    return out


def fmt_prec(r):
    return "%d (%.2f)" % (r["rtd_flagged"], r["rtd_precision"]) if r["rtd_flagged"] else "0"


def run_table(label, run):
    print("%s (`%s`):\n" % (label, run))
    print("| step | MLM acc (baseline) | RTD acc (all-original baseline) | AUC | flagged (precision) | layer-0 near / local |")
    print("|---|---|---|---|---|---|")
    for r in evals(run):
        above = r["rtd_acc"] > r["baseline_rtd_acc"]
        acc = ("**%.4f**" if above else "%.4f") % r["rtd_acc"]
        print("| %d | %.3f (%.3f) | %s (%.4f) | %.3f | %s | %.3f / %.3f |" % (
            r["step"], r["mlm_acc"], r["baseline_mlm_acc"], acc, r["baseline_rtd_acc"], r["rtd_auc"], fmt_prec(r),
            r.get("d_att_near_l0", float("nan")), r.get("d_att_local_l0", float("nan"))))
    print()


def ms(xs, f="%.3f"):
    if not xs:
        return "-"
    if len(xs) == 1:
        return f % xs[0]
    return (f + " ± " + f.replace("+", "")) % (statistics.mean(xs), statistics.stdev(xs))


def summary(groups):
    print("| recipe | runs | last step | RTD acc − baseline | AUC | flagged | precision (runs that flag) | runs flagging |")
    print("|---|---|---|---|---|---|---|---|")
    for label, runs in groups.items():
        last = [evals(r)[-1] for r in runs]
        prec = [r["rtd_precision"] for r in last if r["rtd_flagged"]]
        print("| %s | %d | %s | %s | %s | %s | %s | %d of %d |" % (
            label, len(runs), "/".join(sorted({str(r["step"]) for r in last})),
            ms([r["rtd_acc"] - r["baseline_rtd_acc"] for r in last], "%+.4f"), ms([r["rtd_auc"] for r in last]),
            ms([float(r["rtd_flagged"]) for r in last], "%.0f"), ms(prec, "%.2f"),
            sum(1 for r in last if r["rtd_flagged"]), len(last)))


def main(argv):
    want_summary = "--summary" in argv
    args = [a for a in argv if a != "--summary"]
    if not args or any("=" not in a for a in args):
        sys.exit("usage: eval-table.py [--summary] LABEL=RUNDIR ...")
    groups = {}
    for a in args:
        label, run = a.split("=", 1)
        groups.setdefault(label, []).append(run)
    if want_summary:
        summary(groups)
    else:
        for label, runs in groups.items():
            for run in runs:
                run_table(label, run)


if __name__ == "__main__":
    main(sys.argv[1:])
