/* test_loader.c — packing, order, epochs, ranks, exact resume and masking of the batch loader, on
 * synthetic shards whose every token is unique (token value = 5 + global token number). */
#include "tests/shardutil.h"
#include "data/loader.h"
#include "autograd/base/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define VOCAB 20000
static char g_dir[64], g_dir_val[80];

/* The corpus: 3 shards; doc lengths vary from 1 to ~90 tokens. */
enum { N_SHARDS = 3 };
static const int DOCS_PER_SHARD[N_SHARDS] = {40, 7, 25};
static int32_t *g_tok[N_SHARDS];
static int64_t *g_off[N_SHARDS];

static void write_corpus(const char *dir, const char *split, int vocab) {
    int32_t next = 5;
    for (int s = 0; s < N_SHARDS; s++) {
        int nd = DOCS_PER_SHARD[s];
        g_off[s] = xmalloc((size_t)(nd + 1) * sizeof(int64_t));
        g_off[s][0] = 0;
        for (int d = 0; d < nd; d++) g_off[s][d + 1] = g_off[s][d] + 1 + (int64_t)rng_below(42, 42, (uint64_t)(s * 1000 + d), 90);
        g_tok[s] = xmalloc((size_t)g_off[s][nd] * sizeof(int32_t));
        for (int64_t i = 0; i < g_off[s][nd]; i++) g_tok[s][i] = next++;
        char path[256];
        snprintf(path, sizeof path, "%s/%s-%05d.h5", dir, split, s);
        test_write_shard(path, vocab, split, s, g_tok[s], g_off[s], nd);
    }
    assert_true(next < vocab);
}

/* Expected sequences (unmasked, file order) built independently from the packing rule. */
typedef struct { int32_t *ids; int n; } Seq;
static Seq *expected(int T, int *n_out) {
    int L = T - 2, n = 0, cap = 1024;
    Seq *v = xmalloc((size_t)cap * sizeof(Seq));
    for (int s = 0; s < N_SHARDS; s++) {
        int nd = DOCS_PER_SHARD[s];
        int64_t S = g_off[s][nd] + nd;
        int32_t *stream = xmalloc((size_t)S * sizeof(int32_t));
        int64_t k = 0;
        for (int d = 0; d < nd; d++) {
            for (int64_t i = g_off[s][d]; i < g_off[s][d + 1]; i++) stream[k++] = g_tok[s][i];
            stream[k++] = TOK_SEP;
        }
        for (int64_t a = 0; a < S; a += L) {
            int m = (int)MIN((int64_t)L, S - a);
            int32_t *ids = xcalloc((size_t)T, sizeof(int32_t));
            ids[0] = TOK_CLS;
            memcpy(ids + 1, stream + a, (size_t)m * sizeof(int32_t));
            ids[m + 1] = TOK_SEP;
            if (n == cap) { cap *= 2; v = xrealloc(v, (size_t)cap * sizeof(Seq)); }
            v[n++] = (Seq){ids, m + 2};
        }
        free(stream);
    }
    *n_out = n;
    return v;
}
static void free_expected(Seq *v, int n) { for (int i = 0; i < n; i++) free(v[i].ids); free(v); }

static Loader *open_loader(const char *split, int T, int B, MaskMode mode, int shuffle, int window, int rank, int world, uint64_t seed) {
    LoaderConfig c;
    loader_config_default(&c);
    c.T = T; c.B = B; c.mask_mode = mode; c.shuffle = shuffle; c.window = window;
    c.rank = rank; c.world = world; c.seed = seed;
    char err[1024];
    Loader *L = loader_open_err(split[0] == 'v' ? g_dir_val : g_dir, split, &c, err, sizeof err);
    if (!L) fail_msg("%s", err);
    return L;
}

/* Index of the expected sequence equal to row (after undoing masks via labels), or -1. */
static int find_seq(const Seq *v, int n, const int32_t *ids, const int32_t *labels, int T) {
    int32_t row[T];
    for (int t = 0; t < T; t++) row[t] = labels[t] > 0 ? labels[t] : ids[t];
    for (int i = 0; i < n; i++) if (memcmp(v[i].ids, row, (size_t)T * sizeof(int32_t)) == 0) return i;
    return -1;
}

