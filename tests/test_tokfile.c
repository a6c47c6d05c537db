/* test_tokfile.c — tokenizer files of either kind (data/tokfile.h) and what the shards and the loader
 * take from them: the special ids of SentencePiece models written here by hand in the protobuf wire
 * format ([MASK] a user-defined piece away from id 4, or no [MASK] piece: the id after the last), the
 * refusals, the shard attributes, and masking with a SentencePiece vocabulary (the [MASK] id of the
 * model at every masked position, never a special or control id masked or drawn as a replacement,
 * every other id drawn); and that the general masking is the old one for our tokenizer. */
#include "tests/shardutil.h"
#include "data/loader.h"
#include "data/tokfile.h"
#include "autograd/base/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- a SentencePiece ModelProto, written by hand ---- */

typedef struct {
    uint8_t *b;
    size_t n, cap;
} Buf;

static void put(Buf *o, const void *p, size_t n) {
    if (o->n + n > o->cap) {
        o->cap = (o->n + n) * 2 + 64;
        o->b = xrealloc(o->b, o->cap);
    }
    memcpy(o->b + o->n, p, n);
    o->n += n;
}
static void put_varint(Buf *o, uint64_t v) {
    do {
        uint8_t c = (uint8_t)(v & 0x7f);
        v >>= 7;
        if (v) c |= 0x80;
        put(o, &c, 1);
    } while (v);
}
static void put_key(Buf *o, int field, int wire) { put_varint(o, (uint64_t)field << 3 | (uint64_t)wire); }
static void put_bytes(Buf *o, int field, const void *p, size_t n) {
    put_key(o, field, 2);
    put_varint(o, n);
    put(o, p, n);
}

typedef struct {
    const char *piece;
    int type; /* SPM_* */
} Piece;

/* A unigram model of the given pieces (score -i for piece i), identity normalisation, unk_id as given. */
static uint8_t *spm_model_bytes(const Piece *pieces, int n, int unk_id, size_t *len) {
    Buf o = {0};
    for (int i = 0; i < n; i++) {
        Buf p = {0};
        put_bytes(&p, 1, pieces[i].piece, strlen(pieces[i].piece));
        const float score = -(float)i;
        put_key(&p, 2, 5);
        put(&p, &score, 4);
        put_key(&p, 3, 0);
        put_varint(&p, (uint64_t)pieces[i].type);
        put_bytes(&o, 1, p.b, p.n);
        free(p.b);
    }
    Buf t = {0};
    put_key(&t, 3, 0); /* model_type UNIGRAM */
    put_varint(&t, 1);
    put_key(&t, 40, 0); /* unk_id */
    put_varint(&t, (uint64_t)unk_id);
    put_bytes(&o, 2, t.b, t.n);
    free(t.b);
    Buf nz = {0};
    put_bytes(&nz, 1, "identity", 8);
    put_bytes(&o, 3, nz.b, nz.n);
    free(nz.b);
    *len = o.n;
    return o.b;
}

/* DeBERTa-V3-like: [PAD] [CLS] [SEP] (control) [UNK] (unknown) [CTL] (control) <br> (user) and, with
 * mask, [MASK] (user-defined) = 6; then ordinary pieces up to `vocab` pieces. */
enum { SPM_MASK_ID = 6, SPM_CTL_ID = 4 };
static uint8_t *deberta_like(int vocab, int with_mask, size_t *len) {
    Piece *p = xcalloc((size_t)vocab, sizeof(Piece));
    static const Piece head[7] = {{"[PAD]", SPM_CONTROL}, {"[CLS]", SPM_CONTROL}, {"[SEP]", SPM_CONTROL}, {"[UNK]", SPM_UNKNOWN},
                                  {"[CTL]", SPM_CONTROL}, {"<br>", SPM_USER_DEFINED}, {"[MASK]", SPM_USER_DEFINED}};
    int n = with_mask ? 7 : 6;
    memcpy(p, head, (size_t)n * sizeof(Piece));
    char (*names)[16] = xcalloc((size_t)vocab, 16);
    for (int i = n; i < vocab; i++) {
        snprintf(names[i], 16, "\xe2\x96\x81w%d", i); /* ▁w<i> */
        p[i] = (Piece){names[i], SPM_NORMAL};
    }
    uint8_t *b = spm_model_bytes(p, vocab, 3, len);
    free(names);
    free(p);
    return b;
}

