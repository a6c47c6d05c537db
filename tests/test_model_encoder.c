/* test_model_encoder.c — parameter names and shapes (spec §7.1) under a prefix, the layer of a name,
 * initialisation (§4.8), embeddings (padded positions zero), an externally supplied word table, the raw
 * position rows, layer outputs and the EMD-style layer call, the [CLS]-only forward (encoder_forward_cls) against the
 * full forward's row 0, and the whole-model gradient checks
 * (model/gradcheck_model.c; the double build is the real check, ≤ 1e-7). */
#include "tests/testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/util.h"
#include "model/encoder.h"
#include "model/gradcheck_model.h"
#include "model/init.h"

static Tape T;
static int setup(void **s) { tape_init(&T, 1 << 20); return 0; }
static int teardown(void **s) { tape_free(&T); return 0; }

static void build(ModelConfig *cfg, ParamSet *ps, Encoder *e, const char *preset, int layers, const char *prefix, int flags) {
    char err[256];
    config_preset(cfg, preset);
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0;
    assert_int_equal(config_validate(cfg, err, sizeof err), 0);
    params_init(ps);
    encoder_register(e, ps, cfg, layers, prefix, flags);
    params_finalize(ps);
    model_init_params(ps, cfg->initializer_range, 42);
}

static void names_and_shapes(void **state) {
    ModelConfig cfg;
    ParamSet ps;
    Encoder e;
    build(&cfg, &ps, &e, "tiny", 4, "discriminator.deberta.", 0);
    assert_int_equal(ps.n, 4 + 16 * 4 + 3); /* 4 embedding tensors, 16 per layer, rel table + its LN */
    struct { const char *name; int d0, d1; } want[] = {
        {"discriminator.deberta.embeddings.word_embeddings.weight", 8192, 256},
        {"discriminator.deberta.embeddings.position_embeddings.weight", 512, 256},
        {"discriminator.deberta.embeddings.LayerNorm.weight", 256, 0},
        {"discriminator.deberta.encoder.layer.0.attention.self.query_proj.weight", 256, 256},
        {"discriminator.deberta.encoder.layer.3.attention.self.value_proj.bias", 256, 0},
        {"discriminator.deberta.encoder.layer.1.attention.output.dense.weight", 256, 256},
        {"discriminator.deberta.encoder.layer.2.attention.output.LayerNorm.bias", 256, 0},
        {"discriminator.deberta.encoder.layer.3.intermediate.dense.weight", 1024, 256},
        {"discriminator.deberta.encoder.layer.3.output.dense.weight", 256, 1024},
        {"discriminator.deberta.encoder.layer.0.output.LayerNorm.weight", 256, 0},
        {"discriminator.deberta.encoder.rel_embeddings.weight", 128, 256},
        {"discriminator.deberta.encoder.LayerNorm.bias", 256, 0},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        Tensor *p = params_find(&ps, want[i].name);
        if (!p) fail_msg("missing parameter %s", want[i].name);
        assert_int_equal(p->shape[0], want[i].d0);
        if (want[i].d1) assert_int_equal(p->shape[1], want[i].d1);
        else assert_int_equal(p->ndim, 1);
    }
    /* tiny encoder: 4 layers x 789,760 + embeddings (8192+512+2)*256 + rel (128+2)*256 */
    assert_int_equal(params_count(&ps), 4L * 789760 + (8192L + 512 + 2) * 256 + (128L + 2) * 256);
    encoder_free(&e);
    params_free(&ps);
    /* GDES/ES discriminator: no own word/position tables */
    build(&cfg, &ps, &e, "test", 2, "discriminator.deberta.", ENC_NO_WORD | ENC_NO_POSITION);
    assert_null(params_find(&ps, "discriminator.deberta.embeddings.word_embeddings.weight"));
    assert_null(e.word);
    assert_null(e.position);
    encoder_free(&e);
    params_free(&ps);
}

/* encoder_param_layer against the registration order (4 embedding tensors, then 16 per layer, then the
 * rel table and its LayerNorm), with two-digit layers, and names it must refuse */
