/* step.c — one pretraining step; see step.h. */
#include "train/step.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "train/dist.h"

static int finite1(const Tensor *x) { return isfinite((double)x->data[0]); }

static inline void phase_mark(double *acc, double *t0) {
    const double t1 = now_seconds();
    *acc += t1 - *t0;
    *t0 = t1;
}

/* Micro-batch i: generator forward (dropout stream base + 2i) and the sampled replacements
 * (sampling stream base + i) into c->replaced[i]. */
static Tensor *generator_micro(const StepCtx *c, int i, uint64_t base, const ElectraInput *in, GenOut *g, double *ph, double *t0) {
    tape_reset(c->t);
    c->t->step = base + 2 * i;
    Tensor *lg = generator_forward(c->t, c->m, in, g);
    phase_mark(&ph[PHASE_G_FWD], t0);
    electra_sample(g, in, c->seed, base + i, c->replaced[i]);
    return lg;
}

/* the losses weighted by this rank's share w of the global micro-batch's count (w = 1: one process) */
static void add_gen_stats(StepStats *s, const Tensor *lg, const GenOut *g, int A, double w) {
    s->g_loss += lg->data[0] * w / A;
    s->mlm_ok += mlm_correct(g);
    s->n_masked += g->n_masked;
}

static void add_disc_stats(StepStats *s, const DiscOut *d, const Batch *b, int A, double w) {
    s->d_loss += d->bce->data[0] * w / A;
    s->rtd_ok += rtd_correct(d, b->attention_mask, (long)b->B * b->T);
    s->n_tokens += b->n_tokens;
}

/* Where this rank's micro-batches sit in the global ones and what their losses weigh (step.h). */
typedef struct {
    int64_t row0, masked0;
    double g_w, d_w; /* n_local / n_global of masked and of real tokens */
} Slice;

static void place_slices(const StepCtx *c, Slice *sl) {
    const int A = c->accum, R = dist_rank(), W = dist_world();
    for (int i = 0; i < A; i++) sl[i] = (Slice){0, 0, 1.0, 1.0};
    if (W == 1) return;
    int64_t mine[2 * 32], *all = malloc((size_t)W * 2 * A * sizeof(int64_t));
    if (!all) fatal("out of memory");
    for (int i = 0; i < A; i++) {
        mine[2 * i] = c->micro[i].n_masked;
        mine[2 * i + 1] = c->micro[i].n_tokens;
    }
    dist_allgather_i64(mine, 2 * A, all);
    for (int i = 0; i < A; i++) {
        int64_t masked = 0, tokens = 0;
        for (int r = 0; r < W; r++) {
            if (r == R) sl[i].masked0 = masked;
            masked += all[(long)r * 2 * A + 2 * i];
            tokens += all[(long)r * 2 * A + 2 * i + 1];
        }
        sl[i].row0 = (int64_t)R * c->micro[i].B;
        sl[i].g_w = masked ? (double)mine[2 * i] / (double)masked : 0;
        sl[i].d_w = tokens ? (double)mine[2 * i + 1] / (double)tokens : 0;
    }
    free(all);
}

static ElectraInput slice_input(const Batch *b, const Slice *sl) {
    ElectraInput in = electra_input(b);
    in.row0 = sl->row0;
    in.masked0 = sl->masked0;
    return in;
}

/* The update of a group after its gradient sum (zero_sync_grads); with ZeRO-1 every rank then fetches
 * the other shards' new parameters (the skip decision is the same on every rank: the norm is global). */
static OptimStepResult update_group(const StepCtx *c, OptimGroup *g, int bad, int update) {
    OptimStepResult r = {0};
    if (bad && dist_world() == 1) optim_zero_grad(g);
    else if (update) {
        r = optim_step(g);
        if (!r.skipped) zero_after_update(c->zero, g);
    }
    return r;
}

