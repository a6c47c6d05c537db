/* pretrain.c — the pretraining run: setup or resume, the loop, logging, evaluation and
 * checkpoints; see pretrain.h. */
#include "train/pretrain.h"
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "autograd/gemm.h"
#include "autograd/util.h"
#include "data/tokenizer.h"
#include "train/checkpoint.h"
#include "train/dist.h"
#include "train/evaluate.h"
#include "train/memory.h"
#include "train/metrics.h"
#include "train/signals.h"
#include "train/step.h"

char *config_to_text(const ModelConfig *c) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) fatal("out of memory");
    config_write(c, f);
    fclose(f);
    return buf;
}

int config_check_data(const ModelConfig *c, const Loader *L, char *err, size_t errlen) {
    const int V = loader_vocab_size(L);
    if (V > c->vocab_size) return errf(err, errlen, "a vocabulary of %d ids, but the model has %d", V, c->vocab_size);
    const SpecialIds sp = loader_special_ids(L);
    static const char *const names[5] = {"pad_id", "cls_id", "sep_id", "unk_id", "mask_id"};
    const int model[5] = {c->pad_id, c->cls_id, c->sep_id, c->unk_id, c->mask_id};
    const int data[5] = {sp.pad, sp.cls, sp.sep, sp.unk, sp.mask};
    for (int i = 0; i < 5; i++)
        if (model[i] != data[i]) return errf(err, errlen, "%s is %d in the model but %d in the shards", names[i], model[i], data[i]);
    return 0;
}

/* ---------------- the run ---------------- */

typedef struct Run {
    ModelConfig cfg;
    TrainOptions o;
    Electra m;
    Tape t;
    OptimMoments moments; /* of every parameter of m.ps */
    OptimGroup groups[2]; /* decoupled: generator, discriminator; joint: all */
    int n_groups;
    Loader *train, *val;
    Loader *train_short;  /* the curriculum's short sequences, or NULL (options.h, short_seq_len) */
    long short_steps;     /* steps 0 .. short_steps − 1 read train_short */
    Batch *micro;
    Batch *micro_short;
    int32_t **replaced;
    MetricsLog log;
    Progress prog;
} Run;

/* One training step of the run: the next micro-batches from the loader, then pretrain_step
 * (update = 0: forward/backward only, for timing). */
static int short_phase(const Run *r, long step) { return r->train_short && step < r->short_steps; }

/* The loader that step `step` (0-based) reads: the curriculum's short one, then the full one. */
static Loader *step_loader(const Run *r, long step) { return short_phase(r, step) ? r->train_short : r->train; }

static StepStats train_step(Run *r, long step, int update) {
    Batch *micro = short_phase(r, step) ? r->micro_short : r->micro;
    for (int i = 0; i < r->o.accum; i++) loader_next(step_loader(r, step), &micro[i]);
    const StepCtx c = {&r->m, &r->t, r->groups, micro, r->replaced, r->o.accum, r->o.seed};
    return pretrain_step(&c, step, update);
}

static void pack_loader_state(const Loader *L, int64_t out[LOADER_STATE_LEN]) {
    LoaderState st;
    loader_get_state(L, &st);
    memcpy(out, &st, sizeof st);
}

/* The model config, the training options and the tokenizer identity of the data. */
static char *full_config_text(const Run *r) {
    char *a = config_to_text(&r->cfg), *b = train_options_to_text(&r->o);
    char *s = xmalloc(strlen(a) + strlen(b) + 64);
    sprintf(s, "%s%stokenizer_hash = %s\n", a, b, loader_tokenizer_hash(r->train));
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
    pack_loader_state(step_loader(r, step), ls); /* the loader the next step reads */
    st.loader_state = ls;
    st.n_loader_state = LOADER_STATE_LEN;
    st.config = full_config_text(r);
    size_t n_tok = 0;
    st.tokenizer = loader_tokenizer_bytes(r->train, &n_tok);
    st.n_tokenizer = n_tok;
    const int keep = r->o.keep_every > 0 && step % r->o.keep_every == 0;
    if (checkpoint_save(r->o.out, &r->m.ps, &r->moments, &st, keep, err, sizeof err)) {
        char prev[4200];
        snprintf(prev, sizeof prev, "%s/checkpoint.h5", r->o.out);
        if (access(prev, F_OK) == 0) fatal("%s; the previous checkpoint is intact: free space, then continue with --resume %s", err, r->o.out);
        fatal("%s; free space, then start the run again with --out %s (no checkpoint was written)", err, r->o.out);
    }
    free(st.config);
    free(st.tokenizer);
}