static void param_layer_of_each_name(void **state) {
    ModelConfig cfg;
    ParamSet ps;
    Encoder e;
    const int L = 11;
    build(&cfg, &ps, &e, "test", L, "discriminator.deberta.", 0);
    assert_int_equal(ps.n, 4 + 16 * L + 3);
    for (int i = 0; i < ps.n; i++) {
        const int want = i >= 4 && i < 4 + 16 * L ? (i - 4) / 16 : -1;
        const int got = encoder_param_layer(ps.params[i]->name, "discriminator.deberta.");
        if (got != want) fail_msg("%s: layer %d, want %d", ps.params[i]->name, got, want);
        assert_int_equal(encoder_param_layer(ps.params[i]->name, "generator.deberta."), -1);
        assert_int_equal(encoder_param_layer(ps.params[i]->name, "deberta."), -1);
    }
    encoder_free(&e);
    params_free(&ps);
    assert_int_equal(encoder_param_layer("deberta.encoder.layer.7.output.dense.bias", "deberta."), 7);
    assert_int_equal(encoder_param_layer("deberta.encoder.layer.7", "deberta."), -1);
    assert_int_equal(encoder_param_layer("deberta.encoder.layer..output", "deberta."), -1);
    assert_int_equal(encoder_param_layer("deberta.encoder.layer.7x.output", "deberta."), -1);
    assert_int_equal(encoder_param_layer("deberta.encoder.layer.-1.output", "deberta."), -1);
    assert_int_equal(encoder_param_layer("deberta.encoder.rel_embeddings.weight", "deberta."), -1);
}

static void initialisation(void **state) {
    ModelConfig cfg;
    ParamSet ps;
    Encoder e;
    build(&cfg, &ps, &e, "tiny", 2, "deberta.", 0);
    double s = 0, s2 = 0;
    for (long i = 0; i < e.word->n; i++) s += e.word->data[i], s2 += (double)e.word->data[i] * e.word->data[i];
    const double mean = s / e.word->n, sd = sqrt(s2 / e.word->n - mean * mean);
    assert_true(fabs(mean) < 1e-3);
    assert_true(fabs(sd - 0.02) < 5e-4);
    double row0 = 0; /* the padding row is random too (official init) */
    for (int h = 0; h < cfg.hidden_size; h++) row0 += fabs(e.word->data[h]);
    assert_true(row0 > 0);
    for (int h = 0; h < cfg.hidden_size; h++) {
        assert_true(e.emb_ln_g->data[h] == 1 && e.emb_ln_b->data[h] == 0);
        assert_true(e.layers[1].att.bq->data[h] == 0 && e.rel_ln_g->data[h] == 1);
    }
    /* same seed -> same values; another seed -> different */
    real first = e.layers[1].w2->data[5];
    model_init_params(&ps, 0.02, 42);
    assert_true(e.layers[1].w2->data[5] == first);
    model_init_params(&ps, 0.02, 43);
    assert_true(e.layers[1].w2->data[5] != first);
    encoder_free(&e);
    params_free(&ps);
}

enum { BB = 2, TT = 9 };

static void forward_properties(void **state) {
    ModelConfig cfg;
    ParamSet ps;
    Encoder e;
    build(&cfg, &ps, &e, "test", 2, "generator.deberta.", 0);
    model_perturb_params(&ps, 3);
    int32_t ids[BB * TT], mask[BB * TT];
    for (int i = 0; i < BB * TT; i++) {
        mask[i] = !(i >= TT && i % TT >= 6);
        ids[i] = mask[i] ? 1 + (7 * i) % (cfg.vocab_size - 1) : 0;
    }
    const int H = cfg.hidden_size;
    tape_reset(&T);
    EncoderOut out;
    Tensor *y = encoder_forward(&T, &e, NULL, ids, mask, BB, TT, &out);
    assert_ptr_equal(y, out.layers[1]);
    for (int r = 0; r < BB * TT; r++)
        for (int h = 0; h < H; h++) {
            real v = out.emb->data[(long)r * H + h];
            if (!mask[r]) assert_true(v == 0); /* padded positions zeroed after LN */
        }
    /* the same table passed explicitly (ES/GDES path) gives the same result */
    Tensor *y2 = encoder_forward(&T, &e, e.word, ids, mask, BB, TT, NULL);
    assert_memory_equal(y->data, y2->data, y->n * sizeof(real));
    /* layer_forward(query = kv = layers[0]) reproduces layers[1] */
    Tensor *y3 = layer_forward(&T, &cfg, &e.layers[1], out.layers[0], out.layers[0], &out.rel);
    assert_memory_equal(y->data, y3->data, y->n * sizeof(real));
    /* raw absolute position rows: W_pos[j] for 0..T−1 */
    Tensor *z = encoder_positions(&T, &e, NULL, NULL, BB, TT);
    assert_int_equal(z->shape[0], BB);
    for (int j = 0; j < TT; j++) assert_memory_equal(z->data + ((long)TT + j) * H, e.position->data + (long)j * H, H * sizeof(real));
    /* EMD-style call: query = z + hidden, kv = hidden; a different query changes the output */
    Tensor *q = op_add(&T, z, out.layers[0]);
    Tensor *y4 = layer_forward(&T, &cfg, &e.layers[1], q, out.layers[0], &out.rel);
    assert_true(memcmp(y4->data, y->data, y->n * sizeof(real)) != 0);
    /* the padding row of the word table gets no gradient */
    params_zero_grad(&ps);
    tape_backward_from(&T, y, y->data);
    for (int h = 0; h < H; h++) assert_true(e.word->grad[h] == 0);
    double gsum = 0;
    for (long i = 0; i < e.rel->n; i++) gsum += fabs(e.rel->grad[i]);
    assert_true(gsum > 0);
    encoder_free(&e);
    params_free(&ps);
}