StepStats pretrain_step(const StepCtx *c, long step, int update) {
    StepStats s;
    memset(&s, 0, sizeof s);
    Tape *t = c->t;
    Electra *m = c->m;
    const int A = c->accum, W = dist_world();
    const double inv = 1.0 / A;
    const uint64_t base = (uint64_t)step * STREAMS_PER_STEP;
    double *ph = s.phase, t0 = now_seconds();
    Slice sl[32];
    if (A > 32) fatal("accum %d > 32", A);
    place_slices(c, sl);
    phase_mark(&ph[PHASE_SYNC], &t0);
    t->training = 1;
    int g_bad = 0, d_bad = 0;
    if (m->cfg.training_mode == TRAIN_DECOUPLED) {
        OptimGroup *G = &c->groups[0], *D = &c->groups[1];
        optim_zero_grad(G);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            GenOut g;
            const ElectraInput in = slice_input(&c->micro[i], &sl[i]);
            Tensor *lg = generator_micro(c, i, base, &in, &g, ph, &t0);
            add_gen_stats(&s, lg, &g, A, sl[i].g_w);
            phase_mark(&ph[PHASE_SAMPLE], &t0);
            if (!finite1(lg)) g_bad = 1;
            else tape_backward(t, lg, (real)(sl[i].g_w * inv));
            phase_mark(&ph[PHASE_G_BWD], &t0);
        }
        zero_sync_grads(c->zero, G, g_bad);
        phase_mark(&ph[PHASE_SYNC], &t0);
        s.g = update_group(c, G, g_bad, update);
        optim_zero_grad(D);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            DiscOut d;
            const ElectraInput in = slice_input(&c->micro[i], &sl[i]);
            tape_reset(t);
            t->step = base + 2 * i + 1;
            Tensor *ld = discriminator_forward(t, m, &in, c->replaced[i], &d);
            add_disc_stats(&s, &d, &c->micro[i], A, sl[i].d_w);
            phase_mark(&ph[PHASE_D_FWD], &t0);
            if (!finite1(ld)) d_bad = 1;
            else tape_backward(t, ld, (real)(sl[i].d_w * inv));
            phase_mark(&ph[PHASE_D_BWD], &t0);
        }
        zero_sync_grads(c->zero, D, d_bad);
        phase_mark(&ph[PHASE_SYNC], &t0);
        s.d = update_group(c, D, d_bad, update);
        phase_mark(&ph[PHASE_D_OPT], &t0);
    } else {
        OptimGroup *all = &c->groups[0];
        optim_zero_grad(all);
        phase_mark(&ph[PHASE_G_OPT], &t0);
        for (int i = 0; i < A; i++) {
            GenOut g;
            DiscOut d;
            const ElectraInput in = slice_input(&c->micro[i], &sl[i]);
            Tensor *lg = generator_micro(c, i, base, &in, &g, ph, &t0);
            phase_mark(&ph[PHASE_SAMPLE], &t0);
            Tensor *ld = discriminator_forward(t, m, &in, c->replaced[i], &d);
            /* one process: lg + ld; a slice: each loss weighted by its share of the global count */
            Tensor *l = W == 1 ? op_add(t, lg, ld) : op_add(t, op_scale(t, lg, (real)sl[i].g_w), op_scale(t, ld, (real)sl[i].d_w));
            add_gen_stats(&s, lg, &g, A, sl[i].g_w);
            add_disc_stats(&s, &d, &c->micro[i], A, sl[i].d_w);
            phase_mark(&ph[PHASE_D_FWD], &t0);
            if (!finite1(l)) g_bad = d_bad = 1;
            else tape_backward(t, l, (real)inv);
            phase_mark(&ph[PHASE_D_BWD], &t0);
        }
        zero_sync_grads(c->zero, all, g_bad);
        phase_mark(&ph[PHASE_SYNC], &t0);
        s.g = s.d = update_group(c, all, g_bad, update);
        phase_mark(&ph[PHASE_D_OPT], &t0);
    }
    tape_reset(t);
    if (W > 1) { /* the statistics of the global batch, the same on every rank */
        double v[8] = {s.g_loss, s.d_loss, (double)s.mlm_ok, (double)s.n_masked, (double)s.rtd_ok, (double)s.n_tokens, g_bad, d_bad};
        dist_allreduce_double(v, 8);
        s.g_loss = v[0];
        s.d_loss = v[1];
        s.mlm_ok = (long)v[2];
        s.n_masked = (long)v[3];
        s.rtd_ok = (long)v[4];
        s.n_tokens = (long)v[5];
        g_bad = v[6] > 0;
        d_bad = v[7] > 0;
        phase_mark(&ph[PHASE_SYNC], &t0);
    }
    if (g_bad || d_bad) {
        s.skipped = 1;
        s.why = "non-finite loss";
    } else if (s.g.skipped || s.d.skipped) {
        s.skipped = 1;
        s.why = "non-finite gradient norm";
    }
    return s;
}
