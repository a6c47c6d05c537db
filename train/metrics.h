/* metrics.h — RUNDIR/metrics.jsonl, the live progress line, and the run directory's text files.
 *
 * metrics.jsonl: one JSON object per line, written and flushed per logged step and per evaluation.
 * Numbers are printed with %.9g (a float round-trips), non-finite numbers as null.  Every line
 * has "kind" and "step" first; the other keys are the caller's.  The keys below are the ones
 * scripts/plot-run.sh reads (docs/FORMATS.md, "Metrics log").  Wall-clock values (tokens/s,
 * elapsed) belong on the progress line, not in metrics.jsonl, so that two runs with the same seed
 * write identical files and a resumed run continues its file bit-identically.
 *
 * Progress line (stderr): on a TTY one line rewritten in place with '\r' —
 *   step 120/1000 | G 5.123 | D 0.412 | RTD acc 0.871 | 12.3k tok/s | ETA 3m12s
 * and otherwise the same text as a plain line every `interval` seconds (and at the first and last
 * step), so logs of batch jobs stay readable.
 */
#ifndef DEBERTA_METRICS_H
#define DEBERTA_METRICS_H
#include <stddef.h>
#include <stdio.h>

/* "kind" values and the keys plot-run.sh knows. */
#define M_KIND_TRAIN "train"
#define M_KIND_EVAL "eval"
#define M_G_LOSS "g_loss"          /* generator MLM loss (mean over masked tokens) */
#define M_D_LOSS "d_loss"          /* discriminator RTD loss (mean BCE, before λ) */
#define M_MLM_ACC "mlm_acc"        /* generator accuracy on masked tokens */
#define M_RTD_ACC "rtd_acc"        /* discriminator accuracy over real tokens */
#define M_RTD_AUC "rtd_auc"        /* discriminator ROC AUC (eval) */
#define M_G_LR "g_lr"
#define M_D_LR "d_lr"
#define M_G_GRAD_NORM "g_grad_norm"
#define M_D_GRAD_NORM "d_grad_norm"
#define M_SKIPPED "skipped"        /* 1 when the step was skipped (non-finite loss or norm) */

typedef struct MetricsLog {
    FILE *f;
    char path[4096];
} MetricsLog;

/* Opens RUNDIR/metrics.jsonl.  resume_step < 0: a new file (truncated).  resume_step ≥ 0 (resuming
 * from a checkpoint of that step): lines with "step" > resume_step — logged by the interrupted run
 * after its last checkpoint — and a torn last line are dropped (atomically), then new lines are
 * appended.  Returns 0 or -1 with a message in err. */
int metrics_open(MetricsLog *m, const char *rundir, long resume_step, char *err, size_t errlen);
void metrics_close(MetricsLog *m);

/* One line under construction (fixed buffer, no allocation). */
typedef struct MetricsRecord {
    char buf[4096];
    size_t len;
    int overflow;
} MetricsRecord;

void mrec_begin(MetricsRecord *r, const char *kind, long step);
void mrec_num(MetricsRecord *r, const char *key, double v);     /* %.9g, NaN/Inf → null */
void mrec_int(MetricsRecord *r, const char *key, long long v);
void mrec_str(MetricsRecord *r, const char *key, const char *s); /* JSON-escaped */
/* The finished object as text (no newline), e.g. for tests. */
const char *mrec_text(MetricsRecord *r);
/* Appends the record as one line and flushes.  Returns 0, or -1 (write error, or the record
 * overflowed its buffer) with a message in err. */
int metrics_write(MetricsLog *m, MetricsRecord *r, char *err, size_t errlen);

/* ---- progress line ---- */
typedef struct Progress {
    FILE *out;              /* stderr */
    int tty;                /* isatty(fileno(out)) unless forced */
    long start_step, total_steps;
    double t_start, t_last;
    long long tokens;       /* since start */
    double interval;        /* seconds between plain lines; default 30 */
    int shown;              /* a live line is on screen */
    int printed_plain;
} Progress;

/* start_step: the step the run starts from (0, or the checkpoint's step on resume). */
void progress_init(Progress *p, long start_step, long total_steps);
/* The same with an explicit stream and TTY mode (tests). */
void progress_init_stream(Progress *p, FILE *out, int tty, long start_step, long total_steps);
/* After step `step` (1-based count of completed steps) that processed `tokens` tokens. */
void progress_update(Progress *p, long step, double g_loss, double d_loss, double rtd_acc, long long tokens);
/* The same for any run: `fields` (e.g. "loss 0.412 | acc 0.871") stands where G, D and RTD acc stand. */
void progress_update_fields(Progress *p, long step, const char *fields, long long tokens);
/* A message on its own line that does not garble the live line (e.g. "step 37 skipped: ..."). */
void progress_note(Progress *p, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Ends the live line (newline on a TTY). */
void progress_done(Progress *p);
/* "45s", "3m12s", "1h02m", "2d03h" into buf; "?" for negative or non-finite. */
char *format_duration(double seconds, char *buf, size_t len);
/* The progress text for the given values (what progress_update prints), into buf. */
char *progress_text(const Progress *p, long step, double g_loss, double d_loss, double rtd_acc, double tokens_per_s, double eta_s,
                    char *buf, size_t len);

/* ---- the `speed:` line ---- */
/* Wall time of the training steps of one invocation (evaluations and checkpoints outside).  The
 * first step is kept apart: it maps the step's memory (tape arena, gradients, scratch) and takes
 * several times as long as the next ones (docs/PERFORMANCE.md), so an average over a short
 * invocation that includes it says more about the page faults than about the kernels. */
typedef struct StepClock {
    double first_s, rest_s; /* the invocation's first step; the others */
    long n;                 /* steps timed */
} StepClock;
void stepclock_add(StepClock *c, double seconds);
/* Milliseconds per step over the steps after the first (over the first alone when it is the only
 * one); *n_steps = the steps that average covers. */
double stepclock_ms(const StepClock *c, long *n_steps);
/* "speed: X tokens/s, Y ms per step over steps 2-N of this invocation (the first, F ms, excluded: it
 * maps the step's memory; DETAIL)" to stderr, without the newline (callers may append). */
void stepclock_print(const StepClock *c, double tokens_per_step, const char *detail);

/* ---- run directory ---- */
/* mkdir -p rundir. */
int run_mkdir(const char *rundir, char *err, size_t errlen);
/* 0 if rundir does not exist or holds no run yet (no checkpoint.h5: a run stopped before its first
 * checkpoint leaves a reusable directory); else -1 with
 * "run directory X already holds a run (checkpoint.h5); continue it with --resume X or choose another
 * --out" — so that a fresh run never overwrites an earlier one. */
int run_check_fresh(const char *rundir, char *err, size_t errlen);
/* Writes RUNDIR/name atomically (temp file + rename), e.g. the resolved config. */
int run_write_text(const char *rundir, const char *name, const char *text, char *err, size_t errlen);
/* Appends argv as one shell-quoted line to RUNDIR/cmdline.txt (a resumed run adds its line). */
int run_append_cmdline(const char *rundir, int argc, char **argv, char *err, size_t errlen);
#endif
