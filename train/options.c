/* options.c — TrainOptions defaults and the key table (see options.h). */
#include "train/options.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"
#include "model/config.h"

void train_options_default(TrainOptions *o) {
    memset(o, 0, sizeof *o);
    o->steps = 2000;
    o->batch = 16;
    o->accum = 1;
    o->seed = 1234;
    o->threads = 0;
    o->mask_mode = MASK_OFFICIAL;
    o->mask_prob = 0.15;
    optim_config_default(&o->opt, OPTIM_ADAMW);
    o->opt.lr = 5e-4;
    o->d_lr = 0;
    o->warmup = -1;
    o->eval_every = 250;
    o->eval_batches = 16;
    o->save_every = 250;
    o->log_every = 10;
    o->keep_every = 0;
    o->max_bad_steps = 5;
    o->short_seq_len = -1; /* auto: train_options_resolve */
    o->short_frac = 0.5;
}

/* The default curriculum (docs/RECIPE.md): at max_seq_len >= 128 the first half of the steps read
 * 32-token sequences.  Measured at 128 tokens only, where without it the tiny discriminator flags
 * nothing within any budget tried; shorter sequences learn without it and keep the old recipe. */
void train_options_resolve(TrainOptions *o, int max_seq_len) {
    if (o->short_seq_len < 0) o->short_seq_len = max_seq_len >= TRAIN_AUTO_CURRICULUM_MIN_T ? TRAIN_AUTO_SHORT_SEQ_LEN : 0;
}

long train_short_steps(const TrainOptions *o, int T) {
    if (o->short_seq_len < 3 || o->short_seq_len >= T || o->short_frac <= 0) return 0;
    return llround(o->short_frac * (double)o->steps);
}

int train_short_batch(const TrainOptions *o, int T) {
    const long b = (long)o->batch * T / (o->short_seq_len > 0 ? o->short_seq_len : 1);
    return (int)(b > 0 ? b : 1);
}

/* ---- the key table ---- */


typedef enum { O_LONG, O_INT, O_U64, O_DOUBLE, O_MASK_MODE, O_OPTIMIZER } OptKind;

enum {
    O_RESUME_OK = 1, /* --resume accepts the flag (the rest come from the saved run) */
    O_SKIP_ZERO = 2, /* persisted only when not 0 */
    O_NO_FLAG = 4,   /* persisted only: no command-line flag sets it */
    O_CURRICULUM = 8, /* persisted only when the run has a curriculum (short_seq_len > 0) */
};

typedef struct {
    const char *flag;   /* `--flag` */
    const char *alias;  /* a second spelling of the flag, or NULL */
    const char *key;    /* `train_<key>` in the config text; NULL = not persisted */
    OptKind kind;
    size_t off;
    double lo, hi;      /* accepted: lo <= v, and v <= hi (integers) or v < hi (numbers); hi 0 = no bound */
    const char *want;   /* "--flag wants <want>, got '...'" */
    int flags;
} OptKey;

