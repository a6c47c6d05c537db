/* test_optim.c — AdamW / XAdam / LAMB against independently computed values (long double, textbook form),
 * against torch.optim.AdamW + clip_grad_norm_ + a LambdaLR linear schedule when torch is present,
 * decay/no-decay by name, clipping, non-finite skip, schedule values, determinism over threads. */
#include "tests/testutil.h"
#include <omp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "autograd/base/util.h"
#include "train/optim.h"
#include "tests/moments.h"

#if REAL_IS_DOUBLE
#define TOL 1e-12
#else
#define TOL 2e-6
#endif

#if REAL_IS_DOUBLE
#define sqrtr_test sqrt
#else
#define sqrtr_test sqrtf
#endif

static void assert_close(double got, long double want, double tol, const char *what, int i) {
    long double d = fabsl((long double)got - want);
    if (!(d <= tol * (1.0L + fabsl(want)))) fail_msg("%s[%d]: got %.12g, expected %.12Lg (|diff| %.3Lg)", what, i, got, want, d);
}

/* A tiny model: one weight, one bias, one LayerNorm weight and bias. */
static void tiny_set(ParamSet *ps) {
    params_init(ps);
    const int s23[2] = {2, 3}, s3[1] = {3}, s2[1] = {2};
    params_add(ps, "m.encoder.dense.weight", 2, s23);
    params_add(ps, "m.encoder.dense.bias", 1, s3);
    params_add(ps, "m.encoder.LayerNorm.weight", 1, s3);
    params_add(ps, "m.encoder.LayerNorm.bias", 1, s2);
    params_finalize(ps);
    int k = 0;
    for (int i = 0; i < ps->n; i++)
        for (long j = 0; j < ps->params[i]->n; j++, k++) ps->params[i]->data[j] = (real)(0.3 * sin(1.7 * k + 0.2) + (i == 2 ? 1.0 : 0.0));
}

/* Gradient of step s (0-based), element k: varied signs and magnitudes, exact in float. */
static double grad_val(int s, int k, double scale) { return scale * ((double)((k * 7 + s * 3) % 11) - 5.0) / 8.0; }

static void set_grads(ParamSet *ps, int s, double scale) {
    int k = 0;
    for (int i = 0; i < ps->n; i++)
        for (long j = 0; j < ps->params[i]->n; j++, k++) ps->params[i]->grad[j] = (real)grad_val(s, k, scale);
}

/* The tests' schedule: the kind's defaults with lr 1e-2, weight decay 0.1, 5 steps, 2 of warm-up. */
static OptimConfig short_config(const Optimizer *kind) {
    OptimConfig c;
    optim_config_default(&c, kind);
    c.lr = 1e-2;
    c.weight_decay = 0.1;
    c.total_steps = 5;
    c.warmup_steps = 2;
    return c;
}

static void decay_by_name(void **state) {
    assert_true(optim_name_decays("generator.deberta.encoder.layer.0.attention.self.query_proj.weight"));
    assert_true(optim_name_decays("generator.deberta.embeddings.word_embeddings.weight"));
    assert_true(optim_name_decays("discriminator.deberta.embeddings.word_embeddings._weight"));
    assert_true(optim_name_decays("generator.deberta.encoder.rel_embeddings.weight"));
    assert_false(optim_name_decays("generator.deberta.encoder.layer.0.attention.self.query_proj.bias"));
    assert_false(optim_name_decays("discriminator.deberta.encoder.layer.1.output.LayerNorm.weight"));
    assert_false(optim_name_decays("discriminator.deberta.encoder.layer.1.output.LayerNorm.bias"));
    assert_false(optim_name_decays("generator.lm_predictions.lm_head.bias"));
    assert_false(optim_name_decays("generator.deberta.encoder.LayerNorm.weight"));
}

static void group_points_into_paramset(void **state) {
    ParamSet ps;
    params_init(&ps);
    const int s[1] = {5};
    params_add(&ps, "generator.a.weight", 1, s);
    params_add(&ps, "discriminator.a.weight", 1, s);
    params_add(&ps, "generator.a.bias", 1, s);
    params_finalize(&ps);
    OptimConfig c;
    optim_config_default(&c, OPTIM_ADAMW);
    OptimGroup g, d;
    optim_group_init(&g, "generator", &c, &ps, MO(&ps), "generator.");
    optim_group_init(&d, "discriminator", &c, &ps, MO(&ps), "discriminator.");
    assert_int_equal(g.n, 2);
    assert_int_equal(d.n, 1);
    assert_ptr_equal(g.p[1].t, ps.params[2]);
    assert_ptr_equal(g.p[1].s[0], MO(&ps)->buf[0] + ps.offset[2]);
    assert_ptr_equal(g.p[1].s[1], MO(&ps)->buf[1] + ps.offset[2]);
    assert_ptr_equal(d.p[0].s[0], MO(&ps)->buf[0] + ps.offset[1]);
    assert_int_equal(g.p[0].decay, 1);
    assert_int_equal(g.p[1].decay, 0);
    assert_int_equal(g.n_elems, 10);
    /* zero_grad touches only its own group */
    for (long i = 0; i < ps.total; i++) ps.grad[i] = 2;
    optim_zero_grad(&d);
    assert_near(ps.params[1]->grad[4], 0, 0);
    assert_near(ps.params[0]->grad[3], 2, 0);
    assert_near(ps.params[2]->grad[4], 2, 0);
    optim_group_free(&g);
    optim_group_free(&d);
    free_set(&ps);
}

