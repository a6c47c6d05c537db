#!/usr/bin/python3
"""ablation_study.py — the queue of the fourth ablation study (docs/ABLATIONS.md): every variant x
pretraining seed pretrained with one step budget, evaluated (`deberta eval`: fixed-corruption AUC, the
POS probe, MLM accuracy) and fine-tuned (POS and genre, several fine-tuning seeds), one job at a time.
Run with /usr/bin/python3 (standard library + h5py), usually as scripts/ablation-study.sh.

  ablation-study.sh init STUDYDIR --data DIR [--steps N | --minutes M] [--seeds 1,2] [--ft-seeds 1,2,3]
                    [--variants V1,V2] [--preset tiny] [--threads T] [--deberta BIN] [--eval-batches 64]
                    [--ft-steps 300 --ft-batch 32 --ft-seq-len 64 --ft-eval-every 100 --pos-lr 2e-3
                    --genre-lr 2e-4] [--brown DIR] [--task-data DIR] [-- PRETRAIN FLAGS]
  ablation-study.sh run STUDYDIR [--max-jobs N]     run or continue the queue (nohup ... & for the background)
  ablation-study.sh status STUDYDIR                 what is done, running and left
  ablation-study.sh stop STUDYDIR                   SIGTERM to the running queue (its job stops at a checkpoint)
  ablation-study.sh add-seed STUDYDIR (--unresolved | --variants V1,V2)
                                                    one more pretraining seed for those variants (and full)
  ablation-study.sh report STUDYDIR [...]           tables, intervals, verdicts, forest.png (ablation_report.py)

init copies the binary into STUDYDIR/deberta (a rebuild of the tree cannot change the program in the middle
of the study) and writes STUDYDIR/study.json: the variants, seeds, the step budget (--steps, or the steps
`deberta pretrain --minutes M` calibrates on this machine: default 30 minutes of the default model), the
pretraining flags (every run the same: --preset, --steps, evaluations, checkpoints; then the variant's own
flags) and the fine-tuning budget.  The shards must hold the yardsticks' files (rtd-fixed.h5, probe-pos/:
scripts/demo-prep.sh) and no Brown dev/test text (prep --holdout-brown).

run takes STUDYDIR/queue.lock (a second queue on the study is refused) and, around every job, the machine's
training slot (the file SLOT, default /tmp/train.slot, which scripts/score-run.sh takes too): never two
trainings at once.  Order: scratch fine-tunes (the floor), then seed-major (every variant of seed 1, then
seed 2, ...), and per run: pretrain -> eval -> POS fine-tunes -> genre fine-tunes -> STUDYDIR/results/
<variant>-seed<k>.json (the report's input).  Finished work is skipped; a stopped pretraining run resumes
(deberta pretrain --resume, through scripts/ablate.py), a stopped fine-tune too (scripts/finetune_table.py).
SIGTERM/SIGINT (or `stop`) stops the running job at a checkpoint; `run` again continues.  Each job's wall
time, CPU seconds (its processes' user + system), the build and the CPU go to RUNDIR/study-timing.jsonl.
"""
import argparse
import fcntl
import json
import os
import re
import resource
import shlex
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import ablate  # noqa: E402  (pretraining runs: fresh, resume, skip, config checks)
import finetune_table as ft  # noqa: E402  (fine-tuning runs: fresh, resume, skip, budget checks)
from recipe_report import parse_score  # noqa: E402  (deberta eval's yardstick lines)

# name -> (scripts/ablate.py grid point, what it tests)
VARIANTS = [
    ("full", {"terms": "c2c+c2p+p2c", "emd": "1", "sharing": "gdes"}, "the default: c2c+c2p+p2c, EMD, GDES"),
    ("no-c2p", {"terms": "c2c+p2c"}, "DeBERTa's ablation: without content-to-position"),
    ("no-p2c", {"terms": "c2c+c2p"}, "DeBERTa's ablation: without position-to-content"),
    ("c2c-only", {"terms": "c2c"}, "no relative-position term at all"),
    ("no-emd", {"emd": "0"}, "DeBERTa's ablation: without the enhanced mask decoder"),
    ("no-emd-no-c2p", {"emd": "0", "terms": "c2c+p2c"}, "DeBERTa's ablation: without EMD and c2p"),
    ("no-emd-no-p2c", {"emd": "0", "terms": "c2c+c2p"}, "DeBERTa's ablation: without EMD and p2c"),
    ("es", {"sharing": "es"}, "DeBERTaV3: plain embedding sharing (joint training, as ELECTRA)"),
    ("nes", {"sharing": "nes"}, "DeBERTaV3: no sharing (own tables, generator then discriminator)"),
    ("pb16", {"buckets": "16"}, "open question: 16 position buckets instead of 64"),
]
VARIANT = {n: (p, w) for n, p, w in VARIANTS}
TASKS = ("pos", "genre")


