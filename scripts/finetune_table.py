#!/usr/bin/python3
"""finetune_table.py — pretrained vs scratch on the shipped tasks, several seeds, as Markdown tables.
Run by scripts/finetune-table.sh (/usr/bin/python3, standard library only); scripts/ablate.py imports
it for `ablate.sh finetune`.

  finetune-table.sh [--table-only] [LABEL=CHECKPOINT ...]

For each task (FT_TASKS) and seed (FT_SEEDS) it fine-tunes every LABEL's pretraining checkpoint and
the same model from scratch (--init scratch --preset FT_PRESET) with one fixed budget, then prints a
table per task: the baselines (majority class; naive Bayes for sequence tasks; pos: most frequent tag
per word), scratch and each checkpoint, with test accuracy (sequence tasks: and macro-F1) of the
best-dev model and the best dev accuracy, mean ± sample sd (n-1) over the seeds that finished, and n.
The tables also go to FT_TABLE_DIR/table.md.  pos and genre are made from the tagged Brown texts when
missing; any other task is read from FT_TASK_DATA/<task>-T<seq len>/ as prepared beforehand (make
demo-task for the SpamAssassin task, scripts/fetch-tasks.sh then deberta prep-task for the others), and
fine-tuned under the task name its files hold.

Runs go to FT_TABLE_DIR/<label>/<task>-seed<s>/ (their output to <task>-seed<s>.log beside them).
Re-running the same command skips finished runs (results.txt), resumes interrupted ones
(deberta finetune --resume), starts over a run that died before its first checkpoint, moves aside
(<dir>.stale-N) a run whose checkpoint or task files are newer than the run, and refuses a run
directory made with another budget.  SIGINT/SIGTERM stop the running fine-tunes at a checkpoint
(deberta finetune's graceful stop); the next invocation resumes them.

Environment (defaults in brackets; the budget is the same for every row):
  FT_TASKS [pos genre] (more: any prepared task folder's name)   FT_SEEDS [1 2 3]      FT_STEPS [1000]    FT_BATCH [16]   FT_LR [3e-4]
  FT_LAYER_DECAY [1] (finetune --layer-decay, every row; 1: one rate)
  FT_SEQ_LEN [128] (tokens per example, prep-task --seq-len)    FT_EVAL_EVERY [200] (dev evaluation
  and checkpoint)    FT_PRESET [tiny] (the scratch model)    FT_TABLE_DIR [runs/finetune-table]
  FT_SCRATCH [1] (0: no scratch row, only the checkpoints)
  FT_PARALLEL [1] (runs at a time)    THREADS [cores / FT_PARALLEL] (threads per run)
  SHARDS [data/shards] (the pretraining shards: their tokenizer)  BROWN [data/corpus/brown-tagged]
  FT_TASK_DATA [data/tasks] (task files: FT_TASK_DATA/<task>-T<seq len>/, made by deberta prep-task
  when missing; when older than SHARDS/tokenizer.bin made again and kept if identical)   DEBERTA [build/deberta of this repository]
"""
import filecmp
import json
import math
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TASKS = ("pos", "genre")
LABEL_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]*$")


def die(msg):
    sys.stderr.write("error: finetune-table: %s\n" % msg)
    sys.exit(1)


def note(msg):
    sys.stderr.write("finetune-table: %s\n" % msg)
    sys.stderr.flush()


# ---------------------------------------------------------------- options

class Options:
    pass


def _int_env(name, default, lo=1):
    v = os.environ.get(name, "").strip() or str(default)
    try:
        x = int(v)
    except ValueError:
        die("%s='%s' is not an integer" % (name, v))
    if x < lo:
        die("%s=%d must be >= %d" % (name, x, lo))
    return x


def _num_env(name, default, hi):
    """The variable's text (default when unset), which must be a number in (0, hi]."""
    v = os.environ.get(name, "").strip() or default
    try:
        if not 0 < float(v) <= hi:
            raise ValueError
    except ValueError:
        die("%s='%s' must be a number in (0, %g]" % (name, v, hi))
    return v


