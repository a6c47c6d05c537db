/* test_task.c — the Brown tasks: tag mapping, split rule, parsing, plain-text spacing and
 * fingerprints, example building (pos packing and cutting, genre windows), task file round trip,
 * one test per bad task file, and the baselines. */
#include "data/brown.h"
#include "data/task.h"
#include "data/prep.h"
#include "data/prep_options.h"
#include "data/shard.h"
#include "data/tokenizer.h"
#include "autograd/base/util.h"
#include "tests/testutil.h"
#include "tests/h5flip.h"
#include <hdf5.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

static char g_dir[128];

static void test_tag_mapping(void **state) {
    (void)state;
    static const struct { const char *tag; int upos; } C[] = {
        {"nn", UPOS_NOUN}, {"nn-tl", UPOS_NOUN}, {"NN-TL-HL", UPOS_NOUN}, {"nns$", UPOS_NOUN}, {"np$-tl", UPOS_NOUN},
        {"fw-nn", UPOS_X}, {"fw-in+at-t", UPOS_X}, {"ppss+bem", UPOS_PRON}, {"pp$", UPOS_PRON}, {"pp$$", UPOS_PRON},
        {"wp$", UPOS_PRON}, {"md*", UPOS_VERB}, {"do*-hl", UPOS_VERB}, {"bedz*", UPOS_VERB}, {"*", UPOS_ADV},
        {"*-hl", UPOS_ADV}, {"---hl", UPOS_PUNCT}, {"--", UPOS_PUNCT}, {"''", UPOS_PUNCT}, {"``", UPOS_PUNCT},
        {",-hl", UPOS_PUNCT}, {"od", UPOS_ADJ}, {"jjt", UPOS_ADJ}, {"cd$", UPOS_NUM}, {"in", UPOS_ADP},
        {"at", UPOS_DET}, {"wdt+bez", UPOS_DET}, {"ex", UPOS_DET}, {"cs", UPOS_CONJ}, {"to", UPOS_PRT},
        {"rp", UPOS_PRT}, {"ql", UPOS_ADV}, {"nil", UPOS_X}, {"uh", UPOS_X}, {"hvz", UPOS_VERB},
    };
    for (size_t i = 0; i < ARRAY_LEN(C); i++)
        if (brown_tag_to_upos(C[i].tag) != C[i].upos)
            fail_msg("tag '%s' -> %d, expected %d", C[i].tag, brown_tag_to_upos(C[i].tag), C[i].upos);
    assert_int_equal(brown_tag_to_upos("zz"), -1);
    assert_int_equal(brown_tag_to_upos(""), -1);
    assert_int_equal(brown_tag_to_upos("nn+"), UPOS_NOUN);
    assert_int_equal(brown_tag_to_upos("$"), -1);
    assert_string_equal(brown_upos_names[UPOS_PUNCT], ".");
}

static void test_split_and_genre(void **state) {
    (void)state;
    assert_int_equal(brown_split_of("ca01"), BROWN_TRAIN);
    assert_int_equal(brown_split_of("ca02"), BROWN_DEV);
    assert_int_equal(brown_split_of("ca03"), BROWN_TEST);
    assert_int_equal(brown_split_of("cj72"), BROWN_DEV);
    assert_int_equal(brown_split_of("cj73"), BROWN_TEST);
    assert_int_equal(brown_split_of("cm06"), BROWN_TRAIN);
    assert_int_equal(brown_split_of("cz01"), -1);
    assert_int_equal(brown_split_of("ca1"), -1);
    assert_int_equal(brown_split_of("ca012"), -1);
    assert_int_equal(brown_split_of("README"), -1);
    assert_int_equal(brown_genre_of("ca01"), 0);
    assert_int_equal(brown_genre_of("cr09"), BROWN_N_GENRES - 1);
    assert_int_equal(brown_genre_of("ci01"), -1); /* no genre i */
    /* the real corpus' genre sizes: every genre has a dev and a test text */
    static const int sizes[BROWN_N_GENRES] = {44, 27, 17, 17, 36, 48, 75, 30, 80, 29, 24, 6, 29, 29, 9};
    for (int g = 0; g < BROWN_N_GENRES; g++) {
        int dev = 0, test = 0;
        for (int k = 1; k <= sizes[g]; k++) {
            char name[16];
            snprintf(name, sizeof name, "c%c%02d", brown_genre_letters[g], k);
            int s = brown_split_of(name);
            dev += s == BROWN_DEV;
            test += s == BROWN_TEST;
        }
        assert_true(dev >= 1 && test >= 1);
    }
}

