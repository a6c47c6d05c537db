#!/usr/bin/python3
"""ablate.py — ablation grids for deberta.c (run with /usr/bin/python3; stdlib + numpy + h5py).

  ablate.py run     --out OUTDIR --data DIR [axes] [--design cross|oat] [--parallel P] [--threads T]
                    [--deberta BIN] [--dry-run] [-- PRETRAIN FLAGS]
  ablate.py summary OUTDIR [--only V1,V2] [--name NAME] [--baseline V] [--data DIR] [--min-count N]
                    [--no-plots]
  ablate.py cosine  CHECKPOINT... [--data DIR] [--min-count N]
  ablate.py finetune OUTDIR [--task pos] [--seeds 1] [--scratch-seeds S] [--only V1,V2] [--parallel P]
                    [--threads T] [--deberta BIN]

Axes (each a comma- or space-separated list; an axis not given is left to the pretrain flags):
  --terms   attention-term subsets, e.g. "c2c,c2c+c2p,c2c+p2c,c2c+c2p+p2c" ('+' or '|' inside one)
  --emd     1,0                     (use_emd)
  --sharing gdes,es,nes             (embedding_sharing; es runs with --training_mode joint, see below)
  --buckets 64,32                   (position_buckets)
  --lambda  10,50                   (rtd_lambda)
  --seeds   1,2,3                   (--seed of the run: initialisation, data order, masks, dropout)
--design cross (default) runs every combination; oat ("one at a time") runs the base point (the first
value of every axis) plus each other value of each axis with the other axes at their base value, e.g.
--terms c2c+c2p+p2c,c2c --sharing gdes,nes --design oat -> c2c+c2p+p2c_gdes, c2c_gdes, c2c+c2p+p2c_nes.

Every run of a grid gets the same pretrain flags (those after `--`: --preset, --steps, --batch, …) and
the same --data, hence the same token budget (steps x batch x accum x max_seq_len, checked) and, for
one seed, the same sequences and masks.  Runs go to OUTDIR/<variant>-seed<k>/.  Re-running the same
command skips finished runs (checkpoint step == the run's steps), resumes unfinished ones with
`deberta pretrain --resume`, and refuses a run directory that was made with other flags.
ES needs joint training (spec §5.2: in decoupled mode the generator's zero_grad throws the RTD
gradient on the shared table away), so es always gets --training_mode joint, the variant is named
es-joint, and the driver says so.

Cores: --parallel P runs at a time (default min(2, cores)) with --threads T each (default cores / P).
On the project's 2-core machine under load, 2 runs x 1 thread gave 3.4x the total tokens/s of
1 run x 2 threads (docs/ABLATIONS.md, "Sharing the cores").

Timing: each pretrain invocation's wall time, steps and tokens go to RUNDIR/ablate-timing.jsonl
(metrics.jsonl stays free of wall-clock values); tokens/s in the summary = trained tokens / wall
seconds over all invocations of the run (start-up, evaluations and checkpoints included).

Downstream (finetune): every finished run's final checkpoint is fine-tuned on the Brown task(s) with the
fine-tuning seeds (--seeds, default 1), and the model from scratch with --scratch-seeds (default: the
grid's seeds), all with one budget: the FT_* variables of scripts/finetune-table.sh (FT_STEPS,
FT_BATCH, FT_LR, FT_SEQ_LEN, FT_EVAL_EVERY, FT_PRESET = the scratch model; SHARDS defaults to the
grid's --data, whose tokenizer the task files must use), through the same machinery
(scripts/finetune_table.py: skip finished, resume interrupted, refuse other budgets).  Runs go to
OUTDIR/finetune/<variant>-seed<k>/<task>-seed<s>/ and OUTDIR/finetune/scratch/<task>-seed<s>/.
summary then adds a column per task: test accuracy of the best-dev model, per pretraining run the
mean over its fine-tuning seeds, then mean ± sd over the variant's runs (and paired differences with
--baseline), and a line with scratch as the floor.

Embedding cosine (DeBERTaV3 §5.3): for a token table E and the token set S (all ids except the 5
special tokens [PAD] [CLS] [SEP] [UNK] [MASK]; optionally only ids seen >= --min-count times in the
train shards), the mean cosine similarity over all unordered pairs of distinct tokens,
    cos(E) = (|sum_i u_i|^2 - n) / (n (n - 1)),   u_i = E_i / |E_i|, n = |S|,
which equals the average of u_i . u_j over all i != j exactly (no sampling).  Tables: generator =
generator.deberta.embeddings.word_embeddings.weight; discriminator = E_G + E_delta (GDES; E_delta is
discriminator.…word_embeddings._weight), E_G (ES), discriminator.…word_embeddings.weight (NES).
"""
import argparse
import csv
import glob
import json
import math
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from finetune_table import read_config_text, read_metrics  # noqa: E402  (one reader of config.txt and metrics.jsonl)
ROOT = os.path.dirname(HERE)
N_SPECIAL = 5  # [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3 [MASK]=4 (docs/FORMATS.md)
TERM_ORDER = ["c2c", "c2p", "p2c"]
AXES = ["terms", "emd", "sharing", "buckets", "lambda"]
AXIS_KEYS = {"terms": "pos_att_type", "emd": "use_emd", "sharing": "embedding_sharing",
             "buckets": "position_buckets", "lambda": "rtd_lambda"}
# flags the driver sets itself; they may not appear among the pass-through pretrain flags
RESERVED = {"out", "resume", "seed", "threads", "data", "minutes", "stop-after", "config"}


def die(msg, code=1):
    sys.stderr.write("error: ablate: %s\n" % msg)
    sys.exit(code)


def note(msg):
    sys.stderr.write("ablate: %s\n" % msg)
    sys.stderr.flush()


def split_list(s):
    return [x for x in s.replace(",", " ").split() if x]


def canon_terms(s):
    parts = [p for p in s.replace("|", "+").split("+") if p]
    bad = [p for p in parts if p not in TERM_ORDER]
    if not parts or bad:
        die("--terms: '%s' is not a non-empty subset of c2c, c2p, p2c" % s, 2)
    return "+".join(t for t in TERM_ORDER if t in parts)