/* Reference AdamW in long double, textbook form (Loshchilov & Hutter with torch's bias correction):
 *   p ← p·(1 − lr·wd);  m̂ = m/(1−β1^t);  v̂ = v/(1−β2^t);  p ← p − lr·m̂/(sqrt(v̂) + eps). */
typedef struct { long double p[32], m[32], v[32]; } Ref;

static void ref_init(Ref *r, const ParamSet *ps) {
    memset(r, 0, sizeof *r);
    int k = 0;
    for (int i = 0; i < ps->n; i++)
        for (long j = 0; j < ps->params[i]->n; j++, k++) r->p[k] = ps->params[i]->data[j];
}

/* The gradients of step s as set_grads writes them, into gg; returns their global norm. */
static long double ref_grads(const ParamSet *ps, int s, double gscale_in, long double *gg) {
    long double n2 = 0;
    int k = 0;
    for (int i = 0; i < ps->n; i++)
        for (long j = 0; j < ps->params[i]->n; j++, k++) {
            gg[k] = (real)grad_val(s, k, gscale_in);
            n2 += gg[k] * gg[k];
        }
    return sqrtl(n2);
}

/* lr_scale: each parameter's multiple of lr (NULL: 1 for all) */
static void ref_adamw_step(Ref *r, const ParamSet *ps, int s, double gscale_in, int t, long double lr_group, const OptimConfig *c, int xadam,
                           const double *lr_scale) {
    long double gg[32];
    const long double norm = ref_grads(ps, s, gscale_in, gg);
    int k = 0;
    long double clip = 1;
    if (!xadam && c->max_grad_norm / (norm + 1e-6L) < 1) clip = c->max_grad_norm / (norm + 1e-6L);
    if (xadam && norm / c->max_grad_norm > 1) clip = 1 / (norm / c->max_grad_norm);
    for (int i = 0; i < ps->n; i++) {
        const int decay = optim_name_decays(ps->params[i]->name);
        const long double lr = lr_group * (lr_scale ? lr_scale[i] : 1);
        for (long j = 0; j < ps->params[i]->n; j++, k++) {
            const long double g = gg[k] * clip;
            r->m[k] = c->beta1 * r->m[k] + (1 - (long double)c->beta1) * g;
            r->v[k] = c->beta2 * r->v[k] + (1 - (long double)c->beta2) * g * g;
            if (!xadam) {
                if (decay) r->p[k] *= 1 - lr * c->weight_decay;
                const long double mh = r->m[k] / (1 - powl(c->beta1, t)), vh = r->v[k] / (1 - powl(c->beta2, t));
                r->p[k] -= lr * mh / (sqrtl(vh) + c->eps);
            } else {
                long double u = r->m[k] / (sqrtl(r->v[k]) + c->eps);
                if (decay) u += c->weight_decay * r->p[k];
                r->p[k] -= lr * u;
            }
        }
    }
}

static void ref_compare(const Ref *r, const ParamSet *ps, const char *what) {
    int k = 0;
    for (int i = 0; i < ps->n; i++) {
        const Tensor *t = ps->params[i];
        const real *m = MO(ps)->buf[0] + ps->offset[i], *v = MO(ps)->buf[1] + ps->offset[i];
        for (long j = 0; j < t->n; j++, k++) {
            assert_close(t->data[j], r->p[k], TOL, what, k);
            assert_close(m[j], r->m[k], TOL, "m", k);
            assert_close(v[j], r->v[k], TOL, "v", k);
        }
    }
}

static void adamw_three_steps_match_reference(void **state) {
    ParamSet ps;
    tiny_set(&ps);
    OptimConfig c = short_config(OPTIM_ADAMW); /* lr: 0, lr/2, lr, 2lr/3, lr/3 */
    c.eps = 1e-6;
    c.max_grad_norm = 1.0;
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    Ref r;
    ref_init(&r, &ps);
    const double scales[4] = {0.1, 3.0, 0.05, 2.0}; /* steps 1 and 3 are clipped (norm > 1) */
    const long double lrs[4] = {0, 5e-3L, 1e-2L, 1e-2L * 2 / 3};
    for (int s = 0; s < 4; s++) {
        set_grads(&ps, s, scales[s]);
        OptimStepResult res = optim_step(&g);
        assert_false(res.skipped);
        assert_close(res.lr, lrs[s], 1e-15, "lr", s);
        ref_adamw_step(&r, &ps, s, scales[s], s + 1, lrs[s], &c, 0, NULL);
        ref_compare(&r, &ps, "adamw p");
        assert_int_equal(g.step, s + 1);
    }
    /* a first update with lr 0 leaves the parameters unchanged (decay too) but moves the moments */
    optim_group_free(&g);
    free_set(&ps);
}

