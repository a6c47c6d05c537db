/* run.h — the run directory's lifecycle, shared by pretraining (train/pretrain.c) and fine-tuning
 * (train/finetune.c):
 *
 *   run_threads                    the process's thread count (the one place a run sets it)
 *   run_open_fresh / run_open_resume  the directory made and locked; on --resume its checkpoint
 *                                  opened once (state now, tensors when the model is built)
 *   run_begin                      config.txt, cmdline.txt, metrics.jsonl (new, or cut back to the
 *                                  checkpoint's step), the first log lines
 *   run_step_done                  after each step: save now? stop now? (--save-every, --keep-every,
 *                                  the last step, --stop-after, SIGTERM/SIGINT); the stop message
 *   run_end                        the speed line, the logs closed, the lock released
 *
 * Only the lead (rank 0 under mpirun) writes the directory and the log; the other ranks go through
 * the same calls, which then do nothing but decide.
 *
 * The lock: a run directory has one writer.  The writer holds an exclusive flock(2) on RUNDIR/lock
 * for the whole run (under mpirun: rank 0 alone), and writes its PID, host and start time into it for
 * the message a second writer gets.  The kernel drops a flock when its holder dies, by any death
 * (SIGKILL, OOM killer, power loss), so a lock file left behind never blocks --resume.  Readers
 * (eval, export, dump, finetune --init) take no lock: they read only complete, sealed checkpoints. */
#ifndef DEBERTA_TRAIN_RUN_H
#define DEBERTA_TRAIN_RUN_H
#include <stddef.h>
#include "train/checkpoint.h"
#include "train/metrics.h"

/* What the command line decides for the process rather than for the run. */
typedef struct RunEnv {
    int threads;            /* --threads (or OMP_NUM_THREADS); <= 0: all cores, under mpirun the machine's cores shared by its ranks */
    const char *omp_wait;   /* the OpenMP wait policy in effect, for the log (NULL: not said) */
} RunEnv;

typedef struct RunDir {
    const char *out;        /* RUNDIR */
    int lead;               /* writes the directory and the log (rank 0) */
    int lock;               /* run_lock's descriptor, or -1 */
    int resume;
    char ckpt_path[4200];   /* RUNDIR/checkpoint.h5 */
    Checkpoint *ck;         /* --resume: the checkpoint, open until run_restore */
    CheckpointState st;     /* --resume: its state (step, counters, loader state, config, tokenizer) */
    long start, steps;      /* the first step of this invocation; the run's total */
    long save_every, keep_every, stop_after; /* 0: none */
    long done_here;         /* steps done by this invocation */
    MetricsLog log;
    Progress prog;
    StepClock clock;
} RunDir;

/* Sets the process's OpenMP and BLAS threads; returns the count. */
int run_threads(const RunEnv *env);

/* A fresh run in out: the directory made and locked; it must hold no run.  fatal on failure. */
void run_open_fresh(RunDir *d, const char *out, int lead);
/* --resume out: the directory locked (when it exists), out/checkpoint.h5 opened and its state read
 * (d->st).  fatal on failure. */
void run_open_resume(RunDir *d, const char *out, int lead);
/* --resume: the open checkpoint's parameters and moments into ps / mo (once the model is built), then
 * it is closed; d->st stays.  fatal on failure. */
void run_restore(RunDir *d, ParamSet *ps, OptimMoments *mo);

/* The directory's text files and the log, once the run is set: a fresh run writes config_text to
 * config.txt and starts metrics.jsonl; a resumed one (config.txt rewritten when config_text is given)
 * cuts metrics.jsonl back to its step and says "resuming".  Both append the command line to cmdline.txt.  Then the progress line starts. */
void run_begin(RunDir *d, const char *config_text, int argc, char **argv);
/* A line of the run's log (lead only): the first one is preceded by the build's line (version.h). */
void run_say(const RunDir *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* RUNDIR/checkpoint.h5 (and, keep, a numbered copy) of ps, mo and st; on failure one line saying what
 * is intact and how to go on. */
void run_save(const RunDir *d, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, int keep);

/* After step `completed`: *save (checkpoint now: --save-every, --keep-every, the last step, a stop) and
 * the return value: 1 when the run stops after that save (--stop-after, SIGTERM/SIGINT; never at the
 * last step).  *keep: keep a numbered copy.  The stop message is run_stopped's. */
int run_step_done(RunDir *d, long completed, int *save, int *keep);
void run_stopped(RunDir *d, long completed);
/* The speed line's first part (stepclock_print, lead, when steps were done): 1 if printed (the caller
 * may add to the line, then ends it). */
int run_speed(const RunDir *d, double tokens_per_step, const char *detail);
/* The logs closed, the signal handlers restored, the lock released. */
void run_end(RunDir *d);

#endif