/* The test preset with these attention terms, no dropout, under "deberta.", initialised (init_seed) and
 * perturbed (perturb_seed) so that no parameter is a constant. */
static void build_terms(ModelConfig *cfg, ParamSet *ps, Encoder *e, int layers, int terms, uint64_t init_seed,
                        uint64_t perturb_seed) {
    char err[256];
    config_preset(cfg, "test");
    cfg->att_terms = terms;
    cfg->hidden_dropout_prob = cfg->attention_probs_dropout_prob = 0;
    if (config_validate(cfg, err, sizeof err)) fail_msg("%s", err);
    params_init(ps);
    encoder_register(e, ps, cfg, layers, "deberta.", 0);
    params_finalize(ps);
    model_init_params(ps, cfg->initializer_range, init_seed);
    model_perturb_params(ps, perturb_seed);
}

/* encoder_forward_cls is encoder_forward's position 0, for 1-3 layers, every term subset, padded sequences,
 * the fused and the unfused attention, with nothing recorded (as predict runs it) and recorded */
static void cls_forward_is_row_zero(void **state) {
    static const int term_sets[5] = {ATT_C2C | ATT_C2P | ATT_P2C, ATT_C2C, ATT_C2P, ATT_P2C, ATT_C2P | ATT_P2C};
    const double tol = sizeof(real) == 4 ? 2e-5 : 1e-12;
    for (int layers = 1; layers <= 3; layers++)
        for (int k = 0; k < 5; k++)
            for (int unfused = 0; unfused <= 1; unfused++)
                for (int nograd = 0; nograd <= 1; nograd++) {
                    ModelConfig cfg;
                    ParamSet ps;
                    Encoder e;
                    build_terms(&cfg, &ps, &e, layers, term_sets[k], 42 + (uint64_t)k, 5 + k);
                    enum { B = 3, TL = 24 };
                    int32_t ids[B * TL], mask[B * TL];
                    for (int i = 0; i < B * TL; i++) {
                        const int b = i / TL, j = i % TL;
                        mask[i] = j < TL - 7 * b; /* 24, 17 and 10 tokens */
                        ids[i] = mask[i] ? (j == 0 ? cfg.cls_id : 5 + (11 * i + 3 * layers) % (cfg.vocab_size - 5)) : cfg.pad_id;
                    }
                    g_attention_unfused = unfused;
                    tape_reset(&T);
                    if (nograd) tape_nograd_begin(&T);
                    Tensor *full = encoder_forward(&T, &e, NULL, ids, mask, B, TL, NULL);
                    Tensor *cls = encoder_forward_cls(&T, &e, ids, mask, B, TL);
                    if (nograd) tape_nograd_end(&T);
                    g_attention_unfused = 0;
                    const int H = cfg.hidden_size;
                    assert_int_equal(cls->ndim, 3);
                    assert_int_equal(cls->shape[0], B);
                    assert_int_equal(cls->shape[1], 1);
                    assert_int_equal(cls->shape[2], H);
                    double worst = 0;
                    for (int b = 0; b < B; b++)
                        for (int h = 0; h < H; h++) {
                            const double want = full->data[(long)b * TL * H + h], got = cls->data[(long)b * H + h];
                            const double d = fabs(got - want) / (1 + fabs(want));
                            if (!(d <= tol)) fail_msg("layers %d, terms %d, unfused %d, nograd %d: [CLS] of sequence %d, unit %d is %.9g, the full forward's %.9g",
                                                      layers, term_sets[k], unfused, nograd, b, h, got, want);
                            if (d > worst) worst = d;
                        }
                    if (layers == 3 && !unfused && nograd) print_message("terms %d: largest difference %.2e\n", term_sets[k], worst);
                    encoder_free(&e);
                    params_free(&ps);
                }
}

/* A no-grad forward that keeps no layer outputs (out NULL) gives each layer's intermediates back to the arena
 * (tape_keep_only): the same bits as the forward that keeps them, less arena, and the scratch blocks freed above
 * a layer's mark never come back from the pool onto live tensors (a second forward on the same tape, before a
 * reset, has the same bits again), and each layer's output takes its input's place (the arena after 2 or 3 layers
 * as after 1), written there by the layer (nothing but the embeddings is copied down to a mark); for 1-3 layers
 * and every term subset, with padding, and the [CLS] path. */