static TokFile *parse(const uint8_t *b, size_t len, char *err, size_t errlen) { return tokfile_from_bytes(b, len, "test.model", err, errlen); }

static void test_spm_user_defined_mask(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = deberta_like(40, 1, &len);
    char err[1400];
    TokFile *t = parse(b, len, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(t->kind, TOKFILE_SPM);
    assert_int_equal(t->vocab_size, 40);
    assert_int_equal(t->sp.pad, 0);
    assert_int_equal(t->sp.cls, 1);
    assert_int_equal(t->sp.sep, 2);
    assert_int_equal(t->sp.unk, 3);
    assert_int_equal(t->sp.mask, SPM_MASK_ID);
    assert_false(t->mask_appended);
    const int32_t want[6] = {0, 1, 2, 3, SPM_CTL_ID, SPM_MASK_ID}; /* the five and the control piece [CTL] */
    assert_int_equal(t->n_special, 6);
    assert_memory_equal(t->special, want, sizeof want);
    char h[17];
    tokenizer_hash_bytes(b, len, h);
    assert_string_equal(t->hash, h);
    size_t n;
    const uint8_t *back = tokfile_bytes(t, &n);
    assert_int_equal(n, len);
    assert_memory_equal(back, b, len);
    tokfile_free(t);
    free(b);
}

static void test_spm_appended_mask(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = deberta_like(40, 0, &len);
    char err[1400];
    TokFile *t = parse(b, len, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(t->sp.mask, 40); /* the published spm.model: 128,000 pieces, [MASK] = 128000 */
    assert_int_equal(t->vocab_size, 41);
    assert_true(t->mask_appended);
    assert_int_equal(t->special[t->n_special - 1], 40);
    tokfile_free(t);
    free(b);
}

static void expect_refused(const Piece *p, int n, int unk_id, const char *needle) {
    size_t len;
    uint8_t *b = spm_model_bytes(p, n, unk_id, &len);
    char err[1400] = "";
    TokFile *t = parse(b, len, err, sizeof err);
    free(b);
    if (t) {
        tokfile_free(t);
        fail_msg("accepted a model that should fail with '%s'", needle);
    }
    if (!strstr(err, needle)) fail_msg("message '%s' lacks '%s'", err, needle);
    assert_non_null(strstr(err, "test.model"));
}

static void test_spm_refused(void **state) {
    (void)state;
    const Piece no_cls[5] = {{"[PAD]", SPM_CONTROL}, {"<s>", SPM_CONTROL}, {"[SEP]", SPM_CONTROL}, {"[UNK]", SPM_UNKNOWN}, {"a", SPM_NORMAL}};
    expect_refused(no_cls, 5, 3, "no piece '[CLS]'");
    const Piece unk_not_unknown[6] = {{"[PAD]", SPM_CONTROL}, {"[CLS]", SPM_CONTROL}, {"[SEP]", SPM_CONTROL},
                                      {"<unk>", SPM_UNKNOWN}, {"[UNK]", SPM_USER_DEFINED}, {"a", SPM_NORMAL}};
    expect_refused(unk_not_unknown, 6, 3, "piece '[UNK]' is id 4 but the model's unknown piece is id 3");
    const Piece ordinary_zero[6] = {{"a", SPM_NORMAL}, {"[PAD]", SPM_CONTROL}, {"[CLS]", SPM_CONTROL},
                                    {"[SEP]", SPM_CONTROL}, {"[UNK]", SPM_UNKNOWN}, {"b", SPM_NORMAL}};
    expect_refused(ordinary_zero, 6, 4, "id 0 is the ordinary SentencePiece piece 'a'");
    size_t len;
    uint8_t *b = deberta_like(40, 1, &len);
    char err[1400] = "";
    assert_null(parse(b, len - 7, err, sizeof err));
    assert_non_null(strstr(err, "truncated"));
    free(b);
}

static void test_bpe_tokfile(void **state) {
    (void)state;
    size_t len;
    uint8_t *b = test_tokenizer(300, &len);
    char err[512];
    TokFile *t = parse(b, len, err, sizeof err);
    if (!t) fail_msg("%s", err);
    assert_int_equal(t->kind, TOKFILE_BPE);
    assert_int_equal(t->vocab_size, 300);
    assert_int_equal(t->sp.mask, TOK_MASK);
    assert_int_equal(t->n_special, 5);
    for (int i = 0; i < 5; i++) assert_int_equal(t->special[i], i);
    tokfile_free(t);
    free(b);
}

/* ---- shards and the loader with a SentencePiece vocabulary ---- */

static char g_dir[64];

/* One shard of n_docs documents of ordinary ids (7..39) with, now and then, the user-defined [MASK]
 * (literal "[MASK]" in a text) and <br>: special ids that are in the text but must never be masked. */
static void write_spm_shard(const char *path, const char *split, int n_docs, const SpecialIds *sp, uint64_t seed) {
    size_t len;
    uint8_t *b = deberta_like(40, 1, &len);
    int64_t *off = xmalloc((size_t)(n_docs + 1) * sizeof(int64_t));
    off[0] = 0;
    for (int d = 0; d < n_docs; d++) off[d + 1] = off[d] + 3 + (int64_t)rng_below(seed, 1, (uint64_t)d, 60);
    int32_t *tok = xmalloc((size_t)off[n_docs] * sizeof(int32_t));
    for (int64_t i = 0; i < off[n_docs]; i++) {
        const uint64_t r = rng_below(seed, 2, (uint64_t)i, 40);
        tok[i] = r == 0 ? SPM_MASK_ID : r == 1 ? 5 : 7 + (int32_t)rng_below(seed, 3, (uint64_t)i, 33);
    }
    ShardInfo info = {40, b, len, split, 0, sp};
    char err[512];
    if (shard_write(path, tok, off, n_docs, &info, err, sizeof err)) fail_msg("%s", err);
    free(tok);
    free(off);
    free(b);
}

static const SpecialIds SPM_IDS = {0, 1, 2, 3, SPM_MASK_ID};

static void test_spm_shard(void **state) {
    (void)state;
    char path[128], err[1400];
    snprintf(path, sizeof path, "%s/train-00000.h5", g_dir);
    Shard *s = shard_open(path, 1, err, sizeof err);
    if (!s) fail_msg("%s", err);
    assert_int_equal(shard_tokenizer_kind(s), TOKFILE_SPM);
    assert_int_equal(shard_special_ids(s).mask, SPM_MASK_ID);
    int n;
    const int32_t *never = shard_never_masked(s, &n);
    assert_int_equal(n, 6);
    assert_int_equal(never[4], SPM_CTL_ID);
    shard_close(s);
    /* special-id attributes that are not the embedded tokenizer's */
    const SpecialIds ours = special_ids_bpe();
    snprintf(path, sizeof path, "%s/wrong-ids.h5", g_dir);
    write_spm_shard(path, "train", 5, &ours, 9);
    assert_null(shard_open(path, 0, err, sizeof err));
    assert_non_null(strstr(err, "attribute 'mask_id' is 4, but the embedded tokenizer's is 6"));
    unlink(path);
}

static Loader *spm_loader(MaskMode mode, int B) {
    LoaderConfig c;
    loader_config_default(&c);
    c.T = 32;
    c.B = B;
    c.mask_mode = mode;
    c.seed = 5;
    char err[1400];
    Loader *L = loader_open_err(g_dir, "train", &c, err, sizeof err);
    if (!L) fail_msg("%s", err);
    return L;
}

static int special_id(int32_t id) { return id <= 3 || id == SPM_CTL_ID || id == SPM_MASK_ID; }

static void test_spm_masking(void **state) {
    (void)state;
    const MaskMode modes[3] = {MASK_OFFICIAL, MASK_RANDOM, MASK_BERT};
    for (int k = 0; k < 3; k++) {
        Loader *L = spm_loader(modes[k], 8);
        assert_int_equal(loader_special_ids(L).mask, SPM_MASK_ID);
        assert_int_equal(loader_tokenizer_kind(L), TOKFILE_SPM);
        Batch b;
        batch_alloc(&b, 8, 32);
        int drawn[40] = {0};
        long masked = 0, as_mask = 0, replaced = 0;
        for (int step = 0; step < 200; step++) {
            loader_next(L, &b);
            for (int r = 0; r < 8; r++) {
                const int32_t *ids = b.input_ids + r * 32, *lab = b.labels + r * 32, *am = b.attention_mask + r * 32;
                assert_int_equal(ids[0], 1); /* [CLS] */
                for (int t = 0; t < 32; t++) {
                    assert_int_not_equal(ids[t], SPM_CTL_ID); /* = our [MASK] 4: a loader using that would put it here */
                    if (!am[t]) assert_int_equal(ids[t], 0); /* [PAD] */
                    if (!lab[t]) continue;
                    masked++;
                    assert_false(special_id(lab[t])); /* never a special id masked */
                    if (ids[t] == SPM_MASK_ID) as_mask++;
                    else if (ids[t] != lab[t]) {
                        assert_int_equal(modes[k], MASK_BERT);
                        assert_false(special_id(ids[t]));
                        assert_true(ids[t] >= 0 && ids[t] < 40);
                        drawn[ids[t]] = 1;
                        replaced++;
                    } else {
                        assert_int_equal(modes[k], MASK_BERT);
                    }
                }
            }
        }
        assert_true(masked > 1000);
        if (modes[k] != MASK_BERT) assert_int_equal(as_mask, masked);
        else {
            assert_true(replaced > 0 && as_mask > 4 * replaced); /* 0.8 vs 0.1 */
            for (int id = 0; id < 40; id++) assert_int_equal(drawn[id], !special_id(id)); /* every ordinary id, nothing else */
        }
        batch_free(&b);
        loader_close(L);
    }
}

/* The general masking with our tokenizer's ids (as a table, the loader's way) is the old rule. */
static void test_ours_unchanged(void **state) {
    (void)state;
    enum { V = 300, T = 64 };
    uint8_t is_special[V] = {1, 1, 1, 1, 1};
    const int32_t list[5] = {0, 1, 2, 3, 4};
    const MaskVocab v = {V, TOK_MASK, list, 5, is_special};
    for (int mode = MASK_OFFICIAL; mode <= MASK_BERT; mode++)
        for (uint64_t s = 0; s < 300; s++) {
            int32_t a[T], b[T], la[T], lb[T];
            const int n = 3 + (int)(s % (T - 2));
            for (int t = 0; t < T; t++) a[t] = t >= n ? 0 : (int32_t)rng_below(7, s, (uint64_t)t, V);
            memcpy(b, a, sizeof a);
            const int ma = mask_sequence(a, la, n, T, (MaskMode)mode, 0.15, V, 11, 3, s << 20);
            const int mb = mask_sequence_vocab(b, lb, n, T, (MaskMode)mode, 0.15, &v, 11, 3, s << 20);
            assert_int_equal(ma, mb);
            assert_memory_equal(a, b, sizeof a);
            assert_memory_equal(la, lb, sizeof la);
        }
}

static int setup(void **state) {
    (void)state;
    if (test_tmpdir(g_dir, sizeof g_dir, "tokfile")) return -1;
    char path[128];
    snprintf(path, sizeof path, "%s/train-00000.h5", g_dir);
    write_spm_shard(path, "train", 60, &SPM_IDS, 1);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spm_user_defined_mask),
        cmocka_unit_test(test_spm_appended_mask),
        cmocka_unit_test(test_spm_refused),
        cmocka_unit_test(test_bpe_tokfile),
        cmocka_unit_test(test_spm_shard),
        cmocka_unit_test(test_spm_masking),
        cmocka_unit_test(test_ours_unchanged),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
