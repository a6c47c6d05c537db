/* pretrain.c — the pretraining run: setup or resume, the loop, logging, evaluation and
 * checkpoints; see pretrain.h. */
#include "train/pretrain.h"
#include <errno.h>
#include <math.h>
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/gemm.h"
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "train/checkpoint.h"
#include "train/dist.h"
#include "train/eval/evaluate.h"
#include "train/eval/yardstick.h"
#include "train/memory.h"
#include "train/metrics.h"
#include "train/run.h"
#include "train/zero.h"
#include "train/signals.h"
#include "train/step.h"

int pretrain_model_config(const char *init_from, char **flags, int n_flags, ModelConfig *cfg, PretrainInit *init, char *err, size_t errlen) {
    char msg[1024];
    config_defaults(cfg);
    memset(init, 0, sizeof *init);
    if (init_from[0]) { /* its model config first, the model flags then change it */
        if (!(init->ck = checkpoint_open(init_from, &init->st, msg, sizeof msg))) fatal("--init-from: %s", msg);
        if (config_from_text(cfg, init->st.config, init_from, msg, sizeof msg)) fatal("--init-from: %s", msg);
    }
    for (int i = 0; i + 1 < n_flags; i++) {
        if (!strcmp(flags[i], "--config")) {
            if (config_load(cfg, flags[++i], err, errlen)) return 1;
            continue;
        }
        const int c = config_parse_flag(cfg, n_flags, flags, &i, msg, sizeof msg);
        if (c <= 0) return errf(err, errlen, "pretrain: %s", c < 0 ? msg : "a model flag expected"), 2;
    }
    if (config_validate(cfg, err, errlen)) return 2;
    return 0;
}

void pretrain_init_close(PretrainInit *init) {
    checkpoint_close(init->ck);
    checkpoint_state_free(&init->st);
    memset(init, 0, sizeof *init);
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
    Zero zero;            /* ZeRO-1 sharding of the groups (off: one process, or --zero 0) */
    double zero_kept;     /* bytes of moments this rank keeps */
    RunDir dir;           /* the run directory, its logs, the stop / save policy (train/run.h) */
    PretrainInit *init;   /* --init-from: the checkpoint, open, or NULL */
    long tokens_per_step;
    int bad;              /* consecutive skipped steps */
    double sync_s;        /* time in the steps' collectives (data parallel), all steps */
    int reshaped;         /* resumed on another number of ranks (reshape_ranks) */
    Yardsticks ys;        /* the fixed corruption and the probe beside the shards (rank 0) */
} Run;

/* One training step of the run: the next micro-batches from the loader, then pretrain_step
 * (update = 0: forward/backward only, for timing). */
static int short_phase(const Run *r, long step) { return r->train_short && step < r->short_steps; }

/* The loader that step `step` (0-based) reads: the curriculum's short one, then the full one. */
static Loader *step_loader(const Run *r, long step) { return short_phase(r, step) ? r->train_short : r->train; }