static void clipping_returns_preclip_norm(void **state) {
    ParamSet ps;
    params_init(&ps);
    const int s[1] = {2};
    params_add(&ps, "a.weight", 1, s);
    params_add(&ps, "b.weight", 1, s);
    params_finalize(&ps);
    /* grads (3, 0) and (0, 4): global norm 5 */
    ps.params[0]->grad[0] = 3;
    ps.params[1]->grad[1] = 4;
    OptimConfig c;
    optim_config_default(&c, OPTIM_ADAMW);
    c.schedule = OPTIM_SCHED_CONSTANT;
    c.lr = 1.0;
    c.weight_decay = 0;
    c.eps = 1e-12;
    c.max_grad_norm = 1.0;
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    assert_near(optim_grad_norm(&g), 5.0, 1e-12);
    OptimStepResult r = optim_step(&g);
    assert_near(r.grad_norm, 5.0, 1e-12);
    /* clipped g = (0.6, 0) (0, 0.8) up to the 1e-6; m = 0.1 g; v = 0.001 g²; first step: m̂/sqrt(v̂) = sign(g) */
    const double clip = 1.0 / (5.0 + 1e-6);
    assert_near(MO(&ps)->buf[0][ps.offset[0]], 0.1 * 3 * clip, REAL_TOL(2e-8, 1e-16));
    assert_near(MO(&ps)->buf[1][ps.offset[1] + 1], 0.001 * 16 * clip * clip, REAL_TOL(2e-10, 1e-18));
    assert_near(ps.params[0]->data[0], -1.0, REAL_TOL(5e-7, 1e-11));
    assert_near(ps.params[0]->data[1], 0.0, 0);  /* zero grad, zero moments: no update */
    optim_group_free(&g);
    free_set(&ps);
}

static void xadam_matches_reference(void **state) {
    ParamSet ps;
    tiny_set(&ps);
    const OptimConfig c = short_config(OPTIM_XADAM); /* x = s/5, w = 0.4: lr·{0, 0.5, 0.6 (jump), 0.4} */
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    Ref r;
    ref_init(&r, &ps);
    real p0[32];
    for (int i = 0; i < 3; i++) p0[i] = ps.params[0]->data[i];
    const double scales[4] = {0.1, 3.0, 0.05, 2.0};
    const long double lrs[4] = {0, 5e-3L, 6e-3L, 4e-3L};
    for (int s = 0; s < 4; s++) {
        set_grads(&ps, s, scales[s]);
        OptimStepResult res = optim_step(&g);
        assert_close(res.lr, lrs[s], 1e-15, "lr", s);
        if (s == 0) /* lr 0: parameters untouched, moments updated */
            for (int i = 0; i < 3; i++) {
                assert_true(ps.params[0]->data[i] == p0[i]);
                assert_true(MO(&ps)->buf[0][i] != 0);
            }
        ref_adamw_step(&r, &ps, s, scales[s], s + 1, lrs[s], &c, 1, NULL);
        ref_compare(&r, &ps, "xadam p");
    }
    optim_group_free(&g);
    free_set(&ps);
}

/* A rate per parameter (fine-tuning's layer-wise decay): each parameter follows the reference with its
 * own multiple of the group's rate, in both update rules; the reported rate stays the group's. */
static void lr_scale_per_parameter(void **state) {
    for (int xadam = 0; xadam <= 1; xadam++) {
        ParamSet ps;
        tiny_set(&ps);
        const OptimConfig c = short_config(xadam ? OPTIM_XADAM : OPTIM_ADAMW);
        OptimGroup g;
        optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
        const double lr_scale[4] = {0.5, 1.0, 0.125, 2.0};
        for (int i = 0; i < g.n; i++) {
            assert_true(g.p[i].lr_scale == 1.0); /* the default */
            g.p[i].lr_scale = lr_scale[i];
        }
        Ref r;
        ref_init(&r, &ps);
        const double scales[3] = {0.1, 3.0, 0.05};
        for (int s = 0; s < 3; s++) {
            set_grads(&ps, s, scales[s]);
            const double lr = optim_lr_at(&c, g.step);
            OptimStepResult res = optim_step(&g);
            assert_true(res.lr == lr);
            ref_adamw_step(&r, &ps, s, scales[s], s + 1, lr, &c, xadam, lr_scale);
            ref_compare(&r, &ps, xadam ? "xadam p, scaled" : "adamw p, scaled");
        }
        optim_group_free(&g);
        free_set(&ps);
    }
}