def canon_value(axis, v):
    if axis == "terms":
        return canon_terms(v)
    if axis == "emd":
        if v.lower() in ("1", "true", "on", "yes"):
            return "1"
        if v.lower() in ("0", "false", "off", "no"):
            return "0"
        die("--emd: '%s' (1 or 0)" % v, 2)
    if axis == "sharing":
        v = v.lower()
        if v == "none":
            v = "nes"
        if v not in ("gdes", "es", "nes"):
            die("--sharing: '%s' (gdes, es or nes)" % v, 2)
        return v
    if axis == "buckets":
        try:
            return str(int(v))
        except ValueError:
            die("--buckets: '%s' is not an integer" % v, 2)
    if axis == "lambda":
        try:
            x = float(v)
        except ValueError:
            die("--lambda: '%s' is not a number" % v, 2)
        return "%g" % x
    raise AssertionError(axis)


def name_part(axis, v):
    if axis == "terms":
        return v
    if axis == "emd":
        return "emd" if v == "1" else "noemd"
    if axis == "sharing":
        return "es-joint" if v == "es" else v
    if axis == "buckets":
        return "pb" + v
    if axis == "lambda":
        return "lam" + v
    raise AssertionError(axis)


def variant_flags(point):
    """pretrain flags and notes for one grid point {axis: value}."""
    flags, notes = [], []
    for axis in AXES:
        if axis not in point:
            continue
        v = point[axis]
        if axis == "terms":
            flags += ["--pos_att_type", v.replace("+", "|")]
        else:
            flags += ["--" + AXIS_KEYS[axis], v]
        if axis == "sharing" and v == "es":
            flags += ["--training_mode", "joint"]
            notes.append("es runs with --training_mode joint (in decoupled mode the RTD gradient on the shared "
                         "table is discarded, spec §5.2)")
    return flags, notes


def make_grid(axes, design):
    given = [a for a in AXES if axes.get(a)]
    if not given:
        return [{}]
    if design == "cross":
        pts = [{}]
        for a in given:
            pts = [dict(p, **{a: v}) for p in pts for v in axes[a]]
        return pts
    base = {a: axes[a][0] for a in given}
    pts = [dict(base)]
    for a in given:
        for v in axes[a][1:]:
            pts.append(dict(base, **{a: v}))
    return pts


def variant_name(point):
    parts = [name_part(a, point[a]) for a in AXES if a in point]
    return "_".join(parts) if parts else "base"


def flag_name(arg):
    return arg[2:].split("=", 1)[0].replace("_", "-") if arg.startswith("--") else None


def checkpoint_step(rundir):
    p = os.path.join(rundir, "checkpoint.h5")
    if not os.path.exists(p):
        return None
    import h5py
    try:
        with h5py.File(p, "r") as f:
            return int(f.attrs["step"])
    except Exception as e:  # a corrupt file: let pretrain --resume report it
        note("%s: cannot read the step (%s)" % (p, e))
        return -1


def run_steps(rundir):
    cfg = read_config_text(os.path.join(rundir, "config.txt"))
    if not cfg or "train_steps" not in cfg:
        return None
    return int(cfg["train_steps"])


def tokens_per_step(cfg):
    return int(cfg["train_batch"]) * int(cfg["train_accum"]) * int(cfg["max_seq_len"])