static void log_eval(Run *r, long step) {
    if (!r->val) return;
    char err[1024];
    EvalResult e = evaluate(&r->m, r->val, &r->t, r->o.batch, r->cfg.max_seq_len, r->o.eval_batches, r->o.seed);
    if (dist_rank() != 0) return; /* every rank evaluates its slice; rank 0 writes */
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
    for (int l = 0; l < e.disc_layers; l++) { /* the discriminator's attention, per layer */
        static const char *const names[4] = {"norm_entropy", "self", "near", "local"};
        const double n = e.disc_att.rows[l] > 0 ? e.disc_att.rows[l] : NAN;
        const double v[4] = {e.disc_att.norm_entropy[l] / n, e.disc_att.self[l] / n, e.disc_att.near[l] / n, e.disc_att.local[l] / n};
        for (int q = 0; q < 4; q++) {
            char key[48];
            snprintf(key, sizeof key, "d_att_%s_l%d", names[q], l);
            mrec_num(&rec, key, v[q]);
        }
    }
    if (metrics_write(&r->log, &rec, err, sizeof err)) fatal("%s", err);
    progress_note(&r->prog, "eval @%ld: MLM loss %.4f acc %.4f (baseline %.4f) | RTD loss %.4f acc %.4f (baseline %.4f) AUC %.4f, %ld flagged", step,
                  e.mlm_loss, e.mlm_acc, e.baseline_mlm_acc, e.rtd_loss, e.rtd_acc, e.baseline_rtd_acc, e.rtd_auc, e.rtd_flagged);
}

/* --resume: RUNDIR/config.txt (written when the run started) and the checkpoint's config must agree;
 * a run directory without config.txt is accepted. */
static void check_saved_config(const char *rundir, const char *ckpt, const char *ckpt_config) {
    char path[4200], msg[1024];
    if (snprintf(path, sizeof path, "%s/config.txt", rundir) >= (int)sizeof path) return;
    size_t n;
    char *text = read_file(path, &n);
    if (!text) return;
    if (n == 0) fatal("--resume %s: %s: " FILE_EMPTY " (restore it, or remove it: a run directory without config.txt is accepted)", rundir, path);
    /* runs started before the tokenizer identity was written have none in config.txt */
    static const char *const no_hash[] = {"tokenizer_hash", NULL};
    const int diff = checkpoint_config_diff(ckpt_config ? ckpt_config : "", text, strstr(text, "tokenizer_hash") ? NULL : no_hash, msg, sizeof msg);
    free(text);
    if (diff) fatal("--resume %s: %s and %s disagree: %s (is the checkpoint from another run, or was config.txt edited?)", rundir, ckpt, path, msg);
}

static void setup_groups(Run *r) {
    OptimConfig g = r->o.opt;
    g.total_steps = r->o.steps;
    g.warmup_steps = r->o.warmup >= 0 ? r->o.warmup : MIN(10000, r->o.steps / 10);
    if (r->cfg.training_mode == TRAIN_DECOUPLED) {
        OptimConfig d = g;
        if (r->o.d_lr > 0) d.lr = r->o.d_lr;
        optim_group_init(&r->groups[0], "generator", &g, &r->m.ps, &r->moments, "generator.");
        optim_group_init(&r->groups[1], "discriminator", &d, &r->m.ps, &r->moments, "discriminator.");
        r->n_groups = 2;
    } else {
        optim_group_init(&r->groups[0], "all", &g, &r->m.ps, &r->moments, NULL);
        r->n_groups = 1;
    }
    if (r->o.zero && dist_world() > 1)
        for (int i = 0; i < r->n_groups; i++) optim_group_shard(&r->groups[i], dist_rank(), dist_world());
}

/* ZeRO-1: the moments outside this rank's shards go back to the system (they read as zero and are
 * never used: rank 0 gathers the others' shards into them only to write a checkpoint).  Returns
 * the bytes of moments this rank keeps. */