static void schedule_values(void **state) {
    OptimConfig c;
    optim_config_default(&c, OPTIM_ADAMW);
    c.lr = 2.0;
    c.total_steps = 10;
    c.warmup_steps = 2;
    assert_near(optim_lr_at(&c, 0), 0.0, 1e-15);
    assert_near(optim_lr_at(&c, 1), 1.0, 1e-15);
    assert_near(optim_lr_at(&c, 2), 2.0, 1e-15);  /* peak */
    assert_near(optim_lr_at(&c, 6), 1.0, 1e-15);
    assert_near(optim_lr_at(&c, 9), 0.25, 1e-15); /* last update: lr/(T−W) */
    assert_near(optim_lr_at(&c, 10), 0.0, 1e-15);
    assert_near(optim_lr_at(&c, 12), 0.0, 1e-15);
    c.warmup_steps = 0;
    assert_near(optim_lr_at(&c, 0), 2.0, 1e-15);
    assert_near(optim_lr_at(&c, 5), 1.0, 1e-15);

    optim_config_default(&c, OPTIM_XADAM);
    assert_int_equal(c.schedule, OPTIM_SCHED_WARMUP_LINEAR);
    assert_near(c.eps, 1e-6, 0);
    assert_near(c.beta2, 0.999, 0);
    c.lr = 2.0;
    c.total_steps = 10;
    c.warmup_steps = 2; /* w = 0.2 */
    assert_near(optim_lr_at(&c, 0), 0.0, 1e-15);
    assert_near(optim_lr_at(&c, 1), 1.0, 1e-15);
    assert_near(optim_lr_at(&c, 2), 1.6, 1e-15);  /* the jump: (1 − 0.2)·lr, never the full lr */
    assert_near(optim_lr_at(&c, 5), 1.0, 1e-15);
    assert_near(optim_lr_at(&c, 9), 0.2, 1e-15);
    c.schedule = OPTIM_SCHED_CONSTANT;
    assert_near(optim_lr_at(&c, 7), 2.0, 0);

    /* warm-up, stable, decay: T 10, W 2, D 4 */
    optim_config_default(&c, OPTIM_ADAMW);
    c.schedule = OPTIM_SCHED_WSD;
    c.lr = 2.0;
    c.total_steps = 10;
    c.warmup_steps = 2;
    c.decay_steps = 4;
    const double want[11] = {0, 1, 2, 2, 2, 2, 2, 1.5, 1, 0.5, 0}; /* s = 6: the decay's first update, lr·4/4 */
    for (int s = 0; s <= 10; s++)
        if (!(fabs(optim_lr_at(&c, s) - want[s]) <= 1e-15)) fail_msg("WSD lr at %d: %g, want %g", s, optim_lr_at(&c, s), want[s]);
}

static void nonfinite_norm_skips_step(void **state) {
    ParamSet ps;
    tiny_set(&ps);
    OptimConfig c;
    optim_config_default(&c, OPTIM_ADAMW);
    c.schedule = OPTIM_SCHED_CONSTANT;
    c.lr = 0.1;
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    set_grads(&ps, 0, 1.0);
    optim_step(&g);
    const size_t bytes = (size_t)ps.total * sizeof(real);
    real *d = malloc(bytes), *m = malloc(bytes), *v = malloc(bytes);
    memcpy(d, ps.data, bytes);
    memcpy(m, MO(&ps)->buf[0], bytes);
    memcpy(v, MO(&ps)->buf[1], bytes);
    for (int bad = 0; bad < 2; bad++) {
        set_grads(&ps, 1, 1.0);
        ps.params[1]->grad[1] = bad ? (real)INFINITY : (real)NAN;
        OptimStepResult r = optim_step(&g);
        assert_int_equal(r.skipped, 1);
        assert_false(isfinite(r.grad_norm));
        assert_int_equal(g.step, 1);
        assert_memory_equal(ps.data, d, bytes);
        assert_memory_equal(MO(&ps)->buf[0], m, bytes);
        assert_memory_equal(MO(&ps)->buf[1], v, bytes);
    }
    free(d);
    free(m);
    free(v);
    optim_group_free(&g);
    free_set(&ps);
}

/* Bitwise identical norm and update for 1 and 2 threads, over several chunks and tensors. */
static void deterministic_over_threads(void **state) {
    real *res[2];
    double norms[2];
    long total = 0;
    for (int run = 0; run < 2; run++) {
        omp_set_num_threads(run + 1);
        ParamSet ps;
        params_init(&ps);
        const int s1[2] = {300, 173}, s2[1] = {OPTIM_CHUNK + 5}, s3[1] = {7};
        params_add(&ps, "x.weight", 2, s1);
        params_add(&ps, "x.bias", 1, s2);
        params_add(&ps, "y.LayerNorm.weight", 1, s3);
        params_finalize(&ps);
        for (long i = 0; i < ps.total; i++) {
            ps.data[i] = (real)sin(0.001 * i);
            ps.grad[i] = (real)(1e-3 * cos(0.37 * i) * (1 + i % 13));
        }
        OptimConfig c;
        optim_config_default(&c, OPTIM_ADAMW);
        c.lr = 1e-3;
        c.total_steps = 10;
        c.warmup_steps = 1;
        OptimGroup g;
        optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
        assert_true(g.n_chunks >= 6);
        norms[run] = optim_grad_norm(&g);
        for (int s = 0; s < 3; s++) optim_step(&g);
        total = ps.total;
        res[run] = malloc((size_t)total * sizeof(real));
        memcpy(res[run], ps.data, (size_t)total * sizeof(real));
        optim_group_free(&g);
        free_set(&ps);
    }
    omp_set_num_threads(2);
    assert_true(norms[0] == norms[1]);
    assert_memory_equal(res[0], res[1], (size_t)total * sizeof(real));
    free(res[0]);
    free(res[1]);
}

