/* pretrain.c — the pretraining loop and evaluation; see pretrain.h. */
#include "train/pretrain.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/util.h"
#include "train/checkpoint.h"
#include "train/metrics.h"

#define STREAMS_PER_STEP 64 /* dropout/sampling sub-streams of one step: 2 per micro-batch */

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
}

/* ---------------- config text (model config + training options) ---------------- */

char *config_to_text(const ModelConfig *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    config_write(c, f);
    fclose(f);
    return buf;
}

static char *options_to_text(const TrainOptions *o) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    fprintf(f, "train_steps = %ld\ntrain_batch = %d\ntrain_accum = %d\ntrain_seed = %llu\n", o->steps, o->batch, o->accum,
            (unsigned long long)o->seed);
    fprintf(f, "train_mask_mode = %s\ntrain_mask_prob = %.17g\n", mask_mode_name(o->mask_mode), o->mask_prob);
    fprintf(f, "train_optimizer = %s\ntrain_lr = %.17g\ntrain_d_lr = %.17g\ntrain_warmup = %ld\n",
            o->opt.kind == OPTIM_XADAM ? "xadam" : "adamw", o->opt.lr, o->d_lr, o->warmup);
    fprintf(f, "train_beta1 = %.17g\ntrain_beta2 = %.17g\ntrain_eps = %.17g\ntrain_weight_decay = %.17g\n", o->opt.beta1,
            o->opt.beta2, o->opt.eps, o->opt.weight_decay);
    fprintf(f, "train_max_grad_norm = %.17g\ntrain_eval_every = %ld\ntrain_eval_batches = %ld\ntrain_save_every = %ld\n",
            o->opt.max_grad_norm, o->eval_every, o->eval_batches, o->save_every);
    fprintf(f, "train_log_every = %ld\ntrain_max_bad_steps = %d\n", o->log_every, o->max_bad_steps);
    fclose(f);
    return buf;
}

/* Reads the train_* lines back (resume), split by config_text_each as config_from_text splits the
 * model keys; other keys are config_from_text's and are skipped here, as are train_* lines without
 * a value. */
typedef struct {
    TrainOptions *o;
    char *err;
    size_t errlen;
} OptionsFromText;

static int options_line(const char *key, const char *v, void *ctx) {
    OptionsFromText *x = ctx;
    TrainOptions *o = x->o;
    if (strncmp(key, "train_", 6) || !v || !*v) return 0;
    const char *k = key + 6;
    if (!strcmp(k, "steps")) o->steps = atol(v);
    else if (!strcmp(k, "batch")) o->batch = atoi(v);
    else if (!strcmp(k, "accum")) o->accum = atoi(v);
    else if (!strcmp(k, "seed")) o->seed = strtoull(v, NULL, 10);
    else if (!strcmp(k, "mask_mode")) mask_mode_parse(v, &o->mask_mode);
    else if (!strcmp(k, "mask_prob")) o->mask_prob = atof(v);
    else if (!strcmp(k, "optimizer")) {
        double lr = o->opt.lr;
        optim_config_default(&o->opt, !strcmp(v, "xadam") ? OPTIM_XADAM : OPTIM_ADAMW);
        o->opt.lr = lr;
    } else if (!strcmp(k, "lr")) o->opt.lr = atof(v);
    else if (!strcmp(k, "d_lr")) o->d_lr = atof(v);
    else if (!strcmp(k, "warmup")) o->warmup = atol(v);
    else if (!strcmp(k, "beta1")) o->opt.beta1 = atof(v);
    else if (!strcmp(k, "beta2")) o->opt.beta2 = atof(v);
    else if (!strcmp(k, "eps")) o->opt.eps = atof(v);
    else if (!strcmp(k, "weight_decay")) o->opt.weight_decay = atof(v);
    else if (!strcmp(k, "max_grad_norm")) o->opt.max_grad_norm = atof(v);
    else if (!strcmp(k, "eval_every")) o->eval_every = atol(v);
    else if (!strcmp(k, "eval_batches")) o->eval_batches = atol(v);
    else if (!strcmp(k, "save_every")) o->save_every = atol(v);
    else if (!strcmp(k, "log_every")) o->log_every = atol(v);
    else if (!strcmp(k, "max_bad_steps")) o->max_bad_steps = atoi(v);
    else {
        snprintf(x->err, x->errlen, "unknown training option '%s' in the checkpoint", key);
        return 1;
    }
    return 0;
}

