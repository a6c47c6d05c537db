/* test_evaluate.c — the held-out metrics of train/pretrain.c `evaluate` on a synthetic val shard
 * (test preset, vocab 300: the smallest test tokenizer has 263): the counts are consistent with each other, the RTD accuracy and its
 * all-original baseline differ by exactly what the flagged tokens contribute
 * (acc − baseline = flagged·(2·precision − 1) / n_tokens), the two extreme classifiers (bias ±100:
 * nothing / everything flagged) give the values they must, and evaluating twice gives the same
 * numbers and leaves the parameters untouched.  eval_checkpoint (train/eval_checkpoint.h, `deberta
 * eval`) on a checkpoint of the same model prints the numbers evaluate gives (its seed the
 * checkpoint's), for the batches asked. */
#include "tests/shardutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "autograd/base/rng.h"
#include "data/loader.h"
#include "train/checkpoint.h"
#include "train/eval_checkpoint.h"
#include "train/eval/evaluate.h"

enum { VOCAB = 300, B = 4, T = 32, BATCHES = 3, DOC = 900 };
static char g_dir[64];

static int setup(void **state) {
    (void)state;
    if (test_tmpdir(g_dir, sizeof g_dir, "eval")) return -1;
    int32_t *tok = xmalloc(DOC * sizeof(int32_t));
    for (int i = 0; i < DOC; i++) tok[i] = 5 + (int32_t)rng_below(7, 7, (uint64_t)i, VOCAB - 5);
    const int64_t off[3] = {0, DOC / 3, DOC};
    char path[128];
    snprintf(path, sizeof path, "%s/val-00000.h5", g_dir);
    test_write_shard(path, VOCAB, "val", 0, tok, off, 2);
    free(tok);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    return test_rmtree(g_dir);
}

typedef struct {
    ModelConfig cfg;
    Electra m;
    Tape t;
    Loader *val;
} Fixture;

static void fixture_open(Fixture *f) {
    config_preset(&f->cfg, "test");
    f->cfg.vocab_size = VOCAB;
    f->cfg.max_seq_len = T;
    char err[512];
    assert_int_equal(config_validate(&f->cfg, err, sizeof err), 0);
    electra_build(&f->m, &f->cfg, 11);
    tape_init(&f->t, (size_t)1 << 20);
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = T;
    lc.B = B;
    lc.seed = 3;
    f->val = loader_open_err(g_dir, "val", &lc, err, sizeof err);
    if (!f->val) fail_msg("%s", err);
}

static void fixture_close(Fixture *f) {
    loader_close(f->val);
    tape_free(&f->t);
    electra_free(&f->m);
}

static EvalResult run_eval(Fixture *f) { return evaluate(&f->m, f->val, &f->t, B, T, BATCHES, 9); }

static void check_consistent(const EvalResult *e) {
    assert_int_equal(e->n_batches, BATCHES);
    assert_true(e->n_tokens > 0 && e->n_tokens <= (long)BATCHES * B * T);
    assert_true(e->n_masked > 0 && e->n_masked < e->n_tokens);
    assert_true(e->mlm_acc >= 0 && e->mlm_acc <= 1);
    assert_true(e->baseline_mlm_acc > 0 && e->baseline_mlm_acc <= 1);
    assert_true(e->baseline_rtd_acc > 0 && e->baseline_rtd_acc < 1);
    assert_true(e->rtd_flagged >= 0 && e->rtd_flagged <= e->n_tokens);
    const double gain = e->rtd_flagged ? e->rtd_flagged * (2 * e->rtd_precision - 1) / e->n_tokens : 0;
    assert_true(fabs(e->rtd_acc - e->baseline_rtd_acc - gain) < 1e-12);
}

static void test_metrics_consistent(void **state) {
    (void)state;
    Fixture f;
    fixture_open(&f);
    const long n = f.m.ps.total;
    real *before = xmalloc((size_t)n * sizeof(real));
    memcpy(before, f.m.ps.data, (size_t)n * sizeof(real));
    EvalResult a = run_eval(&f), b = run_eval(&f);
    check_consistent(&a);
    assert_memory_equal(&a, &b, sizeof a); /* same draws, same model: the same numbers (and NaNs) */
    assert_memory_equal(before, f.m.ps.data, (size_t)n * sizeof(real));
    assert_true(a.rtd_auc > 0 && a.rtd_auc < 1);
    free(before);
    fixture_close(&f);
}

