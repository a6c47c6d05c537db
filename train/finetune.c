/* finetune.c — the fine-tuning loop, evaluation and initialisation; see finetune.h. */
#include "train/finetune.h"
#include <float.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/keytable.h"
#include "autograd/ops.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "model/electra.h"
#include "model/init.h"
#include "train/checkpoint.h"
#include "train/metrics.h"
#include "train/optim.h"
#include "train/run.h"
#include "train/signals.h"
#include "train/eval/task_eval.h"

#define FT_STATE_VERSION 1
#define FT_STATE_LEN 4 /* /loader_state of a fine-tuning checkpoint: version, best step, best dev score bits, N */

void finetune_options_default(FinetuneOptions *o) {
    memset(o, 0, sizeof *o);
    snprintf(o->init_model, sizeof o->init_model, "discriminator");
    snprintf(o->preset, sizeof o->preset, "tiny");
    o->steps = 1000;
    o->batch = 16;
    o->seed = 1234;
    /* issue 59 (docs/RECIPE.md, "Why pretraining hurt sentence tasks"): the tiny preset pretrains without
     * dropout, so fine-tuning adds none either; a sequence head pools the mean of the tokens, since
     * pretraining asks nothing of [CLS]; 3e-4, as 1e-4 left both arms barely above the majority class */
    o->lr = 3e-4;
    o->weight_decay = 0.01;
    o->max_grad_norm = 1.0;
    o->dropout = 0;
    o->attention_dropout = 0;
    o->pooler = POOL_MEAN;
    o->length_groups = 16;
    o->warmup = -1;
    o->eval_every = 200;
    o->log_every = 10;
    o->save_every = 200;
}

/* ---------------------------------------------------------------- the option table */

static int pooler_parse(void *base, void *p, const char *v) {
    const int k = task_head_pooler_parse(v);
    if (k < 0) return -1;
    *(int *)p = k;
    return 0;
}
static const char *pooler_name(const void *base, const void *p) { return task_head_pooler_name((HeadPooler) * (const int *)p); }
static const KeyCodec POOLER = {pooler_parse, pooler_name};

#define F(m) KEY_FIELD(FinetuneOptions, m)
#define STR(k, fl, want, flags) {#k, fl, NULL, KEY_STR, F(k), 0, 0, want, flags, NULL}
/* Persisted keys (`ft_<key>`) in the order they are written. */
static const KeyRow KEYS[] = {
    STR(task, "task", "pos or genre", 0),
    STR(init, "init", "RUN/checkpoint.h5 or scratch", 0),
    STR(init_model, "init-model", "discriminator or generator", 0),
    STR(preset, "preset", "a preset name", 0),
    STR(data, "data", "a task folder", KEY_RESUME_OK),
    {"steps", "steps", NULL, KEY_LONG, F(steps), 1, 0, "a positive integer", 0, NULL},
    {"batch", "batch", NULL, KEY_INT, F(batch), 1, 1 << 20, "a positive integer", 0, NULL},
    {"seed", "seed", NULL, KEY_U64, F(seed), 0, 0, "a non-negative integer", 0, NULL},
    {"lr", "lr", NULL, KEY_DOUBLE, F(lr), 0, 10, "a number in [0, 10)", 0, NULL},
    {"weight_decay", "weight-decay", NULL, KEY_DOUBLE, F(weight_decay), 0, 10, "a number in [0, 10)", 0, NULL},
    {"optimizer", "optimizer", NULL, KEY_CUSTOM, F(optimizer), 0, 0, "an optimizer's name (deberta finetune --help lists them)", KEY_SKIP_ZERO, &OPTIM_INDEX_CODEC},
    {"max_grad_norm", "max-grad-norm", NULL, KEY_DOUBLE, F(max_grad_norm), 0, 0, "a non-negative number", 0, NULL},
    {"dropout", "dropout", NULL, KEY_DOUBLE, F(dropout), 0, 1, "a number in [0, 1)", 0, NULL},
    {"attention_dropout", "attention-dropout", NULL, KEY_DOUBLE, F(attention_dropout), 0, 1, "a number in [0, 1)", 0, NULL},
    {"reinit_layers", "reinit-layers", NULL, KEY_INT, F(reinit_layers), 0, 1 << 20, "a non-negative integer", KEY_SKIP_ZERO, NULL},
    {"layer_decay", "layer-decay", NULL, KEY_DOUBLE, F(layer_decay), DBL_MIN, 1 + DBL_EPSILON, "a number in (0, 1] (1: one rate)", KEY_SKIP_ZERO, NULL}, /* 0 < v <= 1; 0 (unset) = one rate */
    {"length_groups", "length-groups", NULL, KEY_INT, F(length_groups), 0, 1 << 16, "an integer in [0, 65536] (0: off)", 0, NULL},
    {"warmup", "warmup", NULL, KEY_LONG, F(warmup), 0, 0, "a non-negative integer", 0, NULL},
    {"eval_every", "eval-every", NULL, KEY_LONG, F(eval_every), 0, 0, "a non-negative integer", 0, NULL},
    {"log_every", "log-every", NULL, KEY_LONG, F(log_every), 1, 0, "a positive integer", 0, NULL},
    {"save_every", "save-every", NULL, KEY_LONG, F(save_every), 0, 0, "a non-negative integer", 0, NULL},
    {"pooler", "pooler", NULL, KEY_CUSTOM, F(pooler), 0, 0, "cls or mean", 0, &POOLER},
    /* not persisted: */
    {NULL, "out", NULL, KEY_STR, F(out), 0, 0, "a run directory", 0, NULL},
    {NULL, "threads", NULL, KEY_INT, F(threads), 1, 4096, "an integer in [1, 4096]", KEY_RESUME_OK, NULL},
    {NULL, "stop-after", NULL, KEY_LONG, F(stop_after), 1, 0, "a positive integer", KEY_RESUME_OK, NULL},
};
#undef STR
#undef F
#define N_KEYS ((int)(sizeof(KEYS) / sizeof(KEYS[0])))

