/* step.c — one pretraining step; see step.h. */
#include "train/step.h"
#include <math.h>
#include <string.h>
#include "autograd/util.h"

long mlm_correct(const GenOut *g) {
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

long rtd_correct(const DiscOut *d, const Batch *b) {
    long c = 0;
    for (long i = 0; i < (long)b->B * b->T; i++)
        if (b->attention_mask[i]) c += (d->logits->data[i] > 0) == (d->y[i] != 0);
    return c;
}

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

static void add_gen_stats(StepStats *s, const Tensor *lg, const GenOut *g, int A) {
    s->g_loss += lg->data[0] / A;
    s->mlm_ok += mlm_correct(g);
    s->n_masked += g->n_masked;
}

static void add_disc_stats(StepStats *s, const DiscOut *d, const Batch *b, int A) {
    s->d_loss += d->bce->data[0] / A;
    s->rtd_ok += rtd_correct(d, b);
    s->n_tokens += b->n_tokens;
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
            Tensor *lg = generator_micro(c, i, base, &in, &g, ph, &t0);
            add_gen_stats(&s, lg, &g, A);
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
            add_disc_stats(&s, &d, &c->micro[i], A);
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
            Tensor *lg = generator_micro(c, i, base, &in, &g, ph, &t0);
            phase_mark(&ph[PHASE_SAMPLE], &t0);
            Tensor *ld = discriminator_forward(t, m, &in, c->replaced[i], &d);
            Tensor *l = op_add(t, lg, ld);
            add_gen_stats(&s, lg, &g, A);
            add_disc_stats(&s, &d, &c->micro[i], A);
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