static StepStats train_step(Run *r, long step, int update) {
    Batch *micro = short_phase(r, step) ? r->micro_short : r->micro;
    for (int i = 0; i < r->o.accum; i++) loader_next(step_loader(r, step), &micro[i]);
    const StepCtx c = {&r->m, &r->t, r->groups, micro, r->replaced, r->o.accum, r->o.seed, &r->zero};
    return pretrain_step(&c, step, update);
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

/* A checkpoint of step `step` (with ZeRO-1 rank 0 first gathers the moments; every rank takes part). */
static void save_checkpoint(Run *r, long step, int keep) {
    zero_gather_for_save(&r->zero);
    if (!r->dir.lead) return;
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = step;
    st.seed = r->o.seed;
    for (int i = 0; i < r->n_groups; i++) checkpoint_set_group_step(&st, r->groups[i].name, r->groups[i].step);
    LoaderState pos;
    int64_t ls[LOADER_STATE_LEN];
    loader_get_state(step_loader(r, step), &pos); /* the loader the next step reads */
    memcpy(ls, &pos, sizeof pos);
    st.loader_state = ls;
    st.n_loader_state = LOADER_STATE_LEN;
    st.config = full_config_text(r);
    size_t n_tok = 0;
    st.tokenizer = loader_tokenizer_bytes(r->train, &n_tok);
    st.n_tokenizer = n_tok;
    run_save(&r->dir, &r->m.ps, &r->moments, &st, keep);
    free(st.config);
    free(st.tokenizer);
    zero_release(&r->zero);
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
    const YardstickResult y = yardsticks_eval(&r->ys, &r->m, &r->t, r->o.batch);
    yardsticks_mrec(&y, &r->ys, &rec);
    char yn[160];
    yardsticks_note(&y, yn, sizeof yn);
    if (metrics_write(&r->dir.log, &rec, err, sizeof err)) fatal("%s", err);
    progress_note(&r->dir.prog, "eval @%ld: MLM loss %.4f acc %.4f (baseline %.4f) | RTD loss %.4f acc %.4f (baseline %.4f) AUC %.4f, %ld flagged%s", step,
                  e.mlm_loss, e.mlm_acc, e.baseline_mlm_acc, e.rtd_loss, e.rtd_acc, e.baseline_rtd_acc, e.rtd_auc, e.rtd_flagged, yn);
}

/* --resume: RUNDIR/config.txt (written when the run started) and the checkpoint's config must agree;
 * a run directory without config.txt is accepted, one whose config.txt cannot be read is not. */
static void check_saved_config(const char *rundir, const char *ckpt, const char *ckpt_config) {
    char path[4200], msg[1024];
    if (snprintf(path, sizeof path, "%s/config.txt", rundir) >= (int)sizeof path) return;
    size_t n;
    char *text = read_file(path, &n);
    if (!text && errno == ENOENT) return;
    if (!text) fatal("--resume %s: %s: cannot read (%s)", rundir, path, strerror(errno));
    if (n == 0) fatal("--resume %s: %s: " FILE_EMPTY " (restore it, or remove it: a run directory without config.txt is accepted)", rundir, path);
    /* the per-rank batch and the rank count follow a resume on other ranks (reshape_ranks: config.txt is
     * rewritten when it starts, the checkpoint at its first save); runs started before the tokenizer
     * identity was written have none in config.txt */
    static const char *const ranks[] = {"train_batch", "train_ranks", NULL}, *const ranks_hash[] = {"train_batch", "train_ranks", "tokenizer_hash", NULL};
    const int diff = checkpoint_config_diff(ckpt_config ? ckpt_config : "", text, strstr(text, "tokenizer_hash") ? ranks : ranks_hash, msg, sizeof msg);
    free(text);
    if (diff) fatal("--resume %s: %s and %s disagree: %s (is the checkpoint from another run, or was config.txt edited?)", rundir, ckpt, path, msg);
}

static void setup_groups(Run *r) {
    OptimConfig g = r->o.opt;
    g.total_steps = r->o.steps;
    g.warmup_steps = r->o.warmup >= 0 ? r->o.warmup : MIN(10000, r->o.steps / 10);
    if (r->o.decay_frac > 0) g.schedule = OPTIM_SCHED_WSD, g.decay_steps = MAX(1, llround(r->o.decay_frac * (double)r->o.steps));
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
    zero_init(&r->zero, r->o.zero != 0, r->groups, r->n_groups, &r->m.ps, &r->moments);
}

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
        if (!bytes && errno == ENOENT) continue;
        if (!bytes) fatal("data %s: %s: cannot read (%s)", r->o.data, path, strerror(errno));
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
    const CheckpointState *st = &r->init->st;
    if (st->n_tokenizer) {
        char h[17];
        tokenizer_hash_bytes(st->tokenizer, st->n_tokenizer, h);
        if (strcmp(h, loader_tokenizer_hash(r->train)))
            fatal("--init-from %s: the model was made with tokenizer %s, but the shards in %s with tokenizer %s (prep the text with "
                  "the model's tokenizer, e.g. deberta prep --tokenizer spm.model)", r->o.init_from, h, r->o.data, loader_tokenizer_hash(r->train));
    }
    if (config_check_data(&r->cfg, r->train, err, sizeof err))
        fatal("--init-from %s: the shards in %s do not fit the model: %s (prep the text with the model's tokenizer; an import "
              "takes the special ids from HF_DIR/spm.model or --tokenizer)", r->o.init_from, r->o.data, err);
}