int finetune_options_set_flag(FinetuneOptions *o, const char *flag, const char *value, int *resume_ok, char *err, size_t errlen) {
    const KeyRow *k = key_find(KEYS, N_KEYS, flag, 1);
    if (!k) return 0;
    *resume_ok = (k->flags & KEY_RESUME_OK) != 0;
    if (key_set(k, o, value, 1))
        return k->type == KEY_STR ? errf(err, errlen, "--%s: value too long", k->flag) : errf(err, errlen, "--%s '%s' must be %s", k->flag, value, k->want);
    return 1;
}

static int pooler_key(const char *key, const char *v, void *ctx) {
    if (!strcmp(key, "ft_pooler")) *(int *)ctx = v ? task_head_pooler_parse(v) : -1;
    return 0;
}
int ft_config_pooler(const char *config_text) {
    int p = POOL_CLS; /* runs from before ft_pooler: [CLS] */
    key_text_each(config_text ? config_text : "", pooler_key, &p);
    return p;
}

char *finetune_options_to_text(const FinetuneOptions *o) { return key_table_to_text(KEYS, N_KEYS, o, "ft_", NULL); }

int finetune_options_from_text(FinetuneOptions *o, const char *text, char *err, size_t errlen) {
    static const char *const for_readers[] = {"head", "pair", "labels", NULL}; /* written for readers (export, predict), not options */
    return key_table_from_text(KEYS, N_KEYS, o, "ft_", for_readers, "fine-tuning", text, err, errlen);
}

/* ---------------------------------------------------------------- the model */

void ft_model_register(FtModel *m, const ModelConfig *cfg, HeadKind kind, int n_labels, double dropout) {
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    params_init(&m->ps);
    encoder_register(&m->enc, &m->ps, &m->cfg, m->cfg.num_hidden_layers, "deberta.", 0);
    task_head_register(&m->head, &m->ps, kind, m->cfg.hidden_size, n_labels, (real)dropout, (real)dropout, "");
    params_finalize(&m->ps);
}

void ft_model_build(FtModel *m, const ModelConfig *cfg, HeadKind kind, int n_labels, double dropout, uint64_t seed) {
    ft_model_register(m, cfg, kind, n_labels, dropout);
    model_init_params(&m->ps, m->cfg.initializer_range, seed);
}

void ft_model_free(FtModel *m) {
    encoder_free(&m->enc);
    params_free(&m->ps);
    memset(m, 0, sizeof *m);
}

int ft_init_config(const char *path, const CheckpointState *st, const char *which, ModelConfig *cfg, char *err, size_t errlen) {
    if (st->config && strstr(st->config, "ft_task"))
        return errf(err, errlen, "checkpoint %s is a fine-tuned model; --init wants a pretraining checkpoint", path);
    config_defaults(cfg);
    char e[512];
    if (config_from_text(cfg, st->config ? st->config : "", path, e, sizeof e) || config_validate(cfg, e, sizeof e))
        return errf(err, errlen, "checkpoint %s: %s", path, e);
    if (!strcmp(which, "generator")) cfg->num_hidden_layers = cfg->gen_num_hidden_layers;
    return 0;
}

double ft_layer_rate_scale(const char *name, int n_layers, double decay) {
    if (decay <= 0 || decay == 1 || strncmp(name, "deberta.", 8)) return 1; /* one rate, or the head */
    const int l = encoder_param_layer(name, "deberta.");
    return pow(decay, l >= 0 ? n_layers - l : n_layers + 1);
}

/* dst = a (+ b) elementwise over n reals */
static void copy_sum(real *dst, const Tensor *a, const Tensor *b) {
    for (long i = 0; i < a->n; i++) dst[i] = a->data[i] + (b ? b->data[i] : 0);
}