static void no_grad_forward_gives_memory_back(void **state) {
    static const int term_sets[3] = {ATT_C2C | ATT_C2P | ATT_P2C, ATT_C2C, ATT_C2P | ATT_P2C};
    size_t used_one[3] = {0};
    Tape t;
    tape_init(&t, 64 << 20);
    for (int layers = 1; layers <= 3; layers++)
        for (int k = 0; k < 3; k++) {
            ModelConfig cfg;
            ParamSet ps;
            Encoder e;
            build_terms(&cfg, &ps, &e, layers, term_sets[k], 42, 3 + k);
            enum { B = 3, TL = 24 };
            int32_t ids[B * TL], mask[B * TL];
            for (int i = 0; i < B * TL; i++) {
                const int b = i / TL, j = i % TL;
                mask[i] = j < TL - 5 * b;
                ids[i] = mask[i] ? (j == 0 ? cfg.cls_id : 5 + (7 * i + layers) % (cfg.vocab_size - 5)) : cfg.pad_id;
            }
            const long n = (long)B * TL * cfg.hidden_size;
            real *kept = xmalloc((size_t)n * sizeof(real)), *cls = xmalloc((size_t)B * cfg.hidden_size * sizeof(real));
            tape_reset(&t);
            tape_nograd_begin(&t);
            EncoderOut out;
            memcpy(kept, encoder_forward(&t, &e, NULL, ids, mask, B, TL, &out)->data, (size_t)n * sizeof(real));
            const size_t used_kept = t.arena.used;
            memcpy(cls, encoder_forward_cls(&t, &e, ids, mask, B, TL)->data, (size_t)B * cfg.hidden_size * sizeof(real));
            tape_reset(&t);
            const size_t moved0 = t.kept_moved;
            Tensor *y = encoder_forward(&t, &e, NULL, ids, mask, B, TL, NULL);
            const size_t used_given = t.arena.used;
            /* the layers write their outputs over their inputs: the embeddings are the one tensor copied */
            if (t.kept_moved - moved0 != (size_t)n * sizeof(real))
                fail_msg("layers %d terms %d: %zu bytes copied down to a mark, not the embeddings' %zu", layers, term_sets[k],
                         t.kept_moved - moved0, (size_t)n * sizeof(real));
            if (memcmp(y->data, kept, (size_t)n * sizeof(real)))
                fail_msg("layers %d terms %d: the forward that gives memory back differs from the one that keeps it", layers,
                         term_sets[k]);
            if (layers > 1 && !(used_given < used_kept))
                fail_msg("layers %d terms %d: arena %zu bytes, not below the %zu of the forward that keeps every layer", layers,
                         term_sets[k], used_given, used_kept);
            /* each layer's output replaces its input: the arena holds as much after 3 layers as after 1 */
            if (layers == 1) used_one[k] = used_given;
            else if (used_given != used_one[k])
                fail_msg("layers %d terms %d: arena %zu bytes after the forward, %zu with one layer", layers, term_sets[k],
                         used_given, used_one[k]);
            for (int rep = 0; rep < 2; rep++) { /* on the same tape: the pool holds the scratch of the first */
                if (memcmp(encoder_forward(&t, &e, NULL, ids, mask, B, TL, NULL)->data, kept, (size_t)n * sizeof(real)))
                    fail_msg("layers %d terms %d: forward %d on the same tape differs", layers, term_sets[k], rep + 2);
                if (memcmp(encoder_forward_cls(&t, &e, ids, mask, B, TL)->data, cls, (size_t)B * cfg.hidden_size * sizeof(real)))
                    fail_msg("layers %d terms %d: [CLS] forward %d on the same tape differs", layers, term_sets[k], rep + 2);
            }
            tape_nograd_end(&t);
            free(kept);
            free(cls);
            encoder_free(&e);
            params_free(&ps);
        }
    tape_free(&t);
}

static void model_gradchecks(void **state) {
    Tape t;
    tape_init(&t, 1 << 20);
    for (int i = 0; i < gradcheck_n_model_cases; i++) {
        GCResult r = gradcheck_model_cases[i].run(&t);
        print_message("%-9s %-32s max_rel_err %.3e (%ld checked)\n", gradcheck_model_cases[i].op, gradcheck_model_cases[i].shapes, r.max_err, r.n_checked);
        if (!r.ok || r.n_checked == 0)
            fail_msg("%s %s: max_rel_err %.3e (%s build)", gradcheck_model_cases[i].op, gradcheck_model_cases[i].shapes, r.max_err, REAL_NAME);
    }
    tape_free(&t);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(names_and_shapes),
        cmocka_unit_test(param_layer_of_each_name),
        cmocka_unit_test(initialisation),
        cmocka_unit_test(forward_properties),
        cmocka_unit_test(cls_forward_is_row_zero),
        cmocka_unit_test(no_grad_forward_gives_memory_back),
        cmocka_unit_test(model_gradchecks),
    };
    return cmocka_run_group_tests_name("model_encoder", tests, setup, teardown);
}