static int options_from_text(TrainOptions *o, const char *text, char *err, size_t errlen) {
    OptionsFromText x = {o, err, errlen};
    const int rc = config_text_each(text, options_line, &x);
    if (rc < 0) snprintf(err, errlen, "out of memory reading the training options");
    return rc ? -1 : 0;
}

/* ---------------- metrics helpers ---------------- */

static long mlm_correct(const GenOut *g) {
    const int V = g->logits->shape[1];
    long c = 0;
    for (int k = 0; k < g->n_masked; k++) {
        const real *row = g->logits->data + (long)k * V;
        int best = 0;
        for (int v = 1; v < V; v++)
            if (row[v] > row[best]) best = v;
        c += best == g->targets[k];
    }
    return c;
}

static long rtd_correct(const DiscOut *d, const Batch *b) {
    long c = 0;
    for (long i = 0; i < (long)b->B * b->T; i++)
        if (b->attention_mask[i]) c += (d->logits->data[i] > 0) == (d->y[i] != 0);
    return c;
}

typedef struct {
    float logit;
    int y;
} Scored;

static int cmp_scored(const void *a, const void *b) {
    float x = ((const Scored *)a)->logit, y = ((const Scored *)b)->logit;
    return x < y ? -1 : x > y;
}

/* ROC AUC by the rank-sum (Mann-Whitney) statistic with tied scores given their average rank. */
static double auc(Scored *s, long n) {
    qsort(s, (size_t)n, sizeof *s, cmp_scored);
    double rank_sum = 0;
    long pos = 0;
    for (long i = 0; i < n;) {
        long j = i;
        while (j < n && s[j].logit == s[i].logit) j++;
        double avg = (i + 1 + j) / 2.0; /* ranks i+1 .. j */
        for (long k = i; k < j; k++)
            if (s[k].y) {
                rank_sum += avg;
                pos++;
            }
        i = j;
    }
    long neg = n - pos;
    if (pos == 0 || neg == 0) return NAN;
    return (rank_sum - pos * (pos + 1) / 2.0) / ((double)pos * neg);
}

EvalResult evaluate(Electra *m, Loader *val, Tape *t, int B, int T, long max_batches, uint64_t seed) {
    EvalResult r;
    memset(&r, 0, sizeof r);
    const ModelConfig *c = &m->cfg;
    Batch b;
    batch_alloc(&b, B, T);
    int32_t *replaced = xmalloc((size_t)B * T * sizeof(int32_t));
    Scored *sc = xmalloc((size_t)max_batches * B * T * sizeof(Scored));
    long *freq = xcalloc((size_t)c->vocab_size, sizeof(long));
    double mlm_sum = 0, bce_sum = 0;
    long mlm_ok = 0, rtd_ok = 0, n_orig = 0, ns = 0, flagged_ok = 0;
    const int saved_training = t->training;
    t->training = 0;
    loader_rewind(val);
    for (long k = 0; k < max_batches && loader_next(val, &b); k++) {
        GenOut g;
        DiscOut d;
        const ElectraInput in = electra_input(&b);
        tape_reset(t);
        tape_nograd_begin(t);
        generator_forward(t, m, &in, &g);
        /* a fixed sampling stream per eval batch: every evaluation sees the same draws for the same model */
        electra_sample(&g, &in, seed, ((uint64_t)1 << 35) + (uint64_t)k, replaced);
        discriminator_forward(t, m, &in, replaced, &d);
        tape_nograd_end(t);
        mlm_sum += g.loss->data[0] * g.n_masked;
        mlm_ok += mlm_correct(&g);
        r.n_masked += g.n_masked;
        for (int q = 0; q < g.n_masked; q++) freq[g.targets[q]]++;
        long valid = 0;
        for (long i = 0; i < (long)B * T; i++)
            if (b.attention_mask[i]) {
                valid++;
                sc[ns].logit = (float)d.logits->data[i];
                sc[ns++].y = d.y[i];
                n_orig += d.y[i] == 0;
                if (d.logits->data[i] > 0) {
                    r.rtd_flagged++;
                    flagged_ok += d.y[i] != 0;
                }
            }
        bce_sum += d.bce->data[0] * valid;
        rtd_ok += rtd_correct(&d, &b);
        r.n_tokens += valid;
        r.n_batches++;
    }
    tape_reset(t);
    t->training = saved_training;
    if (r.n_masked > 0) {
        long best = 0;
        for (int v = 0; v < c->vocab_size; v++) best = freq[v] > best ? freq[v] : best;
        r.mlm_loss = mlm_sum / r.n_masked;
        r.mlm_acc = (double)mlm_ok / r.n_masked;
        r.baseline_mlm_acc = (double)best / r.n_masked;
    }
    if (r.n_tokens > 0) {
        r.rtd_loss = bce_sum / r.n_tokens;
        r.rtd_acc = (double)rtd_ok / r.n_tokens;
        r.baseline_rtd_acc = (double)n_orig / r.n_tokens;
        r.rtd_auc = auc(sc, ns);
        r.rtd_precision = r.rtd_flagged ? (double)flagged_ok / r.rtd_flagged : NAN;
    }
    free(freq);
    free(sc);
    free(replaced);
    batch_free(&b);
    return r;
}

