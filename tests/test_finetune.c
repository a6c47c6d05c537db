/* test_finetune.c — the fine-tuning library: initialisation from a pretraining checkpoint (the
 * discriminator's tables as an export writes them under GDES / ES / NES, the generator's encoder),
 * the layer-wise rate decay's multiples, the options' text round trip, evaluation counting exactly
 * the labelled positions, evaluation by length equal to the full-length pass, and the mean pooler
 * (the mean of the non-pad tokens, in training and in evaluation alike). */
#include "train/finetune.h"
#include "train/eval/task_eval.h"
#include "train/checkpoint.h"
#include "train/pretrain.h"
#include "model/electra.h"
#include "model/init.h"
#include "autograd/base/util.h"
#include "tests/testutil.h"
#include <math.h>
#include <string.h>

static char g_dir[128];

static void test_config(ModelConfig *c, int sharing) {
    char err[256];
    config_defaults(c);
    config_preset(c, "test");
    c->embedding_sharing = sharing;
    if (sharing == SHARE_ES) c->training_mode = TRAIN_JOINT;
    c->vocab_size = 40;
    if (config_validate(c, err, sizeof err)) fail_msg("%s", err);
}

/* Writes a pretraining checkpoint of a perturbed pair; returns the pair (caller frees). */
static Electra *write_pair(const char *dir, int sharing) {
    ModelConfig c;
    test_config(&c, sharing);
    Electra *m = xcalloc(1, sizeof *m);
    electra_build(m, &c, 5);
    model_perturb_params(&m->ps, 6);
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 3;
    st.seed = 5;
    st.config = config_to_text(&c);
    static const uint8_t tok[4] = {1, 2, 3, 4};
    st.tokenizer = (unsigned char *)tok;
    st.n_tokenizer = 4;
    char err[1024];
    if (mkdir_p(dir)) fail_msg("cannot create %s", dir);
    if (checkpoint_save(dir, &m->ps, NULL, &st, 0, err, sizeof err)) fail_msg("%s", err);
    free(st.config);
    return m;
}

static void expect_equal(const Tensor *a, const real *want, const char *what) {
    for (long i = 0; i < a->n; i++)
        if (a->data[i] != want[i]) fail_msg("%s: element %ld is %g, expected %g", what, i, (double)a->data[i], (double)want[i]);
}

