/* run.c — the run directory's lifecycle; see run.h. */
#include "train/run.h"
#include <errno.h>
#include <fcntl.h>
#include <omp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include "train/dist.h"
#include "train/signals.h"
#include "train/version.h"

/* Takes the writer's lock of rundir (which must exist).  The descriptor (held until the process
 * exits or run_unlock), or -1 with one line in err naming the holder ("run directory R is in use: pid
 * 1234 on host h has held R/lock since 2026-12-03 14:20:01 UTC ..."). */
static int run_lock(const char *rundir, char *err, size_t errlen);
/* Empties the lock file's text and releases the lock (fd < 0: nothing).  A run that ends through
 * exit() (fatal included) has its lock text emptied too; only a killed one leaves it. */
static void run_unlock(int fd);

int run_threads(const RunEnv *env) {
    int n = env ? env->threads : 0;
    if (n <= 0 && dist_world() > 1) n = MAX(1, omp_get_num_procs() / dist_local_size()); /* ranks on one machine share its cores */
    threads_set(n);
    return omp_get_max_threads();
}

void run_open_fresh(RunDir *d, const char *out, int lead) {
    char err[1024];
    d->out = out;
    d->lead = lead;
    d->lock = -1;
    if (lead && (run_mkdir(out, err, sizeof err) || (d->lock = run_lock(out, err, sizeof err)) < 0 || run_check_fresh(out, err, sizeof err)))
        fatal("%s", err);
}

void run_open_resume(RunDir *d, const char *out, int lead) {
    char err[1024];
    d->out = out;
    d->lead = lead;
    d->lock = -1;
    d->resume = 1;
    if (snprintf(d->ckpt_path, sizeof d->ckpt_path, "%s/checkpoint.h5", out) >= (int)sizeof d->ckpt_path)
        fatal("--resume: run directory path too long (%zu bytes)", strlen(out));
    if (lead && access(out, F_OK) == 0 && (d->lock = run_lock(out, err, sizeof err)) < 0) fatal("%s", err);
    if (access(d->ckpt_path, F_OK) != 0)
        fatal("--resume %s: no checkpoint.h5 there, nothing to resume (a run stopped before its first checkpoint starts again with "
              "--out %s)", out, out);
    d->ck = checkpoint_open(d->ckpt_path, &d->st, err, sizeof err);
    if (!d->ck) fatal("%s (nothing to resume)", err);
    d->start = d->st.step;
}

void run_restore(RunDir *d, ParamSet *ps, OptimMoments *mo) {
    char err[1024];
    if (checkpoint_read_tensors(d->ck, ps, mo, err, sizeof err)) fatal("%s", err);
    checkpoint_close(d->ck);
    d->ck = NULL;
}

static int g_said; /* the build's line was printed */

void run_say(const RunDir *d, const char *fmt, ...) {
    if (!d->lead) return;
    if (!g_said++) fprintf(stderr, "%s\n", deberta_version());
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
}

void run_begin(RunDir *d, const char *config_text, int argc, char **argv) {
    char err[1024];
    if (dist_world() == 1) signals_install(d->out); /* under mpirun a SIGTERM means another rank failed (train/dist.h) */
    if (!d->lead) return;
    if (d->resume) {
        if ((config_text && run_write_text(d->out, "config.txt", config_text, err, sizeof err)) ||
            metrics_open(&d->log, d->out, d->start, err, sizeof err) || run_append_cmdline(d->out, argc, argv, err, sizeof err))
            fatal("%s", err);
        run_say(d, "resuming %s at step %ld of %ld\n", d->out, d->start, d->steps);
    } else if (run_write_text(d->out, "config.txt", config_text, err, sizeof err) || run_append_cmdline(d->out, argc, argv, err, sizeof err) ||
               metrics_open(&d->log, d->out, -1, err, sizeof err)) {
        fatal("%s", err);
    }
    progress_init(&d->prog, d->start, d->steps);
}

void run_save(const RunDir *d, const ParamSet *ps, const OptimMoments *mo, const CheckpointState *st, int keep) {
    char err[1024];
    if (!checkpoint_save(d->out, ps, mo, st, keep, err, sizeof err)) return;
    char prev[4200];
    snprintf(prev, sizeof prev, "%s/checkpoint.h5", d->out);
    if (access(prev, F_OK) == 0) fatal("%s; the previous checkpoint is intact: free space, then continue with --resume %s", err, d->out);
    fatal("%s; free space, then start the run again with --out %s (no checkpoint was written)", err, d->out);
}