/* ---------------- the run ---------------- */

typedef struct Run {
    ModelConfig cfg;
    TrainOptions o;
    Electra m;
    Tape t;
    OptimGroup groups[2]; /* decoupled: generator, discriminator; joint: all */
    int n_groups;
    Loader *train, *val;
    Batch *micro;
    int32_t **replaced;
    MetricsLog log;
    Progress prog;
} Run;

static int finite1(const Tensor *x) { return isfinite((double)x->data[0]); }

static inline void phase_mark(double *acc, double *t0) {
    const double t1 = now_seconds();
    *acc += t1 - *t0;
    *t0 = t1;
}

StepStats pretrain_step(const StepCtx *c, long step, int update) {
    StepStats s;
    memset(&s, 0, sizeof s);
    Tape *t = c->t;
    Electra *m = c->m;
    const int A = c->accum;
    const real inv = (real)(1.0 / A);
    const uint64_t base = (uint64_t)step * STREAMS_PER_STEP;
    double *ph = s.phase, t0 = now_seconds();
    t->training = 1;
    int g_bad = 0, d_bad = 0;
    if (m->cfg.training_mode == TRAIN_DECOUPLED) {
        OptimGroup *G = &c->groups[0], *D = &c->groups[1];
        optim_zero_grad(G);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            GenOut g;
            const ElectraInput in = electra_input(&c->micro[i]);
            tape_reset(t);
            t->step = base + 2 * i;
            Tensor *lg = generator_forward(t, m, &in, &g);
            phase_mark(&ph[PHASE_G_FWD], &t0);
            electra_sample(&g, &in, c->seed, base + i, c->replaced[i]);
            s.g_loss += lg->data[0] / A;
            s.mlm_ok += mlm_correct(&g);
            s.n_masked += g.n_masked;
            phase_mark(&ph[PHASE_SAMPLE], &t0);
            if (!finite1(lg)) g_bad = 1;
            else tape_backward(t, lg, inv);
            phase_mark(&ph[PHASE_G_BWD], &t0);
        }
        if (g_bad) optim_zero_grad(G);
        else if (update) s.g = optim_step(G);
        optim_zero_grad(D);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            DiscOut d;
            const ElectraInput in = electra_input(&c->micro[i]);
            tape_reset(t);
            t->step = base + 2 * i + 1;
            Tensor *ld = discriminator_forward(t, m, &in, c->replaced[i], &d);
            s.d_loss += d.bce->data[0] / A;
            s.rtd_ok += rtd_correct(&d, &c->micro[i]);
            s.n_tokens += c->micro[i].n_tokens;
            phase_mark(&ph[PHASE_D_FWD], &t0);
            if (!finite1(ld)) d_bad = 1;
            else tape_backward(t, ld, inv);
            phase_mark(&ph[PHASE_D_BWD], &t0);
        }
        if (d_bad) optim_zero_grad(D);
        else if (update) s.d = optim_step(D);
        phase_mark(&ph[PHASE_D_OPT], &t0);
    } else {
        OptimGroup *all = &c->groups[0];
        optim_zero_grad(all);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            GenOut g;
            DiscOut d;
            const ElectraInput in = electra_input(&c->micro[i]);
            tape_reset(t);
            t->step = base + 2 * i;
            Tensor *lg = generator_forward(t, m, &in, &g);
            phase_mark(&ph[PHASE_G_FWD], &t0);
            electra_sample(&g, &in, c->seed, base + i, c->replaced[i]);
            phase_mark(&ph[PHASE_SAMPLE], &t0);
            Tensor *ld = discriminator_forward(t, m, &in, c->replaced[i], &d);
            Tensor *l = op_add(t, lg, ld);
            s.g_loss += lg->data[0] / A;
            s.d_loss += d.bce->data[0] / A;
            s.mlm_ok += mlm_correct(&g);
            s.n_masked += g.n_masked;
            s.rtd_ok += rtd_correct(&d, &c->micro[i]);
            s.n_tokens += c->micro[i].n_tokens;
            phase_mark(&ph[PHASE_D_FWD], &t0);
            if (!finite1(l)) g_bad = d_bad = 1;
            else tape_backward(t, l, inv);
            phase_mark(&ph[PHASE_D_BWD], &t0);
        }
        if (g_bad) optim_zero_grad(all);
        else if (update) s.g = s.d = optim_step(all);
        phase_mark(&ph[PHASE_D_OPT], &t0);
    }
    tape_reset(t);
    if (g_bad || d_bad) {
        s.skipped = 1;
        s.why = "non-finite loss";
    } else if (s.g.skipped || s.d.skipped) {
        s.skipped = 1;
        s.why = "non-finite gradient norm";
    }
    return s;
}

