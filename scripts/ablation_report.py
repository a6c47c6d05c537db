#!/usr/bin/python3
"""ablation_report.py — the fourth ablation study's tables, intervals, verdicts and forest plot
(docs/ABLATIONS.md).  Run with /usr/bin/python3 (standard library; gnuplot for the plot), usually as
`sh scripts/ablation-study.sh report STUDYDIR`.

  ablation_report.py STUDYDIR [--out DIR] [--baseline full] [--unpaired] [--no-plot]

Input: STUDYDIR/results/<variant>-seed<k>.json, one per pretraining run, written by the queue
(scripts/ablation_study.py): {"variant", "seed", "steps", "tokens", "build", "cpu", ...,
"yardsticks": {"fx_auc", "probe_acc", "probe_best_acc", "mlm_acc"}, "finetune": {"pos": {"<ft seed>":
test acc, ...}, "genre": {...}}}.  Output (DIR, default STUDYDIR/report): report.md (the tables),
runs.csv (a row per pretraining run), differences.csv (a row per variant and yardstick), forest.png.

Statistics.  A run's value of a fine-tuned yardstick is the mean over its fine-tuning seeds, so the
unit is the pretraining seed.  For each variant and yardstick the difference to the baseline (the full
model) is, by default, paired by pretraining seed: d_s = variant_s - baseline_s over the seeds both
have (one seed fixes the data order, the masks and the initialisation of both), mean d, sample sd s,
se = s / sqrt(n), and the 95 % interval mean +- t(0.975, n - 1) se (Student t, quantile computed here
from the regularised incomplete beta function).  --unpaired: Welch's interval on the two groups'
means (se^2 = s_v^2/n_v + s_b^2/n_b, Welch-Satterthwaite df).  Verdict per claim (direction from the
paper): reproduced (the interval excludes 0 on the paper's side), contradicted (excludes it on the
other), unresolved (then the interval's width and the seeds that would make mean +- t se exclude 0 if
the mean and sd stayed as they are).
"""
import argparse
import csv
import glob
import json
import math
import os
import shutil
import subprocess
import sys

# yardstick key, label, short label for the plot; higher is better for every one
YARDSTICKS = [("fx_auc", "fixed-corruption AUC", "fixed AUC"),
              ("probe_acc", "POS probe, last layer", "probe last"),
              ("probe_best_acc", "POS probe, best layer", "probe best"),
              ("mlm_acc", "MLM accuracy (generator)", "MLM acc"),
              ("pos_acc", "POS fine-tuned, test acc", "POS fine-tuned"),
              ("genre_acc", "genre fine-tuned, test acc", "genre fine-tuned")]
FT_TASKS = {"pos_acc": "pos", "genre_acc": "genre"}

# variant -> (what it is, the claim, the paper's direction of variant - full: -1 worse, 0 no claim, source)
CLAIMS = {
    "no-c2p": ("−c2p", "removing c2p hurts", -1, "DeBERTa (He et al. 2021), ablation table"),
    "no-p2c": ("−p2c", "removing p2c hurts", -1, "DeBERTa (He et al. 2021), ablation table"),
    "c2c-only": ("c2c only", "removing both position terms hurts", -1,
                 "inferred from the −c2p and −p2c rows (not a row of the paper's table)"),
    "no-emd": ("−EMD", "removing EMD hurts", -1, "DeBERTa (He et al. 2021), ablation table"),
    "no-emd-no-c2p": ("−EMD −c2p", "removing EMD and c2p hurts", -1, "DeBERTa (He et al. 2021), ablation table"),
    "no-emd-no-p2c": ("−EMD −p2c", "removing EMD and p2c hurts", -1, "DeBERTa (He et al. 2021), ablation table"),
    "es": ("ES", "GDES beats ES", -1, "DeBERTaV3 (He et al. 2023), embedding-sharing comparison"),
    "nes": ("NES", "GDES beats NES", -1, "DeBERTaV3 (He et al. 2023), embedding-sharing comparison"),
    "pb16": ("16 position buckets", "open question: are 64 buckets needed at T 128?", 0, "no paper claim"),
}
ORDER = ["full", "no-c2p", "no-p2c", "c2c-only", "no-emd", "no-emd-no-c2p", "no-emd-no-p2c", "es", "nes", "pb16"]
# the sharing claims are about the discriminator; MLM accuracy measures the generator, which under NES
# (decoupled) is the full model's to the bit and under ES is trained on the summed loss: shown, no verdict
NO_VERDICT = {("es", "mlm_acc"), ("nes", "mlm_acc")}
MAX_SEEDS = 200


