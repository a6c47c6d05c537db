/* test_yardstick.c — the fixed-corruption RTD evaluation (train/eval/rtd_fixed.c) and the linear POS probe
 * (train/eval/probe.c) on synthetic files beside a directory, test preset model.
 *   fixed:  rtd_fixed_eval (B = 2 over 5 sequences: a partial last batch) against the test's own
 *           figures from one forward of each sequence alone, with the AUC counted over all pairs;
 *           the extreme classifiers (bias ±100); a file whose labels disagree with its ids is refused
 *           naming the file; a directory without the file is "absent".
 *   probe:  tags that are a function of the token (12 token types, 3 tags) are read off the
 *           embedding layer without error; tags drawn at random per position are not (near chance);
 *           the same numbers on a second call. */
#include "tests/shardutil.h"
#include <hdf5.h>
#include <sys/stat.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/rng.h"
#include "data/h5util.h"
#include "data/task.h"
#include "train/eval/yardstick.h"

enum { VOCAB = 300, T = 16, NSEQ = 5 };
static char g_dir[64];

/* ---- the fixed-corruption file, written with the layout of docs/FORMATS.md ---- */

static void write_i32(hid_t f, const char *name, const int32_t *v) {
    hsize_t d[2] = {NSEQ, T};
    hid_t sp = H5Screate_simple(2, d, NULL);
    hid_t ds = H5Dcreate2(f, name, H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    assert_true(ds >= 0 && H5Dwrite(ds, H5T_NATIVE_INT32, H5S_ALL, H5S_ALL, H5P_DEFAULT, v) >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
}

static int attr_f64(hid_t f, const char *name, double v) {
    hid_t sp = H5Screate(H5S_SCALAR);
    hid_t a = H5Acreate2(f, name, H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT);
    const int rc = a >= 0 && H5Awrite(a, H5T_NATIVE_DOUBLE, &v) >= 0 ? 0 : -1;
    if (a >= 0) H5Aclose(a);
    H5Sclose(sp);
    return rc;
}

static void write_fixed(const char *path, int break_labels) {
    int32_t ids[NSEQ * T], orig[NSEQ * T], mask[NSEQ * T], scored[NSEQ * T], repl[NSEQ * T];
    for (int s = 0; s < NSEQ; s++)
        for (int i = 0; i < T; i++) {
            const int k = s * T + i, n = T - 2 * s; /* sequence s has n real tokens */
            mask[k] = i < n;
            orig[k] = i == 0 ? 1 : i == n - 1 ? 2 : i < n ? 5 + (int32_t)rng_below(3, 1, (uint64_t)k, VOCAB - 5) : 0;
            scored[k] = i > 0 && i < n - 1;
            repl[k] = scored[k] && rng_below(3, 2, (uint64_t)k, 4) == 0;
            ids[k] = repl[k] ? 5 + (orig[k] - 5 + 1 + (int32_t)rng_below(3, 3, (uint64_t)k, VOCAB - 6)) % (VOCAB - 5) : orig[k];
        }
    if (break_labels) repl[T + 3] = !repl[T + 3];
    char tmp[256];
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    hid_t fcpl = h5_sealed_fcpl();
    hid_t f = H5Fcreate(tmp, H5F_ACC_TRUNC, fcpl, H5P_DEFAULT);
    H5Pclose(fcpl);
    assert_true(f >= 0);
    write_i32(f, "input_ids", ids);
    write_i32(f, "original_ids", orig);
    write_i32(f, "attention_mask", mask);
    write_i32(f, "scored", scored);
    write_i32(f, "replaced", repl);
    size_t tl;
    uint8_t *tb = test_tokenizer(VOCAB, &tl);
    char hash[17];
    tokenizer_hash_bytes(tb, tl, hash);
    free(tb);
    int bad = h5_attr_str(f, "format", RTD_FIXED_FORMAT) | h5_attr_i64(f, "version", RTD_FIXED_VERSION) | h5_attr_str(f, "tokenizer_hash", hash) |
              h5_attr_i64(f, "vocab_size", VOCAB) | h5_attr_i64(f, "seq_len", T) | h5_attr_i64(f, "n_seq", NSEQ) | h5_attr_i64(f, "counter_flagged", 7);
    const char *dn[] = {"counter_auc", "counter_precision", "counter_accuracy", "baseline_accuracy"};
    for (int q = 0; q < 4; q++) bad |= attr_f64(f, dn[q], 0.5);
    assert_int_equal(bad, 0);
    H5Fclose(f);
    char err[512];
    if (h5_seal(tmp, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(rename(tmp, path), 0);
}

static void model_open(ModelConfig *c, Electra *m, Tape *t) {
    config_preset(c, "test");
    c->vocab_size = VOCAB;
    c->max_seq_len = T;
    char err[512];
    assert_int_equal(config_validate(c, err, sizeof err), 0);
    electra_build(m, c, 11);
    tape_init(t, (size_t)4 << 20);
}

/* The figures from one forward per sequence, the AUC by counting pairs. */
static RtdFixedResult reference(const Electra *m, Tape *t, const RtdFixed *fx) {
    RtdFixedResult r;
    memset(&r, 0, sizeof r);
    float z[NSEQ * T];
    int32_t lab[T];
    for (int s = 0; s < NSEQ; s++) {
        const int o = s * T;
        for (int i = 0; i < T; i++) lab[i] = fx->replaced[o + i] ? fx->original[o + i] : 0;
        ElectraInput in = {.B = 1, .T = T, .input_ids = fx->ids + o, .attention_mask = fx->mask + o, .labels = lab};
        DiscOut d;
        tape_reset(t);
        tape_nograd_begin(t);
        discriminator_forward(t, m, &in, fx->ids + o, &d);
        tape_nograd_end(t);
        for (int i = 0; i < T; i++) z[o + i] = (float)d.logits->data[i];
    }
    tape_reset(t);
    double pairs = 0, wins = 0;
    long ok = 0, fl_ok = 0;
    for (int a = 0; a < NSEQ * T; a++) {
        if (!fx->scored[a]) continue;
        r.n_scored++;
        r.n_replaced += fx->replaced[a];
        r.flagged += z[a] > 0;
        fl_ok += z[a] > 0 && fx->replaced[a];
        ok += (z[a] > 0) == fx->replaced[a];
        if (!fx->replaced[a]) continue;
        for (int b = 0; b < NSEQ * T; b++)
            if (fx->scored[b] && !fx->replaced[b]) {
                pairs++;
                wins += z[a] > z[b] ? 1 : z[a] == z[b] ? 0.5 : 0;
            }
    }
    r.auc = wins / pairs;
    r.accuracy = (double)ok / r.n_scored;
    r.precision = r.flagged ? (double)fl_ok / r.flagged : NAN;
    return r;
}

static void test_fixed_matches_reference(void **state) {
    (void)state;
    char path[128], err[512];
    snprintf(path, sizeof path, "%s/%s", g_dir, RTD_FIXED_FILE);
    write_fixed(path, 0);
    ModelConfig c;
    Electra m;
    Tape t;
    model_open(&c, &m, &t);
    RtdFixed fx;
    if (rtd_fixed_open_dir(g_dir, &c, NULL, &fx, err, sizeof err) != 1) fail_msg("%s", err);
    for (int round = 0; round < 3; round++) {
        /* the untrained head, then the two extreme classifiers */
        m.rtd.cls_b->data[0] = round == 0 ? 0 : round == 1 ? -100 : 100;
        RtdFixedResult a = rtd_fixed_eval(&m, &t, &fx, 2), ref = reference(&m, &t, &fx);
        assert_int_equal(a.n_scored, ref.n_scored);
        assert_int_equal(a.n_replaced, ref.n_replaced);
        assert_int_equal(a.n_scored, fx.n_scored);
        assert_int_equal(a.flagged, ref.flagged);
        if (!(fabs(a.auc - ref.auc) <= 1e-9)) fail_msg("round %d: AUC %.9f, reference %.9f", round, a.auc, ref.auc);
        if (!(fabs(a.accuracy - ref.accuracy) <= 1e-12)) fail_msg("round %d: accuracy %.9f, reference %.9f", round, a.accuracy, ref.accuracy);
        if (!(fabs(a.baseline - (1.0 - (double)ref.n_replaced / ref.n_scored)) <= 1e-12)) fail_msg("baseline %.9f", a.baseline);
        if (round == 1) assert_true(a.flagged == 0 && isnan(a.precision) && a.accuracy == a.baseline);
        if (round == 2) assert_true(a.flagged == a.n_scored && fabs(a.precision - (1 - a.baseline)) <= 1e-12);
        if (round == 0) assert_true(a.auc > 0 && a.auc < 1 && fabs(a.precision - ref.precision) <= 1e-12);
    }
    rtd_fixed_free(&fx);
    /* a file whose 'replaced' disagrees with its ids is refused, naming the file */
    write_fixed(path, 1);
    assert_int_equal(rtd_fixed_open_dir(g_dir, &c, NULL, &fx, err, sizeof err), -1);
    assert_non_null(strstr(err, path));
    assert_non_null(strstr(err, "disagree"));
    /* another tokenizer than the shards' */
    write_fixed(path, 0);
    assert_int_equal(rtd_fixed_open_dir(g_dir, &c, "0123456789abcdef", &fx, err, sizeof err), -1);
    assert_non_null(strstr(err, "tokenizer"));
    /* a model of shorter sequences goes without it (2, a note) */
    ModelConfig c2 = c;
    c2.max_seq_len = T / 2;
    assert_int_equal(rtd_fixed_open_dir(g_dir, &c2, NULL, &fx, err, sizeof err), 2);
    assert_non_null(strstr(err, "max_seq_len"));
    unlink(path);
    assert_int_equal(rtd_fixed_open_dir(g_dir, &c, NULL, &fx, err, sizeof err), 0);
    tape_free(&t);
    electra_free(&m);
}

/* ---- the probe ---- */

static void write_task(const char *path, const char *split, int n_ex, int random_tags, uint64_t seed) {
    TaskSet ts;
    memset(&ts, 0, sizeof ts);
    ts.kind = TASK_TAGGING;
    snprintf(ts.split, sizeof ts.split, "%s", split);
    ts.T = T;
    ts.n_labels = 3;
    for (int l = 0; l < 3; l++) snprintf(ts.label_names[l], TASK_LABEL_LEN, "T%d", l);
    ts.N = n_ex;
    ts.ids = xcalloc((size_t)n_ex * T, sizeof(int32_t));
    ts.labels = xmalloc((size_t)n_ex * T * sizeof(int32_t));
    snprintf(ts.name, sizeof ts.name, "pos");
    snprintf(ts.tokenizer_kind, sizeof ts.tokenizer_kind, "bpe");
    snprintf(ts.input_format, sizeof ts.input_format, "brown");
    snprintf(ts.source, sizeof ts.source, "test_yardstick");
    ts.split_seed = -1;
    ts.cls_id = TOK_CLS, ts.sep_id = TOK_SEP;
    ts.example = xcalloc((size_t)n_ex, sizeof(int32_t));
    ts.line = xcalloc((size_t)n_ex, sizeof(int64_t));
    ts.word_ids = xmalloc((size_t)n_ex * T * sizeof(int32_t));
    ts.n_docs = 1;
    ts.doc_names = xcalloc(1, sizeof *ts.doc_names);
    snprintf(ts.doc_names[0], sizeof ts.doc_names[0], "ca01");
    ts.doc_fingerprints = xcalloc(1, sizeof(uint64_t));
    ts.tokenizer = test_tokenizer(VOCAB, &ts.tokenizer_len);
    tokenizer_hash_bytes(ts.tokenizer, ts.tokenizer_len, ts.tokenizer_hash);
    ts.vocab_size = VOCAB;
    for (int e = 0; e < n_ex; e++) {
        const int n = T - (e % 4); /* real tokens, [CLS] and [SEP] included */
        for (int i = 0; i < T; i++) {
            const int k = e * T + i;
            ts.labels[k] = TASK_IGNORE;
            ts.word_ids[k] = -1;
            if (i == 0) ts.ids[k] = TOK_CLS;
            else if (i == n - 1) ts.ids[k] = TOK_SEP;
            else if (i < n - 1) {
                const int tok = (int)rng_below(seed, 1, (uint64_t)k, 12);
                ts.ids[k] = 5 + tok;
                ts.word_ids[k] = i - 1;
                ts.labels[k] = random_tags ? (int32_t)rng_below(seed, 2, (uint64_t)k, 3) : tok % 3;
            }
        }
    }
    char err[512];
    if (task_write(path, &ts, err, sizeof err)) fail_msg("%s", err);
    task_free(&ts);
}

static ProbeResult probe_on(int random_tags) {
    char d[128], p[160], err[512];
    snprintf(d, sizeof d, "%s/%s", g_dir, PROBE_DIR);
    mkdir(d, 0755);
    snprintf(p, sizeof p, "%s/train.h5", d);
    write_task(p, "train", 60, random_tags, 5);
    snprintf(p, sizeof p, "%s/dev.h5", d);
    write_task(p, "dev", 50, random_tags, 6);
    ModelConfig c;
    Electra m;
    Tape t;
    model_open(&c, &m, &t);
    Probe pr;
    if (probe_open_dir(g_dir, &c, NULL, &pr, err, sizeof err) != 1) fail_msg("%s", err);
    assert_int_equal(pr.n_fit, PROBE_FIT < 60 ? PROBE_FIT : 60);
    assert_int_equal(pr.n_dev, PROBE_DEV < 50 ? PROBE_DEV : 50);
    ProbeResult a = probe_eval(&m, &t, &pr, 3), b = probe_eval(&m, &t, &pr, 7);
    assert_memory_equal(&a, &b, sizeof a); /* deterministic, whatever the batch */
    assert_int_equal(a.n_layers, c.num_hidden_layers + 1);
    assert_true(a.n_fit_words > 0 && a.n_dev_words > 0);
    probe_free(&pr);
    tape_free(&t);
    electra_free(&m);
    return a;
}

static void test_probe(void **state) {
    (void)state;
    ProbeResult f = probe_on(0);
    if (!(f.acc[0] == 1.0)) fail_msg("tags of the token type: embedding-layer probe accuracy %.4f, want 1", f.acc[0]);
    assert_true(f.acc[f.best] == 1.0);
    ProbeResult r = probe_on(1);
    for (int l = 0; l < r.n_layers; l++)
        if (!(r.acc[l] < 0.5)) fail_msg("random tags: layer %d accuracy %.4f, want near chance (1/3)", l, r.acc[l]);
}

static int setup(void **state) {
    (void)state;
    return test_tmpdir(g_dir, sizeof g_dir, "yardstick");
}

static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixed_matches_reference),
        cmocka_unit_test(test_probe),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