static const char TEXT1[] =
    "\n\n\tThe/at ``/`` jury/nn ''/'' said/vbd ,/, it/pps can't/md* go/vb (/( home/nr )/) ./.\n"
    "\n\n\tSecond/od line/nn-tl costs/vbz $/nns 5/cd ./.\n\n";

static void test_parse_and_spacing(void **state) {
    (void)state;
    BrownText t;
    char err[512];
    assert_int_equal(brown_parse("ca01", TEXT1, strlen(TEXT1), &t, err, sizeof err), 0);
    assert_int_equal(t.n_words, 19);
    assert_int_equal(t.n_sents, 2);
    assert_int_equal(t.sent_start[1], 13);
    assert_int_equal(t.genre, 0);
    assert_int_equal(t.split, BROWN_TRAIN);
    assert_string_equal(t.word[1], "\"");
    assert_string_equal(t.word[3], "\"");
    assert_int_equal(t.tag[2], UPOS_NOUN);
    assert_int_equal(t.tag[6], UPOS_PRON);
    assert_int_equal(t.tag[7], UPOS_VERB);
    assert_int_equal(t.tag[13], UPOS_ADJ);
    /* rebuild the plain text from the spacing flags */
    char plain[256] = "";
    for (size_t i = 0; i < t.n_words; i++) {
        if (t.space_before[i]) strcat(plain, " ");
        strcat(plain, t.word[i]);
    }
    assert_string_equal(plain, "The \"jury\" said, it can't go (home). Second line costs $5.");
    assert_true(brown_fingerprint(&t) == text_fingerprint(plain, strlen(plain)));
    /* the fingerprint ignores everything but letters and digits */
    assert_true(text_fingerprint("The``jury ,said", 15) == text_fingerprint("The jury said", 13));
    assert_true(text_fingerprint("The jury said", 13) != text_fingerprint("The jury sad", 12));
    brown_free(&t, 1);
}

static void test_parse_errors(void **state) {
    (void)state;
    BrownText t;
    char err[512] = "";
    const char *a = "\tThe/at jury said/vbd\n";
    assert_int_equal(brown_parse("ca01", a, strlen(a), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "ca01"));
    assert_non_null(strstr(err, "line 1"));
    assert_non_null(strstr(err, "'jury'"));
    const char *b = "\n\tThe/at\n\tjury/zz\n";
    assert_int_equal(brown_parse("cb05", b, strlen(b), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "line 3"));
    assert_non_null(strstr(err, "unknown tag 'zz'"));
    const char *c = "\n\n";
    assert_int_equal(brown_parse("cb05", c, strlen(c), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "no tagged words"));
    assert_int_equal(brown_parse("x01", TEXT1, strlen(TEXT1), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "not a Brown text name"));
    const char *d = "\tword/\n";
    assert_int_equal(brown_parse("ca01", d, strlen(d), &t, err, sizeof err), -1);
    assert_non_null(strstr(err, "not word/tag"));
}

/* Four texts: ca01 (train), ca02 (dev), ca03 (test), cb01 (train). */
static const char *const NAMES[4] = {"ca01", "ca02", "ca03", "cb01"};
static const char *const TEXTS[4] = {
    "\tThe/at jury/nn said/vbd it/pps was/bedz fine/jj ./.\n\tA/at second/od sentence/nn ./.\n",
    "\tThe/at judge/nn said/vbd nothing/pn ./.\n\tVery/ql long/jj sentences/nns of/in many/ap extraordinarily/rb "
    "complicated/vbn words/nns appear/vb here/rb ./.\n",
    "\tIt/pps rained/vbd ./.\n",
    "\tShe/pps went/vbd home/nr and/cc slept/vbd ./.\n\tThe/at end/nn ./.\n",
};

static BrownText *parse_all(void) {
    BrownText *t = xcalloc(4, sizeof(BrownText));
    char err[512];
    for (int i = 0; i < 4; i++)
        if (brown_parse(NAMES[i], TEXTS[i], strlen(TEXTS[i]), &t[i], err, sizeof err)) fail_msg("%s", err);
    return t;
}