/* torch.optim.AdamW with decay / no-decay groups, clip_grad_norm_(1.0), and the transformers linear
 * schedule as a LambdaLR; same inputs, 4 steps.  Skipped when /usr/bin/python3 has no torch. */
static void adamw_matches_torch(void **state) {
    if (system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") != 0) {
        test_skip("adamw_matches_torch: /usr/bin/python3 with torch not available");
    }
    ParamSet ps;
    tiny_set(&ps);
    char in[] = "/tmp/deberta-test-optim-XXXXXX";
    int fd = mkstemp(in);
    assert_true(fd >= 0);
    FILE *f = fdopen(fd, "w");
    const double scales[4] = {0.1, 3.0, 0.05, 2.0};
    fprintf(f, "%s\n", REAL_IS_DOUBLE ? "float64" : "float32");
    for (int i = 0; i < ps.n; i++) {
        fprintf(f, "%s %ld", ps.params[i]->name, ps.params[i]->n);
        for (long j = 0; j < ps.params[i]->n; j++) fprintf(f, " %.17g", (double)ps.params[i]->data[j]);
        fprintf(f, "\n");
    }
    for (int s = 0; s < 4; s++) {
        set_grads(&ps, s, scales[s]);
        for (long i = 0; i < ps.total; i++) fprintf(f, "%.17g ", (double)ps.grad[i]);
        fprintf(f, "\n");
    }
    fclose(f);
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 - %s <<'EOF'\n%s\nEOF\n", in,
             "import sys, torch\n"
             "L = open(sys.argv[1]).read().split('\\n')\n"
             "dt = getattr(torch, L[0]); P = []; names = []\n"
             "for l in L[1:5]:\n"
             "    w = l.split(); names.append(w[0]); P.append(torch.tensor([float(x) for x in w[2:]], dtype=dt, requires_grad=True))\n"
             "nd = lambda n: 'bias' in n or 'LayerNorm.weight' in n\n"
             "groups = [{'params': [p for n, p in zip(names, P) if not nd(n)], 'weight_decay': 0.1},\n"
             "          {'params': [p for n, p in zip(names, P) if nd(n)], 'weight_decay': 0.0}]\n"
             "opt = torch.optim.AdamW(groups, lr=1e-2, betas=(0.9, 0.999), eps=1e-6)\n"
             "T, W = 5, 2\n"
             "sch = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s / W if s < W else max(0.0, (T - s) / (T - W)))\n"
             "for s in range(4):\n"
             "    g = [float(x) for x in L[5 + s].split()]; k = 0\n"
             "    for p in P:\n"
             "        n = p.numel(); p.grad = torch.tensor(g[k:k + n], dtype=dt); k += (n + 15) // 16 * 16\n"
             "    torch.nn.utils.clip_grad_norm_(P, 1.0)\n"
             "    opt.step(); sch.step()\n"
             "print(' '.join('%.17g' % x for p in P for x in p.detach().tolist()))\n");
    FILE *py = popen(cmd, "r");
    assert_non_null(py);
    double want[32];
    int nw = 0;
    while (nw < 32 && fscanf(py, "%lf", &want[nw]) == 1) nw++;
    int rc = pclose(py);
    unlink(in);
    assert_int_equal(rc, 0);

    const OptimConfig c = short_config(OPTIM_ADAMW);
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    for (int s = 0; s < 4; s++) {
        set_grads(&ps, s, scales[s]);
        optim_step(&g);
    }
    int k = 0, nbitexact = 0;
    for (int i = 0; i < ps.n; i++)
        for (long j = 0; j < ps.params[i]->n; j++, k++) {
            assert_true(k < nw);
            assert_close(ps.params[i]->data[j], want[k], TOL, "vs torch", k);
            nbitexact += (real)want[k] == ps.params[i]->data[j];
        }
    assert_int_equal(k, nw);
    fprintf(stderr, "adamw vs torch: %d of %d parameters bit-identical\n", nbitexact, k);
    optim_group_free(&g);
    free_set(&ps);
}

/* The kernels (vectorized where AVX is there) equal the plain scalar formulas in torch's / the
 * official order bit for bit, on sizes with a vector body and a tail, decay and no decay. */