static double zero_release_moments(Run *r) {
    const long page = sysconf(_SC_PAGESIZE);
    double kept = 0;
    for (int i = 0; i < r->n_groups; i++) {
        const OptimGroup *g = &r->groups[i];
        const long base = r->groups[i].p[0].t->grad - r->m.ps.grad;
        for (int q = 0; q < g->world; q++) {
            long begin, n = optim_shard_span(g, q, &begin);
            if (q == dist_rank()) {
                kept += 2.0 * n * sizeof(real);
                continue;
            }
            real *bufs[2] = {r->moments.m, r->moments.v};
            for (int b = 0; b < 2; b++) {
                uintptr_t a0 = (uintptr_t)(bufs[b] + base + begin), a1 = (uintptr_t)(bufs[b] + base + begin + n);
                a0 = (a0 + page - 1) / page * page;
                a1 = a1 / page * page;
                if (a1 > a0) madvise((void *)a0, a1 - a0, MADV_DONTNEED);
            }
        }
    }
    return kept;
}

/* ZeRO-1, before a checkpoint: rank 0 gathers every shard's moments (every rank takes part). */
static void zero_gather_moments(Run *r) {
    for (int i = 0; i < r->n_groups; i++) {
        const OptimGroup *g = &r->groups[i];
        long *n = xmalloc((size_t)g->world * sizeof(long)), begin;
        for (int q = 0; q < g->world; q++) n[q] = optim_shard_span(g, q, &begin);
        const long base = g->p[0].t->grad - r->m.ps.grad;
        dist_gather_real(r->moments.m + base, n);
        dist_gather_real(r->moments.v + base, n);
        free(n);
    }
}

static int sharded(const Run *r) { return r->groups[0].world > 1; }

static Loader *open_split(const Run *r, const char *split, int required, int T, int B) {
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = T;
    lc.B = B;
    lc.seed = r->o.seed;
    lc.mask_mode = r->o.mask_mode;
    lc.mask_prob = r->o.mask_prob;
    lc.rank = dist_rank();
    lc.world = dist_world();
    char err[1024];
    Loader *L = loader_open_err(r->o.data, split, &lc, err, sizeof err);
    if (!L && required) fatal("%s", err);
    /* no <split>-00000.h5 at all: a run without validation; one that is there but unreadable: an error */
    char first[4200];
    snprintf(first, sizeof first, "%s/%s-00000.h5", r->o.data, split);
    if (!L && access(first, F_OK) == 0) fatal("%s", err);
    if (!L && dist_rank() == 0) warn("no validation data (%s); evaluation is skipped", err);
    return L;
}

/* The curriculum's short phase (options.h): its own loader over the train split, with short_batch
 * sequences of short_seq_len tokens per micro-batch, and batches to match.  Its length follows
 * o.steps, so a --minutes run opens it again once calibration has chosen the steps. */
static void open_curriculum(Run *r) {
    const int T = r->cfg.max_seq_len, Ts = r->o.short_seq_len;
    if (r->train_short) {
        loader_close(r->train_short);
        for (int i = 0; i < r->o.accum; i++) batch_free(&r->micro_short[i]);
        free(r->micro_short);
        r->train_short = NULL;
        r->micro_short = NULL;
    }
    r->short_steps = train_short_steps(&r->o, T);
    if (r->short_steps <= 0) return;
    const int Bs = train_short_batch(&r->o, T);
    if ((long)Bs * Ts > (long)r->o.batch * T) fatal("curriculum: %d x %d tokens exceed the batch's %d x %d", Bs, Ts, r->o.batch, T);
    r->train_short = open_split(r, "train", 1, Ts, Bs);
    r->micro_short = xcalloc((size_t)r->o.accum, sizeof(Batch));
    for (int i = 0; i < r->o.accum; i++) batch_alloc(&r->micro_short[i], Bs, Ts);
}

/* One tokenizer for the train shards, the val shards and the tokenizer file prep wrote beside them
 * (DIR/tokenizer.bin, or DIR/spm.model for a SentencePiece model; when present). */