def die(msg, code=1):
    sys.stderr.write("error: ablation-study: %s\n" % msg)
    sys.exit(code)


def say(msg):
    sys.stderr.write("%s ablation-study: %s\n" % (time.strftime("%H:%M:%SZ", time.gmtime()), msg))
    sys.stderr.flush()


def split_list(s):
    return [x for x in s.replace(",", " ").split() if x]


def load_study(study):
    p = os.path.join(study, "study.json")
    try:
        return json.load(open(p, encoding="utf-8"))
    except OSError:
        die("%s has no study.json (sh scripts/ablation-study.sh init %s --data DIR first)" % (study, study))
    except ValueError as e:
        die("%s: not JSON (%s)" % (p, e))


def save_study(study, s):
    p = os.path.join(study, "study.json")
    with open(p + ".tmp", "w", encoding="utf-8") as f:
        json.dump(s, f, indent=1)
    os.replace(p + ".tmp", p)


def cpu_text():
    """The CPU as lscpu names it: model name, family and model."""
    info = {}
    try:
        for line in open("/proc/cpuinfo", encoding="utf-8", errors="replace"):
            k, _, v = line.partition(":")
            info.setdefault(k.strip(), v.strip())
    except OSError:
        return "?"
    return "%s (family %s model %s)" % (info.get("model name", "?"), info.get("cpu family", "?"), info.get("model", "?"))


def version_of(binary):
    p = subprocess.run([binary, "--version"], capture_output=True, text=True)
    return p.stdout.strip() or "?"


# ---------------------------------------------------------------- init

def calibrate(study, a, binary, base_model):
    """Steps that --minutes M gives the default model on this machine: `deberta pretrain --minutes M
    --stop-after 1` into STUDYDIR/calibration (its timing phase and one step), read from its config.txt."""
    out = os.path.join(study, "calibration")
    if os.path.exists(out):
        shutil.rmtree(out)
    cmd = [binary, "pretrain", "--data", a.data, "--out", out, "--threads", str(a.threads), "--seed", "1"] + base_model + [
        "--minutes", str(a.minutes), "--stop-after", "1", "--eval-every", "0", "--save-every", "0"]
    say("calibrating: %s" % " ".join(shlex.quote(c) for c in cmd))
    with open(os.path.join(study, "calibration.log"), "w", encoding="utf-8") as log:
        rc = subprocess.run(cmd, stdout=log, stderr=subprocess.STDOUT, env=dict(os.environ, OMP_NUM_THREADS=str(a.threads))).returncode
    cfg = ft.read_config_text(os.path.join(out, "config.txt")) or {}
    if rc != 0 or "train_steps" not in cfg:
        die("the calibration run failed (exit %d; log: %s/calibration.log)" % (rc, study))
    text = open(os.path.join(study, "calibration.log"), encoding="utf-8", errors="replace").read()
    m = re.search(r"calibration: .*", text)
    return int(cfg["train_steps"]), m.group(0) if m else ""