static void kernels_equal_scalar_formulas(void **state) {
    for (int kind = 0; kind < 2; kind++) {
        ParamSet ps;
        params_init(&ps);
        const int s1[1] = {1003}, s2[2] = {3, 11};
        params_add(&ps, "x.dense.weight", 1, s1);
        params_add(&ps, "x.LayerNorm.bias", 2, s2);
        params_finalize(&ps);
        const long N = ps.total;
        for (long i = 0; i < N; i++) {
            ps.data[i] = (real)sin(0.01 * i);
            MO(&ps)->buf[0][i] = (real)(1e-3 * cos(0.3 * i));
            MO(&ps)->buf[1][i] = (real)(1e-6 * (1 + sin(0.7 * i)));
            ps.grad[i] = (real)(0.05 * cos(0.11 * i) * (i % 5 - 2));
        }
        real *w = malloc((size_t)N * sizeof(real)), *m = malloc((size_t)N * sizeof(real)), *v = malloc((size_t)N * sizeof(real));
        memcpy(w, ps.data, (size_t)N * sizeof(real));
        memcpy(m, MO(&ps)->buf[0], (size_t)N * sizeof(real));
        memcpy(v, MO(&ps)->buf[1], (size_t)N * sizeof(real));
        OptimConfig c;
        optim_config_default(&c, kind ? OPTIM_XADAM : OPTIM_ADAMW);
        c.schedule = OPTIM_SCHED_CONSTANT;
        c.lr = 3e-3;
        c.weight_decay = 0.1;
        c.max_grad_norm = 0.5; /* clipped */
        OptimGroup g;
        optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
        g.step = 4; /* t = 5 */
        /* norm: 4 lanes in double, element i in lane i mod 4 per chunk */
        long double direct = 0;
        for (int k = 0; k < ps.n; k++)
            for (long i = 0; i < ps.params[k]->n; i++) direct += (long double)ps.params[k]->grad[i] * ps.params[k]->grad[i];
        double s0 = 0;
        for (int k = 0; k < ps.n; k++) {
            double acc[4] = {0, 0, 0, 0};
            const real *gr = ps.params[k]->grad;
            for (long i = 0; i < ps.params[k]->n; i++) acc[i % 4] += (double)gr[i] * (double)gr[i];
            s0 += (acc[0] + acc[1]) + (acc[2] + acc[3]);
        }
        const double norm = sqrt(s0);
        OptimStepResult r = optim_step(&g);
        assert_true(r.grad_norm == norm);
        assert_close(r.grad_norm, sqrtl(direct), 1e-14, "norm", 0);
        const double lr = c.lr;
        for (int k = 0; k < ps.n; k++) {
            const int decay = optim_name_decays(ps.params[k]->name);
            for (long j = 0; j < ps.params[k]->n; j++) {
                const long i = ps.offset[k] + j;
                const real b1 = (real)c.beta1, ob1 = (real)(1.0 - c.beta1), b2 = (real)c.beta2, ob2 = (real)(1.0 - c.beta2), eps = (real)c.eps;
                if (kind == 0) {
                    const real g = ps.grad[i] * (real)(c.max_grad_norm / (norm + 1e-6));
                    const real p = decay ? w[i] * (real)(1.0 - lr * c.weight_decay) : w[i];
                    const real mi = m[i] * b1 + ob1 * g, vi = v[i] * b2 + ob2 * g * g;
                    const real denom = sqrtr_test(vi) / (real)sqrt(1.0 - pow(c.beta2, 5)) + eps;
                    w[i] = p + (real)(-(lr / (1.0 - pow(c.beta1, 5)))) * mi / denom;
                    m[i] = mi;
                    v[i] = vi;
                } else {
                    const real g = ps.grad[i] / (real)(norm / c.max_grad_norm);
                    const real mi = m[i] * b1 + ob1 * g, vi = v[i] * b2 + ob2 * g * g;
                    real u = mi / (sqrtr_test(vi) + eps);
                    if (decay) u += (real)c.weight_decay * w[i];
                    w[i] -= (real)lr * u;
                    m[i] = mi;
                    v[i] = vi;
                }
                if (w[i] != ps.data[i] || m[i] != MO(&ps)->buf[0][i] || v[i] != MO(&ps)->buf[1][i])
                    fail_msg("%s: element %ld of '%s' differs from the scalar formula: %.9g vs %.9g", kind ? "xadam" : "adamw", j,
                             ps.params[k]->name, (double)ps.data[i], (double)w[i]);
            }
        }
        free(w);
        free(m);
        free(v);
        optim_group_free(&g);
        free_set(&ps);
    }
}

/* ---- LAMB (train/optim_lamb.c) ---- */

/* Reference LAMB step in long double (You et al. 2019, Algorithm 2, with AdamW's clipping): per
 * tensor u = m̂/(sqrt(v̂) + eps) + wd·p (wd only for decay parameters), then p −= lr·r·u with
 * r = ‖p‖/‖u‖ for decay parameters (1 if a norm is 0) and r = 1 for the others. */