int ft_model_load_pretrained(FtModel *m, Checkpoint *ck, const CheckpointState *st, const char *which, int fresh_top, char *err,
                             size_t errlen) {
    const char *path = checkpoint_path(ck);
    const int L = m->cfg.num_hidden_layers;
    if (fresh_top < 0 || fresh_top > L)
        return errf(err, errlen, "checkpoint %s has %d encoder layers, fewer than the %d to re-initialise", path, L, fresh_top);
    ModelConfig pc; /* the pair's (ft_init_config has accepted st: not a fine-tuned model) */
    if (ft_init_config(path, st, "discriminator", &pc, err, errlen)) return -1;
    Electra *pair = xcalloc(1, sizeof *pair);
    electra_build(pair, &pc, 0);
    int rc = -1;
    if (checkpoint_read_tensors(ck, &pair->ps, NULL, err, errlen)) goto out;
    const int gen = !strcmp(which, "generator");
    const char *pre = gen ? "generator." : "discriminator.";
    for (int i = 0; i < m->ps.n; i++) {
        Tensor *p = m->ps.params[i];
        if (strncmp(p->name, "deberta.", 8)) continue; /* the head stays freshly initialised */
        if (encoder_param_layer(p->name, "deberta.") >= L - fresh_top) continue; /* and the top layers */
        char name[512];
        snprintf(name, sizeof name, "%s%s", pre, p->name);
        Tensor *src = params_find(&pair->ps, name), *delta = NULL;
        if (!src && !gen) {
            /* the discriminator's tables under GDES (E_G + E_Δ) and ES (E_G), as an export writes them */
            const char *tail = p->name + 8;
            if (!strcmp(tail, "embeddings.word_embeddings.weight") || !strcmp(tail, "embeddings.position_embeddings.weight")) {
                snprintf(name, sizeof name, "generator.%s", p->name);
                src = params_find(&pair->ps, name);
                char dn[512];
                snprintf(dn, sizeof dn, "discriminator.%.*s._weight", (int)(strlen(p->name) - 7), p->name);
                delta = params_find(&pair->ps, dn);
            }
        }
        if (!src || src->n != p->n) {
            errf(err, errlen, "checkpoint %s: no tensor '%s' of %ld elements for the fine-tuning model's '%s'", path, name, p->n, p->name);
            goto out;
        }
        copy_sum(p->data, src, delta);
    }
    rc = 0;
out:
    electra_free(pair);
    free(pair);
    return rc;
}

/* ---------------------------------------------------------------- evaluation */

static int argmax_row(const real *row, int L) {
    int b = 0;
    for (int k = 1; k < L; k++) if (row[k] > row[b]) b = k;
    return b;
}

/* The batch's length: the longest of examples idx[0..B) of lens. */
static int batch_len(const int32_t *lens, const int64_t *idx, int B) {
    int Tb = 1;
    for (int b = 0; b < B; b++) Tb = MAX(Tb, lens[idx[b]]);
    return Tb;
}

/* Copies examples idx[0..B) of ts, cut to their first Tb positions, into ids/mask/labels [B, Tb]
 * (labels: token [B·Tb], sequence [B]; regression: targets [B]). */
static void fill_batch(const TaskSet *ts, const int64_t *idx, int B, int Tb, int32_t *ids, int32_t *mask, int32_t *labels,
                       real *targets) {
    const int T = ts->T;
    for (int b = 0; b < B; b++) {
        const int32_t *row = ts->ids + idx[b] * T;
        memcpy(ids + (size_t)b * Tb, row, (size_t)Tb * sizeof(int32_t));
        for (int i = 0; i < Tb; i++) mask[(size_t)b * Tb + i] = row[i] != ts->pad_id;
        if (ts->kind == TASK_TAGGING) memcpy(labels + (size_t)b * Tb, ts->labels + idx[b] * T, (size_t)Tb * sizeof(int32_t));
        else if (ts->kind == TASK_REGRESSION) targets[b] = (real)ts->targets[idx[b]];
        else labels[b] = ts->labels[idx[b]];
    }
}

FtEval ft_evaluate(FtModel *m, Tape *t, const TaskSet *ts, int B) {
    TaskPreds p;
    task_eval_run(&m->enc, &m->head, t, ts, B, &p);
    FtEval e;
    task_preds_metrics(ts, &p, &e.m);
    task_preds_free(&p);
    e.loss = e.m.loss;
    e.acc = e.m.acc;
    e.macro_f1 = e.m.macro_f1;
    e.n = e.m.n;
    e.score = task_metrics_score(&e.m);
    return e;
}

/* ---------------------------------------------------------------- the run */

typedef struct FtRun {
    FinetuneOptions o;
    FtModel m;
    TaskSet train, dev, test;
    char paths[3][4200];
    Tape t;
    OptimGroup g;
    OptimMoments moments;
    RunDir dir;               /* the run directory, its logs, the stop / save policy (train/run.h) */
    Checkpoint *init;         /* --init: the pretraining checkpoint, open until the model is built */
    CheckpointState init_st;
    int64_t *perm, perm_epoch;
    int64_t *window, window_id; /* --length-groups: the examples of window window_id (G·B positions), in batch order */
    int32_t *lens;            /* train's example lengths (last non-padding position + 1) */
    int32_t *ids, *mask, *labels;
    real *targets;            /* regression [B] */
    int64_t *idx;
    long long positions;      /* positions computed by this invocation's steps (B x each batch's length) */
    int last_len;             /* the length the last step's batch was padded to */
    long best_step;
    double best_dev;
} FtRun;

