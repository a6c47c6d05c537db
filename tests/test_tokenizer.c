/* test_tokenizer.c — BPE tokenizer: word splitting, training against a naive reference, round trips
 * on hard strings and a corpus sample, determinism, file save/load and its validation. */
#include "tests/testutil.h"
#include "data/tokenizer.h"
#include "autograd/base/rng.h"
#include "autograd/base/util.h"
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- sample text */

static const char *WORDS[] = {
    "the", "of", "and", "to", "in", "a", "is", "that", "for", "it", "as", "was", "with", "be", "by", "on",
    "not", "he", "this", "are", "or", "his", "from", "at", "which", "but", "have", "an", "had", "they",
    "you", "were", "their", "one", "all", "we", "can", "her", "has", "there", "been", "if", "more", "when",
    "will", "would", "who", "so", "no", "jury", "election", "county", "investigation", "irregularities",
    "Atlanta", "Fulton", "1961", "3.5", "don't", "café", "naïve", "中文", "東京", "😀", "e-mail", "U.S.",
};

/* Deterministic pseudo-English: sentences of words, punctuation, some newlines; ~nbytes bytes. */
static char *gen_text(size_t nbytes, uint64_t seed) {
    char *t = xmalloc(nbytes + 64);
    size_t n = 0;
    uint64_t c = 0;
    while (n < nbytes) {
        int len = 3 + (int)rng_below(seed, 1, c++, 12);
        for (int i = 0; i < len && n < nbytes; i++) {
            char rnd[16];
            const char *w = WORDS[rng_below(seed, 1, c++, ARRAY_LEN(WORDS))];
            if (rng_below(seed, 1, c++, 4) == 0) { /* an invented word, so the vocabulary keeps growing */
                int wl = 3 + (int)rng_below(seed, 1, c++, 7);
                for (int k = 0; k < wl; k++) rnd[k] = "etaoinshrdlucmfwypvbgk"[rng_below(seed, 1, c++, 22)];
                rnd[wl] = 0;
                w = rnd;
            }
            size_t l = strlen(w);
            if (n + l + 3 > nbytes) { n = nbytes; break; }
            if (i) t[n++] = ' ';
            memcpy(t + n, w, l);
            n += l;
            if (rng_below(seed, 1, c++, 10) == 0) t[n++] = ',';
        }
        if (n + 3 > nbytes) break;
        t[n++] = '.';
        uint64_t r = rng_below(seed, 1, c++, 8);
        t[n++] = r == 0 ? '\n' : ' ';
        if (r == 1) t[n++] = ' ';
    }
    t[n] = 0;
    return t;
}

/* Sample from the fetched corpus when present (first 1 MB of brown.txt), else generated text. */
static char *corpus_sample(size_t *len) {
    FILE *f = fopen("data/corpus/brown.txt", "rb");
    if (f) {
        char *b = xmalloc((1 << 20) + 1);
        size_t n = fread(b, 1, 1 << 20, f);
        fclose(f);
        if (n > 1000) { b[n] = 0; *len = n; return b; }
        free(b);
    }
    char *t = gen_text(1 << 20, 99);
    *len = strlen(t);
    return t;
}

static Tokenizer *train_on(const char *text, int vocab) {
    TokTrainConfig cfg;
    tok_train_config_default(&cfg);
    cfg.vocab_size = vocab;
    const char *docs[1] = {text};
    size_t lens[1] = {strlen(text)};
    char err[256];
    Tokenizer *tk = tokenizer_train(docs, lens, 1, &cfg, err, sizeof err);
    if (!tk) fail_msg("training failed: %s", err);
    return tk;
}

static void assert_roundtrip(const Tokenizer *tk, const char *s, size_t n) {
    size_t k, m;
    int32_t *ids = tokenizer_encode(tk, s, n, &k);
    for (size_t i = 0; i < k; i++) {
        assert_true(ids[i] >= TOK_N_SPECIAL);
        assert_true(ids[i] < tokenizer_vocab_size(tk));
    }
    char *d = tokenizer_decode(tk, ids, k, &m);
    assert_int_equal(m, n);
    assert_memory_equal(d, s, n);
    free(ids);
    free(d);
}