def loadavg():
    try:
        return float(open("/proc/loadavg").read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


# ---------------------------------------------------------------- run

class Runner:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.children = set()
        self.stopping = False
        self.failed = []

    def launch(self, job):
        """One pretrain invocation (fresh or resume) for job; returns its exit code."""
        a = self.args
        rundir = job["dir"]
        step0 = checkpoint_step(rundir)
        if step0 is None:
            cmd = [a.deberta, "pretrain", "--data", a.data, "--out", rundir, "--threads", str(a.threads),
                   "--seed", str(job["seed"])] + a.base + job["flags"]  # flags after base: --preset resets
            kind = "fresh"
            step0 = 0
        else:
            cmd = [a.deberta, "pretrain", "--resume", rundir, "--data", a.data, "--threads", str(a.threads)]
            kind = "resume"
        env = dict(os.environ, OMP_NUM_THREADS=str(a.threads))
        t0, l0 = time.time(), loadavg()
        with open(os.path.join(rundir, "pretrain.log"), "a", encoding="utf-8") as log:
            log.write("== %s %s\n$ %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)), kind,
                                            " ".join(shlex.quote(c) for c in cmd)))
            log.flush()
            with self.lock:
                if self.stopping:
                    return 130
                p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True)
                self.children.add(p)
            rc = p.wait()
            with self.lock:
                self.children.discard(p)
        wall = time.time() - t0
        step1 = checkpoint_step(rundir) or 0
        cfg = read_config_text(os.path.join(rundir, "config.txt")) or {}
        tps = tokens_per_step(cfg) if cfg else 0
        rec = {"invocation": kind, "utc_start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)),
               "start_step": step0, "end_step": step1, "wall_s": round(wall, 3),
               "train_tokens": max(0, step1 - step0) * tps, "threads": a.threads, "parallel": a.parallel,
               "loadavg_start": l0, "loadavg_end": loadavg(), "exit": rc}
        with open(os.path.join(rundir, "ablate-timing.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")
        return rc

    def do_job(self, job):
        rundir = job["dir"]
        steps = run_steps(rundir)
        step = checkpoint_step(rundir)
        if step is not None and steps is not None and step == steps:
            note("%s: finished (step %d), skipped" % (job["name"], step))
            return
        rc = self.launch(job)
        bad = check_config(job)
        if bad:
            note("%s: %s" % (job["name"], bad))
            self.failed.append(job["name"])
            return
        step, steps = checkpoint_step(rundir), run_steps(rundir)
        if rc == 0 and step is not None and step == steps:
            note("%s: finished (step %d)" % (job["name"], step))
        elif not self.stopping:
            note("%s: pretrain exited %d at step %s of %s (log: %s/pretrain.log)" % (job["name"], rc, step, steps, rundir))
            self.failed.append(job["name"])

    def stop(self, signum, frame):
        with self.lock:
            self.stopping = True
            for p in list(self.children):
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass
        note("signal %d: stopping (unfinished runs resume from their last checkpoint when the grid is re-run)" % signum)


def check_config(job):
    """The run's resolved config must have the grid point's values (catches flag-order mistakes)."""
    cfg = read_config_text(os.path.join(job["dir"], "config.txt"))
    if cfg is None:
        return None
    want = dict((AXIS_KEYS[a], v) for a, v in job["spec"]["axes"].items())
    if "embedding_sharing" in want and want["embedding_sharing"] == "es":
        want["training_mode"] = "joint"
    for k, v in want.items():
        have = cfg.get(k, "")
        if k == "pos_att_type":
            ok = canon_terms(have) == v
        elif k == "use_emd":
            ok = have in (("1", "true") if v == "1" else ("0", "false"))
        elif k in ("rtd_lambda", "position_buckets"):
            ok = float(have) == float(v)
        else:
            ok = have == v
        if not ok:
            return "resolved config has %s = %s, the grid wants %s" % (k, have, v)
    if int(cfg.get("train_seed", -1)) != int(job["seed"]):
        return "resolved config has train_seed = %s, the grid wants %s" % (cfg.get("train_seed"), job["seed"])
    return None


def prepare_job(args, point, seed, grid_notes, variant=None):
    """The job of one grid point and seed (its run directory made, ablate.json written); variant names the
    run (default: from the point's axes; scripts/ablation_study.py gives its own names)."""
    variant = variant or variant_name(point)
    name = "%s-seed%s" % (variant, seed)
    rundir = os.path.join(args.out, name)
    flags, notes = variant_flags(point)
    for n in notes:
        if n not in grid_notes:
            grid_notes.append(n)
    spec = {"variant": variant, "seed": int(seed), "axes": point, "flags": flags,
            "base_flags": args.base, "data": os.path.abspath(args.data), "notes": notes}
    spec_path = os.path.join(rundir, "ablate.json")
    job = {"name": name, "dir": rundir, "seed": seed, "flags": flags, "spec": spec}
    if os.path.exists(spec_path):
        old = json.load(open(spec_path, encoding="utf-8"))
        same = all(old.get(k) == spec[k] for k in ("variant", "seed", "flags", "base_flags"))
        if not same:
            die("%s was made with other flags (%s); use another --out or remove it" %
                (rundir, " ".join(old.get("flags", []) + old.get("base_flags", []))))
    has_run = os.path.exists(os.path.join(rundir, "metrics.jsonl")) or os.path.exists(os.path.join(rundir, "config.txt"))
    if has_run and checkpoint_step(rundir) is None:
        # started but killed before its first checkpoint: nothing to resume; keep it aside, start over
        k = 1
        while os.path.exists("%s.incomplete-%d" % (rundir, k)):
            k += 1
        if not args.dry_run:
            os.rename(rundir, "%s.incomplete-%d" % (rundir, k))
        note("%s: no checkpoint to resume; moved to %s.incomplete-%d and starting over" % (name, rundir, k))
    if not args.dry_run:
        os.makedirs(rundir, exist_ok=True)
        with open(spec_path + ".tmp", "w", encoding="utf-8") as f:
            json.dump(spec, f, indent=1)
        os.replace(spec_path + ".tmp", spec_path)
    return job


def cmd_run(argv):
    if "--" in argv:
        i = argv.index("--")
        argv, base = argv[:i], argv[i + 1:]
    else:
        base = []
    ap = argparse.ArgumentParser(prog="ablate.sh run", description="run an ablation grid (see ablate.sh --help)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--data", required=True)
    for a in AXES:
        ap.add_argument("--" + a, default="")
    ap.add_argument("--seeds", default="1")
    ap.add_argument("--design", choices=["cross", "oat"], default="cross")
    ap.add_argument("--parallel", type=int, default=min(2, os.cpu_count() or 1),
                    help="runs at the same time [min(2, cores)]")
    ap.add_argument("--threads", type=int, default=0, help="threads per run [cores / parallel]")
    ap.add_argument("--deberta", default=os.path.join(ROOT, "build", "deberta"))
    ap.add_argument("--dry-run", action="store_true")
    args = ap.parse_args(argv)
    args.base = base
    axis_flags = {k.replace("_", "-"): a for a, k in AXIS_KEYS.items()}
    for b in base:
        f = flag_name(b)
        if f in RESERVED:
            die("--%s may not be among the pretrain flags (the driver sets --out/--seed/--threads/--data; "
                "--minutes would give runs different token budgets: use --steps)" % f, 2)
        if f in axis_flags and getattr(args, axis_flags[f]):
            die("--%s is both a grid axis (--%s) and a pretrain flag" % (f, axis_flags[f]), 2)
    if args.parallel < 1:
        die("--parallel must be >= 1", 2)
    if args.threads <= 0:
        args.threads = max(1, (os.cpu_count() or 1) // args.parallel)
    if not os.path.isdir(args.data):
        die("--data %s is not a directory" % args.data, 2)
    if not (os.access(args.deberta, os.X_OK) or args.dry_run):
        die("%s not found (make build/deberta, or give --deberta)" % args.deberta, 2)
    args.deberta = os.path.abspath(args.deberta)
    axes = {a: [canon_value(a, v) for v in split_list(getattr(args, a))] for a in AXES}
    seeds = split_list(args.seeds)
    for s in seeds:
        if not s.isdigit():
            die("--seeds: '%s' is not a non-negative integer" % s, 2)
    points = make_grid(axes, args.design)
    grid_notes = []
    if not args.dry_run:
        os.makedirs(args.out, exist_ok=True)
    # seed-major order: every variant of seed 1 first, so a stopped study has whole seeds
    jobs = [prepare_job(args, p, s, grid_notes) for s in seeds for p in points]
    for n in grid_notes:
        note(n)
    variants = [variant_name(p) for p in points]
    note("%d variants x %d seeds = %d runs, %d at a time with %d threads each -> %s" %
         (len(points), len(seeds), len(jobs), args.parallel, args.threads, args.out))
    if args.dry_run:
        for j in jobs:
            print("%s: %s" % (j["name"], " ".join(shlex.quote(x) for x in base + j["flags"])))
        return 0
    grid = {"variants": variants, "seeds": [int(s) for s in seeds], "design": args.design,
            "axes": {a: v for a, v in axes.items() if v}, "base_flags": base, "data": os.path.abspath(args.data),
            "parallel": args.parallel, "threads": args.threads, "deberta": args.deberta, "notes": grid_notes}
    gp = os.path.join(args.out, "ablate-grid.json")
    if os.path.exists(gp):  # keep the variant order of earlier grids in the same OUTDIR
        old = json.load(open(gp, encoding="utf-8"))
        grid["variants"] = old.get("variants", []) + [v for v in variants if v not in old.get("variants", [])]
    with open(gp + ".tmp", "w", encoding="utf-8") as f:
        json.dump(grid, f, indent=1)
    os.replace(gp + ".tmp", gp)

    r = Runner(args)
    signal.signal(signal.SIGTERM, r.stop)
    signal.signal(signal.SIGINT, r.stop)
    queue = list(jobs)
    qlock = threading.Lock()

    def worker():
        while True:
            with qlock:
                if not queue or r.stopping:
                    return
                job = queue.pop(0)
            r.do_job(job)

    threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(args.parallel, len(jobs)))]
    t0 = time.time()
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)
    note("grid done in %.0f s" % (time.time() - t0))
    if r.stopping:
        return 130
    budgets = set()
    for j in jobs:
        cfg = read_config_text(os.path.join(j["dir"], "config.txt"))
        if cfg:
            budgets.add((int(cfg["train_steps"]), tokens_per_step(cfg)))
    if len(budgets) > 1:
        note("warning: the runs have different token budgets: %s" % sorted(budgets))
    if r.failed:
        note("failed: %s" % " ".join(r.failed))
        return 1
    return 0