static void ref_lamb_step(Ref *r, const ParamSet *ps, int s, double gscale_in, int t, long double lr, const OptimConfig *c) {
    long double gg[32];
    const long double norm = ref_grads(ps, s, gscale_in, gg);
    int k = 0;
    const long double clip = c->max_grad_norm / (norm + 1e-6L) < 1 ? c->max_grad_norm / (norm + 1e-6L) : 1;
    for (int i = 0; i < ps->n; i++) {
        const int decay = optim_name_decays(ps->params[i]->name), k0 = k;
        long double u[32], sp = 0, su = 0;
        for (long j = 0; j < ps->params[i]->n; j++, k++) {
            const long double g = gg[k] * clip;
            r->m[k] = c->beta1 * r->m[k] + (1 - (long double)c->beta1) * g;
            r->v[k] = c->beta2 * r->v[k] + (1 - (long double)c->beta2) * g * g;
            const long double mh = r->m[k] / (1 - powl(c->beta1, t)), vh = r->v[k] / (1 - powl(c->beta2, t));
            u[j] = mh / (sqrtl(vh) + c->eps) + (decay ? c->weight_decay * r->p[k] : 0);
            sp += r->p[k] * r->p[k];
            su += u[j] * u[j];
        }
        const long double ratio = decay && sp > 0 && su > 0 ? sqrtl(sp) / sqrtl(su) : 1;
        for (long j = 0; j < ps->params[i]->n; j++) r->p[k0 + j] -= lr * ratio * u[j];
    }
}

/* Four steps (warm-up, clipping at step 2 and 4) against the reference; the trust ratio of the
 * 2x3 weight is far from 1 (about 0.3), so a missing or wrong ratio shows. */
static void lamb_matches_reference(void **state) {
    ParamSet ps;
    tiny_set(&ps);
    const Optimizer *lamb = optim_find("lamb");
    assert_non_null(lamb);
    const OptimConfig c = short_config(lamb); /* linear: lr·{0, 1/2, 1, 2/3} */
    assert_int_equal(c.schedule, OPTIM_SCHED_LINEAR);
    OptimGroup g;
    optim_group_init(&g, "all", &c, &ps, MO(&ps), NULL);
    Ref r;
    ref_init(&r, &ps);
    const double scales[4] = {0.1, 3.0, 0.05, 2.0};
    const long double lrs[4] = {0, 5e-3L, 1e-2L, 1e-2L * 2 / 3};
    for (int s = 0; s < 4; s++) {
        set_grads(&ps, s, scales[s]);
        OptimStepResult res = optim_step(&g);
        assert_close(res.lr, lrs[s], 1e-15, "lr", s);
        ref_lamb_step(&r, &ps, s, scales[s], s + 1, lrs[s], &c);
        ref_compare(&r, &ps, "lamb p");
    }
    optim_group_free(&g);
    free_set(&ps);
}

/* A tensor of several chunks: the first step against the formula.  Then ZeRO-1 on two emulated ranks (two threads, each with its own copy of the parameters and state, the
 * partial sums summed through a barrier as train/zero.c's allreduce does): each rank's shard, which
 * cuts a 3-chunk tensor in two, ends bit-identical to one unsharded group. */
static pthread_barrier_t EMU_BAR;
static OptimGroup *EMU_G[2];

static void emu_sum_partials(double *partial, int n) {
    const int me = partial >= EMU_G[1]->partial && partial < EMU_G[1]->partial + OPTIM_PARTIALS * EMU_G[1]->n_chunks;
    const long off = partial - EMU_G[me]->partial;
    pthread_barrier_wait(&EMU_BAR);
    if (me == 0)
        for (int i = 0; i < n; i++) EMU_G[0]->partial[off + i] = EMU_G[1]->partial[off + i] = EMU_G[0]->partial[off + i] + EMU_G[1]->partial[off + i];
    pthread_barrier_wait(&EMU_BAR);
}

static void big_set(ParamSet *ps) {
    params_init(ps);
    const int s1[1] = {3 * OPTIM_CHUNK + 5}, s2[1] = {7}, s3[2] = {10, 10};
    params_add(ps, "x.dense.weight", 1, s1);
    params_add(ps, "x.dense.bias", 1, s2);
    params_add(ps, "y.dense.weight", 2, s3);
    params_finalize(ps);
    for (long i = 0; i < ps->total; i++) ps->data[i] = (real)sin(0.001 * i);
}

static void big_grads(ParamSet *ps, int s) { /* the parameters' elements only (not the padding between them) */
    for (int k = 0; k < ps->n; k++)
        for (long j = 0; j < ps->params[k]->n; j++) {
            const long i = ps->offset[k] + j;
            ps->grad[i] = (real)(1e-3 * cos(0.37 * i + s) * (1 + i % 13));
        }
}