def cmd_init(argv):
    extra = []
    if "--" in argv:
        i = argv.index("--")
        argv, extra = argv[:i], argv[i + 1:]
    ap = argparse.ArgumentParser(prog="ablation-study.sh init")
    ap.add_argument("study")
    ap.add_argument("--data", required=True, help="shards (prep --holdout-brown) with rtd-fixed.h5 and probe-pos/")
    ap.add_argument("--steps", type=int, default=0, help="pretraining steps of every run")
    ap.add_argument("--minutes", type=float, default=30.0, help="without --steps: the steps the default model "
                    "takes this long on this machine (deberta pretrain --minutes calibration) [30]")
    ap.add_argument("--seeds", default="1,2", help="pretraining seeds of every variant [1,2]")
    ap.add_argument("--ft-seeds", default="1,2,3", help="fine-tuning seeds per checkpoint and task [1,2,3]")
    ap.add_argument("--variants", default="", help="a subset of: " + ",".join(n for n, _, _ in VARIANTS))
    ap.add_argument("--preset", default="tiny")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--deberta", default=os.path.join(ablate.ROOT, "build", "deberta"))
    ap.add_argument("--eval-batches", type=int, default=64, help="deberta eval --batches [64]")
    ap.add_argument("--eval-every", type=int, default=0, help="in-run evaluations [steps/4]")
    ap.add_argument("--save-every", type=int, default=250, help="checkpoint every N steps (resume point) [250]")
    ap.add_argument("--ft-steps", type=int, default=300)
    ap.add_argument("--ft-batch", type=int, default=32)
    ap.add_argument("--ft-seq-len", type=int, default=64)
    ap.add_argument("--ft-eval-every", type=int, default=100)
    ap.add_argument("--pos-lr", default="2e-3")
    ap.add_argument("--genre-lr", default="2e-4")
    ap.add_argument("--brown", default="data/corpus/brown-tagged")
    ap.add_argument("--task-data", default="", help="task files [STUDYDIR/tasks]")
    a = ap.parse_args(argv)
    study = a.study
    if os.path.exists(os.path.join(study, "study.json")):
        die("%s is already a study (add-seed adds seeds; another folder for another study)" % study)
    names = split_list(a.variants) or [n for n, _, _ in VARIANTS]
    bad = [n for n in names if n not in VARIANT]
    if bad:
        die("--variants: unknown %s (one of %s)" % (", ".join(bad), ", ".join(VARIANT)))
    if "full" not in names:
        names.insert(0, "full")
    seeds, ft_seeds = split_list(a.seeds), split_list(a.ft_seeds)
    for s in seeds + ft_seeds:
        if not s.isdigit():
            die("seed '%s' is not a non-negative integer" % s)
    for f in extra:
        n = ablate.flag_name(f)
        if n in ablate.RESERVED or n in ("steps", "preset", "eval-every", "save-every"):
            die("--%s may not be among the pretraining flags after -- (the study sets it)" % n)
    if not os.path.isdir(a.data):
        die("--data %s is not a folder" % a.data)
    for need, how in (("rtd-fixed.h5", "/usr/bin/python3 scripts/rtd_fixed.py DATA"),
                      ("probe-pos/train.h5", "deberta prep-task --task pos --shards DATA --out DATA/probe-pos")):
        if not os.path.exists(os.path.join(a.data, need)):
            die("--data %s has no %s, a yardstick's file (%s; scripts/demo-prep.sh makes both)" % (a.data, need, how))
    if not os.path.isdir(a.brown):
        die("--brown %s is not a folder of tagged Brown texts (scripts/fetch-corpus.sh)" % a.brown)
    if not os.access(a.deberta, os.X_OK):
        die("%s not found (make build/deberta, or give --deberta)" % a.deberta)
    os.makedirs(study, exist_ok=True)
    binary = os.path.join(study, "deberta")
    shutil.copy2(a.deberta, binary)
    version = version_of(binary)
    base_model = ["--preset", a.preset] + extra
    if a.steps > 0:
        steps, how = a.steps, "given (--steps %d)" % a.steps
    else:
        steps, line = calibrate(study, a, binary, base_model)
        how = "calibrated: deberta pretrain --minutes %g on %s (%s)" % (a.minutes, cpu_text(), line)
    every = a.eval_every or max(1, steps // 4)
    base = ["--preset", a.preset, "--steps", str(steps), "--eval-every", str(every), "--save-every",
            str(min(a.save_every, steps))] + extra
    s = {"data": os.path.abspath(a.data), "binary": "deberta", "version": version, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
         "cpu": cpu_text(), "steps": steps, "steps_how": how, "base_flags": base, "threads": a.threads,
         "eval_batches": a.eval_batches, "variants": names,
         "runs": [{"variant": n, "seed": int(k)} for k in seeds for n in names],
         "ft": {"seeds": [int(x) for x in ft_seeds], "steps": a.ft_steps, "batch": a.ft_batch, "seq_len": a.ft_seq_len,
                "eval_every": a.ft_eval_every, "lr": {"pos": a.pos_lr, "genre": a.genre_lr}, "preset": a.preset,
                "brown": os.path.abspath(a.brown), "task_data": os.path.abspath(a.task_data or os.path.join(study, "tasks"))}}
    save_study(study, s)
    say("%s: %d variants x seeds %s = %d pretraining runs of %d steps (%s); %s" % (
        study, len(names), ",".join(seeds), len(s["runs"]), steps, how, version))
    return 0


# ---------------------------------------------------------------- jobs

class Slot:
    """The machine's training slot: an exclusive flock on SLOT (default /tmp/train.slot), held per job.
    While another process holds it, it polls, so that a stop request (stopped() true) ends the wait; the
    caller then checks the queue's stop flag before it starts anything."""
    def __init__(self, stopped):
        self.path = os.environ.get("SLOT", "").strip() or "/tmp/train.slot"
        self.stopped = stopped
        self.fd = None

    def __enter__(self):
        self.fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        waited = False
        while True:
            try:
                fcntl.flock(self.fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return self
            except OSError:
                if self.stopped():
                    return self
                if not waited:
                    say("waiting for the training slot %s (another training holds it)" % self.path)
                    waited = True
                time.sleep(0.5)

    def __exit__(self, *exc):
        os.close(self.fd)  # releases the flock
        self.fd = None


class Queue:
    def __init__(self, study, s):
        self.study, self.s = study, s
        self.binary = os.path.join(study, s["binary"])
        self.stopping = 0
        self.child = None       # the running eval (a Popen)
        self.runner = None      # the running ablate.Runner

    def on_signal(self, signum, frame):
        self.stopping = signum
        say("signal %d: stopping the running job at a checkpoint (`run` again continues)" % signum)
        if self.runner:
            self.runner.stop(signum, frame)
        if self.child:
            try:
                os.killpg(self.child.pid, signal.SIGTERM)
            except OSError:
                pass

    def timing(self, rundir, phase, t0, r0, extra=None):
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        rec = {"phase": phase, "utc_start": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t0)), "wall_s": round(time.time() - t0, 3),
               "cpu_s": round((r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime), 3), "build": self.s["version"],
               "cpu": cpu_text(), "threads": self.s["threads"], "loadavg_end": ablate.loadavg()}
        rec.update(extra or {})
        os.makedirs(rundir, exist_ok=True)
        with open(os.path.join(rundir, "study-timing.jsonl"), "a", encoding="utf-8") as f:
            f.write(json.dumps(rec) + "\n")

    # --- pretraining
    def ablate_args(self):
        class A:
            pass
        a = A()
        a.out, a.data, a.base, a.dry_run = os.path.join(self.study, "pretrain"), self.s["data"], self.s["base_flags"], False
        a.deberta, a.threads, a.parallel = self.binary, self.s["threads"], 1
        return a

    def pretrain(self, run):
        args = self.ablate_args()
        os.makedirs(args.out, exist_ok=True)
        job = ablate.prepare_job(args, VARIANT[run["variant"]][0], run["seed"], [], variant=run["variant"])
        if self.finished(job["dir"]):
            return job["dir"], True
        say("%s: pretraining (%d steps)" % (job["name"], self.s["steps"]))
        r = ablate.Runner(args)
        self.runner = r
        step0 = ablate.checkpoint_step(job["dir"]) or 0
        with Slot(lambda: self.stopping):
            if not self.stopping:  # the job's time starts with the slot
                t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
                r.do_job(job)
                self.timing(job["dir"], "pretrain", t0, r0,
                            {"start_step": step0, "end_step": ablate.checkpoint_step(job["dir"]) or 0})
        self.runner = None
        if r.failed:
            die("%s failed (log: %s/pretrain.log); fix it and `run` again" % (job["name"], job["dir"]))
        return job["dir"], self.finished(job["dir"])

    def finished(self, rundir):
        step, steps = ablate.checkpoint_step(rundir), ablate.run_steps(rundir)
        return step is not None and steps is not None and step == steps

    # --- evaluation
    def evaluate(self, name, rundir):
        path = os.path.join(rundir, "eval.txt")
        if os.path.exists(path):
            return parse_eval(path)
        cmd = [self.binary, "eval", os.path.join(rundir, "checkpoint.h5"), "--data", self.s["data"], "--batches",
               str(self.s["eval_batches"]), "--threads", str(self.s["threads"])]
        say("%s: %s" % (name, " ".join(shlex.quote(c) for c in cmd)))
        with Slot(lambda: self.stopping), open(path + ".tmp", "w", encoding="utf-8") as out:
            if self.stopping:
                return None
            t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
            self.child = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                                          env=dict(os.environ, OMP_NUM_THREADS=str(self.s["threads"])))
            rc = self.child.wait()
            self.child = None
        self.timing(rundir, "eval", t0, r0)
        if self.stopping:
            return None
        if rc != 0:
            die("%s: deberta eval exited %d (output: %s.tmp)" % (name, rc, path))
        os.replace(path + ".tmp", path)
        return parse_eval(path)

    # --- fine-tuning
    def ft_options(self, task):
        f = self.s["ft"]
        o = ft.Options()
        o.tasks, o.seeds, o.steps, o.batch, o.lr = [task], f["seeds"], f["steps"], f["batch"], f["lr"][task]
        o.layer_decay, o.seq_len, o.eval_every, o.preset = "1", f["seq_len"], f["eval_every"], f["preset"]
        o.table_dir = os.path.join(self.study, "finetune")
        o.parallel, o.threads = 1, self.s["threads"]
        o.shards, o.brown, o.task_data, o.deberta = self.s["data"], f["brown"], f["task_data"], self.binary
        return o

    def finetune(self, label, init, rundir):
        """Fine-tunes init (a checkpoint, or 'scratch') on both tasks; False when stopped."""
        for task in TASKS:
            o = self.ft_options(task)
            tdir = ft.ensure_task_files(o, task)
            jobs = [ft.make_job(o, label, init, task, x, tdir) for x in o.seeds]
            if all(ft.read_result(j["dir"]) for j in jobs):
                continue
            with Slot(lambda: self.stopping):
                if self.stopping:
                    return False
                t0, r0 = time.time(), resource.getrusage(resource.RUSAGE_CHILDREN)
                rc = ft.run_jobs(o, jobs)
            self.timing(rundir, "finetune-" + task, t0, r0)
            if rc != 0:
                self.stopping = self.stopping or rc - 128
                return False
        return True

    def ft_results(self, label):
        out = {}
        for task in TASKS:
            o = self.ft_options(task)
            out[task] = {}
            for x in o.seeds:
                r = ft.read_result(os.path.join(o.table_dir, label, "%s-seed%d" % (task, x)))
                if r:
                    out[task][str(x)] = r["acc"]
        return out

    def write_result(self, run, rundir, ys):
        name = "%s-seed%d" % (run["variant"], run["seed"])
        cfg = ft.read_config_text(os.path.join(rundir, "config.txt")) or {}
        timing = []
        try:
            timing = [json.loads(l) for l in open(os.path.join(rundir, "study-timing.jsonl"), encoding="utf-8")]
        except (OSError, ValueError):
            pass
        pre = [t for t in timing if t["phase"] == "pretrain"]
        steps = int(cfg.get("train_steps", 0))
        cmd = ""
        try:
            cmd = [l for l in open(os.path.join(rundir, "cmdline.txt"), encoding="utf-8") if not l.startswith("#")][0].strip()
        except (OSError, IndexError):
            pass
        rec = {"variant": run["variant"], "seed": run["seed"], "steps": steps,
               "tokens": steps * ablate.tokens_per_step(cfg) if cfg else None, "build": self.s["version"],
               "cpu": ", ".join(sorted({t["cpu"] for t in pre})) or cpu_text(), "threads": self.s["threads"],
               "pretrain_wall_s": round(sum(t["wall_s"] for t in pre), 1), "pretrain_cpu_s": round(sum(t["cpu_s"] for t in pre), 1),
               "command": cmd, "rundir": os.path.relpath(rundir, self.study), "yardsticks": ys,
               "finetune": self.ft_results(name)}
        d = os.path.join(self.study, "results")
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, name + ".json")
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            json.dump(rec, f, indent=1)
        os.replace(p + ".tmp", p)

    def run(self, max_jobs):
        done_jobs = 0
        if not self.finetune("scratch", "scratch", os.path.join(self.study, "finetune", "scratch")):
            return 128 + self.stopping
        p = os.path.join(self.study, "scratch.json")  # the floor, for the report
        with open(p + ".tmp", "w", encoding="utf-8") as f:
            json.dump({"finetune": self.ft_results("scratch")}, f, indent=1)
        os.replace(p + ".tmp", p)
        for run in self.s["runs"]:
            if max_jobs and done_jobs >= max_jobs:
                say("--max-jobs %d reached: stopping (`run` again continues)" % max_jobs)
                return 0
            name = "%s-seed%d" % (run["variant"], run["seed"])
            result = os.path.join(self.study, "results", name + ".json")
            if os.path.exists(result) and complete(json.load(open(result, encoding="utf-8")), self.s):
                say("%s: done, skipped" % name)
                continue
            rundir, fin = self.pretrain(run)
            if self.stopping or not fin:
                return 128 + self.stopping if self.stopping else 1
            ys = self.evaluate(name, rundir)
            if ys is None:
                return 128 + self.stopping
            if not self.finetune(name, os.path.join(rundir, "checkpoint.h5"), rundir):
                return 128 + self.stopping
            self.write_result(run, rundir, ys)
            say("%s: done: %s" % (name, ", ".join("%s %.4f" % kv for kv in sorted(ys.items()))))
            done_jobs += 1
        say("the study is complete: sh scripts/ablation-study.sh report %s" % self.study)
        return 0