int run_step_done(RunDir *d, long completed, int *save, int *keep) {
    d->done_here++;
    const int last = completed == d->steps;
    const int stop = (d->stop_after > 0 && d->done_here >= d->stop_after) || signals_stop_requested();
    *keep = d->keep_every > 0 && completed % d->keep_every == 0;
    *save = (d->save_every > 0 && completed % d->save_every == 0) || *keep || last || stop;
    return stop && !last;
}

void run_stopped(RunDir *d, long completed) {
    if (!d->lead) return;
    progress_done(&d->prog);
    const int sig = signals_stop_requested();
    if (sig)
        fprintf(stderr, "stopped by %s after step %ld: checkpoint written to %s/checkpoint.h5; continue with --resume %s\n", signals_name(sig),
                completed, d->out, d->out);
    else
        fprintf(stderr, "stopped after %ld steps (--stop-after); resume with --resume\n", d->done_here);
}

int run_speed(const RunDir *d, double tokens_per_step, const char *detail) {
    if (!d->lead || d->done_here == 0) return 0;
    stepclock_print(&d->clock, tokens_per_step, detail);
    return 1;
}

void run_end(RunDir *d) {
    if (d->lead) progress_done(&d->prog);
    metrics_close(&d->log);
    signals_restore();
    checkpoint_close(d->ck);
    d->ck = NULL;
    checkpoint_state_free(&d->st);
    run_unlock(d->lock);
    d->lock = -1;
}

/* The held lock's descriptor: a run that ends through exit() (fatal included) empties the lock file's
 * text, so that it names no process that has gone; only a killed run leaves its text behind. */
static int g_lock_fd = -1;
static void empty_lock(void) {
    if (g_lock_fd >= 0 && ftruncate(g_lock_fd, 0) != 0) { /* the text is only informative; the flock is the lock */ }
}

static int run_lock(const char *rundir, char *err, size_t errlen) {
    char path[4200];
    if (snprintf(path, sizeof path, "%s/lock", rundir) >= (int)sizeof path) return errf(err, errlen, "run directory path too long: %s", rundir);
    const int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return errf(err, errlen, "cannot open the run directory's lock %s: %s", path, strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
        const int e = errno;
        char text[512] = "", pid[32] = "?", host[256] = "?", since[64] = "?";
        const ssize_t n = pread(fd, text, sizeof text - 1, 0);
        close(fd);
        if (e != EWOULDBLOCK) return errf(err, errlen, "cannot lock %s: %s", path, strerror(e));
        if (n > 0) {
            text[n] = 0;
            for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
                if (!strncmp(line, "pid = ", 6)) snprintf(pid, sizeof pid, "%s", line + 6);
                else if (!strncmp(line, "host = ", 7)) snprintf(host, sizeof host, "%s", line + 7);
                else if (!strncmp(line, "since = ", 8)) snprintf(since, sizeof since, "%s", line + 8);
            }
        }
        return errf(err, errlen, "run directory %s is in use: pid %s on host %s has held %s since %s (one run writes a directory at a "
                                 "time: wait for it to end, or stop it and continue with --resume)", rundir, pid, host, path, since);
    }
    char host[256] = "unknown", since[64], text[512];
    if (gethostname(host, sizeof host) != 0) snprintf(host, sizeof host, "unknown");
    host[sizeof host - 1] = 0;
    const time_t now = time(NULL);
    struct tm tm;
    strftime(since, sizeof since, "%Y-%m-%d %H:%M:%S UTC", gmtime_r(&now, &tm));
    const int len = snprintf(text, sizeof text, "pid = %ld\nhost = %s\nsince = %s\n", (long)getpid(), host, since);
    if (ftruncate(fd, 0) != 0 || pwrite(fd, text, (size_t)len, 0) != len) {
        const int e = errno;
        close(fd);
        return errf(err, errlen, "cannot write %s: %s", path, strerror(e));
    }
    static int registered;
    if (!registered++) atexit(empty_lock);
    g_lock_fd = fd;
    return fd;
}

static void run_unlock(int fd) {
    if (fd < 0) return;
    empty_lock();
    g_lock_fd = -1;
    close(fd);
}