/* ---------------------------------------------------------------- tests */

static void check_split(const char *s, const char *const *want, size_t nwant) {
    size_t n = strlen(s), ends[256];
    size_t nw = tok_split_words((const uint8_t *)s, n, ends);
    assert_int_equal(nw, nwant);
    size_t st = 0;
    for (size_t i = 0; i < nw; i++) {
        assert_int_equal(ends[i] - st, strlen(want[i]));
        assert_memory_equal(s + st, want[i], ends[i] - st);
        st = ends[i];
    }
}

static void test_split_words(void **state) {
    (void)state;
    const char *w1[] = {"Hello", ",", " world", "!", "\n"};
    check_split("Hello, world!\n", w1, 5);
    const char *w2[] = {"a", " ", " b"};
    check_split("a  b", w2, 3);
    const char *w3[] = {"x", "1", ".", "5", " 42", " \n", " y"};
    check_split("x1.5 42 \n y", w3, 7);
    const char *w4[] = {" \t\t", " café", " ", " 中文。"};
    check_split(" \t\t café  中文。", w4, 4);
    const char *w5[] = {"  "};
    check_split("  ", w5, 1);
    check_split("", NULL, 0);
}

/* A hand-computed example: "aaaa" x3 -> merges (a,a) then (aa,aa). */
static void test_train_hand_example(void **state) {
    (void)state;
    const char *docs[3] = {"aaaa", "aaaa", "aaaa"};
    size_t lens[3] = {4, 4, 4};
    TokTrainConfig cfg;
    tok_train_config_default(&cfg);
    cfg.vocab_size = 264;
    char err[256];
    Tokenizer *tk = tokenizer_train(docs, lens, 3, &cfg, err, sizeof err);
    assert_non_null(tk);
    assert_int_equal(tokenizer_n_chars(tk), 1);
    assert_int_equal(tokenizer_n_merges(tk), 2);
    int32_t l, r;
    tokenizer_merge(tk, 0, &l, &r);
    assert_int_equal(l, 261); assert_int_equal(r, 261);
    tokenizer_merge(tk, 1, &l, &r);
    assert_int_equal(l, 262); assert_int_equal(r, 262);
    size_t k;
    int32_t *ids = tokenizer_encode(tk, "aaaaa", 5, &k);
    assert_int_equal(k, 2);
    assert_int_equal(ids[0], 263); assert_int_equal(ids[1], 261);
    free(ids);
    ids = tokenizer_encode(tk, "ab", 2, &k); /* 'b' is not in the alphabet: byte fallback */
    assert_int_equal(k, 2);
    assert_int_equal(ids[0], 261); assert_int_equal(ids[1], TOK_BYTE0 + 'b');
    free(ids);
    tokenizer_free(tk);
}

