/* test_electra.c — the ELECTRA pair: whole-model gradient checks for GDES / ES / NES with the EMD
 * on and off, and the embedding-sharing semantics (which loss reaches which table). */
#include "tests/testutil.h"
#include <string.h>
#include <math.h>
#include "autograd/gradcheck/gradcheck.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "model/electra.h"
#include "model/init.h"

enum { B = 2, T = 6 };
/* sequence 0: [CLS] 5 [MASK] 7 [MASK] [SEP];  sequence 1: [CLS] [MASK] 9 [SEP] pad pad */
static int32_t ids[B * T] = {1, 5, 4, 7, 4, 2, 1, 4, 9, 2, 0, 0};
static int32_t mask[B * T] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0};
static int32_t labels[B * T] = {0, 0, 6, 0, 8, 0, 0, 10, 0, 0, 0, 0};
/* the discriminator input: position 2 replaced by a different token, 4 sampled == original, 7 replaced */
static int32_t replaced[B * T] = {1, 5, 11, 7, 8, 2, 1, 3, 9, 2, 0, 0};

static ElectraInput make_batch(void) {
    ElectraInput b = {B, T, ids, mask, labels, 0, 0};
    return b;
}

static void small_config(ModelConfig *c, int sharing, int emd) {
    char err[256];
    config_defaults(c);
    c->hidden_size = 8;
    c->num_hidden_layers = 2;
    c->gen_num_hidden_layers = 2;
    c->num_attention_heads = 2;
    c->attention_head_size = 4;
    c->intermediate_size = 16;
    c->vocab_size = 12;
    c->max_position_embeddings = 8;
    c->position_buckets = 4;
    c->max_relative_positions = 8;
    c->max_seq_len = 8;
    c->hidden_dropout_prob = 0;
    c->attention_probs_dropout_prob = 0;
    c->embedding_sharing = sharing;
    c->use_emd = emd;
    c->training_mode = sharing == SHARE_ES ? TRAIN_JOINT : TRAIN_DECOUPLED;
    if (config_validate(c, err, sizeof err)) fail_msg("%s", err);
}

typedef struct {
    Electra *m;
    ElectraInput b;
    int which; /* 0: MLM loss, 1: λ·RTD loss, 2: their sum */
} Ctx;

static Tensor *loss_fn(Tape *t, Tensor **leaves, int n, void *vctx) {
    Ctx *c = vctx;
    GenOut g;
    DiscOut d;
    Tensor *lg = c->which != 1 ? generator_forward(t, c->m, &c->b, &g) : NULL;
    Tensor *ld = c->which != 0 ? discriminator_forward(t, c->m, &c->b, replaced, &d) : NULL;
    return c->which == 0 ? lg : c->which == 1 ? ld : op_add(t, lg, ld);
}

/* Checks d(loss)/d(leaves) by a random-direction check (3 directions) and per-tensor spot checks
 * (2 evenly spaced elements of every tensor). */
static void check_one(Tape *t, Ctx *ctx, Tensor **leaves, int n, const char *what, double tol) {
    GCResult rd = gradcheck_direction(t, loss_fn, leaves, n, ctx, 3, 5);
    GCResult re = gradcheck_elements(t, loss_fn, leaves, n, ctx, 2);
    print_message("electra %-4s emd=%d abspos=%d %-28s random-direction max_rel_err %.3e (%ld), spot checks %.3e (%ld)\n",
                  config_sharing_str(ctx->m->cfg.embedding_sharing), ctx->m->cfg.use_emd, ctx->m->cfg.disc_position_biased_input, what,
                  rd.max_err, rd.n_checked,
                  re.max_err, re.n_checked);
    if (!(rd.max_err <= tol && re.max_err <= tol))
        fail_msg("electra %s emd=%d %s: gradient error %.3e / %.3e above %.1e", config_sharing_str(ctx->m->cfg.embedding_sharing),
                 ctx->m->cfg.use_emd, what, rd.max_err, re.max_err, tol);
}

