/* eval_checkpoint.c — a checkpoint's held-out metrics as text; see eval_checkpoint.h. */
#include "train/eval_checkpoint.h"
#include <stdlib.h>
#include <string.h>
#include "autograd/base/keytable.h"
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "train/eval/evaluate.h"
#include "train/model_source.h"
#include "train/pretrain.h"
#include "train/eval/yardstick.h"

/* ---------------------------------------------------------------- the option table */

void eval_options_default(EvalOptions *o) {
    memset(o, 0, sizeof *o);
    o->batches = 64;
    o->batch = 16;
}

#define F(m) KEY_FIELD(EvalOptions, m)
static const KeyRow KEYS[] = {
    {NULL, "data", NULL, KEY_STR, F(data), 0, 0, "", 0, NULL},
    {NULL, "batches", NULL, KEY_LONG, F(batches), 1, 0, "a positive integer", 0, NULL},
    {NULL, "batch", NULL, KEY_INT, F(batch), 1, 0, "a positive integer", 0, NULL},
    {NULL, "threads", NULL, KEY_INT, F(threads), 1, 0, "a positive integer", 0, NULL},
};
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int eval_options_set_flag(EvalOptions *o, const char *flag, const char *value, char *err, size_t errlen) {
    return key_set_flag(KEYS, N_KEYS, o, flag, value, err, errlen);
}

/* ---------------------------------------------------------------- the evaluation */

/* The val split of data, checked against the checkpoint's tokenizer identity and special ids. */
static Loader *open_val(const EvalOptions *o, const ModelConfig *cfg, const CheckpointState *st) {
    char err[1024];
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = cfg->max_seq_len;
    lc.B = o->batch;
    lc.seed = st->seed;
    Loader *val = loader_open_err(o->data, "val", &lc, err, sizeof err);
    if (!val) fatal("%s", err);
    if (st->n_tokenizer) { /* the checkpoint's tokenizer identity against the shards' */
        char h[17];
        tokenizer_hash_bytes(st->tokenizer, st->n_tokenizer, h);
        if (strcmp(h, loader_tokenizer_hash(val)))
            fatal("data %s: the shards were made with tokenizer %s, but checkpoint %s was trained with tokenizer %s (evaluate on shards "
                  "prepared with the checkpoint's tokenizer)", o->data, loader_tokenizer_hash(val), o->ckpt, h);
    }
    if (config_check_data(cfg, val, err, sizeof err)) fatal("data %s: %s (checkpoint %s: different tokenizer?)", o->data, err, o->ckpt);
    return val;
}

static void eval_print(FILE *f, const EvalOptions *o, long long step, const EvalResult *e, double seconds, int T) {
    fprintf(f, "checkpoint %s (step %lld), %ld val batches, %ld masked tokens, %ld tokens (%.1f s)\n", o->ckpt, step, e->n_batches,
            e->n_masked, e->n_tokens, seconds);
    fprintf(f, "generator      MLM loss %.4f  accuracy %.4f   (most-frequent-token baseline %.4f)\n", e->mlm_loss, e->mlm_acc,
            e->baseline_mlm_acc);
    fprintf(f, "discriminator  RTD loss %.4f  accuracy %.4f   (all-original baseline %.4f)  AUC %.4f\n", e->rtd_loss, e->rtd_acc,
            e->baseline_rtd_acc, e->rtd_auc);
    fprintf(f, "               %ld tokens flagged \"replaced\" (logit > 0), precision %.4f\n", e->rtd_flagged, e->rtd_precision);
    fprintf(f, "discriminator attention per layer (means over heads and real query tokens; uniform: entropy 1, near %.4f):\n",
            T > 1 ? 2.0 / T : 0.0);
    for (int l = 0; l < e->disc_layers; l++) {
        const double n = e->disc_att.rows[l];
        fprintf(f, "  layer %d  entropy/log(n) %.4f  self %.4f  near (|i-j| = 1) %.4f  local (1 <= |i-j| <= 3) %.4f\n", l,
                e->disc_att.norm_entropy[l] / n, e->disc_att.self[l] / n, e->disc_att.near[l] / n, e->disc_att.local[l] / n);
    }
}

int eval_checkpoint(const EvalOptions *o, FILE *f) {
    char err[1024];
    ModelSource src;
    ModelConfig cfg;
    model_source_config(&src, o->ckpt, 0, &cfg);
    if (config_validate(&cfg, err, sizeof err)) fatal("checkpoint %s: %s", o->ckpt, err);
    const uint64_t seed = src.st.seed;
    Electra m;
    model_source_load(&src, &m, &cfg, seed);
    Loader *val = open_val(o, &cfg, &src.st);
    Tape t;
    tape_init(&t, (size_t)64 << 20);
    const double t0 = now_seconds();
    const EvalResult e = evaluate(&m, val, &t, o->batch, cfg.max_seq_len, o->batches, seed);
    eval_print(f, o, (long long)src.st.step, &e, now_seconds() - t0, cfg.max_seq_len);
    Yardsticks ys;
    if (yardsticks_open(&ys, o->data, &cfg, loader_tokenizer_hash(val), err, sizeof err)) fatal("%s", err);
    YardstickResult yr = yardsticks_eval(&ys, &m, &t, o->batch);
    yardsticks_print(f, &yr, &ys);
    yardsticks_free(&ys);
    model_source_free(&src);
    tape_free(&t);
    loader_close(val);
    electra_free(&m);
    return 0;
}