static Tokenizer *small_tokenizer(void) {
    const char *docs[4];
    size_t lens[4];
    for (int i = 0; i < 4; i++) { docs[i] = TEXTS[i]; lens[i] = strlen(TEXTS[i]); }
    TokTrainConfig tc;
    tok_train_config_default(&tc);
    tc.vocab_size = 320;
    char err[256];
    Tokenizer *tk = tokenizer_train(docs, lens, 4, &tc, err, sizeof err);
    if (!tk) fail_msg("%s", err);
    return tk;
}

/* Every labelled position is the first sub-token of a word; the words, decoded, are the text's. */
static void test_build_pos(void **state) {
    (void)state;
    BrownText *t = parse_all();
    Tokenizer *tk = small_tokenizer();
    char err[512];
    for (int split = 0; split < 3; split++) {
        for (int T = 5; T <= 64; T += 59) {
            TaskSet ts;
            if (task_build(TASK_TAGGING, t, 4, split, tk, T, &ts, err, sizeof err)) fail_msg("%s", err);
            size_t want_words = 0;
            for (int d = 0; d < 4; d++) if (t[d].split == split) want_words += t[d].n_words;
            assert_int_equal(task_n_labelled(&ts), (int64_t)want_words);
            assert_int_equal(ts.n_labels, UPOS_COUNT);
            /* walk words in order across examples */
            int d = 0;
            while (t[d].split != split) d++;
            size_t w = 0;
            for (int64_t n = 0; n < ts.N; n++) {
                const int32_t *row = ts.ids + n * T, *lab = ts.labels + n * T;
                assert_int_equal(row[0], TOK_CLS);
                assert_int_equal(lab[0], TASK_IGNORE);
                int end = 1;
                while (end < T && row[end] != TOK_SEP) end++;
                assert_true(end < T);
                for (int i = end + 1; i < T; i++) { assert_int_equal(row[i], TOK_PAD); assert_int_equal(lab[i], TASK_IGNORE); }
                for (int i = 1; i < end;) {
                    assert_int_not_equal(lab[i], TASK_IGNORE);
                    int j = i + 1;
                    while (j < end && lab[j] == TASK_IGNORE) j++;
                    if (w == t[d].n_words) { d++; while (t[d].split != split) d++; w = 0; }
                    assert_true(ts.example[n] >= 0 && ts.example[n] < ts.n_docs);
                    assert_string_equal(ts.doc_names[ts.example[n]], t[d].name);
                    assert_int_equal(lab[i], t[d].tag[w]);
                    size_t len;
                    char *s = tokenizer_decode(tk, row + i, (size_t)(j - i), &len);
                    char want[128];
                    snprintf(want, sizeof want, "%s%s", t[d].space_before[w] ? " " : "", t[d].word[w]);
                    if (T > 5 || strlen(want) <= 3) assert_string_equal(s, want); /* T = 5 may truncate a long word */
                    free(s);
                    w++;
                    i = j;
                }
            }
            task_free(&ts);
        }
    }
    /* packing: with T = 64 the two sentences of ca01 share one example */
    TaskSet ts;
    if (task_build(TASK_TAGGING, t, 4, BROWN_TRAIN, tk, 64, &ts, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(ts.N, 2);
    assert_int_equal(ts.n_docs, 2);
    task_free(&ts);
    tokenizer_free(tk);
    brown_free(t, 4);
    free(t);
}

static void test_build_genre(void **state) {
    (void)state;
    BrownText *t = parse_all();
    Tokenizer *tk = small_tokenizer();
    char err[512];
    TaskSet ts;
    int T = 6;
    if (task_build(TASK_CLASSIFICATION, t, 4, BROWN_TRAIN, tk, T, &ts, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(ts.n_labels, BROWN_N_GENRES);
    int64_t per_doc[2] = {0, 0};
    for (int64_t n = 0; n < ts.N; n++) {
        const int32_t *row = ts.ids + n * T;
        assert_int_equal(row[0], TOK_CLS);
        assert_int_equal(row[T - 1], TOK_SEP);
        for (int i = 1; i < T - 1; i++) assert_true(row[i] >= TOK_N_SPECIAL);
        assert_int_equal(ts.labels[n], ts.example[n] == 0 ? 0 : 1); /* ca01 press-reportage, cb01 press-editorial */
        per_doc[ts.example[n]]++;
    }
    /* full windows only: floor(tokens / (T - 2)) per text */
    for (int d = 0; d < 2; d++) {
        const BrownText *x = &t[d == 0 ? 0 : 3];
        size_t ntok = 0;
        for (size_t i = 0; i < x->n_words; i++) {
            char buf[64];
            snprintf(buf, sizeof buf, "%s%s", x->space_before[i] ? " " : "", x->word[i]);
            size_t k;
            int32_t *ids = tokenizer_encode(tk, buf, strlen(buf), &k);
            free(ids);
            ntok += k;
        }
        assert_int_equal(per_doc[d], (int64_t)(ntok / (size_t)(T - 2)));
    }
    task_free(&ts);
    /* a text shorter than one window gives one padded example */
    if (task_build(TASK_CLASSIFICATION, t, 4, BROWN_TEST, tk, 64, &ts, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(ts.N, 1);
    assert_int_equal(ts.ids[63], TOK_PAD);
    task_free(&ts);
    assert_int_equal(task_build(TASK_CLASSIFICATION, t, 4, BROWN_TRAIN, tk, 2, &ts, err, sizeof err), -1);
    assert_non_null(strstr(err, "too short"));
    tokenizer_free(tk);
    brown_free(t, 4);
    free(t);
}

static char *path_of(const char *name) {
    static char buf[4][256];
    static int k;
    char *p = buf[k++ % 4];
    snprintf(p, 256, "%s/%s", g_dir, name);
    return p;
}

static void build_pos(TaskSet *ts, int split, int T) {
    BrownText *t = parse_all();
    Tokenizer *tk = small_tokenizer();
    char err[512];
    if (task_build(TASK_TAGGING, t, 4, split, tk, T, ts, err, sizeof err)) fail_msg("%s", err);
    tokenizer_free(tk);
    brown_free(t, 4);
    free(t);
}

static void test_round_trip(void **state) {
    (void)state;
    for (int kind = 0; kind < 2; kind++) {
        BrownText *t = parse_all();
        Tokenizer *tk = small_tokenizer();
        char err[512];
        TaskSet a, b;
        if (task_build((TaskKind)kind, t, 4, BROWN_DEV, tk, 8, &a, err, sizeof err)) fail_msg("%s", err);
        const char *p = path_of("rt.h5");
        if (task_write(p, &a, err, sizeof err)) fail_msg("%s", err);
        if (task_read(p, &b, err, sizeof err)) fail_msg("%s", err);
        assert_int_equal(a.kind, b.kind);
        assert_string_equal(a.split, b.split);
        assert_int_equal(a.T, b.T);
        assert_int_equal(a.N, b.N);
        assert_int_equal(a.n_labels, b.n_labels);
        for (int l = 0; l < a.n_labels; l++) assert_string_equal(a.label_names[l], b.label_names[l]);
        assert_memory_equal(a.ids, b.ids, (size_t)a.N * a.T * 4);
        assert_memory_equal(a.labels, b.labels, (size_t)a.N * (kind == TASK_TAGGING ? a.T : 1) * 4);
        assert_memory_equal(a.example, b.example, (size_t)a.N * 4);
        if (a.word_ids) assert_memory_equal(a.word_ids, b.word_ids, (size_t)a.N * a.T * 4);
        assert_int_equal(a.n_docs, b.n_docs);
        assert_string_equal(a.doc_names[0], b.doc_names[0]);
        assert_true(a.doc_fingerprints[0] == b.doc_fingerprints[0]);
        assert_string_equal(a.tokenizer_hash, b.tokenizer_hash);
        assert_int_equal(a.vocab_size, b.vocab_size);
        assert_int_equal(a.tokenizer_len, b.tokenizer_len);
        assert_int_equal(task_check_same(&a, "a", &b, "b", err, sizeof err), 0);
        /* same content, same bytes */
        const char *q = path_of("rt2.h5");
        if (task_write(q, &a, err, sizeof err)) fail_msg("%s", err);
        char cmd[600];
        snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", p, q);
        assert_int_equal(system(cmd), 0);
        task_free(&a); task_free(&b);
        tokenizer_free(tk);
        brown_free(t, 4);
        free(t);
    }
}

static void expect_bad(const char *p, const char *needle) {
    char err[1024] = "";
    TaskSet ts;
    if (task_read(p, &ts, err, sizeof err) == 0) { task_free(&ts); fail_msg("task_read(%s) accepted a bad file (expected '%s')", p, needle); }
    if (!strstr(err, p)) fail_msg("message does not name the file: %s", err);
    if (!strstr(err, needle)) fail_msg("message '%s' does not mention '%s'", err, needle);
    if (strchr(err, '\n')) fail_msg("message is not one line: %s", err);
}

static void write_or_fail(const char *p, const TaskSet *ts) {
    char err[512];
    if (task_write(p, ts, err, sizeof err)) fail_msg("%s", err);
}

static void set_attr_str(const char *p, const char *name, const char *v) {
    hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
    assert_true(f >= 0);
    H5Adelete(f, name);
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, strlen(v) + 1);
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, t, v);
    H5Aclose(a); H5Sclose(sp); H5Tclose(t); H5Fclose(f);
    test_reseal(p);
}

static void test_bad_labels(void **state) {
    (void)state;
    TaskSet ts;
    build_pos(&ts, BROWN_TRAIN, 16);
    const char *p = path_of("bad-label.h5");
    ts.labels[1] = UPOS_COUNT;                /* one past the last tag */
    write_or_fail(p, &ts);
    expect_bad(p, "labels[0, 1] = 12 is outside [0, 12)");
    ts.labels[1] = -1;                        /* negative, not the ignore value */
    write_or_fail(p, &ts);
    expect_bad(p, "labels[0, 1] = -1");
    ts.labels[1] = 0;
    ts.labels[15] = 3;                        /* a label on padding */
    int pad = ts.ids[15] == TOK_PAD;
    write_or_fail(p, &ts);
    if (pad) expect_bad(p, "sits on a position without a word");
    task_free(&ts);
    /* genre labels out of range */
    BrownText *t = parse_all();
    Tokenizer *tk = small_tokenizer();
    char err[512];
    if (task_build(TASK_CLASSIFICATION, t, 4, BROWN_TRAIN, tk, 6, &ts, err, sizeof err)) fail_msg("%s", err);
    ts.labels[2] = BROWN_N_GENRES;
    write_or_fail(p, &ts);
    expect_bad(p, "labels[2] = 15 is outside [0, 15)");
    task_free(&ts);
    tokenizer_free(tk);
    brown_free(t, 4);
    free(t);
}

static void test_bad_ids_and_attrs(void **state) {
    (void)state;
    TaskSet ts;
    build_pos(&ts, BROWN_TRAIN, 16);
    const char *p = path_of("bad-ids.h5");
    int32_t keep = ts.ids[2];
    ts.ids[2] = (int32_t)ts.vocab_size;
    write_or_fail(p, &ts);
    expect_bad(p, "input_ids[0, 2]");
    ts.ids[2] = keep;
    ts.ids[16] = TOK_SEP;                     /* example 1 does not start with [CLS] */
    write_or_fail(p, &ts);
    expect_bad(p, "must start with [CLS]");
    ts.ids[16] = TOK_CLS;
    write_or_fail(p, &ts);
    TaskSet ok;
    char err[512];
    assert_int_equal(task_read(p, &ok, err, sizeof err), 0);
    task_free(&ok);
    set_attr_str(p, "format", "deberta.c-shard");
    expect_bad(p, "format is 'deberta.c-shard'");
    write_or_fail(p, &ts);
    set_attr_str(p, "kind", "ner");
    expect_bad(p, "'kind' is 'ner'");
    write_or_fail(p, &ts);
    set_attr_str(p, "tokenizer_hash", "0123456789abcdef");
    expect_bad(p, "hashes to");
    write_or_fail(p, &ts);
    set_attr_str(p, "label_names", "ADJ\nADP");
    expect_bad(p, "has 2 names for 12 labels");
    /* a float dataset instead of the int32 labels */
    write_or_fail(p, &ts);
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        H5Ldelete(f, "labels", H5P_DEFAULT);
        hsize_t d[2] = {(hsize_t)ts.N, (hsize_t)ts.T};
        hid_t sp = H5Screate_simple(2, d, NULL);
        hid_t ds = H5Dcreate2(f, "labels", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        H5Dclose(ds); H5Sclose(sp); H5Fclose(f);
        test_reseal(p);
    }
    expect_bad(p, "'labels' is not an integer dataset");
    /* a missing dataset */
    write_or_fail(p, &ts);
    {
        hid_t f = H5Fopen(p, H5F_ACC_RDWR, H5P_DEFAULT);
        H5Ldelete(f, "input_ids", H5P_DEFAULT);
        H5Fclose(f);
        test_reseal(p);
    }
    expect_bad(p, "'input_ids' is missing");
    /* truncated */
    write_or_fail(p, &ts);
    assert_int_equal(truncate(p, 2000), 0);
    expect_bad(p, "truncated");
    /* not there */
    expect_bad(path_of("none.h5"), "cannot open");
    task_free(&ts);
}

static void test_check_same(void **state) {
    (void)state;
    TaskSet a, b;
    build_pos(&a, BROWN_TRAIN, 16);
    build_pos(&b, BROWN_DEV, 16);
    char err[512];
    assert_int_equal(task_check_same(&a, "a.h5", &b, "b.h5", err, sizeof err), 0);
    b.tokenizer_hash[0] = b.tokenizer_hash[0] == '0' ? '1' : '0';
    assert_int_equal(task_check_same(&a, "a.h5", &b, "b.h5", err, sizeof err), -1);
    assert_non_null(strstr(err, "tokenizer"));
    task_free(&b);
    build_pos(&b, BROWN_DEV, 17);
    assert_int_equal(task_check_same(&a, "a.h5", &b, "b.h5", err, sizeof err), -1);
    assert_non_null(strstr(err, "seq_len 17"));
    task_free(&a); task_free(&b);
}

/* Baselines on hand-made sets: words are id runs from a labelled position. */
static void test_baselines(void **state) {
    (void)state;
    TaskSet tr = {0}, ev = {0};
    int T = 6;
    /* train: words A(10) -> NOUN twice, VERB once; B(11,12) -> DET; C(13) -> VERB */
    int32_t tr_ids[3 * 6] = {1, 10, 11, 12, 2, 0, 1, 10, 13, 2, 0, 0, 1, 10, 13, 2, 0, 0};
    int32_t tr_lab[3 * 6] = {-100, UPOS_NOUN, UPOS_DET, -100, -100, -100, -100, UPOS_NOUN, UPOS_VERB, -100, -100, -100,
                             -100, UPOS_VERB, UPOS_VERB, -100, -100, -100};
    /* eval: A -> NOUN (word baseline right), 11 alone (a different word than B: unseen -> majority VERB),
     * C -> VERB */
    int32_t ev_ids[6] = {1, 10, 11, 13, 2, 0};
    int32_t ev_lab[6] = {-100, UPOS_NOUN, UPOS_DET, UPOS_VERB, -100, -100};
    tr.kind = ev.kind = TASK_TAGGING;
    tr.T = ev.T = T;
    tr.n_labels = ev.n_labels = UPOS_COUNT;
    tr.N = 3; ev.N = 1;
    /* the word of each sub-token: A = 10, B = 11 12, C = 13; eval's 11 is a word of its own */
    int32_t tr_wid[3 * 6] = {-1, 0, 1, 1, -1, -1, -1, 0, 1, -1, -1, -1, -1, 0, 1, -1, -1, -1};
    int32_t ev_wid[6] = {-1, 0, 1, 2, -1, -1};
    tr.ids = tr_ids; tr.labels = tr_lab; ev.ids = ev_ids; ev.labels = ev_lab;
    tr.word_ids = tr_wid; ev.word_ids = ev_wid;
    assert_int_equal(task_n_labelled(&tr), 6);
    assert_int_equal(task_majority_label(&tr), UPOS_VERB);  /* 3 VERB, 2 NOUN, 1 DET */
    assert_true(fabs(task_constant_accuracy(&ev, UPOS_VERB) - 1.0 / 3.0) < 1e-12);
    /* A -> NOUN (2 of 3) correct; "11" alone is unseen -> VERB, wrong; C -> VERB correct */
    assert_true(fabs(task_word_tag_accuracy(&tr, &ev) - 2.0 / 3.0) < 1e-12);
    /* ties go to the smaller label: make A NOUN once, VERB once */
    tr_lab[13] = UPOS_ADJ; /* third A becomes ADJ: NOUN 2, ADJ 1 */
    assert_true(fabs(task_word_tag_accuracy(&tr, &ev) - 2.0 / 3.0) < 1e-12);
    tr_lab[7] = UPOS_ADJ;  /* NOUN 1, ADJ 2 -> ADJ: A now wrong */
    assert_true(fabs(task_word_tag_accuracy(&tr, &ev) - 1.0 / 3.0) < 1e-12);
    /* genre */
    int32_t gl[5] = {3, 3, 1, 3, 1}, ge[2] = {3, 1};
    TaskSet g = {0}, h = {0};
    g.kind = h.kind = TASK_CLASSIFICATION;
    g.N = 5; h.N = 2; g.n_labels = h.n_labels = BROWN_N_GENRES;
    g.labels = gl; h.labels = ge;
    assert_int_equal(task_majority_label(&g), 3);
    assert_true(fabs(task_constant_accuracy(&h, 3) - 0.5) < 1e-12);
}

/* ASCII letters and digits of a text (what the fingerprint sees), as a string. */
static char *alnum_of(const char *s, size_t n) {
    char *o = xmalloc(n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++)
        if ((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')) o[k++] = s[i];
    o[k] = 0;
    return o;
}

/* Counts the dev/test texts whose letters and digits occur inside a document of DIR/<split>-*.h5
 * (decoded with the shard's tokenizer). */
static int held_texts_in(const char *dir, const char *split, const BrownText *bt, size_t nb) {
    int found = 0;
    char path[512], err[512];
    for (int k = 0;; k++) {
        snprintf(path, sizeof path, "%s/%s-%05d.h5", dir, split, k);
        if (access(path, R_OK) != 0) break;
        Shard *s = shard_open(path, 1, err, sizeof err);
        if (!s) fail_msg("%s", err);
        size_t tl;
        uint8_t *tb = shard_read_tokenizer(s, &tl, err, sizeof err);
        Tokenizer *tk = tokenizer_from_bytes(tb, tl, path, err, sizeof err);
        if (!tk) fail_msg("%s", err);
        int64_t nd = shard_n_docs(s), nt = shard_n_tokens(s);
        int64_t *off = xmalloc((size_t)(nd + 1) * sizeof(int64_t));
        int32_t *tok = xmalloc((size_t)nt * sizeof(int32_t));
        assert_int_equal(shard_read_offsets(s, 0, nd + 1, off, err, sizeof err), 0);
        assert_int_equal(shard_read_tokens(s, 0, nt, tok, err, sizeof err), 0);
        for (int64_t d = 0; d < nd; d++) {
            size_t len;
            char *text = tokenizer_decode(tk, tok + off[d], (size_t)(off[d + 1] - off[d]), &len);
            char *a = alnum_of(text, len);
            for (size_t i = 0; i < nb; i++) {
                if (bt[i].split == BROWN_TRAIN) continue;
                char words[2048] = "";
                for (size_t w = 0; w < bt[i].n_words; w++) strcat(words, bt[i].word[w]);
                char *b = alnum_of(words, strlen(words));
                found += strstr(a, b) != NULL;
                free(b);
            }
            free(a); free(text);
        }
        free(off); free(tok); free(tb);
        tokenizer_free(tk);
        shard_close(s);
    }
    return found;
}

/* deberta prep with the holdout list: no dev/test text is in any train shard (checked by decoding
 * the shards and searching the texts' letters and digits, not by fingerprint), all of them are in
 * val; without the list they are in train (so the check can fail). */
static void test_prep_holdout(void **state) {
    (void)state;
    char tagged[256], corpus[256], out[256], err[1024];
    snprintf(tagged, sizeof tagged, "%s/brown-tagged", g_dir);
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", g_dir);
    assert_int_equal(mkdir(tagged, 0777), 0);
    FILE *c = fopen(corpus, "w");
    for (int i = 0; i < 4; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", tagged, NAMES[i]);
        FILE *f = fopen(p, "w");
        fputs(TEXTS[i], f);
        fclose(f);
    }
    BrownText *bt;
    size_t nb;
    if (brown_read_dir(tagged, &bt, &nb, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(nb, 4);
    for (size_t i = 0; i < nb; i++) { /* the plain text as fetch-corpus.sh writes it */
        for (size_t w = 0; w < bt[i].n_words; w++) fprintf(c, "%s%s", bt[i].space_before[w] ? " " : "", bt[i].word[w]);
        fprintf(c, "\n\n");
    }
    for (int i = 0; i < 30; i++) fprintf(c, "Another document number %d about dogs, cats and houses.\n\n", i);
    fclose(c);
    uint64_t fp[4];
    size_t nf = 0;
    for (size_t i = 0; i < nb; i++) if (bt[i].split != BROWN_TRAIN) fp[nf++] = brown_fingerprint(&bt[i]);
    assert_int_equal(nf, 2);
    const char *inputs[1] = {corpus};
    for (int with = 0; with < 2; with++) {
        snprintf(out, sizeof out, "%s/shards-%d", g_dir, with);
        PrepConfig pc = {.inputs = inputs, .n_inputs = 1, .out = out, .vocab_size = 300, .val_fraction = 0,
                         .shard_tokens = 1 << 20, .seed = 1, .holdout = with ? fp : NULL, .n_holdout = with ? nf : 0};
        PrepResult r;
        if (prep_run(&pc, &r, err, sizeof err)) fail_msg("%s", err);
        if (with) {
            assert_int_equal(r.n_held_out, 2);
            assert_int_equal(r.n_val, 2);
            assert_int_equal(held_texts_in(out, "train", bt, nb), 0);
            assert_int_equal(held_texts_in(out, "val", bt, nb), 2);
        } else {
            assert_int_equal(r.n_val, 0);
            assert_int_equal(held_texts_in(out, "train", bt, nb), 2);
        }
    }
    brown_free(bt, nb);
    free(bt);
}

/* prep_corpus (data/prep_options.h, `deberta prep`): the option table, --holdout-brown read from the
 * tagged texts (the same split as the list above), its marker file written with the counts; a prep
 * without it removes a marker left in the folder; the summary names the shards. */
static void test_prep_corpus(void **state) {
    (void)state;
    char tagged[256], corpus[256], path[4200], err[1024];
    snprintf(tagged, sizeof tagged, "%s/brown-tagged", g_dir); /* written by test_prep_holdout */
    snprintf(corpus, sizeof corpus, "%s/corpus.txt", g_dir);
    PrepOptions o;
    prep_options_default(&o);
    assert_int_equal(prep_options_set_flag(&o, "vocab-size", "100", err, sizeof err), -1);
    assert_string_equal(err, "--vocab-size '100' must be an integer in [262, 16777216]");
    assert_int_equal(prep_options_set_flag(&o, "val-fraction", "1", err, sizeof err), -1);
    assert_int_equal(prep_options_set_flag(&o, "input", "x", err, sizeof err), 0);
    assert_int_equal(prep_options_set_flag(&o, "vocab-size", "300", err, sizeof err), 1);
    assert_int_equal(prep_options_set_flag(&o, "val-fraction", "0", err, sizeof err), 1);
    assert_int_equal(prep_options_set_flag(&o, "seed", "1", err, sizeof err), 1);
    assert_int_equal(prep_options_set_flag(&o, "holdout-brown", tagged, err, sizeof err), 1);
    snprintf(o.out, sizeof o.out, "%s/shards-corpus", g_dir);
    const char *inputs[1] = {corpus};
    PrepResult r;
    size_t n_holdout = 0;
    assert_int_equal(prep_corpus(&o, inputs, 1, NULL, &r, &n_holdout), 0);
    assert_int_equal(n_holdout, 2);
    assert_int_equal(r.n_held_out, 2);
    assert_int_equal(r.n_val, 2);
    assert_int_equal(r.vocab_size, 300);
    snprintf(path, sizeof path, "%s/holdout-brown.txt", o.out);
    size_t n;
    char *m = read_file(path, &n);
    assert_non_null(m);
    assert_non_null(strstr(m, "holdout_texts = 2\nholdout_in_inputs = 2\n"));
    free(m);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    prep_report(&o, &r, n_holdout, 1.5, f);
    fclose(f);
    assert_non_null(strstr(text, "prep: 2 documents are dev/test texts of the Brown tasks"));
    assert_non_null(strstr(text, "prep: 1 files, 34 docs (32 train, 2 val)"));
    assert_non_null(strstr(text, "vocab 300, tokenizer "));
    free(text);
    o.holdout_brown[0] = 0; /* again without: the marker goes */
    assert_int_equal(prep_corpus(&o, inputs, 1, NULL, &r, &n_holdout), 0);
    assert_int_equal(r.n_val, 0);
    assert_int_equal(access(path, F_OK), -1);
}

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "task");
}
static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tag_mapping),
        cmocka_unit_test(test_split_and_genre),
        cmocka_unit_test(test_parse_and_spacing),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_build_pos),
        cmocka_unit_test(test_build_genre),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_labels),
        cmocka_unit_test(test_bad_ids_and_attrs),
        cmocka_unit_test(test_check_same),
        cmocka_unit_test(test_baselines),
        cmocka_unit_test(test_prep_holdout),
        cmocka_unit_test(test_prep_corpus),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