/* One training step of the run: the next micro-batches from the loader, then pretrain_step
 * (update = 0: forward/backward only, for timing). */
static StepStats train_step(Run *r, long step, int update) {
    for (int i = 0; i < r->o.accum; i++) loader_next(r->train, &r->micro[i]);
    const StepCtx c = {&r->m, &r->t, r->groups, r->micro, r->replaced, r->o.accum, r->o.seed};
    return pretrain_step(&c, step, update);
}

static void pack_loader_state(const Loader *L, int64_t out[LOADER_STATE_LEN]) {
    LoaderState st;
    loader_get_state(L, &st);
    memcpy(out, &st, sizeof st);
}

static char *full_config_text(const Run *r) {
    char *a = config_to_text(&r->cfg), *b = options_to_text(&r->o);
    char *s = xmalloc(strlen(a) + strlen(b) + 2);
    sprintf(s, "%s%s", a, b);
    free(a);
    free(b);
    return s;
}

static void save_checkpoint(Run *r, long step) {
    char err[1024];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = step;
    st.seed = r->o.seed;
    for (int i = 0; i < r->n_groups; i++) checkpoint_set_group_step(&st, r->groups[i].name, r->groups[i].step);
    int64_t ls[LOADER_STATE_LEN];
    pack_loader_state(r->train, ls);
    st.loader_state = ls;
    st.n_loader_state = LOADER_STATE_LEN;
    st.config = full_config_text(r);
    size_t n_tok = 0;
    st.tokenizer = loader_tokenizer_bytes(r->train, &n_tok);
    st.n_tokenizer = n_tok;
    if (checkpoint_save(r->o.out, &r->m.ps, &st, 0, err, sizeof err)) fatal("%s", err);
    free(st.config);
    free(st.tokenizer);
}