def parse_eval(path):
    """{fx_auc, probe_acc, probe_best_acc, mlm_acc} from deberta eval's output."""
    d = parse_score(path)
    ys = {k: d[k] for k in ("fx_auc", "probe_acc", "probe_best_acc") if k in d}
    m = re.search(r"^generator\s+MLM loss [\d.]+\s+accuracy ([\d.]+)", open(path, encoding="utf-8", errors="replace").read(), re.M)
    if m:
        ys["mlm_acc"] = float(m.group(1))
    return ys


def complete(rec, s):
    ft_n = len(s["ft"]["seeds"])
    return all(len((rec.get("finetune") or {}).get(t) or {}) == ft_n for t in TASKS) and "fx_auc" in (rec.get("yardsticks") or {})


# ---------------------------------------------------------------- run, stop, status, add-seed

def lock_path(study):
    return os.path.join(study, "queue.lock")


def cmd_run(argv):
    ap = argparse.ArgumentParser(prog="ablation-study.sh run")
    ap.add_argument("study")
    ap.add_argument("--max-jobs", type=int, default=0, help="stop after this many pretraining runs are done [all]")
    a = ap.parse_args(argv)
    s = load_study(a.study)
    if not os.access(os.path.join(a.study, s["binary"]), os.X_OK):
        die("%s/%s, the study's copy of the binary, is missing (init makes it)" % (a.study, s["binary"]))
    fd = os.open(lock_path(a.study), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        holder = open(lock_path(a.study), encoding="utf-8", errors="replace").read().strip() or "?"
        die("a queue is already running on %s (%s); `status` says what it does, `stop` stops it" % (a.study, holder))
    os.ftruncate(fd, 0)
    os.write(fd, ("pid %d since %s" % (os.getpid(), time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))).encode())
    q = Queue(a.study, s)
    signal.signal(signal.SIGTERM, q.on_signal)
    signal.signal(signal.SIGINT, q.on_signal)
    say("queue of %s: %d pretraining runs, pid %d" % (a.study, len(s["runs"]), os.getpid()))
    try:
        rc = q.run(a.max_jobs)
    finally:
        os.ftruncate(fd, 0)
        os.close(fd)
    if q.stopping:
        say("stopped; `sh scripts/ablation-study.sh run %s` continues" % a.study)
    return rc