def options_from_env():
    """The fine-tuning budget and paths, from the environment (see the module docstring)."""
    o = Options()
    o.tasks = (os.environ.get("FT_TASKS", "") or "pos genre").replace(",", " ").split()
    for t in o.tasks:
        if not LABEL_RE.match(t):
            die("FT_TASKS: '%s' is not a task name (letters, digits and . _ + -)" % t)
    seeds = (os.environ.get("FT_SEEDS", "") or "1 2 3").replace(",", " ").split()
    for s in seeds:
        if not s.isdigit():
            die("FT_SEEDS: '%s' is not a non-negative integer" % s)
    o.seeds = [int(s) for s in seeds]
    o.steps = _int_env("FT_STEPS", 1000)
    o.batch = _int_env("FT_BATCH", 16)
    o.lr = _num_env("FT_LR", "3e-4", 10)
    o.layer_decay = _num_env("FT_LAYER_DECAY", "1", 1)
    o.seq_len = _int_env("FT_SEQ_LEN", 128, 3)
    o.eval_every = _int_env("FT_EVAL_EVERY", 200)
    o.preset = os.environ.get("FT_PRESET", "").strip() or "tiny"
    o.scratch = _int_env("FT_SCRATCH", 1, 0) != 0
    o.table_dir = os.environ.get("FT_TABLE_DIR", "").strip() or "runs/finetune-table"
    o.parallel = _int_env("FT_PARALLEL", 1)
    o.threads = _int_env("THREADS", max(1, (os.cpu_count() or 1) // o.parallel))
    o.shards = os.environ.get("SHARDS", "").strip() or "data/shards"
    o.brown = os.environ.get("BROWN", "").strip() or "data/corpus/brown-tagged"
    o.task_data = os.environ.get("FT_TASK_DATA", "").strip() or "data/tasks"
    o.deberta = os.environ.get("DEBERTA", "").strip() or os.path.join(ROOT, "build", "deberta")
    return o


def budget_text(o):
    decay = "" if float(o.layer_decay) == 1 else ", layer-wise rate decay %s" % o.layer_decay
    return ("%d steps × %d examples of %d tokens, lr %s (AdamW, 10 %% warm-up, linear decay%s), dev every %d steps"
            % (o.steps, o.batch, o.seq_len, o.lr, decay, o.eval_every))


def task_dir(o, task):
    return os.path.join(o.task_data, "%s-T%d" % (task, o.seq_len))


def newer(a, b):
    """a was modified after b (both exist)."""
    return os.path.getmtime(a) > os.path.getmtime(b)


def task_name_in_files(d):
    """The task name train.h5 holds (its /task attribute, read with h5dump), or None."""
    try:
        p = subprocess.run(["h5dump", "-a", "/task", os.path.join(d, "train.h5")], capture_output=True, text=True,
                           timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r'\(0\):\s*"([^"]*)"', p.stdout)
    return m.group(1) if m else None


def ensure_task_files(o, task):
    """FT_TASK_DATA/<task>-T<seq>: made by deberta prep-task when missing or older than the shards' tokenizer.
    prep-task's output is byte-for-byte deterministic, so files older than the tokenizer are made again beside
    them and replaced only where they differ: a tokenizer copied or touched (newer, the same bytes) leaves the
    task files, and the runs made from them, as they are."""
    d = task_dir(o, task)
    test = os.path.join(d, "test.h5")
    tok = os.path.join(o.shards, "tokenizer.bin")
    if task not in TASKS:  # prepared beforehand: not made here
        if not all(os.path.exists(os.path.join(d, n)) for n in ("train.h5", "dev.h5", "test.h5")):
            die("FT_TASKS: %s has no train/dev/test.h5 (task '%s' is made from Brown only for pos and genre; "
                "prepare it with deberta prep-task)" % (d, task))
        return d
    if os.path.exists(test) and not (os.path.exists(tok) and newer(tok, test)):
        return d
    if not os.path.exists(tok):
        die("SHARDS=%s has no tokenizer.bin (prep the pretraining data with deberta prep --holdout-brown first)" % o.shards)
    if not os.path.isdir(o.brown):
        die("BROWN=%s is not a folder of tagged Brown texts (scripts/fetch-corpus.sh writes data/corpus/brown-tagged)" % o.brown)
    again = os.path.exists(test)
    out = d + ".new" if again else d
    if again and os.path.exists(out):
        shutil.rmtree(out)
    cmd = [o.deberta, "prep-task", "--task", task, "--brown", o.brown, "--shards", o.shards, "--out", out,
           "--seq-len", str(o.seq_len)]
    note("prep-task %s (%d tokens per example) -> %s%s" % (task, o.seq_len, d,
         " (its files are older than %s: made again to compare)" % tok if again else ""))
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        if again:
            shutil.rmtree(out, ignore_errors=True)  # the old files stay as they were
        lines = [l for l in p.stderr.splitlines() if l.strip()]
        die("deberta prep-task --task %s failed: %s" % (task, lines[-1] if lines else "exit %d" % p.returncode))
    if again:
        # test.h5 last: it is the mark of files checked against this tokenizer, so a kill part-way leaves it old
        # and the next run compares again
        names = sorted(os.listdir(out), key=lambda n: (n == "test.h5", n))
        changed = [n for n in names if not (os.path.exists(os.path.join(d, n))
                                            and filecmp.cmp(os.path.join(out, n), os.path.join(d, n), shallow=False))]
        if changed:  # all of them, so that train.h5 is newer than the runs made from the old files
            for n in names:
                os.replace(os.path.join(out, n), os.path.join(d, n))
            note("%s: %s changed with the tokenizer: replaced" % (d, ", ".join(changed)))
        else:
            os.utime(test)  # checked against this tokenizer; train.h5 keeps its time, so no run goes stale
            note("%s: the same bytes as before: kept" % d)
        shutil.rmtree(out)
    return d


# ---------------------------------------------------------------- runs

def read_config_text(path):
    cfg = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if "=" in line and not line.lstrip().startswith("#"):
                    k, v = line.split("=", 1)
                    cfg[k.strip()] = v.strip()
    except OSError:
        return None
    return cfg


def read_metrics(rundir):
    rows = []
    try:
        f = open(os.path.join(rundir, "metrics.jsonl"), encoding="utf-8", errors="replace")
    except OSError:
        return rows
    with f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue  # a torn last line
            if isinstance(r, dict):
                rows.append(r)
    return rows


def read_result(rundir):
    """The finished run's test record (acc, macro_f1, dev_acc, baselines, step = best dev step) plus the
    majority label's name from results.txt; None while the run is not finished."""
    try:
        text = open(os.path.join(rundir, "results.txt"), encoding="utf-8").read()
    except OSError:
        return None
    tests = [r for r in read_metrics(rundir) if r.get("kind") == "test"]
    if not tests:
        return None
    r = dict(tests[-1])
    m = re.search(r"majority class '([^']*)'", text)
    r["majority_label"] = m.group(1) if m else "?"
    return r


def last_step(rundir):
    """The step of the run's checkpoint (else of its last logged train step; 0 if none)."""
    ck = os.path.join(rundir, "checkpoint.h5")
    step = checkpoint_step(ck) if os.path.exists(ck) else None
    if step is not None:
        return step
    steps = [r.get("step", 0) for r in read_metrics(rundir) if r.get("kind") == "train"]
    return max(steps) if steps else 0


def plural(n, word):
    return "%d %s%s" % (n, word, "" if n == 1 else "s")


def checkpoint_step(path):
    """The /step attribute of a checkpoint (h5dump), or None."""
    try:
        p = subprocess.run(["h5dump", "-a", "/step", path], capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    m = re.search(r"\(0\):\s*(\d+)", p.stdout)
    return int(m.group(1)) if m else None


def make_job(o, label, init, task, seed, tdir, fname=None):
    """fname: the task's name in its files (finetune --task), when not the folder's task name."""
    return {"label": label, "init": init, "task": task, "name": fname or task, "seed": int(seed), "data": tdir,
            "dir": os.path.join(o.table_dir, label, "%s-seed%d" % (task, seed)),
            "log": os.path.join(o.table_dir, label, "%s-seed%d.log" % (task, seed))}


def job_name(j):
    return "%s %s seed %d" % (j["task"], j["label"], j["seed"])


def check_settings(o, j, cfg):
    """None if the run directory's config.txt is this job's, else what differs."""
    def same_path(a, b):
        return os.path.realpath(a) == os.path.realpath(b)
    want = [("ft_task", j["name"], str.__eq__), ("ft_steps", o.steps, lambda a, b: int(a) == b),
            ("ft_batch", o.batch, lambda a, b: int(a) == b), ("ft_seed", j["seed"], lambda a, b: int(a) == b),
            ("ft_lr", o.lr, lambda a, b: math.isclose(float(a), float(b), rel_tol=1e-12)),
            ("ft_layer_decay", o.layer_decay, lambda a, b: math.isclose(float(a) or 1.0, float(b), rel_tol=1e-12)),
            ("ft_eval_every", o.eval_every, lambda a, b: int(a) == b), ("ft_data", j["data"], same_path)]
    if j["init"] == "scratch":
        want += [("ft_init", "scratch", str.__eq__), ("ft_preset", o.preset, str.__eq__)]
    else:
        want += [("ft_init", j["init"], same_path)]
    for key, v, eq in want:
        have = cfg.get(key, "0" if key == "ft_layer_decay" else None)  # written only when set
        try:
            ok = have is not None and eq(have, v)
        except ValueError:
            ok = False
        if not ok:
            return "%s = %s, this table wants %s" % (key, have, v)
    return None


class Runner:
    def __init__(self, o, jobs):
        self.o, self.jobs = o, jobs
        self.lock = threading.Lock()
        self.children = set()
        self.stopping = 0
        self.failed = None
        self.done = 0

    def progress(self, i, j, msg):
        with self.lock:
            sys.stderr.write("[%d/%d] %s: %s\n" % (i + 1, len(self.jobs), job_name(j), msg))
            sys.stderr.flush()

    def prepare(self, j):
        """'done', 'resume' or 'fresh' (moving a stale run aside first)."""
        d = j["dir"]
        cfg_path = os.path.join(d, "config.txt")
        cfg = refuse_other_settings(self.o, j)
        if cfg is None:
            return "fresh"
        stale = [p for p in ([] if j["init"] == "scratch" else [j["init"]]) + [os.path.join(j["data"], "train.h5")]
                 if os.path.exists(p) and newer(p, cfg_path)]
        if stale:
            k = 1
            while os.path.exists("%s.stale-%d" % (d, k)):
                k += 1
            os.rename(d, "%s.stale-%d" % (d, k))
            if os.path.exists(j["log"]):
                os.rename(j["log"], "%s.stale-%d.log" % (d, k))
            note("%s: %s is newer than the run (made from an earlier version of it): moved to %s.stale-%d, starting again"
                 % (job_name(j), stale[0], d, k))
            return "fresh"
        if read_result(d):
            return "done"
        return "resume" if os.path.exists(os.path.join(d, "checkpoint.h5")) else "fresh"

    def command(self, j, kind):
        o = self.o
        if kind == "resume":
            return [o.deberta, "finetune", "--resume", j["dir"], "--threads", str(o.threads)]
        init = ["--init", "scratch", "--preset", o.preset] if j["init"] == "scratch" else ["--init", j["init"]]
        return [o.deberta, "finetune"] + init + [
            "--task", j["name"], "--data", j["data"], "--out", j["dir"], "--steps", str(o.steps), "--batch", str(o.batch),
            "--lr", o.lr, "--seed", str(j["seed"]), "--eval-every", str(o.eval_every), "--save-every", str(o.eval_every),
            "--threads", str(o.threads)] + ([] if float(o.layer_decay) == 1 else ["--layer-decay", o.layer_decay])

    def run_one(self, i, j, kind):
        if kind == "resume":
            self.progress(i, j, "resuming at step %d of %d -> %s" % (last_step(j["dir"]), self.o.steps, j["dir"]))
        else:
            self.progress(i, j, "fine-tuning -> %s" % j["dir"])
        cmd = self.command(j, kind)
        os.makedirs(os.path.dirname(j["log"]), exist_ok=True)
        t0 = time.time()
        with open(j["log"], "a", encoding="utf-8") as log:
            log.write("== %s %s\n$ %s\n" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)), kind,
                                            " ".join(shlex.quote(c) for c in cmd)))
            log.flush()
            with self.lock:
                if self.stopping:
                    return
                p = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                     env=dict(os.environ, OMP_NUM_THREADS=str(self.o.threads)))
                self.children.add(p)
            rc = p.wait()
            with self.lock:
                self.children.discard(p)
            wall = time.time() - t0
            log.write("== exit %d after %.1f s\n" % (rc, wall))
        r = read_result(j["dir"])
        if rc == 0 and r:
            self.progress(i, j, "test acc %.4f, best dev %.4f (step %d); %.0f s" % (r["acc"], r["dev_acc"], r["step"], wall))
        elif self.stopping:
            self.progress(i, j, "stopped at step %d (resumes on the next run)" % last_step(j["dir"]))
        else:
            lines = [l for l in open(j["log"], encoding="utf-8", errors="replace") if l.startswith("error:")]
            with self.lock:
                if self.failed is None:
                    self.failed = "%s: deberta finetune exited %d: %s (log: %s)" % (
                        job_name(j), rc, lines[-1].strip()[7:] if lines else "no error line", j["log"])
            self.stop(None, None)

    def stop(self, signum, frame):
        with self.lock:
            if signum and not self.stopping:
                self.stopping = signum
                sys.stderr.write("finetune-table: signal %d: stopping the running fine-tunes at a checkpoint; "
                                 "re-run the same command to continue\n" % signum)
            elif not self.stopping:
                self.stopping = -1
            for p in list(self.children):
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except OSError:
                    pass

    def run(self):
        # in the main thread (die() exits the process only from there): settings, stale runs, finished ones
        queue = []
        for i, j in enumerate(self.jobs):
            kind = self.prepare(j)
            if kind == "done":
                r = read_result(j["dir"])
                self.progress(i, j, "done earlier: test acc %.4f, best dev %.4f (step %d)" % (r["acc"], r["dev_acc"], r["step"]))
            else:
                queue.append((i, j, kind))
        qlock = threading.Lock()

        def worker():
            while True:
                with qlock:
                    if not queue or self.stopping:
                        return
                    i, j, kind = queue.pop(0)
                self.run_one(i, j, kind)

        threads = [threading.Thread(target=worker, daemon=True) for _ in range(min(self.o.parallel, len(queue)))]
        for t in threads:
            t.start()
        for t in threads:
            while t.is_alive():
                t.join(0.5)
        if self.failed:
            die(self.failed)
        return 128 + self.stopping if self.stopping else 0