/* Example index of global position q: number q mod N of the permutation of epoch q div N. */
static int64_t permuted_example(FtRun *r, int64_t q) {
    const int64_t N = r->train.N, e = q / N;
    if (e != r->perm_epoch) {
        for (int64_t i = 0; i < N; i++) r->perm[i] = i;
        const uint64_t stream = rng_stream(RNG_SHUFFLE, (uint64_t)e, 11);
        for (int64_t i = N - 1; i > 0; i--) {
            const int64_t j = (int64_t)(rng_u64(r->o.seed, stream, (uint64_t)i) % (uint64_t)(i + 1));
            const int64_t x = r->perm[i]; r->perm[i] = r->perm[j]; r->perm[j] = x;
        }
        r->perm_epoch = e;
    }
    return r->perm[q % N];
}

void ft_length_window(int64_t *ex, const int32_t *lens, int T, int G, int B, uint64_t seed, int64_t w) {
    const int64_t W = (int64_t)G * B;
    int64_t *tmp = xmalloc((size_t)W * sizeof(int64_t));
    /* stable counting sort by length */
    long *start = xcalloc((size_t)T + 2, sizeof(long));
    for (int64_t j = 0; j < W; j++) start[lens[ex[j]] + 1]++;
    for (int l = 1; l <= T + 1; l++) start[l] += start[l - 1];
    for (int64_t j = 0; j < W; j++) tmp[start[lens[ex[j]]]++] = ex[j];
    /* the G batches in a drawn order (Fisher–Yates over batch numbers) */
    int *order = xmalloc((size_t)G * sizeof(int));
    for (int g = 0; g < G; g++) order[g] = g;
    const uint64_t stream = rng_stream(RNG_SHUFFLE, (uint64_t)w, 12);
    for (int g = G - 1; g > 0; g--) {
        const int k = (int)(rng_u64(seed, stream, (uint64_t)g) % (uint64_t)(g + 1));
        const int x = order[g]; order[g] = order[k]; order[k] = x;
    }
    for (int g = 0; g < G; g++) memcpy(ex + (size_t)g * B, tmp + (size_t)order[g] * B, (size_t)B * sizeof(int64_t));
    free(start); free(tmp); free(order);
}

/* Example index of global position q: the permuted order, or with length groups window q div (G·B)
 * of it grouped (ft_length_window), a function of (seed, q) alone either way, so a resumed run draws
 * what an uninterrupted one would. */
static int64_t example_at(FtRun *r, int64_t q) {
    const int G = r->o.length_groups, B = r->o.batch;
    if (G <= 0) return permuted_example(r, q);
    const int64_t W = (int64_t)G * B, w = q / W;
    if (w != r->window_id) {
        for (int64_t j = 0; j < W; j++) r->window[j] = permuted_example(r, w * W + j);
        ft_length_window(r->window, r->lens, r->train.T, G, B, r->o.seed, w);
        r->window_id = w;
    }
    return r->window[q - w * W];
}

static char *run_config_text(const FtRun *r) {
    char *a = config_to_text(&r->m.cfg), *b = finetune_options_to_text(&r->o);
    size_t cap = strlen(a) + strlen(b) + 64 + TASK_LABELS_TEXT;
    char *s = xmalloc(cap);
    /* what predict needs of the task besides ft_task, the head, the labels and max_seq_len: whether it takes text pairs */
    int k = snprintf(s, cap, "%s%sft_head = %s\nft_pair = %d\nft_labels = ", a, b,
                     r->m.head.kind == HEAD_TOKEN ? "token" : r->m.head.kind == HEAD_REGRESSION ? "regression" : "sequence", r->train.pair);
    task_labels_encode((char (*)[TASK_LABEL_LEN])r->train.label_names, r->train.n_labels, s + k, cap - (size_t)k);
    k += (int)strlen(s + k);
    snprintf(s + k, cap - (size_t)k, "\n");
    free(a); free(b);
    return s;
}

static void fill_state(const FtRun *r, CheckpointState *st, long step, int64_t *ls) {
    memset(st, 0, sizeof *st);
    st->step = step;
    st->seed = r->o.seed;
    checkpoint_set_group_step(st, "finetune", r->g.step);
    int64_t bits;
    memcpy(&bits, &r->best_dev, sizeof bits);
    ls[0] = FT_STATE_VERSION; ls[1] = r->best_step; ls[2] = bits; ls[3] = r->train.N;
    st->loader_state = ls;
    st->n_loader_state = FT_STATE_LEN;
    st->config = run_config_text(r);
    st->tokenizer = r->train.tokenizer;
    st->n_tokenizer = r->train.tokenizer_len;
}

static void save(FtRun *r, long step, const char *file) {
    CheckpointState st;
    int64_t ls[FT_STATE_LEN];
    fill_state(r, &st, step, ls);
    char err[1024], path[10000];
    snprintf(path, sizeof path, "%s/%s", r->o.out, file);
    /* best.h5 is a model, not a training state: no moments (written as zeros) */
    if (!strcmp(file, "checkpoint.h5")) run_save(&r->dir, &r->m.ps, &r->moments, &st, 0);
    else if (checkpoint_write(path, &r->m.ps, NULL, &st, err, sizeof err)) fatal("%s", err);
    free(st.config);
}