static void check_data_tokenizer(const Run *r) {
    const char *h = loader_tokenizer_hash(r->train);
    if (r->val && strcmp(loader_tokenizer_hash(r->val), h))
        fatal("data %s: the val shards were made with tokenizer %s, the train shards with %s (same vocabulary size or not, "
              "they do not agree: re-run deberta prep so that both come from one tokenizer)", r->o.data, loader_tokenizer_hash(r->val), h);
    static const char *const names[2] = {"tokenizer.bin", "spm.model"};
    for (int k = 0; k < 2; k++) {
        char path[4200], file_hash[17];
        snprintf(path, sizeof path, "%s/%s", r->o.data, names[k]);
        size_t n;
        char *bytes = read_file(path, &n);
        if (!bytes) continue;
        if (n == 0) fatal("data %s: %s: " FILE_EMPTY " (replace it by the one prep wrote with these shards, or re-run deberta prep)", r->o.data, path);
        tokenizer_hash_bytes((const uint8_t *)bytes, n, file_hash);
        free(bytes);
        if (strcmp(file_hash, h))
            fatal("data %s: %s is tokenizer %s, but the shards were made with %s (replace %s by the one prep wrote "
                  "with these shards, or re-run deberta prep)", r->o.data, names[k], file_hash, h, names[k]);
    }
}

/* A new model's vocabulary and special ids are the data's. */
static void adopt_data_ids(Run *r) {
    const SpecialIds sp = loader_special_ids(r->train);
    r->cfg.vocab_size = loader_vocab_size(r->train);
    r->cfg.pad_id = sp.pad, r->cfg.cls_id = sp.cls, r->cfg.sep_id = sp.sep, r->cfg.unk_id = sp.unk, r->cfg.mask_id = sp.mask;
}

/* --init-from: the checkpoint's model must read this data: the same tokenizer when the checkpoint
 * holds one (an import with its spm.model, a pretraining run), and in any case ids that fit the model
 * and the same special ids (an import without a tokenizer). */
static void check_init_data(const Run *r) {
    char err[1024];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    if (checkpoint_read_state(r->o.init_from, &st, err, sizeof err)) fatal("--init-from: %s", err);
    if (st.n_tokenizer) {
        char h[17];
        tokenizer_hash_bytes(st.tokenizer, st.n_tokenizer, h);
        if (strcmp(h, loader_tokenizer_hash(r->train)))
            fatal("--init-from %s: the model was made with tokenizer %s, but the shards in %s with tokenizer %s (prep the text with "
                  "the model's tokenizer, e.g. deberta prep --tokenizer spm.model)", r->o.init_from, h, r->o.data, loader_tokenizer_hash(r->train));
    }
    checkpoint_state_free(&st);
    if (config_check_data(&r->cfg, r->train, err, sizeof err))
        fatal("--init-from %s: the shards in %s do not fit the model: %s (prep the text with the model's tokenizer; an import "
              "takes the special ids from HF_DIR/spm.model or --tokenizer)", r->o.init_from, r->o.data, err);
}

/* Seconds of one steady step `step` (no update): two untimed steps first -- the first grows the
 * arena, the second touches its new pages (page faults made a timed second step ~3x slower than a
 * steady one) -- then the median of CALIBRATION_STEPS timed ones (one step's time alone varied by
 * tens of percent on a shared VM); the loader is put back, so the run starts where it would have. */