def refuse_other_settings(o, j):
    """The config.txt of job j's run directory (None if it has none); dies if it was made with other settings."""
    cfg = read_config_text(os.path.join(j["dir"], "config.txt"))
    bad = cfg is not None and check_settings(o, j, cfg)
    if bad:
        die("%s was made with other settings (%s); use another FT_TABLE_DIR or remove it" % (j["dir"], bad))
    return cfg


def run_jobs(o, jobs):
    """Runs (skips, resumes) the jobs; installs SIGINT/SIGTERM handlers.  0, or 128 + signal when stopped."""
    if not os.access(o.deberta, os.X_OK):
        die("%s not found (make build/deberta, or set DEBERTA)" % o.deberta)
    for j in jobs:  # a table of another budget is refused before anything is said or run: one error line
        refuse_other_settings(o, j)
    note("%s (%d at a time, %s each): %s" % (plural(len(jobs), "run"), o.parallel, plural(o.threads, "thread"), budget_text(o)))
    r = Runner(o, jobs)
    old = signal.signal(signal.SIGINT, r.stop), signal.signal(signal.SIGTERM, r.stop)
    try:
        return r.run()
    finally:
        signal.signal(signal.SIGINT, old[0])
        signal.signal(signal.SIGTERM, old[1])


# ---------------------------------------------------------------- tables

