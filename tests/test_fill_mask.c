/* test_fill_mask.c — train/infer/fill_mask.h called directly on a tiny model and tokenizer built here:
 * the query's ids ([CLS] pieces [MASK] pieces [SEP]) and its errors, each [MASK]'s ranked
 * probabilities against a softmax of the generator's logits computed here in long double, and the
 * text and JSON lines fill_mask_write prints. */
#include "tests/testutil.h"
#include "tests/bpeutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include "data/tokenizer.h"
#include "model/electra.h"
#include "train/infer/fill_mask.h"

static TokFile *TK;
static Electra M;

static int setup(void **state) {
    static const char text[] = "the cat sees a dog. the dog sees a bird. a bird finds the cat. the old cat keeps a red letter.";
    char err[512];
    TK = tokfile_from_bpe(test_bpe(text, 300));
    ModelConfig c;
    config_preset(&c, "test");
    c.vocab_size = TK->vocab_size;
    c.max_seq_len = c.max_position_embeddings = 16;
    c.hidden_dropout_prob = c.attention_probs_dropout_prob = 0;
    if (config_validate(&c, err, sizeof err)) fail_msg("%s", err);
    electra_build(&M, &c, 11);
    for (int i = 0; i < M.ps.n; i++) /* away from the init, so that the logits differ */
        for (long j = 0; j < M.ps.params[i]->n; j++) M.ps.params[i]->data[j] += (real)(0.2 * rng_normal(3, (uint64_t)i, (uint64_t)j));
    return 0;
}

static int teardown(void **state) {
    electra_free(&M);
    tokfile_free(TK);
    return 0;
}

static void encodes_pieces_and_masks(void **state) {
    char err[256];
    FillMaskQuery q = {.text = "the cat  [MASK] a [MASK]"};
    assert_int_equal(fill_mask_encode(TK, &q, 16, err, sizeof err), 0);
    assert_int_equal(q.n_masks, 2);
    assert_int_equal(q.ids[0], TK->sp.cls);
    assert_int_equal(q.ids[q.n - 1], TK->sp.sep);
    assert_int_equal(q.ids[q.n - 2], TK->sp.mask); /* the last piece is empty */
    /* the pieces: "the cat" (spaces before [MASK] stripped) and " a" */
    size_t n1, n2;
    int32_t *a = tokenizer_encode(TK->bpe, "the cat", 7, &n1), *b = tokenizer_encode(TK->bpe, " a", 2, &n2);
    assert_int_equal(q.n, 1 + (int)n1 + 1 + (int)n2 + 1 + 1);
    assert_memory_equal(q.ids + 1, a, n1 * sizeof(int32_t));
    assert_int_equal(q.ids[1 + n1], TK->sp.mask);
    assert_memory_equal(q.ids + 2 + n1, b, n2 * sizeof(int32_t));
    free(a);
    free(b);
    free(q.ids);
    FillMaskQuery none = {.text = "no mask here"};
    assert_int_equal(fill_mask_encode(TK, &none, 16, err, sizeof err), -1);
    assert_non_null(strstr(err, "has no [MASK] to fill"));
    free(none.ids);
    FillMaskQuery longq = {.text = "the cat sees a dog and the dog sees a bird and [MASK]"};
    assert_int_equal(fill_mask_encode(TK, &longq, 8, err, sizeof err), -1);
    assert_non_null(strstr(err, "the model takes at most 8"));
    free(longq.ids);
}

/* Every token of each [MASK], ranked: each probability equals the long-double softmax of the
 * generator's logits for that token, in descending order, summing to 1. */
static void ranks_the_softmax_of_the_logits(void **state) {
    char err[256];
    FillMaskQuery q = {.text = "the [MASK] sees [MASK] bird."};
    assert_int_equal(fill_mask_encode(TK, &q, 16, err, sizeof err), 0);
    const int V = M.cfg.vocab_size, T = q.n;
    FillMaskTop *top = xmalloc((size_t)2 * V * sizeof *top);
    Tape t;
    tape_init(&t, (size_t)16 << 20);
    fill_mask_top(&M, &t, TK, &q, V, top);
    /* the logits, here */
    int32_t mask[16], labels[16] = {0};
    for (int i = 0; i < T; i++) mask[i] = 1, labels[i] = q.ids[i] == TK->sp.mask ? 1 : 0;
    ElectraInput in = {.B = 1, .T = T, .input_ids = q.ids, .attention_mask = mask, .labels = labels};
    tape_reset(&t);
    t.training = 0;
    GenOut g;
    generator_forward(&t, &M, &in, &g);
    assert_int_equal(g.n_masked, 2);
    for (int r = 0; r < 2; r++) {
        const real *row = g.logits->data + (size_t)r * V;
        long double z = 0, sum = 0;
        for (int v = 0; v < V; v++) z += expl((long double)row[v]);
        for (int k = 0; k < V; k++) {
            const FillMaskTop *c = &top[(size_t)r * V + k];
            const long double want = expl((long double)row[c->id]) / z;
            if (!(fabsl(c->p - want) <= 1e-12L)) fail_msg("mask %d, rank %d: token %d has p %.17g, the softmax %.17Lg", r, k, c->id, c->p, want);
            if (k && !(c[-1].p >= c->p)) fail_msg("mask %d: rank %d (%.17g) above rank %d (%.17g)", r, k, c->p, k - 1, c[-1].p);
            sum += c->p;
        }
        if (!(fabsl(sum - 1) <= 1e-12L)) fail_msg("mask %d: the probabilities sum to %.17Lg", r, sum);
    }
    assert_true(top[0].p > top[1].p); /* the model is not uniform */
    tape_free(&t);
    free(top);
    free(q.ids);
}

/* fill_mask_write: "query N: TEXT", one line per [MASK] with K pairs; JSON: one object per query. */
static void writes_text_and_json(void **state) {
    char err[256];
    FillMaskQuery qs[2] = {{.text = "a [MASK] cat"}, {.text = "[MASK] sees [MASK]"}};
    for (int i = 0; i < 2; i++) assert_int_equal(fill_mask_encode(TK, &qs[i], 16, err, sizeof err), 0);
    for (int json = 0; json <= 1; json++) {
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        assert_int_equal(fill_mask_write(f, &M, TK, qs, 2, 3, json), 0);
        fclose(f);
        int lines = 0, pairs = 0;
        for (char *p = buf; *p; p++) lines += *p == '\n', pairs += !json && *p == '|';
        if (json) {
            assert_int_equal(lines, 2);
            static const char head[] = "{\"query\":\"a [MASK] cat\",\"input_ids\":[";
            assert_true(!strncmp(buf, head, strlen(head)));
            assert_non_null(strstr(buf, "\"masks\":[[{\"token\":"));
        } else {
            assert_int_equal(lines, 2 + 3); /* two query lines, three [MASK] lines */
            assert_int_equal(pairs, 3 * 2);  /* three pairs per [MASK]: two separators each */
            static const char head[] = "query 1: a [MASK] cat\n  [MASK] 1: '";
            assert_true(!strncmp(buf, head, strlen(head)));
            assert_non_null(strstr(buf, "\nquery 2: [MASK] sees [MASK]\n  [MASK] 1: '"));
        }
        free(buf);
    }
    for (int i = 0; i < 2; i++) free(qs[i].ids);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(encodes_pieces_and_masks),
        cmocka_unit_test(ranks_the_softmax_of_the_logits),
        cmocka_unit_test(writes_text_and_json),
    };
    return test_exit(cmocka_run_group_tests_name("fill_mask", tests, setup, teardown));
}