typedef struct EmuRank { ParamSet ps; OptimGroup g; } EmuRank;

static void *emu_run(void *arg) {
    EmuRank *e = arg;
    omp_set_num_threads(1);
    for (int s = 0; s < 3; s++) {
        big_grads(&e->ps, s);
        optim_step(&e->g);
    }
    return NULL;
}

static void lamb_sharded_equals_unsharded(void **state) {
    OptimConfig c;
    optim_config_default(&c, optim_find("lamb"));
    c.schedule = OPTIM_SCHED_CONSTANT;
    c.lr = 1e-2;
    c.max_grad_norm = 0.5;
    ParamSet one;
    big_set(&one);
    OptimGroup g1;
    optim_group_init(&g1, "all", &c, &one, MO(&one), NULL);
    /* the first step against the formula (m = v = 0 before it, t = 1: m̂ = g, v̂ = g²), in long double:
     * the trust ratio of the 4-chunk tensor is over all its chunks */
    long double *want = malloc((size_t)one.total * sizeof(long double)), n2 = 0;
    big_grads(&one, 0);
    for (int k = 0; k < one.n; k++)
        for (long j = 0; j < one.params[k]->n; j++) n2 += (long double)one.params[k]->grad[j] * one.params[k]->grad[j];
    const long double clip = c.max_grad_norm / (sqrtl(n2) + 1e-6L);
    assert_true(clip < 1);
    for (int k = 0; k < one.n; k++) {
        const Tensor *t = one.params[k];
        const int decay = optim_name_decays(t->name);
        long double sp = 0, su = 0;
        for (long j = 0; j < t->n; j++) {
            const long double g = t->grad[j] * clip, u = g / (sqrtl(g * g) + c.eps) + (decay ? c.weight_decay * t->data[j] : 0);
            sp += (long double)t->data[j] * t->data[j];
            su += u * u;
            want[one.offset[k] + j] = u;
        }
        const long double ratio = decay ? sqrtl(sp) / sqrtl(su) : 1;
        for (long j = 0; j < t->n; j++) want[one.offset[k] + j] = t->data[j] - c.lr * ratio * want[one.offset[k] + j];
    }
    optim_step(&g1);
    for (int k = 0; k < one.n; k++)
        for (long j = 0; j < one.params[k]->n; j++) assert_close(one.params[k]->data[j], want[one.offset[k] + j], TOL, one.params[k]->name, (int)j);
    free(want);
    for (int s = 1; s < 3; s++) {
        big_grads(&one, s);
        optim_step(&g1);
    }
    static EmuRank r[2];
    pthread_t th[2];
    pthread_barrier_init(&EMU_BAR, NULL, 2);
    for (int k = 0; k < 2; k++) {
        big_set(&r[k].ps);
        optim_group_init(&r[k].g, "all", &c, &r[k].ps, MO(&r[k].ps), NULL);
        optim_group_shard(&r[k].g, k, 2);
        r[k].g.sum_partials = emu_sum_partials;
        EMU_G[k] = &r[k].g;
    }
    assert_true(r[0].g.own1 == 2); /* the shard boundary cuts x.dense.weight (chunks 0-3) */
    for (int k = 0; k < 2; k++) assert_int_equal(pthread_create(&th[k], NULL, emu_run, &r[k]), 0);
    for (int k = 0; k < 2; k++) pthread_join(th[k], NULL);
    pthread_barrier_destroy(&EMU_BAR);
    for (int k = 0; k < 2; k++) {
        long begin, n = optim_shard_span(&r[k].g, k, &begin);
        assert_true(n > 0);
        if (memcmp(r[k].ps.data + begin, one.data + begin, (size_t)n * sizeof(real)) ||
            memcmp(MO(&r[k].ps)->buf[0] + begin, MO(&one)->buf[0] + begin, (size_t)n * sizeof(real)))
            fail_msg("rank %d of 2: its shard (elements %ld..%ld) differs from the unsharded update", k, begin, begin + n);
        optim_group_free(&r[k].g);
        free_set(&r[k].ps);
    }
    optim_group_free(&g1);
    free_set(&one);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decay_by_name),
        cmocka_unit_test(group_points_into_paramset),
        cmocka_unit_test(adamw_three_steps_match_reference),
        cmocka_unit_test(clipping_returns_preclip_norm),
        cmocka_unit_test(xadam_matches_reference),
        cmocka_unit_test(lr_scale_per_parameter),
        cmocka_unit_test(schedule_values),
        cmocka_unit_test(nonfinite_norm_skips_step),
        cmocka_unit_test(deterministic_over_threads),
        cmocka_unit_test(kernels_equal_scalar_formulas),
        cmocka_unit_test(adamw_matches_torch),
        cmocka_unit_test(lamb_matches_reference),
        cmocka_unit_test(lamb_sharded_equals_unsharded),
    };
    return test_exit(cmocka_run_group_tests_name("optim", tests, NULL, NULL));
}