/* ---------------------------------------------------------------- tests */

static void test_packing_file_order(void **state) {
    (void)state;
    const int T = 32, B = 5;
    int n;
    Seq *v = expected(T, &n);
    Loader *L = open_loader("train", T, B, MASK_NONE, 0, 4, 0, 1, 1);
    assert_int_equal(loader_n_sequences(L), n);
    assert_int_equal(loader_vocab_size(L), VOCAB);
    Batch b;
    batch_alloc(&b, B, T);
    for (int q = 0; q < 2 * n + 3; q += B) { /* two epochs and a bit: wraps in file order */
        assert_int_equal(loader_next(L, &b), 1);
        int ntok = 0;
        for (int r = 0; r < B; r++) {
            const Seq *e = &v[(q + r) % n];
            assert_memory_equal(b.input_ids + r * T, e->ids, T * sizeof(int32_t));
            for (int t = 0; t < T; t++) {
                assert_int_equal(b.attention_mask[r * T + t], t < e->n);
                assert_int_equal(b.labels[r * T + t], 0);
            }
            ntok += e->n;
        }
        assert_int_equal(b.n_tokens, ntok);
        assert_int_equal(b.n_masked, 0);
    }
    batch_free(&b);
    loader_close(L);
    free_expected(v, n);
}

static void test_val_single_pass_and_rewind(void **state) {
    (void)state;
    const int T = 40, B = 4;
    int n;
    Seq *v = expected(T, &n);
    Loader *L = open_loader("val", T, B, MASK_OFFICIAL, -1, 1024, 0, 1, 9);
    Batch b, c;
    batch_alloc(&b, B, T);
    batch_alloc(&c, B, T);
    int batches = 0, seen = 0;
    while (loader_next(L, &b)) {
        for (int r = 0; r < B; r++) {
            int q = batches * B + r;
            if (q < n) { assert_int_equal(find_seq(v, n, b.input_ids + r * T, b.labels + r * T, T), q); seen++; }
            else for (int t = 0; t < T; t++) assert_int_equal(b.attention_mask[r * T + t], 0);
        }
        batches++;
    }
    assert_int_equal(batches, (n + B - 1) / B);
    assert_int_equal(seen, n);
    assert_int_equal(loader_next(L, &b), 0);
    loader_rewind(L);
    Loader *L2 = open_loader("val", T, B, MASK_OFFICIAL, -1, 1024, 0, 1, 9);
    for (int i = 0; i < batches; i++) { /* same masks on every pass */
        assert_int_equal(loader_next(L, &b), 1);
        assert_int_equal(loader_next(L2, &c), 1);
        assert_memory_equal(b.input_ids, c.input_ids, B * T * sizeof(int32_t));
        assert_memory_equal(b.labels, c.labels, B * T * sizeof(int32_t));
    }
    batch_free(&b); batch_free(&c);
    loader_close(L); loader_close(L2);
    free_expected(v, n);
}

/* Each epoch is a permutation of all sequences; epochs and seeds give different orders. */
static void test_shuffle_epochs(void **state) {
    (void)state;
    const int T = 24, B = 1;
    int n;
    Seq *v = expected(T, &n);
    Loader *L = open_loader("train", T, B, MASK_OFFICIAL, 1, 5, 0, 1, 7);
    Loader *L2 = open_loader("train", T, B, MASK_OFFICIAL, 1, 5, 0, 1, 8);
    Batch b;
    batch_alloc(&b, B, T);
    int *order = xmalloc(3 * (size_t)n * sizeof(int)), *order2 = xmalloc((size_t)n * sizeof(int));
    char *hit = xmalloc((size_t)n);
    for (int e = 0; e < 3; e++) {
        memset(hit, 0, (size_t)n);
        for (int i = 0; i < n; i++) {
            assert_int_equal(loader_next(L, &b), 1);
            int k = find_seq(v, n, b.input_ids, b.labels, T);
            assert_true(k >= 0);
            assert_false(hit[k]);
            hit[k] = 1;
            order[e * n + i] = k;
        }
    }
    for (int i = 0; i < n; i++) { loader_next(L2, &b); order2[i] = find_seq(v, n, b.input_ids, b.labels, T); }
    int same01 = 1, same_id = 1, same_seed = 1;
    for (int i = 0; i < n; i++) {
        same01 &= order[i] == order[n + i];
        same_id &= order[i] == i;
        same_seed &= order[i] == order2[i];
    }
    assert_false(same01);
    assert_false(same_id);
    assert_false(same_seed);
    free(order); free(order2); free(hit);
    batch_free(&b);
    loader_close(L); loader_close(L2);
    free_expected(v, n);
}