def die(msg):
    sys.stderr.write("error: ablation-report: %s\n" % msg)
    sys.exit(1)


# ---------------------------------------------------------------- Student t

def _betacf(a, b, x):
    """Continued fraction of the regularised incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 1000):
        m2 = 2 * m
        for num in (m * (b - m) * x / ((qam + m2) * (a + m2)), -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def betainc(a, b, x):
    """I_x(a, b), the regularised incomplete beta function."""
    if x <= 0:
        return 0.0
    if x >= 1:
        return 1.0
    lf = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    if x < (a + 1) / (a + b + 2):
        return math.exp(lf) * _betacf(a, b, x) / a
    return 1.0 - math.exp(lf) * _betacf(b, a, 1.0 - x) / b


def t_cdf(t, df):
    """P(T <= t) for Student's t with df degrees of freedom (df > 0, not necessarily whole)."""
    tail = 0.5 * betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t > 0 else tail


def t_quantile(p, df):
    """The p quantile (0.5 < p < 1) of Student's t, by bisection on t_cdf."""
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
    return 0.5 * (lo + hi)


# ---------------------------------------------------------------- intervals

def mean_sd(xs):
    n = len(xs)
    m = sum(xs) / n
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1)) if n > 1 else float("nan")
    return m, sd


def paired_interval(diffs):
    """{n, mean, sd, se, df, tq, lo, hi} of the mean of per-seed differences; None when n < 2."""
    n = len(diffs)
    if n < 2:
        return None
    m, sd = mean_sd(diffs)
    se = sd / math.sqrt(n)
    df = n - 1
    tq = t_quantile(0.975, df)
    return {"n": n, "mean": m, "sd": sd, "se": se, "df": df, "tq": tq, "lo": m - tq * se, "hi": m + tq * se}


def welch_interval(v, b):
    """Welch's 95 % interval for mean(v) - mean(b); None when a group has fewer than 2 values."""
    if len(v) < 2 or len(b) < 2:
        return None
    mv, sv = mean_sd(v)
    mb, sb = mean_sd(b)
    a1, a2 = sv * sv / len(v), sb * sb / len(b)
    se = math.sqrt(a1 + a2)
    if se == 0:
        df = len(v) + len(b) - 2.0
    else:
        df = (a1 + a2) ** 2 / (a1 * a1 / (len(v) - 1) + a2 * a2 / (len(b) - 1))
    tq = t_quantile(0.975, df)
    m = mv - mb
    # sd: of one seed's difference, for the seed estimate (each arm n seeds: se = sd / sqrt(n))
    return {"n": min(len(v), len(b)), "mean": m, "sd": math.sqrt(sv * sv + sb * sb), "se": se, "df": df, "tq": tq,
            "lo": m - tq * se, "hi": m + tq * se}


def seeds_needed(mean, sd):
    """The smallest n (pretraining seeds per variant) with t(0.975, n-1) sd / sqrt(n) < |mean|, or None
    beyond MAX_SEEDS (the difference is too small for its spread)."""
    if not (sd > 0) or mean == 0:
        return None
    for n in range(2, MAX_SEEDS + 1):
        if t_quantile(0.975, n - 1) * sd / math.sqrt(n) < abs(mean):
            return n
    return None