# ---------------------------------------------------------------- cosine

def mean_pairwise_cos(E, ids):
    import numpy as np
    X = np.asarray(E, dtype=np.float64)[ids]
    nrm = np.linalg.norm(X, axis=1)
    X = X[nrm > 0] / nrm[nrm > 0, None]
    n = X.shape[0]
    if n < 2:
        return float("nan")
    s = X.sum(axis=0)
    return float((s @ s - n) / (n * (n - 1)))


def token_counts(data_dir):
    import h5py
    import numpy as np
    counts = None
    for p in sorted(glob.glob(os.path.join(data_dir, "train-*.h5"))):
        with h5py.File(p, "r") as f:
            c = np.bincount(np.asarray(f["tokens"][...], dtype=np.int64), minlength=int(f.attrs["vocab_size"]))
        counts = c if counts is None else counts + c
    if counts is None:
        die("no train-*.h5 shards in %s" % data_dir)
    return counts


def embedding_tables(ckpt):
    """(sharing mode, generator table, discriminator table) of a checkpoint."""
    import h5py
    import numpy as np
    with h5py.File(ckpt, "r") as f:
        P = f["params"]
        cfg_raw = f["config"][()]
        cfg_text = cfg_raw.decode("utf-8", "replace") if isinstance(cfg_raw, bytes) else str(cfg_raw)
        cfg = {}
        for line in cfg_text.split("\n"):
            if "=" in line:
                k, v = line.split("=", 1)
                cfg[k.strip()] = v.strip().rstrip("\x00")
        sharing = cfg.get("embedding_sharing", "gdes")
        g_name = "generator.deberta.embeddings.word_embeddings.weight"
        if g_name not in P:
            die("%s: no %s" % (ckpt, g_name))
        G = np.asarray(P[g_name][...], dtype=np.float64)
        if sharing == "gdes":
            D = G + np.asarray(P["discriminator.deberta.embeddings.word_embeddings._weight"][...], dtype=np.float64)
        elif sharing == "es":
            D = G
        else:
            D = np.asarray(P["discriminator.deberta.embeddings.word_embeddings.weight"][...], dtype=np.float64)
    return sharing, G, D


def cosine_of(ckpt, counts=None, min_count=10):
    import numpy as np
    sharing, G, D = embedding_tables(ckpt)
    V = G.shape[0]
    ids = np.arange(N_SPECIAL, V)
    out = {"sharing": sharing, "n_tokens": int(len(ids)), "cos_G": mean_pairwise_cos(G, ids),
           "cos_D": mean_pairwise_cos(D, ids)}
    if counts is not None:
        seen = ids[counts[N_SPECIAL:V] >= min_count] if len(counts) >= V else ids
        out.update({"n_frequent": int(len(seen)), "cos_G_frequent": mean_pairwise_cos(G, seen),
                    "cos_D_frequent": mean_pairwise_cos(D, seen)})
    return out


def cmd_cosine(argv):
    ap = argparse.ArgumentParser(prog="ablate.sh cosine", description="mean pairwise cosine of G and D token embeddings")
    ap.add_argument("checkpoints", nargs="+")
    ap.add_argument("--data", help="shards: also report over tokens seen >= --min-count times in train")
    ap.add_argument("--min-count", type=int, default=10)
    args = ap.parse_args(argv)
    counts = token_counts(args.data) if args.data else None
    for c in args.checkpoints:
        if not os.path.exists(c):
            die("%s not found" % c)
        r = cosine_of(c, counts, args.min_count)
        line = "%s: %s  G %.4f  D %.4f  (%d non-special tokens)" % (c, r["sharing"], r["cos_G"], r["cos_D"], r["n_tokens"])
        if counts is not None:
            line += "; tokens seen >= %d times (%d): G %.4f  D %.4f" % (args.min_count, r["n_frequent"],
                                                                          r["cos_G_frequent"], r["cos_D_frequent"])
        print(line)
    return 0


# ---------------------------------------------------------------- downstream (fine-tuning)

def ft_module():
    import finetune_table
    return finetune_table