/* --minutes' calibration: each phase's steps are timed for CALIBRATION_SHARE of the budget (at most
 * CALIBRATION_MAX_S seconds, at least CALIBRATION_MIN_STEPS steps, at most CALIBRATION_MAX_STEPS), and
 * its median taken: a few seconds of a slow VM then move a minority of the samples, not the median (a
 * median of 3 steps once timed such a moment, 22 % above the run's real rate, and an hour trained 48
 * minutes).  The time the calibration takes comes out of the budget. */
#define CALIBRATION_SHARE 0.01
#define CALIBRATION_MAX_S 30.0
enum { CALIBRATION_MIN_STEPS = 3, CALIBRATION_MAX_STEPS = 256 };

/* Seconds of one steady step `step` (no update), timed for about `seconds`: two untimed steps first --
 * the first grows the arena, the second touches its new pages (page faults made a timed second step
 * several times slower than a steady one) -- then the median of the timed ones; their count in *n.
 * The loader is put back, so the run starts where it would have. */
static double time_step(Run *r, long step, double seconds, int *n) {
    Loader *L = step_loader(r, step);
    LoaderState st;
    loader_get_state(L, &st);
    train_step(r, step, 0);
    train_step(r, step, 0);
    double t[CALIBRATION_MAX_STEPS];
    const double start = now_seconds();
    int k = 0;
    for (;;) { /* rank 0's clock says when to stop: every rank makes the same steps (they hold collectives) */
        int more = k < CALIBRATION_MAX_STEPS && (k < CALIBRATION_MIN_STEPS || now_seconds() - start < seconds);
        dist_bcast(&more, sizeof more, 0);
        if (!more) break;
        const double t0 = now_seconds();
        train_step(r, step, 0);
        t[k] = now_seconds() - t0;
        for (int j = k; j > 0 && t[j] < t[j - 1]; j--) { /* insertion: t stays sorted */
            const double x = t[j];
            t[j] = t[j - 1], t[j - 1] = x;
        }
        k++;
    }
    *n = k;
    const double dt = (k % 2 ? t[k / 2] : 0.5 * (t[k / 2 - 1] + t[k / 2])) * 1.05; /* + optimizer and logging */
    for (int i = 0; i < r->n_groups; i++) optim_zero_grad(&r->groups[i]);
    char err[256];
    if (loader_set_state(L, &st, err, sizeof err)) fatal("%s", err);
    return dt;
}

/* Seconds of one in-run evaluation (the live one on every rank, the yardsticks on rank 0), or 0 when the
 * run evaluates nothing: an evaluation is timed, not guessed (the yardsticks cost more than the live
 * part, and a guess of a third of a step per batch left an hour's evaluations 2 minutes short). */
static double time_eval(Run *r) {
    if (!r->val || r->o.eval_every <= 0) return 0;
    const double t0 = now_seconds();
    (void)evaluate(&r->m, r->val, &r->t, r->o.batch, r->cfg.max_seq_len, r->o.eval_batches, r->o.seed);
    if (dist_rank() == 0) (void)yardsticks_eval(&r->ys, &r->m, &r->t, r->o.batch);
    return now_seconds() - t0;
}

/* Choose the number of steps that fits o->minutes, less the calibration's own time.  With a curriculum
 * both phases are timed (a short-sequence step is cheaper) and weighed by their share of the steps. */