/* Every mode checks the gradients the training step uses: d(MLM)/d(generator) and
 * d(λ·RTD)/d(discriminator).  Under GDES the RTD loss depends on E_G through stopgrad(E_G), which by
 * design contributes no gradient, so the sum is checked only for ES and NES, over all parameters
 * (for ES it is the true gradient of the shared table from both losses). */
static void whole_model_gradcheck(void **state) {
    if (!REAL_IS_DOUBLE) {
        /* finite differences of a whole model in float are noise; the double build checks it */
        test_skip("the whole-model gradient check runs in the double build only");
    }
    const double tol = 1e-6;
    Tape t;
    tape_init(&t, 1 << 20);
    for (int sharing = 0; sharing < 3; sharing++)
        for (int emd = 0; emd < 3; emd++) { /* emd 2: EMD on and absolute positions at the discriminator's input */
            ModelConfig cfg;
            small_config(&cfg, sharing, emd > 0);
            cfg.disc_position_biased_input = emd == 2;
            Electra m;
            electra_build(&m, &cfg, 11);
            model_perturb_params(&m.ps, 12);
            Ctx ctx = {&m, make_batch(), 0};
            check_one(&t, &ctx, m.ps.params, m.n_gen_params, "MLM wrt generator", tol);
            ctx.which = 1;
            check_one(&t, &ctx, m.ps.params + m.n_gen_params, m.ps.n - m.n_gen_params, "RTD wrt discriminator", tol);
            if (sharing != SHARE_GDES) {
                ctx.which = 2;
                check_one(&t, &ctx, m.ps.params, m.ps.n, "MLM+RTD wrt all", tol);
            }
            electra_free(&m);
        }
    tape_free(&t);
}

static int any_nonzero(const Tensor *x) {
    for (long i = 0; i < x->n; i++)
        if (x->grad[i] != 0) return 1;
    return 0;
}
static int all_zero(const Tensor *x) { return !any_nonzero(x); }

/* The scaffold of the semantics tests: a small model of one sharing mode (seed 3), with perturb its
 * parameters perturbed (seed 4), and its own tape. */
typedef struct {
    Tape t;
    ModelConfig cfg;
    Electra m;
} Pair;

static void pair_open(Pair *p, int sharing, int emd, int perturb) {
    tape_init(&p->t, 1 << 20);
    small_config(&p->cfg, sharing, emd);
    electra_build(&p->m, &p->cfg, 3);
    if (perturb) model_perturb_params(&p->m.ps, 4);
}

static void pair_close(Pair *p) {
    electra_free(&p->m);
    tape_free(&p->t);
}

/* backward of one loss only: which = 0 MLM, 1 RTD */
static void backward_one(Pair *p, int which) {
    ElectraInput b = make_batch();
    GenOut g;
    DiscOut d;
    tape_reset(&p->t);
    params_zero_grad(&p->m.ps);
    Tensor *l = which == 0 ? generator_forward(&p->t, &p->m, &b, &g) : discriminator_forward(&p->t, &p->m, &b, replaced, &d);
    tape_backward(&p->t, l, 1);
}

static void gdes_rtd_reaches_only_the_delta(void **state) {
    Pair p;
    pair_open(&p, SHARE_GDES, 1, 1);
    backward_one(&p, 1);
    assert_true(all_zero(p.m.gen.word));      /* stop-gradient: E_G gets nothing from RTD */
    assert_true(any_nonzero(p.m.word_delta)); /* E_Δ is trained by RTD */
    for (int j = 0; j < p.cfg.hidden_size; j++) assert_true(p.m.word_delta->grad[j] == 0); /* [PAD] row */
    for (int i = 0; i < p.m.n_gen_params; i++) assert_true(all_zero(p.m.ps.params[i]));
    backward_one(&p, 0);
    assert_true(any_nonzero(p.m.gen.word));
    assert_true(all_zero(p.m.word_delta));
    pair_close(&p);
}