enum { CALIBRATION_STEPS = 3 };
static double time_step(Run *r, long step) {
    Loader *L = step_loader(r, step);
    LoaderState st;
    loader_get_state(L, &st);
    train_step(r, step, 0);
    train_step(r, step, 0);
    double t[CALIBRATION_STEPS];
    for (int i = 0; i < CALIBRATION_STEPS; i++) {
        const double t0 = now_seconds();
        train_step(r, step, 0);
        t[i] = now_seconds() - t0;
        for (int j = i; j > 0 && t[j] < t[j - 1]; j--) { /* insertion: t stays sorted */
            const double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
    }
    double dt = t[CALIBRATION_STEPS / 2] * 1.05; /* + optimizer and logging */
    for (int i = 0; i < r->n_groups; i++) optim_zero_grad(&r->groups[i]);
    char err[256];
    if (loader_set_state(L, &st, err, sizeof err)) fatal("%s", err);
    return dt;
}

/* Choose the number of steps that fits o->minutes.  With a curriculum both phases are timed (a
 * short-sequence step is cheaper) and weighed by their share of the steps. */
static long calibrate_steps(Run *r) {
    const double full = time_step(r, r->short_steps);
    const double shrt = r->train_short ? time_step(r, 0) : full;
    const double f = r->train_short ? r->o.short_frac : 0;
    const double dt = f * shrt + (1 - f) * full;
    double per_step = dt * (1.0 + (double)r->o.eval_batches / (3.0 * MAX(1, r->o.eval_every)));
    long steps = (long)(r->o.minutes * 60.0 / per_step);
    dist_bcast(&steps, sizeof steps, 0); /* rank 0's timing decides for every rank */
    if (dist_rank() == 0) {
        if (r->train_short)
            fprintf(stderr, "calibration: %.3f s per step (%.3f s at %d tokens, %.3f s at %d) -> %ld steps in %.1f minutes\n", dt, shrt,
                    r->o.short_seq_len, full, r->cfg.max_seq_len, steps, r->o.minutes);
        else
            fprintf(stderr, "calibration: %.3f s per step -> %ld steps in %.1f minutes\n", dt, steps, r->o.minutes);
    }
    return MAX(steps, 20);
}

/* Data parallel: every rank must run the same options on the same data from the same parameters;
 * a mismatch ends every rank with one line (train/dist.h). */
static void agree_on_run(Run *r) {
    if (dist_world() == 1) return;
    int64_t counts[3] = {loader_n_sequences(r->train), r->val ? loader_n_sequences(r->val) : -1, loader_vocab_size(r->train)};
    size_t n_tok = 0;
    uint8_t *tok = loader_tokenizer_bytes(r->train, &n_tok);
    uint64_t h = dist_hash(dist_hash(DIST_HASH_INIT, counts, sizeof counts), tok, n_tok);
    free(tok);
    dist_agree("the data (sequence counts, tokenizer)", h, "every rank must read the same --data shards");
    char *text = full_config_text(r), *all = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&all, &len);
    if (!f) fatal("out of memory");
    fprintf(f, "%sresume = %d\nstop_after = %ld\nminutes = %.17g\nout = %s\n", text, r->o.resume, r->o.stop_after, r->o.minutes, r->o.out);
    fclose(f);
    free(text);
    dist_agree_text("the options", all, "launch every rank with the same flags");
    free(all);
    LoaderState ls;
    loader_get_state(r->train, &ls);
    const size_t bytes = (size_t)r->m.ps.total * sizeof(real);
    h = dist_hash(DIST_HASH_INIT, &ls, sizeof ls);
    h = dist_hash(h, r->m.ps.data, bytes);
    h = dist_hash(h, r->moments.m, bytes);
    h = dist_hash(h, r->moments.v, bytes);
    for (int i = 0; i < r->n_groups; i++) h = dist_hash(h, &r->groups[i].step, sizeof r->groups[i].step);
    dist_agree("the parameters, optimizer and loader state", h, "on --resume every rank must read the same RUNDIR/checkpoint.h5");
}

/* --resume, once the model is built: parameters, moments, optimizer counters and loader position
 * from the checkpoint at path (st: its state, read before the build), then the logs continue. */