static long calibrate_steps(Run *r) {
    const double budget = r->o.minutes * 60.0, start = now_seconds();
    const double each = MIN(CALIBRATION_SHARE * budget, CALIBRATION_MAX_S) / (r->train_short ? 2 : 1);
    int n_full, n_short = 0;
    const double full = time_step(r, r->short_steps, each, &n_full);
    const double shrt = r->train_short ? time_step(r, 0, each, &n_short) : full;
    const double f = r->train_short ? r->o.short_frac : 0;
    const double dt = f * shrt + (1 - f) * full;
    const double ev = time_eval(r);
    const double spent = now_seconds() - start;
    const double per_step = dt + (ev > 0 ? ev / r->o.eval_every : 0);
    long steps = (long)(MAX(budget - spent, 0.0) / per_step);
    dist_bcast(&steps, sizeof steps, 0); /* rank 0's timing decides for every rank */
    if (r->train_short)
        run_say(&r->dir, "calibration: %.3f s per step (%.3f s at %d tokens, %.3f s at %d; medians of %d and %d steps), %.2f s per evaluation; "
                "%.1f s -> %ld steps in %.1f minutes\n", dt, shrt, r->o.short_seq_len, full, r->cfg.max_seq_len, n_short, n_full, ev, spent,
                steps, r->o.minutes);
    else
        run_say(&r->dir, "calibration: %.3f s per step (median of %d steps), %.2f s per evaluation; %.1f s -> %ld steps in %.1f minutes\n",
                dt, n_full, ev, spent, steps, r->o.minutes);
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
    for (int b = 0; b < r->moments.n; b++) h = dist_hash(h, r->moments.buf[b], bytes);
    for (int i = 0; i < r->n_groups; i++) h = dist_hash(h, &r->groups[i].step, sizeof r->groups[i].step);
    dist_agree("the parameters, optimizer and loader state", h, "on --resume every rank must read the same RUNDIR/checkpoint.h5");
}

/* --resume on another number of ranks (M) than the run was trained with (N): the same global batch,
 * cut into M per-rank batches.  Data order, masks, dropout and replacements are keyed by global
 * position and the checkpoint holds the full moments, so the run continues as it would have on N
 * ranks, up to the order of the gradient sums (tests/e2e-mpi-reshape.sh); ZeRO-1 cuts its shards anew.
 * config.txt is rewritten with the new batch and ranks (run_begin).  A global batch (or a curriculum
 * batch) that does not divide among M ranks is refused, naming the counts that divide it. */
static void reshape_ranks(Run *r, long saved) {
    const long world = dist_world(), global = saved * r->o.batch, T = r->cfg.max_seq_len;
    TrainOptions now = r->o;
    now.batch = (int)(global / world);
    const int short_ok = r->o.short_seq_len <= 0 || (long)train_short_batch(&now, T) * world == (long)train_short_batch(&r->o, T) * saved;
    if (global % world || !short_ok) {
        long div[48];
        int nd = 0, k = 0;
        for (long q = 1; q <= global && nd < 48; q++)
            if (global % q == 0) div[nd++] = q;
        char counts[768] = "";
        for (int i = 0; i < nd; i++) k += snprintf(counts + k, sizeof counts - (size_t)k, "%s%ld", !i ? "" : i == nd - 1 ? " or " : ", ", div[i]);
        fatal("--resume %s: the run's global batch of %ld sequences (%ld process%s x %d) does not divide among %ld ranks%s; resume it on "
              "%s ranks", r->o.out, global, saved, saved > 1 ? "es" : "", r->o.batch, world, short_ok ? "" : " (with its curriculum)",
              counts);
    }
    if (dist_rank() == 0)
        warn("--resume %s: trained by %ld process%s x %d sequences, now %ld rank%s x %ld (the same global batch of %ld)", r->o.out, saved,
             saved > 1 ? "es" : "", r->o.batch, world, world > 1 ? "s" : "", global / world, global);
    r->o.batch = now.batch;
    r->o.ranks = world > 1 ? world : 0;
    r->reshaped = 1;
}

/* --resume: the saved model config and options (RUNDIR/checkpoint.h5, opened once); the command line
 * keeps only what a resume may give (options.h: the O_RESUME_OK rows, and --data), the rest of
 * TrainOptions is not persisted. */