def run_specs(outdir, only):
    """(rundir, its ablate.json) of every run in OUTDIR, by directory name; only the variants in
    `only` when it is not empty."""
    for spec_path in sorted(glob.glob(os.path.join(outdir, "*", "ablate.json"))):
        spec = json.load(open(spec_path, encoding="utf-8"))
        if not only or spec["variant"] in only:
            yield os.path.dirname(spec_path), spec


def finished_runs(outdir, only):
    """(variant, seed, rundir) of the finished runs in OUTDIR, in the grid's variant order, seed-major."""
    out = []
    for rundir, spec in run_specs(outdir, only):
        step, steps = checkpoint_step(rundir), run_steps(rundir)
        if step is None or steps is None or step != steps:
            note("%s: not finished (step %s of %s): not fine-tuned" % (os.path.basename(rundir), step, steps))
            continue
        out.append((spec["variant"], int(spec["seed"]), rundir))
    gp = os.path.join(outdir, "ablate-grid.json")
    order = json.load(open(gp, encoding="utf-8")).get("variants", []) if os.path.exists(gp) else []
    rank = {v: i for i, v in enumerate(order)}
    return sorted(out, key=lambda x: (x[1], rank.get(x[0], len(rank)), x[0]))


def cmd_finetune(argv):
    ap = argparse.ArgumentParser(prog="ablate.sh finetune",
                                 description="fine-tune every finished run of OUTDIR on a Brown task (see ablate.sh --help)")
    ap.add_argument("outdir")
    ap.add_argument("--task", default="pos", help="pos, genre or both (comma-separated) [pos]")
    ap.add_argument("--seeds", default="1", help="fine-tuning seeds per pretraining run [1]")
    ap.add_argument("--scratch-seeds", default="", help="seeds of the scratch model [the grid's seeds]")
    ap.add_argument("--only", default="", help="comma-separated variants")
    ap.add_argument("--parallel", type=int, default=min(2, os.cpu_count() or 1), help="runs at a time [min(2, cores)]")
    ap.add_argument("--threads", type=int, default=0, help="threads per run [cores / parallel]")
    ap.add_argument("--deberta", default=os.path.join(ROOT, "build", "deberta"))
    args = ap.parse_args(argv)
    if not os.path.isdir(args.outdir):
        die("%s is not a directory" % args.outdir)
    if args.parallel < 1:
        die("--parallel must be >= 1", 2)
    grid = {}
    gp = os.path.join(args.outdir, "ablate-grid.json")
    if os.path.exists(gp):
        grid = json.load(open(gp, encoding="utf-8"))
    ft = ft_module()
    if grid.get("data") and not os.environ.get("SHARDS"):
        os.environ["SHARDS"] = grid["data"]
    os.environ["FT_TASKS"] = args.task
    os.environ["FT_SEEDS"] = args.seeds
    os.environ["FT_PARALLEL"] = str(args.parallel)
    os.environ["FT_TABLE_DIR"] = os.path.join(args.outdir, "finetune")
    os.environ["DEBERTA"] = args.deberta
    if args.threads > 0:
        os.environ["THREADS"] = str(args.threads)
    elif not os.environ.get("THREADS"):
        os.environ["THREADS"] = str(max(1, (os.cpu_count() or 1) // args.parallel))
    o = ft.options_from_env()
    scratch_seeds = split_list(args.scratch_seeds) or [str(x) for x in grid.get("seeds", [])] or [str(x) for x in o.seeds]
    for x in scratch_seeds:
        if not x.isdigit():
            die("--scratch-seeds: '%s' is not a non-negative integer" % x, 2)
    runs = finished_runs(args.outdir, split_list(args.only))
    if not runs:
        die("no finished runs in %s" % args.outdir)
    os.makedirs(o.table_dir, exist_ok=True)
    jobs = []
    for t in o.tasks:
        tdir = ft.ensure_task_files(o, t)
        jobs += [ft.make_job(o, "scratch", "scratch", t, int(x), tdir) for x in scratch_seeds]
        jobs += [ft.make_job(o, "%s-seed%d" % (v, k), os.path.join(d, "checkpoint.h5"), t, x, tdir)
                 for v, k, d in runs for x in o.seeds]
    rc = ft.run_jobs(o, jobs)
    if rc == 0:
        note("fine-tuning done; `ablate.sh summary %s` adds the downstream columns" % args.outdir)
    return rc


def attach_downstream(outdir, runs):
    """Per pretraining run r: r["ft_<task>_acc"] / r["ft_<task>_dev"] = the mean over its finished
    fine-tuning seeds (OUTDIR/finetune/<variant>-seed<k>/<task>-seed*/).  Returns (metric entries for the
    summary, lines about scratch and the budget)."""
    root = os.path.join(outdir, "finetune")
    if not os.path.isdir(root):
        return [], []
    ft = ft_module()

    def results(label, task):
        out = []
        for d in sorted(glob.glob(os.path.join(root, label, "%s-seed*" % task))):
            if not re.match(r"^%s-seed\d+$" % task, os.path.basename(d)):
                continue  # .stale-N
            r = ft.read_result(d)
            if r:
                r["config"] = read_config_text(os.path.join(d, "config.txt")) or {}
                out.append(r)
        return out

    metrics, lines = [], []
    for task in ft.TASKS:
        scratch = results("scratch", task)
        found = False
        for r in runs:
            rs = results("%s-seed%d" % (r["variant"], r["seed"]), task)
            if rs:
                found = True
                r["ft_%s_acc" % task] = sum(x["acc"] for x in rs) / len(rs)
                r["ft_%s_dev" % task] = sum(x["dev_acc"] for x in rs) / len(rs)
                r.setdefault("ft_results", []).extend(rs)
        if not found and not scratch:
            continue
        metrics += [("ft_%s_acc" % task, "%s test acc (fine-tuned)" % task, None, "%.4f"),
                    ("ft_%s_dev" % task, "%s best dev acc" % task, None, "%.4f")]
        allr = scratch + [x for r in runs for x in r.get("ft_results", []) if x["config"].get("ft_task") == task]
        budgets = sorted({tuple(x["config"].get(k, "?") for k in ("ft_steps", "ft_batch", "ft_lr", "ft_eval_every"))
                          for x in allr})
        T = sorted({os.path.basename(x["config"].get("ft_data", "?")) for x in allr})
        m, sd, n = mean_sd([x["acc"] for x in scratch])
        b = ", ".join("%s steps × %s examples, lr %g, dev every %s" % (st, bt, float(lr), ev) for st, bt, lr, ev in budgets)
        lines.append("Downstream, %s (task files %s; fine-tuning %s%s): the column is the test accuracy of the best-dev "
                     "model, per pretraining run the mean over its fine-tuning seeds. Scratch (the same budget from "
                     "random initialisation, the floor): %s (n=%d)%s." % (
                         task, ", ".join(T), b, " — **the runs do not have the same fine-tuning budget**" if len(budgets) > 1 else "",
                         fmt_ms(m, sd, "%.4f"), n,
                         "; baselines: majority class %.4f" % scratch[0]["baseline_majority_acc"] if scratch else ""))
        if task == "pos" and scratch and scratch[0].get("baseline_word_tag_acc") is not None:
            lines[-1] = lines[-1][:-1] + ", most frequent tag per word %.4f." % scratch[0]["baseline_word_tag_acc"]
    return metrics, lines


# ---------------------------------------------------------------- summary

METRICS = [("mlm_loss", "val MLM loss", "g_loss", "%.4f"), ("mlm_acc", "val MLM acc", "mlm_acc", "%.4f"),
           ("rtd_loss", "val RTD loss", "d_loss", "%.4f"), ("rtd_acc", "val RTD acc", "rtd_acc", "%.4f"),
           ("rtd_auc", "val RTD AUC", "rtd_auc", "%.4f"), ("tokens_per_s", "tokens/s", None, "%.0f")]


def param_counts(ckpt):
    import h5py
    tot = disc = 0
    with h5py.File(ckpt, "r") as f:
        for k, d in f["params"].items():
            n = int(d.size)
            tot += n
            if k.startswith("discriminator."):
                disc += n
    return tot, disc


def mean_sd(xs):
    xs = [x for x in xs if x is not None and isinstance(x, (int, float)) and math.isfinite(x)]
    if not xs:
        return None, None, 0
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return m, sd, len(xs)


def fmt_ms(m, sd, f):
    if m is None:
        return "–"
    return (f % m) + (" ± " + (f % sd) if sd is not None else "")


def collect(outdir, only, counts, min_count):
    grid = {}
    gp = os.path.join(outdir, "ablate-grid.json")
    if os.path.exists(gp):
        grid = json.load(open(gp, encoding="utf-8"))
    runs = []
    for rundir, spec in run_specs(outdir, only):
        r = {"dir": rundir, "variant": spec["variant"], "seed": spec["seed"], "spec": spec}
        cfg = read_config_text(os.path.join(rundir, "config.txt"))
        r["steps"] = int(cfg["train_steps"]) if cfg else None
        r["tokens_per_step"] = tokens_per_step(cfg) if cfg else None
        r["step"] = checkpoint_step(rundir)
        r["finished"] = r["step"] is not None and r["step"] == r["steps"]
        ev = [o for o in read_metrics(rundir) if o.get("kind") == "eval"]
        r["evals"] = ev
        final = [o for o in ev if o.get("step") == r["steps"]]
        if r["finished"] and final:
            f = final[-1]
            for key, _, mkey, _ in METRICS:
                if mkey:
                    r[key] = f.get(mkey)
        timing = []
        tp = os.path.join(rundir, "ablate-timing.jsonl")
        if os.path.exists(tp):
            timing = [json.loads(l) for l in open(tp, encoding="utf-8") if l.strip()]
        wall = sum(t["wall_s"] for t in timing)
        toks = sum(t["train_tokens"] for t in timing)
        r["wall_s"] = wall
        r["tokens_per_s"] = toks / wall if wall > 0 and toks > 0 else None
        ck = os.path.join(rundir, "checkpoint.h5")
        if r["step"] is not None and r["step"] >= 0:
            r["params"], r["d_params"] = param_counts(ck)
            if r["finished"]:
                r.update(cosine_of(ck, counts, min_count))
        runs.append(r)
    order = [v for v in grid.get("variants", []) if any(r["variant"] == v for r in runs)]
    order += sorted({r["variant"] for r in runs} - set(order))
    if only:
        order = [v for v in only if v in order]
    return grid, runs, order


def write_plots(outdir, name, order, runs):
    import shutil
    if not shutil.which("gnuplot"):
        note("gnuplot not found: no plots (apt-get install gnuplot-nox)")
        return []
    import tempfile
    tmp = tempfile.mkdtemp(prefix="ablate-plot.")
    panels = [("g_loss", "validation MLM loss (generator)"), ("mlm_acc", "validation MLM accuracy"),
              ("d_loss", "validation RTD loss (discriminator)"), ("rtd_auc", "validation RTD AUC")]
    colors = ["#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22",
              "#17becf"]
    written = []

    def write_dat(path, pts):
        with open(path, "w") as f:
            for s, v in pts:
                f.write("%r %r\n" % (float(s), float(v)))

    def num(v):
        return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)

    def plot(out_png, title, series):  # series: [(label, color, dash, {metric: [(step, value)]})]
        g = ["set terminal pngcairo size 960,640 font 'sans,9'", "set output '%s'" % out_png.replace("'", "''"),
             "set multiplot layout 2,2 title '%s' noenhanced" % title.replace("'", "''"),
             "set grid", "set key top right font ',8' noenhanced", "set xlabel 'step'"]
        for mi, (metric, ptitle) in enumerate(panels):
            parts = []
            for si, (label, color, dash, data) in enumerate(series):
                pts = data.get(metric) or []
                if not pts:
                    continue
                dat = os.path.join(tmp, "s%d_%d.dat" % (si, mi))
                write_dat(dat, pts)
                parts.append("'%s' using 1:2 with linespoints pt 7 ps 0.5 lw 1.5 lc rgb '%s' dt %d title '%s'" %
                             (dat, color, dash, label.replace("'", "''")))
            g.append("set title '%s'" % ptitle)
            g.append(("plot " + ", ".join(parts)) if parts else "plot [0:1] NaN notitle")
        g.append("unset multiplot")
        gp = os.path.join(tmp, "plot.gp")
        open(gp, "w").write("\n".join(g) + "\n")
        rc = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
        if rc.returncode != 0 or not os.path.exists(out_png):
            note("gnuplot failed for %s: %s" % (out_png, rc.stderr[:400]))
            return
        written.append(out_png)

    # all variants: mean over the seeds at the eval steps every seed of the variant has
    series = []
    for vi, v in enumerate(order):
        vr = [r for r in runs if r["variant"] == v and r["evals"]]
        if not vr:
            continue
        data = {}
        for metric, _ in panels:
            per = []
            for r in vr:
                per.append({o["step"]: o[metric] for o in r["evals"] if num(o.get(metric))})
            steps = sorted(set.intersection(*[set(p) for p in per])) if per else []
            data[metric] = [(s, sum(p[s] for p in per) / len(per)) for s in steps]
        series.append(("%s (n=%d)" % (v, len(vr)), colors[vi % len(colors)], 1 + vi // len(colors), data))
    prefix = name + "-" if name else ""
    plot(os.path.join(outdir, prefix + "curves.png"), "validation curves, mean over seeds", series)
    # one figure per variant: a line per seed
    for v in order:
        vr = sorted([r for r in runs if r["variant"] == v and r["evals"]], key=lambda r: r["seed"])
        series = []
        for si, r in enumerate(vr):
            data = {m: [(o["step"], o[m]) for o in r["evals"] if num(o.get(m))] for m, _ in panels}
            series.append(("seed %d" % r["seed"], colors[si % len(colors)], 1, data))
        if series:
            plot(os.path.join(outdir, "curves-%s.png" % v), "%s: validation curves per seed" % v, series)
    shutil.rmtree(tmp, ignore_errors=True)
    return written


def cmd_summary(argv):
    ap = argparse.ArgumentParser(prog="ablate.sh summary", description="tables and plots of an ablation OUTDIR")
    ap.add_argument("outdir")
    ap.add_argument("--only", default="", help="comma-separated variants (in this order)")
    ap.add_argument("--name", default="", help="prefix of the output files (NAME-summary.md, …)")
    ap.add_argument("--data", help="shards: also report the cosine over tokens seen >= --min-count times")
    ap.add_argument("--min-count", type=int, default=10)
    ap.add_argument("--baseline", default="", help="variant: add paired per-seed differences against it")
    ap.add_argument("--no-plots", action="store_true")
    args = ap.parse_args(argv)
    if not os.path.isdir(args.outdir):
        die("%s is not a directory" % args.outdir)
    only = split_list(args.only)
    counts = token_counts(args.data) if args.data else None
    grid, runs, order = collect(args.outdir, only, counts, args.min_count)
    if not runs:
        die("no runs (*/ablate.json) in %s" % args.outdir)
    ds_metrics, ds_lines = attach_downstream(args.outdir, runs)
    metrics = METRICS + ds_metrics
    prefix = args.name + "-" if args.name else ""
    cos_keys = ["cos_G", "cos_D"] + (["cos_G_frequent", "cos_D_frequent"] if counts is not None else [])

    rows = []
    for v in order:
        vr = [r for r in runs if r["variant"] == v]
        done = [r for r in vr if r["finished"]]
        row = {"variant": v, "runs": len(vr), "finished": len(done),
               "seeds": " ".join(str(r["seed"]) for r in sorted(done, key=lambda r: r["seed"])),
               "steps": sorted({r["steps"] for r in vr if r["steps"]}),
               "tokens_per_run": sorted({r["steps"] * r["tokens_per_step"] for r in vr if r["steps"]})}
        for key, _, _, _ in metrics:
            src = done if key != "tokens_per_s" else [r for r in done if r.get("tokens_per_s")]
            row[key] = mean_sd([r.get(key) for r in src])
        for key in cos_keys:
            row[key] = mean_sd([r.get(key) for r in done])
        pc = sorted({r["params"] for r in vr if r.get("params")})
        dc = sorted({r["d_params"] for r in vr if r.get("d_params")})
        row["params"] = pc[0] if len(pc) == 1 else (pc or None)
        row["d_params"] = dc[0] if len(dc) == 1 else (dc or None)
        row["wall_s"] = mean_sd([r["wall_s"] for r in done if r["wall_s"]])
        row["unfinished"] = ["%s-seed%d (step %s of %s)" % (r["variant"], r["seed"], r["step"], r["steps"])
                             for r in vr if not r["finished"]]
        rows.append(row)

    # CSV
    csv_path = os.path.join(args.outdir, prefix + "summary.csv")
    with open(csv_path, "w", newline="") as f:
        w = csv.writer(f)
        head = ["variant", "n_finished", "seeds", "steps", "tokens_per_run"]
        for key, _, _, _ in metrics:
            head += [key + "_mean", key + "_sd"]
        head += ["params", "d_params"]
        for key in cos_keys:
            head += [key + "_mean", key + "_sd"]
        w.writerow(head)
        for row in rows:
            line = [row["variant"], row["finished"], row["seeds"], " ".join(map(str, row["steps"])),
                    " ".join(map(str, row["tokens_per_run"]))]
            for key in [m[0] for m in metrics] + ["params", "d_params"] + cos_keys:
                if key in ("params", "d_params"):
                    line.append(row[key] if row[key] is not None else "")
                    continue
                m, sd, _ = row[key]
                line += ["" if m is None else "%.6g" % m, "" if sd is None else "%.6g" % sd]
            w.writerow(line)
    # per-run CSV (every seed)
    with open(os.path.join(args.outdir, prefix + "runs.csv"), "w", newline="") as f:
        w = csv.writer(f)
        keys = [m[0] for m in metrics] + cos_keys
        w.writerow(["run", "variant", "seed", "step", "steps", "finished", "wall_s", "params"] + keys)
        for r in sorted(runs, key=lambda r: (order.index(r["variant"]), r["seed"])):
            w.writerow([os.path.basename(r["dir"]), r["variant"], r["seed"], r["step"], r["steps"], int(r["finished"]),
                        "%.1f" % r["wall_s"], r.get("params", "")] +
                       ["" if r.get(k) is None else "%.6g" % r[k] for k in keys])

    # Markdown
    md = []
    budgets = sorted({t for row in rows for t in row["tokens_per_run"]})
    stepsets = sorted({s for row in rows for s in row["steps"]})
    md.append("Runs in `%s`; steps per run %s, tokens per run %s (steps × batch × accum × max_seq_len)%s." %
              (args.outdir, ", ".join(map(str, stepsets)) or "?", ", ".join("{:,}".format(b) for b in budgets) or "?",
               "" if len(budgets) <= 1 else " — **the runs do not have the same token budget**"))
    md.append("Mean ± sd (sample sd, n−1) over the finished seeds of the final validation metrics; "
              "tokens/s = trained tokens / wall time of each run (evaluations and checkpoints included; "
              "%s runs in parallel with %s thread(s) each)." % (grid.get("parallel", "?"), grid.get("threads", "?")))
    md.append("")
    md.append("| variant | n | " + " | ".join(m[1] for m in metrics) + " | params (G+D) | D params |")
    md.append("|---|---|" + "---|" * (len(metrics) + 2))
    for row in rows:
        cells = [row["variant"], str(row["finished"])]
        for key, _, _, f in metrics:
            m, sd, n = row[key]
            # a downstream value missing for some finished runs: say over how many runs it is
            cells.append(fmt_ms(m, sd, f) + (" (n=%d)" % n if key.startswith("ft_") and m is not None and n != row["finished"] else ""))
        cells.append("{:,}".format(row["params"]) if isinstance(row["params"], int) else "–")
        cells.append("{:,}".format(row["d_params"]) if isinstance(row["d_params"], int) else "–")
        md.append("| " + " | ".join(cells) + " |")
    if ds_lines:
        md.append("")
        md += ds_lines
    md.append("")
    md.append("Embedding cosine (mean pairwise cosine similarity of the token embeddings, all %s): " %
              ("non-special tokens, and tokens seen ≥ %d times in the train shards" % args.min_count
               if counts is not None else "non-special tokens"))
    md.append("")
    ch = ["G (all)", "D (all)"] + (["G (frequent)", "D (frequent)"] if counts is not None else [])
    md.append("| variant | n | " + " | ".join(ch) + " |")
    md.append("|---|---|" + "---|" * len(ch))
    for row in rows:
        md.append("| %s | %d | %s |" % (row["variant"], row["finished"],
                                       " | ".join(fmt_ms(*row[k][:2], "%.4f") for k in cos_keys)))
    if args.baseline:
        if args.baseline not in order:
            die("--baseline %s is not among the variants (%s)" % (args.baseline, ", ".join(order)))
        base = {r["seed"]: r for r in runs if r["variant"] == args.baseline and r["finished"]}
        keys = [m for m in metrics if m[0] != "tokens_per_s"]
        md.append("")
        md.append("Paired differences against `%s` (variant − baseline per seed, same seed = same sequences and "
                  "masks; mean ± sd over the seeds both finished; t = mean / (sd/√n)):" % args.baseline)
        md.append("")
        md.append("| variant | n | " + " | ".join("Δ " + m[1] + " (t)" for m in keys) + " |")
        md.append("|---|---|" + "---|" * len(keys))
        diff_rows = []
        for v in order:
            if v == args.baseline:
                continue
            pairs = [(r, base[r["seed"]]) for r in runs if r["variant"] == v and r["finished"] and r["seed"] in base]
            cells = [v, str(len(pairs))]
            drow = {"variant": v, "n": len(pairs)}
            for key, _, _, f in keys:
                ds = [a.get(key) - b.get(key) for a, b in pairs if a.get(key) is not None and b.get(key) is not None]
                m, sd, n = mean_sd(ds)
                t = m / (sd / math.sqrt(n)) if m is not None and sd else None
                drow[key] = (m, sd, t)
                cells.append(fmt_ms(m, sd, "%+.4f").replace("± +", "± ") + ("" if t is None else " (%.1f)" % t))
            md.append("| " + " | ".join(cells) + " |")
            diff_rows.append(drow)
        with open(os.path.join(args.outdir, prefix + "paired.csv"), "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["variant", "baseline", "n"] + [k + s for k, _, _, _ in keys for s in ("_diff_mean", "_diff_sd", "_t")])
            for d in diff_rows:
                w.writerow([d["variant"], args.baseline, d["n"]] +
                           ["" if x is None else "%.6g" % x for k, _, _, _ in keys for x in d[k]])
    unfinished = [u for row in rows for u in row["unfinished"]]
    if unfinished:
        md.append("")
        md.append("Not finished (left out of the means): " + ", ".join(unfinished) + ".")
    if grid.get("notes"):
        md.append("")
        for n in grid["notes"]:
            md.append("Note: " + n + ".")
    md_path = os.path.join(args.outdir, prefix + "summary.md")
    open(md_path, "w", encoding="utf-8").write("\n".join(md) + "\n")
    print("\n".join(md))
    written = [md_path, csv_path]
    if not args.no_plots:
        written += write_plots(args.outdir, args.name, order, runs)
    note("wrote " + ", ".join(written))
    return 0


def main():
    argv = sys.argv[1:]
    if not argv or argv[0] in ("-h", "--help", "help"):
        print(__doc__.strip())
        return 0
    cmd, rest = argv[0], argv[1:]
    if cmd == "run":
        return cmd_run(rest)
    if cmd == "summary":
        return cmd_summary(rest)
    if cmd == "cosine":
        return cmd_cosine(rest)
    if cmd == "finetune":
        return cmd_finetune(rest)
    die("unknown command '%s' (run, summary, cosine, finetune; --help)" % cmd, 2)


if __name__ == "__main__":
    sys.exit(main())