static void es_both_losses_reach_the_shared_table(void **state) {
    Pair p;
    pair_open(&p, SHARE_ES, 1, 1);
    assert_null(p.m.disc.word);
    assert_null(params_find(&p.m.ps, "discriminator.deberta.embeddings.word_embeddings.weight"));
    backward_one(&p, 1);
    assert_true(any_nonzero(p.m.gen.word)); /* RTD reaches E */
    backward_one(&p, 0);
    assert_true(any_nonzero(p.m.gen.word)); /* MLM reaches E */
    pair_close(&p);
}

static void nes_tables_never_meet(void **state) {
    Pair p;
    pair_open(&p, SHARE_NES, 0, 1);
    assert_non_null(p.m.disc.word);
    assert_ptr_not_equal(p.m.disc.word, p.m.gen.word);
    backward_one(&p, 1);
    assert_true(all_zero(p.m.gen.word));
    assert_true(any_nonzero(p.m.disc.word));
    backward_one(&p, 0);
    assert_true(any_nonzero(p.m.gen.word));
    assert_true(all_zero(p.m.disc.word));
    pair_close(&p);
}

static void rtd_labels_follow_the_spec(void **state) {
    Pair p;
    pair_open(&p, SHARE_GDES, 1, 0);
    ElectraInput b = make_batch();
    DiscOut d;
    discriminator_forward(&p.t, &p.m, &b, replaced, &d);
    /* replaced and different -> 1; sampled == original -> 0; unmasked -> 0 */
    const int32_t want[B * T] = {0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0};
    for (int i = 0; i < B * T; i++) assert_int_equal(d.y[i], want[i]);
    assert_true(d.loss->data[0] > 0);
    pair_close(&p);
}

static void sampling_is_deterministic_and_only_at_masked_positions(void **state) {
    Pair p;
    pair_open(&p, SHARE_GDES, 1, 0);
    ElectraInput b = make_batch();
    GenOut g;
    generator_forward(&p.t, &p.m, &b, &g);
    int32_t r1[B * T], r2[B * T], r3[B * T];
    electra_sample(&g, &b, 9, 1, r1);
    electra_sample(&g, &b, 9, 1, r2);
    assert_memory_equal(r1, r2, sizeof r1);
    int differs = 0;
    for (int step = 2; step < 40 && !differs; step++) {
        electra_sample(&g, &b, 9, step, r3);
        differs = memcmp(r1, r3, sizeof r1) != 0;
    }
    assert_true(differs); /* other steps draw other tokens */
    for (int i = 0; i < B * T; i++) {
        if (labels[i] == 0) assert_int_equal(r1[i], ids[i]);
        else assert_true(r1[i] >= 0 && r1[i] < p.cfg.vocab_size);
    }
    pair_close(&p);
}

/* The sampler's block search picks what a plain inverse CDF (the running sum of exp(logit − max) from
 * v = 0 until it exceeds u·z) picks, for every row and many steps: vocabularies of one partial block,
 * of a ragged last block and of the largest block count; logits spread wide, so that picks fall both
 * on the few likely ids and, with small u, early in the vocabulary. */
static int plain_pick(const real *row, int V, double u01) {
    double mx = row[0], z = 0, acc = 0;
    for (int v = 1; v < V; v++) mx = row[v] > mx ? row[v] : mx;
    for (int v = 0; v < V; v++) z += exp(row[v] - mx);
    const double u = u01 * z;
    for (int v = 0; v < V; v++) {
        acc += exp(row[v] - mx);
        if (u < acc) return v;
    }
    return V - 1;
}

