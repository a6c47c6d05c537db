/* metrics.c — metrics.jsonl, progress line, run directory files.  See metrics.h. */
#include "train/metrics.h"
#include "train/version.h"
#include "autograd/base/util.h"
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------- metrics.jsonl ---------------- */

/* The "step" of one line (*found = 0 when it has none). */
static long line_step(const char *line, int *found) {
    const char *k = strstr(line, "\"step\":");
    *found = k != NULL;
    return k ? strtol(k + 7, NULL, 10) : 0;
}

/* Keeps complete lines with step ≤ keep_upto; rewrites the file atomically. */
static int truncate_after(const char *path, long keep_upto, char *err, size_t errlen) {
    FILE *in = fopen(path, "r");
    if (!in) return errno == ENOENT ? 0 : errf(err, errlen, "metrics log %s: cannot read: %s", path, strerror(errno));
    AtomicFile af;
    if (atomic_open(&af, path) != 0) {
        fclose(in);
        return errf(err, errlen, "metrics log %s: cannot create %s.tmp: %s", path, path, strerror(errno));
    }
    FILE *out = af.f;
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, in)) > 0) {
        if (line[n - 1] != '\n') break; /* torn last line of a killed run */
        int found;
        const long s = line_step(line, &found);
        if (found && s > keep_upto) continue;
        fwrite(line, 1, (size_t)n, out);
    }
    free(line);
    fclose(in);
    if (atomic_commit(&af) != 0) return errf(err, errlen, "metrics log %s: cannot replace it: %s", path, strerror(errno));
    return 0;
}

int metrics_open(MetricsLog *m, const char *rundir, long resume_step, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    snprintf(m->path, sizeof m->path, "%s/metrics.jsonl", rundir);
    if (resume_step >= 0 && truncate_after(m->path, resume_step, err, errlen) < 0) return -1;
    m->f = fopen(m->path, resume_step >= 0 ? "a" : "w");
    if (!m->f) return errf(err, errlen, "metrics log %s: cannot open: %s", m->path, strerror(errno));
    return 0;
}

void metrics_close(MetricsLog *m) {
    if (m->f) fclose(m->f);
    m->f = NULL;
}