def mean_sd(xs):
    xs = [x for x in xs if isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)]
    if not xs:
        return None, None, 0
    m = sum(xs) / len(xs)
    sd = math.sqrt(sum((x - m) ** 2 for x in xs) / (len(xs) - 1)) if len(xs) > 1 else None
    return m, sd, len(xs)


def fmt_ms(m, sd, f="%.4f"):
    if m is None:
        return "–"
    return (f % m) + (" ± " + (f % sd) if sd is not None else "")


def label_text(label, init, o):
    if init == "scratch":
        return "scratch (%s preset, random init)" % o.preset
    step = checkpoint_step(init) if os.path.exists(init) else None
    return "%s: `%s`%s" % (label, init, "" if step is None else " (pretrained %s)" % plural(step, "step"))


def task_table(o, task, rows):
    """rows: [(label, init, [job, ...])] in order; a Markdown table (list of lines)."""
    results = {j["dir"]: read_result(j["dir"]) for _, _, js in rows for j in js}
    done = [r for r in results.values() if r]
    md = []
    n_test = sorted({r.get("n") for r in done})
    seeds = sorted({j["seed"] for _, _, js in rows for j in js})
    md.append("**%s** (test: %s %s): test accuracy of the best-dev model; fine-tuning %s; mean ± sample sd "
              "over the seeds that finished (of %s)." % (
                  task, ", ".join("{:,}".format(n) for n in n_test) or "?", {"pos": "words", "genre": "windows"}.get(task, "examples"),
                  budget_text(o), " ".join(map(str, seeds))))
    md.append("")
    genre = task != "pos"  # a sequence task: macro-F1 and naive Bayes beside accuracy
    md.append("| model | n | test accuracy |%s best dev accuracy |" % (" test macro-F1 |" if genre else ""))
    md.append("|---|---|---|%s---|" % ("---|" if genre else ""))
    blank = " |" if genre else ""
    if done:
        maj = sorted({(r["majority_label"], round(r["baseline_majority_acc"], 9)) for r in done})
        if len(maj) > 1:
            note("warning: %s: the runs report different majority baselines %s (other task files?)" % (task, maj))
        md.append("| baseline: majority class (%s) | – | %.4f |%s |" % (maj[0][0], maj[0][1], blank))
        nb = sorted({round(r["baseline_naive_bayes_acc"], 9) for r in done if r.get("baseline_naive_bayes_acc") is not None})
        if nb:
            md.append("| baseline: naive Bayes (bag of tokens, train split) | – | %.4f |%s |" % (nb[0], blank))
        if not genre:
            wt = sorted({round(r["baseline_word_tag_acc"], 9) for r in done if r.get("baseline_word_tag_acc") is not None})
            if wt:
                md.append("| baseline: most frequent tag per word (train split) | – | %.4f |%s |" % (wt[0], blank))
    unfinished = []
    for label, init, js in rows:
        rs = [results[j["dir"]] for j in js if results[j["dir"]]]
        acc, f1, dev = (mean_sd([r.get(k) for r in rs]) for k in ("acc", "macro_f1", "dev_acc"))
        cells = [label_text(label, init, o), str(len(rs)), fmt_ms(*acc[:2])]
        if genre:
            cells.append(fmt_ms(*f1[:2]))
        cells.append(fmt_ms(*dev[:2]))
        md.append("| " + " | ".join(cells) + " |")
        for j in js:
            if not results[j["dir"]]:
                s = last_step(j["dir"])
                unfinished.append("%s seed %d (%s)" % (label, j["seed"], "step %d of %d" % (s, o.steps) if s else "not started"))
    if unfinished:
        md.append("")
        md.append("Not finished (left out of the means): " + ", ".join(unfinished) + ".")
    return md


