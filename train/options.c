/* options.c — TrainOptions defaults and the key table (see options.h). */
#include "train/options.h"
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
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
    o->opt.lr = -1; /* auto: train_options_resolve */
    o->d_lr = -1;
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

/* The default rates (docs/RECIPE.md, "The new default: a slower generator"): the generator at half the
 * old 5e-4 and the discriminator at twice the generator's rate; a joint run (one optimizer) keeps 5e-4.
 * The default curriculum (docs/HISTORY.md part 8): at max_seq_len >= 128 the first half of the steps read
 * 32-token sequences.  Measured at 128 tokens only, where without it the tiny discriminator flags
 * nothing within any budget tried; shorter sequences learn without it and keep the old recipe. */
void train_options_resolve(TrainOptions *o, int max_seq_len, int joint) {
    if (o->opt.lr < 0) o->opt.lr = joint ? TRAIN_JOINT_LR : TRAIN_GENERATOR_LR;
    if (o->d_lr < 0) o->d_lr = joint ? 0 : TRAIN_D_LR_FACTOR * o->opt.lr;
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

enum { O_CURRICULUM = KEY_USER }; /* persisted only when the run has a curriculum (short_seq_len > 0) */

static int mask_parse(void *base, void *p, const char *v) { return mask_mode_parse(v, (MaskMode *)p) ? -1 : 0; }
static const char *mask_name(const void *base, const void *p) { return mask_mode_name(*(const MaskMode *)p); }
/* The optimizer switch (a registry name, train/optim.h) keeps the peak learning rate and resets the
 * rest to the optimizer's defaults. */
static int optimizer_parse(void *base, void *p, const char *v) {
    TrainOptions *o = base;
    const Optimizer *opt = optim_find(v);
    if (!opt) return -1;
    const double lr = o->opt.lr;
    optim_config_default(&o->opt, opt);
    o->opt.lr = lr;
    return 0;
}
static const char *optimizer_name(const void *base, const void *p) { return ((const TrainOptions *)base)->opt.opt->name; }
static const KeyCodec MASK_MODE = {mask_parse, mask_name}, OPTIMIZER = {optimizer_parse, optimizer_name};

#define F(m) KEY_FIELD(TrainOptions, m)
/* Persisted keys (`train_<key>`) are written in this order (the order of every existing config.txt). */
static const KeyRow KEYS[] = {
    {"steps", "steps", NULL, KEY_LONG, F(steps), 1, 0, "a positive integer", 0, NULL},
    {"batch", "batch", NULL, KEY_INT, F(batch), 1, 0, "a positive integer", 0, NULL},
    {"accum", "accum", NULL, KEY_INT, F(accum), 1, 31, "an integer in 1..31", 0, NULL},
    {"seed", "seed", NULL, KEY_U64, F(seed), 0, 0, "a non-negative integer", 0, NULL},
    {"mask_mode", "mask-mode", "mask_mode", KEY_CUSTOM, F(mask_mode), 0, 0, "official, random or bert", 0, &MASK_MODE},
    {"mask_prob", "mask-prob", "mask_prob", KEY_DOUBLE, F(mask_prob), 1e-6, 1, "a number in (0, 1)", 0, NULL},
    {"optimizer", "optimizer", NULL, KEY_CUSTOM, F(opt), 0, 0, "an optimizer's name (deberta pretrain --help lists them)", 0, &OPTIMIZER},
    {"lr", "lr", NULL, KEY_DOUBLE, F(opt.lr), 0, 0, "a number >= 0", 0, NULL},
    {"d_lr", "d-lr", NULL, KEY_DOUBLE, F(d_lr), 0, 0, "a number >= 0", 0, NULL},
    {"warmup", "warmup", NULL, KEY_LONG, F(warmup), 0, 0, "an integer >= 0", 0, NULL},
    {"decay_frac", "decay-frac", NULL, KEY_DOUBLE, F(decay_frac), 0, 1, "a number in [0, 1)", KEY_SKIP_ZERO, NULL},
    {"beta1", "beta1", NULL, KEY_DOUBLE, F(opt.beta1), 0, 1, "a number in [0, 1)", 0, NULL},
    {"beta2", "beta2", NULL, KEY_DOUBLE, F(opt.beta2), 0, 1, "a number in [0, 1)", 0, NULL},
    {"eps", "eps", NULL, KEY_DOUBLE, F(opt.eps), 0, 0, "a number >= 0", 0, NULL},
    {"weight_decay", "weight-decay", NULL, KEY_DOUBLE, F(opt.weight_decay), 0, 0, "a number >= 0", 0, NULL},
    {"max_grad_norm", "max-grad-norm", NULL, KEY_DOUBLE, F(opt.max_grad_norm), 0, 0, "a number >= 0", 0, NULL},
    {"eval_every", "eval-every", NULL, KEY_LONG, F(eval_every), 0, 0, "an integer >= 0", 0, NULL},
    {"eval_batches", "eval-batches", NULL, KEY_LONG, F(eval_batches), 1, 0, "a positive integer", 0, NULL},
    {"save_every", "save-every", NULL, KEY_LONG, F(save_every), 0, 0, "an integer >= 0", 0, NULL},
    {"log_every", "log-every", NULL, KEY_LONG, F(log_every), 1, 0, "a positive integer", 0, NULL},
    {"max_bad_steps", "max-bad-steps", NULL, KEY_INT, F(max_bad_steps), 1, 0, "a positive integer", 0, NULL},
    {"keep_every", "keep-every", NULL, KEY_LONG, F(keep_every), 0, 0, "an integer >= 0", KEY_SKIP_ZERO, NULL},
    {"short_seq_len", "short-seq-len", NULL, KEY_INT, F(short_seq_len), 0, 0, "an integer >= 0 (0 = no curriculum)", KEY_SKIP_ZERO, NULL},
    {"short_frac", "short-frac", NULL, KEY_DOUBLE, F(short_frac), 0, 1, "a number in [0, 1)", O_CURRICULUM, NULL},
    {"ranks", NULL, NULL, KEY_LONG, F(ranks), 0, 0, "", KEY_SKIP_ZERO | KEY_NO_FLAG, NULL},
    {"zero", "zero", NULL, KEY_LONG, F(zero), 0, 1, "0 or 1", KEY_SKIP_ZERO, NULL},
    /* not persisted: */
    {NULL, "data", NULL, KEY_STR, F(data), 0, 0, "a path shorter than 4096 bytes", KEY_RESUME_OK, NULL},
    {NULL, "out", NULL, KEY_STR, F(out), 0, 0, "a path shorter than 4096 bytes", 0, NULL},
    {NULL, "init-from", NULL, KEY_STR, F(init_from), 0, 0, "a path shorter than 4096 bytes", 0, NULL},
    {NULL, "minutes", NULL, KEY_DOUBLE, F(minutes), 1e-3, 0, "a positive number", 0, NULL},
    {NULL, "threads", NULL, KEY_INT, F(threads), 1, 0, "a positive integer", KEY_RESUME_OK, NULL},
    {NULL, "stop-after", NULL, KEY_LONG, F(stop_after), 1, 0, "a positive integer", KEY_RESUME_OK, NULL},
};
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int train_options_set_flag(TrainOptions *o, const char *flag, const char *value, int *resume_ok, char *err, size_t errlen) {
    const KeyRow *k = key_find(KEYS, N_KEYS, flag, 1);
    if (!k) return 0;
    *resume_ok = (k->flags & KEY_RESUME_OK) != 0;
    if (key_set(k, o, value, 1)) return errf(err, errlen, "--%s wants %s, got '%s'", k->flag, k->want, value);
    return 1;
}

static int not_in_curriculum(const KeyRow *k, const void *o) { return (k->flags & O_CURRICULUM) && ((const TrainOptions *)o)->short_seq_len <= 0; }

char *train_options_to_text(const TrainOptions *o) { return key_table_to_text(KEYS, N_KEYS, o, "train_", not_in_curriculum); }

int train_options_from_text(TrainOptions *o, const char *text, char *err, size_t errlen) {
    return key_table_from_text(KEYS, N_KEYS, o, "train_", NULL, "training", text, err, errlen);
}