static void load_task(FtRun *r, int k, const char *split) {
    char err[1024];
    snprintf(r->paths[k], sizeof r->paths[k], "%s/%s.h5", r->o.data, split);
    TaskSet *ts = k == 0 ? &r->train : k == 1 ? &r->dev : &r->test;
    if (task_read(r->paths[k], ts, err, sizeof err)) fatal("%s", err);
    if (strcmp(ts->split, split)) fatal("task %s: its split is '%s', expected '%s'", r->paths[k], ts->split, split);
    if (k && task_check_same(&r->train, r->paths[0], ts, r->paths[k], err, sizeof err)) fatal("%s", err);
}

static void log_eval(FtRun *r, long step, const FtEval *e, int best) {
    char err[1024];
    MetricsRecord rec;
    mrec_begin(&rec, "eval", step);
    mrec_str(&rec, "split", "dev");
    mrec_num(&rec, "loss", e->loss);
    tm_record(&rec, "", &e->m);
    mrec_int(&rec, "n", e->n);
    mrec_int(&rec, "best", best);
    if (metrics_write(&r->dir.log, &rec, err, sizeof err)) fatal("%s", err);
    char line[512];
    tm_format(&e->m, line, sizeof line);
    progress_note(&r->dir.prog, "eval @%ld: dev loss %.4f %s%s", step, e->loss, line, best ? " (best so far)" : "");
}

/* --resume: the saved model config and options (RUNDIR/checkpoint.h5, opened once); from the command
 * line only what the option table lets a resume give (KEY_RESUME_OK: --data, --threads, --stop-after). */