static void rec_append(MetricsRecord *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void rec_append(MetricsRecord *r, const char *fmt, ...) {
    if (r->overflow) return;
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(r->buf + r->len, sizeof r->buf - r->len, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof r->buf - r->len - 2) { /* keep room for "}" */
        r->overflow = 1;
        r->buf[r->len] = 0;
        return;
    }
    r->len += (size_t)k;
}

static void rec_escaped(MetricsRecord *r, const char *s) {
    rec_append(r, "\"");
    for (const unsigned char *p = (const unsigned char *)s; *p && !r->overflow; p++) {
        if (*p == '"') rec_append(r, "\\\"");
        else if (*p == '\\') rec_append(r, "\\\\");
        else if (*p == '\n') rec_append(r, "\\n");
        else if (*p == '\t') rec_append(r, "\\t");
        else if (*p == '\r') rec_append(r, "\\r");
        else if (*p < 0x20) rec_append(r, "\\u%04x", *p);
        else rec_append(r, "%c", *p);
    }
    rec_append(r, "\"");
}

static void rec_key(MetricsRecord *r, const char *key) {
    rec_append(r, ",");
    rec_escaped(r, key);
    rec_append(r, ":");
}

void mrec_begin(MetricsRecord *r, const char *kind, long step) {
    r->len = 0;
    r->overflow = 0;
    r->buf[0] = 0;
    rec_append(r, "{\"kind\":");
    rec_escaped(r, kind);
    rec_append(r, ",\"step\":%ld", step);
}

void mrec_num(MetricsRecord *r, const char *key, double v) {
    rec_key(r, key);
    if (isfinite(v)) rec_append(r, "%.9g", v);
    else rec_append(r, "null");
}

void mrec_int(MetricsRecord *r, const char *key, long long v) {
    rec_key(r, key);
    rec_append(r, "%lld", v);
}

void mrec_str(MetricsRecord *r, const char *key, const char *s) {
    rec_key(r, key);
    rec_escaped(r, s ? s : "");
}

const char *mrec_text(MetricsRecord *r) {
    /* the closing brace is added to a copy position that rec_append reserved */
    r->buf[r->len] = '}';
    r->buf[r->len + 1] = 0;
    return r->buf;
}

int metrics_write(MetricsLog *m, MetricsRecord *r, char *err, size_t errlen) {
    if (r->overflow) return errf(err, errlen, "metrics log %s: a record is longer than %zu bytes", m->path, sizeof r->buf);
    const char *t = mrec_text(r);
    if (!m->f || fprintf(m->f, "%s\n", t) < 0 || fflush(m->f) != 0)
        return errf(err, errlen, "metrics log %s: cannot write: %s", m->path, strerror(errno));
    return 0;
}

/* ---------------- progress line ---------------- */

void progress_init_stream(Progress *p, FILE *out, int tty, long start_step, long total_steps) {
    memset(p, 0, sizeof *p);
    p->out = out;
    p->tty = tty;
    p->start_step = start_step;
    p->total_steps = total_steps;
    p->t_start = p->t_last = now_seconds();
    p->interval = 30.0;
}

void progress_init(Progress *p, long start_step, long total_steps) {
    progress_init_stream(p, stderr, isatty(fileno(stderr)), start_step, total_steps);
}

char *format_duration(double s, char *buf, size_t len) {
    if (!isfinite(s) || s < 0) {
        snprintf(buf, len, "?");
        return buf;
    }
    const long t = (long)(s + 0.5);
    if (t < 60) snprintf(buf, len, "%lds", t);
    else if (t < 3600) snprintf(buf, len, "%ldm%02lds", t / 60, t % 60);
    else if (t < 86400) snprintf(buf, len, "%ldh%02ldm", t / 3600, (t % 3600) / 60);
    else snprintf(buf, len, "%ldd%02ldh", t / 86400, (t % 86400) / 3600);
    return buf;
}

static void fmt_num(char *buf, size_t len, const char *f, double v) {
    if (isfinite(v)) snprintf(buf, len, f, v);
    else snprintf(buf, len, "%s", isnan(v) ? "nan" : "inf");
}

/* The pretraining run's fields of the line: "G 5.1234 | D 0.4123 | RTD acc 0.871". */
static void pretrain_fields(char *buf, size_t len, double g_loss, double d_loss, double rtd_acc) {
    char g[32], d[32], a[32];
    fmt_num(g, sizeof g, "%.4f", g_loss);
    fmt_num(d, sizeof d, "%.4f", d_loss);
    fmt_num(a, sizeof a, "%.3f", rtd_acc);
    snprintf(buf, len, "G %s | D %s | RTD acc %s", g, d, a);
}

/* The line for the given fields, tokens/s and ETA (without '\r' or newline). */
static void line_text(const Progress *p, long step, const char *fields, double tps, double eta, char *buf, size_t len) {
    char rate[32], e[32];
    if (!isfinite(tps) || tps <= 0) snprintf(rate, sizeof rate, "?");
    else if (tps >= 1e6) snprintf(rate, sizeof rate, "%.2fM", tps / 1e6);
    else if (tps >= 1e3) snprintf(rate, sizeof rate, "%.1fk", tps / 1e3);
    else snprintf(rate, sizeof rate, "%.0f", tps);
    format_duration(eta, e, sizeof e);
    snprintf(buf, len, "step %ld/%ld | %s | %s tok/s | ETA %s", step, p->total_steps, fields, rate, e);
}

char *progress_text(const Progress *p, long step, double g_loss, double d_loss, double rtd_acc, double tps, double eta, char *buf,
                    size_t len) {
    char fields[128];
    pretrain_fields(fields, sizeof fields, g_loss, d_loss, rtd_acc);
    line_text(p, step, fields, tps, eta, buf, len);
    return buf;
}

void progress_update(Progress *p, long step, double g_loss, double d_loss, double rtd_acc, long long tokens) {
    char fields[128];
    pretrain_fields(fields, sizeof fields, g_loss, d_loss, rtd_acc);
    progress_update_fields(p, step, fields, tokens);
}

void progress_update_fields(Progress *p, long step, const char *fields, long long tokens) {
    const double t = now_seconds(), el = t - p->t_start;
    p->tokens += tokens;
    const long done = step - p->start_step;
    const int last = step >= p->total_steps;
    if (p->tty) {
        if (!last && p->shown && t - p->t_last < 0.1) return; /* at most 10 redraws a second */
    } else if (!last && p->printed_plain && t - p->t_last < p->interval) {
        return;
    }
    const double tps = el > 0 ? (double)p->tokens / el : NAN;
    const double eta = done > 0 ? el / (double)done * (double)(p->total_steps - step) : NAN;
    char line[512];
    line_text(p, step, fields, tps, eta, line, sizeof line);
    if (p->tty) {
        fprintf(p->out, "\r%s\033[K", line);
        p->shown = 1;
    } else {
        fprintf(p->out, "%s\n", line);
        p->printed_plain = 1;
    }
    fflush(p->out);
    p->t_last = t;
}

void progress_note(Progress *p, const char *fmt, ...) {
    if (p->tty && p->shown) fputs("\r\033[K", p->out);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(p->out, fmt, ap);
    va_end(ap);
    fputc('\n', p->out);
    p->shown = 0; /* redrawn at the next update */
    fflush(p->out);
}

void progress_done(Progress *p) {
    if (p->tty && p->shown) fputc('\n', p->out);
    p->shown = 0;
    fflush(p->out);
}

/* ---------------- run directory ---------------- */

int run_mkdir(const char *rundir, char *err, size_t errlen) {
    if (mkdir_p(rundir) != 0) return errf(err, errlen, "cannot create directory %s: %s", rundir, strerror(errno));
    struct stat sb;
    if (stat(rundir, &sb) != 0 || !S_ISDIR(sb.st_mode)) return errf(err, errlen, "run directory %s exists and is not a directory", rundir);
    return 0;
}

/* Only a checkpoint makes a run: a directory whose run stopped before its first checkpoint (killed,
 * refused, out of disk) is reused, its config.txt and metrics.jsonl rewritten. */
int run_check_fresh(const char *rundir, char *err, size_t errlen) {
    char p[4200];
    snprintf(p, sizeof p, "%s/checkpoint.h5", rundir);
    if (access(p, F_OK) == 0)
        return errf(err, errlen, "run directory %s already holds a run (checkpoint.h5); continue it with --resume %s or choose another --out",
                    rundir, rundir);
    return 0;
}

int run_write_text(const char *rundir, const char *name, const char *text, char *err, size_t errlen) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", rundir, name);
    if (write_file_atomic(path, text, strlen(text)) != 0) return errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
    return 0;
}