static void check_init(int sharing, const char *which, int fresh_top) {
    char dir[256], path[300], err[1024];
    snprintf(dir, sizeof dir, "%s/pair-%d-%s-%d", g_dir, sharing, which, fresh_top);
    Electra *m = write_pair(dir, sharing);
    snprintf(path, sizeof path, "%s/checkpoint.h5", dir);
    ModelConfig cfg;
    CheckpointState st;
    Checkpoint *ck = checkpoint_open(path, &st, err, sizeof err); /* read once: config, tokenizer, then the tensors */
    if (!ck) fail_msg("%s", err);
    if (ft_init_config(path, &st, which, &cfg, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(st.n_tokenizer, 4);
    assert_int_equal(st.tokenizer[3], 4);
    const int gen = !strcmp(which, "generator");
    assert_int_equal(cfg.num_hidden_layers, gen ? m->cfg.gen_num_hidden_layers : m->cfg.num_hidden_layers);
    FtModel f;
    ft_model_build(&f, &cfg, HEAD_TOKEN, 7, 0.1, 9);
    Tensor *cls = params_find(&f.ps, "classifier.weight");
    real *cls_before = xmalloc((size_t)cls->n * sizeof(real));
    memcpy(cls_before, cls->data, (size_t)cls->n * sizeof(real));
    FtModel fresh; /* the same build without loading: what the re-initialised top layers must hold */
    ft_model_build(&fresh, &cfg, HEAD_TOKEN, 7, 0.1, 9);
    if (ft_model_load_pretrained(&f, ck, &st, which, fresh_top, err, sizeof err)) fail_msg("%s", err);
    checkpoint_close(ck);
    checkpoint_state_free(&st);
    expect_equal(cls, cls_before, "classifier.weight (must stay freshly initialised)");
    free(cls_before);
    int n_fresh = 0;
    for (int i = 0; i < f.ps.n; i++) {
        Tensor *p = f.ps.params[i];
        if (strncmp(p->name, "deberta.", 8)) continue;
        if (encoder_param_layer(p->name, "deberta.") >= cfg.num_hidden_layers - fresh_top) {
            expect_equal(p, params_find(&fresh.ps, p->name)->data, p->name);
            n_fresh++;
            continue;
        }
        char name[512];
        snprintf(name, sizeof name, "%s.%s", which, p->name);
        Tensor *src = params_find(&m->ps, name);
        if (src) { expect_equal(p, src->data, p->name); continue; }
        assert_false(gen);
        /* the discriminator's word/position tables under GDES (E_G + E_delta) and ES (E_G) */
        const int word = strstr(p->name, "word_embeddings") != NULL;
        Tensor *g = word ? m->gen.word : m->gen.position;
        Tensor *d = word ? m->word_delta : m->pos_delta;
        assert_non_null(g);
        real *want = xmalloc((size_t)g->n * sizeof(real));
        for (long k = 0; k < g->n; k++) want[k] = g->data[k] + (sharing == SHARE_GDES ? d->data[k] : 0);
        expect_equal(p, want, p->name);
        free(want);
    }
    assert_int_equal(n_fresh > 0, fresh_top > 0);
    /* more fresh layers than the encoder has: one message */
    ck = checkpoint_open(path, &st, err, sizeof err);
    if (!ck) fail_msg("%s", err);
    assert_int_equal(ft_model_load_pretrained(&fresh, ck, &st, which, cfg.num_hidden_layers + 1, err, sizeof err), -1);
    assert_non_null(strstr(err, "layers"));
    checkpoint_close(ck);
    checkpoint_state_free(&st);
    ft_model_free(&fresh);
    ft_model_free(&f);
    electra_free(m);
    free(m);
}

static void test_init_from_pretrained(void **state) {
    (void)state;
    check_init(SHARE_GDES, "discriminator", 0);
    check_init(SHARE_ES, "discriminator", 0);
    check_init(SHARE_NES, "discriminator", 0);
    check_init(SHARE_GDES, "generator", 0);
    check_init(SHARE_GDES, "discriminator", 1); /* --reinit-layers 1 */
    check_init(SHARE_NES, "generator", 2);
}

/* --layer-decay: every parameter of a 4-layer model with a sequence head (pooler + classifier) gets its
 * multiple by the registration order (4 embedding tensors, 16 per layer, the rel table and its LayerNorm,
 * then the head); decay 1 and 0 leave every rate as it is. */
static void test_layer_rate_scale(void **state) {
    (void)state;
    ModelConfig cfg;
    char err[256];
    config_preset(&cfg, "tiny");
    assert_int_equal(config_validate(&cfg, err, sizeof err), 0);
    FtModel m;
    ft_model_build(&m, &cfg, HEAD_SEQUENCE, 3, 0.1, 5);
    const int L = cfg.num_hidden_layers, n_enc = 4 + 16 * L + 3;
    assert_int_equal(L, 4);
    assert_true(m.ps.n > n_enc);
    for (int i = 0; i < m.ps.n; i++) {
        const char *name = m.ps.params[i]->name;
        const double want = i < 4 ? pow(0.5, L + 1) : i < 4 + 16 * L ? pow(0.5, L - (i - 4) / 16) : i < n_enc ? pow(0.5, L + 1) : 1;
        assert_int_equal(strncmp(name, "deberta.", 8) == 0, i < n_enc);
        const double got = ft_layer_rate_scale(name, L, 0.5);
        if (!(got == want)) fail_msg("%s: rate scale %g, want %g", name, got, want);
        assert_true(ft_layer_rate_scale(name, L, 1) == 1);
        assert_true(ft_layer_rate_scale(name, L, 0) == 1);
    }
    ft_model_free(&m);
}

static void test_options_text(void **state) {
    (void)state;
    FinetuneOptions a, b;
    finetune_options_default(&a);
    snprintf(a.task, sizeof a.task, "genre");
    snprintf(a.init, sizeof a.init, "runs/x/checkpoint.h5");
    snprintf(a.init_model, sizeof a.init_model, "generator");
    snprintf(a.data, sizeof a.data, "data/tasks/genre");
    a.steps = 77; a.batch = 5; a.seed = 123456789012345ull; a.lr = 3.25e-5; a.weight_decay = 0.125; a.max_grad_norm = 2;
    a.dropout = 0.05; a.attention_dropout = 0.0625; a.warmup = 9; a.eval_every = 11; a.log_every = 3; a.save_every = 13;
    a.reinit_layers = 2; a.layer_decay = 0.8; a.pooler = POOL_MEAN;
    char *text = finetune_options_to_text(&a);
    finetune_options_default(&b);
    char err[256];
    assert_int_equal(finetune_options_from_text(&b, text, err, sizeof err), 0);
    assert_string_equal(b.task, "genre");
    assert_string_equal(b.init, a.init);
    assert_string_equal(b.init_model, "generator");
    assert_string_equal(b.data, a.data);
    assert_int_equal(b.steps, 77);
    assert_int_equal(b.batch, 5);
    assert_true(b.seed == a.seed);
    assert_true(b.lr == a.lr && b.weight_decay == a.weight_decay && b.max_grad_norm == a.max_grad_norm && b.dropout == a.dropout &&
                b.attention_dropout == a.attention_dropout && b.layer_decay == a.layer_decay);
    assert_int_equal(b.reinit_layers, 2);
    assert_int_equal(b.pooler, POOL_MEAN);
    assert_int_equal(ft_config_pooler(text), POOL_MEAN);
    assert_int_equal(b.warmup, 9);
    assert_int_equal(b.eval_every, 11);
    assert_int_equal(b.log_every, 3);
    assert_int_equal(b.save_every, 13);
    free(text);
    assert_int_equal(finetune_options_from_text(&b, "ft_bogus = 1\n", err, sizeof err), -1);
    assert_non_null(strstr(err, "ft_bogus"));
    /* --pooler: cls or mean; a checkpoint without ft_pooler (older runs) pooled [CLS] */
    int ok = 0;
    assert_int_equal(finetune_options_set_flag(&b, "pooler", "cls", &ok, err, sizeof err), 1);
    assert_int_equal(b.pooler, POOL_CLS);
    assert_int_equal(finetune_options_set_flag(&b, "pooler", "max", &ok, err, sizeof err), -1);
    assert_string_equal(err, "--pooler 'max' must be cls or mean");
    assert_int_equal(ft_config_pooler("ft_task = genre\n"), POOL_CLS);
    assert_int_equal(ft_config_pooler(NULL), POOL_CLS);
    assert_int_equal(ft_config_pooler("ft_pooler = mean\n"), POOL_MEAN);
    assert_int_equal(ft_config_pooler("ft_pooler = max\n"), -1);
}

/* The mean pooler reads the mean of each row's non-pad tokens: the head on [B, T, H] with padding equals
 * the [CLS] head on [B, 1, H] holding those means; the padded positions' values do not matter. */
static void test_mean_pooler(void **state) {
    (void)state;
    ModelConfig c;
    test_config(&c, SHARE_GDES);
    FtModel m;
    ft_model_build(&m, &c, HEAD_SEQUENCE, 3, 0, 4);
    model_perturb_params(&m.ps, 8);
    enum { B = 2, T = 4 };
    const int H = c.hidden_size;
    const int32_t mask[B * T] = {1, 1, 1, 0, 1, 1, 0, 0};
    Tape t;
    tape_init(&t, 1 << 20);
    const int s3[3] = {B, T, H}, s1[3] = {B, 1, H};
    Tensor *h = tape_tensor(&t, 3, s3, "hidden"), *mean = tape_tensor(&t, 3, s1, "mean");
    for (long i = 0; i < h->n; i++) h->data[i] = (real)sin(0.37 * (double)i + 0.1) * (mask[i / H] ? 1 : 1000);
    for (int b = 0; b < B; b++)
        for (int k = 0; k < H; k++) {
            double sum = 0;
            int n = 0;
            for (int i = 0; i < T; i++) if (mask[b * T + i]) sum += h->data[((size_t)b * T + i) * H + k], n++;
            mean->data[(size_t)b * H + k] = (real)(sum / n);
        }
    TaskHeadOut om, oc;
    m.head.pooler = POOL_MEAN;
    task_head_forward(&t, &m.head, h, B, T, mask, NULL, &om);
    m.head.pooler = POOL_CLS;
    task_head_forward(&t, &m.head, mean, B, 1, NULL, NULL, &oc);
    for (long i = 0; i < om.logits->n; i++) {
        const double d = fabs((double)om.logits->data[i] - (double)oc.logits->data[i]);
        if (!(d <= 1e-5)) fail_msg("mean pooler: logit %ld is %g, the [CLS] head on the means gives %g", i, (double)om.logits->data[i], (double)oc.logits->data[i]);
    }
    tape_free(&t);
    ft_model_free(&m);
}

/* Evaluation with a mean pooler runs every token through the last layer (not [CLS] alone): ft_evaluate's
 * loss equals the training forward's (dropout off) over the same examples. */
static void test_evaluate_mean_pooler(void **state) {
    (void)state;
    ModelConfig c;
    test_config(&c, SHARE_GDES);
    c.max_seq_len = 6;
    FtModel m;
    ft_model_build(&m, &c, HEAD_SEQUENCE, 3, 0, 2);
    model_perturb_params(&m.ps, 3);
    m.head.pooler = POOL_MEAN;
    enum { N = 3, T = 6 };
    int32_t ids[N * T] = {1, 7, 8, 2, 0, 0, 1, 9, 2, 0, 0, 0, 1, 7, 7, 7, 7, 2}, lab[N] = {2, 0, 1}, mask[N * T];
    for (int i = 0; i < N * T; i++) mask[i] = ids[i] != 0;
    TaskSet ts = {0};
    ts.kind = TASK_CLASSIFICATION;
    ts.T = T;
    ts.N = N;
    ts.n_labels = 3;
    ts.ids = ids;
    ts.labels = lab;
    Tape t;
    tape_init(&t, 1 << 22);
    const FtEval e = ft_evaluate(&m, &t, &ts, 2);
    tape_reset(&t);
    t.training = 0;
    TaskHeadOut o;
    Tensor *loss = task_head_forward(&t, &m.head, encoder_forward(&t, &m.enc, NULL, ids, mask, N, T, NULL), N, T, mask, lab, &o);
    const double d = fabs(e.loss - (double)loss->data[0]);
    if (!(d <= 1e-5)) fail_msg("mean pooler: evaluation loss %g, the forward's %g", e.loss, (double)loss->data[0]);
    tape_free(&t);
    ft_model_free(&m);
}

/* ft_evaluate counts exactly the labelled positions; a perfectly confident head scores 1.0 */
static void test_evaluate_counts(void **state) {
    (void)state;
    ModelConfig c;
    test_config(&c, SHARE_GDES);
    FtModel m;
    ft_model_build(&m, &c, HEAD_TOKEN, 3, 0, 1);
    /* the classifier ignores the hidden state and always prefers label 1 */
    Tensor *w = params_find(&m.ps, "classifier.weight"), *b = params_find(&m.ps, "classifier.bias");
    memset(w->data, 0, (size_t)w->n * sizeof(real));
    b->data[0] = 0; b->data[1] = 5; b->data[2] = 0;
    TaskSet ts = {0};
    ts.kind = TASK_TAGGING;
    ts.T = 6;
    ts.N = 3;
    ts.n_labels = 3;
    int32_t ids[18] = {1, 7, 8, 2, 0, 0, 1, 9, 2, 0, 0, 0, 1, 7, 7, 7, 7, 2};
    int32_t lab[18] = {-100, 1, 0, -100, -100, -100, -100, 1, -100, -100, -100, -100, -100, 1, -100, 2, 1, -100};
    ts.ids = ids;
    ts.labels = lab;
    Tape t;
    tape_init(&t, 1 << 20);
    for (int B = 1; B <= 4; B++) { /* any batch size, including a last partial batch */
        FtEval e = ft_evaluate(&m, &t, &ts, B);
        assert_int_equal(e.n, 6);
        assert_true(fabs(e.acc - 4.0 / 6.0) < 1e-12);
        /* gold 1 (4): all right; gold 0 (1), gold 2 (1) predicted as 1: F1(1) = 8/10, F1(0) = F1(2) = 0 */
        assert_true(fabs(e.macro_f1 - 0.8 / 3) < 1e-12);
    }
    tape_free(&t);
    ft_model_free(&m);
}

/* A pass by length (batches padded to their longest example) gives the rows of the full-length pass
 * in file order: the same rows, labels and, up to summation order, the same probabilities and loss */
static void check_by_length(HeadKind kind, TaskKind task) {
    ModelConfig c;
    test_config(&c, SHARE_GDES);
    FtModel m;
    ft_model_build(&m, &c, kind, 3, 0, 1);
    model_perturb_params(&m.ps, 9);
    enum { N = 7, T = 10 };
    /* lengths 10, 3, 6, 2, 9, 4, 10 (pad 0): sorting changes the order and the batches' lengths */
    static const int len[N] = {10, 3, 6, 2, 9, 4, 10};
    int32_t ids[N * T], lab[N * T], wid[N * T];
    TaskSet ts = {0};
    ts.kind = task;
    ts.T = T;
    ts.N = N;
    ts.n_labels = 3;
    for (int n = 0; n < N; n++)
        for (int i = 0; i < T; i++) {
            const int k = n * T + i;
            ids[k] = i >= len[n] ? 0 : i == 0 ? 1 : i == len[n] - 1 ? 2 : 3 + (n * 7 + i * 5) % 30;
            wid[k] = i > 0 && i < len[n] - 1 ? (i + 1) / 2 : -1; /* words of two sub-tokens */
            lab[k] = wid[k] >= 0 ? (n + i) % 3 : TASK_IGNORE;
        }
    int32_t seq_lab[N];
    for (int n = 0; n < N; n++) seq_lab[n] = n % 3;
    ts.ids = ids;
    ts.labels = task == TASK_TAGGING ? lab : seq_lab;
    ts.word_ids = task == TASK_TAGGING ? wid : NULL;
    Tape t;
    tape_init(&t, 1 << 22);
    for (int B = 1; B <= 4; B++) {
        TaskPreds a, b;
        task_eval_run_ordered(&m.enc, &m.head, &t, &ts, B, 0, &a);
        task_eval_run(&m.enc, &m.head, &t, &ts, B, &b);
        assert_int_equal(a.n, b.n);
        assert_int_equal(a.n_labelled, b.n_labelled);
        assert_true(a.n > N - 1);
        for (long r = 0; r < a.n; r++) {
            assert_int_equal(a.ex[r], b.ex[r]);
            assert_int_equal(a.pos[r], b.pos[r]);
            assert_int_equal(a.gold[r], b.gold[r]);
            const double d = fabs((double)a.prob[r] - b.prob[r]);
            if (!(d <= 1e-6)) fail_msg("B %d row %ld: prob %.9g by length, %.9g at full length", B, r, (double)b.prob[r], (double)a.prob[r]);
            if (d < 1e-3) assert_int_equal(a.pred[r], b.pred[r]);
        }
        if (!(fabs(a.loss - b.loss) <= 1e-5 * fabs(a.loss))) fail_msg("B %d: loss %.9g by length, %.9g", B, b.loss, a.loss);
        /* by length computes fewer positions: every batch only as long as its longest example */
        assert_true(b.computed_positions < a.computed_positions);
        assert_int_equal(a.computed_positions, (long long)N * T);
        task_preds_free(&a);
        task_preds_free(&b);
    }
    tape_free(&t);
    ft_model_free(&m);
}

static void test_eval_by_length(void **state) {
    (void)state;
    check_by_length(HEAD_SEQUENCE, TASK_CLASSIFICATION);
    check_by_length(HEAD_TOKEN, TASK_TAGGING);
}

/* ft_length_window: a permutation of its window; each batch a contiguous run of the window's examples
 * sorted by length (so no batch's lengths overlap another's but at equal lengths); the batches' order
 * drawn from (seed, w) and repeatable */
static void test_length_window(void **state) {
    (void)state;
    enum { G = 8, B = 4, W = G * B, T = 50, NE = 100 };
    int32_t lens[NE];
    for (int e = 0; e < NE; e++) lens[e] = 1 + (int)((e * 37u + 11) % T);
    int64_t in[W], a[W], b[W];
    for (int j = 0; j < W; j++) in[j] = (j * 53 + 7) % NE; /* distinct: 53 is prime to 100 */
    int moved = 0;
    for (int64_t w = 0; w < 4; w++) {
        memcpy(a, in, sizeof a);
        memcpy(b, in, sizeof b);
        ft_length_window(a, lens, T, G, B, 1234, w);
        ft_length_window(b, lens, T, G, B, 1234, w);
        assert_memory_equal(a, b, sizeof a);
        /* a permutation of the window */
        int seen[NE] = {0};
        for (int j = 0; j < W; j++) seen[a[j]]++;
        for (int j = 0; j < W; j++) assert_int_equal(seen[in[j]], 1);
        /* each batch sorted, and the batches' length ranges disjoint (but for equal lengths) */
        int lo[G], hi[G];
        for (int g = 0; g < G; g++) {
            lo[g] = lens[a[g * B]];
            hi[g] = lens[a[g * B + B - 1]];
            for (int i = 1; i < B; i++) assert_true(lens[a[g * B + i - 1]] <= lens[a[g * B + i]]);
        }
        for (int g = 0; g < G; g++)
            for (int h = 0; h < G; h++)
                if (g != h && lo[g] < lo[h]) assert_true(hi[g] <= lo[h]);
        /* the batch order is drawn: not always the sorted one */
        for (int g = 1; g < G; g++) moved += lo[g] < lo[g - 1];
    }
    assert_true(moved > 0);
}

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "finetune");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_init_from_pretrained),
        cmocka_unit_test(test_layer_rate_scale),
        cmocka_unit_test(test_options_text),
        cmocka_unit_test(test_evaluate_counts),
        cmocka_unit_test(test_eval_by_length),
        cmocka_unit_test(test_length_window),
        cmocka_unit_test(test_mean_pooler),
        cmocka_unit_test(test_evaluate_mean_pooler),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