static void load_saved_run(FtRun *r, ModelConfig *cfg) {
    RunDir *d = &r->dir;
    const char *path = d->ckpt_path;
    char err[1024];
    run_open_resume(d, r->o.out, 1);
    const FinetuneOptions cli = r->o;
    /* what a key missing from the saved run means: its value before the key existed, not today's default */
    r->o.pooler = POOL_CLS;
    r->o.reinit_layers = 0;
    r->o.layer_decay = 0;
    if (!strstr(d->st.config, "ft_length_groups")) r->o.length_groups = 0; /* a run from before the option: no groups */
    config_defaults(cfg);
    if (config_from_text(cfg, d->st.config, path, err, sizeof err) || finetune_options_from_text(&r->o, d->st.config, err, sizeof err))
        fatal("checkpoint %s: %s", path, err);
    if (!strstr(d->st.config, "ft_task")) fatal("checkpoint %s is not a fine-tuning checkpoint", path);
    key_keep_resume_ok(KEYS, N_KEYS, &r->o, &cli); /* what the command line gave of the options a resume accepts */
    if (config_validate(cfg, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
}

/* The task files: train, dev, test, of the task asked for. */
static void load_tasks(FtRun *r) {
    load_task(r, 0, "train");
    load_task(r, 1, "dev");
    load_task(r, 2, "test");
    if (strcmp(r->o.task, r->train.name))
        fatal("task %s holds the task '%s' (%s), not '%s' (see deberta prep-task --task / --name)", r->paths[0], r->train.name,
              task_kind_name(r->train.kind), r->o.task);
}

/* A fresh run's model: a preset (--init scratch), or the encoder of a pretraining checkpoint (opened
 * once: its config and tokenizer now, its parameters in build_model) whose tokenizer the task files use. */
static void choose_model(FtRun *r, ModelConfig *cfg) {
    char err[1024];
    if (!strcmp(r->o.init, "scratch")) {
        config_defaults(cfg);
        if (config_preset(cfg, r->o.preset)) fatal("finetune: unknown --preset '%s' (tiny, xsmall, test)", r->o.preset);
        if (r->o.reinit_layers) fatal("finetune: --reinit-layers needs --init CHECKPOINT (a model from scratch is all freshly initialised)");
        cfg->vocab_size = (int)r->train.vocab_size;
    } else {
        if (strcmp(r->o.init_model, "discriminator") && strcmp(r->o.init_model, "generator"))
            fatal("finetune: --init-model must be discriminator or generator (got '%s')", r->o.init_model);
        if (!(r->init = checkpoint_open(r->o.init, &r->init_st, err, sizeof err))) fatal("%s", err);
        if (ft_init_config(r->o.init, &r->init_st, r->o.init_model, cfg, err, sizeof err)) fatal("%s", err);
        const CheckpointState *st = &r->init_st;
        if (!st->n_tokenizer) fatal("checkpoint %s has no tokenizer; cannot check that the task files use its tokenizer", r->o.init);
        char h[17];
        tokenizer_hash_bytes(st->tokenizer, st->n_tokenizer, h);
        if (strcmp(h, r->train.tokenizer_hash))
            fatal("checkpoint %s was pretrained with tokenizer %s, but the task files in %s use tokenizer %s (re-run deberta "
                  "prep-task with --shards of the pretraining data)", r->o.init, h, r->o.data, r->train.tokenizer_hash);
        if (cfg->vocab_size != r->train.vocab_size)
            fatal("checkpoint %s has a vocabulary of %d ids, the task files %lld", r->o.init, cfg->vocab_size, (long long)r->train.vocab_size);
    }
    cfg->hidden_dropout_prob = r->o.dropout; /* fine-tuning's own, not the pretraining's */
    cfg->attention_probs_dropout_prob = r->o.attention_dropout;
}

/* Encoder + head (--init: the checkpoint's encoder), the optimizer, the step's buffers. */
static void build_model(FtRun *r, ModelConfig *cfg) {
    char err[1024];
    const int T = r->train.T, B = r->o.batch;
    if (T > cfg->max_position_embeddings)
        fatal("task %s: sequences of %d tokens are longer than the model's max_position_embeddings %d (re-run deberta prep-task "
              "with --seq-len %d or less)", r->paths[0], T, cfg->max_position_embeddings, cfg->max_position_embeddings);
    cfg->max_seq_len = T;
    if (config_validate(cfg, err, sizeof err)) fatal("finetune: %s", err);
    if (r->o.batch < 1 || r->o.steps < 1) fatal("finetune: --batch and --steps must be positive");
    ft_model_build(&r->m, cfg, r->train.kind == TASK_TAGGING ? HEAD_TOKEN : r->train.kind == TASK_REGRESSION ? HEAD_REGRESSION : HEAD_SEQUENCE, r->train.n_labels, cfg->hidden_dropout_prob, r->o.seed);
    r->m.head.pooler = (HeadPooler)r->o.pooler;
    if (r->init && ft_model_load_pretrained(&r->m, r->init, &r->init_st, r->o.init_model, r->o.reinit_layers, err, sizeof err)) {
        if (r->o.reinit_layers) fatal("finetune --reinit-layers %d: %s", r->o.reinit_layers, err);
        fatal("%s", err);
    }
    checkpoint_close(r->init);
    r->init = NULL;
    checkpoint_state_free(&r->init_st);
    OptimConfig oc;
    optim_config_default(&oc, OPTIMIZERS[r->o.optimizer]);
    oc.lr = r->o.lr;
    oc.weight_decay = r->o.weight_decay;
    oc.max_grad_norm = r->o.max_grad_norm;
    oc.total_steps = r->o.steps;
    oc.warmup_steps = r->o.warmup >= 0 ? r->o.warmup : r->o.steps / 10;
    optim_moments_init(&r->moments, &r->m.ps, oc.opt);
    optim_group_init(&r->g, "finetune", &oc, &r->m.ps, &r->moments, NULL);
    for (int i = 0; i < r->g.n; i++) r->g.p[i].lr_scale = ft_layer_rate_scale(r->g.p[i].t->name, cfg->num_hidden_layers, r->o.layer_decay);
    r->best_dev = -INFINITY; /* any first dev score is better (regression: Pearson can be -1) */
    r->best_step = -1;
    tape_init(&r->t, (size_t)64 << 20);
    r->t.seed = r->o.seed;
    r->perm = xmalloc((size_t)r->train.N * sizeof(int64_t));
    r->perm_epoch = -1;
    r->window = xmalloc((size_t)MAX(r->o.length_groups, 1) * r->o.batch * sizeof(int64_t));
    r->window_id = -1;
    r->lens = xmalloc((size_t)r->train.N * sizeof(int32_t));
    for (int64_t e = 0; e < r->train.N; e++) r->lens[e] = task_example_len(&r->train, e);
    r->ids = xmalloc((size_t)B * T * sizeof(int32_t));
    r->mask = xmalloc((size_t)B * T * sizeof(int32_t));
    r->labels = xmalloc((size_t)B * T * sizeof(int32_t));
    r->targets = xmalloc((size_t)B * sizeof(real));
    r->idx = xmalloc((size_t)B * sizeof(int64_t));
}

/* --resume, once the model is built: parameters, moments, the optimizer counter and the best dev
 * score from the checkpoint, then the logs continue. */
static void restore_run(FtRun *r, int argc, char **argv) {
    RunDir *d = &r->dir;
    const CheckpointState *st = &d->st;
    const char *path = d->ckpt_path;
    run_restore(d, &r->m.ps, &r->moments);
    if (st->n_tokenizer != r->train.tokenizer_len || memcmp(st->tokenizer, r->train.tokenizer, st->n_tokenizer))
        fatal("task files %s: their tokenizer differs from the one in checkpoint %s", r->o.data, path);
    int64_t gs = checkpoint_group_step(st, "finetune");
    if (gs < 0) fatal("checkpoint %s: no optimizer counter for group 'finetune'", path);
    r->g.step = gs;
    if (st->n_loader_state != FT_STATE_LEN || st->loader_state[0] != FT_STATE_VERSION)
        fatal("checkpoint %s: fine-tuning state has %ld entries, expected %d", path, st->n_loader_state, FT_STATE_LEN);
    if (st->loader_state[3] != r->train.N)
        fatal("checkpoint %s was trained on %lld examples, %s has %lld (other task files?)", path, (long long)st->loader_state[3],
              r->paths[0], (long long)r->train.N);
    r->best_step = st->loader_state[1];
    memcpy(&r->best_dev, &st->loader_state[2], sizeof r->best_dev);
    run_begin(d, NULL, argc, argv);
}

/* A fresh run, once the model is built: the directory made and locked, config.txt, cmdline.txt, metrics.jsonl. */
static void start_run(FtRun *r, int argc, char **argv) {
    run_open_fresh(&r->dir, r->o.out, 1);
    char *text = run_config_text(r);
    run_begin(&r->dir, text, argc, argv);
    free(text);
}

static void announce(const FtRun *r) {
    const ModelConfig *cfg = &r->m.cfg;
    const int scratch = !strcmp(r->o.init, "scratch");
    run_say(&r->dir, "model: %s, %d layers, hidden %d, vocab %d, %ld parameters; init %s%s%s\n",
            r->m.head.kind == HEAD_TOKEN ? "token classification" : r->m.head.kind == HEAD_REGRESSION ? "regression" : "sequence classification", cfg->num_hidden_layers, cfg->hidden_size,
            cfg->vocab_size, params_count(&r->m.ps), r->o.init, scratch ? "" : " ", scratch ? "" : r->o.init_model);
    fprintf(stderr, "task %s: %lld train / %lld dev / %lld test examples of %d tokens, %d labels; %ld steps of %d; %d threads\n",
            r->train.name, (long long)r->train.N, (long long)r->dev.N, (long long)r->test.N, r->train.T, r->train.n_labels,
            r->o.steps, r->o.batch, omp_get_max_threads());
}

typedef struct FtStep {
    double loss, acc;
    double head_grad_norm;    /* L2 norm of the head's gradients (pooler + classifier), before clipping */
    OptimStepResult s;
} FtStep;

/* L2 norm of the gradients of the parameters outside the encoder ("deberta.*"): the head's */
static double head_grad_norm(const ParamSet *ps) {
    double ss = 0;
    for (int i = 0; i < ps->n; i++) {
        const Tensor *p = ps->params[i];
        if (!strncmp(p->name, "deberta.", 8) || !p->grad) continue;
        for (long k = 0; k < p->n; k++) ss += (double)p->grad[k] * p->grad[k];
    }
    return sqrt(ss);
}

/* One step: B examples from global position step·B, forward with dropout, backward, AdamW (a
 * non-finite loss skips the update), timed. */
static FtStep train_step(FtRun *r, long step) {
    const double t0 = now_seconds();
    const int B = r->o.batch, L = r->train.n_labels;
    for (int b = 0; b < B; b++) r->idx[b] = example_at(r, (int64_t)step * B + b);
    /* the batch padded only to its longest example: positions after it are padding in every example,
     * masked as keys and unlabelled, so cutting them changes no loss or gradient (only the dropout draws,
     * which follow the tensor's layout) */
    const int T = batch_len(r->lens, r->idx, B);
    r->positions += (long long)B * T;
    r->last_len = T;
    fill_batch(&r->train, r->idx, B, T, r->ids, r->mask, r->labels, r->targets);
    optim_zero_grad(&r->g);
    tape_reset(&r->t);
    r->t.training = 1;
    r->t.step = (uint64_t)step;
    Tensor *h = encoder_forward(&r->t, &r->m.enc, NULL, r->ids, r->mask, B, T, NULL);
    TaskHeadOut out;
    Tensor *loss = r->train.kind == TASK_REGRESSION ? task_head_mse(&r->t, &r->m.head, h, B, T, r->mask, r->targets, &out)
                                                    : task_head_forward(&r->t, &r->m.head, h, B, T, r->mask, r->labels, &out);
    FtStep s = {loss->data[0], NAN, NAN, {0, 0, 1}};
    long ok = 0;
    const int rows = r->train.kind == TASK_TAGGING ? B * T : B;
    for (int i = 0; i < rows && r->train.kind != TASK_REGRESSION; i++)
        if (r->labels[i] != TASK_IGNORE) ok += argmax_row(out.logits->data + (size_t)i * L, L) == r->labels[i];
    if (isfinite(s.loss)) {
        tape_backward(&r->t, loss, 1);
        s.head_grad_norm = head_grad_norm(&r->m.ps);
        s.s = optim_step(&r->g);
    }
    tape_reset(&r->t);
    stepclock_add(&r->dir.clock, now_seconds() - t0);
    s.acc = out.n_counted ? (double)ok / out.n_counted : NAN;
    return s;
}

/* After step `completed`: the train line (every --log-every, skipped steps, the last) and the progress line. */
static void log_step(FtRun *r, long completed, const FtStep *s) {
    char err[1024];
    if (s->s.skipped) progress_note(&r->dir.prog, "step %ld skipped: non-finite loss or gradient norm", completed);
    if (s->s.skipped || completed % r->o.log_every == 0 || completed == r->o.steps) {
        MetricsRecord rec;
        mrec_begin(&rec, M_KIND_TRAIN, completed);
        mrec_num(&rec, "loss", s->loss);
        mrec_num(&rec, "acc", s->acc);
        mrec_num(&rec, "lr", s->s.lr);
        mrec_num(&rec, "grad_norm", s->s.grad_norm);
        mrec_num(&rec, "head_grad_norm", s->head_grad_norm);
        mrec_int(&rec, M_SKIPPED, s->s.skipped);
        mrec_num(&rec, "epoch", (double)((int64_t)completed * r->o.batch / r->train.N));
        if (metrics_write(&r->dir.log, &rec, err, sizeof err)) fatal("%s", err);
    }
    char fields[128];
    snprintf(fields, sizeof fields, "loss %.4f | acc %.3f", s->loss, s->acc);
    progress_update_fields(&r->dir.prog, completed, fields, (long long)r->o.batch * r->last_len);
}

/* A dev evaluation; a new best dev score keeps the parameters as best.h5. */
static void dev_eval(FtRun *r, long completed) {
    FtEval e = ft_evaluate(&r->m, &r->t, &r->dev, r->o.batch);
    const int best = e.score > r->best_dev;
    if (best) {
        r->best_dev = e.score;
        r->best_step = completed;
        save(r, completed, "best.h5");
    }
    log_eval(r, completed, &e, best);
}

/* The end of the run: the speed line, the best dev model on test beside the baselines (metrics.jsonl,
 * stdout and results.txt), the logs closed. */
static int finish(FtRun *r) {
    RunDir *d = &r->dir;
    char err[1024], path[4200], detail[96];
    progress_done(&d->prog);
    /* positions per step: each batch is padded to its longest example (train_step), so it varies */
    const double per_step = d->done_here > 0 ? (double)r->positions / d->done_here : (double)r->o.batch * r->train.T;
    snprintf(detail, sizeof detail, "tokens = positions computed, %d examples of up to %d per step; evaluations excluded", r->o.batch,
             r->train.T);
    if (run_speed(d, per_step, detail)) fputc('\n', stderr);
    CheckpointState st;
    snprintf(path, sizeof path, "%.4000s/best.h5", r->o.out);
    if (checkpoint_load(path, &r->m.ps, NULL, &st, err, sizeof err)) fatal("%s", err);
    checkpoint_state_free(&st);
    FtEval te = ft_evaluate(&r->m, &r->t, &r->test, r->o.batch);
    MetricsRecord rec;
    mrec_begin(&rec, "test", r->best_step);
    mrec_num(&rec, "loss", te.loss);
    mrec_num(&rec, "dev_acc", r->best_dev); /* the best dev score: accuracy, or Pearson for regression */
    mrec_int(&rec, "n", te.n);
    char head[256], tail[4200], res[8192];
    snprintf(head, sizeof head, "%.31s test (best dev step %ld, dev %s %.4f)", r->train.name, r->best_step,
             r->train.kind == TASK_REGRESSION ? "Pearson" : "acc", r->best_dev);
    char fresh[128] = "";
    if (r->o.reinit_layers) snprintf(fresh, sizeof fresh, ", top %d layer%s re-initialised", r->o.reinit_layers, r->o.reinit_layers > 1 ? "s" : "");
    if (r->m.head.kind != HEAD_TOKEN && r->o.pooler == POOL_MEAN) snprintf(fresh + strlen(fresh), sizeof fresh - strlen(fresh), ", mean pooler");
    if (r->o.layer_decay > 0 && r->o.layer_decay < 1)
        snprintf(fresh + strlen(fresh), sizeof fresh - strlen(fresh), ", layer-wise rate decay %g", r->o.layer_decay);
    snprintf(tail, sizeof tail, " | init %.4000s%s%.15s%s", r->o.init, strcmp(r->o.init, "scratch") ? " " : "",
             strcmp(r->o.init, "scratch") ? r->o.init_model : "", fresh);
    task_report(&r->train, &r->test, &te.m, head, tail, &rec, res, sizeof res);
    if (metrics_write(&d->log, &rec, err, sizeof err)) fatal("%s", err);
    metrics_close(&d->log);
    fputs(res, stdout);
    if (run_write_text(r->o.out, "results.txt", res, err, sizeof err)) fatal("%s", err);
    run_end(d);
    fprintf(stderr, "run: %s (checkpoint.h5, best.h5, metrics.jsonl, results.txt)\n", r->o.out);
    tape_free(&r->t);
    optim_group_free(&r->g);
    optim_moments_free(&r->moments);
    ft_model_free(&r->m);
    task_free(&r->train); task_free(&r->dev); task_free(&r->test);
    free(r->perm); free(r->window); free(r->lens); free(r->ids); free(r->mask); free(r->labels); free(r->targets); free(r->idx);
    return 0;
}

int finetune_run(const FinetuneOptions *o, const RunEnv *env, int argc, char **argv) {
    static FtRun R;
    FtRun *r = &R;
    memset(r, 0, sizeof *r);
    r->o = *o;
    RunDir *d = &r->dir;
    ModelConfig cfg;
    run_threads(env);
    if (r->o.resume) load_saved_run(r, &cfg); /* the model and options are the checkpoint's */
    load_tasks(r);
    if (!r->o.resume) choose_model(r, &cfg);
    d->steps = r->o.steps, d->save_every = r->o.save_every, d->stop_after = r->o.stop_after;
    build_model(r, &cfg);
    if (r->o.resume) restore_run(r, argc, argv);
    else start_run(r, argc, argv);
    announce(r);
    for (long step = d->start; step < r->o.steps; step++) {
        const FtStep s = train_step(r, step);
        const long completed = step + 1;
        log_step(r, completed, &s);
        if ((r->o.eval_every > 0 && completed % r->o.eval_every == 0) || completed == r->o.steps) dev_eval(r, completed);
        int save_now, keep;
        const int stop = run_step_done(d, completed, &save_now, &keep);
        if (save_now) save(r, completed, "checkpoint.h5");
        if (stop) {
            run_stopped(d, completed);
            run_end(d);
            return 0;
        }
    }
    return finish(r);
}