static void test_extreme_classifiers(void **state) {
    (void)state;
    Fixture f;
    fixture_open(&f);
    f.m.rtd.cls_b->data[0] = -100; /* every logit < 0: nothing flagged, accuracy = baseline */
    EvalResult none = run_eval(&f);
    check_consistent(&none);
    assert_int_equal(none.rtd_flagged, 0);
    assert_true(isnan(none.rtd_precision));
    assert_true(none.rtd_acc == none.baseline_rtd_acc);

    f.m.rtd.cls_b->data[0] = 100; /* every logit > 0: all flagged, precision = share replaced */
    EvalResult all = run_eval(&f);
    check_consistent(&all);
    assert_int_equal(all.rtd_flagged, all.n_tokens);
    assert_true(fabs(all.rtd_precision - (1 - all.baseline_rtd_acc)) < 1e-12);
    assert_true(fabs(all.rtd_acc - (1 - all.baseline_rtd_acc)) < 1e-12);
    /* the generator is untouched by the classifier, so its side and the labels are the same */
    assert_true(all.mlm_acc == none.mlm_acc && all.baseline_rtd_acc == none.baseline_rtd_acc);
    fixture_close(&f);
}

static void test_eval_checkpoint(void **state) {
    (void)state;
    Fixture f;
    fixture_open(&f);
    char err[512], rundir[128];
    CheckpointState st;
    memset(&st, 0, sizeof st);
    st.step = 7;
    st.seed = 9;
    st.config = config_to_text(&f.cfg);
    checkpoint_set_group_step(&st, "generator", 7);
    checkpoint_set_group_step(&st, "discriminator", 7);
    snprintf(rundir, sizeof rundir, "%s/run", g_dir);
    assert_int_equal(mkdir_p(rundir), 0);
    if (checkpoint_save(rundir, &f.m.ps, NULL, &st, 0, err, sizeof err)) fail_msg("%s", err);
    free(st.config);
    EvalOptions o;
    eval_options_default(&o);
    assert_int_equal(eval_options_set_flag(&o, "batches", "0", err, sizeof err), -1);
    assert_string_equal(err, "--batches '0' must be a positive integer");
    assert_int_equal(eval_options_set_flag(&o, "batch", "4", err, sizeof err), 1);
    assert_int_equal(eval_options_set_flag(&o, "batches", "3", err, sizeof err), 1);
    assert_int_equal(eval_options_set_flag(&o, "data", g_dir, err, sizeof err), 1);
    snprintf(o.ckpt, sizeof o.ckpt, "%s/checkpoint.h5", rundir);
    char *text = NULL;
    size_t len = 0;
    FILE *out = open_memstream(&text, &len);
    assert_int_equal(eval_checkpoint(&o, out), 0);
    fclose(out);
    /* the same model, loader seed and sampling seed (the checkpoint's, 9) evaluated here */
    loader_close(f.val);
    LoaderConfig lc;
    loader_config_default(&lc);
    lc.T = T, lc.B = B, lc.seed = 9;
    f.val = loader_open_err(g_dir, "val", &lc, err, sizeof err);
    if (!f.val) fail_msg("%s", err);
    const EvalResult e = evaluate(&f.m, f.val, &f.t, B, T, BATCHES, 9);
    char want[512];
    snprintf(want, sizeof want, "(step 7), %d val batches, %ld masked tokens, %ld tokens (", BATCHES, e.n_masked, e.n_tokens);
    if (!strstr(text, want)) fail_msg("no '%s' in:\n%s", want, text);
    snprintf(want, sizeof want, "generator      MLM loss %.4f  accuracy %.4f   (most-frequent-token baseline %.4f)\n", e.mlm_loss, e.mlm_acc,
             e.baseline_mlm_acc);
    if (!strstr(text, want)) fail_msg("no '%s' in:\n%s", want, text);
    snprintf(want, sizeof want, "discriminator  RTD loss %.4f  accuracy %.4f   (all-original baseline %.4f)  AUC %.4f\n", e.rtd_loss, e.rtd_acc,
             e.baseline_rtd_acc, e.rtd_auc);
    if (!strstr(text, want)) fail_msg("no '%s' in:\n%s", want, text);
    assert_non_null(strstr(text, "  layer 1  entropy/log(n) "));
    free(text);
    fixture_close(&f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metrics_consistent),
        cmocka_unit_test(test_extreme_classifiers),
        cmocka_unit_test(test_eval_checkpoint),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