static void test_exact_resume(void **state) {
    (void)state;
    const int T = 32, B = 3;
    Loader *A = open_loader("train", T, B, MASK_BERT, 1, 4, 0, 1, 5);
    Batch a, c;
    batch_alloc(&a, B, T);
    batch_alloc(&c, B, T);
    for (int i = 0; i < 37; i++) loader_next(A, &a); /* crosses an epoch boundary */
    LoaderState st;
    loader_get_state(A, &st);
    assert_int_equal(st.position, 37 * B);
    assert_int_equal(sizeof(LoaderState), LOADER_STATE_LEN * sizeof(int64_t));
    enum { M = 30 };
    int32_t *ids = xmalloc(M * (size_t)B * T * sizeof(int32_t)), *lab = xmalloc(M * (size_t)B * T * sizeof(int32_t));
    for (int i = 0; i < M; i++) {
        loader_next(A, &a);
        memcpy(ids + (size_t)i * B * T, a.input_ids, (size_t)B * T * sizeof(int32_t));
        memcpy(lab + (size_t)i * B * T, a.labels, (size_t)B * T * sizeof(int32_t));
    }
    Loader *R = open_loader("train", T, B, MASK_BERT, 1, 4, 0, 1, 5);
    char err[512];
    assert_int_equal(loader_set_state(R, &st, err, sizeof err), 0);
    for (int i = 0; i < M; i++) {
        loader_next(R, &c);
        assert_memory_equal(c.input_ids, ids + (size_t)i * B * T, (size_t)B * T * sizeof(int32_t));
        assert_memory_equal(c.labels, lab + (size_t)i * B * T, (size_t)B * T * sizeof(int32_t));
    }
    /* a state from other settings is refused */
    Loader *X = open_loader("train", T + 8, B, MASK_BERT, 1, 4, 0, 1, 5);
    assert_int_not_equal(loader_set_state(X, &st, err, sizeof err), 0);
    assert_non_null(strstr(err, "loader state"));
    free(ids); free(lab);
    batch_free(&a); batch_free(&c);
    loader_close(A); loader_close(R); loader_close(X);
}

/* Two ranks of B rows == one rank of 2B rows, split in halves (masks included). */
static void test_ranks_disjoint(void **state) {
    (void)state;
    const int T = 32, B = 2;
    Loader *r0 = open_loader("train", T, B, MASK_OFFICIAL, 1, 4, 0, 2, 3);
    Loader *r1 = open_loader("train", T, B, MASK_OFFICIAL, 1, 4, 1, 2, 3);
    Loader *one = open_loader("train", T, 2 * B, MASK_OFFICIAL, 1, 4, 0, 1, 3);
    Batch a, b, g;
    batch_alloc(&a, B, T); batch_alloc(&b, B, T); batch_alloc(&g, 2 * B, T);
    for (int i = 0; i < 50; i++) {
        loader_next(r0, &a); loader_next(r1, &b); loader_next(one, &g);
        assert_memory_equal(a.input_ids, g.input_ids, (size_t)B * T * sizeof(int32_t));
        assert_memory_equal(b.input_ids, g.input_ids + (size_t)B * T, (size_t)B * T * sizeof(int32_t));
        assert_memory_equal(b.labels, g.labels + (size_t)B * T, (size_t)B * T * sizeof(int32_t));
    }
    batch_free(&a); batch_free(&b); batch_free(&g);
    loader_close(r0); loader_close(r1); loader_close(one);
}