def running_pid(study):
    """The pid of the queue holding STUDYDIR/queue.lock, or None."""
    p = lock_path(study)
    if not os.path.exists(p):
        return None
    fd = os.open(p, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        return None  # nobody holds it
    except OSError:
        m = re.match(r"pid (\d+)", open(p, encoding="utf-8", errors="replace").read())
        return int(m.group(1)) if m else -1
    finally:
        os.close(fd)


def cmd_stop(argv):
    ap = argparse.ArgumentParser(prog="ablation-study.sh stop")
    ap.add_argument("study")
    a = ap.parse_args(argv)
    pid = running_pid(a.study)
    if not pid or pid < 0:
        die("no queue is running on %s" % a.study)
    os.kill(pid, signal.SIGTERM)
    say("sent SIGTERM to the queue (pid %d); its job stops at a checkpoint" % pid)
    return 0


def cmd_status(argv):
    ap = argparse.ArgumentParser(prog="ablation-study.sh status")
    ap.add_argument("study")
    a = ap.parse_args(argv)
    s = load_study(a.study)
    q = Queue(a.study, s)
    nft = len(s["ft"]["seeds"])
    print("study %s: %s; %d steps per run (%s); pretraining seeds per variant: %s" % (
        a.study, s["version"], s["steps"], s["steps_how"],
        ", ".join("%s %s" % (v, ",".join(str(r["seed"]) for r in s["runs"] if r["variant"] == v)) for v in s["variants"])))
    print("| run | pretrain | eval | pos | genre | state |")
    print("|---|---|---|---|---|---|")
    n_done, walls, left = 0, [], []
    for run in s["runs"]:
        name = "%s-seed%d" % (run["variant"], run["seed"])
        rundir = os.path.join(a.study, "pretrain", name)
        step, steps = ablate.checkpoint_step(rundir), ablate.run_steps(rundir)
        res = os.path.join(a.study, "results", name + ".json")
        rec = json.load(open(res, encoding="utf-8")) if os.path.exists(res) else None
        fts = q.ft_results(name)
        done = rec is not None and complete(rec, s)
        if done:
            n_done += 1
            walls.append(rec.get("pretrain_wall_s") or 0)
        else:
            left.append(name)
        print("| %s | %s | %s | %d/%d | %d/%d | %s |" % (
            name, "%s/%s" % (step if step is not None else 0, steps or s["steps"]),
            "done" if os.path.exists(os.path.join(rundir, "eval.txt")) else "–",
            len(fts["pos"]), nft, len(fts["genre"]), nft, "done" if done else ("started" if step else "to do")))
    pid = running_pid(a.study)
    print("\n%d of %d runs done; %s" % (n_done, len(s["runs"]), "left: " + ", ".join(left) if left else "nothing left"))
    if walls and left:
        print("pretraining took %.0f s per run so far: about %.1f h of pretraining left (fine-tunes and evaluations on top)"
              % (sum(walls) / len(walls), sum(walls) / len(walls) * len(left) / 3600))
    print("queue: %s" % ("running, pid %d" % pid if pid else "not running"))
    return 0


def cmd_add_seed(argv):
    ap = argparse.ArgumentParser(prog="ablation-study.sh add-seed")
    ap.add_argument("study")
    ap.add_argument("--variants", default="", help="variants to give one more seed")
    ap.add_argument("--unresolved", action="store_true",
                    help="the variants with a 95 %% interval that straddles 0 (from the finished runs)")
    a = ap.parse_args(argv)
    s = load_study(a.study)
    if a.unresolved == bool(a.variants):
        die("give --unresolved or --variants (one of them)")
    if a.unresolved:
        import ablation_report as rep
        _, rows = rep.compare(rep.load_results(a.study), "full", False)
        names = sorted({r["variant"] for r in rows if r["word"] == "unresolved"}, key=s["variants"].index)
    else:
        names = split_list(a.variants)
        bad = [n for n in names if n not in s["variants"]]
        if bad:
            die("--variants: %s not in the study (%s)" % (", ".join(bad), ", ".join(s["variants"])))
    if not names:
        say("no variant to add a seed to")
        return 0
    if "full" not in names:
        names.insert(0, "full")  # the differences are paired by seed: the baseline needs the seed too
    k = max(r["seed"] for r in s["runs"]) + 1  # a new seed for all of them: pairs by seed need the same one
    s["runs"] += [{"variant": v, "seed": k} for v in names]
    added = ["%s-seed%d" % (v, k) for v in names]
    save_study(a.study, s)
    say("added %s; `run` runs them" % ", ".join(added))
    return 0


def main(argv):
    cmds = {"init": cmd_init, "run": cmd_run, "status": cmd_status, "stop": cmd_stop, "add-seed": cmd_add_seed}
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if argv else 2
    if argv[0] == "report":
        import ablation_report
        return ablation_report.main(argv[1:])
    if argv[0] not in cmds:
        die("unknown command '%s' (init, run, status, stop, add-seed, report)" % argv[0])
    return cmds[argv[0]](argv[1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