static void log_eval(Run *r, long step) {
    if (!r->val) return;
    char err[1024];
    EvalResult e = evaluate(&r->m, r->val, &r->t, r->o.batch, r->cfg.max_seq_len, r->o.eval_batches, r->o.seed);
    MetricsRecord rec;
    mrec_begin(&rec, M_KIND_EVAL, step);
    mrec_num(&rec, M_G_LOSS, e.mlm_loss);
    mrec_num(&rec, M_MLM_ACC, e.mlm_acc);
    mrec_num(&rec, M_D_LOSS, e.rtd_loss);
    mrec_num(&rec, M_RTD_ACC, e.rtd_acc);
    mrec_num(&rec, M_RTD_AUC, e.rtd_auc);
    mrec_num(&rec, "baseline_mlm_acc", e.baseline_mlm_acc);
    mrec_num(&rec, "baseline_rtd_acc", e.baseline_rtd_acc);
    mrec_int(&rec, "rtd_flagged", e.rtd_flagged);
    mrec_num(&rec, "rtd_precision", e.rtd_precision);
    mrec_int(&rec, "n_masked", e.n_masked);
    mrec_int(&rec, "n_tokens", e.n_tokens);
    if (metrics_write(&r->log, &rec, err, sizeof err)) fatal("%s", err);
    progress_note(&r->prog, "eval @%ld: MLM loss %.4f acc %.4f (baseline %.4f) | RTD loss %.4f acc %.4f (baseline %.4f) AUC %.4f, %ld flagged", step,
                  e.mlm_loss, e.mlm_acc, e.baseline_mlm_acc, e.rtd_loss, e.rtd_acc, e.baseline_rtd_acc, e.rtd_auc, e.rtd_flagged);
}

static void setup_groups(Run *r) {
    OptimConfig g = r->o.opt;
    g.total_steps = r->o.steps;
    g.warmup_steps = r->o.warmup >= 0 ? r->o.warmup : MIN(10000, r->o.steps / 10);
    if (r->cfg.training_mode == TRAIN_DECOUPLED) {
        OptimConfig d = g;
        if (r->o.d_lr > 0) d.lr = r->o.d_lr;
        optim_group_init(&r->groups[0], "generator", &g, &r->m.ps, "generator.");
        optim_group_init(&r->groups[1], "discriminator", &d, &r->m.ps, "discriminator.");
        r->n_groups = 2;
    } else {
        optim_group_init(&r->groups[0], "all", &g, &r->m.ps, NULL);
        r->n_groups = 1;
    }
}

static Loader *open_split(const Run *r, const char *split, int required) {
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = r->cfg.max_seq_len;
    lc.B = r->o.batch;
    lc.seed = r->o.seed;
    lc.mask_mode = r->o.mask_mode;
    lc.mask_prob = r->o.mask_prob;
    char err[1024];
    Loader *L = loader_open_err(r->o.data, split, &lc, err, sizeof err);
    if (!L && required) fatal("%s", err);
    if (!L) warn("no validation data (%s); evaluation is skipped", err);
    return L;
}

/* Choose the number of steps that fits o->minutes, timing one step after a warm-up step. */
static long calibrate_steps(Run *r) {
    LoaderState st;
    loader_get_state(r->train, &st);
    /* two untimed steps: the first grows the arena, the second touches its new pages (page faults
     * made a timed second step ~3x slower than a steady one) */
    train_step(r, 0, 0);
    train_step(r, 0, 0);
    double t0 = now_seconds();
    train_step(r, 0, 0);
    double dt = (now_seconds() - t0) * 1.05; /* + optimizer and logging */
    for (int i = 0; i < r->n_groups; i++) optim_zero_grad(&r->groups[i]);
    char err[256];
    if (loader_set_state(r->train, &st, err, sizeof err)) fatal("%s", err);
    double per_step = dt * (1.0 + (double)r->o.eval_batches / (3.0 * MAX(1, r->o.eval_every)));
    long steps = (long)(r->o.minutes * 60.0 / per_step);
    fprintf(stderr, "calibration: %.3f s per step -> %ld steps in %.1f minutes\n", dt, steps, r->o.minutes);
    return MAX(steps, 20);
}