/* Official scheme: exact counts, one mask per 6-candidate window, first num windows, never specials. */
static void check_official(int n, int T, int want) {
    int32_t ids[T], orig[T], lab[T];
    for (int t = 0; t < T; t++) orig[t] = t == 0 ? TOK_CLS : t == n - 1 ? TOK_SEP : t < n ? 100 + t : TOK_PAD;
    for (uint64_t trial = 0; trial < 20; trial++) {
        memcpy(ids, orig, sizeof ids);
        int m = mask_sequence(ids, lab, n, T, MASK_OFFICIAL, 0.15, VOCAB, 77, rng_stream(RNG_MASK, 0, 0), trial << 20);
        assert_int_equal(m, want);
        int cnt = 0, last_window = -1;
        for (int t = 0; t < T; t++) {
            if (lab[t] > 0) {
                assert_int_equal(lab[t], orig[t]);
                assert_int_equal(ids[t], TOK_MASK);
                assert_true(orig[t] >= TOK_N_SPECIAL);
                int w = (t - 1) / 6; /* candidates are positions 1..n-2 */
                assert_true(w > last_window); /* at most one per window */
                last_window = w;
                assert_true(w < want);        /* only the first `want` windows */
                cnt++;
            } else {
                assert_int_equal(ids[t], orig[t]);
            }
        }
        assert_int_equal(cnt, want);
    }
}

static void test_mask_official_counts(void **state) {
    (void)state;
    /* num = min(max_preds, max(1, round_half_even(0.15 n))), max_preds = ceil(0.15 T / 10) * 10 */
    check_official(512, 512, 77);
    check_official(30, 30, 4);
    check_official(10, 512, 2);
    check_official(50, 512, 8);
    check_official(70, 512, 10);
    check_official(510, 512, 76);
    check_official(3, 512, 1);
    check_official(128, 128, 19);  /* rint(19.2) = 19 <= max_preds 20 */
    check_official(200, 200, 30);  /* max_preds 30 */
}

static void test_mask_random_and_bert(void **state) {
    (void)state;
    const int T = 128, n = 128;
    int32_t ids[T], lab[T];
    long mask = 0, keep = 0, repl = 0, total = 0;
    for (uint64_t s = 0; s < 400; s++) {
        for (int t = 0; t < T; t++) ids[t] = t == 0 ? TOK_CLS : t == n - 1 ? TOK_SEP : 1000 + t;
        int m = mask_sequence(ids, lab, n, T, MASK_RANDOM, 0.15, VOCAB, 5, 1, s << 20);
        assert_int_equal(m, 19);
        int c = 0;
        for (int t = 0; t < T; t++) if (lab[t]) { c++; assert_int_equal(ids[t], TOK_MASK); assert_int_equal(lab[t], 1000 + t); }
        assert_int_equal(c, 19);
        for (int t = 0; t < T; t++) ids[t] = t == 0 ? TOK_CLS : t == n - 1 ? TOK_SEP : 1000 + t;
        m = mask_sequence(ids, lab, n, T, MASK_BERT, 0.15, VOCAB, 5, 2, s << 20);
        assert_int_equal(m, 19);
        for (int t = 0; t < T; t++) {
            if (!lab[t]) { assert_int_equal(ids[t], t == 0 ? TOK_CLS : t == n - 1 ? TOK_SEP : 1000 + t); continue; }
            assert_int_equal(lab[t], 1000 + t);
            assert_true(t > 0 && t < n - 1);
            total++;
            if (ids[t] == TOK_MASK) mask++;
            else if (ids[t] == lab[t]) keep++;
            else { repl++; assert_true(ids[t] >= TOK_N_SPECIAL && ids[t] < VOCAB); }
        }
    }
    /* 7600 draws: 80/10/10 within ~4 standard deviations */
    assert_true(fabs((double)mask / total - 0.8) < 0.02);
    assert_true(fabs((double)keep / total - 0.1) < 0.015);
    assert_true(fabs((double)repl / total - 0.1) < 0.015);
}