#define F(m) offsetof(TrainOptions, m)
/* Persisted keys are written in this order (the order of every existing config.txt). */
static const OptKey KEYS[] = {
    {"steps", NULL, "steps", O_LONG, F(steps), 1, 0, "a positive integer", 0},
    {"batch", NULL, "batch", O_INT, F(batch), 1, 0, "a positive integer", 0},
    {"accum", NULL, "accum", O_INT, F(accum), 1, 31, "an integer in 1..31", 0},
    {"seed", NULL, "seed", O_U64, F(seed), 0, 0, "a non-negative integer", 0},
    {"mask-mode", "mask_mode", "mask_mode", O_MASK_MODE, F(mask_mode), 0, 0, "official, random or bert", 0},
    {"mask-prob", "mask_prob", "mask_prob", O_DOUBLE, F(mask_prob), 1e-6, 1, "a number in (0, 1)", 0},
    {"optimizer", NULL, "optimizer", O_OPTIMIZER, F(opt), 0, 0, "adamw or xadam", 0},
    {"lr", NULL, "lr", O_DOUBLE, F(opt.lr), 0, 0, "a number >= 0", 0},
    {"d-lr", NULL, "d_lr", O_DOUBLE, F(d_lr), 0, 0, "a number >= 0", 0},
    {"warmup", NULL, "warmup", O_LONG, F(warmup), 0, 0, "an integer >= 0", 0},
    {"beta1", NULL, "beta1", O_DOUBLE, F(opt.beta1), 0, 1, "a number in [0, 1)", 0},
    {"beta2", NULL, "beta2", O_DOUBLE, F(opt.beta2), 0, 1, "a number in [0, 1)", 0},
    {"eps", NULL, "eps", O_DOUBLE, F(opt.eps), 0, 0, "a number >= 0", 0},
    {"weight-decay", NULL, "weight_decay", O_DOUBLE, F(opt.weight_decay), 0, 0, "a number >= 0", 0},
    {"max-grad-norm", NULL, "max_grad_norm", O_DOUBLE, F(opt.max_grad_norm), 0, 0, "a number >= 0", 0},
    {"eval-every", NULL, "eval_every", O_LONG, F(eval_every), 0, 0, "an integer >= 0", 0},
    {"eval-batches", NULL, "eval_batches", O_LONG, F(eval_batches), 1, 0, "a positive integer", 0},
    {"save-every", NULL, "save_every", O_LONG, F(save_every), 0, 0, "an integer >= 0", 0},
    {"log-every", NULL, "log_every", O_LONG, F(log_every), 1, 0, "a positive integer", 0},
    {"max-bad-steps", NULL, "max_bad_steps", O_INT, F(max_bad_steps), 1, 0, "a positive integer", 0},
    {"keep-every", NULL, "keep_every", O_LONG, F(keep_every), 0, 0, "an integer >= 0", O_SKIP_ZERO},
    {"short-seq-len", NULL, "short_seq_len", O_INT, F(short_seq_len), 0, 0, "an integer >= 0 (0 = no curriculum)", O_SKIP_ZERO},
    {"short-frac", NULL, "short_frac", O_DOUBLE, F(short_frac), 0, 1, "a number in [0, 1)", O_CURRICULUM},
    {"ranks", NULL, "ranks", O_LONG, F(ranks), 0, 0, "", O_SKIP_ZERO | O_NO_FLAG},
    {"zero", NULL, "zero", O_LONG, F(zero), 0, 1, "0 or 1", O_SKIP_ZERO},
    {"minutes", NULL, NULL, O_DOUBLE, F(minutes), 1e-3, 0, "a positive number", 0},
    {"threads", NULL, NULL, O_INT, F(threads), 1, 0, "a positive integer", O_RESUME_OK},
    {"stop-after", NULL, NULL, O_LONG, F(stop_after), 1, 0, "a positive integer", O_RESUME_OK},
};
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

static int parse_long(const char *s, long lo, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo) return -1;
    *out = v;
    return 0;
}

static int parse_double(const char *s, double lo, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || *end || end == s || !isfinite(v) || v < lo) return -1;
    *out = v;
    return 0;
}

/* The optimizer switch keeps the peak learning rate and resets the rest to the kind's defaults. */
static void set_optimizer(TrainOptions *o, OptimKind kind) {
    const double lr = o->opt.lr;
    optim_config_default(&o->opt, kind);
    o->opt.lr = lr;
}

/* A checked value of the table (the command line). */
static int set_checked(TrainOptions *o, const OptKey *k, const char *v) {
    void *p = (char *)o + k->off;
    long l;
    double d;
    switch (k->kind) {
    case O_LONG:
    case O_INT:
    case O_U64:
        if (parse_long(v, (long)k->lo, &l) || (k->hi > 0 && l > (long)k->hi)) return -1;
        if (k->kind == O_LONG) *(long *)p = l;
        else if (k->kind == O_INT) *(int *)p = (int)l;
        else *(uint64_t *)p = (uint64_t)l;
        return 0;
    case O_DOUBLE:
        if (parse_double(v, k->lo, &d) || (k->hi > 0 && d >= k->hi)) return -1;
        *(double *)p = d;
        return 0;
    case O_MASK_MODE: return mask_mode_parse(v, (MaskMode *)p) ? -1 : 0;
    case O_OPTIMIZER:
        if (!strcmp(v, "adamw")) set_optimizer(o, OPTIM_ADAMW);
        else if (!strcmp(v, "xadam")) set_optimizer(o, OPTIM_XADAM);
        else return -1;
        return 0;
    }
    return -1;
}