int pretrain_run(const ModelConfig *cfg_in, const TrainOptions *o_in, int argc, char **argv) {
    static Run R; /* large; one per process */
    Run *r = &R;
    memset(r, 0, sizeof *r);
    r->cfg = *cfg_in;
    r->o = *o_in;
    char err[1024], path[10000];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    long start = 0;

    if (r->o.threads > 0) {
        omp_set_num_threads(r->o.threads);
        openblas_set_num_threads(r->o.threads);
    }
    if (r->o.resume) {
        if (snprintf(path, sizeof path, "%s/checkpoint.h5", r->o.out) >= (int)sizeof path)
            fatal("--resume: run directory path too long (%zu bytes)", strlen(r->o.out));
        if (checkpoint_read_state(path, &st, err, sizeof err)) fatal("%s (nothing to resume)", err);
        config_defaults(&r->cfg);
        TrainOptions keep = r->o;
        if (config_from_text(&r->cfg, st.config, path, err, sizeof err) || options_from_text(&r->o, st.config, err, sizeof err))
            fatal("checkpoint %s: %s", path, err);
        r->o.threads = keep.threads;
        r->o.stop_after = keep.stop_after;
        r->o.resume = 1;
        memcpy(r->o.data, keep.data, sizeof r->o.data);
        if (config_validate(&r->cfg, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
        start = st.step;
    }
    r->train = open_split(r, "train", 1);
    r->val = open_split(r, "val", 0);
    if (!r->o.resume) {
        int V = loader_vocab_size(r->train);
        if (V != r->cfg.vocab_size) r->cfg.vocab_size = V; /* the model's vocabulary is the data's */
        if (config_validate(&r->cfg, err, sizeof err)) fatal("%s", err);
        if (run_check_fresh(r->o.out, err, sizeof err) || run_mkdir(r->o.out, err, sizeof err)) fatal("%s", err);
    } else if (loader_vocab_size(r->train) != r->cfg.vocab_size) {
        fatal("data %s: vocabulary of %d tokens, but the checkpoint's model has %d (different tokenizer?)", r->o.data,
              loader_vocab_size(r->train), r->cfg.vocab_size);
    }

    electra_build(&r->m, &r->cfg, r->o.seed);
    tape_init(&r->t, (size_t)64 << 20);
    r->t.seed = r->o.seed;
    r->micro = xcalloc((size_t)r->o.accum, sizeof(Batch));
    r->replaced = xcalloc((size_t)r->o.accum, sizeof(int32_t *));
    for (int i = 0; i < r->o.accum; i++) {
        batch_alloc(&r->micro[i], r->o.batch, r->cfg.max_seq_len);
        r->replaced[i] = xmalloc((size_t)r->o.batch * r->cfg.max_seq_len * sizeof(int32_t));
    }

    if (r->o.resume) {
        checkpoint_state_free(&st); /* checkpoint_load fills it again, with the same contents */
        if (checkpoint_load(path, &r->m.ps, &st, err, sizeof err)) fatal("%s", err);
        size_t n_tok = 0;
        uint8_t *tok = loader_tokenizer_bytes(r->train, &n_tok);
        if (st.n_tokenizer && (n_tok != st.n_tokenizer || memcmp(tok, st.tokenizer, n_tok)))
            fatal("data %s: its tokenizer differs from the one in checkpoint %s (re-run with the original data)", r->o.data, path);
        free(tok);
        setup_groups(r);
        for (int i = 0; i < r->n_groups; i++) {
            int64_t gs = checkpoint_group_step(&st, r->groups[i].name);
            if (gs < 0) fatal("checkpoint %s: no optimizer counter for group '%s' (written in another training mode?)", path, r->groups[i].name);
            r->groups[i].step = gs;
        }
        LoaderState ls;
        if (st.n_loader_state != LOADER_STATE_LEN) fatal("checkpoint %s: loader state has %ld entries, expected %d", path, st.n_loader_state, LOADER_STATE_LEN);
        memcpy(&ls, st.loader_state, sizeof ls);
        if (loader_set_state(r->train, &ls, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
        if (metrics_open(&r->log, r->o.out, start, err, sizeof err)) fatal("%s", err);
        if (run_append_cmdline(r->o.out, argc, argv, err, sizeof err)) fatal("%s", err);
        fprintf(stderr, "resuming %s at step %ld of %ld\n", r->o.out, start, r->o.steps);
    } else {
        setup_groups(r);
        if (r->o.minutes > 0) {
            r->o.steps = calibrate_steps(r);
            for (int i = 0; i < r->n_groups; i++) optim_group_free(&r->groups[i]);
            setup_groups(r);
        }
        char *text = full_config_text(r);
        if (run_write_text(r->o.out, "config.txt", text, err, sizeof err)) fatal("%s", err);
        free(text);
        if (run_append_cmdline(r->o.out, argc, argv, err, sizeof err)) fatal("%s", err);
        if (metrics_open(&r->log, r->o.out, -1, err, sizeof err)) fatal("%s", err);
    }
    checkpoint_state_free(&st);

    const long tokens_per_step = (long)r->o.batch * r->o.accum * r->cfg.max_seq_len;
    fprintf(stderr, "model: generator %d layers, discriminator %d layers, hidden %d, vocab %d, %ld parameters; %s, %s\n",
            r->cfg.gen_num_hidden_layers, r->cfg.num_hidden_layers, r->cfg.hidden_size, r->cfg.vocab_size, params_count(&r->m.ps),
            config_sharing_str(r->cfg.embedding_sharing), config_mode_str(r->cfg.training_mode));
    fprintf(stderr, "data: %lld train sequences of %d tokens; %ld steps of %ld tokens; %d threads\n",
            (long long)loader_n_sequences(r->train), r->cfg.max_seq_len, r->o.steps, tokens_per_step, omp_get_max_threads());

    progress_init(&r->prog, start, r->o.steps);
    int bad = 0;
    long done_here = 0;
    for (long step = start; step < r->o.steps; step++) {
        StepStats s = train_step(r, step, 1);
        const long completed = step + 1;
        done_here++;
        if (s.skipped) {
            bad++;
            progress_note(&r->prog, "step %ld skipped: %s (%d in a row)", completed, s.why, bad);
        } else {
            bad = 0;
        }
        const double rtd_acc = s.n_tokens ? (double)s.rtd_ok / s.n_tokens : NAN;
        if (s.skipped || completed % r->o.log_every == 0 || completed == r->o.steps) {
            MetricsRecord rec;
            mrec_begin(&rec, M_KIND_TRAIN, completed);
            mrec_num(&rec, M_G_LOSS, s.g_loss);
            mrec_num(&rec, M_D_LOSS, s.d_loss);
            mrec_num(&rec, M_MLM_ACC, s.n_masked ? (double)s.mlm_ok / s.n_masked : NAN);
            mrec_num(&rec, M_RTD_ACC, rtd_acc);
            mrec_num(&rec, M_G_LR, s.g.lr);
            mrec_num(&rec, M_D_LR, s.d.lr);
            mrec_num(&rec, M_G_GRAD_NORM, s.g.grad_norm);
            mrec_num(&rec, M_D_GRAD_NORM, s.d.grad_norm);
            mrec_int(&rec, M_SKIPPED, s.skipped);
            mrec_num(&rec, "epoch", loader_epoch(r->train));
            if (metrics_write(&r->log, &rec, err, sizeof err)) fatal("%s", err);
        }
        progress_update(&r->prog, completed, s.g_loss, s.d_loss, rtd_acc, tokens_per_step);
        if (bad >= r->o.max_bad_steps) {
            progress_done(&r->prog);
            fprintf(stderr, "error: %d consecutive steps had a non-finite loss or gradient norm (last at step %ld); stopping. "
                            "The last good checkpoint in %s is intact (try a lower --lr)\n", bad, completed, r->o.out);
            metrics_close(&r->log);
            return 1;
        }
        const int last = completed == r->o.steps;
        if ((r->o.eval_every > 0 && completed % r->o.eval_every == 0) || last) log_eval(r, completed);
        const int stop_now = r->o.stop_after > 0 && done_here >= r->o.stop_after;
        if ((r->o.save_every > 0 && completed % r->o.save_every == 0) || last || stop_now) save_checkpoint(r, completed);
        if (stop_now) {
            progress_done(&r->prog);
            fprintf(stderr, "stopped after %ld steps (--stop-after); resume with --resume\n", done_here);
            break;
        }
    }
    progress_done(&r->prog);
    metrics_close(&r->log);
    fprintf(stderr, "run: %s (checkpoint.h5, metrics.jsonl, config.txt)\n", r->o.out);
    return 0;
}
