/* test_memory.c — the up-front memory estimate of a pretraining run (train/memory.c): the parameter
 * count without building equals the built model's, the arena formula bounds the measured arena peak
 * of a real step from above by at most 2x at three shapes (it prints each ratio; the double build
 * doubles the activations but not the byte masks and indices, so its ratio is a little higher),
 * and memory_check refuses with one line. */
#include "tests/testutil.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/loader.h"
#include "model/electra.h"
#include "train/memory.h"
#include "train/optim.h"
#include "train/step.h"

static void shape_config(ModelConfig *c, int T, int H, int inter, int A, int V, int L) {
    config_defaults(c);
    config_preset(c, "test");
    c->hidden_size = H;
    c->intermediate_size = inter;
    c->num_attention_heads = A;
    c->attention_head_size = H / A;
    c->vocab_size = V;
    c->num_hidden_layers = L;
    c->gen_num_hidden_layers = 0;
    c->max_seq_len = T;
    if (c->max_position_embeddings < T) c->max_position_embeddings = T;
    char err[256];
    if (config_validate(c, err, sizeof err)) fail_msg("%s", err);
}

static void param_count_without_building(void **state) {
    const int sharing[3] = {SHARE_GDES, SHARE_NES, SHARE_ES};
    for (int k = 0; k < 3; k++) {
        ModelConfig c;
        shape_config(&c, 32, 16, 64, 2, 300, 2);
        c.embedding_sharing = sharing[k];
        if (sharing[k] == SHARE_ES) c.training_mode = TRAIN_JOINT;
        Electra m;
        electra_build(&m, &c, 1);
        assert_true(electra_param_slots(&c) == (double)m.ps.total);
        electra_free(&m);
    }
}

/* The arena peak of one pretraining step at this shape, measured. */
static size_t measured_peak(const ModelConfig *cfg, int B) {
    const int T = cfg->max_seq_len;
    Electra m;
    electra_build(&m, cfg, 5);
    Tape t;
    tape_init(&t, 4096);
    t.seed = 5;
    OptimConfig oc;
    optim_config_default(&oc, OPTIM_ADAMW);
    oc.total_steps = 100;
    OptimMoments mo;
    optim_moments_init(&mo, &m.ps);
    OptimGroup g[2];
    optim_group_init(&g[0], "generator", &oc, &m.ps, &mo, "generator.");
    optim_group_init(&g[1], "discriminator", &oc, &m.ps, &mo, "discriminator.");
    Batch b;
    batch_alloc(&b, B, T);
    b.n_masked = b.n_tokens = 0;
    for (int s = 0; s < B; s++) {
        int32_t *ids = b.input_ids + (long)s * T, *lab = b.labels + (long)s * T, *am = b.attention_mask + (long)s * T;
        for (int i = 0; i < T; i++) {
            ids[i] = 5 + (int32_t)rng_below(5, rng_stream(RNG_TEST, 0, (uint64_t)s), (uint64_t)i, (uint64_t)(cfg->vocab_size - 5));
            am[i] = 1;
        }
        ids[0] = cfg->cls_id;
        ids[T - 1] = cfg->sep_id;
        b.n_tokens += T;
        b.n_masked += mask_sequence(ids, lab, T, T, MASK_OFFICIAL, 0.15, cfg->vocab_size, 5, rng_stream(RNG_MASK, 0, 0), (uint64_t)s << 20);
    }
    int32_t *rep = xmalloc((size_t)B * T * sizeof(int32_t)), *reps[1] = {rep};
    const StepCtx c = {&m, &t, g, &b, reps, 1, 5};
    pretrain_step(&c, 0, 1);
    const size_t peak = t.arena.peak;
    free(rep);
    batch_free(&b);
    optim_group_free(&g[0]);
    optim_group_free(&g[1]);
    optim_moments_free(&mo);
    tape_free(&t);
    electra_free(&m);
    return peak;
}

static void arena_formula_bounds_the_measured_peak(void **state) {
    static const int shapes[3][7] = {
        /* B, T, H, I, heads, V, layers */
        {4, 64, 64, 256, 4, 1000, 2},
        {16, 128, 128, 512, 4, 2000, 4},
        {8, 32, 256, 1024, 4, 8000, 2},
    };
    omp_set_num_threads(1);
    for (int k = 0; k < 3; k++) {
        const int *s = shapes[k];
        ModelConfig c;
        shape_config(&c, s[1], s[2], s[3], s[4], s[5], s[6]);
        const double est = memory_arena_elements(&c, s[0]) * sizeof(real);
        const double got = (double)measured_peak(&c, s[0]);
        fprintf(stderr, "  B=%d T=%d H=%d I=%d heads=%d V=%d layers=%d: arena peak %.2f MB, estimate %.2f MB (x%.2f)\n", s[0], s[1], s[2],
                s[3], s[4], s[5], s[6], got / 1e6, est / 1e6, est / got);
        if (est < got || est > 2.0 * got) fail_msg("estimate %.0f bytes vs measured %.0f: outside [1, 2] times", est, got);
    }
}

static void check_refuses_with_one_line(void **state) {
    ModelConfig c;
    shape_config(&c, 32, 16, 64, 2, 300, 2);
    char err[1024];
    MemEstimate e;
    memory_estimate(&c, 4, &e);
    assert_int_equal(memory_check(&c, 4, e.total_bytes, err, sizeof err), 0);
    assert_int_equal(memory_check(&c, 4, -1, err, sizeof err), 0);
    assert_int_equal(memory_check(&c, 4, e.total_bytes - 1, err, sizeof err), -1);
    fprintf(stderr, "  got: error: %s\n", err);
    assert_non_null(strstr(err, "MemAvailable"));
    assert_null(strchr(err, '\n'));
    c.hidden_size = 16384;
    c.intermediate_size = 65536;
    c.attention_head_size = 16384 / 2;
    memory_estimate(&c, 4, &e);
    assert_true(e.param_elements > 1e9); /* counted without allocating */
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(param_count_without_building),
        cmocka_unit_test(arena_formula_bounds_the_measured_peak),
        cmocka_unit_test(check_refuses_with_one_line),
    };
    return cmocka_run_group_tests_name("memory", tests, NULL, NULL);
}