def verdict(iv, direction, identical=False):
    """(word, text) for one interval: reproduced / contradicted / unresolved (+ width, seeds), or for an
    open question (direction 0) higher / lower / unresolved."""
    if iv is None:
        return "too few seeds", "too few seeds (fewer than 2 paired)"
    if identical:
        return "identical", "identical values in every seed"
    if iv["lo"] > 0 or iv["hi"] < 0:
        side = 1 if iv["lo"] > 0 else -1
        if direction == 0:
            return ("higher" if side > 0 else "lower"), ("higher than the full model" if side > 0 else "lower than the full model")
        return ("reproduced", "reproduced") if side == direction else ("contradicted", "contradicted")
    need = seeds_needed(iv["mean"], iv["sd"])
    return "unresolved", "unresolved (width %.4f; %s)" % (
        iv["hi"] - iv["lo"], ("~%d seeds would resolve it at this mean and sd" % need) if need else
        "more than %d seeds: the mean is too small for its spread" % MAX_SEEDS)


# ---------------------------------------------------------------- runs

def run_values(rec):
    """{yardstick: value} of one result record; fine-tuned yardsticks = mean over the fine-tuning seeds."""
    out = {}
    ys = rec.get("yardsticks") or {}
    for k, _, _ in YARDSTICKS:
        if k in FT_TASKS:
            accs = [float(a) for a in ((rec.get("finetune") or {}).get(FT_TASKS[k]) or {}).values()]
            if accs:
                out[k] = sum(accs) / len(accs)
        elif isinstance(ys.get(k), (int, float)):
            out[k] = float(ys[k])
    return out


def load_results(study):
    files = sorted(glob.glob(os.path.join(study, "results", "*.json")))
    if not files:
        die("%s/results/ has no run files (run the study first: sh scripts/ablation-study.sh run %s)" % (study, study))
    runs = []
    for f in files:
        try:
            rec = json.load(open(f, encoding="utf-8"))
            rec["variant"], rec["seed"] = str(rec["variant"]), int(rec["seed"])
        except (OSError, ValueError, KeyError, TypeError) as e:
            die("%s: not a run file (%s)" % (f, e))
        rec["values"] = run_values(rec)
        runs.append(rec)
    return runs


def compare(runs, baseline, unpaired):
    """[(variant, yardstick, interval or None, verdict word, verdict text)] for every variant but the baseline."""
    by = {}
    for r in runs:
        by.setdefault(r["variant"], {})[r["seed"]] = r["values"]
    if baseline not in by:
        die("no run of the baseline variant '%s' in the results" % baseline)
    variants = sorted(by, key=lambda v: (ORDER.index(v) if v in ORDER else len(ORDER), v))
    rows = []
    base = by[baseline]
    for v in variants:
        if v == baseline:
            continue
        direction = CLAIMS.get(v, ("", "", 0, ""))[2]
        for k, _, _ in YARDSTICKS:
            seeds = sorted(s for s in by[v] if k in by[v][s] and s in base and k in base[s])
            if unpaired:
                xv = [by[v][s][k] for s in sorted(by[v]) if k in by[v][s]]
                xb = [base[s][k] for s in sorted(base) if k in base[s]]
                iv = welch_interval(xv, xb)
                identical = bool(xv) and sorted(xv) == sorted(xb)
            else:
                d = [by[v][s][k] - base[s][k] for s in seeds]
                iv = paired_interval(d)
                identical = bool(d) and all(x == 0 for x in d)
            n = len(seeds) if not unpaired else min(len(xv), len(xb))
            if n == 0:
                word, text = "–", "not measured"
            elif (v, k) in NO_VERDICT:
                word, text = "no claim", "shown, no verdict (the claim is about the discriminator)"
            else:
                word, text = verdict(iv, direction, identical)
            single = (by[v][seeds[0]][k] - base[seeds[0]][k]) if len(seeds) == 1 else None
            rows.append({"variant": v, "yardstick": k, "iv": iv, "word": word, "text": text, "n": n, "single": single})
    return variants, rows


def row(rows, v, k):
    return next((r for r in rows if r["variant"] == v and r["yardstick"] == k), None)