int train_options_set_flag(TrainOptions *o, const char *flag, const char *value, int *resume_ok, char *err, size_t errlen) {
    for (int i = 0; i < N_KEYS; i++) {
        const OptKey *k = &KEYS[i];
        if (k->flags & O_NO_FLAG) continue;
        if (strcmp(flag, k->flag) && !(k->alias && !strcmp(flag, k->alias))) continue;
        *resume_ok = (k->flags & O_RESUME_OK) != 0;
        if (set_checked(o, k, value)) return errf(err, errlen, "--%s wants %s, got '%s'", k->flag, k->want, value);
        return 1;
    }
    return 0;
}

static int value_is_zero(OptKind kind, const void *p) {
    switch (kind) {
    case O_LONG: return *(const long *)p == 0;
    case O_INT: return *(const int *)p == 0;
    case O_DOUBLE: return *(const double *)p == 0;
    default: return 0;
    }
}

char *train_options_to_text(const TrainOptions *o) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    for (int i = 0; i < N_KEYS; i++) {
        const OptKey *k = &KEYS[i];
        if (!k->key) continue;
        const void *p = (const char *)o + k->off;
        if ((k->flags & O_SKIP_ZERO) && value_is_zero(k->kind, p)) continue;
        if ((k->flags & O_CURRICULUM) && o->short_seq_len <= 0) continue;
        fprintf(f, "train_%s = ", k->key);
        switch (k->kind) {
        case O_LONG: fprintf(f, "%ld\n", *(const long *)p); break;
        case O_INT: fprintf(f, "%d\n", *(const int *)p); break;
        case O_U64: fprintf(f, "%llu\n", (unsigned long long)*(const uint64_t *)p); break;
        case O_DOUBLE: fprintf(f, "%.17g\n", *(const double *)p); break;
        case O_MASK_MODE: fprintf(f, "%s\n", mask_mode_name(*(const MaskMode *)p)); break;
        case O_OPTIMIZER: fprintf(f, "%s\n", o->opt.kind == OPTIM_XADAM ? "xadam" : "adamw"); break;
        }
    }
    fclose(f);
    return buf;
}

/* The saved text was written by train_options_to_text: read back as written (no range checks). */
typedef struct {
    TrainOptions *o;
    char *err;
    size_t errlen;
} OptionsFromText;

static int options_line(const char *key, const char *v, void *ctx) {
    OptionsFromText *x = ctx;
    TrainOptions *o = x->o;
    if (strncmp(key, "train_", 6) || !v || !*v) return 0;
    for (int i = 0; i < N_KEYS; i++) {
        const OptKey *k = &KEYS[i];
        if (!k->key || strcmp(key + 6, k->key)) continue;
        void *p = (char *)o + k->off;
        switch (k->kind) {
        case O_LONG: *(long *)p = atol(v); break;
        case O_INT: *(int *)p = atoi(v); break;
        case O_U64: *(uint64_t *)p = strtoull(v, NULL, 10); break;
        case O_DOUBLE: *(double *)p = atof(v); break;
        case O_MASK_MODE: mask_mode_parse(v, (MaskMode *)p); break;
        case O_OPTIMIZER: set_optimizer(o, !strcmp(v, "xadam") ? OPTIM_XADAM : OPTIM_ADAMW); break;
        }
        return 0;
    }
    snprintf(x->err, x->errlen, "unknown training option '%s' in the checkpoint", key);
    return 1;
}

int train_options_from_text(TrainOptions *o, const char *text, char *err, size_t errlen) {
    OptionsFromText x = {o, err, errlen};
    const int rc = config_text_each(text, options_line, &x);
    if (rc < 0) snprintf(err, errlen, "out of memory reading the training options");
    return rc ? -1 : 0;
}