static void restore_run(Run *r, const char *path, CheckpointState *st, int argc, char **argv) {
    char err[1024];
    const long start = st->step;
    checkpoint_state_free(st); /* checkpoint_load fills it again, with the same contents */
    if (checkpoint_load(path, &r->m.ps, &r->moments, st, err, sizeof err)) fatal("%s", err);
    size_t n_tok = 0;
    uint8_t *tok = loader_tokenizer_bytes(r->train, &n_tok);
    if (st->n_tokenizer && (n_tok != st->n_tokenizer || memcmp(tok, st->tokenizer, n_tok)))
        fatal("data %s: its tokenizer differs from the one in checkpoint %s (re-run with the original data)", r->o.data, path);
    free(tok);
    setup_groups(r);
    for (int i = 0; i < r->n_groups; i++) {
        int64_t gs = checkpoint_group_step(st, r->groups[i].name);
        if (gs < 0) fatal("checkpoint %s: no optimizer counter for group '%s' (written in another training mode?)", path, r->groups[i].name);
        r->groups[i].step = gs;
    }
    LoaderState ls;
    if (st->n_loader_state != LOADER_STATE_LEN) fatal("checkpoint %s: loader state has %ld entries, expected %d", path, st->n_loader_state, LOADER_STATE_LEN);
    memcpy(&ls, st->loader_state, sizeof ls);
    if (loader_set_state(step_loader(r, start), &ls, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
    agree_on_run(r);
    if (sharded(r)) zero_release_moments(r);
    if (dist_rank() != 0) return;
    if (metrics_open(&r->log, r->o.out, start, err, sizeof err)) fatal("%s", err);
    if (run_append_cmdline(r->o.out, argc, argv, err, sizeof err)) fatal("%s", err);
    fprintf(stderr, "resuming %s at step %ld of %ld\n", r->o.out, start, r->o.steps);
}

/* A fresh run, once the model is built: optimizer groups (after --minutes calibration), then
 * config.txt, cmdline.txt and a new metrics.jsonl. */
static void start_run(Run *r, int argc, char **argv) {
    char err[1024];
    setup_groups(r);
    agree_on_run(r);
    if (r->o.minutes > 0) {
        r->o.steps = calibrate_steps(r);
        for (int i = 0; i < r->n_groups; i++) optim_group_free(&r->groups[i]);
        setup_groups(r);
        open_curriculum(r);
    }
    if (sharded(r)) zero_release_moments(r);
    if (dist_rank() != 0) return; /* rank 0 writes the run directory */
    char *text = full_config_text(r);
    if (run_write_text(r->o.out, "config.txt", text, err, sizeof err)) fatal("%s", err);
    free(text);
    if (run_append_cmdline(r->o.out, argc, argv, err, sizeof err)) fatal("%s", err);
    if (metrics_open(&r->log, r->o.out, -1, err, sizeof err)) fatal("%s", err);
}

/* One train line of metrics.jsonl. */
static void log_train(Run *r, long completed, const StepStats *s, double rtd_acc) {
    char err[1024];
    MetricsRecord rec;
    mrec_begin(&rec, M_KIND_TRAIN, completed);
    mrec_num(&rec, M_G_LOSS, s->g_loss);
    mrec_num(&rec, M_D_LOSS, s->d_loss);
    mrec_num(&rec, M_MLM_ACC, s->n_masked ? (double)s->mlm_ok / s->n_masked : NAN);
    mrec_num(&rec, M_RTD_ACC, rtd_acc);
    mrec_num(&rec, M_G_LR, s->g.lr);
    mrec_num(&rec, M_D_LR, s->d.lr);
    mrec_num(&rec, M_G_GRAD_NORM, s->g.grad_norm);
    mrec_num(&rec, M_D_GRAD_NORM, s->d.grad_norm);
    mrec_int(&rec, M_SKIPPED, s->skipped);
    mrec_num(&rec, "epoch", loader_epoch(step_loader(r, completed)));
    if (r->train_short) mrec_int(&rec, "seq_len", short_phase(r, completed - 1) ? r->o.short_seq_len : r->cfg.max_seq_len);
    if (metrics_write(&r->log, &rec, err, sizeof err)) fatal("%s", err);
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
    const int lead = dist_rank() == 0, world = dist_world();

    /* ranks on one machine share its cores (unless --threads / OMP_NUM_THREADS says otherwise) */
    if (r->o.threads <= 0 && world > 1) r->o.threads = MAX(1, omp_get_num_procs() / dist_local_size());
    if (r->o.threads > 0) {
        omp_set_num_threads(r->o.threads);
        openblas_set_num_threads(r->o.threads);
    }
    if (r->o.resume) {
        if (snprintf(path, sizeof path, "%s/checkpoint.h5", r->o.out) >= (int)sizeof path)
            fatal("--resume: run directory path too long (%zu bytes)", strlen(r->o.out));
        if (access(path, F_OK) != 0)
            fatal("--resume %s: no checkpoint.h5 there, nothing to resume (a run stopped before its first checkpoint starts again with "
                  "--out %s)", r->o.out, r->o.out);
        if (checkpoint_read_state(path, &st, err, sizeof err)) fatal("%s (nothing to resume)", err);
        check_saved_config(r->o.out, path, st.config);
        config_defaults(&r->cfg);
        TrainOptions keep = r->o;
        r->o.short_seq_len = 0; /* a run saved before the curriculum existed had none */
        r->o.short_frac = 0;
        if (config_from_text(&r->cfg, st.config, path, err, sizeof err) || train_options_from_text(&r->o, st.config, err, sizeof err))
            fatal("checkpoint %s: %s", path, err);
        r->o.threads = keep.threads;
        r->o.stop_after = keep.stop_after;
        r->o.resume = 1;
        memcpy(r->o.data, keep.data, sizeof r->o.data);
        const long saved_ranks = r->o.ranks > 0 ? r->o.ranks : 1;
        if (saved_ranks != world) {
            char how[64] = "one process (without mpirun)";
            if (saved_ranks > 1) snprintf(how, sizeof how, "mpirun -np %ld", saved_ranks);
            fatal("--resume %s: the run was trained by %ld process%s (a global batch of %ld x %d sequences), this is %d; resume it with %s",
                  r->o.out, saved_ranks, saved_ranks > 1 ? "es" : "", saved_ranks, r->o.batch, world, how);
        }
        if (config_validate(&r->cfg, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
        start = st.step;
    }
    r->train = open_split(r, "train", 1, r->cfg.max_seq_len, r->o.batch);
    r->val = open_split(r, "val", 0, r->cfg.max_seq_len, r->o.batch);
    check_data_tokenizer(r);
    if (!r->o.resume) {
        if (r->o.init_from[0]) check_init_data(r); /* the model, its vocabulary and special ids are the checkpoint's */
        else adopt_data_ids(r);                    /* a new model's are the data's */
        if (config_validate(&r->cfg, err, sizeof err)) fatal("%s", err);
        r->o.ranks = world > 1 ? world : 0;
        train_options_resolve(&r->o, r->cfg.max_seq_len);
        if (memory_check(&r->cfg, r->o.batch, memory_available_bytes(), err, sizeof err)) fatal("%s", err);
        if (lead && (run_check_fresh(r->o.out, err, sizeof err) || run_mkdir(r->o.out, err, sizeof err))) fatal("%s", err);
    } else if (config_check_data(&r->cfg, r->train, err, sizeof err)) {
        fatal("data %s: %s (checkpoint %s: different tokenizer?)", r->o.data, err, path);
    } else if (memory_check(&r->cfg, r->o.batch, memory_available_bytes(), err, sizeof err)) {
        fatal("%s", err);
    }

    electra_build(&r->m, &r->cfg, r->o.seed);
    if (!r->o.resume && r->o.init_from[0]) { /* the parameters only: the optimizer and the data start afresh */
        CheckpointState ist;
        memset(&ist, 0, sizeof ist);
        if (checkpoint_load(r->o.init_from, &r->m.ps, NULL, &ist, err, sizeof err)) fatal("--init-from: %s", err);
        if (lead) fprintf(stderr, "init: the parameters of %s (step %lld)\n", r->o.init_from, (long long)ist.step);
        checkpoint_state_free(&ist);
    }
    optim_moments_init(&r->moments, &r->m.ps);
    tape_init(&r->t, (size_t)64 << 20);
    r->t.seed = r->o.seed;
    r->micro = xcalloc((size_t)r->o.accum, sizeof(Batch));
    r->replaced = xcalloc((size_t)r->o.accum, sizeof(int32_t *));
    for (int i = 0; i < r->o.accum; i++) {
        batch_alloc(&r->micro[i], r->o.batch, r->cfg.max_seq_len);
        r->replaced[i] = xmalloc((size_t)r->o.batch * r->cfg.max_seq_len * sizeof(int32_t));
    }
    open_curriculum(r);

    if (r->o.resume) restore_run(r, path, &st, argc, argv);
    else start_run(r, argc, argv);
    checkpoint_state_free(&st);

    const long tokens_per_step = (long)r->o.batch * r->o.accum * r->cfg.max_seq_len * world;
    if (lead) fprintf(stderr, "model: generator %d layers, discriminator %d layers, hidden %d, vocab %d, %ld parameters; %s, %s\n",
            r->cfg.gen_num_hidden_layers, r->cfg.num_hidden_layers, r->cfg.hidden_size, r->cfg.vocab_size, params_count(&r->m.ps),
            config_sharing_str(r->cfg.embedding_sharing), config_mode_str(r->cfg.training_mode));
    if (lead) {
        fprintf(stderr, "data: %lld train sequences of %d tokens; %ld steps of %ld tokens; %d threads", (long long)loader_n_sequences(r->train),
                r->cfg.max_seq_len, r->o.steps, tokens_per_step, omp_get_max_threads());
        if (world > 1) fprintf(stderr, " per rank x %d ranks (%d sequences each per micro-batch)", world, r->o.batch);
        char wait[160];
        fprintf(stderr, "; gemm kernel %s; OpenMP wait %s", gemm_kernel_name(), omp_wait_describe(wait, sizeof wait));
        fputc('\n', stderr);
        if (r->train_short)
            fprintf(stderr, "curriculum: steps 1-%ld read %d x %d-token sequences per micro-batch, then %d x %d\n", r->short_steps,
                    train_short_batch(&r->o, r->cfg.max_seq_len), r->o.short_seq_len, r->o.batch, r->cfg.max_seq_len);
        if (sharded(r)) {
            const double all = 2.0 * r->m.ps.total * sizeof(real), kept = zero_release_moments(r);
            fprintf(stderr, "ZeRO-1: rank 0 keeps %.2f of the %.2f MB of AdamW moments (%.2f MB saved per rank)\n", kept / 1e6, all / 1e6,
                    (all - kept) / 1e6);
        }
        progress_init(&r->prog, start, r->o.steps);
    }
    /* SIGTERM/SIGINT: finish the step, checkpoint, exit 0.  Not under mpirun: there the launcher's
     * SIGTERM means another rank failed (train/dist.c reports it and exits). */
    if (world == 1) signals_install(r->o.out);
    int bad = 0, stop_sig = 0;
    long done_here = 0;
    StepClock clock = {0};
    double sync_s = 0; /* time in the steps' collectives (data parallel), all steps */
    for (long step = start; step < r->o.steps; step++) {
        const double t_step = now_seconds();
        StepStats s = train_step(r, step, 1);
        stepclock_add(&clock, now_seconds() - t_step);
        sync_s += s.phase[PHASE_SYNC];
        const long completed = step + 1;
        done_here++;
        if (s.skipped) {
            bad++;
            if (lead) progress_note(&r->prog, "step %ld skipped: %s (%d in a row)", completed, s.why, bad);
        } else {
            bad = 0;
        }
        const double rtd_acc = s.n_tokens ? (double)s.rtd_ok / s.n_tokens : NAN;
        if (lead && (s.skipped || completed % r->o.log_every == 0 || completed == r->o.steps)) log_train(r, completed, &s, rtd_acc);
        if (lead) progress_update(&r->prog, completed, s.g_loss, s.d_loss, rtd_acc, tokens_per_step);
        if (bad >= r->o.max_bad_steps) { /* the same decision on every rank: the statistics are global */
            if (!lead) dist_exit(1);
            progress_done(&r->prog);
            fprintf(stderr, "error: %d consecutive steps had a non-finite loss or gradient norm (last at step %ld); stopping. "
                            "The last good checkpoint in %s is intact (try a lower --lr)\n", bad, completed, r->o.out);
            metrics_close(&r->log);
            signals_restore();
            dist_exit(1);
        }
        const int last = completed == r->o.steps;
        if ((r->o.eval_every > 0 && completed % r->o.eval_every == 0) || last) log_eval(r, completed);
        stop_sig = signals_stop_requested();
        const int stop_now = (r->o.stop_after > 0 && done_here >= r->o.stop_after) || stop_sig;
        const int keep_now = r->o.keep_every > 0 && completed % r->o.keep_every == 0;
        if ((r->o.save_every > 0 && completed % r->o.save_every == 0) || keep_now || last || stop_now) {
            if (sharded(r)) zero_gather_moments(r);
            if (lead) save_checkpoint(r, completed);
            if (sharded(r) && lead) zero_release_moments(r);
        }
        if (stop_now) {
            if (!lead) break;
            progress_done(&r->prog);
            if (stop_sig)
                fprintf(stderr, "stopped by %s after step %ld: checkpoint written to %s/checkpoint.h5; continue with --resume %s\n",
                        signals_name(stop_sig), completed, r->o.out, r->o.out);
            else
                fprintf(stderr, "stopped after %ld steps (--stop-after); resume with --resume\n", done_here);
            break;
        }
    }
    if (!lead) {
        signals_restore();
        return 0;
    }
    progress_done(&r->prog);
    if (done_here > 0) {
        stepclock_print(&clock, tokens_per_step, "evaluations and checkpoints excluded");
        if (world > 1)
            fprintf(stderr, "; rank 0 spent %.1f ms per step = %.1f%% in the collectives (the transfers and the wait for the slowest rank; "
                            "all steps)",
                    sync_s / done_here * 1e3, 100.0 * sync_s / (clock.first_s + clock.rest_s));
        fputc('\n', stderr);
    }
    metrics_close(&r->log);
    signals_restore();
    fprintf(stderr, "run: %s (checkpoint.h5, metrics.jsonl, config.txt)\n", r->o.out);
    return 0;
}