/* Loader masks: rate, rules, and dynamic per epoch. */
static void test_loader_masking(void **state) {
    (void)state;
    const int T = 64, B = 4;
    int n;
    Seq *v = expected(T, &n);
    Loader *L = open_loader("train", T, B, MASK_OFFICIAL, 0, 1024, 0, 1, 11);
    Batch b;
    batch_alloc(&b, B, T);
    int nb = (n + B - 1) / B;
    int32_t *first = xmalloc((size_t)nb * B * T * sizeof(int32_t));
    for (int i = 0; i < nb; i++) {
        loader_next(L, &b);
        int masked = 0;
        for (int r = 0; r < B; r++) {
            int q = (i * B + r) % n;
            const Seq *e = &v[q];
            int want = (int)rint(0.15 * e->n);
            if (want < 1) want = 1;
            int cand = 0, m = 0;
            for (int t = 0; t < e->n; t++) cand += e->ids[t] >= TOK_N_SPECIAL;
            if (want > (cand + 5) / 6) want = (cand + 5) / 6; /* one per window at most */
            for (int t = 0; t < T; t++) {
                int32_t lab = b.labels[r * T + t];
                if (lab > 0) {
                    m++;
                    assert_int_equal(lab, e->ids[t]);
                    assert_true(lab >= TOK_N_SPECIAL);
                    assert_int_equal(b.input_ids[r * T + t], TOK_MASK);
                } else {
                    assert_int_equal(b.input_ids[r * T + t], e->ids[t]);
                }
            }
            assert_int_equal(m, want);
            masked += m;
        }
        assert_int_equal(b.n_masked, masked);
        memcpy(first + (size_t)i * B * T, b.labels, (size_t)B * T * sizeof(int32_t));
    }
    /* the next epoch (file order, so batch k of epoch 1 starts at position n + k*B) masks differently */
    loader_rewind(L);
    LoaderState st;
    loader_get_state(L, &st);
    st.position = n; /* epoch 1, sequence 0 */
    char err[256];
    assert_int_equal(loader_set_state(L, &st, err, sizeof err), 0);
    loader_next(L, &b);
    assert_memory_not_equal(b.labels, first, (size_t)B * T * sizeof(int32_t));
    free(first);
    batch_free(&b);
    loader_close(L);
    free_expected(v, n);
}

static void test_bad_inputs(void **state) {
    (void)state;
    LoaderConfig c;
    loader_config_default(&c);
    c.T = 32; c.B = 2;
    char err[1024];
    char empty[96];
    snprintf(empty, sizeof empty, "%s/empty", g_dir);
    mkdir(empty, 0777);
    assert_null(loader_open_err(empty, "train", &c, err, sizeof err));
    assert_non_null(strstr(err, "no train-NNNNN.h5"));
    assert_null(loader_open_err("/nonexistent/shards", "train", &c, err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/shards"));
    c.T = 2;
    assert_null(loader_open_err(g_dir, "train", &c, err, sizeof err));
    /* a shard from a different tokenizer next to the others */
    char mixed[96], path[160];
    snprintf(mixed, sizeof mixed, "%s/mixed", g_dir);
    mkdir(mixed, 0777);
    for (int k = 0; k < 2; k++) {
        const int32_t tok[3] = {5, 6, 7};
        const int64_t off[2] = {0, 3};
        snprintf(path, sizeof path, "%s/train-%05d.h5", mixed, k);
        test_write_shard(path, k ? 400 : 300, "train", k, tok, off, 1);
    }
    c.T = 32;
    assert_null(loader_open_err(mixed, "train", &c, err, sizeof err));
    assert_non_null(strstr(err, "differs"));
}

static int setup(void **state) {
    (void)state;
    if (test_tmpdir(g_dir, sizeof g_dir, "loader")) return -1;
    snprintf(g_dir_val, sizeof g_dir_val, "%s/v", g_dir);
    mkdir(g_dir_val, 0777);
    write_corpus(g_dir_val, "val", VOCAB);
    for (int s = 0; s < N_SHARDS; s++) { free(g_tok[s]); free(g_off[s]); }
    write_corpus(g_dir, "train", VOCAB); /* same content; g_tok/g_off describe it */
    return 0;
}
static int teardown(void **state) {
    (void)state;
    for (int s = 0; s < N_SHARDS; s++) { free(g_tok[s]); free(g_off[s]); }
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_packing_file_order),
        cmocka_unit_test(test_val_single_pass_and_rewind),
        cmocka_unit_test(test_shuffle_epochs),
        cmocka_unit_test(test_exact_resume),
        cmocka_unit_test(test_ranks_disjoint),
        cmocka_unit_test(test_mask_official_counts),
        cmocka_unit_test(test_mask_random_and_bert),
        cmocka_unit_test(test_loader_masking),
        cmocka_unit_test(test_bad_inputs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