static void sampling_equals_plain_inverse_cdf(void **state) {
    const int vocab[3] = {20, 1000, 70001};
    enum { NR = 6 };
    int32_t ids[NR], rows[NR], out[NR];
    for (int k = 0; k < NR; k++) ids[k] = 0, rows[k] = k;
    long picks = 0, distinct_low = 0;
    for (int c = 0; c < 3; c++) {
        const int V = vocab[c], sh[2] = {NR, V};
        Tensor *lg = gradcheck_leaf(2, sh, 0, "logits");
        gradcheck_fill_uniform(lg, 50 + c, -8, 8);
        GenOut g = {.logits = lg, .n_masked = NR, .rows = rows};
        ElectraInput b = {.B = 1, .T = NR, .input_ids = ids, .masked0 = 3};
        for (uint64_t step = 0; step < 200; step++) {
            electra_sample(&g, &b, 11, step, out);
            for (int k = 0; k < NR; k++) {
                const double u01 = rng_uniform(11, rng_stream(RNG_SAMPLE, step, 0), (uint64_t)(b.masked0 + k));
                const int want = plain_pick(lg->data + (long)k * V, V, u01);
                if (out[k] != want) fail_msg("V %d step %d row %d: sampled %d, plain inverse CDF %d", V, (int)step, k, out[k], want);
                picks++;
                distinct_low += out[k] < V / 4;
            }
        }
        gradcheck_leaf_free(lg);
    }
    assert_true(picks == 3 * 200 * NR);
    assert_true(distinct_low > 0); /* some picks in the first quarter of the vocabulary */
}

/* With EMD the generator's last layer's own output is never read: the training forward skips it
 * (Electra.gen_all_layers = 0) and skips its dropout draws over, so with dropout on, the MLM loss,
 * a discriminator forward after it on the same tape, and every gradient are bit for bit those of
 * the full forward (gen_all_layers = 1, what `deberta dump` uses). */
static void generator_skips_its_unused_last_layer(void **state) {
    ModelConfig cfg;
    small_config(&cfg, SHARE_GDES, 1);
    cfg.gen_num_hidden_layers = 3;
    cfg.hidden_dropout_prob = 0.2;
    cfg.attention_probs_dropout_prob = 0.3;
    char err[256];
    if (config_validate(&cfg, err, sizeof err)) fail_msg("%s", err);
    Electra m;
    electra_build(&m, &cfg, 3);
    model_perturb_params(&m.ps, 4);
    Tape t;
    tape_init(&t, 1 << 20);
    t.training = 1;
    t.seed = 77;
    t.step = 5;
    ElectraInput b = make_batch();
    real loss[2][2], *grad[2];
    uint32_t draws[2];
    for (int all = 0; all < 2; all++) {
        m.gen_all_layers = all;
        tape_reset(&t);
        params_zero_grad(&m.ps);
        GenOut g;
        DiscOut d;
        Tensor *lg = generator_forward(&t, &m, &b, &g);
        draws[all] = t.n_random;
        Tensor *ld = discriminator_forward(&t, &m, &b, replaced, &d);
        tape_backward(&t, op_add(&t, lg, ld), 1);
        if (all) assert_non_null(g.enc.layers[2]);
        else assert_null(g.enc.layers[2]);
        assert_non_null(g.enc.layers[1]);
        loss[all][0] = lg->data[0];
        loss[all][1] = ld->data[0];
        grad[all] = xmalloc((size_t)m.ps.total * sizeof(real));
        memcpy(grad[all], m.ps.grad, (size_t)m.ps.total * sizeof(real));
    }
    assert_true(draws[0] > 0);
    assert_int_equal(draws[0], draws[1]);
    assert_memory_equal(loss[0], loss[1], sizeof loss[0]);
    assert_memory_equal(grad[0], grad[1], (size_t)m.ps.total * sizeof(real));
    free(grad[0]);
    free(grad[1]);
    tape_free(&t);
    electra_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(gdes_rtd_reaches_only_the_delta),
        cmocka_unit_test(es_both_losses_reach_the_shared_table),
        cmocka_unit_test(nes_tables_never_meet),
        cmocka_unit_test(rtd_labels_follow_the_spec),
        cmocka_unit_test(sampling_is_deterministic_and_only_at_masked_positions),
        cmocka_unit_test(sampling_equals_plain_inverse_cdf),
        cmocka_unit_test(whole_model_gradcheck),
        cmocka_unit_test(generator_skips_its_unused_last_layer),
    };
    return test_exit(cmocka_run_group_tests_name("electra", tests, NULL, NULL));
}