static int needs_quotes(const char *s) {
    if (!*s) return 1;
    for (; *s; s++)
        if (!(('a' <= *s && *s <= 'z') || ('A' <= *s && *s <= 'Z') || ('0' <= *s && *s <= '9') || strchr("-_./=:,+@%", *s))) return 1;
    return 0;
}

/* Appends s to buf at *k, as much as fits in len bytes with the NUL. */
static void put(char *buf, size_t len, size_t *k, const char *s) {
    for (; *s; s++)
        if (*k + 1 < len) buf[(*k)++] = *s;
}

/* Shell-quotes argv into buf (words that need it in single quotes, a quote in them as '\''). */
static char *shell_join(int argc, char **argv, char *buf, size_t len) {
    size_t k = 0;
    for (int i = 0; i < argc; i++) {
        if (i) put(buf, len, &k, " ");
        if (!needs_quotes(argv[i])) {
            put(buf, len, &k, argv[i]);
            continue;
        }
        put(buf, len, &k, "'");
        for (const char *s = argv[i]; *s; s++) {
            const char one[2] = {*s, 0};
            put(buf, len, &k, *s == '\'' ? "'\\''" : one);
        }
        put(buf, len, &k, "'");
    }
    buf[k] = 0;
    return buf;
}

int run_append_cmdline(const char *rundir, int argc, char **argv, char *err, size_t errlen) {
    char path[4200];
    snprintf(path, sizeof path, "%s/cmdline.txt", rundir);
    size_t need = 16;
    for (int i = 0; i < argc; i++) need += 4 * strlen(argv[i]) + 3;
    char *line = xmalloc(need);
    shell_join(argc, argv, line, need);
    FILE *f = fopen(path, "a");
    int ok = f && fprintf(f, "# %s\n%s\n", deberta_version(), line) >= 0;
    if (f) ok &= fclose(f) == 0;
    free(line);
    return ok ? 0 : errf(err, errlen, "cannot write %s: %s", path, strerror(errno));
}

void stepclock_add(StepClock *c, double seconds) {
    if (c->n++ == 0) c->first_s = seconds;
    else c->rest_s += seconds;
}

double stepclock_ms(const StepClock *c, long *n_steps) {
    *n_steps = c->n > 1 ? c->n - 1 : c->n;
    return c->n > 1 ? c->rest_s / (double)(c->n - 1) * 1e3 : c->first_s * 1e3;
}

void stepclock_print(const StepClock *c, double tokens_per_step, const char *detail) {
    long n;
    const double ms = stepclock_ms(c, &n);
    if (c->n > 1)
        fprintf(stderr, "speed: %.0f tokens/s, %.1f ms per step over steps 2-%ld of this invocation (the first, %.0f ms, excluded: it "
                        "maps the step's memory; %s)", tokens_per_step / ms * 1e3, ms, c->n, c->first_s * 1e3, detail);
    else
        fprintf(stderr, "speed: %.0f tokens/s, %.1f ms for the only step of this invocation (a first step, which also maps the "
                        "step's memory; %s)", tokens_per_step / ms * 1e3, ms, detail);
}