/* The incremental trainer against a naive one that recounts every pair before each merge. */
static void test_train_matches_naive(void **state) {
    (void)state;
    char *text = gen_text(20000, 5);
    Tokenizer *tk = train_on(text, 600);
    int nch = tokenizer_n_chars(tk), nm = tokenizer_n_merges(tk);
    assert_true(nm > 50);
    /* unique words and counts */
    size_t n = strlen(text), *ends = xmalloc(n * sizeof(size_t));
    size_t nw = tok_split_words((const uint8_t *)text, n, ends);
    int32_t **sym = xmalloc(nw * sizeof(int32_t *));
    int *len = xmalloc(nw * sizeof(int));
    size_t st = 0;
    for (size_t i = 0; i < nw; i++) { /* initial symbols via the alphabet, independently of the encoder */
        sym[i] = xmalloc((ends[i] - st) * sizeof(int32_t));
        int k = 0;
        for (size_t p = st; p < ends[i];) {
            int found = 0;
            for (int c = 0; c < nch && !found; c++) {
                size_t pl;
                const char *pc = tokenizer_piece(tk, TOK_FIRST_CHAR + c, &pl);
                if (p + pl <= ends[i] && memcmp(text + p, pc, pl) == 0) {
                    sym[i][k++] = TOK_FIRST_CHAR + c; p += pl; found = 1;
                }
            }
            if (!found) sym[i][k++] = TOK_BYTE0 + (uint8_t)text[p++];
        }
        len[i] = k;
        st = ends[i];
    }
    int V = TOK_FIRST_CHAR + nch + nm;
    int64_t *cnt = xmalloc((size_t)V * V * sizeof(int64_t));
    for (int m = 0; m < nm; m++) {
        memset(cnt, 0, (size_t)V * V * sizeof(int64_t));
        for (size_t i = 0; i < nw; i++)
            for (int p = 0; p + 1 < len[i]; p++)
                if (sym[i][p] >= TOK_FIRST_CHAR && sym[i][p + 1] >= TOK_FIRST_CHAR) cnt[(size_t)sym[i][p] * V + sym[i][p + 1]]++;
        int64_t best = 0; int ba = -1, bb = -1;
        for (int a = 0; a < V; a++)
            for (int b = 0; b < V; b++)
                if (cnt[(size_t)a * V + b] > best) { best = cnt[(size_t)a * V + b]; ba = a; bb = b; }
        assert_true(best >= 2);
        int32_t l, r;
        tokenizer_merge(tk, m, &l, &r);
        if (l != ba || r != bb) fail_msg("merge %d: trainer (%d,%d), naive (%d,%d) count %lld", m, l, r, ba, bb, (long long)best);
        int z = TOK_FIRST_CHAR + nch + m;
        for (size_t i = 0; i < nw; i++) {
            int o = 0;
            for (int p = 0; p < len[i];) {
                if (p + 1 < len[i] && sym[i][p] == ba && sym[i][p + 1] == bb) { sym[i][o++] = z; p += 2; }
                else sym[i][o++] = sym[i][p++];
            }
            len[i] = o;
        }
    }
    for (size_t i = 0; i < nw; i++) free(sym[i]);
    free(sym); free(len); free(cnt); free(ends); free(text);
    tokenizer_free(tk);
}

static void test_roundtrip_hard_strings(void **state) {
    (void)state;
    char *text = gen_text(200000, 7);
    Tokenizer *tk = train_on(text, 1000);
    assert_roundtrip(tk, "", 0);
    const char *s[] = {"a", " ", "  leading and trailing  ", "Hello, world!\n", "😀👍🏽 emoji 🇩🇪", "中文字符测试，日本語のテキスト",
                       "tabs\tand\r\nCRLF\n\n\n", "literal \xE2\x96\x81 marker \xE2\x96\x81\xE2\x96\x81", "\x7f\x01\x02 controls",
                       "the jury said the election"};
    for (size_t i = 0; i < ARRAY_LEN(s); i++) assert_roundtrip(tk, s[i], strlen(s[i]));
    /* invalid UTF-8: lone continuation, truncated sequence, overlong, surrogate, > U+10FFFF, 0xFF */
    const char bad[] = "\x80 \xC3( \xE2\x82 \xC0\xAF \xED\xA0\x80 \xF4\x90\x80\x80 \xFF\xFE caf\xC3";
    assert_roundtrip(tk, bad, sizeof bad - 1);
    const char nul[] = "a\0b\0\0c";
    assert_roundtrip(tk, nul, sizeof nul - 1);
    /* a 10,000-character word, and one of mixed letters */
    char *w = xmalloc(10001);
    memset(w, 'a', 10000); w[10000] = 0;
    assert_roundtrip(tk, w, 10000);
    for (int i = 0; i < 10000; i++) w[i] = "thejuryelection"[rng_below(3, 3, (uint64_t)i, 15)];
    assert_roundtrip(tk, w, 10000);
    free(w);
    /* every byte value */
    char all[256];
    for (int i = 0; i < 256; i++) all[i] = (char)i;
    assert_roundtrip(tk, all, 256);
    tokenizer_free(tk);
    free(text);
}

