/* bench_attention.c — `deberta bench attention`: forward + backward time of one disentangled
 * attention block and of one full post-LN layer at a preset's shape, measured the way the PyTorch
 * reference measures `deberta_ref.py bench --part attention|layer` (scripts/bench-attention.sh runs
 * both and prints the ratio): every step LayerNorms the rel table, runs the block on x [B,T,H]
 * (no padding, dropout as configured, 0.1 by default), and backpropagates loss = Σ y ⊙ w into x and
 * every parameter.  Reports the median over --steps after --warmup; --unfused times the readable
 * composition of generic ops instead of the fused attention op. */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/base/util.h"
#include "model/encoder.h"
#include "model/init.h"
#include "train/bench/bench.h"

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void usage(FILE *f) {
    fprintf(f, "usage: deberta bench attention [--part attention|layer|both] [--preset tiny] [--batch 16] [--seq 128]\n"
               "                               [--steps 20] [--warmup 3] [--unfused] [--KEY VALUE ...]\n"
               "Forward + backward of one attention block / one full layer (the reference's\n"
               "`deberta_ref.py bench --part attention|layer`); median ms, then a RESULT {json} line.\n");
}

/* median ms of one part: 0 = attention block, 1 = full layer */
static double run_part(const ModelConfig *cfg, int part, int B, int T, int steps, int warmup, size_t *peak) {
    ParamSet ps;
    params_init(&ps);
    Encoder e;
    encoder_register(&e, &ps, cfg, 1, "", ENC_NO_WORD | ENC_NO_POSITION);
    params_finalize(&ps);
    model_init_params(&ps, cfg->initializer_range, 1);
    const int s3[3] = {B, T, cfg->hidden_size};
    Tensor *x = gradcheck_leaf(3, s3, 1, "x"), *w = gradcheck_leaf(3, s3, 0, "w");
    gradcheck_fill_uniform(x, 1, -1, 1);
    gradcheck_fill_uniform(w, 2, -1, 1);
    Tape t;
    tape_init(&t, 1 << 20);
    t.training = 1;
    double *ms = xcalloc((size_t)steps, sizeof(double));
    for (int s = 0; s < warmup + steps; s++) {
        const double t0 = now_seconds();
        tape_reset(&t);
        t.step = (uint64_t)s;
        params_zero_grad(&ps);
        memset(x->grad, 0, (size_t)x->n * sizeof(real));
        RelContext rc;
        relctx_build(&t, &rc, cfg, e.rel, e.rel_ln_g, e.rel_ln_b, NULL, B, T);
        Tensor *y = part == 0 ? attention_forward(&t, cfg, &e.layers[0].att, x, x, &rc) : layer_forward(&t, cfg, &e.layers[0], x, x, &rc);
        tape_backward_from(&t, y, w->data); /* d(Σ y ⊙ w)/dy = w */
        const double dt = now_seconds() - t0;
        if (s >= warmup) ms[s - warmup] = dt * 1e3;
    }
    *peak = t.arena.peak;
    qsort(ms, (size_t)steps, sizeof(double), cmp_d);
    const double med = steps % 2 ? ms[steps / 2] : 0.5 * (ms[steps / 2 - 1] + ms[steps / 2]);
    free(ms);
    tape_free(&t);
    gradcheck_leaf_free(x);
    gradcheck_leaf_free(w);
    encoder_free(&e);
    params_free(&ps);
    return med;
}

/* the mode's own flags (bench_parse_flags does the shared ones); ctx = the parts bit set */
static int attention_flag(void *ctx, int argc, char **argv, int *i) {
    const char *a = argv[*i];
    if (!strcmp(a, "--unfused")) {
        g_attention_unfused = 1;
        return 1;
    }
    if (strcmp(a, "--part") || *i + 1 >= argc) return 0;
    const char *p = argv[++*i];
    int *parts = ctx;
    *parts = !strcmp(p, "attention") ? 1 : !strcmp(p, "layer") ? 2 : !strcmp(p, "both") ? 3 : 0;
    if (!*parts) fatal("bench attention: --part %s (attention, layer or both)", p);
    return 1;
}

int bench_attention(int argc, char **argv) {
    ModelConfig cfg;
    config_preset(&cfg, "tiny");
    int B = 16, T = 128, steps = 20, warmup = 3, parts = 3;
    const BenchFlags fl = {.who = "bench attention", .help_cmd = "bench attention", .usage = usage, .batch = &B, .seq = &T,
                           .steps = &steps, .warmup = &warmup, .extra = attention_flag, .ctx = &parts};
    const int rc = bench_parse_flags(&fl, &cfg, argc, argv);
    if (rc >= 0) return rc;
    char err[512];
    if (config_validate(&cfg, err, sizeof err)) fatal("bench attention: %s", err);
    if (B < 1 || T < 2 || T > cfg.max_position_embeddings || steps < 1 || warmup < 0)
        fatal("bench attention: need --batch >= 1, 2 <= --seq <= %d, --steps >= 1", cfg.max_position_embeddings);
    const char *names[2] = {"attention", "layer"};
    for (int part = 0; part < 2; part++) {
        if (!(parts & (1 << part))) continue;
        size_t peak = 0;
        const double med = run_part(&cfg, part, B, T, steps, warmup, &peak);
        printf("bench %s: H=%d A=%d D=%d I=%d R=%d terms=%s B=%d T=%d threads=%d %s dropout=%g  median %.2f ms fwd+bwd  arena peak %.1f MB\n",
               names[part], cfg.hidden_size, cfg.num_attention_heads, cfg.attention_head_size, cfg.intermediate_size,
               config_rel_rows(&cfg), config_terms_str(cfg.att_terms), B, T, omp_get_max_threads(),
               g_attention_unfused ? "unfused" : "fused", cfg.hidden_dropout_prob, med, peak / 1048576.0);
        printf("RESULT {\"part\": \"%s\", \"batch\": %d, \"seq\": %d, \"hidden\": %d, \"threads\": %d, \"attention\": \"%s\", "
               "\"ms_median\": %.4f, \"arena_peak_mb\": %.2f, \"real\": \"%s\"}\n",
               names[part], B, T, cfg.hidden_size, omp_get_max_threads(), g_attention_unfused ? "unfused" : "fused", med,
               peak / 1048576.0, REAL_NAME);
    }
    return 0;
}