# ---------------------------------------------------------------- command

def parse_labels(args):
    specs, seen = [], {"scratch"}
    for a in args:
        if "=" not in a:
            die("'%s' is not LABEL=CHECKPOINT (e.g. demo=runs/demo/checkpoint.h5)" % a)
        label, path = a.split("=", 1)
        if not LABEL_RE.match(label):
            die("label '%s': use letters, digits and . _ + - (it names a folder)" % label)
        if label in seen:
            die("label '%s' is given twice (or is the reserved 'scratch')" % label)
        seen.add(label)
        if not os.path.isfile(path):
            die("%s: no such checkpoint (label %s)" % (path, label))
        specs.append((label, path))
    return specs


def main(argv):
    if argv and argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0
    table_only = bool(argv) and argv[0] == "--table-only"
    if table_only:
        argv = argv[1:]
    for a in argv:
        if a.startswith("-"):
            die("unknown option '%s' (--table-only, --help)" % a)
    specs = parse_labels(argv)
    o = options_from_env()
    tdirs = {t: (task_dir(o, t) if table_only else ensure_task_files(o, t)) for t in o.tasks}
    names = {t: t if t in TASKS else (task_name_in_files(tdirs[t]) or t) for t in o.tasks}
    inits = ([("scratch", "scratch")] if o.scratch else []) + specs
    if not inits:
        die("FT_SCRATCH=0 and no LABEL=CHECKPOINT: nothing to fine-tune")
    # task-major, then seed, then model: a stopped table leaves whole seeds of the first task
    jobs = [make_job(o, label, init, t, s, tdirs[t], names[t]) for t in o.tasks for s in o.seeds for label, init in inits]
    rc = 0
    if not table_only:
        rc = run_jobs(o, jobs)
    md = []
    for t in o.tasks:
        rows = [(label, init, [j for j in jobs if j["task"] == t and j["label"] == label]) for label, init in inits]
        md += task_table(o, t, rows) + [""]
    text = "\n".join(md)
    print(text, end="")
    sys.stdout.flush()
    if os.path.isdir(o.table_dir):
        path = os.path.join(o.table_dir, "table.md")
        with open(path + ".tmp", "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(path + ".tmp", path)
        note("tables written to %s" % path)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