static void test_roundtrip_corpus_sample(void **state) {
    (void)state;
    size_t n;
    char *sample = corpus_sample(&n);
    Tokenizer *tk = train_on(sample, 2000);
    assert_true(tokenizer_vocab_size(tk) <= 2000);
    assert_roundtrip(tk, sample, n);
    size_t k;
    int32_t *ids = tokenizer_encode(tk, sample, n, &k);
    assert_true(k < n / 2); /* it compresses English text */
    free(ids);
    tokenizer_free(tk);
    free(sample);
}

/* util's utf8_put on every Unicode scalar value: the bytes are one valid character of the expected
 * length to utf8_valid_len, and they decode back to the code point. */
static void test_utf8_put_every_code_point(void **state) {
    (void)state;
    long bad = 0;
    for (uint32_t cp = 0; cp <= 0x10FFFF; cp++) {
        if (cp >= 0xD800 && cp < 0xE000) continue;
        char o[8];
        const size_t n = utf8_put(o, cp), want = cp < 0x80 ? 1 : cp < 0x800 ? 2 : cp < 0x10000 ? 3 : 4;
        const uint8_t *u = (const uint8_t *)o;
        uint32_t back = n == 1 ? u[0] : u[0] & (0x7F >> n);
        for (size_t i = 1; i < n; i++) back = back << 6 | (u[i] & 0x3F);
        if (n != want || utf8_valid_len(u, n) != (int)n || back != cp) {
            if (bad++ < 3) fprintf(stderr, "utf8_put(U+%04X): %zu bytes, valid %d, decodes to U+%04X\n", cp, n, utf8_valid_len(u, n), back);
        }
    }
    assert_int_equal(bad, 0);
}

/* The heap-based and the scan-based merge loops give the same ids. */
static void test_heap_equals_scan(void **state) {
    (void)state;
    size_t n;
    char *sample = corpus_sample(&n);
    if (n > 200000) n = 200000;
    sample[n] = 0;
    Tokenizer *tk = train_on(sample, 1500);
    TokEncoder *a = tok_encoder_new(tk), *b = tok_encoder_new(tk);
    tok_encoder_set_long_word(a, 1);
    tok_encoder_set_long_word(b, (size_t)1 << 40);
    size_t ka, kb;
    const int32_t *ia = tok_encode(a, sample, n, &ka);
    const int32_t *ib = tok_encode(b, sample, n, &kb);
    assert_int_equal(ka, kb);
    assert_memory_equal(ia, ib, ka * sizeof(int32_t));
    char *w = xmalloc(3000);
    for (int i = 0; i < 3000; i++) w[i] = "theaaeeiion"[rng_below(4, 4, (uint64_t)i, 11)];
    ia = tok_encode(a, w, 3000, &ka);
    int32_t *copy = xmalloc(ka * sizeof(int32_t));
    memcpy(copy, ia, ka * sizeof(int32_t));
    ib = tok_encode(b, w, 3000, &kb);
    assert_int_equal(ka, kb);
    assert_memory_equal(copy, ib, ka * sizeof(int32_t));
    free(copy); free(w);
    tok_encoder_free(a); tok_encoder_free(b);
    tokenizer_free(tk);
    free(sample);
}

static void test_deterministic(void **state) {
    (void)state;
    char *text = gen_text(300000, 11);
    int saved = omp_get_max_threads();
    omp_set_num_threads(1);
    Tokenizer *t1 = train_on(text, 800);
    omp_set_num_threads(saved > 1 ? saved : 2);
    Tokenizer *t2 = train_on(text, 800);
    size_t l1, l2;
    const uint8_t *b1 = tokenizer_bytes(t1, &l1), *b2 = tokenizer_bytes(t2, &l2);
    assert_int_equal(l1, l2);
    assert_memory_equal(b1, b2, l1);
    /* batch (parallel, cached) encoding equals one-by-one encoding, twice */
    enum { ND = 64 };
    const char *docs[ND];
    size_t lens[ND], nids[ND], nids2[ND];
    int32_t *ids[ND], *ids2[ND];
    size_t per = strlen(text) / ND;
    for (int i = 0; i < ND; i++) { docs[i] = text + i * per; lens[i] = per; }
    tokenizer_encode_batch(t1, docs, lens, ND, ids, nids);
    tokenizer_encode_batch(t1, docs, lens, ND, ids2, nids2);
    for (int i = 0; i < ND; i++) {
        size_t k;
        int32_t *one = tokenizer_encode(t1, docs[i], lens[i], &k);
        assert_int_equal(k, nids[i]);
        assert_memory_equal(one, ids[i], k * sizeof(int32_t));
        assert_int_equal(nids2[i], nids[i]);
        assert_memory_equal(ids2[i], ids[i], k * sizeof(int32_t));
        free(one); free(ids[i]); free(ids2[i]);
    }
    omp_set_num_threads(saved);
    tokenizer_free(t1); tokenizer_free(t2);
    free(text);
}