def overall(rows, v):
    """One verdict per claim over its yardsticks."""
    words = [(r["yardstick"], r["word"]) for r in rows
             if r["variant"] == v and r["word"] not in ("–", "no claim", "too few seeds", "identical")]
    rep = [k for k, w in words if w in ("reproduced", "higher", "lower")]
    con = [k for k, w in words if w == "contradicted"]
    label = dict((k, s) for k, _, s in YARDSTICKS)
    if not words:
        return "not measured"
    if rep and con:
        return "mixed: %s on %s; contradicted on %s" % ("reproduced" if CLAIMS.get(v, ("", "", 0))[2] else "differs",
                                                          ", ".join(label[k] for k in rep), ", ".join(label[k] for k in con))
    rest = lambda k: "; unresolved on the other %d" % k if k else ""  # noqa: E731
    if con:
        return "**contradicted** on %s%s" % (", ".join(label[k] for k in con), rest(len(words) - len(con)))
    if rep:
        word = "**reproduced**" if CLAIMS.get(v, ("", "", 0))[2] else "**differs**"
        return "%s on %s%s" % (word, ", ".join(label[k] for k in rep), rest(len(words) - len(rep)))
    return "unresolved on %s" % ("all %d yardsticks" % len(words) if len(words) > 1 else "its yardstick")


# ---------------------------------------------------------------- output

def fmt(x, f="%+.4f"):
    return "–" if x is None or (isinstance(x, float) and math.isnan(x)) else f % x


def scratch_floor(study):
    """'POS 0.9597 ± 0.0011 (3), genre ...' from STUDYDIR/scratch.json (the queue writes it), or ''."""
    try:
        ft = json.load(open(os.path.join(study, "scratch.json"), encoding="utf-8"))["finetune"]
    except (OSError, ValueError, KeyError, TypeError):
        return ""
    parts = []
    for task in ("pos", "genre"):
        xs = [float(x) for x in (ft.get(task) or {}).values()]
        if len(xs) > 1:
            m, sd = mean_sd(xs)
            parts.append("%s %.4f ± %.4f (%d)" % (task, m, sd, len(xs)))
        elif xs:
            parts.append("%s %.4f (1)" % (task, xs[0]))
    return ", ".join(parts)


