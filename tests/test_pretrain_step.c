/* test_pretrain_step.c — the full training step (train/pretrain.c pretrain_step: generator
 * forward/backward, sampling, discriminator forward/backward, both updates) does no heap allocation
 * after warm-up: g_alloc_count (autograd/base/util.h counts every x* allocation, the arena's included)
 * is unchanged over steps 3..5, in decoupled (GDES) and joint (ES) mode, with dropout on; and the
 * arena has stopped growing.  Also: the step is bitwise repeatable (same seed, same batches ->
 * same parameters), and recycling dead activation gradients (tape.h, the default) changes no bit of
 * the result while the arena's high-water mark drops below that of keeping every gradient. */
#include "tests/testutil.h"
#include <stdlib.h>
#include <string.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/loader.h"
#include "train/step.h"

enum { B = 3, T = 24, NB = 2 };

static void synth(Batch *b, const ModelConfig *c, int which) {
    b->n_masked = b->n_tokens = 0;
    for (int s = 0; s < B; s++) {
        int32_t *ids = b->input_ids + s * T, *lab = b->labels + s * T, *am = b->attention_mask + s * T;
        const int n = s == 0 ? T : T - 3 * s; /* some padding */
        for (int i = 0; i < T; i++) {
            ids[i] = i < n ? 5 + (int32_t)rng_below(9, rng_stream(RNG_TEST, (uint64_t)which, (uint64_t)s), (uint64_t)i,
                                                    (uint64_t)(c->vocab_size - 5))
                           : 0;
            am[i] = i < n;
        }
        ids[0] = c->cls_id;
        ids[n - 1] = c->sep_id;
        b->n_tokens += n;
        b->n_masked += mask_sequence(ids, lab, n, T, MASK_OFFICIAL, 0.15, c->vocab_size, 9,
                                     rng_stream(RNG_MASK, (uint64_t)which, 0), (uint64_t)s << 20);
    }
}

/* Runs `steps` steps; returns the allocations counted during steps first_counted.. (and the arena
 * capacity before/after them, and its high-water mark), and copies the final parameters into out
 * (ps.total reals).  keep_grads: the tape's switch that turns gradient recycling off. */
static uint64_t run(int mode, int keep_grads, int steps, int first_counted, size_t *cap0, size_t *cap1, size_t *peak,
                    real **out, long *n_out) {
    ModelConfig cfg;
    config_preset(&cfg, "test");
    cfg.vocab_size = 64;
    cfg.hidden_dropout_prob = cfg.attention_probs_dropout_prob = 0.1;
    cfg.training_mode = mode;
    cfg.embedding_sharing = mode == TRAIN_JOINT ? SHARE_ES : SHARE_GDES;
    cfg.max_seq_len = T;
    char err[256];
    assert_int_equal(config_validate(&cfg, err, sizeof err), 0);
    Electra m;
    electra_build(&m, &cfg, 5);
    Tape t;
    tape_init(&t, 4096); /* far too small: the first step overflows and the arena regrows */
    t.seed = 5;
    t.keep_grads = keep_grads;
    OptimConfig oc;
    optim_config_default(&oc, OPTIM_ADAMW);
    oc.lr = 1e-3;
    oc.total_steps = 100;
    oc.warmup_steps = 2;
    OptimMoments mo;
    optim_moments_init(&mo, &m.ps, NULL);
    OptimGroup g[2];
    if (mode == TRAIN_DECOUPLED) {
        optim_group_init(&g[0], "generator", &oc, &m.ps, &mo, "generator.");
        optim_group_init(&g[1], "discriminator", &oc, &m.ps, &mo, "discriminator.");
    } else {
        optim_group_init(&g[0], "all", &oc, &m.ps, &mo, NULL);
    }
    Batch bt[NB];
    for (int i = 0; i < NB; i++) {
        batch_alloc(&bt[i], B, T);
        synth(&bt[i], &cfg, i);
        assert_true(bt[i].n_masked > 0);
    }
    int32_t *rep = xmalloc(B * T * sizeof(int32_t));
    int32_t *reps[1] = {rep};
    uint64_t before = 0;
    for (int s = 0; s < steps; s++) {
        if (s == first_counted) {
            before = g_alloc_count;
            *cap0 = t.arena.cap;
        }
        const StepCtx c = {&m, &t, g, &bt[s % NB], reps, 1, 5, NULL};
        StepStats st = pretrain_step(&c, s, 1);
        assert_false(st.skipped);
        assert_true(st.n_masked > 0);
    }
    const uint64_t allocs = g_alloc_count - before;
    *cap1 = t.arena.cap;
    *peak = t.arena.peak;
    *n_out = m.ps.total;
    *out = malloc((size_t)m.ps.total * sizeof(real));
    memcpy(*out, m.ps.data, (size_t)m.ps.total * sizeof(real));
    free(rep);
    for (int i = 0; i < NB; i++) batch_free(&bt[i]);
    for (int i = 0; i < (mode == TRAIN_DECOUPLED ? 2 : 1); i++) optim_group_free(&g[i]);
    tape_free(&t);
    optim_moments_free(&mo);
    electra_free(&m);
    return allocs;
}

static void check_mode(int mode) {
    size_t c0, c1, d0, d1, k0, k1, peak, peak_kept;
    real *p1, *p2, *p3;
    long n1, n2, n3;
    const uint64_t a = run(mode, 0, 5, 2, &c0, &c1, &peak, &p1, &n1);
    assert_int_equal(a, 0);      /* steps 3..5: no x* allocation at all */
    assert_true(c0 == c1);       /* the arena stopped growing after the warm-up */
    run(mode, 0, 5, 2, &d0, &d1, &peak, &p2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(p1, p2, (size_t)n1 * sizeof(real)); /* bitwise repeatable */
    run(mode, 1, 5, 2, &k0, &k1, &peak_kept, &p3, &n3);
    assert_int_equal(n1, n3);
    assert_memory_equal(p1, p3, (size_t)n1 * sizeof(real)); /* recycling changes nothing ... */
    assert_true(peak < peak_kept);                          /* ... but the memory */
    free(p1);
    free(p2);
    free(p3);
}

static void decoupled_step_allocates_nothing_after_warmup(void **state) { check_mode(TRAIN_DECOUPLED); }
static void joint_step_allocates_nothing_after_warmup(void **state) { check_mode(TRAIN_JOINT); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(decoupled_step_allocates_nothing_after_warmup),
        cmocka_unit_test(joint_step_allocates_nothing_after_warmup),
    };
    return cmocka_run_group_tests_name("pretrain_step", tests, NULL, NULL);
}