static void test_save_load(void **state) {
    (void)state;
    char *text = gen_text(100000, 13);
    Tokenizer *tk = train_on(text, 700);
    char path[] = "/tmp/deberta_test_tok_XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    char err[512];
    assert_int_equal(tokenizer_save(tk, path, err, sizeof err), 0);
    Tokenizer *t2 = tokenizer_load(path, err, sizeof err);
    assert_non_null(t2);
    assert_int_equal(tokenizer_hash(tk), tokenizer_hash(t2));
    assert_int_equal(tokenizer_vocab_size(tk), tokenizer_vocab_size(t2));
    size_t k1, k2;
    int32_t *a = tokenizer_encode(tk, text, strlen(text), &k1), *b = tokenizer_encode(t2, text, strlen(text), &k2);
    assert_int_equal(k1, k2);
    assert_memory_equal(a, b, k1 * sizeof(int32_t));
    free(a); free(b);
    /* the hash is FNV-1a 64 of the file bytes */
    size_t len;
    const uint8_t *bytes = tokenizer_bytes(tk, &len);
    uint64_t h = 0xcbf29ce484222325ull;
    for (size_t i = 0; i < len; i++) { h ^= bytes[i]; h *= 0x100000001b3ull; }
    assert_int_equal(h, tokenizer_hash(tk));
    /* damaged copies are refused with a message naming the problem */
    uint8_t *bad = xmalloc(len);
    memcpy(bad, bytes, len);
    bad[len / 2] ^= 1;
    assert_null(tokenizer_from_bytes(bad, len, "t", err, sizeof err));
    assert_non_null(strstr(err, "checksum"));
    assert_null(tokenizer_from_bytes(bytes, len / 2, "t", err, sizeof err));
    memcpy(bad, bytes, len);
    bad[0] = 'X';
    assert_null(tokenizer_from_bytes(bad, len, "t", err, sizeof err));
    assert_non_null(strstr(err, "magic"));
    free(bad);
    assert_null(tokenizer_load("/nonexistent/tokenizer.bin", err, sizeof err));
    assert_non_null(strstr(err, "/nonexistent/tokenizer.bin"));
    /* HF export: the file exists and holds the documented model settings */
    char jpath[64];
    snprintf(jpath, sizeof jpath, "%s.json", path);
    assert_int_equal(tokenizer_write_hf_json(tk, jpath, err, sizeof err), 0);
    FILE *f = fopen(jpath, "rb");
    assert_non_null(f);
    char *j = xmalloc(1 << 20);
    size_t jl = fread(j, 1, (1 << 20) - 1, f);
    j[jl] = 0;
    fclose(f);
    assert_non_null(strstr(j, "\"byte_fallback\": true"));
    assert_non_null(strstr(j, "\"<0x0A>\": 15"));
    assert_non_null(strstr(j, "\"[MASK]\": 4"));
    free(j);
    unlink(jpath);
    unlink(path);
    tokenizer_free(tk); tokenizer_free(t2);
    free(text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_words),
        cmocka_unit_test(test_train_hand_example),
        cmocka_unit_test(test_train_matches_naive),
        cmocka_unit_test(test_roundtrip_hard_strings),
        cmocka_unit_test(test_roundtrip_corpus_sample),
        cmocka_unit_test(test_heap_equals_scan),
        cmocka_unit_test(test_utf8_put_every_code_point),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_save_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