static void load_saved_run(Run *r) {
    RunDir *d = &r->dir;
    const char *path = d->ckpt_path;
    char err[1024];
    run_open_resume(d, r->o.out, dist_rank() == 0);
    check_saved_config(r->o.out, path, d->st.config);
    config_defaults(&r->cfg);
    r->o.short_seq_len = 0; /* a run saved before the curriculum existed had none */
    r->o.short_frac = 0;
    r->o.opt.lr = r->o.d_lr = -1; /* every run has written both rates since the first (ab4bbd9) */
    if (config_from_text(&r->cfg, d->st.config, path, err, sizeof err) || train_options_from_text(&r->o, d->st.config, err, sizeof err))
        fatal("checkpoint %s: %s", path, err);
    if (!(r->o.opt.lr >= 0 && r->o.d_lr >= 0))
        fatal("checkpoint %s: its config has no train_lr or train_d_lr, or a negative one (every run writes both: is the config damaged?)", path);
    const long saved_ranks = r->o.ranks > 0 ? r->o.ranks : 1;
    if (saved_ranks != dist_world()) reshape_ranks(r, saved_ranks);
    if (config_validate(&r->cfg, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
}

/* The shards: train, val (optional), one tokenizer; a resumed model must read them. */
static void open_data(Run *r) {
    char err[1024];
    r->train = open_split(r, "train", 1, r->cfg.max_seq_len, r->o.batch);
    r->val = open_split(r, "val", 0, r->cfg.max_seq_len, r->o.batch);
    check_data_tokenizer(r);
    if (!r->o.resume) return;
    if (config_check_data(&r->cfg, r->train, err, sizeof err))
        fatal("data %s: %s (checkpoint %s: different tokenizer?)", r->o.data, err, r->dir.ckpt_path);
    if (memory_check(&r->cfg, r->o.batch, r->o.opt.opt, memory_available_bytes(), err, sizeof err)) fatal("%s", err);
}

/* A fresh run: the model's ids (the data's, or --init-from's checked against the data), the options
 * resolved, the memory checked, then the run directory made and locked. */
static void settle_fresh_run(Run *r) {
    char err[1024];
    if (r->init) check_init_data(r); /* the model, its vocabulary and special ids are the checkpoint's */
    else adopt_data_ids(r);          /* a new model's are the data's */
    if (config_validate(&r->cfg, err, sizeof err)) fatal("%s", err);
    r->o.ranks = dist_world() > 1 ? dist_world() : 0;
    train_options_resolve(&r->o, r->cfg.max_seq_len, r->cfg.training_mode == TRAIN_JOINT);
    if (memory_check(&r->cfg, r->o.batch, r->o.opt.opt, memory_available_bytes(), err, sizeof err)) fatal("%s", err);
    run_open_fresh(&r->dir, r->o.out, dist_rank() == 0);
}

/* The model (--init-from: its parameters; the optimizer and the data start afresh), the moments, the
 * tape and the batches. */
static void build_run(Run *r) {
    char err[1024];
    electra_build(&r->m, &r->cfg, r->o.seed);
    if (r->init) {
        if (checkpoint_read_tensors(r->init->ck, &r->m.ps, NULL, err, sizeof err)) fatal("--init-from: %s", err);
        run_say(&r->dir, "init: the parameters of %s (step %lld)\n", r->o.init_from, (long long)r->init->st.step);
    }
    optim_moments_init(&r->moments, &r->m.ps, r->o.opt.opt);
    tape_init(&r->t, (size_t)64 << 20);
    r->t.seed = r->o.seed;
    r->micro = xcalloc((size_t)r->o.accum, sizeof(Batch));
    r->replaced = xcalloc((size_t)r->o.accum, sizeof(int32_t *));
    for (int i = 0; i < r->o.accum; i++) {
        batch_alloc(&r->micro[i], r->o.batch, r->cfg.max_seq_len);
        r->replaced[i] = xmalloc((size_t)r->o.batch * r->cfg.max_seq_len * sizeof(int32_t));
    }
    open_curriculum(r);
}

/* --resume, once the model is built: parameters, moments, optimizer counters and loader position
 * from the checkpoint, then the logs continue. */
static void restore_run(Run *r, int argc, char **argv) {
    RunDir *d = &r->dir;
    const CheckpointState *st = &d->st;
    const char *path = d->ckpt_path;
    char err[1024];
    run_restore(d, &r->m.ps, &r->moments);
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
    if (loader_set_state(step_loader(r, d->start), &ls, err, sizeof err)) fatal("checkpoint %s: %s", path, err);
    agree_on_run(r);
    r->zero_kept = zero_release(&r->zero);
    char *text = r->reshaped && d->lead ? full_config_text(r) : NULL; /* config.txt follows the new ranks */
    run_begin(d, text, argc, argv);
    free(text);
}

/* A fresh run, once the model is built: optimizer groups (after --minutes calibration), then
 * config.txt, cmdline.txt and a new metrics.jsonl. */
static void start_run(Run *r, int argc, char **argv) {
    setup_groups(r);
    agree_on_run(r);
    if (r->o.minutes > 0) {
        r->o.steps = r->dir.steps = calibrate_steps(r);
        for (int i = 0; i < r->n_groups; i++) optim_group_free(&r->groups[i]);
        zero_free(&r->zero);
        setup_groups(r);
        open_curriculum(r);
    }
    r->zero_kept = zero_release(&r->zero);
    char *text = r->dir.lead ? full_config_text(r) : NULL;
    run_begin(&r->dir, text, argc, argv);
    free(text);
}

/* The model, the data and the parallel setup, in the log. */
static void announce(const Run *r, const RunEnv *env) {
    const RunDir *d = &r->dir;
    const int world = dist_world();
    if (!d->lead) return;
    run_say(d, "model: generator %d layers, discriminator %d layers, hidden %d, vocab %d, %ld parameters; %s, %s\n",
            r->cfg.gen_num_hidden_layers, r->cfg.num_hidden_layers, r->cfg.hidden_size, r->cfg.vocab_size, params_count(&r->m.ps),
            config_sharing_str(r->cfg.embedding_sharing), config_mode_str(r->cfg.training_mode));
    fprintf(stderr, "data: %lld train sequences of %d tokens; %ld steps of %ld tokens; %d threads", (long long)loader_n_sequences(r->train),
            r->cfg.max_seq_len, r->o.steps, r->tokens_per_step, omp_get_max_threads());
    if (world > 1) fprintf(stderr, " per rank x %d ranks (%d sequences each per micro-batch)", world, r->o.batch);
    fprintf(stderr, "; gemm kernel %s", gemm_kernel_name());
    if (env && env->omp_wait) fprintf(stderr, "; OpenMP wait %s", env->omp_wait);
    fputc('\n', stderr);
    if (r->train_short)
        fprintf(stderr, "curriculum: steps 1-%ld read %d x %d-token sequences per micro-batch, then %d x %d\n", r->short_steps,
                train_short_batch(&r->o, r->cfg.max_seq_len), r->o.short_seq_len, r->o.batch, r->cfg.max_seq_len);
    if (r->zero.on) {
        const double all = (double)r->moments.n * r->m.ps.total * sizeof(real), kept = r->zero_kept;
        fprintf(stderr, "ZeRO-1: rank 0 keeps %.2f of the %.2f MB of %s state (%.2f MB saved per rank)\n", kept / 1e6, all / 1e6,
                r->o.opt.opt->name, (all - kept) / 1e6);
    }
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
    if (metrics_write(&r->dir.log, &rec, err, sizeof err)) fatal("%s", err);
}

/* K consecutive non-finite steps: every rank stops (the statistics are global, so is the decision). */
static void diverged(Run *r, long completed) {
    if (!r->dir.lead) dist_exit(1);
    progress_done(&r->dir.prog);
    fprintf(stderr, "error: %d consecutive steps had a non-finite loss or gradient norm (last at step %ld); stopping. "
                    "The last good checkpoint in %s is intact (try a lower --lr)\n", r->bad, completed, r->o.out);
    metrics_close(&r->dir.log);
    signals_restore();
    dist_exit(1);
}

/* One step of the loop, timed (evaluations and checkpoints excluded). */
static StepStats timed_step(Run *r, long step) {
    const double t0 = now_seconds();
    StepStats s = train_step(r, step, 1);
    stepclock_add(&r->dir.clock, now_seconds() - t0);
    r->sync_s += s.phase[PHASE_SYNC];
    return s;
}

/* After step `completed`: the skip count, the train line, the progress line; too many skips stop the run. */
static void log_step(Run *r, long completed, const StepStats *s) {
    const int lead = r->dir.lead;
    r->bad = s->skipped ? r->bad + 1 : 0;
    if (lead && s->skipped) progress_note(&r->dir.prog, "step %ld skipped: %s (%d in a row)", completed, s->why, r->bad);
    const double rtd_acc = s->n_tokens ? (double)s->rtd_ok / s->n_tokens : NAN;
    if (lead && (s->skipped || completed % r->o.log_every == 0 || completed == r->o.steps)) log_train(r, completed, s, rtd_acc);
    if (lead) progress_update(&r->dir.prog, completed, s->g_loss, s->d_loss, rtd_acc, r->tokens_per_step);
    if (r->bad >= r->o.max_bad_steps) diverged(r, completed);
}

/* The speed of this invocation's steps, the logs closed. */
static int finish(Run *r) {
    RunDir *d = &r->dir;
    if (d->lead) progress_done(&d->prog);
    if (run_speed(d, r->tokens_per_step, "evaluations and checkpoints excluded")) {
        if (dist_world() > 1)
            fprintf(stderr, "; rank 0 spent %.1f ms per step = %.1f%% in the collectives (the transfers and the wait for the slowest rank; "
                            "all steps)",
                    r->sync_s / d->done_here * 1e3, 100.0 * r->sync_s / (d->clock.first_s + d->clock.rest_s));
        fputc('\n', stderr);
    }
    run_end(d);
    yardsticks_free(&r->ys);
    if (d->lead) fprintf(stderr, "run: %s (checkpoint.h5, metrics.jsonl, config.txt)\n", r->o.out);
    return 0;
}

int pretrain_run(const ModelConfig *cfg, const TrainOptions *o, const RunEnv *env, PretrainInit *init, int argc, char **argv) {
    static Run R; /* large; one per process */
    Run *r = &R;
    memset(r, 0, sizeof *r);
    r->cfg = *cfg;
    r->o = *o;
    r->init = init && init->ck ? init : NULL;
    RunDir *d = &r->dir;
    run_threads(env);
    if (r->o.resume) load_saved_run(r); /* the model and options are the checkpoint's */
    open_data(r);
    if (!r->o.resume) settle_fresh_run(r);
    char yerr[1024];
    if (dist_rank() == 0 && r->val && yardsticks_open(&r->ys, r->o.data, &r->cfg, loader_tokenizer_hash(r->train), yerr, sizeof yerr))
        fatal("%s", yerr);
    d->steps = r->o.steps, d->save_every = r->o.save_every, d->keep_every = r->o.keep_every, d->stop_after = r->o.stop_after;
    build_run(r);
    if (r->o.resume) restore_run(r, argc, argv);
    else start_run(r, argc, argv);
    r->tokens_per_step = (long)r->o.batch * r->o.accum * r->cfg.max_seq_len * dist_world();
    announce(r, env);
    for (long step = d->start; step < r->o.steps; step++) {
        const StepStats s = timed_step(r, step);
        const long completed = step + 1;
        log_step(r, completed, &s);
        if ((r->o.eval_every > 0 && completed % r->o.eval_every == 0) || completed == r->o.steps) log_eval(r, completed);
        int save, keep;
        const int stop = run_step_done(d, completed, &save, &keep);
        if (save) save_checkpoint(r, completed, keep);
        if (stop) {
            run_stopped(d, completed);
            break;
        }
    }
    return finish(r);
}