def write_tables(study, out, runs, variants, rows, baseline, unpaired):
    os.makedirs(out, exist_ok=True)
    keys = [k for k, _, _ in YARDSTICKS]
    with open(os.path.join(out, "runs.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["variant", "seed", "steps", "tokens", "build", "cpu", "pretrain_wall_s", "pretrain_cpu_s"] + keys +
                   ["pos_ft_seeds", "genre_ft_seeds"])
        for r in sorted(runs, key=lambda r: (variants.index(r["variant"]), r["seed"])):
            ft = r.get("finetune") or {}
            w.writerow([r["variant"], r["seed"], r.get("steps", ""), r.get("tokens", ""), r.get("build", ""), r.get("cpu", ""),
                        r.get("pretrain_wall_s", ""), r.get("pretrain_cpu_s", "")] +
                       ["%.6f" % r["values"][k] if k in r["values"] else "" for k in keys] +
                       [len(ft.get("pos") or {}), len(ft.get("genre") or {})])
    with open(os.path.join(out, "differences.csv"), "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["variant", "yardstick", "method", "n", "mean", "sd", "se", "df", "t_quantile", "lo", "hi", "verdict", "seeds_needed"])
        for r in rows:
            v, k, iv, word = r["variant"], r["yardstick"], r["iv"], r["word"]
            if iv is None:
                w.writerow([v, k, "welch" if unpaired else "paired", r["n"], "" if r["single"] is None else "%.6f" % r["single"]] +
                           [""] * 6 + [word, ""])
                continue
            need = seeds_needed(iv["mean"], iv["sd"]) if word == "unresolved" else None
            w.writerow([v, k, "welch" if unpaired else "paired", iv["n"]] +
                       ["%.6f" % iv[x] for x in ("mean", "sd", "se", "df", "tq", "lo", "hi")] + [word, need or ""])

    md = []
    steps = sorted({str(r.get("steps", "?")) for r in runs})
    tokens = sorted({str(r.get("tokens", "?")) for r in runs})
    builds = sorted({str(r.get("build", "?")) for r in runs})
    cpus = sorted({str(r.get("cpu", "?")) for r in runs})
    md.append("# The fourth ablation study: report of `%s`\n" % os.path.basename(os.path.abspath(study)))
    md.append("Runs: %d pretraining runs; steps %s, tokens per run %s; build %s; CPU %s.\n" % (
        len(runs), " / ".join(steps), " / ".join(tokens), " / ".join(builds), " / ".join(cpus)))
    if len(steps) > 1 or len(tokens) > 1:
        md.append("**The runs do not have the same token budget.**\n")
    floor = scratch_floor(study)
    if floor:
        md.append("Floor, the same fine-tunes from random initialisation (mean ± sd over the fine-tuning seeds): %s.\n" % floor)
    md.append("## Per variant: mean ± sd over pretraining seeds (n)\n")
    md.append("| variant | " + " | ".join(l for _, l, _ in YARDSTICKS) + " |")
    md.append("|---|" + "---|" * len(YARDSTICKS))
    for v in variants:
        cells = []
        for k in keys:
            xs = [r["values"][k] for r in runs if r["variant"] == v and k in r["values"]]
            if not xs:
                cells.append("–")
            elif len(xs) == 1:
                cells.append("%.4f (1)" % xs[0])
            else:
                m, sd = mean_sd(xs)
                cells.append("%.4f ± %.4f (%d)" % (m, sd, len(xs)))
        md.append("| %s | %s |" % (v, " | ".join(cells)))
    md.append("")
    method = ("Welch's interval on the two groups' means (Welch–Satterthwaite df)" if unpaired else
              "paired by pretraining seed: mean ± t(0.975, n−1) · sd/√n of the per-seed differences")
    md.append("## Differences to `%s`: mean [95 %% interval]\n" % baseline)
    md.append("Method: %s; a fine-tuned yardstick is first averaged over the run's fine-tuning seeds. "
              "Bold: the interval excludes 0.\n" % method)
    md.append("| variant | n | " + " | ".join(l for _, l, _ in YARDSTICKS) + " |")
    md.append("|---|---|" + "---|" * len(YARDSTICKS))
    for v in variants:
        if v == baseline:
            continue
        cells, ns = [], set()
        for k in keys:
            r = row(rows, v, k)
            if r["n"]:
                ns.add(r["n"])
            iv = r["iv"]
            if iv is None:
                cells.append("%+.4f (one seed)" % r["single"] if r["single"] is not None else "–")
                continue
            s = "%+.4f [%+.4f, %+.4f]" % (iv["mean"], iv["lo"], iv["hi"])
            cells.append("**%s**" % s if iv["lo"] > 0 or iv["hi"] < 0 else s)
        md.append("| %s | %s | %s |" % (v, "/".join(str(n) for n in sorted(ns)) or "0", " | ".join(cells)))
    md.append("")
    md.append("## Verdicts\n")
    md.append("| variant | claim (source) | direction | " + " | ".join(s for _, _, s in YARDSTICKS) + " | overall |")
    md.append("|---|---|---|" + "---|" * len(YARDSTICKS) + "---|")
    for v in variants:
        if v == baseline:
            continue
        what, claim, direction, src = CLAIMS.get(v, (v, "no claim", 0, "–"))
        cells = [row(rows, v, k)["word"] for k in keys]
        md.append("| %s | %s (%s) | %s | %s | %s |" % (what, claim, src, {-1: "worse", 1: "better", 0: "either"}[direction],
                                                        " | ".join(cells), overall(rows, v)))
    md.append("")
    md.append("Unresolved intervals (width, and the pretraining seeds per variant that would exclude 0 if the mean "
              "and sd stayed as measured):\n")
    names = dict((a, b) for a, b, _ in YARDSTICKS)
    unresolved = ["- %s, %s: %s" % (r["variant"], names[r["yardstick"]], r["text"]) for r in rows if r["word"] == "unresolved"]
    md += unresolved or ["- none"]
    md.append("")
    md.append("![differences to the full model, 95 % intervals](forest.png)\n")
    text = "\n".join(md)
    with open(os.path.join(out, "report.md"), "w", encoding="utf-8") as f:
        f.write(text)
    return text


def write_forest(out, variants, rows, baseline):
    """forest.png: one panel per yardstick, a row per variant, the difference with its 95 % interval."""
    gp = shutil.which("gnuplot")
    if not gp:
        sys.stderr.write("ablation-report: gnuplot not found: no forest.png (apt-get install gnuplot-nox)\n")
        return False
    vs = [v for v in variants if v != baseline]
    dat = os.path.join(out, "forest.dat")
    xr = {}
    with open(dat, "w", encoding="utf-8") as f:
        for k, _, _ in YARDSTICKS:  # one block per yardstick (gnuplot index k)
            ends = [0.0]
            for i, v in enumerate(vs):
                iv = row(rows, v, k)["iv"]
                if iv is not None:
                    excl = iv["lo"] > 0 or iv["hi"] < 0  # red where the interval excludes 0
                    f.write("%d %.9g %.9g %.9g %d\n" % (len(vs) - i, iv["mean"], iv["lo"], iv["hi"], 0xCC0000 if excl else 0))
                    ends += [iv["lo"], iv["hi"]]
                else:
                    f.write("%d NaN NaN NaN 0\n" % (len(vs) - i))
            f.write("\n\n")
            pad = 0.05 * (max(ends) - min(ends)) or 0.01
            xr[k] = (min(ends) - pad, max(ends) + pad)
    ytics = ", ".join('"%s" %d' % (CLAIMS.get(v, (v,))[0].replace("−", "-"), len(vs) - i) for i, v in enumerate(vs))
    script = ["set terminal pngcairo size 1500,900 font 'sans,10'" if _has_cairo(gp) else "set terminal png size 1500,900",
              "set output '%s'" % os.path.join(out, "forest.png").replace("'", "''"),
              "set multiplot layout 2,3 title 'difference to the full model (%s), 95 %% interval over pretraining seeds (red: excludes 0)'" % baseline,
              "set yrange [0.3:%g]" % (len(vs) + 0.7), "set ytics (%s)" % ytics, "set grid xtics", "unset key",
              "set arrow from 0, graph 0 to 0, graph 1 nohead dt 2 lc rgb 'gray40'"]
    for i, (k, _, short) in enumerate(YARDSTICKS):
        script += ["set title '%s'" % short, "set xrange [%.9g:%.9g]" % xr[k],
                   "plot '%s' index %d using 2:1:3:4:5 with xerrorbars pt 7 ps 0.8 lc rgb variable" % (dat.replace("'", "''"), i)]
    script.append("unset multiplot")
    p = subprocess.run([gp], input="\n".join(script) + "\n", capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write("ablation-report: gnuplot failed: %s\n" % p.stderr.strip().splitlines()[-1:])
        return False
    return True


def _has_cairo(gp):
    p = subprocess.run([gp, "-e", "set terminal"], capture_output=True, text=True)
    return "pngcairo" in (p.stdout + p.stderr)


def main(argv):
    ap = argparse.ArgumentParser(prog="ablation-study.sh report", description=__doc__.split("\n\n")[0])
    ap.add_argument("study")
    ap.add_argument("--out", default="", help="output folder [STUDYDIR/report]")
    ap.add_argument("--baseline", default="full")
    ap.add_argument("--unpaired", action="store_true", help="Welch's interval instead of pairing by seed")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args(argv)
    if not os.path.isdir(a.study):
        die("%s is not a folder" % a.study)
    runs = load_results(a.study)
    variants, rows = compare(runs, a.baseline, a.unpaired)
    out = a.out or os.path.join(a.study, "report")
    text = write_tables(a.study, out, runs, variants, rows, a.baseline, a.unpaired)
    plotted = not a.no_plot and write_forest(out, variants, rows, a.baseline)
    print(text, end="")
    sys.stderr.write("ablation-report: %s/report.md, runs.csv, differences.csv%s\n" % (out, ", forest.png" if plotted else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
